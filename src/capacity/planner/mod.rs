//! `supernode plan`: enumerate clusters for a model (node mixes and counts, fabrics,
//! topologies, engines and splits; [`enumerate`]), predict each with the one estimator
//! (scenarios are built with the typed [`ScenarioBuilder`] and validated by the same rules as a
//! file), and pick the best for an objective: the cheapest reaching a decode rate, or the
//! fastest under a budget or a power cap. Reports ([`report`]) the best few, the Pareto front
//! (tokens/s vs $ vs W), why each loser lost (failures grouped by their typed [`ErrorKind`]),
//! and the cabling of the winner.

use std::time::Instant;

use rayon::prelude::*;

use crate::estimate::{Bounds, Estimate, RunMemo, estimate_memo, nominal_bounds};
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::scenario::{ErrorKind, ScenarioBuilder};

pub mod enumerate;
pub mod report;
pub mod spec;

pub use enumerate::candidates;
pub use spec::PlanSpec;

/// What "best" means among the candidates that meet the constraints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Goal {
    /// Raw decode speed, tokens/s (with a target rate: the cheapest reaching it instead).
    #[default]
    Speed,
    /// Decode tokens/s per hardware dollar.
    TokensPerSecondPerDollar,
    /// Tokens a day per hardware dollar: tokens/s x 86,400 x availability / hardware USD.
    TokensPerDayPerDollar,
}

impl Goal {
    /// The goals' command-line names.
    pub const NAMES: [&'static str; 3] = ["speed", "tokens-per-s-per-dollar", "tokens-per-day-per-dollar"];

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "speed" => Some(Goal::Speed),
            "tokens-per-s-per-dollar" => Some(Goal::TokensPerSecondPerDollar),
            "tokens-per-day-per-dollar" => Some(Goal::TokensPerDayPerDollar),
            _ => None,
        }
    }

    /// The command-line name.
    pub fn id(self) -> &'static str {
        match self {
            Goal::Speed => "speed",
            Goal::TokensPerSecondPerDollar => "tokens-per-s-per-dollar",
            Goal::TokensPerDayPerDollar => "tokens-per-day-per-dollar",
        }
    }

    /// What the score measures, with its unit.
    pub fn unit(self) -> &'static str {
        match self {
            Goal::Speed => "tok/s",
            Goal::TokensPerSecondPerDollar => "tok/s per $",
            Goal::TokensPerDayPerDollar => "tokens/day per $",
        }
    }

    /// The score of an estimate (higher is better). `availability` is the fraction of the time
    /// the cluster serves (1.0 until a fault model supplies it; see [`Candidate::availability`]).
    pub fn score(self, e: &Estimate, availability: f64) -> f64 {
        let per_dollar = |x: f64| if e.cost_usd > 0.0 { x / e.cost_usd } else { 0.0 };
        match self {
            Goal::Speed => e.decode_tokens_per_s,
            Goal::TokensPerSecondPerDollar => per_dollar(e.decode_tokens_per_s),
            Goal::TokensPerDayPerDollar => per_dollar(e.decode_tokens_per_s * 86_400.0 * availability),
        }
    }
}

/// What to optimize. With a target rate and the speed goal: minimize hardware cost (then
/// power); otherwise maximize the goal's score. Budget and power caps are constraints in both
/// cases.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// Minimum decode tokens/s.
    pub target_tokens_per_s: Option<f64>,
    /// Maximum hardware cost, USD.
    pub budget_usd: Option<f64>,
    /// Maximum cluster power during decode, W.
    pub max_power_w: Option<f64>,
    /// What to maximize.
    pub goal: Goal,
}

impl Objective {
    /// Checks that at least one objective is given and that values are positive.
    pub fn new(target_tokens_per_s: Option<f64>, budget_usd: Option<f64>, max_power_w: Option<f64>, goal: Goal) -> Result<Self, String> {
        if target_tokens_per_s.is_none() && budget_usd.is_none() && max_power_w.is_none() && goal == Goal::Speed {
            return Err(
                "give an objective: --target-tokens-per-s X (cheapest reaching X), --budget-usd X or --max-power-w X (fastest within X), \
                 or --goal tokens-per-day-per-dollar"
                    .into(),
            );
        }
        for (name, v) in [("--target-tokens-per-s", target_tokens_per_s), ("--budget-usd", budget_usd), ("--max-power-w", max_power_w)] {
            if let Some(x) = v {
                if !(x > 0.0 && x.is_finite()) {
                    return Err(format!("{name} must be a positive number, not {x}"));
                }
            }
        }
        Ok(Objective { target_tokens_per_s, budget_usd, max_power_w, goal })
    }

    pub(super) fn minimizes_cost(&self) -> bool {
        self.target_tokens_per_s.is_some() && self.goal == Goal::Speed
    }

    /// The question, in words.
    pub fn describe(&self, model: &str) -> String {
        let mut limits = Vec::new();
        if let Some(t) = self.target_tokens_per_s.filter(|_| !self.minimizes_cost()) {
            limits.push(format!(">= {t} tok/s"));
        }
        if let Some(b) = self.budget_usd {
            limits.push(format!("hardware <= ${}", money(b)));
        }
        if let Some(p) = self.max_power_w {
            limits.push(format!("power <= {p:.0} W"));
        }
        let lim = if limits.is_empty() { String::new() } else { format!(" with {}", limits.join(" and ")) };
        match (self.target_tokens_per_s, self.goal) {
            (Some(t), Goal::Speed) => format!("cheapest cluster that runs {model} at >= {t} tok/s{lim}"),
            (None, Goal::Speed) => format!("fastest cluster for {model}{lim}"),
            (_, Goal::TokensPerSecondPerDollar) => format!("most tokens/s per hardware dollar for {model}{lim}"),
            (_, Goal::TokensPerDayPerDollar) => format!("most tokens per day per hardware dollar for {model}{lim}"),
        }
    }
}

/// A planning request.
#[derive(Clone, Debug)]
pub struct PlanRequest {
    /// The question in the asker's words (a spec file's `question`), for reports.
    pub question: Option<String>,
    /// Model preset.
    pub model: String,
    /// Quantization (None: the engine's format of the model's default).
    pub quant: Option<String>,
    /// Context to hold: prompt + generated tokens.
    pub context: u64,
    /// Objective and constraints.
    pub objective: Objective,
    /// Node presets allowed (empty: all).
    pub nodes: Vec<String>,
    /// Largest cluster.
    pub max_nodes: usize,
    /// Fabrics allowed (empty: all).
    pub fabrics: Vec<String>,
    /// Engines allowed (empty: all).
    pub engines: Vec<String>,
    /// Also mix chip families where the runtime allows it (llama.cpp RPC across any chips,
    /// exo across Macs): one node type per family, every count split up to `max_nodes`.
    pub mixed_fleets: bool,
    /// Also vary engine options: all-reduce algorithm, macOS (JACCL frame size), fast sync,
    /// prefill chunk ([`enumerate::option_sets`]).
    pub vary_options: bool,
    /// Skip candidates over the budget before building or simulating them, and candidates a
    /// simulated one dominates (by their optimistic bounds) before simulating them; share runs
    /// between candidates that plan to the same step. On by default; off only to measure what
    /// pruning saves (every candidate built and simulated, as the planner did before).
    pub prune: bool,
    /// Worker threads.
    pub jobs: Option<usize>,
}

impl PlanRequest {
    /// A request with the defaults of `supernode plan` (context 256, up to 8 nodes, all nodes,
    /// fabrics and engines, no mixed fleets or option variants, pruning on).
    pub fn new(model: impl Into<String>, objective: Objective) -> Self {
        PlanRequest {
            question: None,
            model: model.into(),
            quant: None,
            context: 256,
            objective,
            nodes: vec![],
            max_nodes: 8,
            fabrics: vec![],
            engines: vec![],
            mixed_fleets: false,
            vary_options: false,
            prune: true,
            jobs: None,
        }
    }
}

/// What happened to a candidate.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Predicted.
    Ran(Box<Estimate>),
    /// Over the budget: skipped before building or simulating it (its hardware cost is known
    /// without the twin; it could not have won).
    Pruned {
        /// Hardware cost, USD.
        cost_usd: f64,
    },
    /// Built and bounded but not simulated: a simulated candidate is at least as fast as this
    /// one's optimistic bound, no dearer, draws no more power than its bound and (for the
    /// tokens-per-day goal) is at least as available, so this one can neither win nor be on the
    /// Pareto front ([`crate::estimate::nominal_bounds`]).
    Dominated {
        /// The simulated candidate that dominates it.
        by: usize,
        /// This candidate's bounds.
        bounds: Bounds,
    },
    /// The scenario is not buildable (too few ports, illegal split, wrong format, ...), or is
    /// valid but cannot run (does not fit, ...).
    Failed {
        /// What kind of failure.
        kind: ErrorKind,
        /// The error message.
        message: String,
    },
}

/// One cluster considered.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Enumeration order.
    pub id: usize,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric (None for one node).
    pub fabric: Option<String>,
    /// Topology (None for one node).
    pub topology: Option<String>,
    /// Engine id.
    pub engine: String,
    /// Parallelism id.
    pub parallelism: String,
    /// Engine options set beyond the defaults (key, value), e.g. `("engine.macos", "26.3")`.
    pub options: Vec<(String, String)>,
    /// Hardware cost (nodes, cables, switch), USD, computed before any simulation.
    pub hardware_usd: f64,
    /// Fraction of the time the cluster serves, in 0..=1: the steady availability under the
    /// profile's load-dependent faults at the candidate's simulated link utilisation
    /// ([`crate::estimate::faults::load_fault_availability`]); 1.0 until it is simulated. The
    /// tokens-per-day goal multiplies by it.
    pub availability: f64,
    /// The scenario.
    pub scenario: ScenarioBuilder,
    /// The prediction or why not.
    pub outcome: Outcome,
}

impl Candidate {
    /// The estimate, if it ran.
    pub fn estimate(&self) -> Option<&Estimate> {
        match &self.outcome {
            Outcome::Ran(e) => Some(e),
            Outcome::Failed { .. } | Outcome::Pruned { .. } | Outcome::Dominated { .. } => None,
        }
    }

    /// The scenario as a TOML file.
    pub fn toml(&self) -> String {
        self.scenario.to_toml()
    }

    /// Short description: `2x m3-ultra-80c-512gb, tb5-rdma full-mesh, exo tensor`.
    pub fn describe(&self) -> String {
        let wiring = match (&self.fabric, &self.topology) {
            (Some(f), Some(t)) => format!(", {f} {t}"),
            _ => String::new(),
        };
        let opts: Vec<String> = self.options.iter().map(|(k, v)| format!("{}={v}", k.trim_start_matches("engine."))).collect();
        let opts = if opts.is_empty() { String::new() } else { format!(" [{}]", opts.join(" ")) };
        format!("{}{wiring}, {} {}{opts}", nodes_label(&self.nodes), self.engine, self.parallelism)
    }

    /// Whether the cluster mixes chip families.
    pub fn is_mixed_fleet(&self) -> bool {
        let cat = crate::catalog::catalog();
        let chip = |id: &String| cat.node(id).map(|n| n.chip.clone());
        self.nodes.windows(2).any(|w| chip(&w[0]) != chip(&w[1]))
    }
}

/// The result of planning.
#[derive(Debug)]
pub struct Plan {
    /// The request.
    pub request: PlanRequest,
    /// Every candidate, in enumeration order.
    pub candidates: Vec<Candidate>,
    /// Candidates meeting the objective's constraints, best first.
    pub ranked: Vec<usize>,
    /// The best, if any meets the constraints.
    pub winner: Option<usize>,
    /// Non-dominated candidates (more tok/s, fewer $, fewer W), by cost.
    pub pareto: Vec<usize>,
    /// Wall time of the search, s.
    pub seconds: f64,
}

pub(super) fn money(x: f64) -> String {
    let s = format!("{:.0}", x.round());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cluster's nodes as people say them: `2x m3-ultra-80c-512gb + 1x dell-pro-max-gb10`.
pub fn nodes_text(nodes: &[String]) -> String {
    nodes_label(nodes)
}

pub(super) fn nodes_label(nodes: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in nodes {
        match out.last_mut() {
            Some((id, c)) if id == n => *c += 1,
            _ => out.push((n.clone(), 1)),
        }
    }
    out.iter().map(|(id, c)| format!("{c}x {id}")).collect::<Vec<_>>().join(" + ")
}

/// Candidates simulated between dominance checks. A constant (not the thread count), so the
/// candidates pruned never depend on the machine.
const BATCH: usize = 64;

/// Builds and plans a candidate; its bounds, or why it cannot run.
fn bound(c: &Candidate, profile: &Profile) -> Result<Bounds, Outcome> {
    let failed = |kind, message| Outcome::Failed { kind, message };
    let s = c.scenario.build().map_err(|e| failed(e.kind, e.message))?;
    let plan = crate::estimate::generate_plan(&s, profile).map_err(|e| {
        let e = crate::estimate::EstimateError::from(e);
        failed(e.kind(), e.to_string())
    })?;
    Ok(nominal_bounds(&s, &plan, profile))
}

/// Predicts a candidate: its outcome and availability.
fn evaluate(c: &Candidate, profile: &Profile, memo: &RunMemo) -> (Outcome, f64) {
    let failed = |kind, message| (Outcome::Failed { kind, message }, 1.0);
    let s: Scenario = match c.scenario.build() {
        Err(e) => return failed(e.kind, e.message),
        Ok(s) => s,
    };
    match estimate_memo(&s, profile, memo) {
        Ok((e, a)) => (Outcome::Ran(Box::new(e)), a),
        Err(err) => failed(err.kind(), err.to_string()),
    }
}

/// Whether simulated candidate `d` dominates candidate `c` of bounds `b`: at least as fast as
/// `c` can be, no dearer, no more power than `c` needs, (tokens per day) at least as available
/// as `c` can be, and strictly better somewhere or enumerated first, the Pareto front's rule.
fn dominates(d: &Candidate, c: &Candidate, b: &Bounds, goal: Goal) -> bool {
    let Some(e) = d.estimate() else { return false };
    let (dc, cc) = (crate::util::round3(d.hardware_usd), crate::util::round3(c.hardware_usd));
    let ge = e.decode_tokens_per_s >= b.tokens_per_s_max && dc <= cc && e.cluster_power_w <= b.power_w_min;
    let gt = e.decode_tokens_per_s > b.tokens_per_s_max || dc < cc || e.cluster_power_w < b.power_w_min;
    let available = goal != Goal::TokensPerDayPerDollar || d.availability >= b.availability_max;
    ge && available && (gt || d.id < c.id)
}

/// Plans: enumerates, predicts every candidate in parallel, ranks.
pub fn plan(req: &PlanRequest, profile: &Profile) -> Result<Plan, String> {
    plan_with_progress(req, profile, &|_, _| {})
}

/// [`plan`], calling `progress(done, total)` after each candidate is predicted or pruned.
pub fn plan_with_progress(req: &PlanRequest, profile: &Profile, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<Plan, String> {
    let t0 = Instant::now();
    let mut cands = candidates(req)?;
    let o = &req.objective;
    // Prune by budget first: the hardware cost needs no simulation, and a candidate over the
    // budget cannot meet the objective, so dropping it never changes the winner.
    if let (true, Some(b)) = (req.prune, o.budget_usd) {
        for c in cands.iter_mut().filter(|c| c.hardware_usd > b) {
            c.outcome = Outcome::Pruned { cost_usd: c.hardware_usd };
        }
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(req.jobs.unwrap_or(0)).build().map_err(|e| e.to_string())?;
    let todo: Vec<usize> = cands.iter().filter(|c| !matches!(c.outcome, Outcome::Pruned { .. })).map(|c| c.id).collect();
    let (done, total) = (std::sync::atomic::AtomicU64::new(0), todo.len() as u64);
    let tick = || progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total);
    let memo = RunMemo::default();
    if !req.prune {
        let mut all: Vec<&mut Candidate> = cands.iter_mut().filter(|c| !matches!(c.outcome, Outcome::Pruned { .. })).collect();
        pool.install(|| {
            all.par_iter_mut().for_each(|c| {
                (c.outcome, c.availability) = evaluate(c, profile, &RunMemo::default());
                tick();
            })
        });
    } else {
        pool.install(|| search(&mut cands, &todo, o.goal, profile, &memo, &tick));
    }
    let ranked = rank(&cands, o);
    let pareto = pareto_front(&cands);
    Ok(Plan {
        request: req.clone(),
        winner: ranked.first().copied(),
        ranked,
        pareto,
        candidates: cands,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The pruned search: bound every candidate (build and plan it, one jitter-free step), then
/// simulate in batches, most promising first (the candidates whose bounds no other bound
/// dominates, then by bound on the goal), skipping those a simulated candidate dominates.
fn search(cands: &mut [Candidate], todo: &[usize], goal: Goal, profile: &Profile, memo: &RunMemo, tick: &(dyn Fn() + Sync)) {
    let bounds: Vec<(usize, Result<Bounds, Outcome>)> = todo.par_iter().map(|&i| (i, bound(&cands[i], profile))).collect();
    let mut open: Vec<(usize, Bounds)> = Vec::new();
    for (i, b) in bounds {
        match b {
            Ok(b) => open.push((i, b)),
            Err(out) => {
                cands[i].outcome = out;
                tick();
            }
        }
    }
    let promise = |(i, b): &(usize, Bounds)| {
        let per_dollar = b.tokens_per_s_max / cands[*i].hardware_usd.max(1.0);
        match goal {
            Goal::Speed => b.tokens_per_s_max,
            Goal::TokensPerSecondPerDollar => per_dollar,
            Goal::TokensPerDayPerDollar => per_dollar * b.availability_max,
        }
    };
    // Bound-level front first: a cheap stand-in for the true front, whose members dominate most.
    let on_front: Vec<bool> = open
        .par_iter()
        .map(|(i, b)| {
            !open.iter().any(|(j, d)| {
                let (cd, cc) = (cands[*j].hardware_usd, cands[*i].hardware_usd);
                let ge = d.tokens_per_s_max >= b.tokens_per_s_max && cd <= cc && d.power_w_min <= b.power_w_min;
                ge && (d.tokens_per_s_max > b.tokens_per_s_max || cd < cc || d.power_w_min < b.power_w_min || j < i)
            })
        })
        .collect();
    let mut order: Vec<usize> = (0..open.len()).collect();
    order.sort_by(|&x, &y| {
        on_front[y].cmp(&on_front[x]).then(promise(&open[y]).total_cmp(&promise(&open[x]))).then(open[x].0.cmp(&open[y].0))
    });
    let mut ran: Vec<usize> = Vec::new();
    for batch in order.chunks(BATCH) {
        let mut go: Vec<usize> = Vec::new();
        for &k in batch {
            let (i, b) = open[k];
            match ran.iter().find(|&&d| dominates(&cands[d], &cands[i], &b, goal)) {
                Some(&by) => {
                    cands[i].outcome = Outcome::Dominated { by, bounds: b };
                    tick();
                }
                None => go.push(i),
            }
        }
        let results: Vec<(Outcome, f64)> = go
            .par_iter()
            .map(|&i| {
                let r = evaluate(&cands[i], profile, memo);
                tick();
                r
            })
            .collect();
        for (&i, (out, a)) in go.iter().zip(results) {
            (cands[i].outcome, cands[i].availability) = (out, a);
            if cands[i].estimate().is_some() {
                ran.push(i);
            }
        }
    }
}

/// Candidates meeting the objective's constraints, best first.
fn rank(cands: &[Candidate], o: &Objective) -> Vec<usize> {
    let feasible = |e: &Estimate| {
        o.target_tokens_per_s.is_none_or(|t| e.decode_tokens_per_s >= t)
            && o.budget_usd.is_none_or(|b| e.cost_usd <= b)
            && o.max_power_w.is_none_or(|p| e.cluster_power_w <= p)
    };
    let mut ranked: Vec<usize> = cands.iter().filter(|c| c.estimate().is_some_and(feasible)).map(|c| c.id).collect();
    let est = |i: usize| cands[i].estimate().expect("ran");
    let score = |i: usize| o.goal.score(est(i), cands[i].availability);
    ranked.sort_by(|&a, &b| {
        let (x, y) = (est(a), est(b));
        let by_cost = x.cost_usd.total_cmp(&y.cost_usd);
        let by_score = score(b).total_cmp(&score(a));
        let by_power = x.cluster_power_w.total_cmp(&y.cluster_power_w);
        let primary = if o.minimizes_cost() { by_cost.then(by_power).then(by_score) } else { by_score.then(by_cost).then(by_power) };
        primary.then(a.cmp(&b))
    });
    ranked
}

/// Non-dominated candidates (more tok/s, fewer $, fewer W; exact ties keep the first
/// enumerated), by cost.
fn pareto_front(cands: &[Candidate]) -> Vec<usize> {
    let est = |i: usize| cands[i].estimate().expect("ran");
    let ran: Vec<usize> = cands.iter().filter(|c| c.estimate().is_some()).map(|c| c.id).collect();
    let mut pareto: Vec<usize> = Vec::new();
    for &i in &ran {
        let a = est(i);
        let dominated = ran.iter().any(|&j| {
            let b = est(j);
            let ge = b.decode_tokens_per_s >= a.decode_tokens_per_s && b.cost_usd <= a.cost_usd && b.cluster_power_w <= a.cluster_power_w;
            let gt = b.decode_tokens_per_s > a.decode_tokens_per_s || b.cost_usd < a.cost_usd || b.cluster_power_w < a.cluster_power_w;
            // Exact ties: keep the first enumerated.
            ge && (gt || j < i)
        });
        if !dominated {
            pareto.push(i);
        }
    }
    pareto.sort_by(|&a, &b| est(a).cost_usd.total_cmp(&est(b).cost_usd).then(a.cmp(&b)));
    pareto
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_and_money() {
        assert_eq!(money(23468.4), "23,468");
        assert_eq!(money(999.0), "999");
        assert!(Objective::new(None, None, None, Goal::Speed).is_err());
        assert!(Objective::new(None, None, None, Goal::TokensPerDayPerDollar).is_ok());
    }
}
