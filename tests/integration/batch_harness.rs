//! The harness's batch cases (issue 12 item 3): `gather_qmm` over a batch of M tokens and the
//! batched end-to-end decode. A recorded batched run is read and predicted through the serving
//! decode step; the expert-coverage law sets the predicted gather traffic; calibrate pins the
//! expert kernel's bandwidth and compute efficiencies from gather cases alone.

use serde_json::json;
use supernode::calibrate::{self, Dataset, HarnessBench, HarnessFile, HarnessKind, HarnessUse, with_host_chip};
use supernode::profile::Profile;

use crate::root;

/// A 2-rank quick harness run on this machine (`--only membw,matmul_peak,send_recv,qmm,
/// gather_qmm,e2e_decode,e2e_decode_batch`), committed.
const RECORDED: &str = "calibration/measurements/harness-batch-example.json";

fn recorded() -> HarnessFile {
    calibrate::read_harness(&root().join(RECORDED)).unwrap()
}

fn batched(h: &HarnessFile) -> Vec<&HarnessBench> {
    h.benchmarks.iter().filter(|b| b.kind == HarnessKind::E2eDecodeBatch).collect()
}

fn host_profile() -> Profile {
    let mut p = with_host_chip(&Profile::default_profile());
    p.misc.jitter_cv = 0.0;
    p
}

#[test]
fn a_recorded_batched_decode_is_read_and_predicted_through_the_serving_step() {
    let h = recorded();
    let recs = batched(&h);
    let sizes: Vec<u64> = recs.iter().map(|b| b.params["batch"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [1, 2, 4, 8]);
    assert!(recs.iter().all(|b| b.usage() == HarnessUse::Validate && b.model.as_ref().unwrap()["ranks"] == 2));
    assert_eq!(calibrate::harness_id(recs[3], 7), "7:e2e_decode_batch B8");
    let profile = host_profile();
    let predict =
        |h: &HarnessFile| -> Vec<f64> { batched(h).iter().map(|b| calibrate::predict_harness(h, b, &profile).unwrap()).collect() };
    let pred = predict(&h);
    // This CPU host is compute-bound from one row on (its qmm runs at a few GFLOP/s): a step of B
    // sequences costs ~B steps of one, so each sequence slows as the batch grows and the
    // aggregate stays flat (within the per-step fixed costs and each record's own host time).
    for (w, s) in pred.windows(2).zip(sizes.windows(2)) {
        assert!(w[1] / (s[1] as f64) < w[0] / (s[0] as f64), "{sizes:?}: {pred:?}");
    }
    assert!(pred.iter().all(|p| (p / pred[0] - 1.0).abs() < 0.1), "{pred:?}");
    // The same host with 1000x its compute is weight-bound at these batch sizes: the weights are
    // read once per step for every sequence, and the aggregate grows with the batch.
    let mut fast = h.clone();
    for b in fast.benchmarks.iter_mut().filter(|b| b.kind == HarnessKind::MatmulPeak) {
        b.flops *= 1000.0;
    }
    let fast_pred = predict(&fast);
    for w in fast_pred.windows(2) {
        assert!(w[1] > 1.3 * w[0], "{fast_pred:?}");
    }
    // Batch 1 is the plain decode: the same prediction as an e2e_decode record of that window.
    let mut one = recs[0].clone();
    one.kind = HarnessKind::E2eDecode;
    let plain = calibrate::predict_harness(&h, &one, &profile).unwrap();
    assert!((plain - pred[0]).abs() < 1e-9 * plain, "{plain} vs {}", pred[0]);
    // The measured value is the aggregate rate; validate reports it under that metric.
    assert_eq!(calibrate::harness_measured(recs[3]), recs[3].tokens_per_s.unwrap());
    let mut d = Dataset::default();
    d.add_harness(&root().join(RECORDED), HarnessUse::Validate).unwrap();
    let i = d.targets.iter().position(|t| t.id.ends_with("e2e_decode_batch B8")).unwrap();
    assert_eq!(d.validated(i, pred[3]).metric, "aggregate_decode_tokens_per_s");
}

#[test]
fn calibrate_fits_the_recorded_kernels_and_the_batched_decodes_stay_validation_targets() {
    // The recorded file's kernels (qmm, gather_qmm) fit the host; the batched decodes are not fit
    // targets but predicted by the fitted twin. The errors are printed, not asserted: the file
    // was recorded with the 2-core box's load average at 10-16 (other sessions' builds), where
    // the e2e steps ran 5-8x slower than on a quiet machine.
    let path = root().join(RECORDED);
    let mut fit = Dataset::default();
    fit.add_harness(&path, HarnessUse::Fit).unwrap();
    assert!(fit.targets.iter().any(|t| t.id.contains(":gather_qmm M32 ")));
    assert!(!fit.targets.iter().any(|t| t.id.contains("e2e_decode_batch")));
    assert!(fit.skipped.iter().any(|(id, why)| id.ends_with("e2e_decode_batch B8") && why.contains("validation target")));
    let base = host_profile();
    let params: Vec<String> = ["compute_eff_dense", "compute_eff_expert", "runtimes.mlx.kernel_launch_us"]
        .iter()
        .map(|p| format!("chips.harness-host.{p}"))
        .collect();
    let (fitted, _, _) = calibrate::calibrate(&fit, &base, Some(params), 0.0).unwrap();
    let h = recorded();
    for b in batched(&h) {
        let (p, m) = (calibrate::predict_harness(&h, b, &fitted).unwrap(), calibrate::harness_measured(b));
        assert!(p.is_finite() && p > 0.0);
        eprintln!("recorded B{}: predicted {p:.3} tok/s, measured {m:.3} ({:+.1}%)", b.params["batch"], (p - m) / m * 100.0);
    }
}

/// A one-rank harness file of gather_qmm cases on a 10 GB/s, 100 GFLOP/s host, timed by `truth`.
fn gather_file(truth: &Profile) -> serde_json::Value {
    let mut benches = vec![
        json!({"kind": "membw", "params": {"op": "sum"}, "bytes": 1e9, "flops": 0.0, "median_s": 0.1}),
        json!({"kind": "matmul_peak", "params": {"M": 512}, "bytes": 0.0, "flops": 1e10, "median_s": 0.1}),
    ];
    for m in [1u64, 2, 4, 8, 16, 32] {
        benches.push(json!({"kind": "gather_qmm", "params": {"M": m, "N": 768, "K": 2048, "experts": 64, "top_k": 8, "bits": 4,
            "group_size": 64}, "bytes": 0.0, "flops": 0.0, "median_s": 1.0}));
    }
    let mut file = json!({"schema_version": 1, "tool": "supernode-harness", "machine": {"hostname": "synthetic", "cores": 2,
        "ram_bytes": 16e9}, "mlx_version": "test", "backend": "none", "world_size": 1, "device": "cpu", "dtype": "float32",
        "benchmarks": benches});
    let parsed: HarnessFile = serde_json::from_value(file.clone()).unwrap();
    for (i, b) in parsed.benchmarks.iter().enumerate().filter(|(_, b)| b.kind == HarnessKind::GatherQmm) {
        file["benchmarks"][i]["median_s"] = json!(calibrate::predict_harness(&parsed, b, truth).unwrap());
    }
    file
}

#[test]
fn gather_over_a_batch_reads_the_experts_the_coverage_law_gives_and_calibrate_pins_the_expert_kernel() {
    let base = host_profile();
    let paths: Vec<String> = ["bw_eff_expert", "compute_eff_expert"].iter().map(|p| format!("chips.harness-host.{p}")).collect();
    let truth = calibrate::set_params(&base, &paths, &[0.4, 0.3]).unwrap();
    let file = gather_file(&truth);
    let h: HarnessFile = serde_json::from_value(file.clone()).unwrap();
    let t: Vec<f64> = h.benchmarks.iter().filter(|b| b.kind == HarnessKind::GatherQmm).map(|b| b.median_s).collect();
    // Weight-bound at small M: time minus the launch grows as the experts touched,
    // E(1-(1-k/E)^M) = 8, 15, 26.4 for M = 1, 2, 4.
    let launch = calibrate::get_param(&truth, "chips.harness-host.runtimes.mlx.kernel_launch_us").unwrap() * 1e-6;
    let touched = |m: i32| 64.0 * (1.0 - (56.0f64 / 64.0).powi(m));
    for (i, m) in [(1, 2), (2, 4)] {
        let ratio = (t[i] - launch) / (t[0] - launch);
        assert!((ratio - touched(m) / 8.0).abs() < 1e-3, "M{m}: {ratio} vs {}", touched(m) / 8.0);
    }
    // Compute-bound at M = 32: 2·M·k·N·K flops at 30% of 100 GFLOP/s.
    let flops = 2.0 * 32.0 * 8.0 * 768.0 * 2048.0;
    assert!(((t[5] - launch) - flops / (1e11 * 0.3)).abs() < 1e-3 * t[5], "{t:?}");
    // The gather cases alone pin both efficiencies of the expert kernel.
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("gather.json");
    std::fs::write(&f, file.to_string()).unwrap();
    let mut d = Dataset::default();
    d.add_harness(&f, HarnessUse::Fit).unwrap();
    let (fitted, _, _) = calibrate::calibrate(&d, &base, Some(paths.clone()), 0.0).unwrap();
    for (p, want) in paths.iter().zip([0.4, 0.3]) {
        let got = calibrate::get_param(&fitted, p).unwrap();
        assert!((got - want).abs() < 1e-3, "{p}: fitted {got}, truth {want}");
    }
}
