//! What `calibrate` writes: the fitted profile's provenance (method, data, envelope) and, for
//! every parameter, its source, value, uncertainty and the data it came from: "fitted on
//! `<data>`" for fitted values, the base profile's source for the values it kept.

use std::collections::BTreeMap;

use super::dataset::Dataset;
use super::params::SEED_CHIP;
use crate::profile::{FitReport, HOST_CHIP, ParamSource, Profile, ProfileMeta, tied_paths};

/// How a profile was fitted, for its `[meta]`.
#[derive(Clone, Debug)]
pub struct FitContext<'a> {
    /// Profile name (the output file's stem).
    pub name: String,
    /// Date (ISO 8601).
    pub date: String,
    /// The data fitted on.
    pub data: &'a Dataset,
    /// Weight of the prior toward the base values.
    pub prior_weight: f64,
}

/// Completes a fitted profile: `[meta]` from the fit and its data, the fit report, and every
/// parameter's source (see [`param_sources`]).
pub fn describe_fit(fitted: &mut Profile, base: &Profile, report: &FitReport, ctx: &FitContext<'_>) {
    let cov = ctx.data.envelope();
    fitted.meta = ProfileMeta {
        name: ctx.name.clone(),
        method: format!(
            "fitted by `supernode calibrate` (Levenberg-Marquardt, {} parameters, {} measurements, robust (Huber) loss, prior weight {} toward the base profile's values)",
            report.params.len(),
            report.residuals.len(),
            ctx.prior_weight
        ),
        data: ctx.data.files.join(", "),
        date: ctx.date.clone(),
        calibrated_node_counts: cov.node_counts,
        calibrated_chips: cov.chips,
        calibrated_max_context: cov.max_context,
        calibrated_setups: cov.setups,
        calibrated_mechanisms: cov.mechanisms,
        calibrated_kernels: cov.kernels,
    };
    fitted.fit = Some(report.clone());
    fitted.sources = param_sources(fitted, base);
}

/// The source of every parameter of `fitted` (whose `fit` and `meta.data` say what was fitted
/// on what): fitted values with their standard errors; kept values with the base profile's
/// source (a harness host's with the source of the chip it was seeded from).
pub fn param_sources(fitted: &Profile, base: &Profile) -> BTreeMap<String, ParamSource> {
    let fitted_on = &fitted.meta.data;
    let base_data = || Some(base.meta.data.clone());
    let base_source = |path: &str| -> String {
        base.sources.get(path).map_or_else(|| format!("no source recorded in the base profile `{}`", base.meta.name), |s| s.source.clone())
    };
    let fit = fitted.fit.as_ref().map_or(&[][..], |f| &f.params[..]);
    let mut out = BTreeMap::new();
    for p in fitted.params() {
        let source = if let Some(f) = fit.iter().find(|f| tied_paths(&f.name).contains(&p.path)) {
            let tied = if f.name == p.path { String::new() } else { format!(" as `{}`, one value for all", f.name) };
            ParamSource {
                source: format!("fitted on {fitted_on}{tied}; started from {} ({})", f.initial, base_source(&p.path)),
                value: Some(p.value),
                std_error: f.std_error,
                data: Some(fitted_on.clone()),
                from_rows: Vec::new(),
            }
        } else if let Some(s) = base.sources.get(&p.path) {
            ParamSource { value: Some(p.value), data: s.data.clone().or_else(base_data), ..s.clone() }
        } else if let Some(rest) = p.path.strip_prefix(&format!("chips.{HOST_CHIP}.")) {
            let seed = format!("chips.{SEED_CHIP}.{rest}");
            let source = format!("not fitted: seeded from `{seed}` of the base profile ({})", base_source(&seed));
            ParamSource { source, value: Some(p.value), std_error: None, data: base_data(), from_rows: Vec::new() }
        } else {
            ParamSource { source: base_source(&p.path), value: Some(p.value), std_error: None, data: base_data(), from_rows: Vec::new() }
        };
        out.insert(p.path, source);
    }
    out
}

/// The text of a fitted profile file: a header saying how it was made and which parameters the
/// data did not constrain, then the profile.
pub fn profile_text(p: &Profile, dropped: &[String]) -> String {
    format!(
        "# Calibration profile written by `supernode calibrate` on {}.\n# Data: {}\n# Dropped (not constrained or not separable by the data): {}\n# [sources] gives every parameter's source, value, standard error (fitted values) and data.\n\n{}",
        p.meta.date,
        p.meta.data,
        if dropped.is_empty() { "none".to_string() } else { dropped.join(", ") },
        toml::to_string(p).expect("profile serializes")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped default keeps the sources `calibrate` writes: fitted values say what they were
    /// fitted on, the others carry the hand-set profile's source.
    #[test]
    fn the_default_profile_carries_what_calibrate_writes() {
        let default = Profile::default_profile();
        let hand_set = Profile::parse(include_str!("../../calibration/profiles/hand-set.toml"), "hand-set.toml").unwrap();
        assert_eq!(default.sources, param_sources(&default, &hand_set));
        assert_eq!(default.sources.len(), default.params().len());
        let s = &default.sources["chips.m3-ultra.bw_eff_dense"];
        assert!(s.source.starts_with("fitted on ") && s.std_error.is_some(), "{s:?}");
        assert_eq!(default.sources["comm.gpu_sync_default_us"].source, hand_set.sources["comm.gpu_sync_default_us"].source);
    }

    /// Prints the `[[meta.calibrated_setups]]` that `calibrate` writes for the rows the default
    /// profile was fitted on (its fit report's residual ids), to add to default.toml without a
    /// refit: `cargo test --release --lib print_default_calibrated_setups -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints TOML for calibration/profiles/default.toml"]
    fn print_default_calibrated_setups() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let default = Profile::default_profile();
        let ids: Vec<String> = default.fit.as_ref().unwrap().residuals.iter().map(|r| r.id.clone()).collect();
        let mut d = crate::calibrate::Dataset::default();
        d.add_csv(&root.join("../shared/data/measurements.csv"), &default).unwrap();
        let keep: Vec<bool> = d.targets.iter().map(|t| ids.contains(&t.id)).collect();
        assert_eq!(keep.iter().filter(|k| **k).count(), ids.len(), "every fitted row is in the CSV");
        #[derive(serde::Serialize)]
        struct Meta {
            calibrated_setups: Vec<crate::profile::CalibratedSetup>,
        }
        println!("{}", toml::to_string(&Meta { calibrated_setups: d.subset(&keep).envelope().setups }).unwrap());
    }

    /// Regenerates the sources of calibration/profiles/default.toml from its fit report and the
    /// hand-set profile without touching any value:
    /// `cargo test --release --lib regenerate_default_profile_sources -- --ignored`.
    #[test]
    #[ignore = "rewrites calibration/profiles/default.toml"]
    fn regenerate_default_profile_sources() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = root.join("calibration/profiles/default.toml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        // Profiles written before `collective_in_context_us` was required had it at 0.
        if !text.contains("collective_in_context_us") {
            text = text.replace("rpc_graph_node_bytes = 400.0\n", "rpc_graph_node_bytes = 400.0\ncollective_in_context_us = 0.0\n");
        }
        let mut p: Profile = toml::from_str(&text).unwrap();
        let before = p.params();
        let hand_set = Profile::load(&root.join("calibration/profiles/hand-set.toml")).unwrap();
        p.sources = param_sources(&p, &hand_set);
        let dropped: Vec<String> = text
            .lines()
            .find_map(|l| l.split_once("by the data): ").map(|x| x.1))
            .filter(|d| *d != "none")
            .map(|d| d.split(", ").map(String::from).collect())
            .unwrap_or_default();
        let out = profile_text(&p, &dropped);
        let again = Profile::parse(&out, "default.toml").unwrap();
        assert_eq!(again.params(), before, "values must not change");
        crate::util::write_atomic(&path, out.as_bytes()).unwrap();
    }
}
