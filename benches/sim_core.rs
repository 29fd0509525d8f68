//! Event-core throughput on a synthetic task graph, and one full scenario estimate.
//!
//! Target (issue 2): at least 20 million events per second on the 2-core dev machine.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use supernode::sim::{Jitter, ResourceKind, TaskGraph, TaskId, execute};

/// A layered graph like an engine's: `width` parallel chains (one per resource) with a barrier
/// every `barrier_every` tasks (an all_sum), `tasks` tasks in all.
fn synthetic(tasks: usize, width: usize, barrier_every: usize) -> TaskGraph {
    let mut g = TaskGraph::new();
    let res: Vec<_> = (0..width)
        .map(|i| g.add_resource(format!("r{i}"), if i % 2 == 0 { ResourceKind::Gpu } else { ResourceKind::Cpu }, i as u32))
        .collect();
    let mut last: Vec<Option<TaskId>> = vec![None; width];
    let mut made = 0;
    let mut round = 0u64;
    while made < tasks {
        round += 1;
        if round % barrier_every as u64 == 0 {
            let deps: Vec<TaskId> = last.iter().flatten().copied().collect();
            for (i, r) in res.iter().enumerate() {
                last[i] = Some(g.compute(*r, 500 + (i as u64 * 37) % 300, "barrier", &deps));
                made += 1;
            }
        } else {
            for (i, r) in res.iter().enumerate() {
                let deps: Vec<TaskId> = last[i].into_iter().collect();
                last[i] = Some(g.compute(*r, 1_000 + (made as u64 * 7919) % 5_000, "work", &deps));
                made += 1;
            }
        }
    }
    g
}

fn bench(c: &mut Criterion) {
    let g = synthetic(200_000, 8, 4);
    let events = execute(&g, 0, &mut Jitter::none()).events();
    let mut group = c.benchmark_group("sim");
    group.throughput(Throughput::Elements(events));
    let durations: Vec<u64> = g.tasks().iter().map(|t| t.duration()).collect();
    group.bench_function("event_queue_200k_tasks", |b| b.iter(|| supernode::sim::execute_events(&g, 0, &durations).makespan()));
    group.bench_function("execute_200k_tasks", |b| b.iter(|| execute(&g, 0, &mut Jitter::none()).makespan()));
    group.bench_function("execute_200k_tasks_jitter", |b| b.iter(|| execute(&g, 0, &mut Jitter::new(1, 0.02)).makespan()));
    group.finish();

    let s = supernode::scenario::load(std::path::Path::new("scenarios/geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml"), &[]).unwrap();
    let p = supernode::profile::Profile::default_profile();
    let mut group = c.benchmark_group("estimate");
    group.sample_size(10);
    group.bench_function("geerling_4x_dsv31_exo_rdma_128_128", |b| {
        b.iter(|| supernode::estimate::estimate(&s, &p).unwrap().decode_tokens_per_s)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
