//! Data sets: published rows and harness measurements behind one predictor, and the envelope
//! (node counts, context, chips) the data cover.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use super::fit::PRIOR_WEIGHT;
use super::harness::{HarnessFile, HarnessUse, SourceError, harness_id, harness_measured, read_harness};
use super::predict::predict_harness;
use super::target::{PredictError, Target};
use super::validate::{self, Prepared};
use crate::profile::{HOST_CHIP, Profile};

/// Where a target's prediction comes from.
#[derive(Clone, Debug)]
pub enum TargetSource {
    /// A published row (a scenario through the run estimator).
    Row(Box<Prepared>),
    /// A harness measurement (file, index into its benchmarks).
    Harness(Arc<HarnessFile>, usize),
}

/// Measurements with their predictors.
#[derive(Clone, Debug, Default)]
pub struct Dataset {
    /// Targets, in order.
    pub targets: Vec<Target>,
    /// How to predict each.
    pub sources: Vec<TargetSource>,
    /// Rows or measurements left out, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Input files.
    pub files: Vec<String>,
}

/// Node counts, the largest context and the chips a data set covers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    /// Node counts, ascending.
    pub node_counts: Vec<u32>,
    /// Largest context (prompt + generated tokens) of a published row.
    pub max_context: u64,
    /// Chips, sorted.
    pub chips: Vec<String>,
    /// Setups of the published rows with their largest concurrency, sorted.
    pub setups: Vec<crate::profile::CalibratedSetup>,
    /// Model mechanisms (`ModelSpec::mechanisms`) of the published rows, each with the kernel
    /// library that ran it, sorted.
    pub mechanisms: Vec<String>,
    /// Weight kernels the published rows streamed ([`crate::estimate::scenario_kernels`]), sorted.
    pub kernels: Vec<String>,
}

impl Dataset {
    /// Adds a measurement CSV (the format of shared/data/measurements.csv).
    pub fn add_csv(&mut self, path: &Path, profile: &Profile) -> Result<(), SourceError> {
        let rows =
            validate::read_csv(path).map_err(|e| SourceError::Format { path: path.display().to_string(), message: e.to_string() })?;
        let (prepared, skipped) = validate::prepare_in(&rows, profile, path.parent());
        for p in prepared {
            // A row not to be fitted is still predicted and scored: fits leave it out
            // ([`Dataset::fitted_only`], the cross-validation's training rows).
            self.targets.push(Target { id: p.row.id.clone(), measured: p.row.value, fitted: p.not_fitted.is_none() });
            self.sources.push(TargetSource::Row(Box::new(p)));
        }
        self.skipped.extend(skipped.into_iter().map(|s| (s.id, s.reason)));
        self.files.push(path.display().to_string());
        Ok(())
    }

    /// Adds the measurements of a harness file that are for `use_` (fit or validation targets).
    pub fn add_harness(&mut self, path: &Path, use_: HarnessUse) -> Result<(), SourceError> {
        let h = Arc::new(read_harness(path)?);
        for (i, b) in h.benchmarks.iter().enumerate() {
            if b.usage() == use_ {
                self.targets.push(Target { id: harness_id(b, i), measured: harness_measured(b), fitted: true });
                self.sources.push(TargetSource::Harness(h.clone(), i));
            } else if use_ == HarnessUse::Fit {
                self.skipped.push((harness_id(b, i), format!("{} measurement: a machine fact or a validation target, not fitted", b.kind)));
            }
        }
        self.files.push(path.display().to_string());
        Ok(())
    }

    /// Predicts target `i` under `profile`.
    pub fn predict_one(&self, i: usize, profile: &Profile) -> Result<f64, PredictError> {
        let id = || self.targets[i].id.clone();
        match &self.sources[i] {
            TargetSource::Row(p) => validate::predict(p, profile).map_err(|source| PredictError::Row { id: id(), source }),
            TargetSource::Harness(h, k) => {
                predict_harness(h, &h.benchmarks[*k], profile).map_err(|source| PredictError::Harness { id: id(), source })
            }
        }
    }

    /// Predicts every target under `profile`.
    pub fn predict(&self, profile: &Profile) -> Result<Vec<f64>, PredictError> {
        use rayon::prelude::*;
        // Independent predictions, collected in target order: identical at any thread count.
        (0..self.sources.len()).into_par_iter().map(|i| self.predict_one(i, profile)).collect()
    }

    /// Target `i` predicted at `predicted`, as a report row.
    pub fn validated(&self, i: usize, predicted: f64) -> validate::ValidatedRow {
        match &self.sources[i] {
            // Against the target's own measured value (the row's, unless a caller replaced it,
            // as synthetic-data checks do), so the report scores what the fit was given.
            TargetSource::Row(p) => {
                let mut v = validate::validated(p, predicted);
                let m = self.targets[i].measured;
                v.measured = m;
                v.error_percent = crate::util::round3((predicted - m) / m * 100.0);
                v
            }
            TargetSource::Harness(h, k) => validate::ValidatedRow {
                id: self.targets[i].id.clone(),
                metric: match h.benchmarks[*k].kind {
                    super::HarnessKind::E2eDecode => "decode_tokens_per_s".into(),
                    super::HarnessKind::E2eDecodeBatch => "aggregate_decode_tokens_per_s".into(),
                    _ => "prefill_tokens_per_s".into(),
                },
                measured: self.targets[i].measured,
                predicted: crate::util::round3(predicted),
                error_percent: crate::util::round3((predicted - self.targets[i].measured) / self.targets[i].measured * 100.0),
                assumptions: vec![],
                p5: None,
                p95: None,
            },
        }
    }

    /// The targets `keep` marks, with their sources (skipped rows and files as they are).
    pub fn subset(&self, keep: &[bool]) -> Dataset {
        let pick = |i: &usize| keep[*i];
        let idx: Vec<usize> = (0..self.targets.len()).filter(pick).collect();
        Dataset {
            targets: idx.iter().map(|&i| self.targets[i].clone()).collect(),
            sources: idx.iter().map(|&i| self.sources[i].clone()).collect(),
            skipped: self.skipped.clone(),
            files: self.files.clone(),
        }
    }

    /// The targets fits may use ([`Target::fitted`]): the others are appended to `skipped`, after
    /// the rows already there, with the reason they are not fitted.
    pub fn fitted_only(&self) -> Dataset {
        let keep: Vec<bool> = self.targets.iter().map(|t| t.fitted).collect();
        let mut d = self.subset(&keep);
        for (t, s) in self.targets.iter().zip(&self.sources).filter(|(t, _)| !t.fitted) {
            let reason = match s {
                TargetSource::Row(p) => p.not_fitted.clone().unwrap_or_default(),
                TargetSource::Harness(..) => String::new(),
            };
            d.skipped.push((t.id.clone(), reason));
        }
        d
    }

    /// The kernel library target `i` ran (`mlx`, `llama-cpp`, `cuda`): a row's engine's, and
    /// MLX for a harness measurement (the harness runs MLX's kernels).
    pub fn runtime_of(&self, i: usize) -> &'static str {
        match &self.sources[i] {
            TargetSource::Row(p) => p.scenario.engine.kind.runtime().id(),
            TargetSource::Harness(..) => crate::engine::Runtime::Mlx.id(),
        }
    }

    /// Whether any target is a published row.
    pub fn has_rows(&self) -> bool {
        self.sources.iter().any(|s| matches!(s, TargetSource::Row(_)))
    }

    /// Whether a fit target is a pipeline-parallel harness e2e decode (what pins
    /// `runtimes.mlx.stage_us`).
    pub fn has_pipeline_e2e(&self) -> bool {
        self.sources.iter().any(|s| match s {
            TargetSource::Harness(h, k) => {
                let b = &h.benchmarks[*k];
                b.kind == super::HarnessKind::E2eDecode && b.usage() == super::HarnessUse::Fit
            }
            TargetSource::Row(_) => false,
        })
    }

    /// Whether any target is a harness measurement.
    pub fn has_harness(&self) -> bool {
        self.sources.iter().any(|s| matches!(s, TargetSource::Harness(..)))
    }

    /// The prior weight `calibrate` uses unless told otherwise: [`PRIOR_WEIGHT`] when the data
    /// include published rows, whose parameters start from sourced values; 0 for harness files
    /// alone, whose host parameters start from another chip's values (a seed, not a belief), so
    /// a prior would only pull them toward the wrong machine.
    pub fn default_prior_weight(&self) -> f64 {
        if self.has_rows() { PRIOR_WEIGHT } else { 0.0 }
    }

    /// A copy without target `i`.
    pub fn without(&self, i: usize) -> Dataset {
        let mut d = self.clone();
        d.targets.remove(i);
        d.sources.remove(i);
        d
    }

    /// Node counts and the largest context the data cover; chips of the nodes.
    pub fn envelope(&self) -> Coverage {
        let mut counts = BTreeSet::new();
        let mut chips = BTreeSet::new();
        let mut ctx = 0;
        let mut setups: Vec<crate::profile::CalibratedSetup> = Vec::new();
        let mut mechanisms = BTreeSet::new();
        let mut kernels = BTreeSet::new();
        for s in &self.sources {
            match s {
                TargetSource::Row(p) => {
                    for setup in crate::estimate::scenario_setups(&p.scenario) {
                        match setups.iter_mut().find(|x| crate::estimate::same_setup(x, &setup)) {
                            Some(x) => x.max_concurrency = x.max_concurrency.max(setup.max_concurrency),
                            None => setups.push(setup),
                        }
                    }
                    counts.insert(p.scenario.nodes.len() as u32);
                    let runtime = p.scenario.engine.kind.runtime();
                    mechanisms.extend(p.scenario.model.mechanisms().into_iter().map(|m| crate::estimate::mechanism_on(m, runtime)));
                    if p.scenario.workload.kind != crate::scenario::WorkloadKind::Hpl {
                        kernels.extend(crate::estimate::scenario_kernels(&p.scenario));
                    }
                    chips.extend(p.scenario.nodes.iter().map(|n| n.chip.clone()));
                    let w = &p.scenario.workload;
                    ctx = ctx.max(w.context_tokens + w.prompt_tokens + w.generate_tokens);
                }
                TargetSource::Harness(h, _) => {
                    counts.insert(h.world_size);
                    chips.insert(HOST_CHIP.to_string());
                }
            }
        }
        setups.sort();
        Coverage {
            node_counts: counts.into_iter().collect(),
            max_context: ctx,
            chips: chips.into_iter().collect(),
            setups,
            mechanisms: mechanisms.into_iter().collect(),
            kernels: kernels.into_iter().collect(),
        }
    }
}
