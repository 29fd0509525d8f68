//! `supernode plan --slo`: for each cluster option of a spec ([`spec`]), the highest Poisson
//! rate (or the most closed-loop users) whose serving run meets the scenario's `[slo]`, found
//! by bracketing and bisection on the load ([`search`]). Every probe is one run of the one
//! estimator on the scenario with the option's and the load's overrides, at the scenario's
//! seed (the same arrival stream, scaled, at every rate), so a search is deterministic.
//!
//! A probe passes when requests completed, none was turned away, p99 TTFT and p99 TPOT meet the
//! targets, and (Poisson) the server kept up: its aggregate decode rate over the window is at
//! least the output tokens of the requests that arrived in the window (the run's seeded stream,
//! replayed) per second, less the requests in flight at the window's ends ((mean batch + 1) /
//! arrivals, 5% to 50%).
//! Without that check an overloaded server whose batch is capped would pass a TPOT-only SLO at
//! any rate while its queue grows without bound.
//!
//! Probe length (rate axis): `warmup_requests + probe_requests` mean arrival gaps, warm-up
//! excluded; serve runs stop at [`crate::estimate::serve::MAX_SERVE_FORWARDS`] simulated
//! forwards, which at low load (batch ~1, one forward per output token: ~19 requests of 128
//! tokens) cuts the window short: the probe then reports the window it simulated, so the
//! warm-up must stay a few requests long.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::estimate::generate_plan;
use crate::estimate::replicas::{shares, simulate_scenario_serve};
use crate::estimate::serve::arrivals::{Arrivals, s_to_ns};
use crate::profile::Profile;
use crate::scenario::{self, Arrival, Scenario, Slo};
use crate::util::{round3, round6};

pub mod search;
pub mod spec;

pub use search::{Bracket, Found};
pub use spec::{Axis, SloOption, SloSpec};

/// One load tried.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Probe {
    /// The load: requests/s or users.
    pub load: f64,
    /// Whether it met every target.
    pub ok: bool,
    /// Why not (empty when it passed).
    pub why: String,
    /// p99 time to first token, s.
    pub ttft_p99_s: f64,
    /// p99 time per output token, ms.
    pub tpot_p99_ms: f64,
    /// Aggregate decode tokens/s over the window.
    pub aggregate_decode_tokens_per_s: f64,
    /// Poisson: arrivals/s x mean output tokens.
    pub offered_tokens_per_s: Option<f64>,
    /// Requests completed in the window.
    pub requests_completed: u64,
    /// Mean sequences per forward.
    pub mean_batch: f64,
    /// The measurement window, s (shorter than asked where the run reached the forward cap).
    pub window_s: f64,
}

/// The search of one option.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OptionResult {
    /// The option's label.
    pub label: String,
    /// Its overrides.
    pub set: Vec<String>,
    /// The cluster it runs, in words (nodes, fabric, engine, split, quant); None when its
    /// scenario cannot be built.
    pub cluster: Option<String>,
    /// Its hardware cost, USD (nodes, cables, switch: what `run` reports as `cost_usd`).
    pub hardware_usd: Option<f64>,
    /// Whether its predictions are inside the profile's calibrated envelope, and why not.
    pub calibration: Option<crate::estimate::types::Envelope>,
    /// The highest load that met the SLO (None: not even the lowest probed).
    pub capacity: Option<f64>,
    /// The lowest load that missed it (None: met up to the spec's `max`).
    pub failed_at: Option<f64>,
    /// Probes sorted by load.
    pub probes: Vec<Probe>,
    /// Why the option could not run at all (does not fit, bad override ...).
    pub error: Option<String>,
}

impl OptionResult {
    /// The probe at the capacity.
    pub fn at_capacity(&self) -> Option<&Probe> {
        self.capacity.and_then(|c| self.probes.iter().find(|p| p.load == c))
    }
}

/// The `format` of an SLO plan's JSON (`slo.json`), which `supernode report` recognises.
pub const SLO_FORMAT: &str = "supernode-slo-plan/1";

/// The answer to a spec.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SloPlan {
    /// [`SLO_FORMAT`].
    pub format: String,
    /// The question.
    pub question: String,
    /// The scenario searched.
    pub scenario: String,
    /// `rate` or `users`.
    pub axis: String,
    /// The budget every option had to fit, USD (an equal-budget question).
    pub budget_usd: Option<f64>,
    /// The label of the option that serves the most load under the SLO (ties: the cheaper
    /// hardware, then the first listed); None when no option meets it at any load probed.
    pub answer: Option<String>,
    /// The targets.
    pub ttft_p99_s: Option<f64>,
    /// The targets.
    pub tpot_p99_ms: Option<f64>,
    /// Requests measured per probe (rate axis).
    pub probe_requests: u64,
    /// One result per option, in the spec's order.
    pub options: Vec<OptionResult>,
    /// Wall time, s (not in the JSON: it would break byte-identical output).
    #[serde(skip, default)]
    pub seconds: f64,
}

/// Why a spec cannot be searched.
#[derive(Debug, thiserror::Error)]
pub enum SloError {
    /// Bad spec or scenario.
    #[error("{0}")]
    Input(String),
}

fn fmt_slo(slo: &Slo) -> String {
    let mut t = Vec::new();
    if let Some(x) = slo.ttft_p99_s {
        t.push(format!("p99 TTFT <= {x} s"));
    }
    if let Some(x) = slo.tpot_p99_ms {
        t.push(format!("p99 TPOT <= {x} ms"));
    }
    t.join(" and ")
}

/// The scenario of one probe: the option's overrides, then the load (and, for rates, the
/// window: `warmup_requests + probe_requests` mean gaps).
fn probe_scenario(spec: &SloSpec, option: &SloOption, load: f64) -> Result<Scenario, String> {
    let mut set = option.set.clone();
    match spec.axis {
        Axis::Rate => {
            let warm = spec.warmup_requests as f64 / load;
            let window = spec.probe_requests as f64 / load;
            set.push(format!("workload.rate_per_s={load:?}"));
            set.push(format!("workload.duration_s={:?}", warm + window));
            set.push(format!("workload.warmup_s={warm:?}"));
        }
        Axis::Users => set.push(format!("workload.concurrency={load:.0}")),
    }
    scenario::load(&spec.scenario, &set).map_err(|e| e.to_string())
}

/// Runs one probe and judges it: the estimator's plan and serving run (what `estimate` runs for
/// a serve scenario), read with the window's length, which the keeps-up check needs.
fn run_probe(spec: &SloSpec, option: &SloOption, profile: &Profile, load: f64) -> Result<Probe, String> {
    let s = probe_scenario(spec, option, load)?;
    let sv = s.workload.serve.as_ref().ok_or("the scenario is not a serving workload (workload.kind = \"serve\")")?;
    let plan = generate_plan(&s, profile).map_err(|e| e.to_string())?;
    let run = simulate_scenario_serve(&s, &plan, sv);
    let st = &run.stats;
    let window_s = run.window_ns as f64 / 1e9;
    let aggregate = if window_s > 0.0 { round3(st.window_tokens as f64 / window_s) } else { 0.0 };
    let offered = match (&sv.arrival, spec.axis) {
        (Arrival::Poisson { .. }, Axis::Rate) if window_s > 0.0 => {
            let from = s_to_ns(sv.warmup_s);
            // Replicas each draw the stream of their share (the same for every one).
            let share = shares(sv, s.replicas).swap_remove(0).expect("a Poisson share");
            let (n, tokens) = offered_in_window(&share, s.seed, from, from + run.window_ns);
            Some((s.replicas as u64 * n, s.replicas as f64 * tokens))
        }
        _ => None,
    };
    let (ttft, tpot) = (round6(st.ttft_s.quantile(0.99)), round6(st.tpot_ms.quantile(0.99)));
    let mut why = Vec::new();
    if st.completed == 0 {
        why.push("no request completed".to_string());
    }
    if st.rejected > 0 {
        why.push(format!("{} requests turned away", st.rejected));
    }
    if let Some(t) = s.slo.ttft_p99_s.filter(|t| ttft > *t) {
        why.push(format!("p99 TTFT {} s > {t} s", round3(ttft)));
    }
    if let Some(t) = s.slo.tpot_p99_ms.filter(|t| tpot > *t) {
        why.push(format!("p99 TPOT {} ms > {t} ms", round3(tpot)));
    }
    let mean_batch = round3(st.batch_ns as f64 / st.covered_ns.max(1) as f64);
    if let Some((arrived, tokens)) = offered {
        // Requests in flight at the window's ends are counted in one and not the other.
        let allowance = ((mean_batch + 1.0) / arrived.max(1) as f64).clamp(0.05, 0.5);
        if aggregate < tokens / window_s * (1.0 - allowance) {
            why.push(format!("does not keep up: {aggregate} of {} tok/s offered", round3(tokens / window_s)));
        }
    }
    Ok(Probe {
        load,
        ok: why.is_empty(),
        why: why.join("; "),
        ttft_p99_s: ttft,
        tpot_p99_ms: tpot,
        aggregate_decode_tokens_per_s: aggregate,
        offered_tokens_per_s: offered.map(|(_, t)| round3(t / window_s)),
        requests_completed: st.completed,
        mean_batch,
        window_s: round3(window_s),
    })
}

/// Requests arriving in `[from, to)` ns and their output tokens: the same seeded stream the run
/// drew, replayed.
fn offered_in_window(sv: &crate::scenario::Serve, seed: u64, from: u64, to: u64) -> (u64, f64) {
    let mut a = Arrivals::new(sv, seed);
    let (mut n, mut tokens) = (0u64, 0.0);
    while let Some(r) = a.pop_until(to.saturating_sub(1)) {
        if r.at >= from {
            n += 1;
            tokens += r.output as f64;
        }
    }
    (n, tokens)
}

/// Loads drawn besides the search's, as fractions of the capacity found (or of the start when
/// none was), so each curve shows its hockey stick from light load to overload.
const CURVE: [f64; 6] = [0.25, 0.5, 0.75, 1.25, 1.5, 2.0];

/// Most probes one option runs: the search's and the curve's.
pub const MAX_PROBES_PER_OPTION: usize = spec::MAX_PROBES + CURVE.len();

/// Searches one option, then probes the curve's extra loads; the capacity is the highest
/// passing load below every failing probe ([`search::summarize`]).
fn search_option(spec: &SloSpec, option: &SloOption, profile: &Profile, progress: &(dyn Fn() + Sync)) -> OptionResult {
    let failed = |error: String, cluster: Option<String>, hardware_usd: Option<f64>, calibration| OptionResult {
        label: option.label.clone(),
        set: option.set.clone(),
        cluster,
        hardware_usd,
        calibration,
        capacity: None,
        failed_at: None,
        probes: vec![],
        error: Some(error),
    };
    // The option's cluster, price and envelope do not depend on the load: read them once.
    let s = match probe_scenario(spec, option, spec.bracket.start) {
        Ok(s) => s,
        Err(e) => return failed(e, None, None, None),
    };
    let cluster = Some(describe(&s));
    let hardware_usd = Some(round3(crate::estimate::power::hardware_cost(&s)));
    let calibration = Some(crate::estimate::envelope(&s, profile));
    if let (Some(budget), Some(cost)) = (spec.budget_usd, hardware_usd)
        && cost > budget
    {
        let why = format!(
            "over budget: its hardware costs ${} of the ${} budget (not searched)",
            crate::capacity::planner::report::money_text(cost),
            crate::capacity::planner::report::money_text(budget)
        );
        return failed(why, cluster, hardware_usd, calibration);
    }
    let probe = |x: f64| {
        let p = run_probe(spec, option, profile, x);
        progress();
        p
    };
    let result = spec.bracket.search(probe, |p| p.ok).and_then(|f| {
        let mut probes: Vec<(f64, Probe)> = f.probes;
        let b = &spec.bracket;
        let base = f.capacity.unwrap_or(b.start);
        for k in CURVE {
            let x = b.snap(base * k);
            if x >= b.min && x <= b.max && !probes.iter().any(|(y, _)| (y - x).abs() <= 1e-9 * x) {
                probes.push((x, probe(x)?));
            }
        }
        Ok(probes)
    });
    match result {
        Ok(mut probes) => {
            probes.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (capacity, failed_at) = search::summarize(&probes, |p| p.ok);
            let probes = probes.into_iter().map(|(_, p)| p).collect();
            OptionResult {
                label: option.label.clone(),
                set: option.set.clone(),
                cluster,
                hardware_usd,
                calibration,
                capacity,
                failed_at,
                probes,
                error: None,
            }
        }
        Err(e) => failed(e, cluster, hardware_usd, calibration),
    }
}

/// A cluster in words: `2x dgx-spark over cx7-roce (direct), vllm tensor, mxfp4` (one
/// replica's nodes, then ` x 2 replicas` when there are more).
fn describe(s: &Scenario) -> String {
    let mut nodes: Vec<(String, usize)> = Vec::new();
    for n in &s.nodes {
        match nodes.iter_mut().find(|(id, _)| *id == n.id) {
            Some((_, k)) => *k += 1,
            None => nodes.push((n.id.clone(), 1)),
        }
    }
    let nodes: Vec<String> = nodes.iter().map(|(id, k)| format!("{k}x {id}")).collect();
    let fabric = if s.nodes.len() > 1 { format!(" over {} ({})", s.fabric.id, s.topology.id()) } else { String::new() };
    let replicas = if s.replicas > 1 { format!(" x {} replicas", s.replicas) } else { String::new() };
    format!("{}{fabric}{replicas}, {} {}, {}", nodes.join(" + "), s.engine.kind.id(), s.engine.parallelism.id(), s.quant.id)
}

/// The option that serves the most load under the SLO: the highest capacity, ties to the
/// cheaper hardware, then to the first listed.
fn answer(options: &[OptionResult]) -> Option<String> {
    let mut best: Option<&OptionResult> = None;
    for o in options.iter().filter(|o| o.error.is_none() && o.capacity.is_some()) {
        let better = match best {
            None => true,
            Some(b) => {
                let (c, cb) = (o.capacity.unwrap_or(0.0), b.capacity.unwrap_or(0.0));
                c > cb || (c == cb && o.hardware_usd.unwrap_or(f64::INFINITY) < b.hardware_usd.unwrap_or(f64::INFINITY))
            }
        };
        if better {
            best = Some(o);
        }
    }
    best.map(|o| o.label.clone())
}

/// Checks the spec's scenario: a serving workload whose arrivals match the axis, with targets.
fn check_scenario(spec: &SloSpec) -> Result<Slo, SloError> {
    let s = scenario::load(&spec.scenario, &[]).map_err(|e| SloError::Input(e.to_string()))?;
    let sv = s.workload.serve.as_ref().ok_or_else(|| {
        SloError::Input(format!("{}: `plan --slo` needs a serving scenario (workload.kind = \"serve\")", spec.scenario.display()))
    })?;
    match (&sv.arrival, spec.axis) {
        (Arrival::Poisson { .. }, Axis::Rate) | (Arrival::Closed { .. }, Axis::Users) => {}
        _ => {
            return Err(SloError::Input(format!(
                "{}: axis = \"{}\" needs arrival = \"{}\" in the scenario",
                spec.scenario.display(),
                spec.axis.id(),
                if spec.axis == Axis::Rate { "poisson" } else { "closed" }
            )));
        }
    }
    if !s.slo.any() {
        return Err(SloError::Input(format!("{}: no targets: add [slo] with ttft_p99_s and/or tpot_p99_ms", spec.scenario.display())));
    }
    Ok(s.slo)
}

/// Searches every option of a spec (options in parallel on `jobs` threads, each search
/// sequential); `progress()` is called after each probe.
pub fn plan_slo(spec: &SloSpec, profile: &Profile, jobs: Option<usize>, progress: &(dyn Fn() + Sync)) -> Result<SloPlan, SloError> {
    let t0 = Instant::now();
    let slo = check_scenario(spec)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs.unwrap_or(0)).build().map_err(|e| SloError::Input(e.to_string()))?;
    let options: Vec<OptionResult> = pool.install(|| spec.options.par_iter().map(|o| search_option(spec, o, profile, progress)).collect());
    let what = match spec.axis {
        Axis::Rate => "highest Poisson rate",
        Axis::Users => "most closed-loop users",
    };
    Ok(SloPlan {
        format: SLO_FORMAT.into(),
        answer: answer(&options),
        budget_usd: spec.budget_usd,
        question: spec.question.clone().unwrap_or_else(|| format!("{what} meeting {}", fmt_slo(&slo))),
        scenario: spec.scenario.display().to_string(),
        axis: spec.axis.id().into(),
        ttft_p99_s: slo.ttft_p99_s,
        tpot_p99_ms: slo.tpot_p99_ms,
        probe_requests: spec.probe_requests,
        options,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

impl SloPlan {
    /// The axis.
    pub fn axis(&self) -> Axis {
        if self.axis == "users" { Axis::Users } else { Axis::Rate }
    }

    /// The targets, in words.
    pub fn targets(&self) -> String {
        fmt_slo(&Slo { ttft_p99_s: self.ttft_p99_s, tpot_p99_ms: self.tpot_p99_ms })
    }

    /// The text report: the question, one row per option, and how the answer was found.
    pub fn report(&self) -> String {
        let axis = self.axis();
        let mut out = format!("{}\n  scenario: {}\n  SLO: {}\n\n", self.question, self.scenario, self.targets());
        let w = self.options.iter().map(|o| o.label.chars().count()).max().unwrap_or(0).max(34);
        out += &format!(
            "{:<w$} {:>10} {:>16} {:>12} {:>12} {:>12} {:>8}  {}\n",
            "option", "hardware", "capacity", "p99 TTFT s", "p99 TPOT ms", "agg tok/s", "batch", "first miss"
        );
        for o in &self.options {
            let usd = o.hardware_usd.map_or("-".to_string(), |c| format!("${}", crate::capacity::planner::report::money_text(c)));
            if let Some(e) = &o.error {
                out += &format!("{:<w$} {usd:>10} cannot run: {e}\n", o.label);
                continue;
            }
            let cap = match (o.capacity, o.failed_at) {
                (None, _) => "none".to_string(),
                (Some(c), None) => format!(">= {}", axis.fmt(c)),
                (Some(c), Some(_)) => axis.fmt(c),
            };
            let p = o.at_capacity();
            let num = |f: fn(&Probe) -> f64| p.map_or("-".to_string(), |p| round3(f(p)).to_string());
            let miss = o
                .failed_at
                .and_then(|f| o.probes.iter().find(|p| p.load == f))
                .map_or(String::new(), |p| format!("{}: {}", axis.fmt(p.load), p.why));
            out += &format!(
                "{:<w$} {usd:>10} {:>16} {:>12} {:>12} {:>12} {:>8}  {miss}\n",
                o.label,
                cap,
                num(|p| p.ttft_p99_s),
                num(|p| p.tpot_p99_ms),
                num(|p| p.aggregate_decode_tokens_per_s),
                num(|p| p.mean_batch),
            );
        }
        out += "\n";
        match self.answer.as_deref().and_then(|a| self.options.iter().find(|o| o.label == a)) {
            Some(o) => out += &format!("answer: {} ({})\n", o.label, o.cluster.as_deref().unwrap_or("")),
            None => out += "answer: no option meets the SLO at any load probed\n",
        }
        if let Some(b) = self.budget_usd {
            out += &format!("budget: ${} of hardware per option\n", crate::capacity::planner::report::money_text(b));
        }
        for o in self.options.iter().filter(|o| o.error.is_none()) {
            if let Some(e) = o.calibration.as_ref().filter(|e| e.status != "inside") {
                out += &format!("extrapolation: {}: {}\n", o.label, e.reasons.join("; "));
            }
        }
        let probes: usize = self.options.iter().map(|o| o.probes.len()).sum();
        out += &format!(
            "\n{probes} probes in {:.1} s; bisection to within the spec's tolerance; each probe measures {} requests after warm-up \
             (fewer where a run reaches the cap of {} simulated forwards)\n",
            self.seconds,
            self.probe_requests,
            crate::estimate::serve::MAX_SERVE_FORWARDS
        );
        out
    }

    /// The chart's file stem in `dir`.
    pub fn chart_stem(dir: &Path) -> PathBuf {
        dir.join("slo-latency-vs-load")
    }
}
