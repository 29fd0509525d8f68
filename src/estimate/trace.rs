//! Traced runs, for the Perfetto trace of `run --trace`: the scenario's generate or serving
//! workload run as the estimate runs it, every step's tasks handed to a [`Trace`] recorder
//! ([`super::recorder`]) whose sink the CLI streams to disk; a cap on tasks bounds the file.

use crate::engine::Plan;
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::sim::Time;

use super::EstimateError;
use super::generate::simulate_generate_traced;
pub use super::recorder::{Trace, TraceEvent};
use super::serve::{Forward, ServeRun, ServeSim};

/// Most decode steps a trace may record (`run --trace-steps`); a longer generation's steps past
/// it are sampled by the estimate (see [`super::generate::MAX_SIMULATED_DECODE_STEPS`]).
pub const MAX_TRACE_STEPS: u64 = super::generate::MAX_SIMULATED_DECODE_STEPS;

/// Most tasks a trace records (about 150 bytes each in the file: ~150 MB); the rest of the step
/// that reaches it is counted, not written, and the traced run simulates no further step.
pub const MAX_TRACE_EVENTS: u64 = 1_000_000;

/// The plan a trace of the scenario runs (the one [`super::estimate`] uses).
pub fn trace_plan(s: &Scenario, profile: &Profile) -> Result<Plan, EstimateError> {
    Ok(super::generate_plan(s, profile)?)
}

/// Runs the scenario's generate workload as [`super::estimate`] simulates it (same plan, seed and
/// jitter stream), handing every prefill chunk's and the first `tr.max_decode_steps` decode
/// steps' tasks to the trace's sink (at most `tr.max_events`). Once the cap is reached the run
/// stops simulating: the steps left are counted in `tr.skipped`.
pub fn trace_run(s: &Scenario, plan: &Plan, tr: &mut Trace<'_>) {
    let steps = s.workload.generate_tokens.min(tr.max_decode_steps);
    simulate_generate_traced(plan, s.workload.context_tokens, s.workload.prompt_tokens, steps, s.seed, Some(tr));
}

/// Runs the scenario's serving workload as [`super::estimate`] simulates it (same plan, seed and
/// streams: the observer changes nothing), handing the tasks of every forward that starts in
/// `window` (ns, `[from, to)`) to the trace's sink (at most `tr.max_events`). Serving forwards
/// are traced as phase `decode` (one token per sequence) or `prefill` (any prompt tokens), with
/// the forward's index as the step. The returned run's log holds the requests whose lifecycle
/// (arrival to done) overlaps the window, in completion order. With replicas it traces the
/// first replica and its share of the requests.
///
/// # Panics
/// When the scenario is not a serving workload.
pub fn trace_serve(s: &Scenario, plan: &Plan, window: (Time, Time), tr: &mut Trace<'_>) -> ServeRun {
    let sv = s.workload.serve.as_ref().expect("a serving workload");
    // Replicas: the first one's share (every replica runs the same physics).
    let first = (s.replicas > 1).then(|| super::replicas::shares(sv, s.replicas).swap_remove(0)).flatten();
    let sv = first.as_ref().unwrap_or(sv);
    let mut run = ServeSim::new(plan, sv, &s.slo, s.seed)
        .with_request_log()
        .with_observer(|f: &Forward<'_>| {
            if f.start >= window.0 && f.start < window.1 {
                let phase = if f.tokens == f.sequences as u64 { "decode" } else { "prefill" };
                tr.record(f.lowered, f.timeline, f.start, phase, f.index);
            }
        })
        .run();
    if let Some(log) = run.log.as_mut() {
        log.retain(|r| r.arrival < window.1 && r.done >= window.0);
    }
    run
}
