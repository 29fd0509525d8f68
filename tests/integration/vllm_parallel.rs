//! vLLM on more than one Spark beyond tensor parallel: expert parallel (attention split by
//! heads, experts whole on their ranks, the MoE output summed by the tensor-parallel
//! all-reduce), pipeline parallel (stages handing off over an NCCL send), Ray's per-step
//! dispatch, vLLM's head-count rule, and what the planner enumerates. Hand-checked numbers.

use std::path::PathBuf;

use supernode::capacity::planner::{Goal, Objective, PlanRequest, candidates};
use supernode::engine::{busiest_rank_experts, lower_step};
use supernode::llm::op_class::OpClass;
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};
use supernode::sim::{Jitter, execute};

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn sc(text: &str) -> Scenario {
    parse(Source { path: "vllm-parallel.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap_or_else(|e| panic!("{e}"))
}

/// `model` in `quant` on `count` DGX Sparks over `fabric` under vLLM with `parallelism`.
fn sparks(count: usize, model: &str, quant: &str, parallelism: &str) -> Scenario {
    let wiring = if count > 1 { "fabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n" } else { "" };
    sc(&format!(
        "[cluster]\nnode = \"dgx-spark\"\ncount = {count}\n{wiring}[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"vllm\"\nparallelism = \"{parallelism}\"\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 8\n"
    ))
}

/// GB of routed-expert weights the whole model holds.
fn experts_gb(plan: &supernode::engine::Plan) -> f64 {
    let bytes: f64 = (0..plan.model.layers)
        .flat_map(|l| plan.layer_ops(l))
        .filter(|o| o.class == OpClass::Expert)
        .map(|o| o.weight_bytes(o.total_params() as f64))
        .sum();
    bytes / 1e9
}

/// One decode step's makespan (ns) at 100 tokens of context.
fn decode_step_ns(s: &Scenario, p: &Profile) -> u64 {
    let plan = s.plan(200, p).unwrap_or_else(|e| panic!("{e}"));
    let mut low = lower_step(&plan, 1);
    low.retime(&plan, 100);
    execute(&low.graph, 0, &mut Jitter::new(1, 0.0)).makespan()
}

#[test]
fn the_busiest_rank_holds_more_than_its_share_of_a_tokens_experts() {
    // 4 experts, 2 per rank, 2 touched: each touched with q = 1/2, a rank's count is
    // Binomial(2, 1/2) = (1/4, 1/2, 1/4); E[max of two] = (1 - (1/4)^2) + (1 - (3/4)^2) = 22/16.
    assert!((busiest_rank_experts(4, 2.0, 2) - 1.375).abs() < 1e-12);
    assert_eq!(busiest_rank_experts(128, 4.0, 1), 4.0);
    // gpt-oss-120b (128 experts, top-4) on two ranks at batch 1: above the even 2, below 4.
    let one = busiest_rank_experts(128, 4.0, 2);
    assert!(one > 2.5 && one < 3.0, "{one}");
    // A large batch touches nearly every expert: the busiest rank holds nearly its 64.
    let many = busiest_rank_experts(128, 127.9, 2);
    assert!(many > 63.5 && many <= 64.0, "{many}");
}

#[test]
fn expert_parallel_runs_the_tensor_parallel_all_reduces_and_waits_for_the_busiest_rank() {
    let p = quiet();
    let ep = sparks(2, "gpt-oss-120b", "mxfp4-hf", "expert");
    let tp = sparks(2, "gpt-oss-120b", "mxfp4-hf", "tensor");
    // Communication: 2 all-reduces per layer (after attention, after the MoE), as tensor
    // parallel: raising every NCCL collective's base by 10 us adds 36 x 2 x 10 us.
    let mut slower = p.clone();
    slower.comm.nccl_base_us += 10.0;
    assert_eq!(decode_step_ns(&ep, &slower) - decode_step_ns(&ep, &p), 72 * 10_000);
    // Memory: the experts are spread, not duplicated: each Spark holds what tensor parallel's does.
    let (pe, pt) = (ep.plan(200, &p).unwrap(), tp.plan(200, &p).unwrap());
    assert!((pe.memory[0].weights_gb - pt.memory[0].weights_gb).abs() < 1e-9);
    // Compute: a decode token's 4 experts land 2-2 under tensor parallel (each rank reads half
    // of each), unevenly under expert parallel; the busiest rank reads its whole experts, ~2.78
    // of them, and sets the time. Energy is charged for the ranks' mean work: tensor parallel's.
    let expert = pe.layer_ops(0).into_iter().find(|o| o.class == OpClass::Expert).expect("a MoE layer");
    let (we, wt) = (pe.cost(0).op_work(&expert, 1, 0), pt.cost(0).op_work(&expert, 1, 0));
    assert!((we.bytes - wt.bytes).abs() < 1e-6 * wt.bytes, "{} vs {}", we.bytes, wt.bytes);
    // So expert parallel decodes a single stream a little slower than tensor parallel, and
    // the difference is the experts' alone: 36 layers x the expert op's extra time.
    let extra = 36.0 * (pe.cost(0).op_ns(&expert, 1, 0) - pt.cost(0).op_ns(&expert, 1, 0));
    let diff = decode_step_ns(&ep, &p) as f64 - decode_step_ns(&tp, &p) as f64;
    assert!(extra > 0.0 && (diff - extra).abs() < 100.0, "step {diff} ns vs experts {extra} ns");
}

#[test]
fn a_batch_one_pipeline_step_is_one_sparks_step_plus_one_nccl_send() {
    let p = quiet();
    let one = decode_step_ns(&sparks(1, "llama-3.3-70b", "fp8", "none"), &p);
    let two = decode_step_ns(&sparks(2, "llama-3.3-70b", "fp8", "pipeline"), &p);
    // Hidden states and residual of one token: 2 x 8,192 x 2 B = 32 KiB, on LL:
    // 11.0 + 6.73 + 32,768 B / 1.607 B/ns = 38.12 us (Simple: 11.0 + 38.0 + 6.73 + 1.38 = 57.1).
    // One node's step is 161 GPU tasks (one per all-sum interval), each rounded to the ns; the
    // pipeline's two stages round twice: up to ~80 ns apart besides the send.
    let send = two as f64 - one as f64;
    assert!((send - 38_121.0).abs() < 100.0, "{send} ns");
    // Ray's per-step dispatch sits once in every step, on node 0.
    let mut ray = p.clone();
    ray.comm.ray_step_us = 500.0;
    let pp = sparks(2, "llama-3.3-70b", "fp8", "pipeline");
    assert_eq!(decode_step_ns(&pp, &ray) - decode_step_ns(&pp, &p), 500_000);
    let tp = sparks(2, "llama-3.3-70b", "fp8", "tensor");
    assert_eq!(decode_step_ns(&tp, &ray) - decode_step_ns(&tp, &p), 500_000);
    assert_eq!(decode_step_ns(&sparks(1, "llama-3.3-70b", "fp8", "none"), &ray), one, "no Ray on one node");
}

#[test]
fn vllm_refuses_a_tensor_size_its_heads_cannot_take_and_names_the_legal_ones() {
    // Llama 3.3 70B: 64 heads, 8 KV heads: 3 ranks divide neither. Three Sparks in a ring.
    let text = "[cluster]\nnode = \"dgx-spark\"\ncount = 3\nfabric = \"cx7-roce\"\ntopology = \"ring\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\nparallelism = \"tensor\"\n";
    let e = parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: text.into() }).unwrap_err();
    assert!(e.message.contains("divide the 64 attention heads"), "{}", e.message);
    let help = e.help.unwrap_or_default();
    assert!(help.contains("{1, 2, 4, 8, 16}") && help.contains("pipeline"), "{help}");
    // The same three Sparks run it as a pipeline.
    let ok = text.replace("\"tensor\"", "\"pipeline\"");
    assert!(parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: ok }).is_ok());
    // SGLang and exo have no expert parallelism in the model.
    for (engine, node) in [("sglang", "dgx-spark"), ("exo", "m3-ultra-80c-512gb")] {
        let fabric = if engine == "exo" { "tb5-rdma" } else { "cx7-roce" };
        let t = format!(
            "[cluster]\nnode = \"{node}\"\ncount = 2\nfabric = \"{fabric}\"\ntopology = \"full-mesh\"\n[model]\nname = \"gpt-oss-120b\"\n[engine]\nname = \"{engine}\"\nparallelism = \"expert\"\n"
        );
        let e = parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: t }).unwrap_err().to_string();
        assert!(e.contains("no expert parallelism"), "{engine}: {e}");
    }
}

/// The (nodes, engine, split) the planner lists for `model` on up to `max_nodes` DGX Sparks.
fn planned(model: &str, max_nodes: usize) -> Vec<(usize, String, String)> {
    let mut req = PlanRequest::new(model, Objective::new(None, Some(1e9), None, Goal::Speed).unwrap());
    req.nodes = vec!["dgx-spark".into()];
    req.max_nodes = max_nodes;
    req.fabrics = vec!["cx7-roce".into()];
    req.engines = vec!["vllm".into()];
    let mut v: Vec<_> = candidates(&req).unwrap().into_iter().map(|c| (c.nodes.len(), c.engine, c.parallelism)).collect();
    v.dedup();
    v
}

#[test]
fn the_planner_lists_only_the_splits_a_model_can_take() {
    let has = |v: &[(usize, String, String)], n: usize, p: &str| v.iter().any(|c| c.0 == n && c.2 == p);
    let moe = planned("gpt-oss-120b", 3);
    for p in ["tensor", "expert", "data", "pipeline"] {
        assert!(has(&moe, 2, p), "2 Sparks {p}: {moe:?}");
    }
    // Data-parallel attention asks nothing of the heads: 3 Sparks take it.
    assert!(has(&moe, 3, "data"), "{moe:?}");
    // gpt-oss-120b has 64 heads and 8 KV heads: 3 ranks cannot split them; a pipeline can.
    assert!(!has(&moe, 3, "tensor") && !has(&moe, 3, "expert") && has(&moe, 3, "pipeline"), "{moe:?}");
    // A dense model has no expert split.
    let dense = planned("llama-3.3-70b", 2);
    assert!(has(&dense, 2, "tensor") && has(&dense, 2, "pipeline") && !has(&dense, 2, "expert"), "{dense:?}");
    assert!(!has(&dense, 2, "data"), "{dense:?}");
}

/// `model` in `quant` on four DGX Sparks through a switch, vLLM tensor parallel within two
/// pipeline stages (`--tensor-parallel-size 2 --pipeline-parallel-size 2`).
fn four_sparks_tp2_pp2(extra: &str) -> String {
    format!(
        "[cluster]\nnode = \"dgx-spark\"\ncount = 4\nfabric = \"cx7-roce\"\ntopology = \"switch\"\n[model]\nname = \"llama-3.3-70b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\nparallelism = \"tensor+pipeline\"\n{extra}[workload]\nprompt_tokens = 128\ngenerate_tokens = 8\n"
    )
}

/// A TP=2 x PP=2 step on four Sparks by hand: stage 0 (nodes 0, 1) runs layers 0-39 as two-way
/// tensor parallel, its all-reduces among those two ranks only; each rank then sends half of the
/// hidden states and residual (2 x 8,192 x 2 B / 2 = 16 KiB) to its peer in stage 1 (nodes 2,
/// 3), which all-gather the 32 KiB and run layers 40-79 and the head. So at batch 1 the step is
/// two-way tensor parallel's on two Sparks plus one send and one all-gather: never faster than
/// the tensor-parallel group holding the whole model (the batch-1 pipeline law).
#[test]
fn a_tensor_pipeline_step_is_two_way_tensor_parallel_plus_one_sliced_hand_off() {
    let p = quiet();
    let hybrid = sc(&four_sparks_tp2_pp2(""));
    let plan = hybrid.plan(200, &p).unwrap();
    let ranges: Vec<(u64, u64, f64)> = plan.shares.iter().map(|s| (s.first_layer, s.end_layer, s.shard)).collect();
    assert_eq!(ranges, [(0, 40, 0.5), (0, 40, 0.5), (40, 80, 0.5), (40, 80, 0.5)]);
    assert!(plan.shares[0].embedding && !plan.shares[2].embedding && plan.shares[3].head && !plan.shares[1].head);
    // Each Spark holds a quarter of the layers' weights: about what four-way tensor parallel holds.
    let tp4 = sc(&four_sparks_tp2_pp2("").replace("\"tensor+pipeline\"", "\"tensor\"")).plan(200, &p).unwrap();
    assert!((plan.memory[2].weights_gb - tp4.memory[2].weights_gb).abs() < 0.1 * tp4.memory[2].weights_gb);

    let mut low = lower_step(&plan, 1);
    low.retime(&plan, 100);
    let tl = execute(&low.graph, 0, &mut Jitter::new(1, 0.0));
    let g = &low.graph;
    let on = |label: &str, node: u32| {
        g.task_ids().filter(|&t| g.task(t).label() == label && g.resource_of(t).node() == node).collect::<Vec<_>>()
    };
    // Two all-reduces per layer, 40 layers per stage, on each rank of its stage.
    for node in 0..4 {
        assert_eq!(on("nccl all-reduce", node).len(), 80, "node {node}");
    }
    let net = plan.net_cost();
    let ar = net.nccl_all_reduce_ns(8192 * 2, 2);
    assert!(on("nccl all-reduce", 2).iter().all(|&t| g.task(t).duration() == ar));
    // The hand-off: a 16 KiB send into each of stage 1's ranks, then their all-gather of 32 KiB.
    let (send, gather) = (net.nccl_send_ns(16 * 1024), net.nccl_all_gather_ns(32 * 1024, 2));
    for node in [2, 3] {
        let s = on("nccl send", node);
        let a = on("nccl all-gather", node);
        assert_eq!((s.len(), a.len()), (1, 1), "node {node}");
        assert_eq!((g.task(s[0]).duration(), g.task(a[0]).duration()), (send, gather));
        // Stage 1 starts after stage 0 is done and the gather is in.
        let stage0_end = on("compute", 0).iter().chain(&on("compute", 1)).map(|&t| tl.timing(t).end).max().unwrap();
        assert!(tl.timing(a[0]).end >= stage0_end + send + gather);
        assert!(on("compute", node).iter().all(|&t| tl.timing(t).start >= tl.timing(a[0]).end));
    }
    assert!(on("nccl send", 0).is_empty() && on("nccl all-gather", 0).is_empty());
    // Against two-way tensor parallel on two Sparks: the same step plus the hand-off (each
    // GPU task is rounded to the ns; the hybrid splits one of them in two).
    let tp2 = decode_step_ns(&sparks(2, "llama-3.3-70b", "fp8", "tensor"), &p);
    let extra = tl.makespan() as i64 - tp2 as i64;
    assert!((extra - (send + gather) as i64).abs() <= 4, "hybrid {} vs tp2 {tp2} + {send} + {gather}", tl.makespan());
    // Run eagerly, each rank's launch stream is a host task of its own, the second stage's
    // starting after the first's; the Gantt names every task of the step.
    let eager = sc(&four_sparks_tp2_pp2("enforce_eager = true\n")).plan(200, &p).unwrap();
    let mut low = lower_step(&eager, 1);
    low.retime(&eager, 100);
    let tl = execute(&low.graph, 0, &mut Jitter::new(1, 0.0));
    let g = &low.graph;
    let launches: Vec<_> = g.task_ids().filter(|&t| g.task(t).label() == "dispatch").collect();
    assert_eq!(launches.len(), 4);
    let first_stage_launched = launches.iter().filter(|&&t| g.resource_of(t).node() < 2).map(|&t| tl.timing(t).end).max().unwrap();
    assert!(launches.iter().filter(|&&t| g.resource_of(t).node() >= 2).all(|&t| tl.timing(t).start >= first_stage_launched));
    let drawn = g.task_ids().filter(|&t| g.resource_of(t).kind() != supernode::sim::ResourceKind::Virtual);
    assert!(drawn.map(|t| g.task(t).label()).all(|l| supernode::estimate::TaskKind::of(l) != supernode::estimate::TaskKind::Other));
}

/// The split is read, checked and refused as the engines' rules say: stages that do not cut
/// the nodes into equal groups of at least two name the legal counts; `pipeline_stages` belongs
/// to tensor+pipeline; exo, llama.cpp RPC and SGLang have no such split in the model.
#[test]
fn tensor_pipeline_stages_are_checked_and_other_engines_refuse_the_split() {
    let err = |text: String| parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text }).unwrap_err();
    let e = err(four_sparks_tp2_pp2("pipeline_stages = 3\n"));
    assert!(e.message.contains("tensor+pipeline with 3 stages over 4 nodes"), "{}", e.message);
    assert!(e.help.unwrap_or_default().contains("one of {2}"));
    let e = err(four_sparks_tp2_pp2("").replace("count = 4", "count = 2"));
    assert!(e.message.contains("2 stages over 2 nodes"), "{}", e.message);
    let e = err(four_sparks_tp2_pp2("pipeline_stages = 2\n").replace("\"tensor+pipeline\"", "\"pipeline\""));
    assert!(e.message.contains("applies to parallelism = \"tensor+pipeline\" only"), "{}", e.message);
    // Eight Sparks: two stages of four or four stages of two.
    for (stages, ranks) in [(2, 4), (4, 2)] {
        let text = four_sparks_tp2_pp2(&format!("pipeline_stages = {stages}\n")).replace("count = 4", "count = 8");
        let plan = sc(&text).plan(200, &quiet()).unwrap();
        assert_eq!(plan.shares.iter().filter(|s| s.first_layer == 0).count(), ranks, "{stages} stages");
        assert!(plan.shares.iter().all(|s| (s.shard - 1.0 / ranks as f64).abs() < 1e-12));
    }
    for (engine, node, fabric, topology) in
        [("sglang", "dgx-spark", "cx7-roce", "switch"), ("exo", "m3-ultra-80c-512gb", "tb5-rdma", "full-mesh")]
    {
        let t = four_sparks_tp2_pp2("")
            .replace("\"vllm\"", &format!("\"{engine}\""))
            .replace("\"dgx-spark\"", &format!("\"{node}\""))
            .replace("\"cx7-roce\"", &format!("\"{fabric}\""))
            .replace("\"switch\"", &format!("\"{topology}\""));
        let e = err(t).to_string();
        assert!(e.contains("no tensor+pipeline parallelism"), "{engine}: {e}");
    }
    let rpc = four_sparks_tp2_pp2("").replace("\"vllm\"", "\"llama-cpp-rpc\"").replace("\"cx7-roce\"", "\"eth-10g\"");
    assert!(err(rpc).to_string().contains("splits layers"));
}

/// Under load the two stages work on different batches at once, as on a plain pipeline: eight
/// users on TP=2 x PP=2 decode two batches of four in flight together.
#[test]
fn a_tensor_pipeline_serves_one_batch_per_stage_in_flight() {
    let text = four_sparks_tp2_pp2("").replace(
        "[workload]\nprompt_tokens = 128\ngenerate_tokens = 8\n",
        "[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 8\nrequests = 8\nprompt_tokens = 64\ngenerate_tokens = 16\n",
    );
    let s = sc(&text);
    let plan = s.plan(128, &quiet()).unwrap();
    let sv = s.workload.serve.as_ref().unwrap();
    let mut forwards: Vec<(u64, usize, u64)> = Vec::new();
    supernode::estimate::ServeSim::new(&plan, sv, &s.slo, s.seed)
        .with_exact_steps()
        .with_observer(|f| forwards.push((f.start, f.sequences, f.timeline.makespan() - f.start)))
        .run();
    let overlapping = forwards.windows(2).filter(|w| w[1].0 < w[0].0 + w[0].2 && (w[0].1, w[1].1) == (4, 4)).count();
    assert!(overlapping >= 10, "{overlapping} overlapping pairs of four");
}

/// Data-parallel attention (`--data-parallel-size 2` of gpt-oss-120b on two Sparks) by hand:
/// the ranks agree on the step's token counts with one small all-reduce, then every MoE layer
/// all-gathers the tokens before its experts and reduce-scatters them after (36 layers: 72
/// gathers); nothing else crosses the link. Each rank holds the attention whole and half of
/// every expert; a sequence's KV cache lives whole on the rank that runs it.
#[test]
fn data_parallel_attention_gathers_before_each_moe_layer_and_scatters_after() {
    let p = quiet();
    let dp = sparks(2, "gpt-oss-120b", "mxfp4-hf", "data");
    let plan = dp.plan(200, &p).unwrap();
    let mut low = lower_step(&plan, 1);
    low.retime(&plan, 100);
    let g = &low.graph;
    let on = |label: &str, node: u32| g.task_ids().filter(|&t| g.task(t).label() == label && g.resource_of(t).node() == node).count();
    for node in 0..2 {
        assert_eq!((on("nccl all-gather", node), on("nccl all-reduce", node)), (72, 1), "node {node}");
    }
    // Raising every NCCL collective's base by 10 us adds 73 x 10 us.
    let mut slower = p.clone();
    slower.comm.nccl_base_us += 10.0;
    assert_eq!(decode_step_ns(&dp, &slower) - decode_step_ns(&dp, &p), 73 * 10_000);
    // Dispatch: a token's hidden states (2,880 x 2 B) and its top-4 weights and ids (4 x 8 B).
    let net = plan.net_cost();
    let durations: std::collections::BTreeSet<u64> =
        g.task_ids().filter(|&t| g.task(t).label() == "nccl all-gather").map(|t| g.task(t).duration()).collect();
    let want: std::collections::BTreeSet<u64> = [net.nccl_all_gather_ns(5_760 + 32, 2), net.nccl_all_gather_ns(5_760, 2)].into();
    assert_eq!(durations, want);

    // Memory: the attention (and embeddings, head, router) whole, half of every expert.
    let one = sparks(1, "gpt-oss-120b", "mxfp4-hf", "none").plan(200, &p).unwrap();
    let experts_gb = experts_gb(&plan);
    assert!((plan.memory[0].weights_gb - (one.memory[0].weights_gb - experts_gb / 2.0)).abs() < 1e-6);
    let tp = sparks(2, "gpt-oss-120b", "mxfp4-hf", "tensor").plan(200, &p).unwrap();
    assert!(plan.memory[0].weights_gb > tp.memory[0].weights_gb);
    // A sequence's cache is whole on its rank; a server of many spreads them: half per rank.
    assert_eq!(plan.memory[0].kv_cache_gb, one.memory[0].kv_cache_gb);
    assert!((plan.kv_bytes(0, 4096) - one.kv_bytes(0, 4096) / 2.0).abs() < 1e-6);
}

/// One request runs on one rank while the other runs a dummy forward in step; two requests run
/// one on each rank, so the second costs the experts of one more token and nothing else.
#[test]
fn data_parallel_ranks_run_their_own_sequences_in_lockstep() {
    let p = quiet();
    let plan = sparks(2, "gpt-oss-120b", "mxfp4-hf", "data").plan(200, &p).unwrap();
    let busy = |rows: &[(u64, u64)]| {
        let mut low = lower_step(&plan, rows.iter().map(|r| r.0).sum());
        low.retime_rows(&plan, rows, rows.len() as u64);
        let tl = execute(&low.graph, 0, &mut Jitter::new(1, 0.0));
        let g = &low.graph;
        let gpu = |node: u32| {
            g.task_ids()
                .filter(|&t| g.task(t).label() == "compute" && g.resource_of(t).node() == node)
                .map(|t| g.task(t).duration())
                .sum::<u64>()
        };
        (gpu(0), gpu(1), tl.makespan())
    };
    let (a0, a1, one) = busy(&[(1, 4000)]);
    // The dummy computes hidden states, no logits: at least the LM head's time less.
    let head = plan.head_ops().into_iter().find(|o| o.name == "lm_head").unwrap();
    assert!(a0 - a1 >= plan.cost(1).op_ns(&head, 1, 0) as u64, "the dummy rank {a1} vs the busy one {a0}");
    // Each rank one sequence at the same context: both as busy as the lone sequence's rank
    // but for the experts of a second token.
    let (b0, b1, two) = busy(&[(1, 4000), (1, 4000)]);
    assert_eq!(b0, b1);
    assert!(b0 > a0 && two > one, "{b0} vs {a0}");
    let expert = plan.layer_ops(0).into_iter().find(|o| o.class == OpClass::Expert).unwrap();
    let c = plan.cost(0);
    let launches = c.launch_ns(&expert, 2) - c.launch_ns(&expert, 1);
    let experts_extra = 36.0 * (c.op_ns(&expert, 2, 0) - c.op_ns(&expert, 1, 0) - launches);
    assert!(((b0 - a0) as f64 - experts_extra).abs() < 36.0 * 2.0, "{} vs {experts_extra}", b0 - a0);
}

#[test]
fn data_parallel_attention_needs_an_moe_model_and_an_engine_that_has_it() {
    let err = |text: String| parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text }).unwrap_err();
    let base = |model: &str, quant: &str, engine: &str, split: &str| {
        format!(
            "[cluster]\nnode = \"dgx-spark\"\ncount = 2\nfabric = \"cx7-roce\"\ntopology = \"full-mesh\"\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\nparallelism = \"{split}\"\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 8\n"
        )
    };
    let e = err(base("llama-3.3-70b", "fp8", "vllm", "data"));
    assert!(e.message.contains("has no MoE layers: data parallel of a dense model is separate servers"), "{}", e.message);
    assert!(e.help.unwrap_or_default().contains("replicas"));
    let e = err(base("gpt-oss-120b", "mxfp4", "sglang", "data+expert"));
    assert!(e.message.contains("no expert parallelism"), "{}", e.message);
    let e = err(base("gpt-oss-120b", "mxfp4", "llama-cpp-rpc", "data").replace("cx7-roce", "eth-10g").replace("full-mesh", "switch"));
    assert!(e.message.contains("splits layers"), "{}", e.message);
    let mac = base("gpt-oss-120b", "mxfp4", "exo", "data").replace("dgx-spark", "m3-ultra-80c-512gb").replace("cx7-roce", "tb5-rdma");
    assert!(err(mac).message.contains("no data-parallel attention"));
    // SGLang's DP attention slices the experts over the ranks: it runs.
    sc(&base("gpt-oss-120b", "mxfp4", "sglang", "data"));
}

/// One user on data-parallel attention is `generate` exactly (one rank runs it, the other
/// steps with it on a dummy).
#[test]
fn one_user_on_data_parallel_attention_reproduces_generate() {
    use supernode::estimate::estimate;
    let base = sparks(2, "gpt-oss-120b", "mxfp4-hf", "data").source.text.clone();
    let head = &base[..base.find("[workload]").unwrap()];
    let g = estimate(&sc(&format!("{head}[workload]\nprompt_tokens = 1000\ngenerate_tokens = 32\n")), &quiet()).unwrap();
    let serve = format!(
        "{head}[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 1\nrequests = 1\nprompt_tokens = 1000\ngenerate_tokens = 32\n"
    );
    let s = estimate(&sc(&serve), &quiet()).unwrap();
    assert_eq!(s.serve.as_ref().unwrap().per_request_decode_tokens_per_s, g.decode_tokens_per_s);
    assert_eq!((s.ttft_s, s.tpot_ms.mean), (g.ttft_s, g.tpot_ms.mean));
}

/// `--data-parallel-size 2 --tensor-parallel-size 2` of gpt-oss-120b on four Sparks through a
/// switch (`parallelism = "data"`, `tensor_ranks = 2`): each data-parallel rank is a pair of
/// consecutive Sparks running the attention two-way tensor parallel (an all-reduce within the
/// pair at each sum point), the experts are sliced over all four, dispatched and combined
/// among the Sparks of one tensor index (0 with 2, 1 with 3). Per node and step: the sync
/// all-reduce, 36 x 2 pair all-reduces and 36 x 2 gathers.
#[test]
fn data_parallel_ranks_of_tensor_parallel_pairs() {
    let p = quiet();
    let text = |extra: &str| {
        format!(
            "[cluster]\nnode = \"dgx-spark\"\ncount = 4\nfabric = \"cx7-roce\"\ntopology = \"switch\"\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4-hf\"\n[engine]\nname = \"vllm\"\n{extra}\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 8\n"
        )
    };
    let s = sc(&text("parallelism = \"data\"\ntensor_ranks = 2"));
    let plan = s.plan(200, &p).unwrap();
    assert_eq!(plan.options.parallelism.data_ranks(4), 2);
    let mut low = lower_step(&plan, 1);
    low.retime(&plan, 100);
    let g = &low.graph;
    let on = |label: &str, node: u32| g.task_ids().filter(|&t| g.task(t).label() == label && g.resource_of(t).node() == node).count();
    for node in 0..4 {
        assert_eq!((on("nccl all-reduce", node), on("nccl all-gather", node)), (73, 72), "node {node}");
    }
    let mut slower = p.clone();
    slower.comm.nccl_base_us += 10.0;
    assert_eq!(decode_step_ns(&s, &slower) - decode_step_ns(&s, &p), 145 * 10_000);
    // Weights: a pair's tensor-parallel share of everything but the experts, a quarter of those.
    let pair = sparks(2, "gpt-oss-120b", "mxfp4-hf", "tensor").plan(200, &p).unwrap();
    let experts_gb = experts_gb(&plan);
    assert!((plan.memory[0].weights_gb - (pair.memory[0].weights_gb - experts_gb / 4.0)).abs() < 1e-6);
    // One request: the first pair runs it, the second a dummy, both pairs in step.
    let busy = |node: u32| {
        g.task_ids()
            .filter(|&t| g.task(t).label() == "compute" && g.resource_of(t).node() == node)
            .map(|t| g.task(t).duration())
            .sum::<u64>()
    };
    assert_eq!(busy(0), busy(1));
    assert!(busy(2) < busy(0));

    let err = |extra: &str| parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text: text(extra) }).unwrap_err();
    assert!(err("parallelism = \"tensor\"\ntensor_ranks = 2").message.contains("applies to parallelism = \"data\""));
    assert!(err("parallelism = \"data\"\ntensor_ranks = 3").message.contains("does not divide the cluster's 4 nodes"));
    // gpt-oss-120b's 8 KV heads take a tensor size of 8 (vLLM), not 3: checked as tensor parallel is.
    let e = parse(Source {
        path: "x.toml".into(),
        dir: PathBuf::new(),
        text: text("parallelism = \"data\"\ntensor_ranks = 3").replace("count = 4", "count = 6"),
    })
    .unwrap_err();
    assert!(e.message.contains("tensor parallel over 3 nodes is illegal"), "{}", e.message);
}
