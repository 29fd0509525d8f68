//! The library as a user calls it: load a shipped scenario, vary the node count with the same
//! overrides `--set` uses, and estimate each. Asserts what the published runs show (Geerling,
//! 2025-12-18: DeepSeek V3.1 on exo over Thunderbolt 5 RDMA went 21.1 -> 27.8 -> 32.5 tok/s
//! from 1 to 2 to 4 nodes): every size fits and decode speeds up with each doubling, though by
//! less than 2x (collectives cost time).
//!
//! Run: `cargo run --release --example scaling` (CI runs it).

use std::path::Path;

use supernode::estimate::estimate;
use supernode::profile::Profile;
use supernode::scenario;

fn main() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    let profile = Profile::default_profile();
    let mut rates = Vec::new();
    for nodes in [1, 2, 4] {
        let overrides = vec!["cluster.node=m3-ultra-80c-512gb".to_string(), format!("cluster.count={nodes}")];
        let s = scenario::load(&file, &overrides).unwrap_or_else(|e| panic!("{nodes} nodes: {e}"));
        let e = estimate(&s, &profile).unwrap_or_else(|e| panic!("{nodes} nodes: {e}"));
        println!(
            "{nodes} x M3 Ultra 512 GB: decode {:>6.2} tok/s, TTFT {:>6.3} s, {:>6.1} W",
            e.decode_tokens_per_s, e.ttft_s, e.cluster_power_w
        );
        rates.push(e.decode_tokens_per_s);
    }
    for w in rates.windows(2) {
        assert!(w[1] > w[0], "decode should speed up with more nodes: {rates:?}");
        assert!(w[1] < 2.0 * w[0], "doubling the nodes cannot double decode: {rates:?}");
    }
    println!("ok: faster with each doubling, and by less than 2x");
}
