//! One decode step (or a window of a serving run) per node and resource, for `supernode gantt`.
//! The tasks come from the trace recorder ([`super::trace`]): the records `run --trace` writes,
//! from the same simulation, never a second one.

use crate::engine::lower_step;
use crate::profile::Profile;
use crate::scenario::{Scenario, WorkloadKind};
use crate::sim::{ResourceKind, Time};

use super::EstimateError;
use super::recorder::{Trace, TraceEvent};
use super::serve::arrivals::s_to_ns;
use super::trace::{MAX_TRACE_STEPS, trace_plan, trace_run, trace_serve};

/// What a task does, for its colour in the Gantt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskKind {
    /// Kernels on a GPU (and llama.cpp's RPC graph_compute call).
    Compute,
    /// Host and device handing over: `gpu->cpu`, `cpu->gpu`, per-step host work, an eager
    /// engine's kernel launches.
    Sync,
    /// A collective's work on a host: reductions, posting RDMA work.
    Collective,
    /// Bytes on a link, and llama.cpp's RPC tensor copies.
    Transfer,
    /// Anything not named above.
    Other,
}

impl TaskKind {
    /// Every kind, in legend order.
    pub const ALL: [TaskKind; 5] = [TaskKind::Compute, TaskKind::Sync, TaskKind::Collective, TaskKind::Transfer, TaskKind::Other];

    /// The kind of a task by its label (the engine's lowering names its tasks).
    pub fn of(label: &str) -> TaskKind {
        match label {
            "compute" | "rpc graph_compute" => TaskKind::Compute,
            "gpu->cpu" | "cpu->gpu" | "host" | "ray" | "dispatch" => TaskKind::Sync,
            "reduce" | "post" | "nccl all-reduce" | "nccl all-gather" | "nccl send" => TaskKind::Collective,
            "xfer" | "rpc set_tensor" | "rpc get_tensor" | "rpc deserialize" => TaskKind::Transfer,
            _ => TaskKind::Other,
        }
    }

    /// Lower-case name (legend, JSON).
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Compute => "compute",
            TaskKind::Sync => "sync",
            TaskKind::Collective => "collective",
            TaskKind::Transfer => "transfer",
            TaskKind::Other => "other",
        }
    }
}

/// One row of the Gantt: a resource of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GanttRow {
    /// Node index (for links: the sender).
    pub node: u32,
    /// Resource name (`node0.gpu`, `node1.cpu`, `link 0->1`).
    pub resource: String,
    /// What the resource is.
    pub kind: ResourceKind,
}

/// One task drawn in the Gantt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GanttTask {
    /// Index into [`Gantt::rows`].
    pub row: usize,
    /// The task's label (`compute`, `xfer`, `reduce`, ...).
    pub label: &'static str,
    /// Its colour class.
    pub kind: TaskKind,
    /// `prefill` or `decode`.
    pub phase: &'static str,
    /// Its step: decode step, prefill chunk, or serving forward index.
    pub step: u64,
    /// Start, ns from the start of the run.
    pub start: Time,
    /// End, ns.
    pub end: Time,
}

/// The tasks of one step (or a window) per node and resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gantt {
    /// The scenario's name.
    pub scenario: String,
    /// What is drawn, in words (`decode step 0`, `forwards 12..15`).
    pub what: String,
    /// Start of the span drawn, ns.
    pub start: Time,
    /// End of the span drawn, ns.
    pub end: Time,
    /// Every resource of the cluster (GPU, CPU, each link direction), by node.
    pub rows: Vec<GanttRow>,
    /// The tasks, in the order the trace records them.
    pub tasks: Vec<GanttTask>,
}

impl Gantt {
    /// Length of the span drawn, ns (the step time of a single step).
    pub fn span(&self) -> Time {
        self.end - self.start
    }

    /// Busy and idle ns per row within the span (tasks clipped to it); busy + idle = the span.
    /// Tasks on one resource never overlap (one task at a time, FIFO), so busy is their sum.
    pub fn busy_idle(&self) -> Vec<(Time, Time)> {
        let mut busy = vec![0; self.rows.len()];
        for t in &self.tasks {
            busy[t.row] += t.end.min(self.end).saturating_sub(t.start.max(self.start));
        }
        busy.into_iter().map(|b| (b, self.span() - b)).collect()
    }

    /// Busy ns per task kind and row within the span.
    pub fn busy_by_kind(&self) -> Vec<[Time; 5]> {
        let mut busy = vec![[0; 5]; self.rows.len()];
        for t in &self.tasks {
            let k = TaskKind::ALL.iter().position(|&k| k == t.kind).expect("a listed kind");
            busy[t.row][k] += t.end.min(self.end).saturating_sub(t.start.max(self.start));
        }
        busy
    }
}

/// What part of a run to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GanttSpan {
    /// Generate: decode step K (0 = the first after prefill). Serve: the K-th pure decode
    /// forward that starts after warm-up.
    Step(u64),
    /// Serve: every forward that starts in `[from, to)`, ns.
    Window(Time, Time),
}

/// Why a Gantt cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum GanttError {
    /// The scenario cannot be planned.
    #[error(transparent)]
    Estimate(#[from] EstimateError),
    /// The workload or the span asked for does not fit the run.
    #[error("{0}")]
    Input(String),
}

/// A trace record kept for the Gantt.
struct Captured {
    resource: String,
    label: &'static str,
    phase: &'static str,
    step: u64,
    start: Time,
    end: Time,
    step_start: Time,
    step_end: Time,
}

impl Captured {
    fn of(e: &TraceEvent<'_>) -> Self {
        Captured {
            resource: e.resource.to_string(),
            label: e.label,
            phase: e.phase,
            step: e.step,
            start: e.start,
            end: e.end,
            step_start: e.step_start,
            step_end: e.step_end,
        }
    }
}

/// Runs the scenario's estimate with the trace recorder and keeps the tasks of `span` (by
/// default: the first decode step after prefill, or for a serving run the first pure decode
/// forward after warm-up).
pub fn gantt(s: &Scenario, profile: &Profile, span: Option<GanttSpan>) -> Result<Gantt, GanttError> {
    let plan = trace_plan(s, profile)?;
    let mut rows: Vec<(usize, GanttRow)> = lower_step(&plan, 1)
        .graph
        .resources()
        .iter()
        .filter(|r| r.kind() != ResourceKind::Virtual)
        .enumerate()
        .map(|(i, r)| (i, GanttRow { node: r.node(), resource: r.name().to_string(), kind: r.kind() }))
        .collect();
    let rank = |k: ResourceKind| match k {
        ResourceKind::Gpu => 0,
        ResourceKind::Cpu => 1,
        ResourceKind::Link | ResourceKind::Virtual => 2,
    };
    rows.sort_by_key(|(i, r)| (r.node, rank(r.kind), *i));
    let rows: Vec<GanttRow> = rows.into_iter().map(|(_, r)| r).collect();
    let (what, start, end, captured) = match s.workload.kind {
        WorkloadKind::Generate => generate_step(s, &plan, span)?,
        WorkloadKind::Serve => serve_span(s, &plan, span)?,
        WorkloadKind::Hpl => return Err(GanttError::Input("gantt draws generate and serve workloads, not HPL".into())),
        WorkloadKind::BatchedBench => {
            return Err(GanttError::Input("gantt draws generate and serve workloads, not batched-bench (use kind = \"generate\")".into()));
        }
    };
    let mut tasks = Vec::with_capacity(captured.len());
    for c in captured {
        let row = rows
            .iter()
            .position(|r| r.resource == c.resource)
            .ok_or_else(|| GanttError::Input(format!("resource `{}` of a traced task is not in the cluster's step graph", c.resource)))?;
        tasks.push(GanttTask {
            row,
            label: c.label,
            kind: TaskKind::of(c.label),
            phase: c.phase,
            step: c.step,
            start: c.start,
            end: c.end,
        });
    }
    Ok(Gantt { scenario: s.name.clone(), what, start, end, rows, tasks })
}

type Span = (String, Time, Time, Vec<Captured>);

/// Decode step K of a generate run.
fn generate_step(s: &Scenario, plan: &crate::engine::Plan, span: Option<GanttSpan>) -> Result<Span, GanttError> {
    let k = match span {
        None => 0,
        Some(GanttSpan::Step(k)) => k,
        Some(GanttSpan::Window(..)) => {
            return Err(GanttError::Input("--window draws a window of a serving run; a generate run takes --step K".into()));
        }
    };
    let steps = s.workload.generate_tokens.min(MAX_TRACE_STEPS);
    if k >= steps {
        return Err(GanttError::Input(format!(
            "--step {k} is past the traced decode steps (0 to {}: the workload's generate_tokens, at most {MAX_TRACE_STEPS})",
            steps.saturating_sub(1)
        )));
    }
    let mut kept = Vec::new();
    {
        let mut sink = |e: &TraceEvent<'_>| {
            if e.phase == "decode" && e.step == k {
                kept.push(Captured::of(e));
            }
        };
        let mut tr = Trace::new(k + 1, u64::MAX, &mut sink);
        trace_run(s, plan, &mut tr);
    }
    let first = kept.first().ok_or_else(|| GanttError::Input(format!("decode step {k} ran no task")))?;
    let (start, end) = (first.step_start, first.step_end);
    Ok((format!("decode step {k}"), start, end, kept))
}

/// A window, or the K-th decode forward after warm-up, of a serving run.
fn serve_span(s: &Scenario, plan: &crate::engine::Plan, span: Option<GanttSpan>) -> Result<Span, GanttError> {
    let sv = s.workload.serve.as_ref().expect("a serving workload has its section");
    let warmup = s_to_ns(sv.warmup_s);
    let mut kept: Vec<Captured> = Vec::new();
    match span.unwrap_or(GanttSpan::Step(0)) {
        GanttSpan::Window(from, to) => {
            if to <= from {
                return Err(GanttError::Input("--window T0..T1 needs T1 > T0 (seconds)".into()));
            }
            let mut sink = |e: &TraceEvent<'_>| kept.push(Captured::of(e));
            let mut tr = Trace::new(0, u64::MAX, &mut sink);
            let run = trace_serve(s, plan, (from, to), &mut tr);
            if kept.is_empty() {
                return Err(GanttError::Input(format!(
                    "no forward starts in the window {}..{} s (the run ends at {} s)",
                    from as f64 / 1e9,
                    to as f64 / 1e9,
                    run.end_ns as f64 / 1e9
                )));
            }
            let first = kept.iter().map(|c| c.step).min().unwrap_or(0);
            let last = kept.iter().map(|c| c.step).max().unwrap_or(0);
            Ok((format!("forwards {first}..{last} in {}..{} s", from as f64 / 1e9, to as f64 / 1e9), from, to, kept))
        }
        GanttSpan::Step(k) => {
            // The k-th forward that is a pure decode step (phase `decode`), counted from warm-up.
            let (mut seen, mut current) = (0u64, None::<u64>);
            let mut sink = |e: &TraceEvent<'_>| {
                if e.phase != "decode" {
                    return;
                }
                if current != Some(e.step) {
                    current = Some(e.step);
                    seen += 1;
                }
                if seen == k + 1 {
                    kept.push(Captured::of(e));
                }
            };
            let mut tr = Trace::new(0, u64::MAX, &mut sink);
            trace_serve(s, plan, (warmup, Time::MAX), &mut tr);
            let first = kept
                .first()
                .ok_or_else(|| GanttError::Input(format!("the serving run has fewer than {} decode forwards after warm-up", k + 1)))?;
            let (start, end, index) = (first.step_start, first.step_end, first.step);
            let what = format!("decode forward {k} after warm-up (forward {index}, t = {:.3} s)", start as f64 / 1e9);
            Ok((what, start, end, kept))
        }
    }
}
