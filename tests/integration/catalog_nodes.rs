//! Issue 21 item 4: the nodes and fabrics people cluster, in the built-in catalog. Every built-in
//! chip has parameters (its own or its `calibrated_as`), a power mode caps compute and not
//! bandwidth, MLX reaches the M5's neural accelerators and llama.cpp does not, the GX10's
//! half-bandwidth endpoint never beats the Spark's link, the planner's default search keeps the
//! new boxes out (pins unchanged), and `like` reaches across user catalog files in their order.

use supernode::capacity::planner::{Goal, Objective, PlanRequest, candidates};
use supernode::catalog::{catalog, embedded};
use supernode::estimate::{Estimate, estimate};
use supernode::profile::Profile;
use supernode::scenario::ScenarioBuilder;

use crate::{bin, root, write_text};

/// The nodes this issue added (the `planner = false` boxes).
const NEW_NODES: [&str; 10] = [
    "mac-mini-m4-pro-20c-64gb",
    "mac-mini-m4-10c-16gb",
    "macbook-pro-m4-max-40c-128gb",
    "macbook-pro-m4-pro-20c-48gb",
    "macbook-pro-m5-max-40c-128gb",
    "gmktec-evo-x2-128gb",
    "minisforum-ms-s1-max-128gb",
    "hp-z2-mini-g1a-128gb",
    "asus-ascent-gx10",
    "lenovo-thinkstation-pgx",
];

fn profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn run(b: &ScenarioBuilder, p: &Profile) -> Estimate {
    estimate(&b.build().expect("scenario builds"), p).expect("scenario runs")
}

fn one(node: &str, model: &str, quant: &str, engine: &str, prompt: u64) -> ScenarioBuilder {
    let mut b = ScenarioBuilder::new(format!("{node} {model}"));
    b.nodes(&[node.to_string()]).model(model).quant(quant).engine(engine).parallelism("none").tokens(prompt, 16).seed(1);
    b
}

#[test]
fn every_new_node_has_parameters_sources_and_stays_out_of_the_default_plan() {
    let p = Profile::default_profile();
    let cat = embedded();
    for id in NEW_NODES {
        let n = cat.node(id).unwrap_or_else(|| panic!("built-in node {id}"));
        let chip = p.params_chip(n);
        assert!(p.chip(&chip).is_some(), "{id}: chip `{chip}` has no parameters");
        assert!(n.chip == chip || n.calibrated_as.as_deref() == Some(chip.as_str()), "{id}: {chip}");
        n.check_power_mode().unwrap();
        assert!(!n.planner, "{id} is kept out of plan's default search");
        for key in ["mem_bw_gbs", "price_usd", "max_w", "planner"] {
            assert!(n.sources.contains_key(key), "{id}: `{key}` has no source line");
        }
    }
    // Boxes of a measured chip read that chip's own parameters.
    for id in ["gmktec-evo-x2-128gb", "asus-ascent-gx10", "macbook-pro-m4-max-40c-128gb"] {
        assert!(cat.node(id).unwrap().calibrated_as.is_none(), "{id}");
    }
    let req = PlanRequest::new("llama-3.2-3b", Objective::new(None, None, None, Goal::TokensPerDayPerDollar).unwrap());
    let cands = candidates(&req).unwrap();
    assert!(!cands.is_empty());
    for c in &cands {
        assert!(c.nodes.iter().all(|n| !NEW_NODES.contains(&n.as_str())), "{:?}", c.nodes);
        let f = c.fabric.as_deref().unwrap_or("none");
        assert!(catalog().fabric(f).is_some_and(|f| f.planner), "{f}");
    }
    let mut named = req.clone();
    named.nodes = vec!["asus-ascent-gx10".into()];
    named.fabrics = vec!["cx7-roce-gx10".into()];
    named.max_nodes = 2;
    let cands = candidates(&named).unwrap();
    assert!(cands.iter().any(|c| c.nodes.len() == 2 && c.fabric.as_deref() == Some("cx7-roce-gx10")));
}

#[test]
fn a_power_mode_caps_compute_by_the_chips_energy_per_flop_and_leaves_bandwidth() {
    let p = profile();
    let evo = embedded().node("gmktec-evo-x2-128gb").unwrap();
    let pj = p.chip("ryzen-ai-max-395").unwrap().pj_per_flop;
    // Hand check: 55 W over pj_per_flop pJ per FLOP.
    let mut at55 = evo.clone();
    at55.power_mode_w = Some(55.0);
    assert!((at55.issued_flops(false, pj) - 55.0 / (pj * 1e-12)).abs() < 1.0);
    assert!(at55.issued_flops(false, pj) < evo.issued_flops(false, pj));
    assert_eq!(at55.max_wall_w(), evo.idle_w + 55.0);
    assert_eq!(evo.max_wall_w(), evo.max_w);

    let mut by_mode = Vec::new();
    for mode in [55.0, 85.0, 120.0] {
        let mut b = one("gmktec-evo-x2-128gb", "llama-3.1-8b", "q4_k_m", "llama-cpp", 2048);
        b.set("cluster.power_mode_w", &toml::Value::Float(mode)).unwrap();
        by_mode.push(run(&b, &p));
    }
    for w in by_mode.windows(2) {
        assert!(w[0].prefill_tokens_per_s < w[1].prefill_tokens_per_s, "more watts, faster prefill");
        assert!(w[0].decode_tokens_per_s <= w[1].decode_tokens_per_s * 1.0001, "more watts never slower decode");
        assert!(w[0].prefill_power_w <= w[1].prefill_power_w + 1e-9);
    }
    // Decode is memory-bound: the lowest mode keeps most of its rate (bandwidth is not capped).
    assert!(
        by_mode[0].decode_tokens_per_s > 0.8 * by_mode[2].decode_tokens_per_s,
        "{} vs {}",
        by_mode[0].decode_tokens_per_s,
        by_mode[2].decode_tokens_per_s
    );
    for e in &by_mode {
        assert!(e.peak_power_w <= evo.idle_w + 120.0 + 1e-9);
    }
    // A mode the box does not offer is refused with the modes it has.
    let mut b = one("gmktec-evo-x2-128gb", "llama-3.1-8b", "q4_k_m", "llama-cpp", 128);
    b.set("cluster.power_mode_w", &toml::Value::Float(70.0)).unwrap();
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("`power_mode_w = 70` is not a mode of node `gmktec-evo-x2-128gb`") && e.contains("[55.0, 85.0, 120.0]"), "{e}");
    let mut b = one("m4-max-40c-128gb", "llama-3.1-8b", "q4_k_m", "llama-cpp", 128);
    b.set("cluster.power_mode_w", &toml::Value::Float(55.0)).unwrap();
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("`power_mode_w = 55` is not a mode of node `m4-max-40c-128gb` (its modes: [] W)"), "{e}");
}

#[test]
fn mlx_prefills_on_the_m5_neural_accelerators_and_llama_cpp_does_not() {
    let p = profile();
    let m5 = embedded().node("macbook-pro-m5-max-40c-128gb").unwrap();
    let pj = p.chip("m4-max").unwrap().pj_per_flop;
    assert!((m5.issued_flops(true, pj) - 58.2e12).abs() < 1e3);
    assert!((m5.issued_flops(false, pj) - 12.33e12).abs() < 1e3);
    let mlx = |node: &str| run(&one(node, "llama-3.1-8b", "mlx-4bit", "mlx-lm", 2048), &p);
    let gguf = |node: &str| run(&one(node, "llama-3.1-8b", "q4_k_m", "llama-cpp", 2048), &p);
    let (m5_mlx, m4_mlx) = (mlx("macbook-pro-m5-max-40c-128gb"), mlx("macbook-pro-m4-max-40c-128gb"));
    let (m5_gguf, m4_gguf) = (gguf("macbook-pro-m5-max-40c-128gb"), gguf("macbook-pro-m4-max-40c-128gb"));
    // Same fitted parameters (the M5 Max reads the M4 Max's): only the peaks differ. llama.cpp
    // runs on the ALUs, an M5 core's 0.808 against an M4 core's 0.852 (FACTS-2026 A2): no gain.
    let mlx_gain = m5_mlx.prefill_tokens_per_s / m4_mlx.prefill_tokens_per_s;
    let gguf_gain = m5_gguf.prefill_tokens_per_s / m4_gguf.prefill_tokens_per_s;
    assert!(mlx_gain > 2.0 && (0.9..=1.0).contains(&gguf_gain), "MLX x{mlx_gain:.2}, llama.cpp x{gguf_gain:.2}");
    // 614 vs 546 GB/s: decode gains at most the bandwidth ratio.
    let decode_gain = m5_mlx.decode_tokens_per_s / m4_mlx.decode_tokens_per_s;
    assert!(decode_gain > 1.0 && decode_gain <= 614.0 / 546.0 * 1.005, "x{decode_gain:.3}");
    assert!(m5_mlx.calibration.status.contains("EXTRAPOLATION") || m5_mlx.calibration.reasons.iter().any(|r| r.contains("m5-max")));
}

#[test]
fn the_gx10_link_never_beats_the_sparks_and_runs_from_the_cli() {
    let p = profile();
    let pair = |node: &str, fabric: &str| {
        let mut b = ScenarioBuilder::new(format!("2x {node}"));
        b.nodes(&[node.to_string(), node.to_string()]).fabric(fabric).model("llama-3.3-70b").quant("fp8").engine("vllm");
        b.parallelism("tensor").tokens(1024, 16).seed(1);
        run(&b, &p)
    };
    let gx10 = pair("asus-ascent-gx10", "cx7-roce-gx10");
    let spark = pair("dgx-spark", "cx7-roce");
    assert!(
        gx10.decode_tokens_per_s <= spark.decode_tokens_per_s * 1.0001,
        "{} vs {}",
        gx10.decode_tokens_per_s,
        spark.decode_tokens_per_s
    );
    assert!(gx10.prefill_tokens_per_s <= spark.prefill_tokens_per_s * 1.0001);

    let dir = tempfile::tempdir().unwrap();
    let f = write_text(
        dir.path(),
        "gx10.toml",
        "[cluster]\nnode = \"asus-ascent-gx10\"\ncount = 2\nfabric = \"cx7-roce-gx10\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n\
         [engine]\nname = \"vllm\"\nparallelism = \"tensor\"\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 16\n",
    );
    let out = bin().arg("run").arg(&f).args(["--json", "--no-write"]).assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["cost_usd"].as_f64().unwrap(), 2.0 * 3000.0 + 100.0, "two GX10s and one QSFP cable");
    let out = bin().args(["catalog", "nodes"]).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for id in NEW_NODES {
        assert!(text.contains(id), "{id} listed");
    }
    assert!(text.contains("power modes: [55.0, 85.0, 120.0] W"), "{text}");
    assert!(text.contains("MLX GEMM on the neural accelerators: 58.2 TFLOPS"));
    let out = bin().args(["catalog", "fabrics"]).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for id in ["eth-25g", "eth-50g", "eth-100g", "tb-eth-25g", "cx7-roce-gx10"] {
        assert!(text.contains(id), "{id} listed");
    }
}

#[test]
fn like_reaches_an_entry_of_a_file_read_earlier_and_not_a_later_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_text(
        dir.path(),
        "a.toml",
        "[[node]]\nid = \"evo-55w\"\nlike = \"gmktec-evo-x2-128gb\"\nname = \"EVO-X2 at 55 W\"\npower_mode_w = 55\n\
         [node.sources]\npower_mode_w = \"AXB35 55 W mode\"\n",
    );
    let b = write_text(
        dir.path(),
        "b.toml",
        "[[node]]\nid = \"evo-55w-25gbe\"\nlike = \"evo-55w\"\nname = \"EVO-X2 at 55 W, 25 GbE\"\nethernet_gbps = 25\n\
         [node.sources]\nethernet_gbps = \"a NIC\"\n",
    );
    let list = |args: &[&std::path::Path], env: Option<&std::path::Path>| {
        let mut cmd = bin();
        cmd.current_dir(root()).args(["catalog", "nodes"]);
        for f in args {
            cmd.arg("--catalog").arg(f);
        }
        if let Some(e) = env {
            cmd.env("SUPERNODE_CATALOG", e);
        }
        cmd
    };
    let out = list(&[&a, &b], None).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("evo-55w-25gbe") && text.contains("like evo-55w"), "{text}");
    // The base's mode carries over, and the base's `planner = false` does not: it is the entry's own say.
    assert!(text.contains("power modes: [55.0, 85.0, 120.0] W, running at 55 W"), "{text}");
    // $SUPERNODE_CATALOG is read before --catalog.
    list(&[&b], Some(&a)).assert().success();
    // A file read later is not a base: the error says the order rule.
    let out = list(&[&b, &a], None).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("b.toml:3:1: `like = \"evo-55w\"`: no node has that id"), "{err}");
    assert!(err.contains("read before this one"), "{err}");
    // A loop inside one file is still refused.
    let l = write_text(dir.path(), "loop.toml", "[[node]]\nid = \"x\"\nlike = \"y\"\n[[node]]\nid = \"y\"\nlike = \"x\"\n");
    let out = list(&[&a, &l], None).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("goes round in a loop"));
    // A user node named in `plan` is searched; a GPU memory limit the user set decides the fit.
    let small = write_text(
        dir.path(),
        "small.toml",
        "[[node]]\nid = \"m4-max-30gb-limit\"\nlike = \"m4-max-40c-128gb\"\nname = \"limited\"\ngpu_memory_limit_gb = 30\n",
    );
    let plan = |limit_file: &std::path::Path| {
        let out = bin()
            .current_dir(root())
            .args([
                "plan",
                "--model",
                "llama-3.3-70b",
                "--quant",
                "q4_k_m",
                "--nodes",
                "m4-max-30gb-limit",
                "--max-nodes",
                "1",
                "--budget-usd",
                "100000",
                "--json",
            ])
            .args(["--engines", "llama-cpp", "--catalog"])
            .arg(limit_file)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let (_, text) = plan(&small);
    assert!(text.contains("does not fit") || text.contains("DoesNotFit") || text.contains("gpu_memory_limit_gb"), "{text}");
    let big = write_text(
        dir.path(),
        "big.toml",
        "[[node]]\nid = \"m4-max-30gb-limit\"\nlike = \"m4-max-40c-128gb\"\nname = \"limited\"\ngpu_memory_limit_gb = 100\n",
    );
    let (code, text) = plan(&big);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("m4-max-30gb-limit"), "{text}");
}

/// Nodes that read one chip's fitted efficiencies (their own chip or its `calibrated_as`) state
/// their GEMM peak on that chip's basis: compute per GPU core within 15% across them (clocks
/// differ that little: an M1 core's 1.3 GHz against an M2's 1.4), so a bigger GPU of a family never prefills slower. An M4 Pro
/// once stated FACTS-2026's double-rate 0.852 TFLOPS per core against the M4 Max's 0.325 and,
/// reading the M4 Max's efficiencies, out-prefilled it with half the cores.
#[test]
fn nodes_reading_one_chips_efficiencies_state_their_compute_on_its_basis() {
    let p = profile();
    let cat = embedded();
    let mut by_chip: std::collections::BTreeMap<String, Vec<(String, f64)>> = Default::default();
    for n in &cat.nodes {
        if n.os != supernode::hw::Os::Macos {
            continue;
        }
        by_chip.entry(p.params_chip(n)).or_default().push((n.id.clone(), n.fp16_tflops / n.gpu_cores as f64));
    }
    for (chip, nodes) in &by_chip {
        let (lo, hi) = nodes.iter().fold((f64::MAX, 0.0_f64), |(lo, hi), (_, c)| (lo.min(*c), hi.max(*c)));
        assert!(hi <= 1.15 * lo, "nodes reading `{chip}`: TFLOPS per GPU core {nodes:?}");
    }
    // Through the estimator: the 40-core M4 Max prefills faster than the 20-core M4 Pro.
    let prefill = |node: &str| run(&one(node, "llama-3.1-8b", "q4_k_m", "llama-cpp", 2048), &p).prefill_tokens_per_s;
    let (max, pro) = (prefill("m4-max-40c-128gb"), prefill("mac-mini-m4-pro-20c-64gb"));
    assert!(max > 1.5 * pro, "M4 Max {max:.0} vs M4 Pro {pro:.0} tok/s");
}

/// FACTS-2026 A2 (Apple ML Research, MLX on M5): time to first token up to ~4x an M4's on a
/// 24 GB MacBook Pro (Qwen3-14B 4-bit: ~36 s -> ~8 s), from the M5's neural accelerators. The
/// twin's M5 (its measured MLX GEMM peak) against the M4 (the M4 Max basis) on a long
/// compute-bound prompt lands in that range; on the 0.852-per-core figure it read 1.7x.
#[test]
fn mlx_prefill_on_an_m5_is_about_four_times_an_m4s() {
    let p = profile();
    let ttft = |node: &str| run(&one(node, "llama-3.1-8b", "mlx-4bit", "mlx-lm", 4096), &p).ttft_s;
    let gain = ttft("mac-mini-m4-10c-16gb") / ttft("macbook-pro-m5-10c-24gb");
    assert!((3.0..=5.0).contains(&gain), "M5 TTFT gain x{gain:.2}");
}
