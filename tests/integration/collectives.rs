//! Collapsed collectives time like full ones: the proof that lowering a symmetric all-reduce or
//! all-gather as O(N) tasks (`CollectiveLowering::Collapsed`) leaves every jitter-free step time,
//! every node's GPU and CPU busy time, the bytes sent and the cables crossed exactly as the full
//! O(N^2) graph gives them, over a grid of cluster sizes, cablings, backends and message sizes.

use supernode::catalog::catalog;
use supernode::engine::{
    AllReduceAlgo, CollectiveLowering, EngineKind, EngineOptions, Lowered, Parallelism, Plan, PlanInput, lower_all_sum, lower_step,
};
use supernode::hw::Topology;
use supernode::llm::ModelSpec;
use supernode::profile::Profile;
use supernode::sim::{Jitter, ResourceKind, execute};

/// 16 layers of 16 heads: every N in 2..=16 can hold a pipeline stage; the tensor split is not
/// checked at plan level, so any N shards it.
fn model() -> ModelSpec {
    let cfg = serde_json::json!({"model_type":"llama","num_hidden_layers":16,"hidden_size":256,"num_attention_heads":16,
        "num_key_value_heads":16,"intermediate_size":512,"vocab_size":512});
    ModelSpec::from_hf_config("tiny16", "tiny16", &cfg).unwrap()
}

fn profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

struct Case {
    node: &'static str,
    n: usize,
    fabric: &'static str,
    topology: Topology,
    kind: EngineKind,
    parallelism: Parallelism,
    allreduce: AllReduceAlgo,
}

impl Case {
    fn plan(&self, profile: &Profile, collectives: CollectiveLowering) -> Plan {
        let c = catalog();
        let nodes = vec![c.node(self.node).unwrap().clone(); self.n];
        let mut options = EngineOptions::december_2025(self.kind, self.parallelism);
        options.allreduce = self.allreduce;
        let mut plan = Plan::new(PlanInput {
            nodes: &nodes,
            fabric: c.fabric(self.fabric).unwrap(),
            topology: self.topology,
            model: &model(),
            quant: c.quant("bf16").unwrap(),
            options: &options,
            wired_limit_fraction: None,
            context: 4096,
            profile,
        })
        .unwrap();
        plan.collectives = collectives;
        plan
    }

    fn name(&self) -> String {
        format!("{:?} {:?} x{} {} {:?} {:?}", self.kind, self.parallelism, self.n, self.fabric, self.topology, self.allreduce)
    }
}

/// What a jitter-free run of a lowered step gives: makespan, per-node GPU and CPU busy time
/// (node, is GPU, ns), bytes sent, cables crossed.
type Outcome = (u64, Vec<(u32, bool, u64)>, u64, Vec<(usize, usize)>);

fn outcome(low: &Lowered) -> Outcome {
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    let mut busy: Vec<(u32, bool, u64)> = Vec::new();
    for (r, &b) in low.graph.resources().iter().zip(tl.busy_by_resource()) {
        if matches!(r.kind(), ResourceKind::Gpu | ResourceKind::Cpu) {
            busy.push((r.node(), r.kind() == ResourceKind::Gpu, b));
        }
    }
    busy.sort_unstable();
    (tl.makespan(), busy, low.bytes_sent, low.cables_crossed.clone())
}

/// Busy time per link resource name (a collapsed ring keeps each link's busy time).
fn link_busy(low: &Lowered) -> Vec<(String, u64)> {
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    let mut out: Vec<(String, u64)> = low
        .graph
        .resources()
        .iter()
        .zip(tl.busy_by_resource())
        .filter(|(r, _)| r.kind() == ResourceKind::Link)
        .map(|(r, &b)| (r.name().to_string(), b))
        .collect();
    out.sort();
    out
}

fn cases() -> Vec<Case> {
    use AllReduceAlgo::{FullyConnected, ReduceScatterAllGather};
    use EngineKind::{Exo, LlamaCppRpc};
    use Parallelism::{Pipeline, Tensor};
    let mut out = Vec::new();
    let m3 = "m3-ultra-80c-512gb";
    for n in 2..=16 {
        for allreduce in [FullyConnected, ReduceScatterAllGather] {
            // JACCL: fully connected or reduce-scatter/all-gather up to 3 ranks, the ring after.
            out.push(Case { node: m3, n, fabric: "tb5-rdma", topology: Topology::Ring, kind: Exo, parallelism: Tensor, allreduce });
            if n <= 6 {
                out.push(Case { node: m3, n, fabric: "tb5-rdma", topology: Topology::FullMesh, kind: Exo, parallelism: Tensor, allreduce });
            }
        }
        let plain = FullyConnected;
        // The ring backend over TCP, on a ring, a mesh and a switch.
        out.push(Case { node: m3, n, fabric: "tb5-tcp", topology: Topology::Ring, kind: Exo, parallelism: Tensor, allreduce: plain });
        out.push(Case { node: m3, n, fabric: "eth-10g", topology: Topology::Switch, kind: Exo, parallelism: Tensor, allreduce: plain });
        if n <= 6 {
            out.push(Case {
                node: m3,
                n,
                fabric: "tb5-tcp",
                topology: Topology::FullMesh,
                kind: Exo,
                parallelism: Tensor,
                allreduce: plain,
            });
        }
        // exo's pipeline ends in an all-gather; llama.cpp RPC only sends (unchanged, checked too).
        out.push(Case { node: m3, n, fabric: "tb5-rdma", topology: Topology::Ring, kind: Exo, parallelism: Pipeline, allreduce: plain });
        out.push(Case {
            node: m3,
            n,
            fabric: "tb5-tcp",
            topology: Topology::Ring,
            kind: LlamaCppRpc,
            parallelism: Pipeline,
            allreduce: plain,
        });
    }
    for n in [2, 4, 8] {
        // NCCL (one task per rank already).
        let (kind, parallelism, allreduce) = (EngineKind::Vllm, Tensor, FullyConnected);
        out.push(Case { node: "dgx-spark", n, fabric: "cx7-roce", topology: Topology::Switch, kind, parallelism, allreduce });
    }
    out
}

#[test]
fn collapsed_collectives_time_like_full_ones() {
    let profile = profile();
    let mut checked = 0;
    for case in cases() {
        let collapsed = case.plan(&profile, CollectiveLowering::Collapsed);
        let full = case.plan(&profile, CollectiveLowering::Full);
        let ring_like = case.topology != Topology::FullMesh && !(case.fabric == "tb5-rdma" && case.n <= 3);
        // Decode (1 token), a short and a long prefill chunk, at two contexts.
        for (tokens, context) in [(1, 1), (1, 3000), (7, 64), (512, 1024)] {
            let mut a = lower_step(&collapsed, tokens);
            let mut b = lower_step(&full, tokens);
            a.retime(&collapsed, context);
            b.retime(&full, context);
            assert_eq!(outcome(&a), outcome(&b), "{} tokens {tokens} context {context}", case.name());
            if ring_like {
                assert_eq!(link_busy(&a), link_busy(&b), "{} link busy", case.name());
            }
            checked += 1;
        }
        // The collective alone, from 64 B to 16 MiB per rank.
        for bytes in [64, 4096, 32 * 1024, 32 * 1024 + 1, 1 << 20, 16 << 20] {
            let (a, b) = (lower_all_sum(&collapsed, bytes), lower_all_sum(&full, bytes));
            assert_eq!(outcome(&a), outcome(&b), "{} all_sum of {bytes} B", case.name());
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked} comparisons");
}

#[test]
fn a_collapsed_ring_is_linear_in_the_ranks() {
    let profile = profile();
    let case = |n| Case {
        node: "m3-ultra-80c-512gb",
        n,
        fabric: "tb5-rdma",
        topology: Topology::Ring,
        kind: EngineKind::Exo,
        parallelism: Parallelism::Tensor,
        allreduce: AllReduceAlgo::FullyConnected,
    };
    for n in [4, 16, 64] {
        let tasks = |c| lower_all_sum(&case(n).plan(&profile, c), 1 << 20).graph.task_count();
        let (collapsed, full) = (tasks(CollectiveLowering::Collapsed), tasks(CollectiveLowering::Full));
        // Per rank: its input, gpu->cpu, link, reduce, cpu->gpu; one join.
        assert_eq!(collapsed, 5 * n + 1, "x{n}");
        // Full: 2(N-1) steps of N sends and N reductions or joins.
        assert_eq!(full, 3 * n + 2 * (n - 1) * 2 * n, "x{n}");
    }
}

#[test]
fn asymmetric_clusters_keep_the_full_graph_and_memory_sizes_do_not_make_one() {
    let profile = profile();
    let c = catalog();
    let mixed: Vec<_> = ["m3-ultra-80c-512gb", "m3-ultra-80c-256gb", "m3-ultra-80c-512gb", "m3-ultra-80c-256gb"]
        .iter()
        .map(|id| c.node(id).unwrap().clone())
        .collect();
    let options = EngineOptions::december_2025(EngineKind::Exo, Parallelism::Tensor);
    let input = |nodes: &[supernode::hw::NodeSpec]| {
        Plan::new(PlanInput {
            nodes,
            fabric: c.fabric("tb5-rdma").unwrap(),
            topology: Topology::Ring,
            model: &model(),
            quant: c.quant("bf16").unwrap(),
            options: &options,
            wired_limit_fraction: None,
            context: 4096,
            profile: &profile,
        })
        .unwrap()
    };
    let count = |mut plan: Plan, c: CollectiveLowering| {
        plan.collectives = c;
        lower_all_sum(&plan, 1 << 20).graph.task_count()
    };
    // Two memory sizes of one machine time alike: collapsed, as four of one size.
    let plan = input(&mixed);
    assert_eq!(count(plan.clone(), CollectiveLowering::Collapsed), count(input(&vec![mixed[0].clone(); 4]), CollectiveLowering::Collapsed));
    assert!(count(plan.clone(), CollectiveLowering::Collapsed) < count(plan, CollectiveLowering::Full));
    // A different machine (60 GPU cores, not 80): the full graph.
    let mut other = mixed.clone();
    other[3] = c.node("m3-ultra-60c-96gb").unwrap().clone();
    let plan = input(&other);
    assert_eq!(count(plan.clone(), CollectiveLowering::Collapsed), count(plan, CollectiveLowering::Full));
    // A lost cable: messages detour through a peer, so the full graph.
    let mut plan = input(&vec![mixed[0].clone(); 4]);
    let symmetric = count(plan.clone(), CollectiveLowering::Collapsed);
    plan.lost_links = vec![(0, 1)];
    assert_eq!(count(plan.clone(), CollectiveLowering::Collapsed), count(plan, CollectiveLowering::Full));
    assert!(symmetric < count(input(&vec![mixed[0].clone(); 4]), CollectiveLowering::Full));
}

/// The planner's two equivalent 4-node clusters (issue 23): 2x 512 GB + 2x 256 GB M3 Ultra and
/// 4x 512 GB run DeepSeek V3.1 exo tensor parallel with equal shares, so every timing output is
/// the same to the last digit (they differed by 0.6% when only the uniform one collapsed).
#[test]
fn memory_sizes_of_one_machine_do_not_change_a_run() {
    let run = |nodes: &str| {
        let path = crate::root().join("scenarios/geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
        let sc = supernode::scenario::load(&path, &[format!("cluster.nodes={nodes}")]).unwrap();
        supernode::estimate::estimate(&sc, &profile()).unwrap()
    };
    let mixed = run(r#"["m3-ultra-80c-512gb","m3-ultra-80c-512gb","m3-ultra-80c-256gb","m3-ultra-80c-256gb"]"#);
    let uniform = run(r#"["m3-ultra-80c-512gb","m3-ultra-80c-512gb","m3-ultra-80c-512gb","m3-ultra-80c-512gb"]"#);
    assert_eq!(mixed.decode_tokens_per_s, uniform.decode_tokens_per_s);
    assert_eq!(mixed.prefill_tokens_per_s, uniform.prefill_tokens_per_s);
    assert_eq!(mixed.sim_events, uniform.sim_events);
    assert_eq!(mixed.node_power_w, uniform.node_power_w);
}
