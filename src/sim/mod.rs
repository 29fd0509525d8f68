//! The discrete-event core: integer time, a deterministic event queue, resources and the
//! execution of a task graph with dependencies.
//!
//! It knows nothing about LLMs, engines or files: a task is "occupy this resource for this many
//! nanoseconds once these other tasks have finished". Engines build the graphs; this module runs
//! them and reports when each task started and ended and how long each resource was busy.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chacha20::ChaCha8Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

/// Simulated time in nanoseconds. Integer so that runs are exact and platform independent.
pub type Time = u64;

/// Index of a resource (a GPU stream, a CPU, one direction of a link) in a [`TaskGraph`]. Only
/// the graph hands them out, so an id always names a resource of the graph that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

impl ResourceId {
    /// Its position in the graph's resources (and in [`Timeline::busy_by_resource`]).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Index of a task in a [`TaskGraph`]. Only the graph hands them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(u32);

impl TaskId {
    /// Its position in the graph's tasks (and in [`Timeline::timings`]).
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What kind of work a resource does; used by power models and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceKind {
    /// A node's GPU command stream.
    Gpu,
    /// A node's CPU (collective reductions, host work, RPC handling).
    Cpu,
    /// One direction of a network link.
    Link,
    /// Not a real resource: tasks on it never wait for each other. Joins (dependency merge
    /// points) live here.
    Virtual,
}

/// A resource: it runs one task at a time, first come first served. Read-only outside this
/// module: the graph builds it.
#[derive(Clone, Debug)]
pub struct Resource {
    /// Human-readable name, e.g. `node0.gpu` or `link 0->1`.
    name: String,
    /// What the resource is.
    kind: ResourceKind,
    /// The node it belongs to (for links: the sending node).
    node: u32,
}

impl Resource {
    /// Human-readable name, e.g. `node0.gpu` or `link 0->1`.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the resource is.
    #[inline]
    pub fn kind(&self) -> ResourceKind {
        self.kind
    }

    /// The node it belongs to (for links: the sending node).
    #[inline]
    pub fn node(&self) -> u32 {
        self.node
    }
}

/// One unit of work. Read-only outside this module: the graph builds it, and only its duration
/// may change afterwards ([`TaskGraph::set_duration`]).
#[derive(Clone, Debug)]
pub struct Task {
    /// The resource it occupies.
    resource: ResourceId,
    /// Nominal duration in nanoseconds (before jitter).
    duration: Time,
    /// Whether seeded jitter applies to this task (compute does; fixed latencies need not).
    jitter: bool,
    /// Scale of the jitter's relative sigma: 1 for a task, `1/sqrt(k)` for a task that stands
    /// for `k` independently jittered tasks in series ([`TaskGraph::compute_merged`]).
    jitter_scale: f64,
    /// Bytes moved by this task if it is a transfer on a link (for conservation checks).
    bytes: u64,
    /// Short label for traces.
    label: &'static str,
}

impl Task {
    /// The resource it occupies.
    #[inline]
    pub fn resource(&self) -> ResourceId {
        self.resource
    }

    /// Nominal duration in nanoseconds (before jitter).
    #[inline]
    pub fn duration(&self) -> Time {
        self.duration
    }

    /// Whether seeded jitter applies to this task.
    #[inline]
    pub fn jittered(&self) -> bool {
        self.jitter
    }

    /// Scale of the jitter's relative sigma (1 but for a merged task, see
    /// [`TaskGraph::compute_merged`]).
    #[inline]
    pub fn jitter_scale(&self) -> f64 {
        self.jitter_scale
    }

    /// Bytes moved by this task if it is a transfer on a link (0 otherwise).
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Short label for traces.
    #[inline]
    pub fn label(&self) -> &'static str {
        self.label
    }
}

/// A directed acyclic graph of tasks over a set of resources. Built through its methods
/// (resources, tasks with their dependencies, joins) and read through them; its storage is its
/// own, so no other layer can break its invariants (dependencies precede successors, the
/// successor cache matches the predecessor lists).
#[derive(Clone, Debug, Default)]
pub struct TaskGraph {
    /// Resources, indexed by [`ResourceId`].
    resources: Vec<Resource>,
    /// Tasks, indexed by [`TaskId`].
    tasks: Vec<Task>,
    /// Predecessors, flat: task t's are `pred_list[pred_start[t]..pred_start[t + 1]]`.
    pred_list: Vec<u32>,
    /// Offsets into `pred_list` (one more entry than tasks once the first task is added).
    pred_start: Vec<u32>,
    /// Successors in compressed form (`list[start[t]..start[t + 1]]`), built on first execution
    /// and reused while the graph's shape does not change (decode steps re-time, not rebuild).
    csr: std::sync::OnceLock<(Vec<u32>, Vec<u32>)>,
    /// What [`LeanRun`]'s pass reads of each task, packed, built on first use and kept while
    /// the shape stays (like `csr`).
    lean: std::sync::OnceLock<Vec<LeanTask>>,
    /// The resource joins live on, created with the first join.
    virtual_resource: Option<ResourceId>,
}

impl TaskGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a resource and returns its id.
    pub fn add_resource(&mut self, name: impl Into<String>, kind: ResourceKind, node: u32) -> ResourceId {
        self.resources.push(Resource { name: name.into(), kind, node });
        ResourceId(self.resources.len() as u32 - 1)
    }

    /// Adds a task that may start once every task in `deps` has finished.
    fn add_task(&mut self, task: Task, deps: &[TaskId]) -> TaskId {
        let id = self.tasks.len() as u32;
        debug_assert!((task.resource.0 as usize) < self.resources.len(), "unknown resource");
        self.tasks.push(task);
        self.csr = Default::default();
        self.lean = Default::default();
        if self.pred_start.is_empty() {
            self.pred_start.push(0);
        }
        self.pred_list.extend(deps.iter().map(|d| d.0));
        self.pred_start.push(self.pred_list.len() as u32);
        debug_assert!(deps.iter().all(|d| d.0 < id), "dependencies must be added before their successors");
        TaskId(id)
    }

    /// Convenience: a task with no bytes and jitter on.
    pub fn compute(&mut self, resource: ResourceId, duration: Time, label: &'static str, deps: &[TaskId]) -> TaskId {
        self.add_task(Task { resource, duration, jitter: true, jitter_scale: 1.0, bytes: 0, label }, deps)
    }

    /// A compute task standing for `parts` compute tasks of `duration / parts` each, run one
    /// after another on `resource` (a collapsed collective's reductions or posts). One jitter
    /// draw with relative sigma `cv / sqrt(parts)`: the sum of `parts` independent draws of
    /// sigma `cv` has that relative sigma (to first order; the [0.5, 2] clamp aside), so the
    /// task keeps the mean and variance of the chain it replaces while drawing once.
    pub fn compute_merged(&mut self, resource: ResourceId, duration: Time, parts: u32, label: &'static str, deps: &[TaskId]) -> TaskId {
        let jitter_scale = 1.0 / f64::from(parts.max(1)).sqrt();
        self.add_task(Task { resource, duration, jitter: true, jitter_scale, bytes: 0, label }, deps)
    }

    /// Convenience: a transfer of `bytes` on a link resource (no jitter).
    pub fn transfer(&mut self, link: ResourceId, duration: Time, bytes: u64, deps: &[TaskId]) -> TaskId {
        self.add_task(Task { resource: link, duration, jitter: false, jitter_scale: 1.0, bytes, label: "xfer" }, deps)
    }

    /// A zero-length join point: done when all `deps` are. It occupies no real resource.
    pub fn join(&mut self, deps: &[TaskId]) -> TaskId {
        let v = match self.virtual_resource {
            Some(v) => v,
            None => {
                let v = self.add_resource("joins", ResourceKind::Virtual, 0);
                self.virtual_resource = Some(v);
                v
            }
        };
        self.add_task(Task { resource: v, duration: 0, jitter: false, jitter_scale: 1.0, bytes: 0, label: "join" }, deps)
    }

    /// Sets a task's nominal duration: engines re-time one lowered graph per step (the context
    /// grows) instead of rebuilding it. The graph's shape, and so its successor cache, stays.
    #[inline]
    pub fn set_duration(&mut self, task: TaskId, duration: Time) {
        self.tasks[task.0 as usize].duration = duration;
    }

    /// Number of tasks.
    #[inline]
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Number of resources (joins' virtual resource included once a join exists).
    #[inline]
    pub fn resource_count(&self) -> usize {
        self.resources.len()
    }

    /// The tasks in task order, indexed like [`TaskId::index`] and [`Timeline::timings`].
    #[inline]
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The resources, indexed like [`ResourceId::index`] and [`Timeline::busy_by_resource`].
    #[inline]
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// One task.
    #[inline]
    pub fn task(&self, t: TaskId) -> &Task {
        &self.tasks[t.0 as usize]
    }

    /// One resource.
    #[inline]
    pub fn resource(&self, r: ResourceId) -> &Resource {
        &self.resources[r.0 as usize]
    }

    /// The resource a task occupies.
    #[inline]
    pub fn resource_of(&self, t: TaskId) -> &Resource {
        &self.resources[self.tasks[t.0 as usize].resource.0 as usize]
    }

    /// Every task id, in task order.
    pub fn task_ids(&self) -> impl ExactSizeIterator<Item = TaskId> + use<> {
        (0..self.tasks.len() as u32).map(TaskId)
    }

    /// Every resource id, in order.
    pub fn resource_ids(&self) -> impl ExactSizeIterator<Item = ResourceId> + use<> {
        (0..self.resources.len() as u32).map(ResourceId)
    }

    /// Predecessors of a task, in the order its dependencies were given.
    pub fn predecessors(&self, t: TaskId) -> impl ExactSizeIterator<Item = TaskId> + '_ {
        self.pred_slice(t.0 as usize).iter().map(|&p| TaskId(p))
    }

    /// Predecessor count of a task.
    #[inline]
    pub fn pred_count(&self, t: TaskId) -> u32 {
        self.pred_slice(t.0 as usize).len() as u32
    }

    /// Successors of a task, in increasing task order.
    pub fn successors(&self, t: TaskId) -> impl ExactSizeIterator<Item = TaskId> + '_ {
        let (start, list) = self.csr();
        list[start[t.0 as usize] as usize..start[t.0 as usize + 1] as usize].iter().map(|&s| TaskId(s))
    }

    /// Predecessor indices of task `t`, as stored (the event loop reads them raw).
    #[inline]
    fn pred_slice(&self, t: usize) -> &[u32] {
        &self.pred_list[self.pred_start[t] as usize..self.pred_start[t + 1] as usize]
    }

    /// The packed per-task view [`LeanRun`]'s pass walks (see [`LeanTask`]).
    fn lean_tasks(&self) -> &[LeanTask] {
        self.lean.get_or_init(|| {
            self.tasks
                .iter()
                .enumerate()
                .map(|(t, task)| {
                    assert!(task.resource.0 < LeanTask::VIRTUAL, "a graph has fewer than 2^30 resources");
                    let virtual_flag =
                        if self.resources[task.resource.0 as usize].kind == ResourceKind::Virtual { LeanTask::VIRTUAL } else { 0 };
                    LeanTask {
                        preds_end: self.pred_start[t + 1],
                        resource: task.resource.0 | virtual_flag | if task.jitter { LeanTask::JITTERED } else { 0 },
                        jitter_scale: task.jitter_scale,
                    }
                })
                .collect()
        })
    }

    /// Successors in compressed form, derived once from the predecessor lists (a counting sort:
    /// each task's successors come out in increasing task order).
    fn csr(&self) -> &(Vec<u32>, Vec<u32>) {
        self.csr.get_or_init(|| {
            let n = self.tasks.len();
            let mut start = vec![0u32; n + 1];
            for &p in &self.pred_list {
                start[p as usize + 1] += 1;
            }
            for i in 0..n {
                start[i + 1] += start[i];
            }
            let mut fill = start.clone();
            let mut list = vec![0u32; self.pred_list.len()];
            for t in 0..n {
                for &p in self.pred_slice(t) {
                    list[fill[p as usize] as usize] = t as u32;
                    fill[p as usize] += 1;
                }
            }
            (start, list)
        })
    }
}

/// Seeded multiplicative jitter on task durations: one ChaCha stream per simulation run.
pub struct Jitter {
    rng: ChaCha8Rng,
    normal: Option<Normal<f64>>,
}

impl Jitter {
    /// Jitter with coefficient of variation `cv` (0 disables it), seeded by `seed`.
    pub fn new(seed: u64, cv: f64) -> Self {
        let normal = if cv > 0.0 { Normal::new(0.0, cv).ok() } else { None };
        Self { rng: ChaCha8Rng::seed_from_u64(seed), normal }
    }

    /// No jitter at all.
    pub fn none() -> Self {
        Self::new(0, 0.0)
    }

    /// Applies jitter to a nominal duration. The factor is clamped to [0.5, 2] so that a task is
    /// never negative or absurdly long.
    pub fn apply(&mut self, d: Time) -> Time {
        self.apply_scaled(d, 1.0)
    }

    /// [`Self::apply`] with the relative sigma scaled by `scale` (one draw either way; a scale
    /// of 1 gives `apply`'s value bit for bit, as `z * 1.0 == z`).
    pub fn apply_scaled(&mut self, d: Time, scale: f64) -> Time {
        match &self.normal {
            Some(n) if d > 0 => {
                let f = (1.0 + n.sample(&mut self.rng) * scale).clamp(0.5, 2.0);
                round_to_time(time_as_f64(d) * f)
            }
            _ => d,
        }
    }

    /// Whether this jitter draws at all (a coefficient of variation above 0).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.normal.is_some()
    }

    /// Where the stream is (in 32-bit words), to come back to with [`Self::rewind`].
    fn position(&self) -> u128 {
        self.rng.get_word_pos()
    }

    /// Puts the stream back at a [`Self::position`]: the next draws repeat the ones made since.
    fn rewind(&mut self, position: u128) {
        self.rng.set_word_pos(position);
    }
}

/// `x.round() as Time` for `x >= 0`, without the libm call: truncate, then add one when the
/// dropped fraction is at least one half (round half away from zero, as `f64::round`). Exact:
/// `x - trunc(x)` is representable for every float (both share x's exponent or the difference is
/// 0 above 2^52, where every float is an integer), so the comparison with 0.5 sees the true
/// fraction. Saturates like the `as` cast. Checked against `f64::round` in the tests below.
///
/// Below 2^63 it converts through `i64`: x86-64 has one instruction each way for signed
/// integers and a multi-instruction sequence for unsigned ones, and the jitter rounds once per
/// jittered task (the sweep's hottest line). Both paths give the same value there.
#[inline]
pub fn round_to_time(x: f64) -> Time {
    if (0.0..TWO_POW_63).contains(&x) {
        let whole = x as i64;
        let fraction = x - whole as f64;
        // `whole <= 2^63 - 1024` (the largest float below 2^63), so adding 1 cannot overflow.
        return (whole + i64::from(fraction >= 0.5)) as Time;
    }
    let whole = x as Time;
    let fraction = x - whole as f64;
    whole.saturating_add(Time::from(fraction >= 0.5))
}

/// 2^63, the first float an `i64` cannot hold.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `d as f64`, through `i64` when it fits (one instruction on x86-64 instead of the unsigned
/// sequence; the same value: both round the integer to the nearest float).
#[inline]
fn time_as_f64(d: Time) -> f64 {
    match i64::try_from(d) {
        Ok(signed) => signed as f64,
        Err(_) => d as f64,
    }
}

/// Seeded draws for fault processes (crashes, cable losses, link failures). Its own ChaCha
/// stream (stream 1) of the run's seed: the same seed gives the same faults, and drawing them
/// never shifts the jitter of the performance timeline (stream 0, [`Jitter`]).
pub struct FaultDraws {
    rng: ChaCha8Rng,
}

impl FaultDraws {
    /// Fault draws of a run seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        Self { rng }
    }

    /// Time to the first of competing exponential events whose rates sum to `rate` (per unit
    /// time), in that unit; infinite when `rate` is 0.
    pub fn exponential(&mut self, rate: f64) -> f64 {
        if rate > 0.0 {
            let e: f64 = rand_distr::Exp1.sample(&mut self.rng);
            e / rate
        } else {
            f64::INFINITY
        }
    }

    /// Which of the competing events happened: an index drawn with probability proportional to
    /// `rates` (the last positive one if rounding runs past the end).
    pub fn pick(&mut self, rates: &[f64]) -> usize {
        let total: f64 = rates.iter().sum();
        let u: f64 = rand_distr::StandardUniform.sample(&mut self.rng);
        let mut x = u * total;
        let mut last = 0;
        for (i, &r) in rates.iter().enumerate() {
            if r > 0.0 {
                last = i;
                if x < r {
                    return i;
                }
                x -= r;
            }
        }
        last
    }
}

/// One task as [`LeanRun`]'s pass reads it: 16 bytes instead of a [`Task`]'s 48, so a step's
/// graph streams through the cache in a third of the lines, and the predecessor range comes
/// from the previous task's end instead of two offset loads.
#[derive(Clone, Copy, Debug)]
struct LeanTask {
    /// End of its predecessors in the graph's flat predecessor list (they start where the
    /// previous task's end).
    preds_end: u32,
    /// Its resource's index, with [`Self::JITTERED`] and [`Self::VIRTUAL`] set when they apply.
    resource: u32,
    /// The task's [`Task::jitter_scale`].
    jitter_scale: f64,
}

impl LeanTask {
    /// Flag: seeded jitter applies.
    const JITTERED: u32 = 1 << 31;
    /// Flag: the resource is the joins' virtual one (never contended).
    const VIRTUAL: u32 = 1 << 30;
    /// The resource index without the flags.
    const INDEX: u32 = Self::VIRTUAL - 1;
}

/// A lean run of a graph for callers that need only its makespan and busy time per resource
/// (an untraced estimate): no per-task records, buffers reused from run to run, jitter drawn for
/// the jittered tasks only (in task order, as [`execute`] draws it). It gives exactly the
/// makespan, busy times and event count of [`execute`] with the same durations and stream: the
/// longest-path pass when its premise holds, the event queue otherwise.
#[derive(Clone, Debug, Default)]
pub struct LeanRun {
    /// Durations after jitter, by task (filled only for the event queue).
    durations: Vec<Time>,
    /// End of every task (the pass reads its predecessors' ends).
    end: Vec<Time>,
    /// Last end per resource (the premise check).
    last_end: Vec<Time>,
    /// Busy time per resource of the last run.
    busy: Vec<Time>,
    /// Events of the last run (two per task, as [`Timeline::events`]).
    events: u64,
}

impl LeanRun {
    /// Empty buffers; they grow to the largest graph run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `graph` from time 0 with the nominal task durations `nominal` (indexed like the
    /// graph's tasks; the graph's own durations are not read), jittered by `jitter`; returns the
    /// makespan. [`execute`] from time `start` ends at `start` plus this.
    pub fn run(&mut self, graph: &TaskGraph, nominal: &[Time], jitter: &mut Jitter) -> Time {
        let n = graph.tasks.len();
        debug_assert_eq!(nominal.len(), n, "one duration per task");
        self.events = 2 * n as u64;
        // Jitter is drawn inside the pass (task order, as `draw_durations`); when the premise
        // fails the stream goes back to this position and the event queue gets every duration.
        let before = jitter.position();
        if let Some(makespan) = self.longest_path(graph, nominal, jitter) {
            return makespan;
        }
        jitter.rewind(before);
        self.durations.clear();
        self.durations
            .extend(graph.tasks.iter().zip(nominal).map(|(t, &d)| if t.jitter { jitter.apply_scaled(d, t.jitter_scale) } else { d }));
        let tl = execute_events(graph, 0, &self.durations);
        self.busy.clear();
        self.busy.extend_from_slice(&tl.busy);
        self.events = tl.events;
        tl.makespan
    }

    /// The longest-path pass of [`execute_longest_path`] over the reused buffers, drawing each
    /// jittered task's duration as it goes: the makespan, or `None` when a resource would run
    /// two tasks at once.
    fn longest_path(&mut self, graph: &TaskGraph, nominal: &[Time], jitter: &mut Jitter) -> Option<Time> {
        let nres = graph.resources.len();
        self.end.clear();
        self.end.resize(graph.tasks.len(), 0);
        self.last_end.clear();
        self.last_end.resize(nres, 0);
        self.busy.clear();
        self.busy.resize(nres, 0);
        let jittered = jitter.is_on();
        let mut makespan = 0;
        let mut preds_start = 0usize;
        let (end, last_end, busy) = (&mut self.end, &mut self.last_end, &mut self.busy);
        for ((t, task), &nominal) in graph.lean_tasks().iter().enumerate().zip(nominal) {
            let preds_end = task.preds_end as usize;
            let ready = graph.pred_list[preds_start..preds_end].iter().fold(0, |acc, &p| acc.max(end[p as usize]));
            preds_start = preds_end;
            let ru = (task.resource & LeanTask::INDEX) as usize;
            if ready < last_end[ru] && task.resource & LeanTask::VIRTUAL == 0 {
                return None;
            }
            let duration =
                if jittered && task.resource & LeanTask::JITTERED != 0 { jitter.apply_scaled(nominal, task.jitter_scale) } else { nominal };
            let finish = ready + duration;
            end[t] = finish;
            last_end[ru] = finish;
            busy[ru] += duration;
            makespan = makespan.max(finish);
        }
        Some(makespan)
    }

    /// Busy nanoseconds per resource of the last run, indexed like the graph's resources.
    #[inline]
    pub fn busy_by_resource(&self) -> &[Time] {
        &self.busy
    }

    /// Events of the last run (as [`Timeline::events`]).
    #[inline]
    pub fn events(&self) -> u64 {
        self.events
    }
}

/// What happened to one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskTiming {
    /// When all its dependencies had finished.
    pub ready: Time,
    /// When it started on its resource.
    pub start: Time,
    /// When it finished.
    pub end: Time,
}

/// The result of executing a graph; read through its methods.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// Per-task timing, indexed like the graph's tasks.
    timings: Vec<TaskTiming>,
    /// Total busy nanoseconds per resource.
    busy: Vec<Time>,
    /// Time at which the last task finished.
    makespan: Time,
    /// Number of events processed.
    events: u64,
}

impl Timeline {
    /// When one task became ready, started and ended.
    #[inline]
    pub fn timing(&self, t: TaskId) -> TaskTiming {
        self.timings[t.0 as usize]
    }

    /// Every task's timing, indexed like the graph's tasks ([`TaskId::index`]).
    #[inline]
    pub fn timings(&self) -> &[TaskTiming] {
        &self.timings
    }

    /// Total busy nanoseconds of one resource (the sum of its tasks' durations).
    #[inline]
    pub fn busy(&self, r: ResourceId) -> Time {
        self.busy[r.0 as usize]
    }

    /// Busy nanoseconds of every resource, indexed like the graph's resources
    /// ([`ResourceId::index`]).
    #[inline]
    pub fn busy_by_resource(&self) -> &[Time] {
        &self.busy
    }

    /// Time at which the last task finished (the start time if there are no tasks).
    #[inline]
    pub fn makespan(&self) -> Time {
        self.makespan
    }

    /// Number of events processed (two per task: ready and done).
    #[inline]
    pub fn events(&self) -> u64 {
        self.events
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// Task finished on its resource.
    Done = 0,
}

/// Queue entry. Ordered by time, then by a sequence number assigned at push.
///
/// Why the sequence number: many events share a timestamp (a barrier releases N ranks at once,
/// zero-length joins). A binary heap is not stable, so ordering by time alone would let the
/// heap's internal layout decide which equal-time event runs first, and with it which task gets
/// a contended resource. The monotonically increasing sequence number makes the order the
/// insertion order: identical inputs give identical timelines on every platform and thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: Time,
    seq: u64,
    kind: EventKind,
    task: u32,
}

/// Executes `graph` starting at time `start`, jittering durations with `jitter`.
///
/// Jitter is drawn once per task in task order before anything runs, so the random stream does
/// not depend on how the schedule unfolds. Then the graph runs on an exact fast path when it
/// can (see [`execute_longest_path`]) and on the event queue otherwise; both give identical
/// timelines.
pub fn execute(graph: &TaskGraph, start: Time, jitter: &mut Jitter) -> Timeline {
    let durations = draw_durations(graph, jitter);
    execute_longest_path(graph, start, &durations).unwrap_or_else(|| execute_events(graph, start, &durations))
}

/// Task durations after jitter, drawn in task order.
pub fn draw_durations(graph: &TaskGraph, jitter: &mut Jitter) -> Vec<Time> {
    graph.tasks.iter().map(|t| if t.jitter { jitter.apply_scaled(t.duration, t.jitter_scale) } else { t.duration }).collect()
}

/// The exact fast path. When no resource is ever asked to run two tasks at once, a FIFO
/// discrete-event run starts every task the moment its last input finishes, so its timeline is
/// the longest-path schedule of the DAG, computable in one pass in task order (dependencies
/// always precede their successors). This computes that schedule and checks the premise: on
/// every resource, tasks in task order must start no earlier than the previous one ended. If any
/// does not, it returns `None` and the caller runs the event queue, so the answer is always the
/// discrete-event answer. Decode steps of tensor-parallel meshes and RPC stars pass the check.
pub fn execute_longest_path(graph: &TaskGraph, start: Time, durations: &[Time]) -> Option<Timeline> {
    let n = graph.tasks.len();
    let mut timings = Vec::with_capacity(n);
    let mut last_end = vec![start; graph.resources.len()];
    let mut busy = vec![0 as Time; graph.resources.len()];
    let mut makespan = start;
    for (t, &duration) in durations.iter().enumerate().take(n) {
        let mut ready = start;
        for &p in graph.pred_slice(t) {
            let e: TaskTiming = timings[p as usize];
            ready = ready.max(e.end);
        }
        let r = graph.tasks[t].resource.0 as usize;
        if ready < last_end[r] && graph.resources[r].kind != ResourceKind::Virtual {
            tracing::debug!(
                "fast path: task {t} ({}) on {} ready at {ready} before {}",
                graph.tasks[t].label,
                graph.resources[r].name,
                last_end[r]
            );
            return None;
        }
        let end = ready + duration;
        last_end[r] = end;
        busy[r] += duration;
        makespan = makespan.max(end);
        timings.push(TaskTiming { ready, start: ready, end });
    }
    Some(Timeline { timings, busy, makespan, events: 2 * n as u64 })
}

/// Executes `graph` on the event queue with the given (already jittered) durations.
///
/// Each resource serves ready tasks in the order they became ready (FIFO; ties follow the event
/// sequence). Two kinds of event happen to a task: it becomes ready (its last input finished)
/// and it finishes. Finishing goes through the time-ordered queue; becoming ready always happens
/// at the current instant, inside the handler of the finishing task that released it, so it is
/// handled on the spot instead of round-tripping through the heap. `events` counts both.
pub fn execute_events(graph: &TaskGraph, start: Time, durations: &[Time]) -> Timeline {
    let n = graph.tasks.len();
    let nres = graph.resources.len();
    let (succ_start, succ_list) = graph.csr();
    let mut remaining: Vec<u32> = (0..n).map(|t| graph.pred_slice(t).len() as u32).collect();
    let mut timings = vec![TaskTiming { ready: 0, start: 0, end: 0 }; n];
    let mut busy = vec![0 as Time; nres];
    let mut running = vec![false; nres];
    let is_virtual: Vec<bool> = graph.resources.iter().map(|r| r.kind == ResourceKind::Virtual).collect();
    let mut waiting: Vec<std::collections::VecDeque<u32>> = vec![Default::default(); nres];
    let mut heap: BinaryHeap<Reverse<Event>> = BinaryHeap::with_capacity(nres * 2 + 16);
    let mut seq: u64 = 0;
    let mut events = 0u64;
    let mut makespan = start;

    // Starts task `t` on its (idle) resource at `now`.
    macro_rules! begin {
        ($t:expr, $now:expr) => {{
            let t = $t as usize;
            let d = durations[t];
            let r = graph.tasks[t].resource.0 as usize;
            timings[t].start = $now;
            timings[t].end = $now + d;
            running[r] = true;
            busy[r] += d;
            heap.push(Reverse(Event { time: $now + d, seq, kind: EventKind::Done, task: t as u32 }));
            seq += 1;
        }};
    }
    // Task `t` became ready at `now`.
    macro_rules! ready {
        ($t:expr, $now:expr) => {{
            let t = $t as usize;
            events += 1;
            timings[t].ready = $now;
            let r = graph.tasks[t].resource.0 as usize;
            if running[r] && !is_virtual[r] {
                waiting[r].push_back(t as u32);
            } else {
                begin!(t, $now);
            }
        }};
    }
    let sources: Vec<usize> = (0..n).filter(|&t| remaining[t] == 0).collect();
    for t in sources {
        ready!(t, start);
    }
    let mut now = start;
    while let Some(Reverse(ev)) = heap.pop() {
        debug_assert!(ev.time >= now, "clock went back");
        now = ev.time;
        events += 1;
        let t = ev.task as usize;
        let r = graph.tasks[t].resource.0 as usize;
        debug_assert_eq!(ev.kind, EventKind::Done);
        makespan = makespan.max(now);
        running[r] = false;
        if let Some(next) = waiting[r].pop_front() {
            begin!(next, now);
        }
        for &s in &succ_list[succ_start[t] as usize..succ_start[t + 1] as usize] {
            let su = s as usize;
            remaining[su] -= 1;
            if remaining[su] == 0 {
                ready!(su, now);
            }
        }
    }
    Timeline { timings, busy, makespan, events }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_on_one_resource_is_sum_of_durations() {
        let mut g = TaskGraph::new();
        let gpu = g.add_resource("gpu", ResourceKind::Gpu, 0);
        let a = g.compute(gpu, 10, "a", &[]);
        let b = g.compute(gpu, 20, "b", &[a]);
        let _c = g.compute(gpu, 5, "c", &[b]);
        let tl = execute(&g, 100, &mut Jitter::none());
        assert_eq!(tl.makespan, 135);
        assert_eq!(tl.timings[1], TaskTiming { ready: 110, start: 110, end: 130 });
        assert_eq!(tl.busy[0], 35);
    }

    #[test]
    fn contended_resource_serves_in_ready_order() {
        let mut g = TaskGraph::new();
        let r = g.add_resource("cpu", ResourceKind::Cpu, 0);
        let a = g.compute(r, 10, "a", &[]);
        let b = g.compute(r, 10, "b", &[]);
        let tl = execute(&g, 0, &mut Jitter::none());
        assert_eq!(tl.timings[a.0 as usize].start, 0);
        assert_eq!(tl.timings[b.0 as usize].start, 10);
        assert_eq!(tl.makespan, 20);
    }

    #[test]
    fn jitter_is_seeded() {
        let mut g = TaskGraph::new();
        let r = g.add_resource("gpu", ResourceKind::Gpu, 0);
        let mut prev = None;
        for _ in 0..100 {
            let d: Vec<TaskId> = prev.into_iter().collect();
            prev = Some(g.compute(r, 1_000_000, "x", &d));
        }
        let a = execute(&g, 0, &mut Jitter::new(7, 0.05)).makespan;
        let b = execute(&g, 0, &mut Jitter::new(7, 0.05)).makespan;
        let c = execute(&g, 0, &mut Jitter::new(8, 0.05)).makespan;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    /// A merged task of 4 parts draws once with half the relative sigma (1/sqrt 4), the sigma of
    /// a chain of 4 independent draws; with one part it is a plain compute task.
    #[test]
    fn a_merged_task_draws_once_with_the_chains_sigma() {
        let (cv, runs) = (0.05, 4000);
        let spread = |parts: u32| {
            let mut g = TaskGraph::new();
            let r = g.add_resource("cpu", ResourceKind::Cpu, 0);
            g.compute_merged(r, 4_000_000, parts, "merged", &[]);
            let mut jitter = Jitter::new(3, cv);
            let xs: Vec<f64> = (0..runs).map(|_| execute(&g, 0, &mut jitter).makespan as f64 / 4e6).collect();
            let mean = xs.iter().sum::<f64>() / runs as f64;
            (mean, (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / runs as f64).sqrt())
        };
        let (mean4, sd4) = spread(4);
        assert!((mean4 - 1.0).abs() < 0.003, "mean {mean4}");
        assert!((sd4 - cv / 2.0).abs() < 0.002, "relative sigma {sd4}, expected {}", cv / 2.0);
        let (_, sd1) = spread(1);
        assert!((sd1 - cv).abs() < 0.003, "relative sigma {sd1}");
        // One part: the same bits as a plain compute task from the same stream.
        let mut g = TaskGraph::new();
        let r = g.add_resource("cpu", ResourceKind::Cpu, 0);
        g.compute(r, 1_234_567, "plain", &[]);
        g.compute_merged(r, 1_234_567, 1, "merged", &[]);
        let d = draw_durations(&g, &mut Jitter::new(9, cv));
        let mut j = Jitter::new(9, cv);
        assert_eq!(d, vec![j.apply(1_234_567), j.apply(1_234_567)]);
    }

    #[test]
    fn round_to_time_equals_f64_round() {
        let mut xs = vec![
            0.0,
            0.25,
            0.5,
            0.75,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            1e15,
            9223372036854774784.0,
            9223372036854775808.0,
            -0.0,
            -0.4,
            -3.0,
            f64::NAN,
            f64::INFINITY,
            1.8e19,
            1e20,
        ];
        let mut x = 0.1f64;
        while x < 1e16 {
            xs.extend([x, x.next_up(), x.next_down(), x.floor() + 0.5, (x.floor() + 0.5).next_up(), (x.floor() + 0.5).next_down()]);
            x *= 1.37;
        }
        let mut j = Jitter::new(3, 0.3);
        xs.extend((0..10_000).map(|i| {
            let d = 1 + i * 7919;
            // The products the jitter rounds: a duration times a factor in [0.5, 2].
            (d as f64) * (j.apply(1_000_000) as f64 / 1e6)
        }));
        for x in xs {
            assert_eq!(round_to_time(x), x.round() as Time, "x = {x:e}");
        }
    }

    #[test]
    fn lean_run_equals_execute() {
        // Two ranks contending for one CPU (the event queue) and a chain (the fast path).
        let mut g = TaskGraph::new();
        let gpu = g.add_resource("gpu", ResourceKind::Gpu, 0);
        let cpu = g.add_resource("cpu", ResourceKind::Cpu, 0);
        let link = g.add_resource("link", ResourceKind::Link, 0);
        let a = g.compute(gpu, 1000, "a", &[]);
        let b = g.compute(cpu, 700, "b", &[a]);
        let c = g.compute(cpu, 0, "zero", &[a]);
        let x = g.transfer(link, 300, 8, &[b]);
        let j = g.join(&[x, c]);
        let _ = g.compute(gpu, 900, "d", &[j]);
        let mut chain = TaskGraph::new();
        let r = chain.add_resource("gpu", ResourceKind::Gpu, 0);
        let first = chain.compute(r, 500, "a", &[]);
        chain.compute(r, 600, "b", &[first]);
        let mut lean = LeanRun::new();
        for graph in [&g, &chain] {
            let nominal: Vec<Time> = graph.tasks().iter().map(Task::duration).collect();
            for seed in 0..20 {
                let tl = execute(graph, 5000, &mut Jitter::new(seed, 0.2));
                let makespan = lean.run(graph, &nominal, &mut Jitter::new(seed, 0.2));
                assert_eq!(5000 + makespan, tl.makespan());
                assert_eq!(lean.busy_by_resource(), tl.busy_by_resource());
                assert_eq!(lean.events(), tl.events());
            }
            // One stream over many runs: the rewinds after a declined pass land on every word
            // offset of ChaCha's buffered blocks.
            let (mut a, mut b) = (Jitter::new(9, 0.2), Jitter::new(9, 0.2));
            for _ in 0..200 {
                assert_eq!(lean.run(graph, &nominal, &mut a), execute(graph, 0, &mut b).makespan());
            }
        }
    }
}
