//! The one estimator behind `run`, `sweep`, `plan` and `validate`: resolve a scenario into a
//! plan, lower each forward step, execute it on the discrete-event core ([`generate`]), and turn
//! the timeline into throughput, latency, power, energy and cost ([`power`]). HPL has its own
//! model ([`hpl`]); [`envelope()`] says whether the profile covers the scenario; [`trace`] records
//! a run for Perfetto (through the [`recorder`]), and [`gantt()`] keeps one step of it for a chart.

use std::sync::Arc;

use crate::engine::{MemoryBreakdown, Plan, PlanError};
use crate::profile::Profile;
use crate::scenario::{ErrorKind, Scenario, WorkloadKind};
use crate::util::{round3, round6};

pub mod batched;
pub mod bounds;
pub mod envelope;
pub mod faults;
pub mod gantt;
pub mod generate;
pub mod hpl;
pub mod microbench;
pub mod power;
pub mod recorder;
pub mod replay;
pub mod replicas;
pub mod serve;
pub mod trace;
pub mod types;

pub use batched::simulate_batched_bench;
pub use bounds::{BOUND_MARGIN, Bounds, RunMemo, estimate_memo, nominal_bounds};
pub use envelope::{envelope, mechanism_on, same_setup, scenario_kernels, scenario_setups};
pub use gantt::{Gantt, GanttError, GanttRow, GanttSpan, GanttTask, TaskKind, gantt};
pub use generate::{
    GenerateRun, MAX_SIMULATED_DECODE_STEPS, MAX_SIMULATED_PREFILL_CHUNKS, Schedule, sample_generate, simulate_generate,
    simulate_generate_at, simulate_generate_traced,
};
pub use power::hardware_cost;
pub use replay::{ServeBase, estimate_nudged, estimate_serve_base};
pub use serve::{ServeRun, ServeSim, StepFactors, StepTable, simulate_serve};
pub use trace::{MAX_TRACE_EVENTS, MAX_TRACE_STEPS, Trace, TraceEvent, trace_plan, trace_run, trace_serve};
pub use types::{Envelope, Estimate, FaultLogEntry, FaultReport, Fits, HplProblem, NodeMemory, Percentiles, Quantiles, ServeMetrics};

/// Why a scenario cannot be estimated.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum EstimateError {
    /// Planning failed (fit, calibration).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl EstimateError {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EstimateError::Plan(e) => ErrorKind::from(e),
        }
    }

    /// How to fix it.
    pub fn fix(&self) -> String {
        match self {
            EstimateError::Plan(e) => e.fix(),
        }
    }
}

/// Runs the whole estimate for a scenario.
pub fn estimate(s: &Scenario, profile: &Profile) -> Result<Estimate, EstimateError> {
    if s.workload.kind == WorkloadKind::Hpl {
        // HPL runs no model: no plan, no memory of weights.
        let mut out = skeleton(s, vec![], profile);
        out.model = s.model.id.clone();
        out.quant = "fp64".into();
        hpl::hpl(s, profile, &mut out)?;
        out.faults = s.faults.as_ref().map(|f| faults::simulate(s, f, None, profile));
        return Ok(out);
    }
    let plan = generate_plan(s, profile)?;
    if let Some(sv) = &s.workload.serve {
        let mut out = skeleton(s, node_memory(s, &plan), profile);
        let run = replicas::simulate_scenario_serve(s, &plan, sv);
        serve_metrics(s, &plan, &run, &mut out);
        return Ok(out);
    }
    if s.workload.kind == WorkloadKind::BatchedBench {
        let w = &s.workload;
        let run = simulate_batched_bench(&plan, w.batch, w.prompt_tokens, w.generate_tokens, w.same_tokens, s.seed);
        return Ok(generate_estimate(s, &plan, &run, profile));
    }
    let w = &s.workload;
    let run = simulate_generate_at(&plan, w.context_tokens, w.prompt_tokens, w.generate_tokens, s.seed);
    Ok(generate_estimate(s, &plan, &run, profile))
}

/// What a generate schedule depends on: the plan (identity blanked), the cached context, the
/// prompt and the generation.
type ScheduleKey = (Plan, u64, u64, u64);

/// The last generate [`Schedule`] a worker built, with the key of what it depends on: the plan
/// (prices and names aside) and the prompt and generation lengths, not the seed.
#[derive(Debug, Default)]
pub struct ScheduleCache {
    /// The last plan (identity blanked, [`bounds::without_identity`]), its prompt and
    /// generation lengths, and its schedule. Compared whole: cheaper than a digest of its text,
    /// and exact.
    last: Option<(Box<ScheduleKey>, Arc<Schedule>)>,
    hits: u64,
}

impl ScheduleCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scenarios that reused the schedule of the one before.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// The schedule of `plan` for `prompt` + `generate` tokens: the cached one when it has the
    /// same key, else a new one (which replaces it).
    fn schedule(&mut self, plan: &Plan, depth: u64, prompt: u64, generate: u64) -> Arc<Schedule> {
        let key = (bounds::without_identity(plan), depth, prompt, generate);
        match &self.last {
            Some((k, sch)) if **k == key => {
                self.hits += 1;
                sch.clone()
            }
            _ => {
                let sch = Arc::new(Schedule::new(plan, depth, prompt, generate));
                self.last = Some((Box::new(key), sch.clone()));
                sch
            }
        }
    }
}

/// [`estimate`], reusing the lowered and timed steps of the previous generate scenario from
/// `cache` when it plans the same (consecutive sweep points that differ only in their seed):
/// the same result bit for bit, since a run's seed only drives its jitter stream
/// ([`Schedule::run`]).
pub fn estimate_reusing(s: &Scenario, profile: &Profile, cache: &mut ScheduleCache) -> Result<Estimate, EstimateError> {
    if s.workload.kind == WorkloadKind::Hpl || s.workload.serve.is_some() {
        return estimate(s, profile);
    }
    let plan = generate_plan(s, profile)?;
    let w = &s.workload;
    let run = cache.schedule(&plan, w.context_tokens, w.prompt_tokens, w.generate_tokens).run(s.seed);
    Ok(generate_estimate(s, &plan, &run, profile))
}

/// The estimate of a generate scenario from its simulated run.
pub(crate) fn generate_estimate(s: &Scenario, plan: &Plan, run: &GenerateRun, profile: &Profile) -> Estimate {
    // Replicas: the request runs on the first; the others' nodes stay idle.
    let widened = (s.replicas > 1).then(|| run.with_idle_copies(s.replicas));
    let run = widened.as_ref().unwrap_or(run);
    let mut out = skeleton(s, node_memory(s, plan), profile);
    let decode_s = run.decode_ns as f64 / 1e9;
    let prefill_s = run.prefill_ns as f64 / 1e9;
    // Every sequence of the run counts (a batched-bench run's S_TG and S_PP; 1 for generate).
    let sequences = s.workload.batch.max(1) as f64;
    out.decode_tokens_per_s = round3(sequences * s.workload.generate_tokens as f64 / decode_s);
    out.prefill_tokens_per_s = round3(sequences * s.workload.prompt_tokens as f64 / prefill_s);
    out.ttft_s = round6(prefill_s);
    out.tpot_ms = percentiles(&run.step_ns);
    power::decode_power_and_cost(s, plan, run, &mut out);
    out.sim_events = run.events;
    out.faults = s.faults.as_ref().map(|f| faults::simulate(s, f, Some(plan), profile));
    out
}

/// Step-time percentiles in ms (nearest rank on the sorted steps).
fn percentiles(step_ns: &[crate::sim::Time]) -> Percentiles {
    let mut steps = step_ns.to_vec();
    steps.sort_unstable();
    let pct = |p: f64| steps[((p * (steps.len() - 1) as f64).round() as usize).min(steps.len() - 1)] as f64 / 1e6;
    let mean = step_ns.iter().map(|&x| x as f64).sum::<f64>() / step_ns.len() as f64 / 1e6;
    Percentiles { p50: round6(pct(0.5)), p90: None, p99: round6(pct(0.99)), mean: round6(mean) }
}

/// Fills an estimate from a serving run: the top-level rates and latencies (decode rate =
/// aggregate, TTFT = mean, TPOT over requests), the serving metrics, and power at that load.
pub(crate) fn serve_metrics(s: &Scenario, plan: &Plan, run: &ServeRun, out: &mut Estimate) {
    let st = &run.stats;
    let window_s = run.window_ns as f64 / 1e9;
    let aggregate = if window_s > 0.0 { st.window_tokens as f64 / window_s } else { 0.0 };
    let n = st.completed.max(1) as f64;
    out.decode_tokens_per_s = round3(aggregate);
    out.prefill_tokens_per_s = if st.prefill_ns > 0 { round3(st.prompt_tokens as f64 / (st.prefill_ns as f64 / 1e9)) } else { 0.0 };
    out.ttft_s = round6(st.ttft_sum_ns as f64 / 1e9 / n);
    let q =
        |h: &serve::LogHistogram| Quantiles { p50: round6(h.quantile(0.5)), p90: round6(h.quantile(0.9)), p99: round6(h.quantile(0.99)) };
    let tpot = q(&st.tpot_ms);
    let tpot_mean = if st.output_tokens > 0 { st.decode_sum_ns as f64 / st.output_tokens as f64 / 1e6 } else { 0.0 };
    out.tpot_ms = Percentiles { p50: tpot.p50, p90: Some(tpot.p90), p99: tpot.p99, mean: round6(tpot_mean) };
    let ttft = q(&st.ttft_s);
    let slo = s.slo.any().then_some(&s.slo);
    let covered = st.covered_ns.max(1) as f64;
    out.serve = Some(ServeMetrics {
        aggregate_decode_tokens_per_s: round3(aggregate),
        per_request_decode_tokens_per_s: round3(st.per_request_rate_sum / n),
        generation_tokens_per_s: round3(st.tokens_after_first_per_s()),
        batch_prompt_tokens_per_s: round3(st.prompt_tokens_to_last_first_text_per_s()),
        mean_ttft_text_s: round6(st.ttft_text_sum_ns as f64 / 1e9 / n),
        ttft_percentiles_s: ttft,
        e2e_s: q(&st.e2e_s),
        itl_ms: q(&st.itl_ms),
        mean_e2e_s: round6(st.e2e_sum_ns as f64 / 1e9 / n),
        total_tokens_per_s: if window_s > 0.0 { round3((st.prompt_tokens + st.output_tokens) as f64 / window_s) } else { 0.0 },
        slo_attainment: slo.map(|_| round6(st.slo_met as f64 / n)),
        // Nothing completed (an overloaded server) meets no target.
        slo_met: slo.map(|x| st.completed > 0 && x.ttft_p99_s.is_none_or(|t| ttft.p99 <= t) && x.tpot_p99_ms.is_none_or(|t| tpot.p99 <= t)),
        requests_completed: st.completed,
        requests_rejected: st.rejected,
        goodput_tokens_per_s: if slo.is_some() && window_s > 0.0 { round3(aggregate * st.slo_met as f64 / n) } else { round3(aggregate) },
        mean_batch: round3(st.batch_ns as f64 / covered),
        mean_queue: round3(st.queue_ns as f64 / covered),
        peak_queue: st.peak_queue,
        peak_kv_percent: round3(st.peak_kv * 100.0),
        scheduler: format!("{:?}", serve::Policy::for_plan(plan, s.workload.serve.as_ref().expect("serve workload"))),
        simulated_window_s: round6(window_s),
        truncated: run.truncated,
    });
    // Power and energy at this load: utilisation over the whole run, idle gaps included.
    let span = GenerateRun {
        prefill_ns: 0,
        decode_ns: run.end_ns.max(1),
        decode_steps: 0, // the span carries utilisation only; rates come from the serve statistics
        step_ns: Vec::new(),
        decode_busy_gpu: run.busy_gpu.clone(),
        decode_busy_cpu: run.busy_cpu.clone(),
        events: run.events,
        decode_bytes_sent: 0,
        // The whole run counts as decode; there is no separate prefill phase to report.
        prefill_busy_gpu: vec![0; run.busy_gpu.len()],
        prefill_busy_cpu: vec![0; run.busy_cpu.len()],
        prefill_work: vec![Default::default(); run.work.len()],
        decode_work: run.work.clone(),
    };
    if aggregate > 0.0 {
        power::decode_power_and_cost(s, plan, &span, out);
        // No separate prefill phase: its power is the run's, not the idle draw a zero-length
        // phase would give.
        out.prefill_power_w = out.cluster_power_w;
        out.node_prefill_power_w = out.node_power_w.clone();
        out.peak_power_w = out.cluster_power_w;
        out.node_peak_power_w = out.node_power_w.clone();
    }
    out.sim_events = run.events;
}

/// Memory of each node of a generate plan (every replica's alike), for reports.
pub(crate) fn node_memory(s: &Scenario, plan: &Plan) -> Vec<NodeMemory> {
    plan.memory
        .iter()
        .zip(&plan.shares)
        .zip(&s.nodes)
        .cycle()
        .take(s.nodes.len() * s.replicas)
        .map(|((m, sh), node): ((&MemoryBreakdown, _), _)| NodeMemory {
            node: node.id.clone(),
            layers: [sh.first_layer, sh.end_layer],
            weights_gb: round3(m.weights_gb),
            kv_cache_gb: round3(m.kv_cache_gb),
            overhead_gb: round3(m.overhead_gb),
            total_gb: round3(m.total_gb),
            limit_gb: round3(m.limit_gb),
            raise_wired_limit: m.raised_wired_limit_mb.map(crate::engine::wired_limit_command),
        })
        .collect()
}

/// The estimate's identity, memory, hardware cost and envelope; the rates are filled in by the
/// workload.
pub(crate) fn skeleton(s: &Scenario, memory: Vec<NodeMemory>, profile: &Profile) -> Estimate {
    Estimate {
        name: s.name.clone(),
        fits: Fits,
        engine: s.engine.kind.id().into(),
        parallelism: s.engine.parallelism.id().into(),
        replicas: s.replicas,
        model: s.model.id.clone(),
        quant: s.quant.id.clone(),
        nodes: s.cluster_nodes().map(|n| n.id.clone()).collect(),
        fabric: s.fabric.id.clone(),
        topology: s.topology.id().into(),
        workload: match s.workload.kind {
            WorkloadKind::Generate => "generate".into(),
            WorkloadKind::Hpl => "hpl".into(),
            WorkloadKind::Serve => "serve".into(),
            WorkloadKind::BatchedBench => "batched-bench".into(),
        },
        prompt_tokens: s.workload.prompt_tokens,
        context_tokens: s.workload.context_tokens,
        generate_tokens: s.workload.generate_tokens,
        seed: s.seed,
        decode_tokens_per_s: 0.0,
        prefill_tokens_per_s: 0.0,
        ttft_s: 0.0,
        tpot_ms: Percentiles { p50: 0.0, p90: None, p99: 0.0, mean: 0.0 },
        cluster_power_w: 0.0,
        node_power_w: vec![],
        prefill_power_w: 0.0,
        node_prefill_power_w: vec![],
        peak_power_w: 0.0,
        node_peak_power_w: vec![],
        decode_gpu_busy_percent: vec![],
        energy_j_per_token: 0.0,
        memory_per_node_gb: memory.iter().map(|m| m.total_gb).collect(),
        memory,
        cost_usd: round3(hardware_cost(s)),
        usd_per_mtok: 0.0,
        usd_per_token_per_s: 0.0,
        cables: s.replicas * s.topology.cables(s.nodes.len()),
        hpl_gflops: None,
        hpl_problem: None,
        calibration: envelope(s, profile),
        sim_events: 0,
        faults: None,
        serve: None,
    }
}

/// The plan of a scenario whose KV cache holds the whole prompt and generation (of every
/// sequence of a batched-bench run).
pub(crate) fn generate_plan(s: &Scenario, profile: &Profile) -> Result<Plan, PlanError> {
    let w = &s.workload;
    s.plan(w.batch.max(1) * (w.context_tokens + w.prompt_tokens + w.generate_tokens), profile)
}
