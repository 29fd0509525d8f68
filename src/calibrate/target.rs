//! What a fit is fitted to: the measurements ([`Target`]) and why one could not be predicted
//! ([`PredictError`]). Its own file because both the fit (its predictor's error) and the data
//! sets (their targets) need them, and neither should import the other for it.

use super::predict::HarnessError;
use super::validate::RowError;

/// One measurement for a fit: an id and a measured value; the prediction comes from the caller.
#[derive(Clone, Debug)]
pub struct Target {
    /// Id.
    pub id: String,
    /// Measured value (must be positive and finite).
    pub measured: f64,
    /// Whether fits use it: a row the twin reads with a later software build's kernels than
    /// it measured is predicted and scored, never fitted
    /// ([`super::validate::Prepared::not_fitted`]).
    pub fitted: bool,
}

/// Why a target could not be predicted.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    /// A published row.
    #[error("{id}: {source}")]
    Row {
        /// Row id.
        id: String,
        /// Cause.
        source: RowError,
    },
    /// A harness measurement.
    #[error("{id}: {source}")]
    Harness {
        /// Measurement id.
        id: String,
        /// Cause.
        source: HarnessError,
    },
}
