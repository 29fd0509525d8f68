//! One integration-test binary with topic modules.

mod archs;
mod batch_harness;
mod batched;
mod bench_import;
mod calibration;
mod catalog_nodes;
mod charts;
mod cli;
mod collectives;
mod cuda_engines;
mod cv;
mod depth;
mod determinism;
mod envelope;
mod errors;
mod exo_bench;
mod faults;
mod fidelity;
mod fuzz;
mod gantt;
mod gguf_f16;
mod hostile;
mod intervals;
mod invariants;
mod iquants;
mod labels;
mod layers;
mod mlx_distributed;
mod models_2026;
mod names;
mod physics;
mod pipelined_prefill;
mod planner;
mod planner_fleets;
mod ports;
mod power;
mod proptests;
mod quant;
mod replicas;
mod report_page;
mod rpc_kv;
mod serve;
mod serve_speed;
mod slo;
mod snapshots;
mod strix;
mod sweep;
mod timelines;
mod user_catalog;
mod vllm;
mod vllm_parallel;
mod wired_limit;
mod working_set;

use std::path::PathBuf;

/// Repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The published measurements: `../shared/data/measurements.csv` when present (CI lays shared/
/// beside the clone), else the copy under calibration/data.
pub fn measurements_csv() -> PathBuf {
    let shared = root().join("../shared/data/measurements.csv");
    if shared.exists() { shared } else { root().join("calibration/data/measurements.csv") }
}

/// A scenario file path.
pub fn scenario(name: &str) -> PathBuf {
    root().join("scenarios").join(name)
}

/// The CLI binary.
pub fn bin() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("supernode").expect("binary built")
}

/// The reason `validate --json` output `v` gives for skipping row `id` ("" when it was not).
pub fn skip_reason(v: &serde_json::Value, id: &str) -> String {
    v["skipped"].as_array().unwrap().iter().find(|s| s["id"] == id).map(|s| s["reason"].as_str().unwrap().to_string()).unwrap_or_default()
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_text(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}
