//! Fast cross-validation and the fit's own uncertainty, from the twin linearised once at the fit.
//!
//! A full refit per held-out group (Levenberg-Marquardt with a finite-difference Jacobian through
//! the whole twin) costs minutes per fold. Here the Jacobian of every row's relative residual is
//! taken once at the full fit (one prediction per parameter, each row's column computed through
//! the same estimator), and each fold starts from the full fit (warm start) and takes a few
//! Gauss-Newton steps with that Jacobian (a chord method): the step solves the same robust,
//! prior-regularised least-squares problem as [`super::fit()`] on the linear model, and the
//! residuals it is taken from are the twin's own, re-predicted after each step for the rows the
//! step moves (a row's prediction depends only on the parameters whose Jacobian column touches
//! it). Folds run in parallel; each fold is sequential arithmetic and results are collected in
//! fold order, so they are identical at any thread count.
//!
//! The same linearisation gives the parameter budget (a parameter that fewer than two rows move
//! is held at its prior), the parameter covariance and the per-kind scatter of standardised
//! residuals that prediction intervals combine.

use std::collections::BTreeMap;

use nalgebra::{DMatrix, DVector};

use super::CalibrateError;
use super::dataset::{Dataset, TargetSource};
use super::fit::{FD_STEP, ROBUST_ROUNDS, huber_loss, huber_residual_variance, huber_threshold};
pub use super::fit::{MATERIAL_ELASTICITY, moves_materially};
use super::params::{from_free, get_param, is_fraction, set_params, to_free};
use crate::profile::{Profile, Uncertainty};

pub use crate::util::Z90;

/// Gauss-Newton steps a fold takes from the full fit at most.
pub const FOLD_STEPS: usize = 3;

/// A fold stops early when no free variable moved by more than this (0.05% of a value).
const STEP_TOL: f64 = 5e-4;

/// Halvings of a fold's step before it stops (the step must lower the fold's objective).
const LINE_SEARCH_HALVINGS: usize = 3;

/// Rows a parameter must move to be fitted; with fewer it is held at its prior.
pub const MIN_ROWS_PER_PARAM: usize = 2;

/// How rows are grouped for cross-validation: each group is left out of the fit in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Grouping {
    /// Each row alone (leave-one-out).
    Row,
    /// All rows of a model.
    Model,
    /// All rows of an engine (runtime).
    Engine,
    /// All rows of a system (node family).
    System,
}

impl Grouping {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Grouping::Row => "row",
            Grouping::Model => "model",
            Grouping::Engine => "engine",
            Grouping::System => "system",
        }
    }

    /// The group of target `i` of `data` (harness measurements are each their own group).
    pub fn key(self, data: &Dataset, i: usize) -> String {
        match (&data.sources[i], self) {
            (TargetSource::Row(p), Grouping::Model) => p.row.model.clone(),
            (TargetSource::Row(p), Grouping::Engine) => p.row.engine.clone(),
            (TargetSource::Row(p), Grouping::System) => p.row.system.clone(),
            _ => data.targets[i].id.clone(),
        }
    }
}

/// The measurement kind of target `i` (its metric), which picks the residual scatter of its
/// prediction interval.
pub fn kind_of(data: &Dataset, i: usize) -> String {
    match &data.sources[i] {
        // A time to first token is a prefill's time: its interval uses the prefill scatter
        // (`interval::kinds_of`).
        TargetSource::Row(p) if matches!(p.row.metric.as_str(), "ttft_s" | "ttft_p50_s" | "ttft_p99_s") => "prefill_tokens_per_s".into(),
        // A time per output token is a decode step's time: the decode scatter.
        TargetSource::Row(p)
            if matches!(p.row.metric.as_str(), "tpot_ms" | "tpot_p50_ms" | "tpot_p99_ms" | "itl_p50_ms" | "itl_p99_ms") =>
        {
            "decode_tokens_per_s".into()
        }
        // Requests a second follow the aggregate rate they are completed at.
        TargetSource::Row(p) if p.row.metric == "requests_per_s" => "aggregate_decode_tokens_per_s".into(),
        TargetSource::Row(p) => p.row.metric.clone(),
        TargetSource::Harness(h, k) => match h.benchmarks[*k].kind {
            super::HarnessKind::E2eDecode => "decode_tokens_per_s".into(),
            super::HarnessKind::E2ePrefill => "prefill_tokens_per_s".into(),
            super::HarnessKind::E2eDecodeBatch => "aggregate_decode_tokens_per_s".into(),
            other => other.id().to_string(),
        },
    }
}

/// The twin linearised at a fit over `paths`.
pub struct Linearized<'a> {
    data: &'a Dataset,
    base: Profile,
    /// Fitted parameters (dotted paths).
    pub paths: Vec<String>,
    fractions: Vec<bool>,
    /// Free variables at the linearisation point.
    x: DVector<f64>,
    /// Free variables of the prior's centre (the sourced starting values).
    center: DVector<f64>,
    prior_weight: f64,
    /// Relative residuals (predicted - measured) / measured at the linearisation point.
    r: DVector<f64>,
    /// d(relative residual) / d(free variable), one row per target.
    jac: DMatrix<f64>,
    /// Rows each parameter moves.
    movers: Vec<Vec<usize>>,
    /// Twin predictions evaluated so far (all rows count one each).
    pub evaluations: std::sync::atomic::AtomicUsize,
    /// Per row, the variance (log units) of the priors of the parameters it reads that no fold
    /// fits ([`super::interval::prior_row_variance`]): part of every fold's interval of it.
    prior_var: Vec<(f64, f64)>,
    /// Per parameter, the spread of its kind's priors (free units, [`super::interval::prior_spread`]):
    /// the uncertainty a fold that holds it at its prior adds to the rows it moves.
    spread: Vec<f64>,
}

/// A fold's result: free variables, residuals of every row at them, which parameters were held.
#[derive(Clone, Debug)]
pub struct FoldFit {
    /// Free variables.
    pub x: DVector<f64>,
    /// Relative residuals of every row (held-out rows included) at `x`.
    pub r: DVector<f64>,
    /// Parameters held at the prior (fewer than [`MIN_ROWS_PER_PARAM`] training rows move them
    /// materially, [`MATERIAL_ELASTICITY`]).
    pub held: Vec<bool>,
    /// Gauss-Newton steps taken.
    pub steps: usize,
}

fn pred_err(e: impl std::fmt::Display) -> CalibrateError {
    CalibrateError::Prediction(e.to_string())
}

impl<'a> Linearized<'a> {
    /// Linearises the twin at `profile` over `paths`, with a prior of `prior_weight` toward
    /// `center` (the sourced starting values, one per path). Costs one prediction of every row
    /// per parameter, plus one, plus one per parameter away from its prior's centre.
    pub fn new(
        data: &'a Dataset,
        profile: &Profile,
        paths: Vec<String>,
        center: &[f64],
        prior_weight: f64,
    ) -> Result<Self, CalibrateError> {
        let fractions: Vec<bool> = paths.iter().map(|p| is_fraction(profile, p)).collect();
        let mut xs = Vec::with_capacity(paths.len());
        for p in &paths {
            xs.push(get_param(profile, p).ok_or_else(|| CalibrateError::UnknownParam(p.clone()))?);
        }
        let x = DVector::from_iterator(paths.len(), xs.iter().zip(&fractions).map(|(v, f)| to_free(*f, *v)));
        let center = DVector::from_iterator(paths.len(), center.iter().zip(&fractions).map(|(v, f)| to_free(*f, *v)));
        let m = data.targets.len();
        let mut lin = Linearized {
            data,
            base: profile.clone(),
            paths,
            fractions,
            x,
            center,
            prior_weight,
            r: DVector::zeros(m),
            jac: DMatrix::zeros(m, 0),
            movers: Vec::new(),
            evaluations: Default::default(),
            prior_var: Vec::new(),
            spread: Vec::new(),
        };
        let all: Vec<usize> = (0..m).collect();
        let p0 = lin.predict_rows(&lin.x.clone(), &all)?;
        lin.r = DVector::from_iterator(m, (0..m).map(|i| lin.rel(i, p0[i])));
        let n = lin.paths.len();
        lin.jac = DMatrix::zeros(m, n);
        for k in 0..n {
            let mut xp = lin.x.clone();
            xp[k] += FD_STEP;
            let pk = lin.predict_rows(&xp, &all)?;
            // A row moves the parameter materially where it is (the local elasticity) or over
            // the way back to its prior's centre: a fitted value where the rows' response has
            // flattened (an expert-popularity skew past which coverage saturates) is still
            // what those rows say, not a parameter no row moves.
            let back = (lin.x[k] - lin.center[k]).abs();
            let pc = if back > FD_STEP {
                let mut xc = lin.x.clone();
                xc[k] = lin.center[k];
                Some(lin.predict_rows(&xc, &all)?)
            } else {
                None
            };
            let mut rows = Vec::new();
            for i in 0..m {
                if (pk[i] / p0[i] - 1.0).abs() > 1e-9 {
                    lin.jac[(i, k)] = (pk[i] - p0[i]) / (FD_STEP * lin.data.targets[i].measured);
                }
                if moves_materially(p0[i], pk[i], FD_STEP) || pc.as_ref().is_some_and(|pc| moves_materially(p0[i], pc[i], back)) {
                    rows.push(i);
                }
            }
            lin.movers.push(rows);
        }
        let spreads = super::interval::prior_spread(profile).unwrap_or_default();
        lin.spread =
            lin.paths.iter().map(|p| super::interval::PriorKind::of(p).and_then(|k| spreads.get(&k).copied()).unwrap_or(0.0)).collect();
        lin.prior_var = {
            use rayon::prelude::*;
            // Independent per row, collected in row order: the same at any thread count.
            (0..m).into_par_iter().map(|i| super::interval::prior_row_variance(data, i, profile, &lin.paths)).collect()
        };
        Ok(lin)
    }

    fn rel(&self, i: usize, pred: f64) -> f64 {
        let t = self.data.targets[i].measured;
        (pred - t) / t
    }

    /// Values of the parameters at free variables `x`.
    pub fn values(&self, x: &DVector<f64>) -> Vec<f64> {
        x.iter().zip(&self.fractions).map(|(v, f)| from_free(*f, *v)).collect()
    }

    /// The profile at free variables `x`.
    pub fn profile_at(&self, x: &DVector<f64>) -> Result<Profile, CalibrateError> {
        set_params(&self.base, &self.paths, &self.values(x))
    }

    /// Twin predictions of `rows` at `x` (in `rows` order; rows predicted in parallel).
    fn predict_rows(&self, x: &DVector<f64>, rows: &[usize]) -> Result<Vec<f64>, CalibrateError> {
        use rayon::prelude::*;
        let p = self.profile_at(x)?;
        self.evaluations.fetch_add(rows.len(), std::sync::atomic::Ordering::Relaxed);
        let out: Vec<f64> = rows.par_iter().map(|&i| self.data.predict_one(i, &p).map_err(pred_err)).collect::<Result<_, _>>()?;
        let full = rows.iter().zip(&out).fold(vec![f64::NAN; self.data.targets.len()], |mut v, (&i, &y)| {
            v[i] = y;
            v
        });
        if out.iter().any(|v| !v.is_finite() || *v <= 0.0) {
            return Err(CalibrateError::Prediction("non-finite or non-positive prediction".into()));
        }
        Ok(full)
    }

    /// The rows each parameter moves (by index), in parameter order.
    pub fn movers(&self) -> &[Vec<usize>] {
        &self.movers
    }

    /// Number of targets.
    pub fn rows(&self) -> usize {
        self.data.targets.len()
    }

    /// Parameters held at their prior when fitting on `train`: fewer than
    /// [`MIN_ROWS_PER_PARAM`] training rows move them materially ([`MATERIAL_ELASTICITY`]).
    pub fn budget(&self, train: &[bool]) -> Vec<bool> {
        self.movers.iter().map(|rows| rows.iter().filter(|&&i| train[i]).count() < MIN_ROWS_PER_PARAM).collect()
    }

    /// The parameters `x_new` with the residuals `r` re-predicted where they move: rows no moved
    /// parameter touches keep their prediction; the rest are re-predicted (whether a parameter
    /// moved is judged against the linearisation point, not the previous step, so the set stays
    /// right).
    fn moved(&self, x_new: &DVector<f64>, r: &DVector<f64>) -> Result<(DVector<f64>, DVector<f64>), CalibrateError> {
        let changed: Vec<usize> = (0..x_new.len()).filter(|&k| x_new[k] != self.x[k]).collect();
        let mut rows: Vec<usize> = changed.iter().flat_map(|&k| self.movers[k].iter().copied()).collect();
        rows.sort_unstable();
        rows.dedup();
        let p = self.predict_rows(x_new, &rows)?;
        let mut r_new = r.clone();
        for &i in &rows {
            r_new[i] = self.rel(i, p[i]);
        }
        Ok((x_new.clone(), r_new))
    }

    /// The objective a fold's steps lower: the training rows' Huber loss of their relative
    /// residuals at threshold `c` ([`huber_loss`], the robust loss [`Self::step`]'s reweighting
    /// minimises) plus the prior on the fitted parameters.
    fn objective(&self, x: &DVector<f64>, r: &DVector<f64>, train: &[bool], held: &[bool], c: f64) -> f64 {
        let fit: f64 = (0..r.len()).filter(|&i| train[i]).map(|i| huber_loss(r[i], c)).sum();
        let pw2 = self.prior_weight * self.prior_weight;
        let prior: f64 = (0..x.len()).filter(|&k| !held[k]).map(|k| (x[k] - self.center[k]).powi(2)).sum();
        fit + pw2 * prior
    }

    /// One robust, prior-regularised Gauss-Newton step from `x` with residuals `r` on the rows
    /// `train` marks; held parameters go to the prior's centre. Iteratively reweighted as the
    /// full fit is (weights `1 / max(|residual|, c)`, [`ROBUST_ROUNDS`] rounds).
    fn step(&self, x: &DVector<f64>, r: &DVector<f64>, train: &[bool], held: &[bool], c: f64) -> DVector<f64> {
        let n = self.paths.len();
        let free: Vec<usize> = (0..n).filter(|&k| !held[k]).collect();
        let mut d = DVector::zeros(n);
        for k in (0..n).filter(|&k| held[k]) {
            d[k] = self.center[k] - x[k];
        }
        let rows: Vec<usize> = (0..r.len()).filter(|&i| train[i]).collect();
        // Residuals after the held parameters' move.
        let r0: Vec<f64> = rows.iter().map(|&i| r[i] + (0..n).filter(|&k| held[k]).map(|k| self.jac[(i, k)] * d[k]).sum::<f64>()).collect();
        let mut w = vec![1.0; rows.len()];
        let pw2 = self.prior_weight * self.prior_weight;
        let nf = free.len();
        if nf == 0 {
            return d;
        }
        for _ in 0..=ROBUST_ROUNDS {
            let mut a = DMatrix::<f64>::zeros(nf, nf);
            let mut b = DVector::<f64>::zeros(nf);
            for (t, &i) in rows.iter().enumerate() {
                for (p, &kp) in free.iter().enumerate() {
                    let jp = self.jac[(i, kp)];
                    if jp == 0.0 {
                        continue;
                    }
                    b[p] -= w[t] * jp * r0[t];
                    for (q, &kq) in free.iter().enumerate() {
                        a[(p, q)] += w[t] * jp * self.jac[(i, kq)];
                    }
                }
            }
            for (p, &k) in free.iter().enumerate() {
                a[(p, p)] += pw2.max(1e-10);
                b[p] -= pw2 * (x[k] - self.center[k]);
            }
            let sol = solve_spd(a, &b);
            for (p, &k) in free.iter().enumerate() {
                d[k] = sol[p];
            }
            for (t, &i) in rows.iter().enumerate() {
                let lin = r0[t] + free.iter().map(|&k| self.jac[(i, k)] * d[k]).sum::<f64>();
                w[t] = 1.0 / lin.abs().max(c);
            }
        }
        d
    }

    /// Fits on the rows `train` marks: warm start, at most `steps`
    /// Gauss-Newton steps with the cached Jacobian, each followed by a twin prediction of the
    /// rows (training and held out) that the step's moved parameters touch.
    /// `start` is the warm start (the full fit); `None` starts at the linearisation point.
    pub fn refit(&self, train: &[bool], steps: usize, start: Option<&FoldFit>) -> Result<FoldFit, CalibrateError> {
        let held = self.budget(train);
        let (mut x, mut r) = start.map_or_else(|| (self.x.clone(), self.r.clone()), |s| (s.x.clone(), s.r.clone()));
        let mut taken = 0;
        // Held parameters go to their prior's centre first, whatever that costs the fit; the
        // steps then move the free ones.
        let to_center: Vec<usize> = (0..x.len()).filter(|&k| held[k] && x[k] != self.center[k]).collect();
        if !to_center.is_empty() {
            let mut x_new = x.clone();
            for &k in &to_center {
                x_new[k] = self.center[k];
            }
            (x, r) = self.moved(&x_new, &r)?;
        }
        // The robust loss's threshold, from the training rows at the warm start: fixed over the
        // fold's steps, so that the line search compares one objective.
        let c = huber_threshold((0..r.len()).filter(|&i| train[i]).map(|i| r[i]));
        let mut cost = self.objective(&x, &r, train, &held, c);
        'steps: for _ in 0..steps {
            let mut d = self.step(&x, &r, train, &held, c);
            taken += 1;
            // The Jacobian is the full fit's: far from it a step can overshoot. A step that
            // does not lower the fold's objective (as re-predicted) is halved, at most
            // LINE_SEARCH_HALVINGS times; then the fold stops where it is.
            for halving in 0..=LINE_SEARCH_HALVINGS {
                let (x_new, r_new) = self.moved(&(&x + &d), &r)?;
                let next = self.objective(&x_new, &r_new, train, &held, c);
                if next <= cost {
                    (x, r, cost) = (x_new, r_new, next);
                    break;
                }
                if halving == LINE_SEARCH_HALVINGS {
                    break 'steps;
                }
                d *= 0.5;
            }
            if d.amax() < STEP_TOL {
                break;
            }
        }
        Ok(FoldFit { x, r, held, steps: taken })
    }

    /// The uncertainty of a fit on the rows `train` marks at `fold`: parameter covariance
    /// `s^2 (J'J + prior)^-1` over the fitted (not held) parameters, with `s^2` the robust
    /// fit's residual variance per degree of freedom ([`huber_residual_variance`]), and per
    /// kind the RMS of the training rows' standardised log residuals `r_i / sqrt(1 - h_ii)`,
    /// shrunk toward a robust pooled scale (see [`kind_scatter`]). Each standardised residual
    /// has the row scatter's variance; the leave-one-out residual `r_i / (1 - h_ii)` would carry
    /// the parameters' uncertainty too, which an interval already adds from the covariance
    /// through the row's own sensitivity (predictive variance `s^2 + g' C g`): it was counted
    /// twice (scatter ~20% wide, to 2026-12-07).
    pub fn uncertainty(&self, fold: &FoldFit, train: &[bool]) -> Uncertainty {
        let n = self.paths.len();
        let free: Vec<usize> = (0..n).filter(|&k| !fold.held[k]).collect();
        let rows: Vec<usize> = (0..self.rows()).filter(|&i| train[i]).collect();
        let nf = free.len();
        let mut a = DMatrix::<f64>::zeros(nf, nf);
        for &i in &rows {
            for (p, &kp) in free.iter().enumerate() {
                for (q, &kq) in free.iter().enumerate() {
                    a[(p, q)] += self.jac[(i, kp)] * self.jac[(i, kq)];
                }
            }
        }
        let pw2 = (self.prior_weight * self.prior_weight).max(1e-10);
        for p in 0..nf {
            a[(p, p)] += pw2;
        }
        let ainv = a.clone().try_inverse().unwrap_or_else(|| a.pseudo_inverse(1e-12).unwrap_or_else(|_| DMatrix::zeros(nf, nf)));
        let dof = rows.len().saturating_sub(nf).max(1);
        let s2 = huber_residual_variance(rows.iter().map(|&i| fold.r[i]), dof);
        let mut cov = vec![vec![0.0; n]; n];
        for (p, &kp) in free.iter().enumerate() {
            for (q, &kq) in free.iter().enumerate() {
                cov[kp][kq] = s2 * ainv[(p, q)];
            }
        }
        // Symmetric to the bit (the profile check compares both halves), six significant digits.
        let raw = cov;
        let cov: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| crate::util::sig(0.5 * (raw[i][j] + raw[j][i]))).collect()).collect();
        let mut by_kind: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for &i in &rows {
            let ji = DVector::from_iterator(nf, free.iter().map(|&k| self.jac[(i, k)]));
            let h = (ji.transpose() * &ainv * &ji)[(0, 0)].clamp(0.0, 0.95);
            let e = (1.0 + fold.r[i]).max(1e-6).ln() / (1.0 - h).sqrt();
            by_kind.entry(kind_of(self.data, i)).or_default().push(e);
            by_kind.entry("all".into()).or_default().push(e);
        }
        let scatter = kind_scatter(&by_kind);
        Uncertainty { params: self.paths.clone(), covariance: cov, scatter }
    }

    /// The 90% interval's half-widths below and above target `i`'s prediction under `u` (log
    /// units, before the z-score): the parameter covariance through the row's sensitivity, the
    /// priors of the parameters no fold fits (each side its own,
    /// [`super::interval::prior_row_variance`]), plus the scatter of its kind.
    pub fn sigma(&self, i: usize, fold: &FoldFit, u: &Uncertainty) -> (f64, f64) {
        let pred_over_meas = 1.0 + fold.r[i];
        let n = self.paths.len();
        // d ln(prediction) / dx = J_i * measured / prediction.
        let g: Vec<f64> = (0..n).map(|k| self.jac[(i, k)] / pred_over_meas).collect();
        let mut var = 0.0;
        for (a, ga) in g.iter().enumerate() {
            for (b, gb) in g.iter().enumerate() {
                var += ga * u.covariance[a][b] * gb;
            }
        }
        let kind = kind_of(self.data, i);
        let s = u.scatter.get(&kind).or_else(|| u.scatter.get("all")).copied().unwrap_or(0.0);
        let (prior_down, prior_up) = self.prior_var.get(i).copied().unwrap_or((0.0, 0.0));
        // The parameters this fold holds at their prior (too few training rows move them): the
        // row reads each with the spread of its kind's priors, as `run` does for a parameter no
        // fit moves.
        let held: f64 = (0..n).filter(|&k| fold.held[k]).map(|k| (g[k] * self.spread.get(k).copied().unwrap_or(0.0)).powi(2)).sum();
        let own = var.max(0.0) + held + s * s;
        ((own + prior_down).sqrt(), (own + prior_up).sqrt())
    }
}

/// Pseudo-rows of the pooled scale that a kind's own scatter is shrunk toward (see
/// [`kind_scatter`]).
pub const SCATTER_PRIOR_ROWS: f64 = 2.0;

/// The scatter of each kind from its rows' standardised log residuals (`all` holds every row).
/// A kind's scatter comes from its own rows only, shrunk toward a pooled scale by
/// [`SCATTER_PRIOR_ROWS`] pseudo-rows: `s_k^2 = (sum e^2 + n0 s_pool^2) / (n_k + n0)` (the
/// posterior mean of a variance under a scaled inverse-chi-square prior). The pooled scale is
/// robust, `1.4826 x median |e|` over every row, so a minority of rows of another kind that the
/// twin misses badly (serving rows, say) cannot widen the intervals of single-stream rows. `all`
/// (used for a kind no row measured) is that pooled scale: one high-leverage row's inflated
/// standardised residual (`e / sqrt(1 - h)` with `h` near 1) cannot set every unmeasured kind's width.
pub fn kind_scatter(by_kind: &BTreeMap<String, Vec<f64>>) -> BTreeMap<String, f64> {
    let all = by_kind.get("all").map_or(&[][..], |v| &v[..]);
    let mut abs: Vec<f64> = all.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = match abs.len() {
        0 => 0.0,
        n if n % 2 == 1 => abs[n / 2],
        n => 0.5 * (abs[n / 2 - 1] + abs[n / 2]),
    };
    let pool2 = (1.4826 * median).powi(2);
    by_kind
        .iter()
        .map(|(k, v)| {
            let s = if k == "all" {
                pool2.sqrt()
            } else {
                let sum: f64 = v.iter().map(|e| e * e).sum();
                ((sum + SCATTER_PRIOR_ROWS * pool2) / (v.len() as f64 + SCATTER_PRIOR_ROWS)).sqrt()
            };
            (k.clone(), crate::util::sig(s))
        })
        .collect()
}

/// Solves a symmetric positive-definite system (Cholesky; a pseudo-inverse when it is not).
fn solve_spd(a: DMatrix<f64>, b: &DVector<f64>) -> DVector<f64> {
    match a.clone().cholesky() {
        Some(c) => c.solve(b),
        None => a.pseudo_inverse(1e-12).map(|p| p * b).unwrap_or_else(|_| DVector::zeros(b.len())),
    }
}

/// One cross-validation fold: the group left out, its rows, and their held-out predictions.
#[derive(Clone, Debug)]
pub struct Fold {
    /// Group name.
    pub group: String,
    /// Held-out predictions (row index, prediction, p5, p95), or why the fold failed.
    pub rows: Result<Vec<HeldOut>, String>,
    /// Row indices of the group that were asked for.
    pub indices: Vec<usize>,
    /// Gauss-Newton steps the fold took.
    pub steps: usize,
    /// Parameters held at their prior in this fold (fewer than [`MIN_ROWS_PER_PARAM`] training
    /// rows move them materially).
    pub held: Vec<bool>,
}

/// A row's prediction by a fit that did not see it, with its 90% interval.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldOut {
    /// Target index.
    pub index: usize,
    /// Prediction.
    pub predicted: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// The groups of the `selected` targets, in order of first appearance, each with its selected
/// rows; the rows left out of a fold are every target of the group (selected or not).
pub fn groups(data: &Dataset, grouping: Grouping, selected: &[usize]) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for &i in selected {
        let k = grouping.key(data, i);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(i),
            None => out.push((k, vec![i])),
        }
    }
    out
}

/// Cross-validates by `grouping`: for each group of the `selected` rows, fits without every row
/// of the group (warm start at `full`, at most `steps` steps) and predicts the group's selected
/// rows with 90% intervals. Folds run in parallel and come back in group order; `tick` is
/// called once per finished fold (for a progress bar).
pub fn cross_validate(
    lin: &Linearized<'_>,
    full: &FoldFit,
    grouping: Grouping,
    selected: &[usize],
    steps: usize,
    tick: &(dyn Fn() + Sync),
) -> Vec<Fold> {
    use rayon::prelude::*;
    let gs = groups(lin.data, grouping, selected);
    gs.par_iter()
        .map(|(g, idx)| {
            let key = |i: usize| grouping.key(lin.data, i);
            let train: Vec<bool> = (0..lin.rows()).map(|i| key(i) != *g && lin.data.targets[i].fitted).collect();
            let held = lin.budget(&train);
            let out = lin.refit(&train, steps, Some(full)).map(|fold| {
                let u = lin.uncertainty(&fold, &train);
                let rows = idx
                    .iter()
                    .map(|&i| {
                        let predicted = lin.data.targets[i].measured * (1.0 + fold.r[i]);
                        let (below, above) = lin.sigma(i, &fold, &u);
                        HeldOut { index: i, predicted, p5: predicted * (-Z90 * below).exp(), p95: predicted * (Z90 * above).exp() }
                    })
                    .collect();
                (rows, fold.steps)
            });
            tick();
            match out {
                Ok((rows, steps)) => Fold { group: g.clone(), rows: Ok(rows), indices: idx.clone(), steps, held },
                Err(e) => Fold { group: g.clone(), rows: Err(e.to_string()), indices: idx.clone(), steps: 0, held },
            }
        })
        .collect()
}

/// The in-sample fit of the linearised problem on every row fits use (the folds' warm start): when the
/// profile is the fit of these data with the same parameters, it stays where it is.
pub fn full_fit(lin: &Linearized<'_>, steps: usize) -> Result<FoldFit, CalibrateError> {
    let fitted: Vec<bool> = lin.data.targets.iter().map(|t| t.fitted).collect();
    lin.refit(&fitted, steps, None)
}

/// The fraction of held-out rows whose measured value lies inside their own 90% interval.
pub fn coverage(data: &Dataset, folds: &[Fold]) -> Option<f64> {
    let (mut inside, mut n) = (0usize, 0usize);
    for h in folds.iter().filter_map(|f| f.rows.as_ref().ok()).flatten() {
        let m = data.targets[h.index].measured;
        n += 1;
        if m >= h.p5 && m <= h.p95 {
            inside += 1;
        }
    }
    (n > 0).then(|| inside as f64 / n as f64)
}

/// How a cross-validation refits each fold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FoldMethod {
    /// At most this many Gauss-Newton steps from the full fit with the cached Jacobian.
    Fast(usize),
    /// A full Levenberg-Marquardt refit per fold (slow: for checking the fast method).
    Exact,
    /// A full Levenberg-Marquardt refit per fold started from the prior's centre, not from the
    /// full fit (slower still): a fold that never sees the fit of its held-out rows, so a basin
    /// the full fit found with their help cannot carry into their prediction.
    Cold,
}

/// What the exact refits of `--cv-exact` (or `--cv-cold`) did.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ExactCheck {
    /// Where each refit started: `full fit` (`--cv-exact`) or `prior` (`--cv-cold`).
    pub start: String,
    /// Folds refitted exactly.
    pub refitted: usize,
    /// Largest |exact - fast| held-out difference over the refitted folds, percent of measured.
    pub max_diff_percent: f64,
    /// Folds whose exact refit failed: they keep the fast prediction.
    pub fallbacks: Vec<ExactFallback>,
}

/// A fold whose exact refit failed, and why.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ExactFallback {
    /// The fold's group.
    pub group: String,
    /// The refit's error.
    pub reason: String,
}

/// Per-group error of a cross-validation.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct GroupError {
    /// Group.
    pub group: String,
    /// Rows predicted.
    pub rows: usize,
    /// Mean absolute percentage error of its rows.
    pub mape_percent: f64,
}

/// A fitted parameter and the rows that move it.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ParamRows {
    /// Dotted path.
    pub name: String,
    /// Ids of the rows whose prediction moves with it.
    pub rows: Vec<String>,
}

/// A cross-validation report.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct CvReport {
    /// `row`, `model`, `engine` or `system`.
    pub grouping: String,
    /// Held-out predictions with their 90% intervals and the error summaries.
    pub report: super::validate::Report,
    /// Error per group, in group order.
    pub groups: Vec<GroupError>,
    /// Rows whose measured value lies inside their own 90% interval.
    pub inside_interval: usize,
    /// Percentage of predicted rows inside their own 90% interval.
    pub coverage_percent: f64,
    /// Parameters fitted on all rows, each with the rows that move it.
    pub fitted: Vec<ParamRows>,
    /// Parameters held at their prior on all rows (fewer than two rows move them materially).
    pub held: Vec<ParamRows>,
    /// With an exact refit per fold: how many folds it refitted, the largest |exact - fast|
    /// difference, and the folds that kept their fast prediction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact: Option<ExactCheck>,
    /// Parameters fitted on all rows and the rows they are fitted on (degrees of freedom).
    pub budget: ParamBudget,
    /// Held-out rows left out of the scores: a prior that decides their held-out prediction
    /// was read from them.
    pub excluded: Vec<ExcludedRow>,
}

/// How many parameters a fit has for how many rows.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ParamBudget {
    /// Parameters fitted.
    pub parameters: usize,
    /// Measurements they are fitted on.
    pub rows: usize,
    /// Rows per fitted parameter.
    pub rows_per_parameter: f64,
    /// Set below [`MIN_ROWS_PER_PARAM`] rows per parameter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl ParamBudget {
    /// The budget of `parameters` fitted on `rows`, with a warning below
    /// [`MIN_ROWS_PER_PARAM`] rows per parameter.
    pub fn new(parameters: usize, rows: usize) -> ParamBudget {
        let per = if parameters == 0 { f64::INFINITY } else { rows as f64 / parameters as f64 };
        let warning = (per < MIN_ROWS_PER_PARAM as f64).then(|| {
            format!(
                "only {per:.2} rows per fitted parameter (below {MIN_ROWS_PER_PARAM}): the fit can follow the rows' noise; trust held-out errors, not in-sample ones"
            )
        });
        ParamBudget { parameters, rows, rows_per_parameter: crate::util::round3(per.min(1e9)), warning }
    }

    /// One line: `N parameters fitted on M rows (X rows per parameter)`, then the warning.
    /// The ratio is printed from the counts, not from the rounded `rows_per_parameter`, so it
    /// reads as the warning does (34 / 22 is 1.55 in both, not 1.545 rounded again to 1.54).
    pub fn line(&self) -> String {
        let per = if self.parameters == 0 { f64::INFINITY } else { self.rows as f64 / self.parameters as f64 };
        let mut s = format!("{} parameters fitted on {} rows ({per:.2} rows per parameter)", self.parameters, self.rows);
        if let Some(w) = &self.warning {
            s.push_str(&format!("\nWARNING: {w}"));
        }
        s
    }
}

/// A held-out row left out of the cross-validation scores.
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct ExcludedRow {
    /// Row id.
    pub id: String,
    /// The parameters whose prior was read from this row and decides its held-out prediction.
    pub params: Vec<String>,
    /// Why, in words.
    pub reason: String,
}

/// A prior read from measurement rows: the parameter, the rows, and for a parameter outside the
/// fit, the rows (by index) it moves materially.
#[derive(Clone, Debug)]
pub struct RowPrior {
    /// Dotted path.
    pub path: String,
    /// Ids of the rows its hand-set value was read from.
    pub from_rows: Vec<String>,
    /// Index in the fitted paths, or `None` when the parameter is not fitted (always at its prior).
    pub fitted: Option<usize>,
    /// For a parameter outside the fit: the rows it moves materially.
    pub moves: Vec<usize>,
}

/// The priors of `lin`'s data that were read from its own rows: parameters whose value at the
/// prior's centre (fitted) or in the profile (not fitted) is the hand-set value whose source
/// lists `from_rows` (calibration/profiles/hand-set.toml).
pub fn row_priors(lin: &Linearized<'_>, profile: &Profile) -> Result<Vec<RowPrior>, CalibrateError> {
    let hand = Profile::hand_set();
    let center = lin.values(&lin.center);
    let mut out = Vec::new();
    for (path, src) in hand.sources.iter().filter(|(_, s)| !s.from_rows.is_empty()) {
        let Some(prior) = get_param(&hand, path) else { continue };
        let same = |v: f64| (v - prior).abs() <= 1e-9 * prior.abs().max(1e-12);
        let named: Vec<usize> = (0..lin.rows()).filter(|&i| src.from_rows.contains(&lin.data.targets[i].id)).collect();
        if named.is_empty() {
            continue;
        }
        // A tied parameter carries the priors of its members.
        match lin.paths.iter().position(|p| crate::profile::tied_paths(p).contains(path)) {
            Some(k) if same(center[k]) => {
                out.push(RowPrior { path: path.clone(), from_rows: src.from_rows.clone(), fitted: Some(k), moves: Vec::new() })
            }
            Some(_) => {}
            None if get_param(profile, path).is_some_and(same) && prior > 0.0 => {
                // Not fitted: the prior is the value every fold predicts with. Which of the
                // named rows does it move materially?
                let fraction = is_fraction(profile, path);
                let nudged = from_free(fraction, to_free(fraction, prior) + FD_STEP);
                let p0 = lin.profile_at(&lin.x)?;
                let p1 = set_params(&p0, std::slice::from_ref(path), &[nudged])?;
                let mut moves = Vec::new();
                for &i in &named {
                    let (a, b) = (lin.data.predict_one(i, &p0).map_err(pred_err)?, lin.data.predict_one(i, &p1).map_err(pred_err)?);
                    if moves_materially(a, b, FD_STEP) {
                        moves.push(i);
                    }
                }
                out.push(RowPrior { path: path.clone(), from_rows: src.from_rows.clone(), fitted: None, moves });
            }
            None => {}
        }
    }
    Ok(out)
}

/// The priors that decide held-out row `i`'s prediction in a fold with `held` parameters and
/// were read from that row: a fitted parameter held at its prior in the fold that moves the row
/// materially, or a parameter outside the fit that does.
fn self_graded(lin: &Linearized<'_>, priors: &[RowPrior], held: &[bool], i: usize) -> Vec<String> {
    let id = &lin.data.targets[i].id;
    priors
        .iter()
        .filter(|p| p.from_rows.contains(id))
        .filter(|p| match p.fitted {
            Some(k) => held.get(k).copied().unwrap_or(false) && lin.movers[k].contains(&i),
            None => p.moves.contains(&i),
        })
        .map(|p| p.path.clone())
        .collect()
}

/// Everything a cross-validation needs besides the data.
pub struct CvInput<'a> {
    /// The profile (the fit of these data).
    pub profile: &'a Profile,
    /// Parameters to refit (`calibrate`'s default set for the data).
    pub paths: Vec<String>,
    /// Prior weight of the refits.
    pub prior_weight: f64,
    /// How rows are grouped.
    pub grouping: Grouping,
    /// Targets to predict (indices).
    pub selected: &'a [usize],
    /// How each fold is refitted.
    pub method: FoldMethod,
}

/// The prior's centre for `paths`: the starting values of the profile's own fit where it
/// records them (the sourced values it was fitted from), the current values otherwise. A tied
/// parameter the profile fitted untied starts from its member's record, a member from its tie's.
pub fn prior_center(profile: &Profile, paths: &[String]) -> Vec<f64> {
    let fit = profile.fit.as_ref().map_or(&[][..], |f| &f.params[..]);
    use crate::profile::tied_paths;
    let recorded = |p: &String| fit.iter().find(|f| f.name == *p || tied_paths(p).contains(&f.name) || tied_paths(&f.name).contains(p));
    paths.iter().map(|p| recorded(p).map(|f| f.initial).or_else(|| get_param(profile, p)).unwrap_or(f64::NAN)).collect()
}

/// Grouped cross-validation of `data` (see [`cross_validate`]); `tick` advances a progress bar
/// once per fold.
pub fn run(data: &Dataset, input: &CvInput<'_>, tick: &(dyn Fn() + Sync)) -> Result<CvReport, CalibrateError> {
    // A parameter at 0 (a term the profile does not have, e.g. no working-set term) has no
    // log-space value to refit from: it stays out, as in the profile.
    let paths: Vec<String> = input.paths.iter().filter(|p| get_param(input.profile, p).is_some_and(|v| v > 0.0)).cloned().collect();
    let center = prior_center(input.profile, &paths);
    let mut lin = Linearized::new(data, input.profile, paths.clone(), &center, input.prior_weight)?;
    let mut full = full_fit(&lin, FOLD_STEPS)?;
    // A profile that is not the fit of these data: linearise again where the fit is.
    if (&full.x - &lin.x).amax() > 0.05 {
        let at = lin.profile_at(&full.x)?;
        lin = Linearized::new(data, &at, paths, &center, input.prior_weight)?;
        full = full_fit(&lin, FOLD_STEPS)?;
    }
    let mut folds = cross_validate(&lin, &full, input.grouping, input.selected, fast_steps(input.method), tick);
    let mut exact = None;
    if matches!(input.method, FoldMethod::Exact | FoldMethod::Cold) {
        let cold = input.method == FoldMethod::Cold;
        let mut worst: f64 = 0.0;
        let mut refitted = 0;
        let mut fallbacks = Vec::new();
        for f in folds.iter_mut() {
            let train: Vec<bool> = (0..lin.rows()).map(|i| input.grouping.key(data, i) != f.group && data.targets[i].fitted).collect();
            let Ok(rows) = f.rows.as_mut() else { continue };
            let start = if cold { &lin.center } else { &full.x };
            match exact_fold(&lin, start, &train, &f.indices, input.prior_weight) {
                Ok(ex) => {
                    refitted += 1;
                    for (h, e) in rows.iter_mut().zip(ex) {
                        worst = worst.max(((e - h.predicted) / data.targets[h.index].measured).abs() * 100.0);
                        let scale = e / h.predicted;
                        *h = HeldOut { index: h.index, predicted: e, p5: h.p5 * scale, p95: h.p95 * scale };
                    }
                }
                // Said in the report: a fold whose exact refit failed keeps its fast prediction,
                // never counted as an exact one.
                Err(e) => fallbacks.push(ExactFallback { group: f.group.clone(), reason: e.to_string() }),
            }
            tick();
        }
        let start = if cold { "prior" } else { "full fit" }.to_string();
        exact = Some(ExactCheck { start, refitted, max_diff_percent: crate::util::round3(worst), fallbacks });
    }
    let priors = row_priors(&lin, input.profile)?;
    Ok(report(data, &lin, input.grouping, &folds, exact, &priors))
}

fn fast_steps(m: FoldMethod) -> usize {
    match m {
        FoldMethod::Fast(n) => n,
        FoldMethod::Exact | FoldMethod::Cold => FOLD_STEPS,
    }
}

/// A full Levenberg-Marquardt refit on the training rows (started at `start`: the full fit, or
/// the prior's centre for a cold fold; held parameters at the prior's centre, the same prior),
/// predicting the rows `idx`. A parameter the refit finds unconstrained at its start (a small
/// value whose finite-difference step moves no prediction by a nanosecond) stays where it
/// started, as the fast folds keep it, and the refit runs on the others.
fn exact_fold(
    lin: &Linearized<'_>,
    start: &DVector<f64>,
    train: &[bool],
    idx: &[usize],
    prior_weight: f64,
) -> Result<Vec<f64>, CalibrateError> {
    let mut held = lin.budget(train);
    let center = lin.values(&lin.center);
    let mut x = start.clone();
    for k in (0..x.len()).filter(|&k| held[k]) {
        x[k] = lin.center[k];
    }
    let start = lin.profile_at(&x)?;
    let rest = lin.data.subset(train);
    loop {
        let free: Vec<String> = (0..held.len()).filter(|&k| !held[k]).map(|k| lin.paths[k].clone()).collect();
        let free_center: Vec<f64> = (0..held.len()).filter(|&k| !held[k]).map(|k| center[k]).collect();
        if free.is_empty() {
            return idx.iter().map(|&i| lin.data.predict_one(i, &start).map_err(pred_err)).collect();
        }
        match super::fit::fit_toward(
            &start,
            &free,
            &rest.targets,
            &|p: &Profile| rest.predict(p),
            ROBUST_ROUNDS,
            prior_weight,
            &free_center,
        ) {
            Ok((fitted, _)) => return idx.iter().map(|&i| lin.data.predict_one(i, &fitted).map_err(pred_err)).collect(),
            Err(CalibrateError::Unconstrained(p)) => match lin.paths.iter().position(|q| *q == p) {
                Some(k) if !held[k] => held[k] = true,
                _ => return Err(CalibrateError::Unconstrained(p)),
            },
            Err(e) => return Err(e),
        }
    }
}

/// The report of finished folds.
fn report(
    data: &Dataset,
    lin: &Linearized<'_>,
    grouping: Grouping,
    folds: &[Fold],
    exact: Option<ExactCheck>,
    priors: &[RowPrior],
) -> CvReport {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut groups = Vec::new();
    let mut excluded = Vec::new();
    let mut inside = 0;
    for f in folds {
        match &f.rows {
            Ok(hs) => {
                let mut errs = Vec::new();
                for h in hs {
                    let graded = self_graded(lin, priors, &f.held, h.index);
                    if !graded.is_empty() {
                        excluded.push(ExcludedRow {
                            id: data.targets[h.index].id.clone(),
                            reason: format!(
                                "the prior of {} was read from this row (hand-set.toml) and decides its held-out prediction (the parameter is not fitted without it)",
                                graded.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
                            ),
                            params: graded,
                        });
                        continue;
                    }
                    if (h.p5..=h.p95).contains(&data.targets[h.index].measured) {
                        inside += 1;
                    }
                    let mut v = data.validated(h.index, h.predicted);
                    v.p5 = Some(crate::util::round3(h.p5));
                    v.p95 = Some(crate::util::round3(h.p95));
                    errs.push(v.error_percent.abs());
                    rows.push(v);
                }
                if errs.is_empty() {
                    continue;
                }
                let mape = crate::util::round3(errs.iter().sum::<f64>() / errs.len() as f64);
                groups.push(GroupError { group: f.group.clone(), rows: errs.len(), mape_percent: mape });
            }
            Err(e) => skipped.extend(f.indices.iter().map(|&i| super::validate::SkippedRow {
                id: data.targets[i].id.clone(),
                reason: format!("refit without group `{}` failed: {e}", f.group),
            })),
        }
    }
    let coverage_percent = crate::util::round3(if rows.is_empty() { 0.0 } else { inside as f64 / rows.len() as f64 * 100.0 });
    let all = vec![true; lin.rows()];
    let held = lin.budget(&all);
    let named =
        |k: usize| ParamRows { name: lin.paths[k].clone(), rows: lin.movers[k].iter().map(|&i| data.targets[i].id.clone()).collect() };
    CvReport {
        grouping: grouping.name().into(),
        report: super::validate::report(rows, skipped),
        groups,
        inside_interval: inside,
        coverage_percent,
        fitted: (0..held.len()).filter(|&k| !held[k]).map(named).collect(),
        held: (0..held.len()).filter(|&k| held[k]).map(named).collect(),
        exact,
        budget: ParamBudget::new(held.iter().filter(|h| !**h).count(), lin.rows()),
        excluded,
    }
}

/// The report as text: held-out rows with their intervals, per-group errors, coverage, and the
/// fitted parameters with the rows that move them.
pub fn table(r: &CvReport) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "{:<24} {:<22} {:>10} {:>10} {:>8} {:>10} {:>10}", "id", "metric", "measured", "held-out", "error", "p5", "p95");
    for row in &r.report.rows {
        let inside = match (row.p5, row.p95) {
            (Some(a), Some(b)) if (a..=b).contains(&row.measured) => "",
            _ => "  outside",
        };
        let _ = writeln!(
            s,
            "{:<24} {:<22} {:>10.2} {:>10.2} {:>7.1}% {:>10.2} {:>10.2}{inside}",
            row.id,
            row.metric,
            row.measured,
            row.predicted,
            row.error_percent,
            row.p5.unwrap_or(f64::NAN),
            row.p95.unwrap_or(f64::NAN)
        );
    }
    if r.grouping != "row" {
        let _ = writeln!(s, "\nper {}:", r.grouping);
        for g in &r.groups {
            let _ = writeln!(s, "  {:<32} {:>3} rows  MAPE {:>5.1}%", g.group, g.rows, g.mape_percent);
        }
    }
    let n = r.report.rows.len();
    let _ =
        writeln!(s, "\nheld-out MAPE over {n} rows: {:.1}%   (decode rows: {:.1}%)", r.report.mape_percent, r.report.decode_mape_percent);
    let _ = writeln!(s, "90% interval coverage: {}/{n} rows inside their own interval ({:.0}%)", r.inside_interval, r.coverage_percent);
    if let Some(x) = &r.exact {
        let _ = writeln!(
            s,
            "exact refits (started from the {}): {} folds refitted; their held-out predictions differ from the fast folds' by at most {:.2}% of measured",
            x.start, x.refitted, x.max_diff_percent
        );
        if !x.fallbacks.is_empty() {
            let _ = writeln!(s, "exact refits that failed ({} folds keep the fast prediction):", x.fallbacks.len());
            for f in &x.fallbacks {
                let _ = writeln!(s, "  {:<24} {}", f.group, f.reason);
            }
        }
    }
    if !r.excluded.is_empty() {
        let _ =
            writeln!(s, "\nnot scored ({} held-out rows whose prediction rests on a prior read from the row itself):", r.excluded.len());
        for e in &r.excluded {
            let _ = writeln!(s, "  {:<24} {}", e.id, e.reason);
        }
    }
    let _ = writeln!(s, "\n{}", r.budget.line());
    let _ = writeln!(s, "\nfitted parameters (rows that move them materially):");
    for p in &r.fitted {
        let _ = writeln!(s, "  {} ({}): {}", p.name, p.rows.len(), p.rows.join(", "));
    }
    if !r.held.is_empty() {
        let _ = writeln!(
            s,
            "held at their prior (fewer than {MIN_ROWS_PER_PARAM} rows move them materially: a doubling changes the row by 3.5% or more):"
        );
        for p in &r.held {
            let rows = if p.rows.is_empty() { "none".to_string() } else { p.rows.join(", ") };
            let _ = writeln!(s, "  {} ({rows})", p.name);
        }
    }
    if !r.report.skipped.is_empty() {
        let _ = writeln!(s, "\nnot cross-validated:");
        for k in &r.report.skipped {
            let _ = writeln!(s, "  {:<24} {}", k.id, k.reason);
        }
    }
    s
}
