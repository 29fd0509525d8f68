//! Two physics errors in cluster splits (issue 20): llama.cpp RPC speaks TCP only, so on an
//! RDMA fabric it runs the TCP fabric of the same cables (the run says so, the planner does not
//! list it twice); and vLLM tensor parallel beyond a model's KV heads replicates them, so each
//! rank stores and reads `max(1, kv_heads / tp)` heads, not `1 / tp` of the cache.

use std::path::PathBuf;

use assert_cmd::Command;
use supernode::capacity::planner::{Goal, Objective, PlanRequest, candidates};
use supernode::estimate::estimate;
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn sc(text: &str) -> Result<Scenario, String> {
    parse(Source { path: "rpc-kv.toml".into(), dir: PathBuf::new(), text: text.into() }).map_err(|e| e.to_string())
}

/// The decode rate and the whole run table of the shipped RPC scenario on `node` over `fabric`.
fn rpc_run(node: &str, fabric: &str) -> (f64, String) {
    let out = Command::cargo_bin("supernode")
        .unwrap()
        .args(["-q", "run", "scenarios/gb10-pair-llama-3.3-70b-llama-rpc.toml", "--no-write", "--no-intervals"])
        .args(["--set", &format!("cluster.node={node}"), "--set", &format!("cluster.fabric={fabric}")])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let decode = text.lines().find_map(|l| l.trim().strip_prefix("decode")).and_then(|l| l.split_whitespace().next()).unwrap();
    (decode.parse().unwrap(), text)
}

#[test]
fn llama_cpp_rpc_on_rdma_cables_predicts_what_their_tcp_fabric_does_and_says_so() {
    for (node, rdma, tcp) in [("m3-ultra-80c-512gb", "tb5-rdma", "tb5-tcp"), ("dgx-spark", "cx7-roce", "cx7-tcp")] {
        let (on_rdma, rdma_table) = rpc_run(node, rdma);
        let (on_tcp, tcp_table) = rpc_run(node, tcp);
        // Before: 12.12 tok/s on tb5-rdma against 11.94 on tb5-tcp (M3 Ultra, Llama 3.3 70B).
        assert_eq!(on_rdma, on_tcp, "{node}: {rdma} vs {tcp}");
        let note = format!("llama-cpp-rpc speaks TCP only: on {rdma}'s cables it runs as {tcp}");
        assert!(rdma_table.contains(&note), "{rdma_table}");
        assert!(!tcp_table.contains("speaks TCP only"), "{tcp_table}");
        // Every other row of the table is the same.
        let rows = |t: &str| t.lines().filter(|l| !l.contains("speaks TCP only")).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(rows(&rdma_table), rows(&tcp_table));
    }
}

#[test]
fn exo_on_rdma_keeps_rdma_and_no_note() {
    let s = sc("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 2\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"exo\"\nparallelism = \"tensor\"\n").unwrap();
    assert_eq!((s.fabric.id.as_str(), s.cabled_fabric.as_deref()), ("tb5-rdma", None));
    assert!(estimate(&s, &quiet()).unwrap().calibration.notes.is_empty());
}

#[test]
fn the_planner_lists_rpc_once_per_cable_set_not_again_over_rdma() {
    let mut req = PlanRequest::new("llama-3.3-70b", Objective::new(None, Some(1e9), None, Goal::Speed).unwrap());
    req.nodes = vec!["m3-ultra-80c-512gb".into()];
    req.max_nodes = 2;
    req.engines = vec!["llama-cpp-rpc".into(), "exo".into()];
    let wired = |req: &PlanRequest, engine: &str| -> Vec<String> {
        candidates(req).unwrap().into_iter().filter(|c| c.engine == engine).filter_map(|c| c.fabric).collect()
    };
    req.fabrics = vec!["tb5-rdma".into(), "tb5-tcp".into()];
    let rpc = wired(&req, "llama-cpp-rpc");
    assert!(rpc.iter().any(|f| f == "tb5-tcp") && !rpc.iter().any(|f| f == "tb5-rdma"), "{rpc:?}");
    // exo does speak RDMA: both wirings stay.
    let exo = wired(&req, "exo");
    assert!(exo.iter().any(|f| f == "tb5-tcp") && exo.iter().any(|f| f == "tb5-rdma"), "{exo:?}");
    // Asked for the RDMA cables alone, RPC still runs on them (as TCP).
    req.fabrics = vec!["tb5-rdma".into()];
    assert!(wired(&req, "llama-cpp-rpc").iter().any(|f| f == "tb5-rdma"));
}

/// A user RDMA fabric without a TCP sibling cannot run llama.cpp RPC; a `tcp_fabric` must name
/// a TCP fabric and sit on an RDMA one. (Entries install for the process: one id per case.)
#[test]
fn tcp_fabric_is_checked_and_rpc_needs_one_on_rdma() {
    let run = |id: &str, entry: &str| {
        sc(&format!(
            "[[catalog.fabric]]\nid = \"{id}\"\nname = \"user RoCE\"\n{entry}\n[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"{id}\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"q4_k_m\"\n[engine]\nname = \"llama-cpp-rpc\"\n"
        ))
    };
    // Its sibling inherited from cx7-roce-x4: runs as cx7-tcp.
    let s = run("rpckv-roce-a", "like = \"cx7-roce-x4\"").unwrap();
    assert_eq!((s.fabric.id.as_str(), s.cabled_fabric.as_deref()), ("cx7-tcp", Some("rpckv-roce-a")));
    let e = run("rpckv-roce-b", "like = \"cx7-roce-x4\"\ntcp_fabric = \"cx7-roce\"").unwrap_err();
    assert!(e.contains("`tcp_fabric = \"cx7-roce\"`: that fabric is not TCP"), "{e}");
    let e = run("rpckv-roce-c", "like = \"cx7-roce-x4\"\ntcp_fabric = \"nope\"").unwrap_err();
    assert!(e.contains("`tcp_fabric = \"nope\"`: no fabric has that id"), "{e}");
    let e = run("rpckv-tcp-d", "like = \"cx7-tcp\"\ntcp_fabric = \"cx7-tcp\"").unwrap_err();
    assert!(e.contains("only an RDMA fabric has a TCP sibling"), "{e}");
    // An RDMA fabric of its own with no sibling: RPC is refused, naming the key.
    let own = "transport = \"rdma\"\nbackend = \"nccl\"\nport = \"qsfp\"\nlatency_us = 5\nbandwidth_gbs = 20\ntopologies = [\"full-mesh\"]\ncable_usd = 100";
    let e = run("rpckv-roce-e", own).unwrap_err();
    assert!(e.contains("engine `llama-cpp-rpc` speaks TCP only, and RDMA fabric `rpckv-roce-e` names no `tcp_fabric`"), "{e}");
}

/// Qwen3.5-122B-A10B (32 query heads, 2 KV heads of 256, full attention every 4th of 48
/// layers) in FP8 on `count` DGX Sparks under vLLM tensor parallel, `prompt` + 128 tokens.
fn qwen_tp(count: usize, prompt: u64, extra: &str) -> Result<Scenario, String> {
    sc(&format!(
        "[cluster]\nnode = \"dgx-spark\"\ncount = {count}\nfabric = \"cx7-roce\"\ntopology = \"switch\"\n{extra}[model]\nname = \"qwen3.5-122b-a10b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\nparallelism = \"tensor\"\n[workload]\nprompt_tokens = {prompt}\ngenerate_tokens = 128\n"
    ))
}

#[test]
fn tp_beyond_the_kv_heads_keeps_one_whole_kv_head_per_rank() {
    let p = quiet();
    let ctx = 65_536;
    // (cache bytes of `ctx` tokens, recurrent state bytes) on rank 0.
    let per_rank = |count: usize| {
        let s = qwen_tp(count, 1024, "").unwrap();
        assert!(!s.engine.cuda.kv_cache_fp8, "a bf16 cache, as hand-checked");
        let plan = s.plan(ctx, &p).unwrap();
        let state = plan.kv_bytes(0, 0);
        (plan.kv_bytes(0, ctx) - state, state)
    };
    let ((c2, s2), (c4, s4)) = (per_rank(2), per_rank(4));
    // One KV head of 256 x (K, V) x bf16 = 1024 B per token per full layer, 12 full layers:
    // 0.805 GB at 65,536 tokens on each rank of TP 2 (2 heads / 2) and of TP 4 (replicated).
    let one_head = 12.0 * 1024.0 * ctx as f64;
    assert_eq!((c2, c4), (one_head, one_head), "TP 4 holds one head per rank, not half of one");
    // The Gated DeltaNet state splits by its own 16 key / 64 value heads: 1/N.
    assert!((s2 / s4 - 2.0).abs() < 1e-12, "{s2} {s4}");
}

#[test]
fn tp4_decode_at_long_context_reads_a_whole_kv_head_per_rank() {
    let p = quiet();
    // Seconds per decoded token added by 130k more tokens of context.
    let slope = |count: usize| {
        let rate = |prompt: u64| estimate(&qwen_tp(count, prompt, "").unwrap(), &p).unwrap().decode_tokens_per_s;
        1.0 / rate(131_072) - 1.0 / rate(1024)
    };
    let (tp2, tp4) = (slope(2), slope(4));
    // Each rank reads one KV head either way: the context costs TP 4 as much as TP 2 (a split
    // cache would halve it), less only the query-head FLOPs it splits further.
    assert!(tp2 > 0.0 && tp4 > 0.9 * tp2, "context slope TP2 {tp2:.3e} s, TP4 {tp4:.3e} s");
}

#[test]
fn a_memory_error_names_the_replicated_kv_cache() {
    let p = quiet();
    let prompt = 262_144 - 128;
    let plan = qwen_tp(4, prompt, "").unwrap().plan(262_144, &p).unwrap();
    let m = &plan.memory[0];
    // A limit between the split-cache answer (half this KV) and the true need: it no longer fits.
    let limit = m.total_gb - m.kv_cache_gb / 4.0;
    let e = estimate(&qwen_tp(4, prompt, &format!("gpu_memory_limit_gb = {limit:.3}\n")).unwrap(), &p).unwrap_err().to_string();
    let kv = format!("KV cache {:.1}", m.kv_cache_gb);
    assert!(e.contains(&kv) && e.contains(&format!("needs {:.1} GB", m.total_gb)), "{kv}: {e}");
    assert!(m.kv_cache_gb > 3.2, "262,144 tokens x 12 KiB per rank = 3.22 GB of cache: {}", m.kv_cache_gb);
}

/// The K and V projections follow the KV heads too (vLLM `QKVParallelLinear` replicates them
/// past the KV-head count): at TP 4 of a 2-KV-head model a rank holds half of k_proj and
/// v_proj, a quarter of q_proj; a replicated weight whole.
#[test]
fn tp_beyond_the_kv_heads_replicates_the_kv_projections() {
    use supernode::llm::{Op, Placement, TensorRole};
    let (shard, kv_shard) = (0.25, 0.5);
    let k = Op::dense("k_proj", TensorRole::AttnK, 3072 * 512, Placement::Sharded);
    let v = Op::dense("v_proj", TensorRole::AttnV, 3072 * 512, Placement::Sharded);
    let q = Op::dense("q_proj", TensorRole::AttnQ, 3072 * 8192, Placement::Sharded);
    let norm = Op::dense("router", TensorRole::Router, 3072 * 256, Placement::Replicated);
    assert_eq!([k.weight_share(shard, kv_shard), v.weight_share(shard, kv_shard)], [0.5, 0.5]);
    assert_eq!(q.weight_share(shard, kv_shard), 0.25);
    assert_eq!(norm.weight_share(shard, kv_shard), 1.0);
}
