//! Replicas (`engine.replicas`): copies of a cluster behind a load balancer are the one-replica
//! cluster's physics, added up. One request runs on one replica (the others idle); a serving
//! workload split evenly gives each replica's figures, its rates times the replicas; the file's
//! errors say what is wrong.

use std::path::PathBuf;

use supernode::estimate::{Estimate, estimate};
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};

use crate::bin;

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn sc(text: &str) -> Result<Scenario, String> {
    parse(Source { path: "replicas.toml".into(), dir: PathBuf::new(), text: text.into() }).map_err(|e| format!("{e:?}"))
}

/// gpt-oss-120b on `count` DGX Sparks as `replicas` vLLM servers, with `workload`.
fn spark(count: usize, replicas: usize, workload: &str) -> String {
    format!(
        r#"
[cluster]
node = "dgx-spark"
count = {count}
[model]
name = "gpt-oss-120b"
quant = "mxfp4"
[engine]
name = "vllm"
replicas = {replicas}
{workload}
"#
    )
}

const GENERATE: &str = "[workload]\nkind = \"generate\"\nprompt_tokens = 1024\ngenerate_tokens = 128";

fn closed(users: u64) -> String {
    format!(
        "[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = {users}\nthink_s = 2.0\nprompt_tokens = 512\ngenerate_tokens = 128\nduration_s = 120\nwarmup_s = 20"
    )
}

fn est(text: &str) -> Estimate {
    estimate(&sc(text).unwrap(), &quiet()).unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-9)
}

/// One request on two replicas runs exactly as on one node; the second node idles at its idle
/// power, which the cluster's power and energy per token carry; both hold the model and both
/// are paid for.
#[test]
fn one_request_runs_on_one_replica_while_the_other_idles() {
    let one = est(&spark(1, 1, GENERATE));
    let two = est(&spark(2, 2, GENERATE));
    assert_eq!(
        (two.decode_tokens_per_s, two.prefill_tokens_per_s, two.ttft_s),
        (one.decode_tokens_per_s, one.prefill_tokens_per_s, one.ttft_s)
    );
    assert_eq!(two.tpot_ms, one.tpot_ms);
    assert_eq!(two.nodes, vec!["dgx-spark", "dgx-spark"]);
    assert_eq!(two.replicas, 2);
    let idle = supernode::catalog::catalog().node("dgx-spark").unwrap().idle_w;
    assert_eq!(two.node_power_w, vec![one.node_power_w[0], idle]);
    assert!(close(two.cluster_power_w, one.cluster_power_w + idle, 1e-6), "{} vs {} + {idle}", two.cluster_power_w, one.cluster_power_w);
    assert!(close(two.energy_j_per_token, two.cluster_power_w / two.decode_tokens_per_s, 1e-5));
    assert_eq!(two.decode_gpu_busy_percent, vec![one.decode_gpu_busy_percent[0], 0.0]);
    assert_eq!(two.cost_usd, 2.0 * one.cost_usd);
    assert_eq!(two.memory.len(), 2);
    assert_eq!(two.memory[1].total_gb, one.memory[0].total_gb);
    // The load balancer is an assumption, and the run says so.
    assert!(two.calibration.notes.iter().any(|n| n.contains("2 replicas of 1 node(s)") && n.contains("assumed, not simulated")));
    assert!(one.calibration.notes.iter().all(|n| !n.contains("replicas")));
}

/// Eight closed-loop users on two replicas are four on each: every per-request figure is one
/// node's with four users, every rate twice it, power twice, energy per token the same.
#[test]
fn users_split_evenly_give_each_replica_its_share() {
    let one = est(&spark(1, 1, &closed(4)));
    let two = est(&spark(2, 2, &closed(8)));
    let (s1, s2) = (one.serve.as_ref().unwrap(), two.serve.as_ref().unwrap());
    for (a, b, what) in [
        (s2.aggregate_decode_tokens_per_s, 2.0 * s1.aggregate_decode_tokens_per_s, "aggregate"),
        (s2.total_tokens_per_s, 2.0 * s1.total_tokens_per_s, "total tokens"),
        (two.cluster_power_w, 2.0 * one.cluster_power_w, "power"),
    ] {
        assert!(close(a, b, 1e-4), "{what}: {a} vs {b}");
    }
    assert_eq!(s2.requests_completed, 2 * s1.requests_completed);
    assert_eq!(s2.per_request_decode_tokens_per_s, s1.per_request_decode_tokens_per_s);
    // The pooled latencies are each replica's counted twice: the same distribution, whose
    // nearest-rank tail percentiles may step to a neighbouring sample.
    for (a, b) in [(s2.ttft_percentiles_s, s1.ttft_percentiles_s), (s2.e2e_s, s1.e2e_s), (s2.itl_ms, s1.itl_ms)] {
        assert_eq!(a.p50, b.p50);
        assert!(close(a.p90, b.p90, 0.05) && close(a.p99, b.p99, 0.05), "{a:?} vs {b:?}");
    }
    assert_eq!(
        (two.ttft_s, two.tpot_ms.p50, two.tpot_ms.mean, s2.mean_batch),
        (one.ttft_s, one.tpot_ms.p50, one.tpot_ms.mean, s1.mean_batch)
    );
    assert!(close(two.energy_j_per_token, one.energy_j_per_token, 1e-4));
    // More than one node's worth of users: two replicas serve them at more than one node can.
    let crowded = est(&spark(1, 1, &closed(8)));
    assert!(s2.aggregate_decode_tokens_per_s > crowded.serve.as_ref().unwrap().aggregate_decode_tokens_per_s);
}

/// Three users on two replicas: two on the first, one on the second; the rates add, the
/// requests add, and the pooled latencies lie between the two shares'.
#[test]
fn an_uneven_split_adds_the_shares() {
    let (a, b) = (est(&spark(1, 1, &closed(2))), est(&spark(1, 1, &closed(1))));
    let two = est(&spark(2, 2, &closed(3)));
    let (sa, sb, s2) = (a.serve.unwrap(), b.serve.unwrap(), two.serve.unwrap());
    assert!(close(s2.aggregate_decode_tokens_per_s, sa.aggregate_decode_tokens_per_s + sb.aggregate_decode_tokens_per_s, 1e-4));
    assert_eq!(s2.requests_completed, sa.requests_completed + sb.requests_completed);
    let (lo, hi) = (sb.e2e_s.p50.min(sa.e2e_s.p50), sb.e2e_s.p50.max(sa.e2e_s.p50));
    assert!((lo..=hi).contains(&s2.e2e_s.p50), "{} not in {lo}..{hi}", s2.e2e_s.p50);
    assert!(close(two.cluster_power_w, a.cluster_power_w + b.cluster_power_w, 1e-4));
    // One user on two replicas: the second serves nothing and draws its idle power.
    let lone = est(&spark(2, 2, &closed(1)));
    let idle = supernode::catalog::catalog().node("dgx-spark").unwrap().idle_w;
    assert_eq!((lone.node_power_w[1], lone.decode_gpu_busy_percent[1]), (idle, 0.0));
    assert_eq!(lone.serve.unwrap().aggregate_decode_tokens_per_s, sb.aggregate_decode_tokens_per_s);
}

/// A Poisson stream thinned over two replicas: each sees half the rate.
#[test]
fn a_poisson_stream_is_thinned_over_the_replicas() {
    let poisson = |rate: f64| {
        format!(
            "[workload]\nkind = \"serve\"\narrival = \"poisson\"\nrate_per_s = {rate:?}\nprompt_tokens = 512\ngenerate_tokens = 128\nduration_s = 300\nwarmup_s = 30"
        )
    };
    let one = est(&spark(1, 1, &poisson(0.5))).serve.unwrap();
    let two = est(&spark(2, 2, &poisson(1.0))).serve.unwrap();
    assert!(close(two.aggregate_decode_tokens_per_s, 2.0 * one.aggregate_decode_tokens_per_s, 1e-4));
    assert_eq!(two.ttft_percentiles_s.p50, one.ttft_percentiles_s.p50);
}

/// Replicas of a split group: two copies of a tensor-parallel pair are the pair's physics.
#[test]
fn replicas_of_a_tensor_parallel_pair_are_the_pairs_physics() {
    let pair = |count: usize, replicas: usize| {
        format!(
            "[cluster]\nnode = \"dgx-spark\"\ncount = {count}\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\nparallelism = \"tensor\"\nreplicas = {replicas}\n{GENERATE}"
        )
    };
    let one = est(&pair(2, 1));
    let two = est(&pair(4, 2));
    assert_eq!(two.decode_tokens_per_s, one.decode_tokens_per_s);
    assert_eq!(two.nodes.len(), 4);
    assert_eq!((two.cables, two.cost_usd), (2 * one.cables, 2.0 * one.cost_usd));
}

/// What a file gets wrong about replicas, said where it is.
#[test]
fn replica_errors_say_what_to_change() {
    let err = |text: &str| sc(text).unwrap_err();
    assert!(err(&spark(3, 2, GENERATE)).contains("3 nodes do not split into 2 replicas"));
    let mixed = r#"
[cluster]
nodes = ["dgx-spark", "dell-pro-max-gb10"]
[model]
name = "gpt-oss-120b"
[engine]
name = "vllm"
replicas = 2
"#;
    assert!(err(mixed).contains("replica 2 differs from the first: node 1 is `dell-pro-max-gb10`"), "{}", err(mixed));
    let batched = "[workload]\nkind = \"batched-bench\"\nbatch = 4\nprompt_tokens = 128\ngenerate_tokens = 32";
    assert!(err(&spark(2, 2, batched)).contains("a batched benchmark (one server runs it) with engine.replicas > 1 is not modelled"));
    let faults = format!(
        "{}\n[faults]\nhorizon_days = 1\n[[faults.crash]]\nnode = 0\nat_minutes = 60\n[faults.node]\nreboot_minutes = 2\n",
        spark(2, 2, GENERATE)
    );
    assert!(err(&faults).contains("`[faults]` with engine.replicas > 1 is not modelled"), "{}", err(&faults));
    assert!(err(&spark(2, 0, GENERATE)).contains("engine.replicas"));
}

/// `validate` reads a data-parallel row as replicas (llama.cpp on one machine each, not RPC),
/// but vLLM's data parallel of an MoE model, whose instances share their experts, and any with
/// DP attention as data-parallel attention (`data`; with EP, `data+expert`).
#[test]
fn validate_reads_data_parallel_rows_as_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("dp.csv");
    let head = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";
    let rows = [
        "one,dgx-spark,1,,llama-3.1-8b,fp8,vllm,none,none,1024,4,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "dp,dgx-spark,2,,llama-3.1-8b,fp8,vllm,DP2,,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "lcpp,framework desktop,2,,gpt-oss-120b,mxfp4,llama.cpp,data parallel,,512,2,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "moe,dgx-spark,2,,gpt-oss-120b,mxfp4,vllm,DP2,,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "sgdp,dgx-spark,2,,gpt-oss-120b,mxfp4,sglang,DP2 (enable-dp-attention),,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "sg,dgx-spark,2,,gpt-oss-120b,mxfp4,sglang,DP2,,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "dpep,dgx-spark,2,,gpt-oss-120b,mxfp4,vllm,DP2 + EP,,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
        "dptp,dgx-spark,4,,gpt-oss-120b,mxfp4,vllm,DP2 TP2,,1024,8,aggregate_decode_tokens_per_s,100,tok/s,probe,",
    ];
    std::fs::write(&csv, format!("{head}{}\n", rows.join("\n"))).unwrap();
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).output().unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let predicted = |id: &str| v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).map(|r| r["predicted"].as_f64().unwrap());
    let (one, dp) = (predicted("one").unwrap(), predicted("dp").unwrap());
    assert!(close(dp, 2.0 * one, 2e-3), "DP2 at 8 users {dp} vs 2 x one node at 4 {one}");
    assert!(predicted("lcpp").is_some(), "{v}");
    let assumed = v["rows"].as_array().unwrap().iter().find(|r| r["id"] == "lcpp").unwrap()["assumptions"].to_string();
    assert!(assumed.contains("2 replicas of 1 node(s)") && !assumed.contains("RPC"), "{assumed}");
    let assumed = |id: &str| v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["assumptions"].to_string();
    assert!(predicted("moe").is_some() && assumed("moe").contains("data-parallel attention (`data`) over 2 ranks of 1 node(s)"), "{v}");
    // SGLang's `--dp` router runs separate servers; with DP attention it does not.
    assert!(predicted("sg").is_some() && assumed("sg").contains("2 replicas of 1 node(s)"), "{v}");
    assert!(predicted("sgdp").is_some() && assumed("sgdp").contains("(`data`)"), "{v}");
    assert!(predicted("dpep").is_some() && assumed("dpep").contains("(`data+expert`)"), "{v}");
    assert!(predicted("dptp").is_some() && assumed("dptp").contains("(`data`) over 2 ranks of 2 node(s)"), "{v}");
}
