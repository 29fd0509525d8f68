//! The trace recorder: the tasks of each executed step handed to a sink as they run (the CLI
//! streams them to disk), so memory stays flat in the trace's length; a cap on tasks bounds it.
//! Its own file because the generate workload records into it while the traced runs
//! ([`super::trace`]) drive the generate workload: neither imports the other both ways.

use crate::engine::Lowered;
use crate::sim::{ResourceKind, Time};

/// One task of a traced run: what ran where, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent<'a> {
    /// Resource name (`node0.gpu`, `node1.cpu`, `link 0->1`, ...).
    pub resource: &'a str,
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
    /// When the task's step (prefill chunk, decode step, serving forward) started, ns.
    pub step_start: Time,
    /// When the task's step ended (its last task), ns.
    pub step_end: Time,
    /// For a GPU task: the operations it runs, comma-separated.
    pub ops: Option<&'a str>,
}

/// A recorder of the tasks a run executes (zero-length tasks and join points are left out): it
/// hands each to its sink, up to `max_events`, and counts the rest.
pub struct Trace<'a> {
    /// Decode steps to record.
    pub max_decode_steps: u64,
    /// Tasks to record at most.
    pub max_events: u64,
    /// Tasks handed to the sink.
    pub recorded: u64,
    /// Tasks past `max_events`, not handed on.
    pub dropped: u64,
    /// Prefill chunks and decode steps executed while tracing.
    pub steps: u64,
    /// Prefill chunks and decode steps left unsimulated once the cap was reached.
    pub skipped: u64,
    sink: &'a mut dyn FnMut(&TraceEvent<'_>),
}

impl std::fmt::Debug for Trace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("recorded", &self.recorded)
            .field("dropped", &self.dropped)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl<'a> Trace<'a> {
    /// A recorder of `max_decode_steps` decode steps (and every prefill chunk), at most
    /// `max_events` tasks, handing each to `sink`.
    pub fn new(max_decode_steps: u64, max_events: u64, sink: &'a mut dyn FnMut(&TraceEvent<'_>)) -> Self {
        Trace { max_decode_steps, max_events, recorded: 0, dropped: 0, steps: 0, skipped: 0, sink }
    }

    /// Whether the cap is reached; if so the step at hand is counted as skipped (the traced run
    /// then simulates nothing more: its remaining steps would write nothing).
    pub(super) fn skip_if_full(&mut self) -> bool {
        let full = self.recorded >= self.max_events;
        self.skipped += u64::from(full);
        full
    }

    /// Hands the tasks of one executed step (started at `start`) to the sink.
    pub fn record(&mut self, low: &Lowered, tl: &crate::sim::Timeline, start: Time, phase: &'static str, step: u64) {
        self.steps += 1;
        let graph = &low.graph;
        let mut ops: Vec<Option<String>> = vec![None; graph.task_count()];
        for &(task, seg) in &low.gpu_tasks {
            let names: Vec<&str> = low.segments[seg].ops.iter().map(|o| o.name).collect();
            ops[task.index()] = Some(names.join(", "));
        }
        for ((task, t), ops) in graph.tasks().iter().zip(tl.timings()).zip(&ops) {
            let res = graph.resource(task.resource());
            if res.kind() == ResourceKind::Virtual || t.end == t.start {
                continue;
            }
            if self.recorded >= self.max_events {
                self.dropped += 1;
                continue;
            }
            self.recorded += 1;
            (self.sink)(&TraceEvent {
                resource: res.name(),
                node: res.node(),
                label: task.label(),
                phase,
                step,
                start: t.start,
                end: t.end,
                step_start: start,
                step_end: tl.makespan(),
                ops: ops.as_deref(),
            });
        }
    }
}
