//! Calibration: fit a profile's parameters to measurements by non-linear least squares
//! (Levenberg-Marquardt over the twin itself, Jacobian by finite differences), with parameter
//! uncertainties, per-measurement residuals and refusal of degenerate data.
//!
//! The residual of a measurement is the relative error of the twin's prediction, so a fit
//! minimises exactly what `validate` reports. Parameters are fitted in log space (all of them are
//! positive: efficiencies, costs in microseconds, watts), efficiencies in logit space.
//!
//! - [`fit`](mod@fit): the least-squares problem, robust rounds, prior, identifiability.
//! - [`cv`]: fast grouped cross-validation, the parameter budget and the fit's uncertainty.
//! - [`interval`]: prediction intervals of `run`'s headline outputs.
//! - [`params`]: parameter paths, free-space transforms, default parameter sets.
//! - [`harness`]: harness files, measurement kinds, the host as a node and a fabric.
//! - [`predict`]: each harness measurement predicted through the estimator's entry points.
//! - [`dataset`]: published rows and harness measurements behind one predictor.
//! - [`target`]: a measurement to fit, and why its prediction failed.
//! - [`provenance`]: the fitted profile's metadata and every parameter's source.
//! - [`validate`]: published rows as scenarios, and the validation report.
//! - [`llama_bench`]: llama-bench output as measurement rows.

pub mod batched_bench;
pub mod benchy;
pub mod cv;
pub mod dataset;
pub mod exo_bench;
pub mod fit;
pub mod harness;
pub mod interval;
pub mod llama_bench;
pub mod mlx_bench;
pub mod params;
pub mod predict;
pub mod provenance;
pub mod serve_bench;
pub mod target;
pub mod validate;

pub use crate::profile::{FitReport, FittedParam, HOST_CHIP, Residual};
pub use dataset::{Coverage, Dataset, TargetSource};
pub use fit::{PRIOR_WEIGHT, Predictor, ROBUST_ROUNDS, fit, fit_toward, fit_with, fit_with_prior, parse_prior_weight};
pub use harness::{
    HarnessBench, HarnessFile, HarnessKind, HarnessUse, SourceError, harness_id, harness_measured, host_fabric, host_node,
    pace_drift_percent, pace_factors, read_harness,
};
pub use params::{
    APPLE_DENSE_STREAM, APPLE_WIDE_STREAM, get_param, harness_params, published_params, set_params, split_param_list, with_host_chip,
};
pub use predict::{HarnessError, e2e_model, predict_harness};
pub use target::{PredictError, Target};

use crate::profile::Profile;

/// Errors that stop a fit.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CalibrateError {
    /// Fewer measurements than parameters.
    #[error(
        "too few measurements: {points} for {params} parameters (need at least {params}); add measurements or fit fewer parameters with --params"
    )]
    TooFewPoints {
        /// Measurements.
        points: usize,
        /// Parameters.
        params: usize,
    },
    /// A measurement is NaN, infinite, zero or negative.
    #[error("measurement `{id}` has an unusable value {value}; remove or fix the row")]
    BadValue {
        /// Measurement id.
        id: String,
        /// Value.
        value: f64,
    },
    /// A parameter path does not exist in the profile.
    #[error("unknown parameter `{0}` (use a dotted path into the profile, e.g. chips.m3-ultra.bw_eff_dense)")]
    UnknownParam(String),
    /// A parameter is a count, which a least-squares fit cannot move.
    #[error("parameter `{0}` is a count and cannot be fitted; drop it from --params")]
    Discrete(String),
    /// A parameter is not positive (cannot be fitted in log space).
    #[error("parameter `{name}` starts at {value}; fitted parameters must be positive")]
    NonPositive {
        /// Name.
        name: String,
        /// Value.
        value: f64,
    },
    /// The data do not constrain a parameter.
    #[error(
        "the measurements do not constrain `{0}` (the prediction does not change with it); drop it from --params or add measurements that exercise it"
    )]
    Unconstrained(String),
    /// The data cannot separate parameters.
    #[error(
        "the measurements cannot separate {names} (collinear: e.g. all sizes equal); add measurements at other sizes or fit fewer parameters"
    )]
    Collinear {
        /// The parameters involved, for the message.
        names: String,
        /// The involved parameter listed last in the fit (dropped first when parameters were chosen automatically).
        last: String,
    },
    /// The prediction failed for some parameter values.
    #[error("prediction failed during the fit: {0}")]
    Prediction(String),
}

/// Fits `params` (or the defaults for the data) and returns the fitted profile. With default
/// parameters, those the data do not constrain, and the later one of a pair the data cannot
/// separate, are dropped (kept as they are, and listed).
/// `prior_weight` is the weight of the prior toward the base values ([`PRIOR_WEIGHT`] by default).
pub fn calibrate(
    data: &Dataset,
    base: &Profile,
    params: Option<Vec<String>>,
    prior_weight: f64,
) -> Result<(Profile, FitReport, Vec<String>), CalibrateError> {
    let (mut fitted, report, dropped) = calibrate_from_starts(data, base, params, prior_weight)?;
    // Parameters left out of the fit keep their prior exactly, including those given a positive
    // start only so that they could be tried in log space (a 0 host cost started at 100 us).
    // A tied parameter's members go back to their own priors.
    for p in dropped.iter().flat_map(|p| crate::profile::tied_paths(p)) {
        if let Some((v, _)) = base.param(&p) {
            fitted.set_param(&p, v);
        }
    }
    Ok((fitted, report, dropped))
}

/// [`calibrate`] before the parameters it dropped are put back to their priors.
fn calibrate_from_starts(
    data: &Dataset,
    base: &Profile,
    params: Option<Vec<String>>,
    prior_weight: f64,
) -> Result<(Profile, FitReport, Vec<String>), CalibrateError> {
    let explicit = params.is_some();
    let mut params = params.unwrap_or_else(|| default_params(data));
    // Costs are fitted in log space and need a positive start: a collective's in-context cost is 0
    // in profiles fitted without segment chains, so a harness fit starts it at 10 us.
    let mut base = base.clone();
    if params.iter().any(|p| p == "comm.collective_in_context_us") && base.comm.collective_in_context_us <= 0.0 {
        base.comm.collective_in_context_us = 10.0;
    }
    // Likewise a per-stage cost is 0 where no pipeline case was fitted, and a host cost per step
    // or per sequence where no serving row was: start them at 100 us.
    let host_cost = |p: &str| [".stage_us", ".host_per_step_us", ".host_per_seq_us"].iter().any(|s| p.ends_with(s));
    for p in params.iter().filter(|p| host_cost(p)) {
        if base.param(p).is_some_and(|(v, _)| v <= 0.0) {
            base.set_param(p, 100.0);
        }
    }
    let base = &base;
    let mut dropped = Vec::new();
    let predictor = |p: &Profile| data.predict(p);
    if !explicit {
        // Parameters no measurement depends on (another chip's, a fabric nobody used) are left
        // out before counting points against parameters; so is, with published rows, a parameter
        // only one row moves (held at its sourced prior: the parameter budget).
        let min_rows = if data.has_rows() { cv::MIN_ROWS_PER_PARAM } else { 1 };
        let (kept, idle) = fit::moving_params(base, params, &predictor, min_rows);
        params = kept;
        dropped.extend(idle);
    }
    loop {
        let drop = match fit_with_prior(base, &params, &data.targets, &predictor, ROBUST_ROUNDS, prior_weight) {
            Err(CalibrateError::Unconstrained(p) | CalibrateError::UnknownParam(p)) if !explicit => p,
            // Parameters chosen automatically that the data cannot tell apart: keep the one
            // listed first (efficiencies come before per-call costs) and leave the other as is.
            Err(CalibrateError::Collinear { last, .. }) if !explicit && !last.is_empty() => last,
            Ok((prof, rep)) if !explicit => {
                // A parameter that fewer than `min_rows` rows move materially both at its prior
                // and at the fit is not constrained by the data: it goes back to its prior
                // exactly (the weak prior alone would let it drift with the robust weights).
                let min_rows = if data.has_rows() { cv::MIN_ROWS_PER_PARAM } else { 1 };
                let idle: Vec<String> = params
                    .iter()
                    .filter(|p| {
                        let few = |at: &Profile| fit::material_rows(at, p, &predictor).is_some_and(|n| n < min_rows);
                        few(&prof) && few(base)
                    })
                    .cloned()
                    .collect();
                if idle.is_empty() || idle.len() == params.len() {
                    return Ok((prof, rep, dropped));
                }
                params.retain(|p| !idle.contains(p));
                dropped.extend(idle);
                continue;
            }
            other => return other.map(|(prof, rep)| (prof, rep, dropped)),
        };
        params.retain(|x| *x != drop);
        dropped.push(drop);
    }
}

/// The parameters `calibrate` fits by default for `data`: [`published_params`] for published
/// rows, [`harness_params`] for harness measurements.
pub fn default_params(data: &Dataset) -> Vec<String> {
    let mut v = Vec::new();
    if data.has_rows() {
        v.extend(published_params());
    }
    if data.has_harness() {
        // The per-stage cost is fitted only from a pipeline e2e case.
        v.extend(harness_params().into_iter().filter(|p| data.has_pipeline_e2e() || !p.ends_with(".stage_us")));
    }
    v
}

/// What moves one fitted parameter: the ids of the rows, and the kernel libraries they ran.
pub type Movers = (Vec<String>, Vec<String>);

/// The uncertainty of a fitted profile (for prediction intervals) and, per fitted parameter, the
/// ids of the rows that move it and their kernel libraries: the twin linearised at the fit, the
/// parameter covariance and the per-kind scatter of leave-one-out residuals (see
/// [`cv::Linearized::uncertainty`]).
pub fn fit_uncertainty(
    data: &Dataset,
    fitted: &Profile,
    report: &FitReport,
    prior_weight: f64,
) -> Result<(crate::profile::Uncertainty, Vec<Movers>), CalibrateError> {
    let paths: Vec<String> = report.params.iter().map(|p| p.name.clone()).collect();
    let center: Vec<f64> = report.params.iter().map(|p| p.initial).collect();
    let lin = cv::Linearized::new(data, fitted, paths, &center, prior_weight)?;
    let all = vec![true; lin.rows()];
    let at = cv::full_fit(&lin, 0)?;
    let u = lin.uncertainty(&at, &all);
    let rows = lin
        .movers()
        .iter()
        .map(|rows| {
            let ids = rows.iter().map(|&i| data.targets[i].id.clone()).collect();
            let mut runtimes: Vec<String> = rows.iter().map(|&i| data.runtime_of(i).to_string()).collect();
            runtimes.sort_unstable();
            runtimes.dedup();
            (ids, runtimes)
        })
        .collect();
    Ok((u, rows))
}
