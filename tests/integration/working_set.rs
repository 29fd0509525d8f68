//! The fall of weight-streaming bandwidth with the resident set (`bw_ws_per_tb`): it moves a big
//! model more than a small one, by the documented form, and `calibrate` recovers it from rows of
//! different sizes.

use supernode::calibrate::{self, Dataset, set_params};
use supernode::profile::Profile;

use crate::measurements_csv;

const K: &str = "chips.m3-ultra.bw_ws_per_tb";
const EFF: &str = "chips.m3-ultra.bw_eff_dense";

/// The default profile without jitter and without a fit report.
fn start() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p.fit = None;
    p.uncertainty = None;
    p
}

/// The published single-node dense llama.cpp/ollama M3 Ultra decode rows (3B, 70B, 405B).
fn dense_rows(profile: &Profile) -> Dataset {
    let mut d = Dataset::default();
    d.add_csv(&measurements_csv(), profile).unwrap();
    let keep: Vec<bool> = d
        .targets
        .iter()
        .map(|t| ["b17-llama32-3b-tg", "b17-llama33-70b-tg", "aib-m3u-70b", "aib-m3u-405b"].contains(&t.id.as_str()))
        .collect();
    let d = d.subset(&keep);
    assert_eq!(d.targets.len(), 4);
    d
}

#[test]
fn the_working_set_term_slows_a_405b_more_than_a_70b() {
    let s = start();
    let d = dense_rows(&s);
    let at = |k: f64| set_params(&s, &[K.to_string()], &[k]).unwrap();
    let idx = |id: &str| d.targets.iter().position(|t| t.id == id).unwrap();
    let (i70, i405) = (idx("aib-m3u-70b"), idx("aib-m3u-405b"));
    let slow = |i: usize| d.predict_one(i, &at(0.0)).unwrap() / d.predict_one(i, &at(2.0)).unwrap();
    // 42.5 GB and 243 GB resident: weight streaming takes 1.085 and 1.486 times as long.
    let (s70, s405) = (slow(i70), slow(i405));
    assert!(s70 > 1.04 && s70 < 1.085, "70B slowed {s70}");
    assert!(s405 > 1.4 && s405 < 1.486, "405B slowed {s405}");
}

#[test]
fn calibrate_recovers_the_working_set_term_from_rows_of_different_sizes() {
    let s = start();
    let truth = set_params(&s, &[K.to_string(), EFF.to_string()], &[1.6, 0.8]).unwrap();
    let mut d = dense_rows(&s);
    for i in 0..d.targets.len() {
        d.targets[i].measured = d.predict_one(i, &truth).unwrap();
    }
    // Started a factor of 3 low, with the efficiency at the truth (the 3B and 70B rows pin it).
    let begin = set_params(&truth, &[K.to_string()], &[0.5]).unwrap();
    let (fitted, report, _) = calibrate::calibrate(&d, &begin, Some(vec![K.to_string()]), 0.0).unwrap();
    let k = calibrate::get_param(&fitted, K).unwrap();
    assert!((k / 1.6 - 1.0).abs() < 0.03, "fitted {K} = {k}, truth 1.6");
    assert!(report.rms_percent < 0.3, "{}", report.rms_percent);
}
