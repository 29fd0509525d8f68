//! Prediction intervals at the cost they need: a parameter the scenario's plan does not read is
//! not re-run (its sensitivity is exactly 0). The proof: re-running every skipped parameter of
//! every shipped scenario, nudged well past the interval's own step, changes no output at all.

use supernode::calibrate::interval::unread_params;
use supernode::estimate::estimate;
use supernode::profile::Profile;

use crate::root;

#[test]
fn a_parameter_the_plan_does_not_read_moves_no_output() {
    let profile = Profile::default_profile();
    let mut skipped = 0;
    let mut names: Vec<_> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && !p.file_name().unwrap().to_string_lossy().starts_with("sweep-"))
        .collect();
    names.sort();
    for path in names {
        let sc = supernode::scenario::load(&path, &[]).unwrap();
        let base = serde_json::to_value(estimate(&sc, &profile).unwrap()).unwrap();
        for param in unread_params(&sc, &profile) {
            let mut nudged = profile.clone();
            let v = supernode::calibrate::params::get_param(&profile, &param).unwrap();
            assert!(nudged.set_param(&param, if v > 0.0 { v * 0.8 } else { 0.5 }), "{param}");
            let moved = serde_json::to_value(estimate(&sc, &nudged).unwrap()).unwrap();
            assert_eq!(moved, base, "{}: {param} is skipped but moves the estimate", path.display());
            skipped += 1;
        }
    }
    // The skip is not vacuous: exo runs do not read llama.cpp's launch cost, nor Macs GB10's.
    assert!(skipped >= 20, "only {skipped} skipped parameter re-runs");
}

#[test]
fn an_exo_run_skips_llama_cpp_parameters_and_keeps_its_own() {
    let profile = Profile::default_profile();
    let sc = supernode::scenario::load(&root().join("scenarios/geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml"), &[]).unwrap();
    let unread = unread_params(&sc, &profile);
    assert!(unread.contains(&"chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us".to_string()), "{unread:?}");
    for read in ["chips.m3-ultra.bw_eff_expert", "chips.m3-ultra.runtimes.mlx.kernel_launch_us", "moe.expert_popularity_sigma"] {
        assert!(!unread.contains(&read.to_string()), "{read} is read by an exo DeepSeek run: {unread:?}");
    }
}

/// The interval of a prediction that rests on parameters no row pinned (another chip's kernel
/// efficiencies, held at their priors) carries those priors' spread, as far as this profile's
/// own fitted priors moved: on a Mac mini M4 Pro (no fitted parameter) the prior term widens
/// the decode interval, more than it widens the same model's on an M3 Ultra (its efficiencies
/// fitted); without a fit report (no evidence of how far priors miss) there is no prior term.
#[test]
fn a_prediction_on_unfitted_parameters_carries_their_prior_spread() {
    use supernode::calibrate::interval::{PriorKind, intervals, prior_spread};
    let profile = Profile::default_profile();
    let spread = prior_spread(&profile).expect("the default profile was fitted");
    // Efficiencies (logit), multipliers and energies (log), microsecond costs (log).
    assert!(spread[&PriorKind::Efficiency] > 0.2 && spread[&PriorKind::Efficiency] < 1.5, "{spread:?}");
    assert!(spread[&PriorKind::Scale] > 0.05 && spread[&PriorKind::Scale] < spread[&PriorKind::Efficiency], "{spread:?}");
    assert!(spread[&PriorKind::Cost] > spread[&PriorKind::Scale], "{spread:?}");
    let without = Profile { fit: None, ..profile.clone() };
    assert!(prior_spread(&without).is_none());
    let dir = tempfile::tempdir().unwrap();
    let width = |node: &str, profile: &Profile| {
        let text = format!(
            "name = \"w\"\n[cluster]\nnode = \"{node}\"\ncount = 1\n[model]\nname = \"llama-3.1-8b\"\nquant = \"mlx-4bit\"\n\
             [engine]\nname = \"mlx-lm\"\n[workload]\nkind = \"generate\"\nprompt_tokens = 512\ngenerate_tokens = 128\n"
        );
        let path = crate::write_text(dir.path(), &format!("{node}.toml"), &text);
        let sc = supernode::scenario::load(&path, &[]).unwrap();
        let est = estimate(&sc, profile).unwrap();
        let iv = intervals(&sc, profile, &est)["decode_tokens_per_s"];
        assert!(iv.p5 < iv.p50 && iv.p50 < iv.p95, "{node}: {iv:?}");
        (iv.p95 / iv.p5).ln()
    };
    let widening = |node: &str| width(node, &profile) / width(node, &without);
    let (m4_pro, m3_ultra) = (widening("mac-mini-m4-pro-20c-64gb"), widening("m3-ultra-80c-512gb"));
    assert!(m4_pro > 1.1, "M4 Pro widened x{m4_pro:.3}");
    assert!(m4_pro > m3_ultra && m3_ultra >= 1.0, "M4 Pro x{m4_pro:.3}, M3 Ultra x{m3_ultra:.3}");
    assert!(width("mac-mini-m4-pro-20c-64gb", &profile) < 4.0_f64.ln());
}

/// A chip no row measured borrows a measured chip's fitted efficiencies, and its interval takes
/// them as guesses, with the prior spread: the M1 Max (it reads the M2 Ultra's parameters)
/// prefills Llama 3.1 8B under llama.cpp with a relatively wider interval than the M2 Ultra
/// itself, whose fitted GEMM efficiency pins its own.
#[test]
fn a_chip_that_borrows_fitted_parameters_takes_them_with_the_prior_spread() {
    use supernode::calibrate::interval::intervals;
    let profile = Profile::default_profile();
    let dir = tempfile::tempdir().unwrap();
    let width = |node: &str| {
        let text = format!(
            "name = \"w\"\n[cluster]\nnode = \"{node}\"\ncount = 1\n[model]\nname = \"llama-3.1-8b\"\nquant = \"q4_k_m\"\n\
             [engine]\nname = \"llama-cpp\"\n[workload]\nkind = \"generate\"\nprompt_tokens = 512\ngenerate_tokens = 128\n"
        );
        let path = crate::write_text(dir.path(), &format!("{node}.toml"), &text);
        let sc = supernode::scenario::load(&path, &[]).unwrap();
        let est = estimate(&sc, &profile).unwrap();
        let iv = intervals(&sc, &profile, &est)["prefill_tokens_per_s"];
        (iv.p95 / iv.p5).ln()
    };
    let (m1_max, m2_ultra) = (width("macbook-pro-m1-max-32c-64gb"), width("m2-ultra-76c-192gb"));
    assert!(m1_max > 1.2 * m2_ultra, "M1 Max {m1_max:.3}, M2 Ultra {m2_ultra:.3} (log widths)");
}

/// A cross-validation fold's interval of a published row adds the priors of what it reads and
/// no fold fits: for the GB10's gpt-oss llama.cpp decode (its MXFP4 kernel multiplier and
/// attention efficiency held at their priors) a positive variance on each side; none once every
/// parameter it reads counts as fitted.
#[test]
fn a_fold_interval_carries_the_priors_no_fold_fits() {
    use supernode::calibrate::interval::prior_row_variance;
    let profile = Profile::default_profile();
    let mut data = supernode::calibrate::Dataset::default();
    data.add_csv(&crate::measurements_csv(), &profile).unwrap();
    let i = data.targets.iter().position(|t| t.id == "n-gb10-gptoss120b-lcpp-tg32").unwrap();
    let (below, above) = prior_row_variance(&data, i, &profile, &[]);
    assert!(below > 0.0 && above > 0.0, "{below} {above}");
    use supernode::calibrate::interval::{CHIP_PRIOR_PARAMS, RUNTIME_PRIOR_PARAMS};
    let chip = CHIP_PRIOR_PARAMS.iter().map(|f| format!("chips.gb10.{f}"));
    let runtime = RUNTIME_PRIOR_PARAMS.iter().map(|f| format!("chips.gb10.runtimes.llama-cpp.{f}"));
    let all: Vec<String> = chip.into_iter().chain(runtime).collect();
    assert_eq!(prior_row_variance(&data, i, &profile, &all), (0.0, 0.0));
}
