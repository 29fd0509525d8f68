//! The serve workload: one user is `generate`, queues obey Little's law, MoE coverage follows the
//! formula, KV admission queues as specified, same seed same bytes, and the contract's errors.

use std::path::PathBuf;

use rayon::prelude::*;
use supernode::estimate::{ServeSim, estimate};
use supernode::llm::OpClass;
use supernode::profile::Profile;
use supernode::report::to_json;
use supernode::scenario::{Scenario, Source, parse};

use crate::{bin, scenario};

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn src(text: &str) -> Source {
    Source { path: "serve.toml".into(), dir: PathBuf::new(), text: text.into() }
}

fn sc(text: &str) -> Scenario {
    parse(src(text)).unwrap_or_else(|e| panic!("{e}"))
}

/// The 4x M3 Ultra (2x 512 + 2x 256 GB) Qwen3-235B exo tensor cluster over TB5 RDMA.
pub(crate) const QWEN_4X_EXO: &str = r#"
[cluster]
nodes = ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m3-ultra-80c-256gb", "m3-ultra-80c-256gb"]
fabric = "tb5-rdma"
topology = "full-mesh"
[model]
name = "qwen3-235b-a22b"
quant = "mlx-8bit"
[engine]
name = "exo"
parallelism = "tensor"
"#;

const QWEN_4X_RPC: &str = r#"
[cluster]
nodes = ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m3-ultra-80c-256gb", "m3-ultra-80c-256gb"]
fabric = "tb5-tcp"
topology = "full-mesh"
[model]
name = "qwen3-235b-a22b"
quant = "q8_0"
[engine]
name = "llama-cpp-rpc"
parallelism = "pipeline"
"#;

const SMALL_MLX: &str = r#"
[cluster]
node = "m3-ultra-80c-512gb"
[model]
name = "llama-3.2-3b"
[engine]
name = "mlx-lm"
"#;

#[test]
fn one_user_reproduces_generate_exactly() {
    for (base, profile) in [(QWEN_4X_EXO, quiet()), (QWEN_4X_RPC, quiet()), (SMALL_MLX, quiet()), (QWEN_4X_EXO, Profile::default_profile())]
    {
        for (prompt, generate) in [(128, 64), (3000, 20)] {
            let g =
                estimate(&sc(&format!("{base}[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n")), &profile).unwrap();
            let text = format!(
                "{base}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 1\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}\n"
            );
            let s = estimate(&sc(&text), &profile).unwrap();
            let sv = s.serve.as_ref().unwrap();
            assert_eq!(sv.per_request_decode_tokens_per_s, g.decode_tokens_per_s, "{base} {prompt}");
            assert_eq!(s.ttft_s, g.ttft_s, "{base} {prompt}");
            assert_eq!(s.prefill_tokens_per_s, g.prefill_tokens_per_s, "{base} {prompt}");
            assert_eq!(s.tpot_ms.mean, g.tpot_ms.mean, "{base} {prompt}");
            assert_eq!(sv.requests_completed, 1);
            assert_eq!(s.sim_events, g.sim_events, "same forwards on the event core");
        }
    }
}

#[test]
fn littles_law_holds_on_a_long_poisson_run() {
    let text = format!(
        "{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"poisson\"\nrate_per_s = 3.0\nprompt_tokens = {{ dist = \"uniform\", min = 32, max = 512 }}\ngenerate_tokens = {{ dist = \"lognormal\", mean = 150, sigma = 0.5 }}\nduration_s = 3000\n"
    );
    let s = sc(&text);
    let plan = s.plan(2048, &Profile::default_profile()).unwrap();
    let run = ServeSim::new(&plan, s.workload.serve.as_ref().unwrap(), &s.slo, s.seed).with_max_forwards(u64::MAX).run();
    let st = &run.stats;
    let t = run.window_ns as f64;
    // L: time-average of requests in the system (running + waiting).
    let l = (st.batch_ns + st.queue_ns) as f64 / st.covered_ns as f64;
    // lambda: completions per ns; W: mean time in system, ns.
    let lambda = st.completed as f64 / t;
    let w = (st.ttft_sum_ns + st.decode_sum_ns) as f64 / st.completed as f64;
    assert!(st.completed > 8000, "{}", st.completed);
    assert!(l > 1.0, "a loaded server: L = {l}");
    assert!((l / (lambda * w) - 1.0).abs() < 0.03, "L = {l}, lambda W = {}", lambda * w);
    // The arrival rate the stream was asked for, within sampling error (sd ~ 1/sqrt(9000) ~ 1%).
    let rate = st.completed as f64 / (t / 1e9);
    assert!((rate / 3.0 - 1.0).abs() < 0.04, "{rate}");
}

#[test]
fn moe_expert_coverage_matches_the_formula() {
    let s = sc(&format!("{QWEN_4X_EXO}[workload]\nprompt_tokens = 128\ngenerate_tokens = 16\n"));
    let plan = s.plan(256, &quiet()).unwrap();
    let op = plan.model.layer_ops(0).into_iter().find(|o| o.class == OpClass::Expert).expect("an MoE layer");
    let (e, k) = op.experts.unwrap();
    let (e, k) = (e as f64, k as f64);
    for b in [1u64, 2, 4, 8, 16, 32, 64] {
        let formula = e * (1.0 - (1.0 - k / e).powf(b as f64));
        assert!((op.experts_touched(b) - formula).abs() < 1e-9, "B = {b}");
        // While memory-bound, the expert op's time past its launches scales with the experts
        // the batch touches under the profile's popularity skew (`[moe]`).
        let t = |b: u64| plan.cost(0).op_ns(&op, b, 0) - plan.cost(0).launch_ns(&op, b);
        if b <= 8 {
            let ratio = t(b) / t(1);
            let skew = plan.expert_skew;
            assert!((ratio - op.experts_touched_skewed(b, skew) / op.experts_touched_skewed(1, skew)).abs() < 1e-9, "B = {b}: {ratio}");
        }
    }
}

fn admission_case(kv_full: &str) -> Vec<supernode::estimate::serve::RequestRecord> {
    let text = format!(
        "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"llama-cpp\"\n\
         [workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 3\nrequests = 3\nprompt_tokens = 100\ngenerate_tokens = 10\nkv_full = \"{kv_full}\"\n"
    );
    let s = sc(&text);
    let plan = s.plan(110, &quiet()).unwrap();
    // Room for exactly two requests of 110 tokens.
    let cap = 2.0 * plan.kv_bytes(0, 110);
    let sim = ServeSim::new(&plan, s.workload.serve.as_ref().unwrap(), &s.slo, s.seed).with_kv_capacity(vec![cap]).with_request_log();
    sim.run().log.unwrap()
}

#[test]
fn kv_full_admission_queues_first_come_first_served() {
    let log = admission_case("queue");
    assert_eq!(log.len(), 3);
    let by_id = |i: u64| *log.iter().find(|r| r.id == i).unwrap();
    let (a, b, c) = (by_id(0), by_id(1), by_id(2));
    assert!(!a.rejected && !b.rejected && !c.rejected);
    assert_eq!((a.arrival, b.arrival, c.arrival), (0, 0, 0));
    // The first two fit and start at once, batched: they finish together.
    assert_eq!((a.admitted, b.admitted), (0, 0));
    assert_eq!(a.done, b.done);
    // The third waits for their KV and is admitted the instant it is freed.
    assert_eq!(c.admitted, a.done);
    assert!(c.first_token > c.admitted && c.done > c.first_token);
}

#[test]
fn kv_full_reject_turns_the_third_request_away() {
    let log = admission_case("reject");
    let c = *log.iter().find(|r| r.id == 2).unwrap();
    assert!(c.rejected);
    assert_eq!(c.done, 0, "rejected on arrival, at time 0");
    assert_eq!(log.iter().filter(|r| r.rejected).count(), 1);
}

#[test]
fn same_seed_same_bytes_at_any_thread_count() {
    let text = format!(
        "{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"poisson\"\nrate_per_s = 4.0\nprompt_tokens = {{ dist = \"lognormal\", mean = 300, sigma = 0.8 }}\ngenerate_tokens = 64\nduration_s = 120\n[slo]\ntpot_p99_ms = 30\n"
    );
    let run_all = |threads: usize| -> Vec<String> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            (1..=4u64)
                .into_par_iter()
                .map(|seed| {
                    let mut s = sc(&text);
                    s.seed = seed;
                    to_json(&estimate(&s, &Profile::default_profile()).unwrap())
                })
                .collect()
        })
    };
    let one = run_all(1);
    assert_eq!(one, run_all(3));
    assert_ne!(one[0], one[1], "a different seed draws different requests");
}

#[test]
fn serve_keys_are_validated_at_their_line() {
    let base = "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[workload]\nkind = \"serve\"\n";
    let cases = [
        ("arrival = \"closed\"\nrate_per_s = 2.0\nduration_s = 10\n", 8, "applies to arrival = \"poisson\" only"),
        ("arrival = \"poisson\"\nduration_s = 10\n", 7, "need `workload.rate_per_s`"),
        ("prompt_tokens = { dist = \"zipf\", mean = 3 }\nrequests = 4\n", 7, "unknown dist `zipf`"),
        ("prompt_tokens = { dist = \"uniform\", min = 9, max = 3 }\nrequests = 4\n", 7, "min <= max"),
        ("concurrency = 2\n", 5, "needs an end"),
        ("duration_s = 10\nrequests = 3\n", 8, "not both"),
        ("duration_s = 10\nwarmup_s = 10\n", 8, "leaves nothing"),
        ("requests = 3\nkv_full = \"drop\"\n", 8, "unknown kv_full policy `drop`"),
        ("arrival = \"closed\"\nthink_s = 2\nthink = \"gaussian\"\nrequests = 4\n", 9, "gaussian"),
        ("arrival = \"poisson\"\nrate_per_s = 1.0\nthink = \"fixed\"\nrequests = 4\n", 9, "applies to arrival = \"closed\" only"),
    ];
    for (body, line, msg) in cases {
        let e = parse(src(&format!("{base}{body}"))).unwrap_err();
        assert_eq!(e.line, line, "{body}: {e}");
        assert!(e.message.contains(msg), "{body}: {e}");
    }
    let e = parse(src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[workload]\nconcurrency = 4\n"))
        .unwrap_err();
    assert!(e.message.contains("applies to kind = \"serve\" only"), "{e}");
    let e = parse(src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[slo]\ntpot_p99_ms = 50\nttft = 1\n"))
        .unwrap_err();
    assert!(e.message.contains("unknown field `ttft`"), "{e}");
}

#[test]
fn trace_arrivals_are_read_with_errors_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reqs.csv"), "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,200,5\n").unwrap();
    std::fs::write(dir.path().join("bad.csv"), "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,two,5\n").unwrap();
    let body = |f: &str| format!("{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"trace\"\ntrace = \"{f}\"\n");
    let at = |f: &str| Source { path: "t.toml".into(), dir: dir.path().to_path_buf(), text: body(f) };
    let s = parse(at("reqs.csv")).unwrap();
    let e = estimate(&s, &Profile::default_profile()).unwrap();
    assert_eq!(e.serve.unwrap().requests_completed, 2);
    let err = parse(at("bad.csv")).unwrap_err();
    assert!(err.message.contains("bad.csv:3"), "{err}");
}

#[test]
fn run_prints_serving_rates_and_percentiles() {
    let out = bin().args(["run", "--json"]).arg(scenario("serve-4x-m3-ultra-qwen3-235b-a22b-exo-8-users.toml")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in
        ["aggregate_decode_tokens_per_s", "per_request_decode_tokens_per_s", "slo_attainment", "requests_completed", "requests_rejected"]
    {
        assert!(v.get(k).is_some(), "{k} missing");
    }
    for k in ["ttft_percentiles_s", "tpot_ms", "e2e_s"] {
        for p in ["p50", "p90", "p99"] {
            assert!(v[k][p].as_f64().is_some(), "{k}.{p} missing");
        }
    }
    assert!(v["aggregate_decode_tokens_per_s"].as_f64().unwrap() > v["per_request_decode_tokens_per_s"].as_f64().unwrap());
}

#[test]
fn sweep_axis_workload_concurrency_raises_the_aggregate_rate() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sw.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"serve sweep\"\n{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 8\n[sweep]\n\"workload.concurrency\" = [1, 8]\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    bin().args(["-q", "sweep"]).arg(&file).arg("--out").arg(&out).assert().success();
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(out.join("results.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let rate = |i: usize| rows[i]["estimate"]["decode_tokens_per_s"].as_f64().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rate(1) > 3.0 * rate(0), "8 users {} vs 1 user {}", rate(1), rate(0));
}

/// `llama-server -np N` is `workload.max_batch = N` (4 slots by default, FACTS.md): a request
/// past the slots waits for one to free, whatever KV room is left.
#[test]
fn llama_server_slots_come_from_max_batch_and_a_fifth_request_waits_for_a_slot() {
    let case = |max_batch: &str| {
        let text = format!(
            "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"llama-cpp\"\n\
             [workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 5\nrequests = 5\nprompt_tokens = 100\ngenerate_tokens = 10\n{max_batch}"
        );
        let s = sc(&text);
        let plan = s.plan(110, &quiet()).unwrap();
        let sim = ServeSim::new(&plan, s.workload.serve.as_ref().unwrap(), &s.slo, s.seed).with_request_log();
        let policy = sim.policy();
        (policy, sim.run().log.unwrap())
    };
    let (policy, log) = case("");
    assert_eq!(policy, supernode::estimate::serve::Policy::LlamaServer { slots: 4, n_batch: 2048 });
    let waited: Vec<u64> = log.iter().filter(|r| r.admitted > 0).map(|r| r.id).collect();
    assert_eq!(waited, vec![4], "the fifth request waits for a slot");
    let (policy, log) = case("max_batch = 5\n");
    assert_eq!(policy, supernode::estimate::serve::Policy::LlamaServer { slots: 5, n_batch: 2048 });
    assert!(log.iter().all(|r| r.admitted == 0), "five slots admit all five at once");
}

/// Closed-loop users with a fixed think time and identical requests, all starting at 0, return in
/// lock-step waves forever, so p99 TTFT jumps up and down with the number of users (the
/// equal-budget exo curve once read 7.8 s at 9 users and 3.3 s at 12). Think times are
/// exponential by default (the interactive-terminal model): p99 TTFT then rises with load; the
/// tolerance admits sampling noise of a 9-minute window, not a 2x dip.
#[test]
fn closed_loop_p99_ttft_rises_with_users_under_exponential_think() {
    let text = std::fs::read_to_string(scenario("plans/equal-budget-gpt-oss-120b-serve.toml")).unwrap();
    let ttft = |users: u64, think: &str| {
        let mut s = sc(&text.replace("concurrency = 8", &format!("concurrency = {users}\nthink = \"{think}\"")));
        s.seed = 1;
        let e = estimate(&s, &Profile::default_profile()).unwrap_or_else(|e| panic!("{e}"));
        e.serve.expect("a serving run").ttft_percentiles_s.p99
    };
    let curve: Vec<(u64, f64)> = (6..=14).step_by(2).map(|u| (u, ttft(u, "exponential"))).collect();
    let mut peak = 0.0_f64;
    for &(u, t) in &curve {
        assert!(t >= 0.75 * peak, "p99 TTFT {t:.2} s at {u} users fell below 75% of {peak:.2} s at fewer users: {curve:?}");
        peak = peak.max(t);
    }
    assert!(curve.last().unwrap().1 > curve[0].1, "{curve:?}");
    // The lock-step of a fixed think time is still there for whoever asks for it.
    let (nine, twelve) = (ttft(9, "fixed"), ttft(12, "fixed"));
    assert!(nine > twelve, "fixed think: 9 users {nine:.2} s, 12 users {twelve:.2} s");
}

/// A window too short for any request that arrives after the warm-up to finish: the table says
/// the per-request figures are not measured (not a rate of 0) and tells the user what to raise.
#[test]
fn a_window_in_which_no_request_completes_says_so_instead_of_printing_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("short.toml");
    // 3B on one M3 Ultra, 4 closed-loop users of 4,000 generated tokens each (tens of seconds
    // per request) measured over 3 s after a 1 s warm-up.
    let text = format!(
        "name = \"short window\"\n{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 4\nthink_s = 0.0\nprompt_tokens = 64\ngenerate_tokens = 4000\nduration_s = 4\nwarmup_s = 1\n"
    );
    std::fs::write(&file, text).unwrap();
    let out = bin().args(["run", "--no-write"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("0 completed"), "{table}");
    assert!(table.contains("per-request decode     n/a (no request completed in the window)"), "{table}");
    assert!(table.contains("TTFT p50 / p90 / p99   n/a"), "{table}");
    assert!(table.contains("warning: no request that arrived after the warm-up completed in the 3.0 s window"), "{table}");
    assert!(table.contains("raise workload.duration_s"), "{table}");
    // The JSON keeps its keys (0, as the contract has them) and the warning goes to stderr.
    let out = bin().args(["run", "--no-write", "--json"]).arg(&file).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests_completed"], 0);
    assert_eq!(v["per_request_decode_tokens_per_s"], 0.0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no request that arrived after the warm-up completed"));
}

/// Inter-token gaps and end-to-end times of a serving run, hand-checkable: one user's gaps are
/// its decode steps (the median at the mean time per token), its end-to-end time is its time to
/// first token plus its decode time, and its total token rate is its request rate times the
/// request's prompt and output tokens. Under vLLM with 32 prompts sent at once, a decode step
/// that an 8,192-token prefill chunk joins is one long gap: the p99 far above the median.
#[test]
fn inter_token_gaps_and_end_to_end_times_follow_the_steps() {
    let text = format!(
        "{SMALL_MLX}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 3\nprompt_tokens = 512\ngenerate_tokens = 64\n"
    );
    let s = estimate(&sc(&text), &quiet()).unwrap();
    let sv = s.serve.as_ref().unwrap();
    assert!((sv.itl_ms.p50 / s.tpot_ms.mean - 1.0).abs() < 0.01, "{:?} vs {}", sv.itl_ms, s.tpot_ms.mean);
    assert!(sv.itl_ms.p99 >= sv.itl_ms.p50);
    let e2e = s.ttft_s + s.tpot_ms.mean * 64.0 / 1e3;
    assert!((sv.mean_e2e_s / e2e - 1.0).abs() < 1e-4, "{} vs {e2e}", sv.mean_e2e_s);
    let requests_per_s = sv.requests_completed as f64 / sv.simulated_window_s;
    assert!((sv.total_tokens_per_s / (requests_per_s * (512.0 + 64.0)) - 1.0).abs() < 1e-3, "{}", sv.total_tokens_per_s);

    let spark = "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"gpt-oss-120b\"\n[engine]\nname = \"vllm\"\n\
                 [workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 32\nrequests = 32\nprompt_tokens = 1024\ngenerate_tokens = 128\n";
    let s = estimate(&sc(spark), &quiet()).unwrap();
    let itl = s.serve.as_ref().unwrap().itl_ms;
    assert!(itl.p99 > 5.0 * itl.p50, "{itl:?}");
}
