//! Attention at depth and recurrent mixers on Apple silicon (issue 20): decode reads what
//! FACTS-2026 section C says each layer reads (weights + global KV x L + local KV x min(L,
//! window); a hybrid's state read and written once a step instead of its KV), both runtimes
//! stream the cache at the dense (weight GEMV) rate, and MLX's Gated DeltaNet prefill runs its
//! tokens one after another at the recurrence's ALU rate.

use std::path::PathBuf;

use serde_json::Value;
use supernode::engine::{lower_step, recurrence_alu_fraction};
use supernode::estimate::{estimate, trace_plan};
use supernode::llm::OpClass;
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};

use crate::root;

const KIB: f64 = 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

fn profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn fixture(file: &str) -> PathBuf {
    root().join("tests/fixtures/hf-configs").join(file)
}

/// One M3 Ultra 512 GB running the config `file` (or the JSON `config`, written to `dir`).
fn scenario(config: &std::path::Path, node: &str, engine: &str, quant: &str, prompt: u64) -> Scenario {
    let text = format!(
        "name = \"depth\"\nseed = 1\n[cluster]\nnode = \"{node}\"\ncount = 1\n[model]\nhf_config = {path:?}\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\n[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = 2\n",
        path = config.display().to_string()
    );
    parse(Source { path: "depth.toml".into(), dir: PathBuf::new(), text }).unwrap_or_else(|e| panic!("{e}"))
}

/// Bytes one decode token reads on the node after `context` tokens, as the estimate times it.
fn decode_bytes(s: &Scenario, context: u64) -> f64 {
    let plan = trace_plan(s, &profile()).unwrap();
    let mut lowered = lower_step(&plan, 1);
    lowered.work(&plan, context).iter().map(|w| w.bytes).sum()
}

const RUNTIMES: [(&str, &str); 2] = [("mlx-lm", "mlx-4bit"), ("llama-cpp", "q4_k_m")];

/// Gemma 3 27B (10 global layers, 52 local of window 1024, 8 KiB per layer per token) and
/// Llama 4 Scout (12 global NoPE layers, 36 chunked of 8192, 4 KiB): decode at 32k against 4k
/// reads only the global layers' extra tokens (the chunked ones restart at 32,768: a token
/// at position 32,768 attends to itself alone), and the step grows by those bytes at the
/// cache's read rate: 819.2 GB/s x `bw_eff_dense` under llama.cpp's flash attention, x
/// `bw_eff_attention` under MLX's SDPA.
#[test]
fn windowed_and_chunked_models_read_only_their_windows_at_depth() {
    let p = profile();
    let chip = p.chip("m3-ultra").unwrap();
    // llama.cpp's flash attention streams the cache at the dense rate; MLX's SDPA reads it at
    // the attention efficiency (src/engine/cost/kernel.rs, attention_terms).
    let stream = |engine: &str| 819.2e9 * if engine == "llama-cpp" { chip.bw_eff_dense } else { chip.bw_eff_attention };
    // The token after L cached tokens attends over L + 1.
    let gemma = |l: f64| 10.0 * 8.0 * KIB * (l + 1.0) + 52.0 * 8.0 * KIB * (l + 1.0).min(1024.0);
    let scout = |l: f64| 12.0 * 4.0 * KIB * (l + 1.0) + 36.0 * 4.0 * KIB * ((l as u64) % 8192 + 1) as f64;
    for (file, kv) in [("gemma-3-27b-it.json", &gemma as &dyn Fn(f64) -> f64), ("llama-4-scout-17b-16e.json", &scout)] {
        for (engine, quant) in RUNTIMES {
            let at = |l: u64| scenario(&fixture(file), "m3-ultra-80c-512gb", engine, quant, l);
            let (s4, s32) = (at(4096), at(32_768));
            let delta = decode_bytes(&s32, 32_768) - decode_bytes(&s4, 4096);
            let want = kv(32_768.0) - kv(4096.0);
            assert!((delta - want).abs() < 1.0, "{file} {engine}: {delta} vs {want}");
            // The decode step (mean of the two tokens after the prompt) grows by those bytes
            // over the stream rate.
            let step = |s: &Scenario| 1.0 / estimate(s, &p).unwrap().decode_tokens_per_s;
            let grown = step(&s32) - step(&s4);
            let by_hand = (kv(32_768.5) - kv(4096.5)) / stream(engine);
            assert!((grown / by_hand - 1.0).abs() < 0.01, "{file} {engine}: {grown} s vs {by_hand} s by hand");
        }
    }
    // Gemma at 32k reads 10 x 8 KiB x 32,769 + 52 x 8 KiB x 1024 = 3.12 GB of KV, not the
    // 16.6 GB all 62 layers would: 18.75% of it.
    assert!((gemma(32_768.0) / (62.0 * 8.0 * KIB * 32_769.0) - 0.1875).abs() < 1e-3);
}

/// Qwen3-Next at 32k: its 12 full-attention layers read a quarter of the KV its full-attention
/// twin (the same config with every layer full) reads, and its 36 Gated DeltaNet layers read
/// and write their 2 MiB + 48 KiB state once each step, whatever the context.
#[test]
fn a_hybrid_at_32k_reads_its_state_and_a_quarter_of_a_full_attention_twins_kv() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture("qwen3-coder-next.json");
    let mut twin: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    twin["full_attention_interval"] = 1.into();
    let twin_file = dir.path().join("twin.json");
    std::fs::write(&twin_file, serde_json::to_string(&twin).unwrap()).unwrap();
    for (engine, quant) in RUNTIMES {
        let h = scenario(&file, "m3-ultra-80c-512gb", engine, quant, 32_768);
        let t = scenario(&twin_file, "m3-ultra-80c-512gb", engine, quant, 32_768);
        let kv = |s: &Scenario| decode_bytes(s, 32_768) - decode_bytes(s, 0);
        assert!((kv(&h) / kv(&t) - 0.25).abs() < 1e-9, "{engine}: {} vs {}", kv(&h), kv(&t));
        // 12 x 2 KiB per token over the 32,768 extra tokens.
        assert!((kv(&h) - 12.0 * 2.0 * KIB * 32_768.0).abs() < 1.0, "{engine}");
        let plan = trace_plan(&h, &profile()).unwrap();
        let rec: Vec<_> = (0..plan.model.layers).flat_map(|i| plan.model.layer_ops(i)).filter(|o| o.class == OpClass::Recurrent).collect();
        assert_eq!(rec.len(), 36);
        let node = plan.cost(0);
        let state = 2.0 * MIB + 48.0 * KIB;
        for ctx in [0, 32_768] {
            let w = node.op_work(&rec[0], 1, ctx);
            // Read and written once, plus the layer's own small weights (convolution, decay).
            assert!(w.bytes >= 2.0 * state && w.bytes < 2.0 * state + 100.0 * KIB, "{engine} at {ctx}: {}", w.bytes);
        }
    }
}

/// MLX's `gated_delta` kernel runs a prompt's tokens one after another on the plain ALUs: a
/// Gated DeltaNet layer's prefill time grows linearly in T at `7 Hv Dk Dv` FLOPs per token
/// over the ALU peak times the kernel's issue fraction (0.368 at Dk = 128), and on an M5 Max
/// it does not use MLX's 58.2 TFLOP/s matrix peak.
#[test]
fn mlx_gated_deltanet_prefill_grows_linearly_at_the_sequential_kernel_rate() {
    assert!((recurrence_alu_fraction(128) - 28.0 / 76.0).abs() < 1e-12);
    let file = fixture("qwen3-coder-next.json");
    for node in ["m3-ultra-80c-512gb", "macbook-pro-m5-max-40c-128gb"] {
        let s = scenario(&file, node, "mlx-lm", "mlx-4bit", 4096);
        let plan = trace_plan(&s, &profile()).unwrap();
        // The catalog's ALU figure (M3 Ultra 26.0 TFLOP/s), never the M5's matrix figure.
        let alu = plan.nodes[0].flops();
        assert!(plan.nodes[0].mlx_gemm_tflops.is_none_or(|t| t * 1e12 > alu), "{node}");
        let op = (0..plan.model.layers).flat_map(|i| plan.model.layer_ops(i)).find(|o| o.class == OpClass::Recurrent).unwrap();
        let cost = plan.cost(0);
        let launch = cost.launch_ns(&op, 1);
        let t = |tokens: u64| cost.op_ns(&op, tokens, 0) - launch;
        // 7 x 32 x 128 x 128 + 2 x 8192 x 4 FLOPs a token.
        let per_token = (7.0 * 32.0 * 128.0 * 128.0 + 2.0 * 8192.0 * 4.0) / (alu * 28.0 / 76.0) * 1e9;
        for tokens in [2048u64, 4096, 8192] {
            assert!((t(tokens) / (tokens as f64 * per_token) - 1.0).abs() < 1e-9, "{node}: {tokens} tokens {} ns", t(tokens));
        }
    }
}

/// A `generate` run on one GB10 with llama.cpp's 2048-token micro-batch: `depth` tokens in the
/// cache, then `prompt` tokens prefilled and `generate` decoded.
fn gb10_run(depth: u64, prompt: u64, generate: u64) -> Scenario {
    let depth_key = if depth > 0 { format!("context_tokens = {depth}\n") } else { String::new() };
    let text = format!(
        "name = \"d\"\nseed = 1\n[cluster]\nnode = \"dgx-spark\"\ncount = 1\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4\"\n[engine]\nname = \"llama-cpp\"\nprefill_chunk = 2048\n[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n{depth_key}"
    );
    parse(Source { path: "d.toml".into(), dir: PathBuf::new(), text }).unwrap_or_else(|e| panic!("{e}"))
}

/// llama-bench's `pp2048 @ d32768` times the 2048 tokens after a 32768-token context: with
/// `context_tokens`, the prefill is exactly the last chunk of a 34816-token prompt (the chunks
/// line up: 32768 is 16 micro-batches), i.e. the difference of the two full prefills, and
/// decode after it reads the same context as decode after the whole prompt.
#[test]
fn a_prefill_after_a_filled_context_is_the_chunks_after_it() {
    let p = profile();
    let ttft = |s: &Scenario| estimate(s, &p).unwrap().ttft_s;
    let after = estimate(&gb10_run(32768, 2048, 4), &p).unwrap();
    let marginal = ttft(&gb10_run(0, 34816, 1)) - ttft(&gb10_run(0, 32768, 1));
    assert!((after.ttft_s - marginal).abs() < 1e-5, "{} vs {marginal}", after.ttft_s);
    assert!((after.prefill_tokens_per_s - 2048.0 / marginal).abs() / after.prefill_tokens_per_s < 1e-5);
    let whole = estimate(&gb10_run(0, 34816, 4), &p).unwrap();
    assert!((after.decode_tokens_per_s / whole.decode_tokens_per_s - 1.0).abs() < 1e-9);
    // Attention over a longer cache: slower than the same 2048 tokens on an empty context.
    let fresh = estimate(&gb10_run(0, 2048, 4), &p).unwrap();
    assert!(
        after.prefill_tokens_per_s < 0.9 * fresh.prefill_tokens_per_s,
        "{} vs {}",
        after.prefill_tokens_per_s,
        fresh.prefill_tokens_per_s
    );
    assert!(after.decode_tokens_per_s < fresh.decode_tokens_per_s);
}

/// The prefill rate never rises with the context already in the cache (each token attends to
/// at least as much), on every runtime of the GB10 and the M3 Ultra that runs the model.
#[test]
fn prefill_after_more_context_is_never_faster() {
    let p = profile();
    for (node, engine, quant) in
        [("dgx-spark", "llama-cpp", "mxfp4"), ("dgx-spark", "vllm", "mxfp4"), ("m3-ultra-80c-512gb", "mlx-lm", "mxfp4")]
    {
        let mut last = f64::INFINITY;
        for depth in [0u64, 4096, 16384, 65536] {
            let text = format!(
                "name = \"d\"\nseed = 1\n[cluster]\nnode = \"{node}\"\ncount = 1\n[model]\nname = \"gpt-oss-120b\"\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\n[workload]\nprompt_tokens = 1024\ngenerate_tokens = 2\ncontext_tokens = {depth}\n"
            );
            let s = parse(Source { path: "d.toml".into(), dir: PathBuf::new(), text }).unwrap_or_else(|e| panic!("{e}"));
            let rate = estimate(&s, &p).unwrap().prefill_tokens_per_s;
            assert!(rate <= last * (1.0 + 1e-9), "{node} {engine}: {rate} tok/s after {depth} > {last}");
            last = rate;
        }
    }
}

/// `context_tokens` is a generate run's key, counts against the model's window, and is read
/// from `--set`.
#[test]
fn context_tokens_errors_name_the_key() {
    let bad = |workload: &str| {
        let text = format!(
            "name = \"d\"\n[cluster]\nnode = \"dgx-spark\"\ncount = 1\n[model]\nname = \"gpt-oss-120b\"\n[engine]\nname = \"llama-cpp\"\n[workload]\n{workload}"
        );
        parse(Source { path: "d.toml".into(), dir: PathBuf::new(), text }).unwrap_err().to_string()
    };
    let e = bad("kind = \"serve\"\nconcurrency = 2\ncontext_tokens = 100\n");
    assert!(e.contains("`workload.context_tokens` applies to kind = \"generate\" only"), "{e}");
    let e = bad("prompt_tokens = 1000\ngenerate_tokens = 100\ncontext_tokens = 131000\n");
    assert!(e.contains("context_tokens 131000 + prompt_tokens 1000 + generate_tokens 100 = 132100 tokens is past"), "{e}");
    let e = bad("context_tokens = -5\n");
    assert!(e.contains("`workload.context_tokens` = -5 is out of range"), "{e}");
    let out = crate::bin()
        .args(["run", "--json", "--set", "workload.context_tokens=8192", "--set", "workload.generate_tokens=2"])
        .arg(crate::root().join("scenarios/spark-vllm-gptoss120b.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let at: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = crate::bin()
        .args(["run", "--json", "--set", "workload.generate_tokens=2"])
        .arg(crate::root().join("scenarios/spark-vllm-gptoss120b.toml"))
        .output()
        .unwrap();
    let fresh: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rate = |v: &Value| v["prefill_tokens_per_s"].as_f64().unwrap();
    assert!(rate(&at) < rate(&fresh), "{} vs {}", rate(&at), rate(&fresh));
    assert_eq!((at["context_tokens"].as_u64(), fresh.get("context_tokens")), (Some(8192), None));
    let out = crate::bin()
        .args(["run", "--no-intervals", "--set", "workload.context_tokens=8192", "--set", "workload.generate_tokens=2"])
        .arg(crate::root().join("scenarios/spark-vllm-gptoss120b.toml"))
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("(1024 prompt tokens after 8192 in context)"), "{table}");
}

/// `validate` reads a llama-bench prefill test after a filled context (`pp512 @ d4096` in the
/// notes, the prompt column holding depth + prompt or the prompt alone) as the rate of the timed
/// tokens, says so, and refuses a prompt column that is neither.
#[test]
fn validate_reads_prefill_at_depth_as_the_tokens_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let head = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";
    let row = |id: &str, prompt: &str, notes: &str| {
        format!("{id},dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,{prompt},1,prefill_tokens_per_s,1000,tok/s,me,\"{notes}\"\n")
    };
    let csv = crate::write_text(
        dir.path(),
        "d.csv",
        &format!(
            "{head}{}{}{}{}",
            row("whole", "4608", "llama-bench pp512 @ d4096: -ub 2048"),
            row("timed", "512", "llama-bench pp512 @ d4096: -ub 2048"),
            row("plain", "512", "llama-bench pp512: -ub 2048"),
            row("bad", "1000", "llama-bench pp512 @ d4096")
        ),
    );
    let out = crate::bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let pred = |id: &str| v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).map(|r| r["predicted"].as_f64().unwrap());
    let (whole, timed, plain) = (pred("whole").unwrap(), pred("timed").unwrap(), pred("plain").unwrap());
    assert_eq!(whole, timed);
    assert!(whole < plain, "{whole} vs {plain}");
    let r = v["rows"].as_array().unwrap().iter().find(|r| r["id"] == "whole").unwrap();
    assert!(r["assumptions"].to_string().contains("after 4096 tokens already in context"), "{}", r["assumptions"]);
    assert!(
        crate::skip_reason(&v, "bad").contains("write 512 (the tokens timed) or 4608 (depth and prompt)"),
        "{}",
        crate::skip_reason(&v, "bad")
    );
}

/// `import` turns a llama-bench `ppN @ dD` test into a prefill row whose prompt column holds
/// D + N and whose source names the test, which `validate` reads back as N tokens after D.
#[test]
fn import_keeps_prefill_after_a_filled_context() {
    let dir = tempfile::tempdir().unwrap();
    let md = crate::write_text(
        dir.path(),
        "d.md",
        "| model | params | backend | ngl | test | t/s |\n| --- | --: | --: | --: | --: | --: |\n| llama 3B Q4_K - Medium | 3.21 B | Metal | 99 | pp512 | 3000.0 ± 1.0 |\n| llama 3B Q4_K - Medium | 3.21 B | Metal | 99 | pp512 @ d4096 | 2500.0 ± 1.0 |\n",
    );
    let out = crate::bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(&md).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = String::from_utf8(out.stdout).unwrap();
    let rows = supernode::calibrate::validate::parse_csv(&csv, "stdout").unwrap();
    let deep = rows.iter().find(|r| r.id.ends_with("pp512-d4096")).unwrap_or_else(|| panic!("{csv}"));
    assert_eq!((deep.metric.as_str(), deep.prompt_tokens.as_str()), ("prefill_tokens_per_s", "4608"));
    let imported = crate::write_text(dir.path(), "i.csv", &csv);
    let out = crate::bin().args(["-q", "validate", "--json", "--against"]).arg(&imported).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let pred = |suffix: &str| {
        v["rows"].as_array().unwrap().iter().find(|r| r["id"].as_str().unwrap().ends_with(suffix)).unwrap()["predicted"].as_f64().unwrap()
    };
    assert!(pred("pp512-d4096") < pred("-pp512"), "{v}");
}

/// llama.cpp without flash attention (`[engine] flash_attention = false`, llama-bench's `-fa 0`
/// default until mid-2026): each query head reads its KV head again and the scores go through
/// memory, so a long generation slows far more than with the flash kernel. The M2 Ultra's
/// Llama 3 70B Q4_K_M row of May 2024 notes tg 8192 = 9.34 tok/s beside tg 512 = 12.48 (not a
/// row of its own, never fitted): without flash attention the twin loses about as much; with
/// it, ~3%. Other engines have no such switch and say so.
#[test]
fn llama_cpp_without_flash_attention_slows_a_long_generation_as_published() {
    let run = |fa: bool, generate: u64| {
        let text = format!(
            "name = \"fa\"\nseed = 1\n[cluster]\nnode = \"m2-ultra-76c-192gb\"\ncount = 1\n[model]\nname = \"llama-3.3-70b\"\nquant = \"q4_k_m\"\n[engine]\nname = \"llama-cpp\"\nflash_attention = {fa}\n[workload]\nprompt_tokens = 1\ngenerate_tokens = {generate}\n"
        );
        let s = parse(Source { path: "fa.toml".into(), dir: PathBuf::new(), text }).unwrap_or_else(|e| panic!("{e}"));
        estimate(&s, &profile()).unwrap().decode_tokens_per_s
    };
    let (plain_512, plain_8k) = (run(false, 512), run(false, 8192));
    let (flash_512, flash_8k) = (run(true, 512), run(true, 8192));
    eprintln!("tg512/tg8192: without flash attention {plain_512:.2}/{plain_8k:.2}, with {flash_512:.2}/{flash_8k:.2}");
    assert!(flash_8k / flash_512 > 0.95, "flash attention streams the cache once: {flash_512} -> {flash_8k}");
    let published = 9.34 / 12.48;
    // The twin keeps 83% of the rate where the published run kept 75%: its re-reads and score
    // passes are a floor (the broadcast mat-vec over 128-element rows runs below the stream).
    assert!((plain_8k / plain_512 - published).abs() < 0.1, "{plain_512} -> {plain_8k} against {published:.3}");
    assert!(plain_512 < flash_512 && plain_8k < flash_8k);
    let e = parse(Source {
        path: "fa.toml".into(),
        dir: PathBuf::new(),
        text: "name = \"fa\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\n[model]\nname = \"llama-3.3-70b\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"mlx-lm\"\nflash_attention = false\n".into(),
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("`engine.flash_attention` switches llama.cpp's flash-attention kernel") && e.contains("mlx-lm"), "{e}");
}
