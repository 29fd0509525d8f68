//! A 30-day fault simulation of a 4-node cluster (issue 13): DeepSeek V3.1 on 4x M3 Ultra over
//! TB5 RDMA with node crashes, cable losses and degradations, RDMA instability, a straggler and
//! thermal throttling. Target: under 1 s for the whole `estimate` (fault-free run included).

use criterion::{Criterion, criterion_group, criterion_main};
use supernode::scenario::{Source, parse};

const FAULTS: &str = "
[faults]
horizon_days = 30

[faults.node]
mtbf_hours = 72
reboot_minutes = 3

[faults.link]
mtbf_hours = 240
repair_minutes = 120
degrade_mtbf_hours = 48
degrade_minutes = 30
rdma_instability = true

[faults.straggler]
node = 2
slowdown = 1.1

[faults.thermal]
after_minutes = 120
slowdown = 1.05
";

fn bench(c: &mut Criterion) {
    let path = "scenarios/geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml";
    let text = std::fs::read_to_string(path).unwrap() + FAULTS;
    let s = parse(Source { path: path.into(), dir: std::path::PathBuf::new(), text }).unwrap();
    let p = supernode::profile::Profile::default_profile();
    let f = supernode::estimate::estimate(&s, &p).unwrap().faults.unwrap();
    eprintln!("30 days: availability {}, events {:?}", f.availability, f.events);
    let mut group = c.benchmark_group("faults");
    group.sample_size(10);
    group.bench_function("dsv31_4x_m3_ultra_rdma_30_days", |b| {
        b.iter(|| supernode::estimate::estimate(&s, &p).unwrap().faults.unwrap().availability)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
