//! Invariants of real lowered graphs: causality, a monotonic clock per resource, conservation of
//! bytes.

use supernode::engine::lower_step;
use supernode::profile::Profile;
use supernode::scenario;
use supernode::sim::{Jitter, ResourceKind, TaskId, execute};

fn plan_for(file: &str, sets: &[&str]) -> supernode::engine::Plan {
    let sets: Vec<String> = sets.iter().map(|x| x.to_string()).collect();
    let s = scenario::load(&crate::scenario(file), &sets).unwrap();
    let p = Profile::default_profile();
    supernode::engine::Plan::new(supernode::engine::PlanInput {
        nodes: &s.nodes,
        fabric: &s.fabric,
        topology: s.topology,
        model: &s.model,
        quant: &s.quant,
        options: &s.engine,
        wired_limit_fraction: s.wired_limit_fraction,
        context: 256,
        profile: &p,
    })
    .unwrap()
}

fn check(file: &str, tokens: u64) {
    check_with(file, &[], tokens)
}

fn check_with(file: &str, sets: &[&str], tokens: u64) {
    let plan = plan_for(file, sets);
    let mut low = lower_step(&plan, tokens);
    low.retime(&plan, 128);
    let tl = execute(&low.graph, 1_000, &mut Jitter::new(3, 0.05));
    let g = &low.graph;
    // Build predecessor lists from successor lists.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.tasks.len()];
    for t in 0..g.tasks.len() {
        for &s in g.successors(TaskId(t as u32)) {
            preds[s as usize].push(t);
        }
    }
    for (t, timing) in tl.timings.iter().enumerate() {
        assert!(timing.start >= 1_000, "task {t} started before the step");
        assert!(timing.start >= timing.ready && timing.end >= timing.start);
        for &p in &preds[t] {
            assert!(tl.timings[p].end <= timing.ready, "{file}: task {t} ready before input {p} finished");
        }
        assert_eq!(preds[t].len() as u32, g.pred_count(TaskId(t as u32)));
    }
    // Per resource: intervals never overlap and never go back in time.
    for r in 0..g.resources.len() {
        let mut iv: Vec<(u64, u64)> = g
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, x)| x.resource.0 as usize == r)
            .map(|(i, _)| (tl.timings[i].start, tl.timings[i].end))
            .collect();
        iv.sort_unstable();
        for w in iv.windows(2) {
            assert!(w[0].1 <= w[1].0, "{file}: overlap on {}", g.resources[r].name);
        }
        let busy: u64 = iv.iter().map(|(a, b)| b - a).sum();
        assert_eq!(busy, tl.busy[r]);
    }
    // Every byte sent is received: link tasks carry exactly the bytes the engine sent, and every
    // transfer has a consumer.
    let on_links: u64 = g.tasks.iter().filter(|x| g.resources[x.resource.0 as usize].kind == ResourceKind::Link).map(|x| x.bytes).sum();
    assert_eq!(on_links, low.bytes_sent, "{file}");
    for (t, task) in g.tasks.iter().enumerate() {
        if g.resources[task.resource.0 as usize].kind == ResourceKind::Link {
            assert!(!g.successors(TaskId(t as u32)).is_empty(), "{file}: transfer {t} is never received");
        }
    }
    assert_eq!(tl.makespan, tl.timings.iter().map(|x| x.end).max().unwrap());
}

#[test]
fn exo_tensor_mesh_decode_and_prefill() {
    check("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml", 1);
    check("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml", 300);
}

#[test]
fn llama_rpc_star() {
    check("geerling-4x-m3-ultra-qwen3-235b-a22b-llama-rpc.toml", 1);
}

#[test]
fn switched_rpc_and_exo_pipeline_and_ring() {
    check("framework-4x-llama-3.1-405b-llama-rpc.toml", 1);
    let f = "geerling-4x-m3-ultra-qwen3-235b-a22b-exo-rdma.toml";
    check_with(f, &["engine.parallelism=pipeline"], 1);
    check_with(f, &["cluster.fabric=tb5-tcp", "cluster.topology=ring"], 1);
    check_with(f, &["cluster.topology=ring"], 1);
    check_with(f, &["engine.allreduce=rs-ag"], 64);
}
