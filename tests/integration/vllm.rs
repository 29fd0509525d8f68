//! vllm-mlx and the per-sequence host cost: a serving step costs GPU + per-step host + B x
//! per-sequence host exactly; the engine parses, runs and borrows another chip's host costs
//! (CPU work) on chips without its own; `validate` maps the published rows to it; `calibrate`
//! recovers the per-sequence cost from synthetic concurrency rows.

use std::path::PathBuf;

use supernode::calibrate::validate::{parse_csv, read_csv, row_scenario};
use supernode::calibrate::{Dataset, calibrate};
use supernode::engine::{EngineKind, lower_step};
use supernode::estimate::{ServeSim, estimate};
use supernode::profile::{EngineHostParams, Profile};
use supernode::scenario::{Scenario, Source, parse};
use supernode::sim::{Jitter, ResourceKind, execute};

const VLLM_M4: &str = r#"
[cluster]
node = "m4-max-40c-128gb"
[model]
name = "llama-3.2-1b"
quant = "mlx-4bit"
[engine]
name = "vllm-mlx"
"#;

fn sc(text: &str) -> Scenario {
    parse(Source { path: "vllm.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap_or_else(|e| panic!("{e}"))
}

/// The default profile without jitter, with vllm-mlx host costs on the M4 Max.
fn with_host(step_us: f64, seq_us: f64) -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    let chip = p.chips.get_mut("m4-max").unwrap();
    chip.engines.insert("vllm-mlx".into(), EngineHostParams { host_per_step_us: step_us, host_per_seq_us: seq_us });
    p
}

fn serve(concurrency: u64, generate: u64) -> String {
    format!(
        "{VLLM_M4}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = {concurrency}\nrequests = {concurrency}\nprompt_tokens = 16\ngenerate_tokens = {generate}\n"
    )
}

#[test]
fn a_decode_step_of_b_sequences_pays_gpu_plus_step_plus_b_per_sequence_host_costs() {
    let s = sc(&serve(8, 4));
    for b in [1u64, 3, 8] {
        let rows: Vec<(u64, u64)> = (0..b).map(|i| (1, 100 + i)).collect();
        let span = |p: &Profile| {
            let plan = s.plan(200, p).unwrap();
            let mut low = lower_step(&plan, b);
            low.retime_rows(&plan, &rows, b);
            let tl = execute(&low.graph, 0, &mut Jitter::new(1, 0.0));
            let gpu: u64 =
                low.graph.resource_ids().filter(|&r| low.graph.resource(r).kind() == ResourceKind::Gpu).map(|r| tl.busy(r)).sum();
            (tl.makespan(), gpu)
        };
        let (bare, gpu0) = span(&with_host(0.0, 0.0));
        let (paid, gpu1) = span(&with_host(800.0, 900.0));
        assert_eq!(gpu0, gpu1, "host costs leave the GPU alone");
        assert_eq!(bare, gpu0, "one node: the step is its GPU work");
        assert_eq!(paid, gpu0 + 800_000 + b * 900_000, "batch {b}: GPU + 800 us + {b} x 900 us");
    }
}

#[test]
fn every_decode_forward_of_a_serving_run_pays_its_batch_of_host_costs() {
    let s = sc(&serve(4, 6));
    let p = with_host(500.0, 250.0);
    let plan = s.plan(64, &p).unwrap();
    let mut decodes = 0;
    let sv = s.workload.serve.as_ref().unwrap();
    ServeSim::new(&plan, sv, &s.slo, s.seed)
        .with_observer(|f| {
            let gpu: u64 = f
                .lowered
                .graph
                .resource_ids()
                .filter(|&r| f.lowered.graph.resource(r).kind() == ResourceKind::Gpu)
                .map(|r| f.timeline.busy(r))
                .sum();
            let host: u64 = f.lowered.host_tasks.iter().map(|(t, _)| f.lowered.graph.task(*t).duration()).sum();
            assert_eq!(f.timeline.makespan() - f.start, gpu + host);
            if f.tokens == f.sequences as u64 {
                assert_eq!(host, 500_000 + f.sequences as u64 * 250_000, "forward {}", f.index);
                decodes += 1;
            }
        })
        .run();
    assert!(decodes >= 5, "{decodes} decode forwards");
}

#[test]
fn one_user_of_vllm_mlx_reproduces_generate_with_its_host_costs() {
    let p = with_host(700.0, 300.0);
    let g = estimate(&sc(&format!("{VLLM_M4}[workload]\nprompt_tokens = 128\ngenerate_tokens = 32\n")), &p).unwrap();
    let s = estimate(&sc(&serve(1, 32).replace("prompt_tokens = 16", "prompt_tokens = 128")), &p).unwrap();
    assert_eq!(s.serve.as_ref().unwrap().per_request_decode_tokens_per_s, g.decode_tokens_per_s);
    assert_eq!(s.ttft_s, g.ttft_s);
    // A decode step is its GPU time plus 1 ms of host work: slower than without.
    let bare = estimate(&sc(&format!("{VLLM_M4}[workload]\nprompt_tokens = 128\ngenerate_tokens = 32\n")), &with_host(0.0, 0.0)).unwrap();
    let step = |e: &supernode::estimate::Estimate| 1e3 / e.decode_tokens_per_s;
    assert!((step(&g) - step(&bare) - 1.0).abs() < 0.01, "{} vs {}", step(&g), step(&bare));
}

#[test]
fn vllm_mlx_parses_runs_and_borrows_its_host_costs_on_other_chips() {
    let s = sc(&serve(2, 8));
    assert_eq!(s.engine.kind, EngineKind::VllmMlx);
    assert_eq!(s.engine.kind.runtime().id(), "mlx");
    let p = with_host(500.0, 250.0);
    let e = estimate(&s, &p).unwrap();
    assert!(e.serve.as_ref().unwrap().aggregate_decode_tokens_per_s > 0.0);
    assert!(e.serve.as_ref().unwrap().scheduler.starts_with("MlxLm"), "mlx-lm's BatchGenerator");
    assert!(!e.calibration.reasons.iter().any(|r| r.contains("vllm-mlx")), "{:?}", e.calibration.reasons);
    // An M3 Ultra has no vllm-mlx host costs of its own: its Python loop is CPU work, so it
    // borrows the M4 Max's (said in the envelope) and is slower than bare mlx-lm, whose host
    // costs are the mlx runtime's.
    let m3 = |engine: &str| {
        sc(&serve(2, 8).replace("m4-max-40c-128gb", "m3-ultra-80c-512gb").replace("name = \"vllm-mlx\"", &format!("name = \"{engine}\"")))
    };
    let v = estimate(&m3("vllm-mlx"), &p).unwrap();
    let m = estimate(&m3("mlx-lm"), &p).unwrap();
    assert!(v.serve.as_ref().unwrap().aggregate_decode_tokens_per_s < m.serve.as_ref().unwrap().aggregate_decode_tokens_per_s);
    assert!(
        v.calibration.reasons.iter().any(|r| r.contains("no vllm-mlx host costs for chip `m3-ultra`") && r.contains("`m4-max` assumed")),
        "{:?}",
        v.calibration.reasons
    );
    // With no chip's host costs in the profile, the mlx runtime's.
    let mut bare = p.clone();
    bare.chips.values_mut().for_each(|c| c.engines.clear());
    let v0 = estimate(&m3("vllm-mlx"), &bare).unwrap();
    let m0 = estimate(&m3("mlx-lm"), &bare).unwrap();
    assert_eq!(v0.serve.as_ref().unwrap().aggregate_decode_tokens_per_s, m0.serve.as_ref().unwrap().aggregate_decode_tokens_per_s);
    assert!(v0.calibration.reasons.iter().any(|r| r.contains("the mlx runtime's assumed")), "{:?}", v0.calibration.reasons);
    // One node only, like mlx-lm.
    let two = "[cluster]\nnodes = [\"m4-max-40c-128gb\", \"m4-max-40c-128gb\"]\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"llama-3.2-1b\"\n[engine]\nname = \"vllm-mlx\"\nparallelism = \"tensor\"\n";
    let err = parse(Source { path: "two.toml".into(), dir: PathBuf::new(), text: two.into() }).unwrap_err().to_string();
    assert!(err.contains("vllm-mlx"), "{err}");
}

#[test]
fn a_profile_names_only_engines_with_host_costs_of_their_own() {
    let good = include_str!("../../calibration/profiles/hand-set.toml");
    assert!(good.contains("[chips.m4-max.engines.vllm-mlx]"));
    let bad = good.replace("[chips.m4-max.engines.vllm-mlx]", "[chips.m4-max.engines.vllm]");
    let e = Profile::parse(&bad, "bad.toml").unwrap_err().to_string();
    let line = bad[..bad.find("[chips.m4-max.engines.vllm]").unwrap()].matches('\n').count() + 1;
    assert!(e.starts_with(&format!("bad.toml:{line}:")) && e.contains("`vllm`") && e.contains("vllm-mlx"), "{e}");
    let p = Profile::parse(good, "hand-set.toml").unwrap();
    assert_eq!(p.param("chips.m4-max.engines.vllm-mlx.host_per_seq_us").map(|x| x.0), Some(100.0));
    assert_eq!(p.param("chips.m3-ultra.runtimes.mlx.host_per_seq_us").map(|x| x.0), Some(0.0));
}

#[test]
fn validate_maps_the_published_concurrency_rows_to_vllm_mlx() {
    let rows = read_csv(&crate::measurements_csv()).unwrap();
    // The two rows of one benchmark (higgs PR 33: 200 generated tokens per request); the other
    // vllm-mlx rows come from other benchmarks with their own lengths.
    let vllm: Vec<_> = rows.iter().filter(|r| r.engine == "vllm-mlx" && r.source.contains("higgs PR 33")).collect();
    assert_eq!(vllm.len(), 2);
    for r in vllm {
        let (b, assumptions) = row_scenario(r, &rows).unwrap();
        let s = b.build().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.engine.kind, EngineKind::VllmMlx, "{}", r.id);
        assert_eq!(s.workload.generate_tokens, 200, "{}: the benchmark's 200 generated tokens", r.id);
        assert!(assumptions.iter().any(|a| a.contains("BatchGenerator")), "{assumptions:?}");
    }
}

#[test]
fn calibrate_recovers_host_per_seq_us_from_synthetic_concurrency_rows() {
    let truth = with_host(600.0, 850.0);
    let tmp = tempfile::tempdir().unwrap();
    let csv = |values: &[f64]| {
        let mut t = String::from(
            "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n",
        );
        for (c, v) in [1, 3, 8].iter().zip(values) {
            t += &format!(
                "syn-c{c},mac-studio-m4-max,1,128gb,llama-3.2-1b,mlx-4bit,vllm-mlx,none,none,16,{c},aggregate_decode_tokens_per_s,{v},tok/s,synthetic,24 generated tokens\n"
            );
        }
        crate::write_text(tmp.path(), "syn.csv", &t)
    };
    let mut probe = Dataset::default();
    probe.add_csv(&csv(&[1.0, 1.0, 1.0]), &truth).unwrap();
    let measured = probe.predict(&truth).unwrap();
    let mut data = Dataset::default();
    data.add_csv(&csv(&measured), &truth).unwrap();
    let params: Vec<String> =
        ["host_per_step_us", "host_per_seq_us"].iter().map(|n| format!("chips.m4-max.engines.vllm-mlx.{n}")).collect();
    let (fitted, report, _) = calibrate(&data, &with_host(0.0, 0.0), Some(params.clone()), 0.0).unwrap();
    let got = |k: usize| fitted.param(&params[k]).unwrap().0;
    assert!((got(0) - 600.0).abs() < 6.0 && (got(1) - 850.0).abs() < 8.5, "{} {} ({report:?})", got(0), got(1));
    assert!(report.rms_percent < 0.1, "{}", report.rms_percent);
}

/// oMLX (FACTS.md: jundot/omlx issue 1783) is MLX's kernels behind a server loop of its own:
/// one user's decode step is mlx-lm's plus the loop's per-step and per-sequence host costs
/// (`[chips.m4-max.engines.omlx]`, priors read from FACTS.md's one-user figure, not fitted), so
/// the FACTS anchor it was derived from comes back (Qwen3-Coder-Next 6-bit on an M4 Max,
/// 1,024-token prompts: 78.4 tok/s for one user); `validate` maps an `omlx` row to it.
/// The MLX servers are built for Apple Silicon: on a Linux box (an AI Max+, a GB10) a scenario
/// naming one is refused, with what they need and the engines that run there instead.
#[test]
fn the_mlx_servers_run_on_macs_only() {
    for (node, engine) in [("framework-desktop-ai-max-395", "omlx"), ("dgx-spark", "vllm-mlx")] {
        let text = format!("[cluster]\nnode = \"{node}\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"{engine}\"\n");
        let e = parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text }).unwrap_err().to_string();
        assert!(e.contains(&format!("engine `{engine}` needs a Mac (Apple Silicon, macOS)")), "{e}");
        assert!(e.contains("llama-cpp") && !e.contains("omlx,") && !e.contains("vllm-mlx,"), "{e}");
    }
    sc("[cluster]\nnode = \"m4-max-40c-128gb\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"omlx\"\n");
}

#[test]
fn omlx_is_mlx_kernels_behind_its_own_loop_with_host_costs_from_facts() {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    let host = p.chips["m4-max"].engines.get("omlx").cloned().expect("the shipped profile has oMLX's host costs on the M4 Max");
    assert_eq!((host.host_per_step_us, host.host_per_seq_us), (2870.0, 100.0), "FACTS-derived priors, not fitted");
    let one = |engine: &str| {
        let text = format!(
            "[cluster]\nnode = \"m4-max-40c-128gb\"\n[model]\nname = \"qwen3-coder-next\"\nquant = \"mlx-6bit\"\n[engine]\nname = \"{engine}\"\n[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 1\nprompt_tokens = 1024\ngenerate_tokens = 64\n"
        );
        let s = sc(&text);
        let e = estimate(&s, &p).unwrap();
        (s.engine.kind, e.tpot_ms.p50, e.serve.unwrap().per_request_decode_tokens_per_s)
    };
    let (kind, omlx_ms, omlx_rate) = one("omlx");
    assert_eq!(kind, EngineKind::Omlx);
    assert_eq!(kind.runtime().id(), "mlx");
    let (_, mlx_ms, _) = one("mlx-lm");
    assert!((omlx_ms - mlx_ms - 2.97).abs() < 0.01, "oMLX {omlx_ms} ms = mlx-lm {mlx_ms} ms + 2.87 + 0.1 ms");
    assert!((omlx_rate / 78.4 - 1.0).abs() < 0.02, "{omlx_rate} tok/s vs FACTS 78.4");
    // A published oMLX row is predicted on it, with the scheduler assumption said.
    let csv = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
               o8,mac-studio-m4-max,1,128gb,qwen3-coder-next,6bit,omlx,none,none,1024,8,aggregate_decode_tokens_per_s,180.2,tok/s,jundot/omlx issue 1783,256 generated tokens\n";
    let rows = parse_csv(csv, "omlx.csv").unwrap();
    let (b, assumed) = row_scenario(&rows[0], &rows).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.build().unwrap_or_else(|e| panic!("{e}")).engine.kind, EngineKind::Omlx);
    assert!(assumed.iter().any(|a| a.contains("oMLX scheduler taken as mlx-lm's BatchGenerator")), "{assumed:?}");
}

/// vllm-mlx's simple mode (`continuous_batching = false`; FACTS.md: "a simple one-request
/// mode"): mlx-lm's generate loop, so one request decodes exactly as mlx-lm does, without the
/// batching engine's own host costs, and concurrent requests are served one at a time (each
/// forward holds one sequence; the aggregate rate stays one stream's). The mode is vllm-mlx's
/// alone, and `validate` reads it from what a row states first.
#[test]
fn vllm_mlx_simple_mode_is_mlx_lms_generate_loop_one_request_at_a_time() {
    let p = with_host(2200.0, 100.0);
    let engine = |name: &str, extra: &str| VLLM_M4.replace("name = \"vllm-mlx\"", &format!("name = \"{name}\"\n{extra}"));
    let generate = |text: String| estimate(&sc(&format!("{text}[workload]\nprompt_tokens = 128\ngenerate_tokens = 64\n")), &p).unwrap();
    let simple = generate(engine("vllm-mlx", "continuous_batching = false"));
    let mlx = generate(engine("mlx-lm", ""));
    let batching = generate(engine("vllm-mlx", "continuous_batching = true"));
    assert_eq!(simple.decode_tokens_per_s, mlx.decode_tokens_per_s, "simple mode is mlx-lm's loop");
    assert_eq!(simple.ttft_s, mlx.ttft_s);
    let step = |e: &supernode::estimate::Estimate| 1e3 / e.decode_tokens_per_s;
    assert!((step(&batching) - step(&simple) - 2.3).abs() < 0.01, "the batching engine adds 2.2 + 0.1 ms a step");
    assert_eq!(generate(VLLM_M4.to_string()).decode_tokens_per_s, batching.decode_tokens_per_s, "a scenario batches by default");

    // Four users at once: continuous batching decodes them together; the simple mode one by one.
    let four = |extra: &str| {
        let text = serve(4, 32).replace("name = \"vllm-mlx\"", &format!("name = \"vllm-mlx\"\n{extra}"));
        estimate(&sc(&text), &p).unwrap().serve.unwrap()
    };
    let (one_by_one, together) = (four("continuous_batching = false"), four(""));
    assert!((one_by_one.mean_batch - 1.0).abs() < 1e-9, "{}", one_by_one.mean_batch);
    assert!(together.mean_batch > 2.0, "{}", together.mean_batch);
    assert!(one_by_one.aggregate_decode_tokens_per_s <= simple.decode_tokens_per_s * 1.001);
    assert!(together.aggregate_decode_tokens_per_s > 1.5 * one_by_one.aggregate_decode_tokens_per_s);

    let batch = serve(4, 8).replace("name = \"vllm-mlx\"", "name = \"vllm-mlx\"\ncontinuous_batching = false") + "max_batch = 4\n";
    let e = parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: batch }).unwrap_err().to_string();
    assert!(e.contains("`workload.max_batch` = 4 under vllm-mlx's simple mode"), "{e}");
    let other = "[cluster]\nnode = \"m4-max-40c-128gb\"\n[model]\nname = \"llama-3.2-1b\"\n[engine]\nname = \"omlx\"\ncontinuous_batching = false\n";
    let e = parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: other.into() }).unwrap_err().to_string();
    assert!(e.contains("`engine.continuous_batching` picks vllm-mlx's mode; engine `omlx` has no such option"), "{e}");

    // Rows: the mode a row states first is its own ("continuous-batching mode; the non-batching
    // table gives ..."); `vllm-mlx-bench` times the simple engine; a silent row batches.
    let csv = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
        cb,mac-studio-m4-max,1,128gb,llama-3.2-3b,mlx-4bit,vllm-mlx,none,none,,1,decode_tokens_per_s,137.6,tok/s,docs,\"continuous-batching mode; the non-batching vllm-mlx-bench table gives 200.1\"\n\
        simple,mac-studio-m4-max,1,128gb,llama-3.2-3b,mlx-4bit,vllm-mlx,none,none,,1,decode_tokens_per_s,200.1,tok/s,other docs,\"non-batching table; the --continuous-batching server gives 137.6\"\n\
        bench,mac-studio-m4-max,1,128gb,llama-3.2-3b,mlx-4bit,vllm-mlx-bench,none,none,,1,decode_tokens_per_s,200.1,tok/s,bench,\n\
        silent,mac-studio-m4-max,1,128gb,llama-3.2-3b,mlx-4bit,vllm-mlx,none,none,,1,decode_tokens_per_s,137.6,tok/s,blog,\n";
    let rows = parse_csv(csv, "modes.csv").unwrap();
    for (id, batches) in [("cb", true), ("simple", false), ("bench", false), ("silent", true)] {
        let row = rows.iter().find(|r| r.id == id).unwrap();
        let (b, notes) = row_scenario(row, &rows).unwrap();
        let s = b.build().unwrap();
        assert_eq!(s.engine.kind, EngineKind::VllmMlx, "{id}");
        assert_eq!(s.engine.continuous_batching, batches, "{id}: {notes:?}");
    }
}

/// vLLM V1's batch queue on a pipeline (`max_concurrent_batches` = the pipeline size): eight
/// users decoding on two Sparks run as two batches of four in flight together, one token each
/// per round, and a round lasts the longer of one batch's pass through both stages and the
/// busiest resource's (a stage's GPU, the host's) work for both batches. Prefill steps and a
/// lone user run one batch at a time, as before.
#[test]
fn a_vllm_pipeline_decodes_one_batch_per_stage_in_flight() {
    let text = "[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\nparallelism = \"pipeline\"\n[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 8\nrequests = 8\nprompt_tokens = 64\ngenerate_tokens = 24\n";
    let s = sc(text);
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    let plan = s.plan(128, &p).unwrap();
    let sv = s.workload.serve.as_ref().unwrap();
    // (start, sequences, span, busy per (node, GPU?)) of every forward.
    type Busy = std::collections::BTreeMap<(u32, bool), u64>;
    let mut forwards: Vec<(u64, usize, u64, Busy)> = Vec::new();
    ServeSim::new(&plan, sv, &s.slo, s.seed)
        .with_exact_steps()
        .with_observer(|f| {
            let mut busy = std::collections::BTreeMap::new();
            for r in f.lowered.graph.resource_ids() {
                let res = f.lowered.graph.resource(r);
                if matches!(res.kind(), ResourceKind::Gpu | ResourceKind::Cpu) {
                    *busy.entry((res.node(), res.kind() == ResourceKind::Gpu)).or_insert(0) += f.timeline.busy(r);
                }
            }
            forwards.push((f.start, f.sequences, f.timeline.makespan() - f.start, busy));
        })
        .run();
    let mut rounds = 0;
    let mut i = 0;
    while i + 1 < forwards.len() {
        let (a, b) = (&forwards[i], &forwards[i + 1]);
        if b.0 >= a.0 + a.2 {
            // One batch at a time: the next forward starts when this one ends.
            assert_eq!(b.0, a.0 + a.2, "forward {i} alone");
            i += 1;
            continue;
        }
        // Two decode batches of four in flight together, the second entering the first stage
        // (node 0's GPU) once the first has left it.
        assert_eq!((a.1, b.1), (4, 4), "forward {i}: two batches of four");
        assert_eq!(b.0, a.0 + a.3[&(0, true)], "forward {i}: the second batch follows the first through stage 0");
        let load = a.3.iter().map(|(k, t)| t + b.3[k]).max().unwrap();
        let round = a.2.max(b.2).max(load);
        assert!(round < a.2 + b.2, "the stages overlap: {round} vs {} one after the other", a.2 + b.2);
        if let Some(next) = forwards.get(i + 2) {
            assert_eq!(next.0, a.0 + round, "round at forward {i}");
        }
        rounds += 1;
        i += 2;
    }
    assert!(rounds >= 20, "{rounds} pipelined rounds of 24 tokens");
    // One user: every forward alone.
    let one = sc(&text.replace("concurrency = 8\nrequests = 8", "concurrency = 1\nrequests = 1"));
    let sv1 = one.workload.serve.as_ref().unwrap();
    let mut starts = Vec::new();
    ServeSim::new(&plan, sv1, &one.slo, one.seed).with_exact_steps().with_observer(|f| starts.push(f.start)).run();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "one user's forwards never overlap");
}
