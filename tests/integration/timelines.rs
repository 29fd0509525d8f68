//! Exact timelines on tiny clusters, computed by hand.

use supernode::catalog::catalog;
use supernode::engine::{EngineKind, EngineOptions, Parallelism, Plan, PlanInput, lower_all_sum, lower_segment_chain, lower_step};
use supernode::hw::Topology;
use supernode::llm::ModelSpec;
use supernode::profile::Profile;
use supernode::sim::{Jitter, execute};

fn quiet_profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p.misc.runtime_overhead_gb = 0.0;
    // Round numbers for hand computation, independent of the fitted default profile.
    p.comm.gpu_sync_default_us = 180.0;
    p.comm.gpu_sync_fast_us = 4.0;
    // No dequantisation in the GEMMs' hand-computed FLOPs (its own tests: engine::cost::kernel).
    for chip in p.chips.values_mut() {
        for rt in chip.runtimes.values_mut() {
            (rt.dequant_ops_kquant, rt.dequant_ops_legacy, rt.dequant_ops_mxfp4, rt.dequant_ops_affine) = (0.0, 0.0, 0.0, 0.0);
        }
    }
    p.comm.jaccl_round_us = 15.0;
    p.comm.jaccl_peer_us = 3.0;
    p.comm.cpu_reduce_gbs = 20.0;
    p.comm.tcp_message_us = 20.0;
    let chip = p.chips.get_mut("m3-ultra").unwrap();
    chip.bw_eff_dense = 0.5;
    chip.runtimes.get_mut("mlx").unwrap().kernel_launch_us = 10.0;
    chip.runtimes.get_mut("mlx").unwrap().bw_mult_half = 1.0;
    chip.runtimes.get_mut("mlx").unwrap().host_per_step_us = 0.0;
    p
}

fn tiny_model() -> ModelSpec {
    let cfg = serde_json::json!({"model_type":"llama","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,
        "num_key_value_heads":2,"intermediate_size":128,"vocab_size":256});
    ModelSpec::from_hf_config("tiny", "tiny", &cfg).unwrap()
}

fn plan(n: usize, fabric: &str, profile: &Profile) -> Plan {
    let c = catalog();
    let nodes = vec![c.node("m3-ultra-80c-512gb").unwrap().clone(); n];
    let (kind, par, topo) = if n == 1 {
        (EngineKind::MlxLm, Parallelism::None, Topology::None)
    } else {
        (EngineKind::Exo, Parallelism::Tensor, Topology::FullMesh)
    };
    Plan::new(PlanInput {
        nodes: &nodes,
        fabric: c.fabric(fabric).unwrap(),
        topology: topo,
        model: &tiny_model(),
        quant: c.quant("bf16").unwrap(),
        options: &EngineOptions::december_2025(kind, par),
        wired_limit_fraction: None,
        context: 16,
        profile,
    })
    .unwrap()
}

#[test]
fn dense_op_time_is_bytes_over_effective_bandwidth_plus_launch() {
    let p = quiet_profile();
    let plan = plan(1, "none", &p);
    let lm_head = plan.model.head_ops().into_iter().find(|o| o.name == "lm_head").unwrap();
    // 64 x 256 bf16 = 32,768 bytes at 0.5 x 819.2 GB/s = 80 ns, plus one 10 us launch.
    assert_eq!(plan.cost(0).op_ns(&lm_head, 1, 0), 80.0 + 10_000.0);
}

#[test]
fn one_node_step_is_the_chain_of_its_segments() {
    let p = quiet_profile();
    let plan = plan(1, "none", &p);
    let mut low = lower_step(&plan, 1);
    low.retime(&plan, 10);
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    let sum: u64 = low.gpu_tasks.iter().map(|(t, _)| low.graph.task(*t).duration()).sum();
    assert_eq!(tl.makespan(), sum);
    // 3 segments: up to the attention all_sum, up to the FFN all_sum, the head.
    assert_eq!(low.gpu_tasks.len(), 3);
    // Kernels: attention part 1+3+2+1+1 = 8, FFN part 2+3+1 = 6, residual+head 1+1+1+2 = 5
    // -> 19 launches of 10 us dominate.
    assert!(tl.makespan() > 190_000 && tl.makespan() < 200_000, "{}", tl.makespan());
}

#[test]
fn two_node_all_sum_of_8_kib_over_jaccl_rdma_takes_31_924_us() {
    let p = quiet_profile();
    let plan = plan(2, "tb5-rdma", &p);
    let low = lower_all_sum(&plan, 8192);
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    // Per rank: GPU->CPU fast sync 4 us; post 3 us; one JACCL round (2 frames of 4 KiB in
    // flight): 4.64 us wire latency + 15 us round cost + 8192 B / 9.375 B/ns = 874 ns;
    // CPU reduce 8192 B / 20 B/ns = 410 ns; CPU->GPU sync 4 us.
    // 4000 + 3000 + 20514 + 410 + 4000 = 31,924 ns.
    assert_eq!(tl.makespan(), 31_924);
    assert_eq!(low.bytes_sent, 2 * 8192);
}

#[test]
fn ring_all_sum_over_tcp_takes_two_steps_on_two_nodes() {
    let p = quiet_profile();
    let plan = plan(2, "tb5-tcp", &p);
    let low = lower_all_sum(&plan, 8192);
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    // Default fence (exo enables fast sync only for JACCL): 180 us each way. Ring with N=2:
    // 2 steps of M/2 = 4096 B: 190 us latency + 20 us TCP overhead + 4096/6.875 = 596 ns each,
    // plus a 205 ns reduce after the first step.
    let step = 190_000 + 20_000 + 596;
    assert_eq!(tl.makespan(), 180_000 + step + 205 + step + 180_000);
}

#[test]
fn segment_chain_is_its_blocks_plus_one_all_sum_per_block() {
    let p = quiet_profile();
    let plan1 = plan(2, "tb5-rdma", &p);
    // One dense op of 64 x 256 bf16: 80 ns of bytes + a 10 us launch = 10,080 ns per block.
    let ops =
        vec![vec![supernode::llm::Op::dense("qmm", supernode::llm::TensorRole::AttnQ, 64 * 256, supernode::llm::Placement::Replicated)]];
    let mut plain = lower_segment_chain(&plan1, &ops, 3, 0);
    plain.retime(&plan1, 0);
    assert_eq!(execute(&plain.graph, 0, &mut Jitter::none()).makespan(), 3 * 10_080);
    // With an 8 KiB all_sum after each block: 3 x (10,080 + 31,924), the all_sum timed above.
    let mut synced = lower_segment_chain(&plan1, &ops, 3, 8192);
    synced.retime(&plan1, 0);
    assert_eq!(execute(&synced.graph, 0, &mut Jitter::none()).makespan(), 3 * (10_080 + 31_924));
    assert_eq!(synced.bytes_sent, 3 * 2 * 8192);
    // In a forward pass each rank pays the in-context cost once per collective; a collective
    // timed alone (lower_all_sum) does not.
    let mut p2 = quiet_profile();
    p2.comm.collective_in_context_us = 100.0;
    let plan2 = plan(2, "tb5-rdma", &p2);
    let mut ctx = lower_segment_chain(&plan2, &ops, 3, 8192);
    ctx.retime(&plan2, 0);
    assert_eq!(execute(&ctx.graph, 0, &mut Jitter::none()).makespan(), 3 * (10_080 + 31_924 + 100_000));
    assert_eq!(execute(&lower_all_sum(&plan2, 8192).graph, 0, &mut Jitter::none()).makespan(), 31_924);
}

#[test]
fn prefill_logits_over_the_whole_chunk_cost_a_head_per_token() {
    let p = quiet_profile();
    let mut plan = plan(1, "none", &p);
    let time = |plan: &Plan| {
        let mut low = lower_step(plan, 64);
        low.retime(plan, 0);
        execute(&low.graph, 0, &mut Jitter::none()).makespan()
    };
    assert!(!plan.options.prefill_logits_all, "mlx-lm never evaluates a prefill chunk's logits");
    plan.options.prefill_logits_all = true;
    let all = time(&plan);
    plan.options.prefill_logits_all = false;
    let last = time(&plan);
    // The head is 64 x 256 bf16: 2 x 16,384 flops per token; 63 tokens fewer.
    assert!(all > last, "{all} vs {last}");
}

/// One 512 GB M3 Ultra running a catalog model (wired limit raised to 90%).
fn one_m3_ultra(p: &Profile, model: &str, quant: &str, options: &EngineOptions, context: u64) -> Plan {
    let c = catalog();
    let nodes = vec![c.node("m3-ultra-80c-512gb").unwrap().clone()];
    Plan::new(PlanInput {
        nodes: &nodes,
        fabric: c.fabric("none").unwrap(),
        topology: Topology::None,
        model: &c.model(model).unwrap().1,
        quant: c.quant(quant).unwrap(),
        options,
        wired_limit_fraction: Some(0.9),
        context,
        profile: p,
    })
    .unwrap()
}

#[test]
fn mla_prefill_expands_the_latent_on_mlx_and_stays_absorbed_for_decode() {
    let p = quiet_profile();
    let c = catalog();
    let model = &c.model("deepseek-v3.1").unwrap().1;
    let mk = |kind| one_m3_ultra(&p, "deepseek-v3.1", "mlx-4bit", &EngineOptions::december_2025(kind, Parallelism::None), 16);
    let mut plan = mk(EngineKind::MlxLm);
    assert!(plan.options.mla_prefill_expanded, "mlx-lm expands the latent for L > 1");
    assert!(!mk(EngineKind::LlamaCpp).options.mla_prefill_expanded, "llama.cpp's MLA graph stays absorbed");
    let ops = model.quantized_layer_ops(3, c.quant("mlx-4bit").unwrap());
    let sdpa = ops.iter().find(|o| o.mla_expanded.is_some()).unwrap();
    let kv_b = ops.iter().find(|o| o.expands_latent).unwrap();
    let chip = &p.chips["m3-ultra"];
    let (peak, bw, launch) = (26.0e12, 819.2e9, 10_000.0);
    // A 2,048-token chunk after 6,144 cached tokens: mean context 7,168.
    let (t, ctx) = (2048u64, 6144u64);
    let pairs = 2048.0 * 7168.0;
    // Expanded: 2 x 128 heads x (128 nope + 128 v + 64 rope) = 81,920 FLOPs per pair, plus the
    // rope-score mask (8 bytes per head per pair) at the dense efficiency and two more kernels.
    let expanded =
        81_920.0 * pairs / (peak * chip.compute_eff_attention) * 1e9 + 1024.0 * pairs / (bw * chip.bw_eff_dense) * 1e9 + 3.0 * launch;
    assert!((plan.cost(0).op_ns(sdpa, t, ctx) / expanded - 1.0).abs() < 1e-9, "{} vs {expanded}", plan.cost(0).op_ns(sdpa, t, ctx));
    // The up-projections run over all 8,192 cached positions: 2 x 512 x 128 x 256 FLOPs each.
    let kv_b_flops = 2.0 * 512.0 * 128.0 * 256.0 * 8192.0;
    let kv_b_expected =
        (kv_b_flops / (peak * chip.compute_eff_dense)).max(kv_b.params as f64 * 4.5 / 8.0 / (bw * chip.bw_eff_dense)) * 1e9 + launch;
    assert!((plan.cost(0).op_ns(kv_b, t, ctx) / kv_b_expected - 1.0).abs() < 1e-9);
    let decode = plan.cost(0).op_ns(sdpa, 1, ctx);
    plan.options.mla_prefill_expanded = false;
    // Absorbed: 2 x 128 x (2 x 512 + 64) = 278,528 FLOPs per pair, one kernel.
    let absorbed = 278_528.0 * pairs / (peak * chip.compute_eff_attention) * 1e9 + launch;
    assert!((plan.cost(0).op_ns(sdpa, t, ctx) / absorbed - 1.0).abs() < 1e-9);
    assert!(expanded < absorbed / 2.0, "the expanded form is the cheaper one in prefill");
    assert_eq!(plan.cost(0).op_ns(sdpa, 1, ctx), decode, "one-token steps are absorbed either way");
}

#[test]
fn mlx_prefills_all_but_the_last_prompt_token_in_chunks_then_that_token_alone() {
    let p = quiet_profile();
    let mut plan = plan(1, "none", &p);
    plan.options.prefill_chunk = 32;
    let step = |plan: &Plan, tokens: u64, ctx: u64| {
        let mut low = lower_step(plan, tokens);
        low.retime(plan, ctx);
        execute(&low.graph, 0, &mut Jitter::none()).makespan()
    };
    // 70 prompt tokens: chunks of 32, 32 and 5, then the 70th token alone.
    let expected = step(&plan, 32, 0) + step(&plan, 32, 32) + step(&plan, 5, 64) + step(&plan, 1, 69);
    assert!(plan.options.prefill_last_token_alone);
    let run = supernode::estimate::simulate_generate(&plan, 70, 1, 1);
    assert_eq!(run.prefill_ns, expected);
    // llama.cpp's way: chunks over all 70 tokens.
    plan.options.prefill_last_token_alone = false;
    let expected = step(&plan, 32, 0) + step(&plan, 32, 32) + step(&plan, 6, 64);
    assert_eq!(supernode::estimate::simulate_generate(&plan, 70, 1, 1).prefill_ns, expected);
}

#[test]
fn llama_cpp_per_head_mla_cache_is_plain_multi_head_attention() {
    // llama.cpp with a GGUF converted without MLA metadata caches per-head K (nope + rope) and V.
    let p = quiet_profile();
    let model = &catalog().model("deepseek-r1").unwrap().1;
    let mut options = EngineOptions::december_2025(EngineKind::LlamaCpp, Parallelism::None);
    let plan_at = |options: &EngineOptions, context: u64| one_m3_ultra(&p, "deepseek-r1", "q4_k_m", options, context);
    let latent = plan_at(&options, 4096);
    options.mla_per_head_cache = true;
    let per_head = plan_at(&options, 4096);
    // 61 layers x 128 heads x (128 + 64 + 128) x 2 bytes = 4,997,120 bytes per token, vs the
    // latent 61 x 576 x 2 = 70,272.
    assert!((per_head.memory[0].kv_cache_gb - 4_997_120.0 * 4096.0 / 1e9).abs() < 1e-9, "{}", per_head.memory[0].kv_cache_gb);
    assert!((latent.memory[0].kv_cache_gb - 70_272.0 * 4096.0 / 1e9).abs() < 1e-9);
    let sdpa = model.layer_ops(3).into_iter().find(|o| o.mla_per_head.is_some()).unwrap();
    let chip = &p.chips["m3-ultra"];
    let launch = chip.runtimes["llama-cpp"].kernel_launch_us * 1e3;
    // Decode at 4,095 cached tokens reads 4,096 x 81,920 bytes in one flash-attention pass at the
    // dense streaming efficiency (llama.cpp, FACTS.md; MLX's SDPA would read at bw_eff_attention).
    let decode = 81_920.0 * 4096.0 / (819.2e9 * chip.bw_eff_dense) * 1e9 + launch;
    assert!((per_head.cost(0).op_ns(&sdpa, 1, 4095) / decode - 1.0).abs() < 1e-9);
    // A 512-token chunk from an empty cache: 81,920 FLOPs per pair over a mean context of 256,
    // flash attention's GEMMs at the dense compute efficiency times the flash ratio.
    let flops = 81_920.0 * 512.0 * 256.0;
    let bytes = 81_920.0 * 512.0;
    let flash_eff = chip.compute_eff_dense * p.kernels.flash_compute_ratio;
    let prefill = (flops / (26.0e12 * flash_eff)).max(bytes / (819.2e9 * chip.bw_eff_dense)) * 1e9 + launch;
    assert!((per_head.cost(0).op_ns(&sdpa, 512, 0) / prefill - 1.0).abs() < 1e-9);
}

#[test]
fn a_prefill_step_retimed_at_a_longer_context_pays_every_context_dependent_op() {
    // mlx-lm's expanded MLA prefill: the attention and the latent up-projections both grow with
    // the cached context; retiming a lowered step must recompute both.
    let p = quiet_profile();
    let plan = one_m3_ultra(&p, "deepseek-v3.1", "mlx-4bit", &EngineOptions::december_2025(EngineKind::MlxLm, Parallelism::None), 16);
    let model = &plan.model;
    let ops = model.layer_ops(3);
    let grows: Vec<&supernode::llm::Op> =
        ops.iter().filter(|o| o.class == supernode::llm::OpClass::Attention || o.expands_latent).collect();
    assert_eq!(grows.len(), 2);
    let (t, ctx) = (64u64, 4096u64);
    let per_layer: f64 = grows.iter().map(|o| plan.cost(0).op_ns(o, t, ctx) - plan.cost(0).op_ns(o, t, 0)).sum();
    let mut low = lower_step(&plan, t);
    let makespan = |low: &mut supernode::engine::Lowered, ctx: u64| {
        low.retime(&plan, ctx);
        execute(&low.graph, 0, &mut Jitter::none()).makespan() as f64
    };
    let short = makespan(&mut low, 0);
    let long = makespan(&mut low, ctx);
    let expected = per_layer * model.layers as f64;
    // Task durations are whole nanoseconds: allow one per task.
    assert!((long - short - expected).abs() <= low.graph.task_count() as f64, "{} vs {expected}", long - short);
}
