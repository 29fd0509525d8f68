//! vLLM and SGLang on GB10: one user equals `generate`, vLLM V1's token budget, chunked prefill
//! beside decodes and preemption by recompute on hand-sized cases, fp8 KV, CUDA graphs against
//! `--enforce-eager`, NCCL tensor parallel over two Sparks, the CUDA-only rule, and the CLI.

use std::path::PathBuf;

use supernode::estimate::{ServeSim, estimate};
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};

use crate::bin;

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn sc(text: &str) -> Scenario {
    parse(Source { path: "cuda.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap_or_else(|e| panic!("{e}"))
}

/// Llama 3.2 3B FP8 on one DGX Spark under `engine` with extra `[engine]` lines.
fn spark(engine: &str, extra: &str) -> String {
    format!("[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"llama-3.2-3b\"\nquant = \"fp8\"\n[engine]\nname = \"{engine}\"\n{extra}\n")
}

#[test]
fn one_user_reproduces_generate_exactly_on_vllm_and_sglang() {
    for engine in ["vllm", "sglang"] {
        for (prompt, generate) in [(128, 64), (10_000, 20)] {
            let base = spark(engine, "");
            let g =
                estimate(&sc(&format!("{base}[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n")), &quiet()).unwrap();
            let text = format!(
                "{base}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 1\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n"
            );
            let s = estimate(&sc(&text), &quiet()).unwrap();
            let sv = s.serve.as_ref().unwrap();
            assert_eq!(sv.per_request_decode_tokens_per_s, g.decode_tokens_per_s, "{engine} {prompt}");
            assert_eq!(s.ttft_s, g.ttft_s, "{engine} {prompt}");
            assert_eq!(s.tpot_ms.mean, g.tpot_ms.mean, "{engine} {prompt}");
            assert_eq!(s.sim_events, g.sim_events, "{engine}: same forwards on the event core");
        }
    }
}

/// (sequences, tokens) of every forward of a closed-loop run of `users` requests.
fn forwards(engine_lines: &str, engine: &str, users: u64, prompt: u64, generate: u64) -> Vec<(usize, u64)> {
    let text = format!(
        "{}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = {users}\nrequests = {users}\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n",
        spark(engine, engine_lines)
    );
    let s = sc(&text);
    let plan = s.plan(prompt + generate, &quiet()).unwrap();
    let mut seen = Vec::new();
    ServeSim::new(&plan, s.workload.serve.as_ref().unwrap(), &s.slo, s.seed).with_observer(|f| seen.push((f.sequences, f.tokens))).run();
    seen
}

#[test]
fn vllm_spends_its_token_budget_on_decodes_first_then_chunks_prompts_beside_them() {
    // Budget 256, two 300-token prompts: A's first chunk fills step 1; step 2 finishes A (44)
    // and gives B the remaining 212; step 3 fuses A's first decode with B's last 88 tokens;
    // then both decode together, one token each.
    let f = forwards("max_num_batched_tokens = 256\nmax_num_seqs = 4", "vllm", 2, 300, 3);
    assert_eq!(f[..4], [(1, 256), (2, 256), (2, 89), (2, 2)], "{f:?}");
}

#[test]
fn sglang_runs_prefill_batches_apart_from_decode_batches() {
    // Two 300-token prompts in one extend batch (600 <= 8192), then decode steps of both; no
    // forward mixes the two.
    let f = forwards("", "sglang", 2, 300, 3);
    assert_eq!(f, [(2, 600), (2, 2), (2, 2), (2, 2)], "{f:?}");
}

#[test]
fn vllm_preempts_the_last_admitted_request_when_blocks_run_out() {
    let text = format!(
        "{}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 3\nrequests = 3\nprompt_tokens = 16\ngenerate_tokens = 40\n",
        spark("vllm", "")
    );
    let s = sc(&text);
    let plan = s.plan(56, &quiet()).unwrap();
    let serve = s.workload.serve.as_ref().unwrap();
    // Room for five 16-token blocks: three 1-block prompts fit, three 2-block sequences do not.
    let five_blocks = plan.kv_bytes(0, 80);
    let tight = ServeSim::new(&plan, serve, &s.slo, s.seed).with_kv_capacity(vec![five_blocks]).with_request_log().run();
    assert!(tight.stats.preempted >= 2, "{}", tight.stats.preempted);
    let log = tight.log.unwrap();
    assert_eq!(log.iter().filter(|r| !r.rejected).count(), 3, "every request completes");
    let done = |id: u64| log.iter().find(|r| r.id == id).unwrap().done;
    // The first admitted is never preempted and finishes first; the last admitted last.
    assert!(done(0) < done(1) && done(1) < done(2), "{log:?}");
    let roomy = ServeSim::new(&plan, serve, &s.slo, s.seed).run();
    assert_eq!(roomy.stats.preempted, 0);
    assert!(roomy.end_ns < tight.end_ns, "recomputing costs time");
}

#[test]
fn fp8_kv_halves_the_cache_and_cuda_graphs_beat_eager_launches() {
    let run = |extra: &str| {
        let s = sc(&format!("{}[workload]\nprompt_tokens = 8000\ngenerate_tokens = 16\n", spark("vllm", extra)));
        let plan = s.plan(8016, &quiet()).unwrap();
        (plan.kv_bytes(0, 1000), estimate(&s, &quiet()).unwrap().decode_tokens_per_s)
    };
    let (kv_auto, graphs) = run("");
    let (kv_fp8, graphs_fp8) = run("kv_cache_dtype = \"fp8\"");
    let (_, eager) = run("enforce_eager = true");
    assert_eq!(kv_fp8 * 2.0, kv_auto);
    assert!(graphs_fp8 > graphs, "fewer KV bytes read at depth: {graphs_fp8} vs {graphs}");
    // Graphs are never slower than eager launches (a replayed kernel costs at most an eager
    // launch, and the host dispatches nothing per kernel).
    assert!(graphs >= eager, "graphs {graphs} vs eager {eager}");
}

/// Batch-1 decode rate of `model` at `quant` on `count` Sparks under vLLM with `extra` lines.
fn vllm_decode(model: &str, quant: &str, count: u32, extra: &str) -> f64 {
    let cluster = if count == 1 {
        "[cluster]\nnode = \"dgx-spark\"\n".to_string()
    } else {
        format!("[cluster]\nnode = \"dgx-spark\"\ncount = {count}\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n")
    };
    let text = format!(
        "{cluster}[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"vllm\"\n{extra}\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 32\n"
    );
    estimate(&sc(&text), &quiet()).unwrap().decode_tokens_per_s
}

#[test]
fn eager_launches_overlap_the_gpu_and_cost_only_where_the_host_is_the_slower() {
    // CUDA launches are asynchronous: the host enqueues a kernel while the GPU runs earlier
    // ones, so a run of kernels takes the longer of the two timelines. gpt-oss-120b streams
    // ~3.5 GB per token on one Spark: the host's dispatch takes about as long as the GPU, and
    // eager decode loses at most a tenth to graphs (kubis: 57.5 tok/s eager). Qwen3 0.6B in FP8
    // streams under a GB a token through 28 layers of small kernels: the host's ~20 us per
    // kernel from Python is the slower timeline and eager loses.
    let big_graphs = vllm_decode("gpt-oss-120b", "mxfp4", 1, "");
    let big_eager = vllm_decode("gpt-oss-120b", "mxfp4", 1, "enforce_eager = true");
    assert!(big_eager <= big_graphs && big_eager > 0.9 * big_graphs, "eager {big_eager} vs graphs {big_graphs}");
    let small_graphs = vllm_decode("qwen3-0.6b", "fp8", 1, "");
    let small_eager = vllm_decode("qwen3-0.6b", "fp8", 1, "enforce_eager = true");
    assert!(small_eager < 0.9 * small_graphs, "eager {small_eager} vs graphs {small_graphs}");
    // Tensor parallel halves each GPU's work but not the host's launches: eager's share of a
    // step grows with the split (FACTS-2026: +22% decode from graphs on a 4-Spark TP4 lane).
    let loss =
        |count| 1.0 - vllm_decode("llama-3.3-70b", "fp8", count, "enforce_eager = true") / vllm_decode("llama-3.3-70b", "fp8", count, "");
    assert!(loss(2) >= loss(1), "TP2 loses {} to eager, one Spark {}", loss(2), loss(1));
    // NCCL's all-reduces are enqueued on the stream like any kernel, so a rank's host launches
    // on through them: an eager TP2 step takes the longer of its GPU timeline and its launches
    // over the whole step, and two Sparks decode a single gpt-oss-120b stream faster than one
    // (it used to join the launches per all-reduce segment, 72 a step, and fell below one Spark).
    let solo = vllm_decode("gpt-oss-120b", "mxfp4", 1, "enforce_eager = true");
    let tp2 = vllm_decode("gpt-oss-120b", "mxfp4", 2, "enforce_eager = true");
    assert!(tp2 > solo && tp2 < 2.0 * solo, "eager TP2 {tp2} vs one Spark {solo}");
    // Host-bound at the launch cost's prior, GPU-bound below it: the interval follows the
    // prior to its ends, so its top stays near the GPU's rate (a tangent put it at 5x).
    let text = "[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4\"\n[engine]\nname = \"vllm\"\nenforce_eager = true\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 32\n";
    let s = sc(text);
    let profile = Profile::default_profile();
    let est = estimate(&s, &profile).unwrap();
    let iv = supernode::calibrate::interval::intervals(&s, &profile, &est)["decode_tokens_per_s"];
    let graphs = vllm_decode("gpt-oss-120b", "mxfp4", 2, "");
    assert!(iv.p95 < 1.5 * graphs && iv.p5 < 0.5 * est.decode_tokens_per_s, "{iv:?}, graphs {graphs}");
}

#[test]
fn two_sparks_run_vllm_tensor_parallel_over_nccl() {
    let one = estimate(
        &sc("[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\n"),
        &quiet(),
    )
    .unwrap();
    let two = estimate(
        &sc("[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\n"),
        &quiet(),
    )
    .unwrap();
    assert!(two.decode_tokens_per_s > one.decode_tokens_per_s, "TP2 {} vs one {}", two.decode_tokens_per_s, one.decode_tokens_per_s);
    assert!(two.decode_tokens_per_s < 2.0 * one.decode_tokens_per_s);
}

#[test]
fn cuda_engines_refuse_macs_and_name_the_engines_that_run_there() {
    let e = parse(Source {
        path: "mac.toml".into(),
        dir: PathBuf::new(),
        text: "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"vllm\"\n".into(),
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs an NVIDIA GPU") && e.contains("mlx-lm") && e.contains("llama-cpp"), "{e}");
    let e = parse(Source {
        path: "x.toml".into(),
        dir: PathBuf::new(),
        text: spark("llama-cpp", "enforce_eager = true").replace("\"fp8\"", "\"q4_k_m\""),
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("CUDA engine"), "{e}");
    let e = parse(Source {
        path: "x.toml".into(),
        dir: PathBuf::new(),
        text: spark("vllm", "max_num_batched_tokens = 64\nmax_num_seqs = 128"),
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("below `max_num_seqs`"), "{e}");
}

#[test]
fn the_shipped_vllm_scenarios_run_generate_serve_sweep_and_plan() {
    for s in [
        "scenarios/spark-vllm-gptoss120b.toml",
        "scenarios/spark-2x-vllm-llama-3.3-70b-tp.toml",
        "scenarios/spark-2x-vllm-gpt-oss-120b-ep.toml",
        "scenarios/spark-2x-vllm-llama-3.3-70b-pp.toml",
        "scenarios/spark-4x-vllm-gpt-oss-120b-tp2-pp2.toml",
    ] {
        bin().args(["run", s]).assert().success();
        bin()
            .args(["run", s, "--set", "workload.kind=serve", "--set", "workload.concurrency=4", "--set", "workload.requests=8"])
            .assert()
            .success();
    }
    let dir = tempfile::tempdir().unwrap();
    let sweep = crate::write_text(
        dir.path(),
        "sweep.toml",
        &format!(
            "{}[workload]\nprompt_tokens = 512\ngenerate_tokens = 16\n[sweep]\n\"engine.name\" = [\"vllm\", \"sglang\"]\n",
            spark("vllm", "")
        ),
    );
    bin().args(["sweep", sweep.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]).assert().success();
    let out = bin()
        .args(["plan", "--slo", "scenarios/plans/spark-vllm-slo.toml", "--out", dir.path().join("slo").to_str().unwrap()])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(text.contains("vLLM"), "{text}");
}

/// An FP8 checkpoint's GEMMs run on the GB10's FP8 tensor cores (the node's `fp8_gemm_tflops`,
/// derived from its FP4 spec, not from a row): prefill of Llama 3.1 8B FP8 on SGLang lands near
/// the one published GB10 FP8 prefill (FACTS.md: LMSYS, 7,991 tok/s at batch 1; prompt length
/// unpublished, so 512 and 2,048 tokens bracket it), while bf16 weights keep the 16-bit peak
/// and decode is untouched (memory-bound: the same bytes at either peak).
#[test]
fn fp8_checkpoints_prefill_on_the_fp8_tensor_cores_of_a_gb10() {
    let run = |quant: &str, engine: &str, prompt: u64| {
        let text = format!(
            "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"llama-3.1-8b\"\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\n[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = 16\n"
        );
        estimate(&sc(&text), &quiet()).unwrap()
    };
    for prompt in [512, 2048] {
        let fp8 = run("fp8", "sglang", prompt);
        let err = fp8.prefill_tokens_per_s / 7991.0 - 1.0;
        assert!(
            err.abs() < 0.15,
            "SGLang FP8 prefill at {prompt} tokens: {:.0} tok/s, {:+.1}% off 7,991",
            fp8.prefill_tokens_per_s,
            err * 100.0
        );
        let bf16 = run("bf16", "sglang", prompt);
        // Twice the bytes, at the 16-bit peak: at least twice as slow in prefill.
        assert!(
            bf16.prefill_tokens_per_s * 2.0 < fp8.prefill_tokens_per_s,
            "{prompt}: bf16 {} vs fp8 {}",
            bf16.prefill_tokens_per_s,
            fp8.prefill_tokens_per_s
        );
        // vLLM runs the same FP8 kernels (CUTLASS scaled_mm) on the same tensor cores.
        let vllm = run("fp8", "vllm", prompt);
        assert!(
            (vllm.prefill_tokens_per_s / fp8.prefill_tokens_per_s - 1.0).abs() < 0.1,
            "{prompt}: vLLM {} vs SGLang {}",
            vllm.prefill_tokens_per_s,
            fp8.prefill_tokens_per_s
        );
    }
    // The FP8 path is the CUDA engines': llama.cpp's kernels on the same box read no FP8 peak.
    let spec = supernode::catalog::catalog().node("dgx-spark").unwrap();
    assert_eq!(spec.fp8_gemm_tflops, Some(250.0));
    assert!(supernode::catalog::catalog().node("m3-ultra-80c-512gb").unwrap().fp8_gemm_tflops.is_none());
}

/// TensorRT-LLM as NVIDIA's Spark playbook runs it: the CUDA engines' kernels (one user's
/// `generate` equals vLLM's on one node, where neither has Ray), in-flight batching that holds
/// at most 64 requests (`--max_batch_size 64`), tensor parallel over two Sparks, no pipeline,
/// never on a Mac, and every run labelled an extrapolation (no TensorRT-LLM row in the data).
#[test]
fn tensorrt_llm_runs_the_cuda_kernels_with_its_playbook_limits() {
    let generate = |engine: &str| {
        estimate(&sc(&format!("{}[workload]\nprompt_tokens = 512\ngenerate_tokens = 32\n", spark(engine, ""))), &quiet()).unwrap()
    };
    let (trt, vllm) = (generate("trtllm"), generate("vllm"));
    assert_eq!(trt.decode_tokens_per_s, vllm.decode_tokens_per_s);
    assert_eq!(trt.ttft_s, vllm.ttft_s);
    assert_eq!(trt.calibration.status, "extrapolation", "{:?}", trt.calibration);
    assert!(trt.calibration.reasons.iter().any(|r| r.contains("trtllm")), "{:?}", trt.calibration);
    // 80 users at once: at most 64 in flight, the rest wait (vLLM's 1024 takes them all).
    let text = format!(
        "{}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 80\nrequests = 80\nprompt_tokens = 64\ngenerate_tokens = 16\n",
        spark("tensorrt-llm", "")
    );
    let sv = estimate(&sc(&text), &quiet()).unwrap().serve.unwrap();
    assert!(sv.scheduler.contains("max_num_seqs: 64") && sv.mean_batch <= 64.0 && sv.requests_completed == 80, "{sv:?}");
    let vllm_text = text.replace("tensorrt-llm", "vllm");
    let v = estimate(&sc(&vllm_text), &quiet()).unwrap().serve.unwrap();
    assert!(v.mean_batch > sv.mean_batch, "vLLM holds all 80 at once: {} vs {}", v.mean_batch, sv.mean_batch);
    // Two Sparks: tensor parallel by default; pipeline refused, naming the engine.
    let two = |parallelism: &str| {
        format!(
            "[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"cx7-roce\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"trtllm\"\nparallelism = \"{parallelism}\"\n"
        )
    };
    assert!(estimate(&sc(&two("tensor")), &quiet()).unwrap().decode_tokens_per_s > 0.0);
    let err = parse(Source { path: "t.toml".into(), dir: PathBuf::new(), text: two("pipeline") }).unwrap_err().to_string();
    assert!(err.contains("trtllm"), "{err}");
    let mac = "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\nquant = \"fp8\"\n[engine]\nname = \"trtllm\"\n";
    assert!(parse(Source { path: "m.toml".into(), dir: PathBuf::new(), text: mac.into() }).is_err());
}

/// SGLang rows of an LMSYS review, and any row naming the tool, read as SGLang's
/// `bench_one_batch_server` defines its rates (sglang 0.5.3 `run_one_case`): the batch sent at
/// once and prefilled, then decoded together; decode = B x output_len / (latency - TTFT of the
/// last request), so output_len tokens over output_len - 1 decode steps, prefill excluded;
/// prefill = B x input_len / that TTFT. Lengths the row does not publish are the tool's
/// defaults (1024 in, 16 out), said in the assumptions.
#[test]
fn lmsys_sglang_rows_are_read_as_bench_one_batch_server_reports_them() {
    use supernode::calibrate::Dataset;
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let lmsys = "lm-sys/lm-sys.github.io blog (LMSYS review)";
    let text = format!(
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
         b1,dgx-spark,1,128gb,llama-3.1-8b,fp8,sglang,none,none,,1,decode_tokens_per_s,20,tok/s,{lmsys},batch 1\n\
         b32,dgx-spark,1,128gb,llama-3.1-8b,fp8,sglang,none,none,,32,aggregate_decode_tokens_per_s,300,tok/s,{lmsys},batch 32\n\
         p32,dgx-spark,1,128gb,llama-3.1-8b,fp8,sglang,none,none,,32,prefill_tokens_per_s,7000,tok/s,{lmsys},batch 32\n\
         own,dgx-spark,1,128gb,llama-3.1-8b,fp8,sglang,none,none,2048,8,aggregate_decode_tokens_per_s,100,tok/s,a lab,bench_one_batch_server; 64 generated tokens\n\
         serve,dgx-spark,1,128gb,llama-3.1-8b,fp8,sglang,none,none,2048,8,aggregate_decode_tokens_per_s,100,tok/s,a lab,a serving run; 64 generated tokens\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "lmsys.csv", &text);
    let rows = read_csv(&path).unwrap();
    for (id, batch, defaults) in [("b1", 1, true), ("b32", 32, true), ("p32", 32, true), ("own", 8, false)] {
        let row = rows.iter().find(|r| r.id == id).unwrap();
        let (_, assumptions) = row_scenario(row, &rows).unwrap();
        let reading = format!("SGLang's bench_one_batch_server at batch {batch} ");
        assert!(assumptions.iter().any(|a| a.starts_with(&reading)), "{id}: {assumptions:?}");
        assert_eq!(assumptions.iter().any(|a| a.contains("default 1024")), defaults, "{id}: {assumptions:?}");
        assert_eq!(assumptions.iter().any(|a| a.contains("default 16")), defaults, "{id}: {assumptions:?}");
    }
    let serve = rows.iter().find(|r| r.id == "serve").unwrap();
    assert!(!row_scenario(serve, &rows).unwrap().1.iter().any(|a| a.contains("bench_one_batch")), "a serving row stays one");
    let mut data = Dataset::default();
    data.add_csv(&path, &quiet()).unwrap();
    let predicted = data.predict(&quiet()).unwrap();
    let bench = |batch: u64, prompt: u64, steps: u64| {
        let base = "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"llama-3.1-8b\"\nquant = \"fp8\"\n[engine]\nname = \"sglang\"\n";
        let w = format!(
            "[workload]\nkind = \"batched-bench\"\nsame_tokens = false\nbatch = {batch}\nprompt_tokens = {prompt}\ngenerate_tokens = {steps}\n"
        );
        estimate(&sc(&format!("{base}{w}")), &quiet()).unwrap()
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b.abs().max(1.0);
    let (one, many, own) = (bench(1, 1024, 15), bench(32, 1024, 15), bench(8, 2048, 63));
    assert!(close(predicted[0], one.decode_tokens_per_s * 16.0 / 15.0), "{} vs {}", predicted[0], one.decode_tokens_per_s);
    assert!(close(predicted[1], many.decode_tokens_per_s * 16.0 / 15.0), "{} vs {}", predicted[1], many.decode_tokens_per_s);
    assert!(close(predicted[2], many.prefill_tokens_per_s), "{} vs {}", predicted[2], many.prefill_tokens_per_s);
    assert!(close(predicted[3], own.decode_tokens_per_s * 64.0 / 63.0), "{} vs {}", predicted[3], own.decode_tokens_per_s);
}

#[test]
fn a_full_layer_with_fewer_kv_heads_is_replicated_sooner_under_tensor_parallel() {
    // Gemma 4 26B A4B under vLLM TP4 on four Sparks: the 25 sliding layers split their 8 KV
    // heads four ways (2 per rank); the 5 full layers have 2 KV heads, so each rank keeps one
    // whole head, half their cache (vLLM: max(1, kv_heads / tp) per rank). At 10,000 tokens
    // (bf16): sliding 25 x 1024 x 8 KiB / 4 plus full 5 x 10,000 x 4 KiB / 2.
    let s = sc(
        "[cluster]\nnode = \"dgx-spark\"\ncount = 4\nfabric = \"cx7-roce\"\ntopology = \"switch\"\n[model]\nname = \"gemma-4-26b-a4b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\n",
    );
    let plan = s.plan(10_000, &quiet()).unwrap();
    let want = 25.0 * 1024.0 * 8192.0 / 4.0 + 5.0 * 10_000.0 * 4096.0 / 2.0;
    assert_eq!(plan.kv_bytes(0, 10_000), want);
}

/// Two 100-token prompts under a 100-token vLLM budget, 6 tokens each: the request log and the
/// start of every forward (`model` on one Spark).
fn two_chunked_requests(model: &str, quant: &str) -> (Vec<supernode::estimate::serve::RequestRecord>, Vec<u64>, f64, f64) {
    let text = format!(
        "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"vllm\"\nmax_num_batched_tokens = 100\nmax_num_seqs = 4\n\
         [workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 2\nrequests = 2\nprompt_tokens = 100\ngenerate_tokens = 6\n"
    );
    let s = sc(&text);
    let plan = s.plan(106, &quiet()).unwrap();
    let mut starts = Vec::new();
    let run = ServeSim::new(&plan, s.workload.serve.as_ref().unwrap(), &s.slo, s.seed)
        .with_request_log()
        .with_observer(|f| starts.push(f.start))
        .run();
    let rate = run.stats.tokens_after_first_per_s();
    let prompt_rate = run.stats.prompt_tokens_to_last_first_text_per_s();
    let mut log = run.log.unwrap();
    log.sort_by_key(|r| r.id);
    (log, starts, rate, prompt_rate)
}

#[test]
fn a_chat_client_sees_gpt_oss_text_only_after_its_harmony_header() {
    // Forwards (each ends where the next starts): f0 prefills A; f1 decodes A and prefills 99
    // of B; f2 decodes A and B's last token (B's first token); f3 is A's third decode step,
    // the end of `<|channel|>analysis<|message|>`: A's first text. B's is its own third
    // decode step, f5.
    let (log, s, rate, prompt_rate) = two_chunked_requests("gpt-oss-120b", "mxfp4");
    let (a, b) = (log[0], log[1]);
    assert_eq!((a.first_token, b.first_token), (s[1], s[3]), "{s:?}");
    assert_eq!((a.first_text, b.first_text), (s[4], s[6]), "{s:?}");
    assert_eq!((a.text_tokens, b.text_tokens), (3, 3));
    // llama-benchy's rate: streamed text after each first, from the earliest first text.
    let last = a.done.max(b.done);
    assert_eq!(rate, 6.0 / ((last - s[4]) as f64 / 1e9));
    // Its concurrent prompt rate: both prompts over the time from the requests sent (at once)
    // to the last first text, B's.
    assert_eq!((a.arrival, b.arrival), (s[0], s[0]));
    assert_eq!(prompt_rate, 200.0 / ((s[6] - s[0]) as f64 / 1e9));
    // A model without a chat header streams text from its first token.
    let (log, s, rate, prompt_rate) = two_chunked_requests("llama-3.2-3b", "fp8");
    assert_eq!(prompt_rate, 200.0 / ((s[3] - s[0]) as f64 / 1e9));
    assert_eq!((log[0].first_text, log[1].first_text), (s[1], s[3]));
    assert_eq!((log[0].text_tokens, log[1].text_tokens), (6, 6));
    assert_eq!(rate, 12.0 / ((log[0].done.max(log[1].done) - s[1]) as f64 / 1e9));
}

#[test]
fn a_scenario_without_an_engine_runs_what_each_platforms_users_run() {
    // Macs: mlx-lm, exo on a cluster; GB10s: vLLM (tensor parallel on two); the AI Max+ and
    // a fleet mixing platforms: llama.cpp, its RPC pipeline on a cluster.
    for (nodes, engine, split) in [
        ("\"m3-ultra-80c-512gb\"", "mlx-lm", "none"),
        ("\"m3-ultra-80c-512gb\", \"m3-ultra-80c-512gb\"", "exo", "tensor"),
        ("\"dgx-spark\"", "vllm", "none"),
        ("\"dgx-spark\", \"dgx-spark\"", "vllm", "tensor"),
        ("\"framework-desktop-ai-max-395\"", "llama-cpp", "none"),
        ("\"framework-desktop-ai-max-395\", \"framework-desktop-ai-max-395\"", "llama-cpp-rpc", "pipeline"),
        ("\"m3-ultra-80c-512gb\", \"dgx-spark\"", "llama-cpp-rpc", "pipeline"),
    ] {
        let s = sc(&format!(
            "[cluster]\nnodes = [{nodes}]\nfabric = \"eth-10g\"\n[model]\nname = \"llama-3.1-8b\"\n[workload]\nprompt_tokens = 16\ngenerate_tokens = 4\n"
        ));
        assert_eq!((s.engine.kind.id(), s.engine.parallelism.id()), (engine, split), "{nodes}");
    }
}

/// `validate` reads llama-benchy's concurrent `pp t/s (total)` as the tool computes it: the
/// serving run of its N requests sent at once, all prompt tokens over the time to the last
/// first text, and its per-request decode rate at that concurrency as one user's among them; one
/// request's prompt rate stays the prefill rate of `generate`.
#[test]
fn llama_benchy_prompt_rates_of_a_batch_are_the_serving_runs_prompts_to_the_last_first_text() {
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let row = |id: &str, c: u64| {
        format!(
            "{id},dgx-spark,1,128gb,gpt-oss-120b,mxfp4,vllm,none,none,1024,{c},prefill_tokens_per_s,1,tok/s,a blog,llama-benchy 0.3.5 pp1024 tg128; prompt processing column\n"
        )
    };
    let text = format!(
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n{}{}{}",
        row("c1", 1),
        row("c8", 8),
        row("c8", 8).replace("c8,", "tg8,").replace("prefill_tokens_per_s", "decode_tokens_per_s")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "benchy.csv", &text);
    let rows = read_csv(&path).unwrap();
    let p = quiet();
    let (one, _) = row_scenario(&rows[0], &rows).unwrap();
    let (eight, assumptions) = row_scenario(&rows[1], &rows).unwrap();
    let (one, eight) = (one.build().unwrap(), eight.build().unwrap());
    assert!(one.workload.serve.is_none());
    assert_eq!((eight.workload.prompt_tokens, eight.workload.generate_tokens), (1024, 128));
    assert!(assumptions.iter().any(|a| a.contains("pp t/s (total)")), "{assumptions:?}");
    let mut data = supernode::calibrate::Dataset::default();
    data.add_csv(&path, &p).unwrap();
    let predicted = data.predict(&p).unwrap();
    let served = estimate(&eight, &p).unwrap().serve.unwrap();
    // A decode rate at concurrency 8 is one user's among the eight (llama-benchy's `t/s
    // (req)`), not one request alone.
    let (tg8, _) = row_scenario(&rows[2], &rows).unwrap();
    assert_eq!(tg8.build().unwrap().workload, eight.workload);
    assert_eq!(
        predicted,
        vec![estimate(&one, &p).unwrap().prefill_tokens_per_s, served.batch_prompt_tokens_per_s, served.per_request_decode_tokens_per_s]
    );
    assert!(served.per_request_decode_tokens_per_s < estimate(&one, &p).unwrap().decode_tokens_per_s);
    // Eight 1024-token prompts share the 8192-token budget of one forward: one read of the
    // experts for all of them, so the batch's prompt rate beats one request's.
    assert!(predicted[1] > predicted[0], "{predicted:?}");
}

/// llama-benchy's TTFT times the first streamed text: for gpt-oss the token after its harmony
/// header, three decode steps after the first token; a model without a header streams from its
/// first token, so one request's TTFT is its prefill, as `generate` reports it.
#[test]
fn llama_benchy_ttft_is_the_first_streamed_text() {
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let row = |id: &str, model: &str, quant: &str| {
        format!("{id},dgx-spark,1,128gb,{model},{quant},vllm,none,none,1024,1,ttft_s,0.3,s,a blog,llama-benchy 0.3.5 pp1024 tg128\n")
    };
    let text = format!(
        "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n{}{}",
        row("oss", "gpt-oss-120b", "mxfp4"),
        row("llama", "llama-3.1-8b", "fp8")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "ttft.csv", &text);
    let rows = read_csv(&path).unwrap();
    let p = quiet();
    let mut data = supernode::calibrate::Dataset::default();
    data.add_csv(&path, &p).unwrap();
    let predicted = data.predict(&p).unwrap();
    let generate = |model: &str, quant: &str| {
        let s = sc(&format!(
            "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"vllm\"\n[workload]\nprompt_tokens = 1024\ngenerate_tokens = 128\n"
        ));
        estimate(&s, &p).unwrap()
    };
    let (oss, llama) = (generate("gpt-oss-120b", "mxfp4"), generate("llama-3.1-8b", "fp8"));
    // Three decode steps of the header after the prefill's first token (each within a step's
    // percentiles of the one-request decode), and no header for Llama.
    let header = predicted[0] - oss.ttft_s;
    assert!(header > 3.0 * 0.9 * oss.tpot_ms.p50 / 1e3 && header < 3.0 * 1.1 * oss.tpot_ms.p99 / 1e3, "{header} vs {:?}", oss.tpot_ms);
    assert!((predicted[1] / llama.ttft_s - 1.0).abs() < 0.01, "{} vs {}", predicted[1], llama.ttft_s);
    let (_, assumptions) = row_scenario(&rows[0], &rows).unwrap();
    assert!(assumptions.iter().any(|a| a.contains("first streamed text")), "{assumptions:?}");
}
