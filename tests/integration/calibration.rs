//! Calibration: fits recover known parameters, degenerate data is refused, harness files are
//! checked, and (ignored by default, run by README's test command) the closed loop on this
//! machine: harness -> calibrate -> predict the harness's own end-to-end decode and prefill.

use std::path::Path;

use serde_json::json;
use supernode::calibrate::{self, Dataset, HarnessKind, HarnessUse, with_host_chip};
use supernode::profile::Profile;

use crate::{bin, root};

fn bench(kind: &str, params: serde_json::Value, bytes: f64, flops: f64, median: f64) -> serde_json::Value {
    json!({"kind": kind, "params": params, "bytes": bytes, "flops": flops, "median_s": median})
}

/// A synthetic harness file whose measurements are the twin's own predictions under `truth`.
fn synthetic_harness(truth: &Profile, shapes: &[(u64, u64, u64)]) -> serde_json::Value {
    let mut benches = vec![
        bench("membw", json!({"op": "sum"}), 1e9, 0.0, 0.1),     // 10 GB/s
        bench("matmul_peak", json!({"M": 512}), 0.0, 1e11, 0.1), // 1 TFLOP/s
        bench("send_recv", json!({"message_bytes": 1024}), 1024.0, 0.0, 20e-6),
        bench("send_recv", json!({"message_bytes": 1048576}), 1048576.0, 0.0, 20e-6 + 1048576.0 / 2e9),
    ];
    for &(m, k, n) in shapes {
        benches.push(bench("qmm", json!({"M": m, "K": k, "N": n, "bits": 4}), 0.0, 0.0, 1.0));
    }
    for size in [1024u64, 16384, 262144, 4194304] {
        benches.push(bench("all_sum", json!({"message_bytes": size}), size as f64, 0.0, 1.0));
    }
    let mut file = json!({"schema_version": 1, "tool": "supernode-harness", "machine": {"hostname": "synthetic", "cores": 2, "ram_bytes": 16e9},
        "mlx_version": "test", "backend": "ring", "world_size": 2, "device": "cpu", "dtype": "float32", "benchmarks": benches});
    // Replace the placeholder medians with the truth's predictions.
    let parsed: calibrate::HarnessFile = serde_json::from_value(file.clone()).unwrap();
    for (i, b) in parsed.benchmarks.iter().enumerate() {
        if b.kind.usage() == HarnessUse::Fit {
            let v = calibrate::predict_harness(&parsed, b, truth).unwrap();
            file["benchmarks"][i]["median_s"] = json!(v);
        }
    }
    file
}

fn write(dir: &Path, name: &str, v: &serde_json::Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
    p
}

const PARAMS: [&str; 4] = [
    "chips.harness-host.bw_eff_dense",
    "chips.harness-host.compute_eff_dense",
    "chips.harness-host.runtimes.mlx.kernel_launch_us",
    "comm.tcp_message_us",
];

#[test]
fn fit_recovers_known_parameters_from_synthetic_microbenchmarks() {
    let base = with_host_chip(&Profile::default_profile());
    let params: Vec<String> = PARAMS.iter().map(|s| s.to_string()).collect();
    let truth = calibrate::set_params(&base, &params, &[0.55, 0.35, 12.0, 42.0]).unwrap();
    let shapes = [(1, 4096, 4096), (1, 1024, 512), (1, 512, 128), (32, 4096, 4096), (64, 2048, 2048), (8, 1024, 1024), (1, 8192, 8192)];
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "h.json", &synthetic_harness(&truth, &shapes));
    let mut d = Dataset::default();
    d.add_harness(&f, HarnessUse::Fit).unwrap();
    let (fitted, report, _) = calibrate::calibrate(&d, &base, Some(params.clone()), calibrate::PRIOR_WEIGHT).unwrap();
    for (p, want) in params.iter().zip([0.55, 0.35, 12.0, 42.0]) {
        let got = calibrate::get_param(&fitted, p).unwrap();
        assert!((got - want).abs() / want < 0.03, "{p}: fitted {got}, truth {want}");
    }
    assert!(report.rms_percent < 0.5, "{}", report.rms_percent);
    assert!(report.params.iter().all(|p| p.std_error.is_some()));
    // `calibrate` fits with a weak prior toward the base values: it does not move a parameter the
    // data pin down (above), and its terms are not reported as measurements.
    assert_eq!(report.residuals.len(), d.targets.len());
}

#[test]
fn degenerate_data_is_refused_with_a_clear_error() {
    let base = with_host_chip(&Profile::default_profile());
    let tmp = tempfile::tempdir().unwrap();
    let shapes_one = [(1, 4096, 4096); 6];
    let collinear = write(tmp.path(), "collinear.json", &synthetic_harness(&base, &shapes_one));
    let out = bin()
        .args(["calibrate", "--params", "chips.harness-host.bw_eff_dense,chips.harness-host.runtimes.mlx.kernel_launch_us", "-o"])
        .arg(tmp.path().join("p.toml"))
        .arg(&collinear)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot separate") && err.contains("bw_eff_dense"), "{err}");
    // The same data with the parameters chosen automatically: the ones it cannot separate are
    // kept as they are, with a note, instead of failing.
    let out = bin().args(["calibrate", "-o"]).arg(tmp.path().join("auto.toml")).arg(&collinear).assert().success().get_output().clone();
    assert!(String::from_utf8_lossy(&out.stdout).contains("not constrained or not separable by the data (kept as is)"));

    // Too few points for the parameters asked.
    let few = write(tmp.path(), "few.json", &synthetic_harness(&base, &[(1, 4096, 4096)]));
    let six = format!("{},chips.harness-host.bw_eff_attention,chips.harness-host.compute_eff_expert", PARAMS.join(","));
    let out =
        bin().args(["calibrate", "--params", &six, "-o"]).arg(tmp.path().join("p.toml")).arg(&few).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("too few measurements"));

    // NaN in a measurement CSV.
    let csv = std::fs::read_to_string(crate::measurements_csv()).unwrap();
    let bad = csv.replacen(",19.5,tok/s,", ",NaN,tok/s,", 1);
    let p = tmp.path().join("nan.csv");
    std::fs::write(&p, bad).unwrap();
    let out = bin().args(["calibrate", "-o"]).arg(tmp.path().join("p.toml")).arg(&p).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("g-qwen3-exo-1") && err.contains("finite"), "{err}");
    assert!(!tmp.path().join("p.toml").exists(), "no profile written on error");

    // A negative prior weight.
    let out =
        bin().args(["calibrate", "--prior-weight=-1", "-o"]).arg(tmp.path().join("p.toml")).arg(&p).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prior-weight"));
    let out = bin().args(["validate", "--loo", "--prior-weight=nan", "--against"]).arg(&p).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prior-weight"));
}

#[test]
fn a_weak_prior_holds_a_barely_constrained_parameter_near_its_start() {
    // Truth moves the kernel launch cost far from its start, but the measurements are large
    // matrices whose time the launch barely touches: without a prior the fit chases noise-free
    // data all the way; with a prior the launch stays near its start while the
    // well-constrained efficiency is still recovered.
    let base = with_host_chip(&Profile::default_profile());
    let params: Vec<String> = [PARAMS[1], PARAMS[2]].iter().map(|s| s.to_string()).collect();
    let truth = calibrate::set_params(&base, &params, &[0.35, 60.0]).unwrap();
    let shapes = [(32, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)];
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "h.json", &synthetic_harness(&truth, &shapes));
    let mut d = Dataset::default();
    d.add_harness(&f, HarnessUse::Fit).unwrap();
    let start = calibrate::get_param(&base, PARAMS[2]).unwrap();
    let (free, _, _) = calibrate::calibrate(&d, &base, Some(params.clone()), 0.0).unwrap();
    let (held, _, _) = calibrate::calibrate(&d, &base, Some(params.clone()), 0.3).unwrap();
    let eff = |p: &Profile| calibrate::get_param(p, PARAMS[1]).unwrap();
    let launch = |p: &Profile| calibrate::get_param(p, PARAMS[2]).unwrap();
    assert!((eff(&free) - 0.35).abs() < 0.01 && (eff(&held) - 0.35).abs() < 0.02, "{} {}", eff(&free), eff(&held));
    assert!((launch(&held) - start).abs() < (launch(&free) - start).abs(), "held {} free {} start {start}", launch(&held), launch(&free));
}

#[test]
fn pace_probes_measure_how_the_machine_drifted_between_microbenchmarks_and_decode() {
    // Probes: 1 ms around a qmm, 2 ms during and after the decode (the machine slowed down).
    let pace = |at: &str, s: f64| json!({"kind": "pace", "params": {"at": at}, "median_s": s, "per_rank_median_s": [s, s * 0.9]});
    let file = json!({"schema_version": 1, "tool": "supernode-harness", "machine": {}, "mlx_version": "test", "backend": "ring",
    "world_size": 2, "device": "cpu", "dtype": "float32", "benchmarks": [
        pace("before qmm", 1e-3),
        bench("qmm", json!({"M": 1, "K": 1024, "N": 1024, "bits": 4}), 0.0, 0.0, 5e-3),
        pace("before e2e", 1e-3),
        pace("e2e decode", 2e-3),
        pace("after e2e", 2e-3),
    ]});
    let h: calibrate::HarnessFile = serde_json::from_value(file).unwrap();
    let f = calibrate::pace_factors(&h);
    assert_eq!(f[1], 2.0, "the qmm ran at half the decode's slowness: {f:?}");
    assert_eq!(calibrate::pace_drift_percent(&h), Some(100.0));
    // No probes: no correction.
    let mut plain = h.clone();
    plain.benchmarks.retain(|b| b.kind != HarnessKind::Pace);
    assert!(calibrate::pace_factors(&plain).iter().all(|x| *x == 1.0));
    assert_eq!(calibrate::pace_drift_percent(&plain), None);
}

#[test]
fn validate_reports_the_pace_drift_of_a_harness_file() {
    let example = root().join("calibration/measurements/harness-quick-example.json");
    let out = bin().args(["validate", "--json", "--against"]).arg(&example).assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["pace_drift_percent"].as_f64().is_some(), "{v}");
    let text = bin().args(["validate", "--against"]).arg(&example).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&text).contains("pace probe: on average the machine ran"));
    // The example ran the e2e prefill and decode three times in each of three rounds; validate shows each rate.
    assert_eq!(v["rounds_tokens_per_s"]["e2e_decode"].as_array().map(|a| a.len()), Some(9), "{v}");
    assert_eq!(v["rounds_tokens_per_s"]["e2e_prefill"].as_array().map(|a| a.len()), Some(9), "{v}");
    assert!(String::from_utf8_lossy(&text).contains("e2e_decode, each repeat:"));
    let mean = v["mean_tokens_per_s_all_rounds"]["e2e_decode"].as_f64().unwrap();
    let best = v["rounds_tokens_per_s"]["e2e_decode"].as_array().unwrap().iter().filter_map(|x| x.as_f64()).fold(0.0, f64::max);
    assert!(mean > 0.0 && mean <= best, "mean {mean} best {best}");
}

#[test]
fn harness_fits_have_no_prior_by_default_published_rows_do() {
    let example = root().join("calibration/measurements/harness-quick-example.json");
    let mut d = Dataset::default();
    d.add_harness(&example, HarnessUse::Fit).unwrap();
    assert_eq!(d.default_prior_weight(), 0.0);
    let h = calibrate::read_harness(&example).unwrap();
    let dec = h.benchmarks.iter().find(|b| b.kind == HarnessKind::E2eDecode).unwrap();
    let best = dec.round_tokens_per_s().into_iter().fold(0.0, f64::max);
    assert_eq!(calibrate::harness_measured(dec), best, "the measured decode is the best round's");
    d.add_csv(&crate::measurements_csv(), &Profile::default_profile()).unwrap();
    assert_eq!(d.default_prior_weight(), calibrate::PRIOR_WEIGHT);
}

#[test]
fn the_harness_decode_pays_its_measured_graph_build_time_per_step() {
    let example = root().join("calibration/measurements/harness-quick-example.json");
    let h = calibrate::read_harness(&example).unwrap();
    let mut profile = with_host_chip(&Profile::default_profile());
    profile.misc.jitter_cv = 0.0;
    let mut dec = h.benchmarks.iter().find(|b| b.kind == HarnessKind::E2eDecode).unwrap().clone();
    dec.host_build_s = None;
    let without = calibrate::predict_harness(&h, &dec, &profile).unwrap();
    dec.host_build_s = Some(0.002);
    let with = calibrate::predict_harness(&h, &dec, &profile).unwrap();
    // Seconds per token grow by exactly the 2 ms of Python graph building per step.
    assert!(((1.0 / with - 1.0 / without) - 0.002).abs() < 1e-9, "{without} -> {with}");
}

#[test]
fn seeding_the_harness_host_leaves_the_published_setups_alone() {
    // `validate` and `run` seed the harness host into every profile: that must not change what
    // the profile says about the Macs (e.g. no in-context collective cost where none was fitted).
    let p = Profile::default_profile();
    let seeded = with_host_chip(&p);
    assert_eq!(seeded.comm, p.comm);
    assert_eq!(seeded.chips["m3-ultra"], p.chips["m3-ultra"]);
}

#[test]
fn harness_files_are_checked() {
    let example = root().join("calibration/measurements/harness-quick-example.json");
    let h = calibrate::read_harness(&example).unwrap();
    assert_eq!(h.schema_version, 1);
    assert!(h.benchmarks.iter().any(|b| b.kind == HarnessKind::E2eDecode && b.tokens_per_s.is_some() && b.model.is_some()));
    assert!(calibrate::host_node(&h).unwrap().mem_bw_gbs > 0.1);
    let fab = calibrate::host_fabric(&h).unwrap();
    assert!(fab.latency_us > 0.0 && fab.bandwidth_gbs > 0.0);
    let tmp = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    v["schema_version"] = json!(99);
    let p = write(tmp.path(), "future.json", &v);
    assert!(calibrate::read_harness(&p).unwrap_err().to_string().contains("unsupported harness file"));
    let p = write(tmp.path(), "junk.json", &json!({"hello": 1}));
    assert!(calibrate::read_harness(&p).unwrap_err().to_string().contains("not a harness file"));
}

#[test]
fn validate_reports_json_and_enforces_max_mape() {
    let out = bin()
        .args(["validate", "--json", "--rows", "g-", "--against"])
        .arg(crate::measurements_csv())
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["mape_percent"].as_f64().unwrap() > 0.0);
    assert_eq!(v["rows"].as_array().unwrap().len(), 12);
    // The text lists every assumption once, with the rows that needed it.
    let out = bin()
        .args(["validate", "--rows", "g-qwen3-llama", "--against"])
        .arg(crate::measurements_csv())
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("assumed where the data are silent:")
            && text
                .contains("assumed q8_0 (bit class of the exo runs of the same model): g-qwen3-llama-1, g-qwen3-llama-2, g-qwen3-llama-4"),
        "{text}"
    );
    bin().args(["validate", "--max-mape", "0.01", "--against"]).arg(crate::measurements_csv()).assert().code(3);
    let tmp = tempfile::tempdir().unwrap();
    bin().args(["validate", "--rows", "g-", "--plot"]).arg(tmp.path()).arg("--against").arg(crate::measurements_csv()).assert().success();
    assert!(std::fs::metadata(tmp.path().join("parity.png")).unwrap().len() > 10_000);
    assert!(std::fs::read_to_string(tmp.path().join("parity.svg")).unwrap().contains("measured"));
}

#[test]
fn the_schema_and_the_twin_know_the_same_measurement_kinds() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("calibration/harness/schema.json")).unwrap()).unwrap();
    let in_schema: Vec<&str> = schema["$defs"]["kind"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let in_rust: Vec<&str> = HarnessKind::ALL.iter().map(|k| k.id()).collect();
    assert_eq!(in_schema, in_rust, "calibration/harness/schema.json `$defs/kind` and HarnessKind differ");
    for k in HarnessKind::ALL {
        assert_eq!(serde_json::from_value::<HarnessKind>(json!(k.id())).unwrap(), *k);
    }
    assert!(serde_json::from_value::<HarnessKind>(json!("qmmm")).unwrap_err().to_string().contains("unknown measurement kind `qmmm`"));
}

#[test]
fn a_harness_parameter_the_prediction_needs_is_an_error_naming_it() {
    let h = calibrate::read_harness(&root().join("calibration/measurements/harness-quick-example.json")).unwrap();
    let profile = with_host_chip(&Profile::default_profile());
    let mut qmm = h.benchmarks.iter().find(|b| b.kind == HarnessKind::Qmm).unwrap().clone();
    qmm.params.as_object_mut().unwrap().remove("K");
    let e = calibrate::predict_harness(&h, &qmm, &profile).unwrap_err().to_string();
    assert!(e.contains("`qmm`") && e.contains("params.K"), "{e}");
    let mut dec = h.benchmarks.iter().find(|b| b.kind == HarnessKind::E2eDecode).unwrap().clone();
    dec.model.as_mut().unwrap().as_object_mut().unwrap().remove("ffn");
    let e = calibrate::predict_harness(&h, &dec, &profile).unwrap_err().to_string();
    assert!(e.contains("model.ffn"), "{e}");
    // A profile without the harness host's chip: an error naming the chip, not a zero.
    let mut bare = Profile::default_profile();
    bare.chips.remove("harness-host");
    bare.chips.remove("m3-ultra");
    let dec = h.benchmarks.iter().find(|b| b.kind == HarnessKind::E2eDecode).unwrap();
    let e = calibrate::predict_harness(&h, dec, &with_host_chip(&bare)).unwrap_err().to_string();
    assert!(e.contains("harness-host"), "{e}");
}

/// A copy of the hand-set profile with `from` replaced by `to` (every occurrence).
fn hand_set_with(dir: &Path, name: &str, from: &str, to: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("calibration/profiles/hand-set.toml")).unwrap();
    assert!(text.contains(from), "{from}");
    let p = dir.join(name);
    std::fs::write(&p, text.replace(from, to)).unwrap();
    p
}

/// Runs the CLI with `args` then `--profile profile`; it must fail without a panic. Its stderr.
fn fails_with_profile(args: &[&std::ffi::OsStr], profile: &Path) -> String {
    let out = bin().current_dir(root()).args(args).arg("--profile").arg(profile).assert().failure().get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_profiles_are_errors_with_file_line_and_parameter_never_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let harness = root().join("calibration/measurements/harness-quick-example.json");
    let validate_harness = ["validate".as_ref(), "--against".as_ref(), harness.as_os_str()];
    // cpu_reduce_gbs = 0 once gave durations of u64::MAX.
    let zero = hand_set_with(tmp.path(), "zero.toml", "cpu_reduce_gbs = 20.0", "cpu_reduce_gbs = 0.0");
    let line = std::fs::read_to_string(&zero).unwrap().lines().position(|l| l == "cpu_reduce_gbs = 0.0").unwrap() + 1;
    let run = ["run".as_ref(), "scenarios/geerling-2x-m3-ultra-deepseek-v3.1-exo-rdma.toml".as_ref(), "--no-write".as_ref()];
    for args in [&validate_harness[..], &run[..]] {
        let err = fails_with_profile(args, &zero);
        assert!(err.contains(&format!("zero.toml:{line}:")) && err.contains("comm.cpu_reduce_gbs") && err.contains("> 0"), "{err}");
    }
    // An efficiency above 1, a missing key.
    let over = hand_set_with(tmp.path(), "over.toml", "bw_eff_attention = 0.27", "bw_eff_attention = 1.27");
    let err = fails_with_profile(&validate_harness, &over);
    assert!(err.contains("over.toml:") && err.contains(".bw_eff_attention` = 1.27") && err.contains("(0, 1]"), "{err}");
    let missing = hand_set_with(tmp.path(), "missing.toml", "tcp_message_us = 20.0\n", "");
    let err = fails_with_profile(&validate_harness, &missing);
    assert!(err.contains("missing.toml:") && err.contains("tcp_message_us"), "{err}");
    // A user profile without an m3-ultra section once panicked in calibrate and validate --profile.
    let text = std::fs::read_to_string(root().join("calibration/profiles/hand-set.toml")).unwrap();
    let mut no_m3: Profile = toml::from_str(&text).unwrap();
    no_m3.chips.remove("m3-ultra");
    no_m3.sources.retain(|k, _| !k.starts_with("chips.m3-ultra."));
    let no_m3_path = tmp.path().join("no-m3.toml");
    std::fs::write(&no_m3_path, toml::to_string(&no_m3).unwrap()).unwrap();
    assert!(fails_with_profile(&validate_harness, &no_m3_path).contains("harness-host"));
    let out = tmp.path().join("x.toml");
    let calibrate_harness = ["calibrate".as_ref(), "-o".as_ref(), out.as_os_str(), harness.as_os_str()];
    assert!(fails_with_profile(&calibrate_harness, &no_m3_path).contains("harness-host"));
    // The published rows: an error naming the chip the profile lacks.
    let csv = crate::measurements_csv();
    assert!(fails_with_profile(&["validate".as_ref(), "--against".as_ref(), csv.as_os_str()], &no_m3_path).contains("`m3-ultra`"));
}

#[test]
fn calibrate_writes_every_parameters_source_value_uncertainty_and_data() {
    let tmp = tempfile::tempdir().unwrap();
    let base = with_host_chip(&Profile::default_profile());
    let shapes = [(1, 4096, 4096), (1, 1024, 512), (32, 4096, 4096), (64, 2048, 2048), (8, 1024, 1024)];
    let f = write(tmp.path(), "h.json", &synthetic_harness(&base, &shapes));
    let hand_set = root().join("calibration/profiles/hand-set.toml");
    let out = tmp.path().join("fitted.toml");
    let params = "chips.harness-host.bw_eff_dense,chips.harness-host.runtimes.mlx.kernel_launch_us";
    bin().args(["calibrate", "--params", params, "-o"]).arg(&out).arg(&f).arg("--profile").arg(&hand_set).assert().success();
    let p = Profile::load(&out).unwrap();
    assert_eq!(p.sources.len(), p.params().len());
    let fitted = &p.sources["chips.harness-host.bw_eff_dense"];
    assert!(
        fitted.source.starts_with("fitted on ") && fitted.std_error.is_some() && fitted.data.as_deref() == Some(f.to_str().unwrap()),
        "{fitted:?}"
    );
    let hs = Profile::load(&hand_set).unwrap();
    let kept = &p.sources["comm.gpu_sync_default_us"];
    assert_eq!(kept.source, hs.sources["comm.gpu_sync_default_us"].source);
    assert_eq!((kept.value, kept.data.as_deref()), (Some(180.0), Some(hs.meta.data.as_str())));
    assert!(p.sources["chips.harness-host.compute_eff_dense"].source.contains("seeded from `chips.m3-ultra.compute_eff_dense`"));
}

/// One closed-loop attempt: the harness on 2 local ranks -> `calibrate` -> `validate` against
/// the harness's own end-to-end decode and prefill. Returns the rows over the bar (empty when
/// it passed) and what the machine was doing meanwhile.
struct Attempt {
    over_bar: Vec<String>,
    /// Highest 1-minute load average seen before and after the harness ran.
    load: f64,
    /// How far the machine's pace drifted between the microbenchmarks and the decode, percent.
    pace_drift_percent: Option<f64>,
}

/// The 1-minute load average (Linux; 0 elsewhere).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| s.split_whitespace().next()?.parse().ok()).unwrap_or(0.0)
}

fn closed_loop_attempt(bar_percent: f64, rounds: u32) -> Attempt {
    let harness = root().join("calibration/harness");
    let py = harness.join(".venv/bin/python");
    assert!(py.exists(), "run calibration/harness/setup.sh first");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("harness.json");
    let load_before = load_average();
    let status = std::process::Command::new(harness.join(".venv/bin/mlx.launch"))
        .args(["--backend", "ring", "-n", "2", "--python"])
        .arg(&py)
        .arg(harness.join("harness.py"))
        .arg("--quick")
        .args(["--rounds", &rounds.to_string()])
        .arg("--out")
        .arg(&out)
        .status()
        .expect("mlx.launch runs");
    let load = load_before.max(load_average());
    assert!(status.success(), "harness failed");
    let profile = tmp.path().join("host.toml");
    let fit = bin().arg("calibrate").arg(&out).arg("-o").arg(&profile).assert().success().get_output().clone();
    eprintln!("{}", String::from_utf8_lossy(&fit.stdout));
    let v =
        bin().args(["validate", "--json", "--against"]).arg(&out).arg("--profile").arg(&profile).assert().success().get_output().clone();
    let report: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    eprintln!("closed loop: {}", serde_json::to_string_pretty(&report["rows"]).unwrap());
    let rows = report["rows"].as_array().unwrap();
    let line = |row: &serde_json::Value| {
        format!("{} predicted {} vs measured {}: {}%", row["id"], row["predicted"], row["measured"], row["error_percent"])
    };
    let batched = |row: &&serde_json::Value| row["metric"] == "aggregate_decode_tokens_per_s";
    for row in rows.iter().filter(batched) {
        eprintln!("closed loop: batched e2e decode ({}): {}", if GATE_BATCHED { "gated" } else { "not gated" }, line(row));
    }
    let over_bar = rows
        .iter()
        .filter(|row| GATE_BATCHED || !batched(row))
        .filter(|row| row["error_percent"].as_f64().unwrap().abs() > bar_percent)
        .map(line)
        .collect();
    Attempt { over_bar, load, pace_drift_percent: report["pace_drift_percent"].as_f64() }
}

/// Whether the batched e2e decode rows (`e2e_decode_batch`, B = 1, 2, 4, 8) are held to the
/// closed loop's bar like the other e2e rows; when not, they are printed and not gated.
const GATE_BATCHED: bool = false;

/// The closed loop on this machine. Needs the harness environment (calibration/harness/setup.sh):
/// run with `cargo test --release --test integration closed_loop -- --ignored --test-threads=1`. The bar is 15% on both rows,
/// always. It times real kernels, so when an attempt misses the bar while the machine was
/// contended (load average above its cores + 1 — the harness's two ranks fill a 2-core box — or
/// the harness's own pace probes drifting more than 10% between microbenchmarks and decode), it
/// says so and tries once more, at the same bar, timing every case in 5 rounds instead of 3 (more
/// chances for each case to meet the machine undisturbed); a second miss fails, printing both.
#[test]
#[ignore = "runs the MLX harness for ~2 minutes; README's test command runs it alone"]
fn closed_loop_harness_calibrate_predict_end_to_end() {
    const BAR_PERCENT: f64 = 15.0;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let first = closed_loop_attempt(BAR_PERCENT, 3);
    eprintln!("closed loop: load average up to {:.2} on {cores} cores, pace drift {:?}%", first.load, first.pace_drift_percent);
    if first.over_bar.is_empty() {
        return;
    }
    let contended = first.load > cores + 1.0 || first.pace_drift_percent.is_some_and(|d| d.abs() > 10.0);
    assert!(contended, "closed loop over the {BAR_PERCENT}% bar on a quiet machine: {:?}", first.over_bar);
    eprintln!(
        "closed loop: over the {BAR_PERCENT}% bar while the machine was contended ({:?}); retrying once at the same bar",
        first.over_bar
    );
    let second = closed_loop_attempt(BAR_PERCENT, 5);
    eprintln!("closed loop (retry, 5 rounds): load average up to {:.2}, pace drift {:?}%", second.load, second.pace_drift_percent);
    assert!(
        second.over_bar.is_empty(),
        "closed loop over the {BAR_PERCENT}% bar twice: first (load {:.2}, pace drift {:?}%) {:?}; retry (load {:.2}, pace drift {:?}%) {:?}",
        first.load,
        first.pace_drift_percent,
        first.over_bar,
        second.load,
        second.pace_drift_percent,
        second.over_bar
    );
}

#[test]
fn the_pipeline_e2e_case_is_a_fit_target_that_recovers_the_per_stage_cost() {
    // The committed 2-rank example plus a pipeline-parallel e2e decode of the same model, its
    // rate the twin's prediction with a known per-stage cost.
    let example = root().join("calibration/measurements/harness-quick-example.json");
    let mut file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&example).unwrap()).unwrap();
    let mut pipe = file["benchmarks"].as_array().unwrap().iter().find(|b| b["kind"] == "e2e_decode").unwrap().clone();
    pipe["params"]["parallelism"] = json!("pipeline");
    pipe["model"]["parallelism"] = json!("pipeline");
    file["benchmarks"].as_array_mut().unwrap().push(pipe);
    let mut base = with_host_chip(&Profile::default_profile());
    base.misc.jitter_cv = 0.0;
    let param = vec!["chips.harness-host.runtimes.mlx.stage_us".to_string()];
    let truth = calibrate::set_params(&base, &param, &[800.0]).unwrap();
    let parsed: calibrate::HarnessFile = serde_json::from_value(file.clone()).unwrap();
    let i = parsed.benchmarks.len() - 1;
    assert_eq!(parsed.benchmarks[i].usage(), HarnessUse::Fit);
    let with = calibrate::predict_harness(&parsed, &parsed.benchmarks[i], &truth).unwrap();
    let without = calibrate::predict_harness(&parsed, &parsed.benchmarks[i], &base).unwrap();
    // Two stages per token, each 0.8 ms slower: the token takes 1.6 ms more.
    assert!(((1.0 / with - 1.0 / without) - 0.0016).abs() < 2e-6, "{without} -> {with}");
    file["benchmarks"][i]["tokens_per_s"] = json!(with);
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "pipe.json", &file);
    let mut d = Dataset::default();
    d.add_harness(&f, HarnessUse::Fit).unwrap();
    let (fitted, _, _) = calibrate::calibrate(&d, &base, Some(param.clone()), 0.0).unwrap();
    let got = calibrate::get_param(&fitted, &param[0]).unwrap();
    assert!((got - 800.0).abs() < 8.0, "fitted {got}, truth 800");
}

/// The published measurement CSV's header and the rows whose line starts with one of `prefixes`.
fn published_rows(prefixes: &[&str]) -> String {
    let all = std::fs::read_to_string(crate::measurements_csv()).unwrap();
    let mut lines = all.lines();
    let mut csv = format!("{}\n", lines.next().unwrap());
    for l in lines.filter(|l| prefixes.iter().any(|p| l.starts_with(p))) {
        csv.push_str(l);
        csv.push('\n');
    }
    csv
}

#[test]
fn parameters_no_row_moves_materially_stay_at_their_prior_exactly() {
    // Geerling's llama.cpp rows of the 3B and 70B on one M3 Ultra: prefill at 512 and 4096
    // tokens and decode. Attention in prefill is a sliver of a 512-4096-token Llama forward: the
    // prefill rows move `compute_eff_attention` a little, none by 3.5% per doubling, so the fit
    // must leave it at the hand-set prior to the bit (before, the weak prior let it drift from
    // 0.5 to 0.82 with the robust weights).
    let csv = published_rows(&["b17-llama32-3b-", "b17-llama33-70b-"]);
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "b17.csv", &csv);
    let base = Profile::hand_set();
    let mut d = Dataset::default();
    d.add_csv(&path, &base).unwrap();
    let (fitted, report, dropped) = calibrate::calibrate(&d, &base, None, calibrate::PRIOR_WEIGHT).unwrap();
    let attn = "chips.m3-ultra.compute_eff_attention";
    assert!(dropped.iter().any(|p| p == attn), "dropped {dropped:?}");
    assert!(!report.params.iter().any(|p| p.name == attn));
    assert_eq!(calibrate::get_param(&fitted, attn), calibrate::get_param(&base, attn), "held exactly at its prior");
    // Every parameter the fit did not report is exactly its prior; the fitted ones moved.
    for p in base.params() {
        if !report.params.iter().any(|f| supernode::profile::tied_paths(&f.name).contains(&p.path)) {
            assert_eq!(calibrate::get_param(&fitted, &p.path), Some(p.value), "{} drifted", p.path);
        }
    }
    assert!(report.params.iter().any(|p| p.name == "chips.m3-ultra.compute_eff_dense"), "{:?}", report.params);
}

/// Issue 20 item 5 (labels people write): a llama.cpp row labelled `f16` (llama-bench's type
/// name) is the 16-bit `bf16` preset's bytes, not a guessed Q4_K_M (its decode was predicted
/// 2.8x too fast); a label that is only a bit class still gets the stated guess.
#[test]
fn a_llama_cpp_f16_row_streams_sixteen_bit_weights() {
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let rows = read_csv(&crate::measurements_csv()).unwrap();
    let row = |id: &str| rows.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("row {id}"));
    let (b, assumptions) = row_scenario(row("n-m2u-llama3-70b-f16-lcpp-tg512"), &rows).unwrap();
    assert_eq!(b.build().unwrap().quant.id, "bf16");
    assert!(assumptions.iter().all(|a| !a.contains("assumed q4_k_m")), "{assumptions:?}");
    let (b, assumptions) = row_scenario(row("n-m3u256-minimaxm21-gguf4-tg-30k"), &rows).unwrap();
    assert_eq!(b.build().unwrap().quant.id, "q4_k_m");
    assert!(assumptions.iter().any(|a| a.contains("GGUF quant not published: assumed q4_k_m")), "{assumptions:?}");
}

/// Issue 21 item 4: llama.cpp's legacy type labels and Unsloth's dynamic labels, as users write
/// them (upper case, with or without `ud-`), read as their presets.
#[test]
fn legacy_and_unsloth_gguf_labels_read_as_their_presets() {
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let rows = read_csv(&crate::measurements_csv()).unwrap();
    let base = rows.iter().find(|r| r.id == "n-m2u-llama3-70b-f16-lcpp-tg512").unwrap();
    for (label, preset) in
        [("Q4_0", "q4_0"), ("q5_1", "q5_1"), ("Q4_K_XL", "ud-q4_k_xl"), ("UD-Q8_K_XL", "ud-q8_k_xl"), ("q8_k_xl", "ud-q8_k_xl")]
    {
        let mut row = base.clone();
        row.quant = label.into();
        let (b, assumptions) = row_scenario(&row, &rows).unwrap();
        assert_eq!(b.build().unwrap().quant.id, preset, "{label}");
        assert!(assumptions.iter().all(|a| !a.contains("GGUF quant not published")), "{label}: {assumptions:?}");
    }
}

/// A tied name on the command line is one parameter: the M3 and M2 Ultra's dense stream fitted
/// once on the two chips' Llama 70B Q4_K_M decode rows, every member written with that value
/// and a source that names the tie; the comma inside the braces does not split the list.
#[test]
fn calibrate_fits_a_tied_parameter_once_for_every_member() {
    let csv = published_rows(&["b17-llama33-70b-tg,", "n-m2u-llama3-70b-q4km-lcpp-tg512,"]);
    let tmp = tempfile::tempdir().unwrap();
    let rows = crate::write_text(tmp.path(), "rows.csv", &csv);
    let out = tmp.path().join("tied.toml");
    let tied = "chips.{m3-ultra,m2-ultra}.bw_eff_dense";
    let hand_set = root().join("calibration/profiles/hand-set.toml");
    bin()
        .args(["-q", "calibrate", "--params", &format!("{tied},chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us"), "-o"])
        .arg(&out)
        .arg(&rows)
        .arg("--profile")
        .arg(&hand_set)
        .assert()
        .success();
    let p = Profile::load(&out).unwrap();
    let fit = p.fit.as_ref().unwrap();
    assert_eq!(
        fit.params.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        [tied, "chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us"]
    );
    let (m3, m2) = (p.chips["m3-ultra"].bw_eff_dense, p.chips["m2-ultra"].bw_eff_dense);
    assert_eq!(m3, m2);
    assert_ne!(m3, Profile::load(&hand_set).unwrap().chips["m3-ultra"].bw_eff_dense, "fitted");
    for chip in ["m3-ultra", "m2-ultra"] {
        let s = &p.sources[&format!("chips.{chip}.bw_eff_dense")];
        assert!(s.source.contains(&format!("as `{tied}`, one value for all")), "{s:?}");
    }
}
