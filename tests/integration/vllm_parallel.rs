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
    for p in ["tensor", "expert", "pipeline"] {
        assert!(has(&moe, 2, p), "2 Sparks {p}: {moe:?}");
    }
    // gpt-oss-120b has 64 heads and 8 KV heads: 3 ranks cannot split them; a pipeline can.
    assert!(!has(&moe, 3, "tensor") && !has(&moe, 3, "expert") && has(&moe, 3, "pipeline"), "{moe:?}");
    // A dense model has no expert split.
    let dense = planned("llama-3.3-70b", 2);
    assert!(has(&dense, 2, "tensor") && has(&dense, 2, "pipeline") && !has(&dense, 2, "expert"), "{dense:?}");
}
