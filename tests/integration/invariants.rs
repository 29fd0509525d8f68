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
    s.plan(256, &p).unwrap()
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
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.task_count()];
    for t in g.task_ids() {
        for s in g.successors(t) {
            preds[s.index()].push(t.index());
        }
    }
    for t in g.task_ids() {
        let timing = tl.timing(t);
        assert!(timing.start >= 1_000, "task {t:?} started before the step");
        assert!(timing.start >= timing.ready && timing.end >= timing.start);
        for &p in &preds[t.index()] {
            assert!(tl.timings()[p].end <= timing.ready, "{file}: task {t:?} ready before input {p} finished");
        }
        assert_eq!(preds[t.index()].len() as u32, g.pred_count(t));
        let mut from_graph: Vec<usize> = g.predecessors(t).map(TaskId::index).collect();
        from_graph.sort_unstable();
        assert_eq!(from_graph, preds[t.index()], "{file}: predecessors and successors of {t:?} disagree");
    }
    // Per resource: intervals never overlap and never go back in time.
    for r in g.resource_ids() {
        let mut iv: Vec<(u64, u64)> =
            g.task_ids().filter(|&t| g.task(t).resource() == r).map(|t| (tl.timing(t).start, tl.timing(t).end)).collect();
        iv.sort_unstable();
        for w in iv.windows(2) {
            assert!(w[0].1 <= w[1].0, "{file}: overlap on {}", g.resource(r).name());
        }
        let busy: u64 = iv.iter().map(|(a, b)| b - a).sum();
        assert_eq!(busy, tl.busy(r));
    }
    // Every byte sent is received: link tasks carry exactly the bytes the engine sent, and every
    // transfer has a consumer.
    let on_links: u64 = g.tasks().iter().filter(|x| g.resource(x.resource()).kind() == ResourceKind::Link).map(|x| x.bytes()).sum();
    assert_eq!(on_links, low.bytes_sent, "{file}");
    for t in g.task_ids() {
        if g.resource_of(t).kind() == ResourceKind::Link {
            assert!(g.successors(t).len() > 0, "{file}: transfer {t:?} is never received");
        }
    }
    assert_eq!(tl.makespan(), tl.timings().iter().map(|x| x.end).max().unwrap());
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

mod fast_path {
    use proptest::prelude::*;
    use supernode::sim::{ResourceKind, TaskGraph, TaskId, execute_events, execute_longest_path};

    fn graph(spec: &[(u8, u16, Vec<u16>)], resources: u8) -> TaskGraph {
        let mut g = TaskGraph::new();
        let res: Vec<_> = (0..resources.max(1)).map(|i| g.add_resource(format!("r{i}"), ResourceKind::Gpu, i as u32)).collect();
        let mut ids: Vec<TaskId> = Vec::with_capacity(spec.len());
        for (i, (r, d, deps)) in spec.iter().enumerate() {
            let mut ds: Vec<TaskId> = deps.iter().filter(|&&x| (x as usize) < i).map(|&x| ids[x as usize]).collect();
            ds.sort_unstable();
            ds.dedup();
            // The tests hand the durations to the executors themselves: the jitter flag is moot.
            ids.push(g.compute(res[*r as usize % res.len()], *d as u64, "t", &ds));
        }
        g
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
        /// Whenever the fast path accepts a graph, it gives exactly the event-queue timeline.
        #[test]
        fn fast_path_equals_event_queue(spec in proptest::collection::vec((0u8..4, 0u16..50, proptest::collection::vec(0u16..40, 0..3)), 1..40), resources in 1u8..5) {
            let g = graph(&spec, resources);
            let d: Vec<u64> = g.tasks().iter().map(|t| t.duration()).collect();
            let des = execute_events(&g, 7, &d);
            if let Some(fast) = execute_longest_path(&g, 7, &d) {
                prop_assert_eq!(fast.timings(), des.timings());
                prop_assert_eq!(fast.busy_by_resource(), des.busy_by_resource());
                prop_assert_eq!(fast.makespan(), des.makespan());
                prop_assert_eq!(fast.events(), des.events());
            }
        }
    }

    /// Random graphs in which every task also waits for the previous task on its resource: each
    /// resource then serves its tasks in task order, so the fast path must accept every one of
    /// them (a test that cannot pass by declining) and match the event queue exactly.
    fn chained(spec: &[(u8, u16, Vec<u16>)], resources: u8) -> TaskGraph {
        let n_res = resources.max(1) as usize;
        let mut last_on: Vec<Option<u16>> = vec![None; n_res];
        let spec: Vec<(u8, u16, Vec<u16>)> = spec
            .iter()
            .enumerate()
            .map(|(i, (r, d, deps))| {
                let r_idx = *r as usize % n_res;
                let mut deps = deps.clone();
                deps.extend(last_on[r_idx]);
                last_on[r_idx] = Some(i as u16);
                (r_idx as u8, *d, deps)
            })
            .collect();
        graph(&spec, resources)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn fast_path_accepts_resource_ordered_graphs_and_equals_event_queue(
            spec in proptest::collection::vec((0u8..4, 0u16..50, proptest::collection::vec(0u16..40, 0..3)), 1..40),
            resources in 1u8..5,
        ) {
            let g = chained(&spec, resources);
            let d: Vec<u64> = g.tasks().iter().map(|t| t.duration()).collect();
            let des = execute_events(&g, 7, &d);
            let fast = execute_longest_path(&g, 7, &d);
            prop_assert!(fast.is_some(), "a resource-ordered graph must take the fast path");
            let fast = fast.unwrap();
            prop_assert_eq!(fast.timings(), des.timings());
            prop_assert_eq!(fast.busy_by_resource(), des.busy_by_resource());
            prop_assert_eq!(fast.makespan(), des.makespan());
        }
    }

    /// Two tasks on one resource where the second is ready first: the fast path must decline
    /// (its task-order premise fails), and the event queue runs the second one first.
    #[test]
    fn fast_path_declines_out_of_order_graphs() {
        // t0: 10 ns on r0; t1: 5 ns on r1; t2: 1 ns on r0 after t1 (ready at 5); t3: 1 ns on r0
        // after nothing. In task order t3 would queue behind t2 on r0, but it is ready at 0.
        let spec = vec![(0u8, 10u16, vec![]), (1, 5, vec![]), (0, 1, vec![1]), (0, 1, vec![])];
        let g = graph(&spec, 2);
        let d: Vec<u64> = g.tasks().iter().map(|t| t.duration()).collect();
        assert!(execute_longest_path(&g, 0, &d).is_none());
        let des = execute_events(&g, 0, &d);
        // FIFO by readiness on r0: t0 [0,10), t3 ready at 0 queues behind it [10,11), t2 ready at 5 [11,12).
        assert_eq!((des.timings()[0].start, des.timings()[0].end), (0, 10));
        assert_eq!((des.timings()[3].start, des.timings()[3].end), (10, 11));
        assert_eq!((des.timings()[2].start, des.timings()[2].end), (11, 12));
        assert_eq!(des.makespan(), 12);
    }

    #[test]
    fn engine_decode_graphs_take_the_fast_path_and_agree() {
        for (file, sets) in [
            ("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml", vec![]),
            ("geerling-4x-m3-ultra-qwen3-235b-a22b-llama-rpc.toml", vec![]),
            ("geerling-2x-m3-ultra-qwen3-235b-a22b-exo-rdma.toml", vec![]),
            ("geerling-4x-m3-ultra-qwen3-235b-a22b-exo-rdma.toml", vec!["cluster.fabric=tb5-tcp"]),
            ("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml", vec!["cluster.topology=ring"]),
        ] {
            let plan = super::plan_for(file, &sets);
            let mut low = supernode::engine::lower_step(&plan, 1);
            low.retime(&plan, 500);
            let mut j = supernode::sim::Jitter::new(5, 0.03);
            let d = supernode::sim::draw_durations(&low.graph, &mut j);
            let des = execute_events(&low.graph, 0, &d);
            let fast = execute_longest_path(&low.graph, 0, &d);
            assert!(fast.is_some(), "{file} {sets:?}: decode graph should take the fast path");
            if let Some(f) = fast {
                assert_eq!(f.timings(), des.timings(), "{file}");
                assert_eq!(f.makespan(), des.makespan());
            }
        }
    }
}
