//! One simulated hour of serving at 8 requests/s (Poisson, 128-token prompts and outputs) on the
//! 4x M3 Ultra cluster (Qwen3 235B A22B, exo tensor parallel over TB5 RDMA).
//!
//! Target (issue 12): at least 10,000x faster than real time, memory flat in the run's length
//! (statistics stream; the run keeps no per-event state). The speed-up is printed.

use std::path::PathBuf;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use supernode::estimate::estimate;
use supernode::profile::Profile;
use supernode::scenario::{Source, parse};

const SIMULATED_S: f64 = 3600.0;

fn scenario() -> supernode::scenario::Scenario {
    let text = format!(
        r#"
[cluster]
nodes = ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb", "m3-ultra-80c-256gb", "m3-ultra-80c-256gb"]
fabric = "tb5-rdma"
topology = "full-mesh"
[model]
name = "qwen3-235b-a22b"
quant = "mlx-8bit"
[engine]
name = "exo"
parallelism = "tensor"
[workload]
kind = "serve"
arrival = "poisson"
rate_per_s = 8.0
prompt_tokens = 128
generate_tokens = 128
duration_s = {SIMULATED_S}
"#
    );
    parse(Source { path: "bench.toml".into(), dir: PathBuf::new(), text }).expect("bench scenario")
}

fn bench(c: &mut Criterion) {
    let s = scenario();
    let profile = Profile::default_profile();
    let t = Instant::now();
    let e = estimate(&s, &profile).expect("estimate");
    let secs = t.elapsed().as_secs_f64();
    let sv = e.serve.as_ref().expect("a serving run");
    assert!(!sv.truncated, "the hour must be simulated whole, not cut at the cap");
    println!(
        "serve: one simulated hour at 8 req/s in {secs:.2} s = {:.0}x real time ({} events, aggregate {:.1} tok/s, window {} s)",
        SIMULATED_S / secs,
        e.sim_events,
        e.decode_tokens_per_s,
        sv.simulated_window_s
    );
    let mut group = c.benchmark_group("serve");
    group.sample_size(10);
    group.bench_function("one_hour_8_rps_4x_m3_ultra_qwen3_exo_tensor", |b| b.iter(|| estimate(&s, &profile).expect("estimate")));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
