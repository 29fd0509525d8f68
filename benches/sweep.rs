//! Sweep throughput: points per second through the whole sweep machinery (expand the point,
//! build and validate its scenario, estimate, render and write its line in index order), and
//! the same points through the estimator alone, so the difference is the sweep's overhead.
//!
//! The end-to-end figure for issue 4 (10,000 decode points, 1-8 nodes, <= 30 s on the 2-core dev
//! machine) is measured with the CLI: `/usr/bin/time -v supernode sweep scenarios/sweep-decode-10k.toml`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use supernode::capacity::sweep::{self, RunOptions, Shard, Sweep};
use supernode::estimate::estimate;
use supernode::profile::Profile;
use supernode::scenario::Source;

/// 48 DeepSeek V3.1 decode points (128 + 128 tokens): 1, 2, 4 M3 Ultra nodes, exo tensor over
/// RDMA and llama.cpp RPC over TCP, 8 seeds.
const SWEEP: &str = r#"name = "bench"
[cluster]
node = "m3-ultra-80c-512gb"
count = 1
fabric = "tb5-rdma"
topology = "ring"
[model]
name = "deepseek-v3.1"
[engine]
name = "exo"
[workload]
prompt_tokens = 128
generate_tokens = 128
[sweep]
"engine.name" = ["exo", "llama-cpp-rpc"]
"cluster.fabric" = ["tb5-rdma", "tb5-tcp"]
"model.quant" = ["mlx-4bit", "ud-q4_k_xl"]
"cluster.nodes" = [["m3-ultra-80c-512gb"], ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb"], ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m3-ultra-80c-512gb"]]
seed = { from = 1, to = 8 }
zip = [["engine.name", "cluster.fabric", "model.quant"]]
"#;

fn bench(c: &mut Criterion) {
    let profile = Profile::default_profile();
    let src = Source { path: "bench.toml".into(), dir: PathBuf::new(), text: SWEEP.into() };
    let sw = Sweep::from_source(src, &profile).expect("bench sweep parses");
    let n = sw.total;
    let scenarios: Vec<_> = (0..n).filter_map(|i| sw.scenario(i).ok()).collect();
    assert_eq!(scenarios.len() as u64, n, "every bench point is a valid scenario");
    let dir = tempfile::tempdir().expect("temp dir");

    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    for jobs in [1usize, 2] {
        g.bench_function(format!("run_{n}_points_jobs_{jobs}"), |b| {
            b.iter(|| {
                let opts = RunOptions { out: dir.path().join("out"), jobs: Some(jobs), shard: Shard::ALL, resume: false, progress: false };
                sweep::run(&sw, &profile, &opts).expect("sweep runs").fits
            })
        });
    }
    g.bench_function(format!("point_lines_{n}_points_1_thread"), |b| {
        b.iter(|| (0..n).map(|i| sw.point_line(i, &profile).0.len()).sum::<usize>())
    });
    g.bench_function(format!("estimates_only_{n}_points_1_thread"), |b| {
        b.iter(|| scenarios.iter().filter_map(|s| estimate(black_box(s), &profile).ok()).count())
    });
    g.bench_function(format!("scenario_build_only_{n}_points_1_thread"), |b| b.iter(|| (0..n).filter(|&i| sw.scenario(i).is_ok()).count()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
