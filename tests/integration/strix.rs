//! AMD Ryzen AI Max+ 395 (Strix Halo) under llama.cpp: the priors the chip's per-token fixed
//! cost and expert rate come from (FACTS, not the rows they are scored on), checked by hand.

use supernode::calibrate::{get_param, published_params};
use supernode::estimate::estimate;
use supernode::profile::Profile;
use supernode::scenario::ScenarioBuilder;

use crate::bin;

const CHIP: &str = "chips.ryzen-ai-max-395";
const LAUNCH: &str = "chips.ryzen-ai-max-395.runtimes.llama-cpp.kernel_launch_us";

/// The hand-set priors, jitter off.
fn priors() -> Profile {
    let mut p = Profile::load(&crate::root().join("calibration/profiles/hand-set.toml")).unwrap();
    p.misc.jitter_cv = 0.0;
    p
}

/// Decode rate of `model` at `quant` on one Framework Desktop under llama.cpp, tok/s.
fn framework_decode(model: &str, quant: &str, p: &Profile) -> f64 {
    let mut b = ScenarioBuilder::new(format!("framework {model} {quant}"));
    b.nodes(&["framework-desktop-ai-max-395".to_string()]).model(model).quant(quant).engine("llama-cpp");
    b.tokens(128, 32).seed(1);
    estimate(&b.build().unwrap(), p).unwrap().decode_tokens_per_s
}

#[test]
fn the_launch_prior_reproduces_the_published_8b_decode_on_strix_halo() {
    // FACTS-2026 D: a Ryzen AI MAX 385 (Strix Halo, the same 256-bit LPDDR5X-8000) decodes
    // Llama 3.1 8B Q4_K_M on Vulkan at 52.2 W and 1.3 J/token: 52.2 / 1.3 = 40.15 tok/s. The
    // J/token has two digits (1.25..1.35): 38.67..41.76 tok/s. The launch prior (6.2 us) was
    // read from this figure, not from any scored row.
    let p = priors();
    assert_eq!(get_param(&p, LAUNCH).unwrap(), 6.2);
    let r = framework_decode("llama-3.1-8b", "q4_k_m", &p);
    assert!((r / 40.15 - 1.0).abs() < 0.01, "8B Q4_K_M decode {r:.2} tok/s, FACTS 40.15");
    // The same prior with no launches at all: the weights alone at 0.828 x 256 GB/s, ~45 tok/s;
    // the launches are the ~11% between them, a fixed cost a 3B model pays as much of.
    let bare = supernode::calibrate::set_params(&p, &[LAUNCH.to_string()], &[0.0]).unwrap();
    let roof = framework_decode("llama-3.1-8b", "q4_k_m", &bare);
    assert!(roof > r * 1.08 && roof < r * 1.16, "no launches {roof:.2} vs {r:.2}");
    let small = framework_decode("llama-3.2-3b", "q4_k_m", &p) / framework_decode("llama-3.2-3b", "q4_k_m", &bare);
    assert!(small < r / roof, "a 3B pays a larger share of fixed cost: {small:.3} vs {:.3}", r / roof);
}

#[test]
fn experts_stream_at_the_dense_rate_and_stay_at_their_facts_priors() {
    // llama.cpp's MoE mat-vec is the dense mat-vec indexed by expert: the same streaming rate,
    // 212 GB/s of 256 measured (FACTS-2026 A3) = 0.828.
    let p = priors();
    let dense = get_param(&p, &format!("{CHIP}.bw_eff_dense")).unwrap();
    let expert = get_param(&p, &format!("{CHIP}.bw_eff_expert")).unwrap();
    assert_eq!((dense, expert), (0.828, 0.828));
    // Neither the expert rate nor the launch cost is fitted: one 2025-08 MXFP4 row
    // (fw-gptoss120b-1) would set both for every model on the chip.
    let fitted = published_params();
    assert!(fitted.contains(&format!("{CHIP}.bw_eff_dense")), "{fitted:?}");
    for held in [format!("{CHIP}.bw_eff_expert"), LAUNCH.to_string()] {
        assert!(!fitted.contains(&held), "{held} must stay at its FACTS prior");
    }
    // A small-active MoE (Qwen3-30B-A3B Q4_K_M: ~3.3 B active of 30.5 B) reads fewer bytes per
    // token than a dense 8B and decodes faster, though its 48 layers launch more kernels.
    let moe = framework_decode("qwen3-30b-a3b", "q4_k_m", &p);
    let dense8 = framework_decode("llama-3.1-8b", "q4_k_m", &p);
    assert!(moe > dense8, "Qwen3-30B-A3B {moe:.1} vs 8B {dense8:.1}");
}

/// Decode and prefill of `model` at `quant` on one Framework Desktop under llama.cpp's
/// `backend` (none: the default), a 512-token prompt at the default `-ub 512`.
fn framework_run(model: &str, quant: &str, backend: Option<&str>) -> (f64, f64) {
    framework_run_tiles(model, quant, backend, None)
}

/// [`framework_run`] with ROCm's tile choice (`engine.rocm_tiles`; none: the default).
fn framework_run_tiles(model: &str, quant: &str, backend: Option<&str>, tiles: Option<&str>) -> (f64, f64) {
    let mut b = ScenarioBuilder::new(format!("framework {model} {quant} {backend:?}"));
    b.nodes(&["framework-desktop-ai-max-395".to_string()]).model(model).quant(quant).engine("llama-cpp");
    b.tokens(512, 32).seed(1);
    if let Some(backend) = backend {
        b.set("engine.backend", &toml::Value::String(backend.into())).expect("a known key");
    }
    if let Some(tiles) = tiles {
        b.set("engine.rocm_tiles", &toml::Value::String(tiles.into())).expect("a known key");
    }
    let e = estimate(&b.build().unwrap(), &priors()).unwrap();
    (e.decode_tokens_per_s, e.prefill_tokens_per_s)
}

#[test]
fn vulkan_and_rocm_tile_moe_prefill_apart_and_decode_alike() {
    // Vulkan is the default llama.cpp backend on an AMD GPU.
    assert_eq!(framework_run("gpt-oss-120b", "mxfp4", None), framework_run("gpt-oss-120b", "mxfp4", Some("vulkan")));
    let (vk_decode, vk_prefill) = framework_run("gpt-oss-120b", "mxfp4", Some("vulkan"));
    let (rocm_decode, rocm_prefill) = framework_run("gpt-oss-120b", "mxfp4", Some("rocm"));
    // One token a step runs the mat-vec on both: the same decode.
    assert_eq!(vk_decode, rocm_decode);
    // gpt-oss-120b at -ub 512: ~16 rows an expert; Vulkan computes them in 64-row tiles (4x).
    // ROCm's MMQ as built now picks its width against those 16 rows (`ncols_opt`, September
    // 2026): 16-row tiles, the faster prefill, as FACTS.md has it ("ROCm prefills faster").
    assert!(rocm_prefill > vk_prefill, "rocm {rocm_prefill:.1} vs vulkan {vk_prefill:.1}");
    // The builds of December 2025 to September 2026 picked against the step's 512 rows: 128-row
    // tiles (8x), slower than Vulkan, by less than 2x since the attention, dense projections
    // and LM head are not tiled.
    let (old_decode, old_prefill) = framework_run_tiles("gpt-oss-120b", "mxfp4", Some("rocm"), Some("per-step"));
    assert_eq!(old_decode, rocm_decode);
    assert!(old_prefill < vk_prefill && old_prefill > 0.5 * vk_prefill, "rocm {old_prefill:.1} vs vulkan {vk_prefill:.1}");
    assert_eq!(framework_run_tiles("gpt-oss-120b", "mxfp4", Some("rocm"), Some("per-expert")), (rocm_decode, rocm_prefill));
    // A dense model has no expert tiles: the same prefill on both.
    assert_eq!(framework_run("llama-3.1-8b", "q4_k_m", Some("vulkan")), framework_run("llama-3.1-8b", "q4_k_m", Some("rocm")));
}

#[test]
fn the_backend_key_is_llama_cpps_and_names_its_choices() {
    let text = |engine: &str, quant: &str, backend: &str| {
        format!(
            "[cluster]\nnode = \"framework-desktop-ai-max-395\"\n[model]\nname = \"qwen3-30b-a3b\"\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\nbackend = \"{backend}\"\n"
        )
    };
    // The error as a user reads it (message and help), or nothing.
    let parse = |t: String| -> Result<(), String> {
        supernode::scenario::parse(supernode::scenario::Source { path: "x.toml".into(), dir: std::path::PathBuf::new(), text: t })
            .map(|_| ())
            .map_err(|e| format!("{:?}", miette::Report::new(e)))
    };
    assert!(parse(text("llama-cpp", "q4_k_m", "rocm")).is_ok());
    assert!(parse(text("ollama", "q4_k_m", "vulkan")).is_ok());
    let e = parse(text("mlx-lm", "mlx-4bit", "rocm")).unwrap_err();
    assert!(e.contains("llama.cpp's GPU backend") && e.contains("mlx-lm"), "{e}");
    let e = parse(text("llama-cpp", "q4_k_m", "cuda")).unwrap_err();
    assert!(e.contains("vulkan") && e.contains("rocm"), "{e}");
    // ROCm's tile choice belongs to ROCm, and names its choices.
    assert!(parse(text("llama-cpp", "q4_k_m", "rocm") + "rocm_tiles = \"per-step\"\n").is_ok());
    let e = parse(text("llama-cpp", "q4_k_m", "vulkan") + "rocm_tiles = \"per-step\"\n").unwrap_err();
    assert!(e.contains("does not run ROCm") && e.contains("backend = \"rocm\""), "{e}");
    let e = parse(text("llama-cpp", "q4_k_m", "rocm") + "rocm_tiles = \"wide\"\n").unwrap_err();
    assert!(e.contains("per-expert") && e.contains("per-step"), "{e}");
}

/// A ROCm prefill row older than the kernels the twin models (before December 2025) is scored
/// by `validate` but left out of `calibrate`'s fit, and `calibrate` says so.
#[test]
fn an_old_rocm_prefill_row_is_scored_but_not_fitted() {
    let dir = tempfile::tempdir().unwrap();
    let header =
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";
    let fw = "framework-desktop-ai-max-395,1,128gb";
    let body = format!(
        "tg8b,{fw},llama-3.1-8b,q4_k_m,llama-cpp,none,none,,1,decode_tokens_per_s,40,tok/s,kyuz0 (2025-11-19),\"tg128, ROCm 6.4.4\"\n\
         tg70b,{fw},llama-3.1-70b,q4_k_m,llama-cpp,none,none,,1,decode_tokens_per_s,5,tok/s,kyuz0 (2025-11-19),tg128\n\
         pp,{fw},qwen3-30b-a3b,q4_k_m,llama-cpp,none,none,512,1,prefill_tokens_per_s,500,tok/s,kyuz0 (2025-11-19),pp512\n"
    );
    let csv = crate::write_text(dir.path(), "rows.csv", &format!("{header}{body}"));
    let out = bin()
        .args(["calibrate", "--params", "chips.ryzen-ai-max-395.bw_eff_dense", "-o"])
        .arg(dir.path().join("p.toml"))
        .arg(&csv)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("calibrate: pp left out of the fit: predicted, not fitted"), "{stderr}");
    let profile = std::fs::read_to_string(dir.path().join("p.toml")).unwrap();
    assert!(!profile.contains("\"pp\""), "the fit's residuals hold only the fitted rows:\n{profile}");
    // `validate` scores it, among the rows the profile never saw.
    let out = bin().args(["validate", "--json", "--profile"]).arg(dir.path().join("p.toml")).arg("--against").arg(&csv).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["interval_coverage"]["unseen"]["rows"], 1, "{v}");
}

/// `validate` reads a ROCm row with the tile choice of its build: dated before late September
/// 2026, per step (and says so); from then, or undated, per expert as llama.cpp is now.
#[test]
fn rocm_rows_are_read_with_the_tile_choice_of_their_build() {
    use supernode::calibrate::validate::{parse_csv, row_scenario};
    let fw = "framework-desktop-ai-max-395,1,128gb";
    let text = format!(
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
         spring,{fw},gpt-oss-120b,mxfp4,llama-cpp,none,none,512,1,prefill_tokens_per_s,500,tok/s,kyuz0 (2026-03-01),\"pp512, ROCm 7.1\"\n\
         autumn,{fw},gpt-oss-120b,mxfp4,llama-cpp,none,none,512,1,prefill_tokens_per_s,500,tok/s,kyuz0 (2026-10-01),\"pp512, ROCm 7.2\"\n\
         vulkan,{fw},gpt-oss-120b,mxfp4,llama-cpp,none,none,512,1,prefill_tokens_per_s,500,tok/s,kyuz0 (2026-03-01),\"pp512, Vulkan RADV\"\n"
    );
    let rows = parse_csv(&text, "rows.csv").unwrap();
    let read = |i: usize| {
        let (b, assumptions) = row_scenario(&rows[i], &rows).unwrap();
        (b.build().unwrap().engine.rocm_tiles, assumptions.iter().any(|a| a.starts_with("engine.rocm_tiles = \"per-step\"")))
    };
    use supernode::engine::RocmTiles;
    assert_eq!(read(0), (RocmTiles::PerStep, true));
    assert_eq!(read(1), (RocmTiles::PerExpert, false));
    assert_eq!(read(2), (RocmTiles::PerExpert, false));
}
