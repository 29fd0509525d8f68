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
    for read in ["chips.m3-ultra.bw_eff_expert", "chips.m3-ultra.runtimes.mlx.kernel_launch_us", "moe.expert_popularity_exponent"] {
        assert!(!unread.contains(&read.to_string()), "{read} is read by an exo DeepSeek run: {unread:?}");
    }
}
