//! Recording what a run executes, for the Perfetto trace of `run --trace`.

use crate::engine::{Lowered, Plan};
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::sim::{ResourceKind, Time};

use super::EstimateError;
use super::generate::simulate_generate_traced;

/// Traces the scenario's generate run as [`super::estimate`] simulates it (same plan, seed and jitter
/// stream): every prefill chunk and the first `max_decode_steps` decode steps.
pub fn trace(s: &Scenario, profile: &Profile, max_decode_steps: u64) -> Result<(Plan, Trace), EstimateError> {
    let plan = super::generate_plan(s, profile)?;
    let mut tr = Trace { max_decode_steps, events: Vec::new() };
    let steps = s.workload.generate_tokens.min(max_decode_steps);
    simulate_generate_traced(&plan, s.workload.prompt_tokens, steps, s.seed, Some(&mut tr));
    Ok((plan, tr))
}

/// One task of a traced run: what ran where, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Resource name (`node0.gpu`, `node1.cpu`, `link 0->1`, ...).
    pub resource: String,
    /// Node the resource belongs to (for links: the sender).
    pub node: u32,
    /// Task label (`compute`, `gpu->cpu`, `send`, `host`, ...).
    pub label: &'static str,
    /// `prefill` or `decode`.
    pub phase: &'static str,
    /// Step index within its phase (chunk number, or decode step).
    pub step: u64,
    /// Start, ns from the start of the run.
    pub start: Time,
    /// End, ns.
    pub end: Time,
    /// For a GPU task: the operations it runs, comma-separated.
    pub ops: Option<String>,
}

/// A recorder of the tasks a run executes (every prefill chunk, the first `max_decode_steps`
/// decode steps); zero-length tasks and join points are left out.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Decode steps to record.
    pub max_decode_steps: u64,
    /// The tasks, in execution-graph order per step.
    pub events: Vec<TraceEvent>,
}

impl Trace {
    pub(super) fn record(&mut self, low: &Lowered, tl: &crate::sim::Timeline, phase: &'static str, step: u64) {
        let graph = &low.graph;
        let mut ops: Vec<Option<String>> = vec![None; graph.tasks.len()];
        for &(task, seg) in &low.gpu_tasks {
            let names: Vec<&str> = low.segments[seg].ops.iter().map(|o| o.name).collect();
            ops[task.0 as usize] = Some(names.join(", "));
        }
        for ((task, t), ops) in graph.tasks.iter().zip(&tl.timings).zip(ops) {
            let res = &graph.resources[task.resource.0 as usize];
            if res.kind == ResourceKind::Virtual || t.end == t.start {
                continue;
            }
            self.events.push(TraceEvent {
                resource: res.name.clone(),
                node: res.node,
                label: task.label,
                phase,
                step,
                start: t.start,
                end: t.end,
                ops,
            });
        }
    }
}
