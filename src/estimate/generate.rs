//! The generate workload on the event core: prefill in chunks, then decode step by step, one
//! jitter stream per run.

use crate::engine::{Lowered, Plan, Work, lower_step};
use crate::sim::{Jitter, LeanRun, ResourceKind, TaskGraph, Time, execute};

use super::recorder::Trace;

/// Most decode steps simulated one by one. A longer generation is simulated at this many steps
/// spread evenly over its context range, each standing for its share of the steps (a step's time
/// varies smoothly with the context: attention grows linearly with it), so the work of an
/// estimate is bounded whatever `generate_tokens` is. Generations up to this length are simulated
/// step by step, exactly as before.
pub const MAX_SIMULATED_DECODE_STEPS: u64 = 1024;

/// Most full-size prefill chunks simulated one by one; more are sampled like decode steps (see
/// [`MAX_SIMULATED_DECODE_STEPS`]). A 131,072-token prompt in 512-token chunks is 256 chunks.
pub const MAX_SIMULATED_PREFILL_CHUNKS: u64 = 1024;

/// Timing of a generate run.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateRun {
    /// Prefill time, ns.
    pub prefill_ns: Time,
    /// Decode time, ns.
    pub decode_ns: Time,
    /// Decode steps the run stands for (the workload's `generate_tokens`).
    pub decode_steps: u64,
    /// The simulated decode steps, ns: every step, or [`MAX_SIMULATED_DECODE_STEPS`] evenly
    /// spread ones for a longer generation (each standing for an equal share of the steps).
    pub step_ns: Vec<Time>,
    /// GPU busy time per node during decode, ns.
    pub decode_busy_gpu: Vec<Time>,
    /// CPU busy time per node during decode, ns.
    pub decode_busy_cpu: Vec<Time>,
    /// Events processed (by the simulated steps).
    pub events: u64,
    /// Bytes put on links during decode.
    pub decode_bytes_sent: u64,
    /// GPU busy time per node during prefill, ns.
    pub prefill_busy_gpu: Vec<Time>,
    /// CPU busy time per node during prefill, ns.
    pub prefill_busy_cpu: Vec<Time>,
    /// DRAM bytes and FLOPs per node over the prefill.
    pub prefill_work: Vec<Work>,
    /// DRAM bytes and FLOPs per node over the decode.
    pub decode_work: Vec<Work>,
}

impl GenerateRun {
    /// This run on the first of `replicas` copies of its nodes, the others idle: their busy
    /// times and work 0 (the phases' lengths and the steps are the first copy's).
    pub fn with_idle_copies(&self, replicas: usize) -> GenerateRun {
        fn widen<T: Clone + Default>(v: &[T], replicas: usize) -> Vec<T> {
            v.iter().cloned().chain(std::iter::repeat_n(T::default(), v.len() * (replicas - 1))).collect()
        }
        GenerateRun {
            decode_busy_gpu: widen(&self.decode_busy_gpu, replicas),
            decode_busy_cpu: widen(&self.decode_busy_cpu, replicas),
            prefill_busy_gpu: widen(&self.prefill_busy_gpu, replicas),
            prefill_busy_cpu: widen(&self.prefill_busy_cpu, replicas),
            prefill_work: widen(&self.prefill_work, replicas),
            decode_work: widen(&self.decode_work, replicas),
            ..self.clone()
        }
    }

    /// A run from its phases: prefill ended at `prefill_ns`, decode at `end_ns` after
    /// `decode_steps` steps (`step_ns` each), with the phases' busy time and work.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_phases(
        prefill_ns: Time,
        end_ns: Time,
        decode_steps: u64,
        step_ns: Vec<Time>,
        events: u64,
        decode_bytes_sent: u64,
        pre: PhaseTotals,
        dec: PhaseTotals,
    ) -> GenerateRun {
        GenerateRun {
            prefill_ns,
            decode_ns: end_ns - prefill_ns,
            decode_steps,
            step_ns,
            decode_busy_gpu: dec.gpu,
            decode_busy_cpu: dec.cpu,
            events,
            decode_bytes_sent,
            prefill_busy_gpu: pre.gpu,
            prefill_busy_cpu: pre.cpu,
            prefill_work: pre.work,
            decode_work: dec.work,
        }
    }
}

/// Per-node totals of a phase: GPU and CPU busy time and the work done.
pub(super) struct PhaseTotals {
    pub(super) gpu: Vec<Time>,
    pub(super) cpu: Vec<Time>,
    pub(super) work: Vec<Work>,
}

impl PhaseTotals {
    pub(super) fn new(n: usize) -> Self {
        PhaseTotals { gpu: vec![0; n], cpu: vec![0; n], work: vec![Work::default(); n] }
    }

    /// Adds a simulated step standing for `weight` steps: its per-resource busy time and its
    /// per-node work.
    pub(super) fn add(&mut self, low: &Lowered, busy: &[Time], work: Vec<Work>, weight: u64) {
        self.add_graph(&low.graph, busy, &work, weight);
    }

    /// [`Self::add`] for a step's graph and work.
    fn add_graph(&mut self, graph: &TaskGraph, busy: &[Time], work: &[Work], weight: u64) {
        for (r, res) in graph.resources().iter().enumerate() {
            match res.kind() {
                ResourceKind::Gpu => self.gpu[res.node() as usize] += busy[r] * weight,
                ResourceKind::Cpu => self.cpu[res.node() as usize] += busy[r] * weight,
                ResourceKind::Link | ResourceKind::Virtual => {}
            }
        }
        for (t, w) in self.work.iter_mut().zip(work) {
            *t += w.scaled(weight as f64);
        }
    }
}

/// The tokens of the next prefill forward of a `prompt`-token prompt with `done` tokens
/// prefilled: a chunk of `engine.prefill_chunk`; mlx-lm chunks all but the last prompt token,
/// then runs that token alone.
pub fn prefill_piece(plan: &Plan, prompt: u64, done: u64) -> u64 {
    let chunk = plan.options.prefill_chunk.max(1);
    let chunked = if plan.options.prefill_last_token_alone { prompt.saturating_sub(1) } else { prompt };
    if done < chunked { chunk.min(chunked - done) } else { prompt - done }
}

/// Simulates prefill (in chunks) and `generate` decode steps; one ChaCha stream per run.
pub fn simulate_generate(plan: &Plan, prompt: u64, generate: u64, seed: u64) -> GenerateRun {
    simulate_generate_at(plan, 0, prompt, generate, seed)
}

/// [`simulate_generate`] after `depth` tokens already in the KV cache (llama-bench's `-d`, a
/// conversation's earlier turns): the prompt's chunks attend to them and decode reads them;
/// their own prefill is not part of the run.
pub fn simulate_generate_at(plan: &Plan, depth: u64, prompt: u64, generate: u64, seed: u64) -> GenerateRun {
    Schedule::new(plan, depth, prompt, generate).run(seed)
}

/// One simulated step of a [`Schedule`]: which graph, its nominal task durations, the work and
/// bytes it does, and how many steps it stands for.
#[derive(Clone, Debug)]
struct ScheduledStep {
    /// Index into [`Schedule::graphs`].
    graph: usize,
    /// Nominal (un-jittered) durations of the tasks that differ from the previous step of the
    /// same graph (the graph's own durations before its first step), as (task, duration): a
    /// decode step moves only its context-dependent tasks (attention), so a run's schedule
    /// holds those, not every task of every step (an 8-node ring step has tens of thousands).
    changed: Vec<(u32, Time)>,
    /// DRAM bytes and FLOPs per node.
    work: Vec<Work>,
    /// Bytes put on links.
    bytes_sent: u64,
    /// Steps (or chunks) it stands for.
    weight: u64,
}

/// The seed-independent part of a generate run: every simulated prefill chunk and decode step,
/// lowered and timed once. Runs that differ only in their seed (a sweep's seed axis) share it and
/// each replays it with its own jitter stream ([`Schedule::run`]); a replay equals
/// [`simulate_generate_traced`] without a trace bit for bit (same graphs, same durations, the
/// same draws in the same order).
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The distinct step graphs (a prefill chunk size each, and the decode step).
    graphs: Vec<TaskGraph>,
    /// Prefill chunks, in order.
    prefill: Vec<ScheduledStep>,
    /// Decode steps, in order.
    decode: Vec<ScheduledStep>,
    /// Nodes of the plan.
    nodes: usize,
    /// Decode steps the run stands for.
    generate: u64,
    /// Jitter coefficient of variation of the plan.
    jitter_cv: f64,
    /// Whether successive prefill chunks overlap across pipeline stages ([`pipelined_prefill`]).
    pipelined: bool,
}

/// Whether a plan's prefill chunks overlap across its pipeline stages: a pipeline split of a
/// runtime whose stages run successive chunks at once
/// ([`crate::engine::runtimes::EngineRuntime::pipelines_prefill_chunks`]).
fn pipelined_prefill(plan: &Plan) -> bool {
    plan.n() > 1
        && plan.options.parallelism == crate::engine::Parallelism::Pipeline
        && plan.options.kind.behaviour().pipelines_prefill_chunks()
}

/// The interval at which a pipeline accepts the next prefill chunk, ns: the busiest stage's
/// time on the chunk (each node's GPU and CPU busy time, which run one after the other within a
/// stage) or the busiest link's, whichever is longer. A stage cannot take the next chunk before
/// it is done with this one, so the interval is never below it; and it is never above the
/// chunk's makespan, so overlapping is never slower than taking turns.
fn pipeline_interval(graph: &TaskGraph, busy: &[Time], makespan: Time) -> Time {
    let mut by_node: Vec<Time> = Vec::new();
    let mut link: Time = 0;
    for (r, res) in graph.resources().iter().enumerate() {
        match res.kind() {
            ResourceKind::Gpu | ResourceKind::Cpu => {
                let node = res.node() as usize;
                if by_node.len() <= node {
                    by_node.resize(node + 1, 0);
                }
                by_node[node] += busy[r];
            }
            ResourceKind::Link => link = link.max(busy[r]),
            ResourceKind::Virtual => {}
        }
    }
    by_node.into_iter().fold(link, Time::max).min(makespan)
}

/// The time `weight` chunks of one prefill piece add, ns: one after another (`makespan` each);
/// or, pipelined, one `interval` each, plus the first piece's fill of the pipeline (a makespan
/// less an interval): `M + (K - 1) x B` for K equal chunks.
fn prefill_advance(makespan: Time, interval: Time, weight: u64, pipelined: bool, first: bool) -> Time {
    if !pipelined {
        return makespan.saturating_mul(weight);
    }
    let fill = if first { makespan - interval } else { 0 };
    fill.saturating_add(interval.saturating_mul(weight))
}

/// [`prefill_advance`] of a piece whose chunk ran as `graph` (busy time per resource `busy`,
/// makespan `makespan`), its pipeline interval taken from the run where `pipelined`.
fn prefill_piece_time(graph: &TaskGraph, busy: &[Time], makespan: Time, weight: u64, pipelined: bool, first: bool) -> Time {
    let interval = if pipelined { pipeline_interval(graph, busy, makespan) } else { makespan };
    prefill_advance(makespan, interval, weight, pipelined, first)
}

impl Schedule {
    /// Lowers and times every simulated step of a `prompt` + `generate` run of `plan` after
    /// `depth` cached tokens (the same chunks, samples and contexts as
    /// [`simulate_generate_traced`]).
    pub fn new(plan: &Plan, depth: u64, prompt: u64, generate: u64) -> Self {
        let mut graphs: Vec<TaskGraph> = Vec::new();
        // Per graph, the durations of its last scheduled step (what the next one's changes are
        // taken against; [`Schedule::run`] keeps the same state).
        let mut last: Vec<Vec<Time>> = Vec::new();
        let mut step = |low: &mut Lowered, context: u64, weight: u64, graph: &mut Option<usize>| {
            low.retime(plan, context);
            let g = *graph.get_or_insert_with(|| {
                graphs.push(low.graph.clone());
                last.push(durations_of(&low.graph));
                graphs.len() - 1
            });
            let changed = changes(&mut last[g], &low.graph);
            ScheduledStep { graph: g, changed, work: low.work(plan, context), bytes_sent: low.bytes_sent, weight }
        };
        let mut prefill = Vec::new();
        let mut cached: Option<(Lowered, Option<usize>)> = None;
        for (tokens, done, weight) in prefill_pieces(plan, depth, prompt) {
            if cached.as_ref().is_none_or(|c| c.0.tokens != tokens) {
                cached = Some((lower_step(plan, tokens), None));
            }
            let (low, graph) = cached.as_mut().expect("just built");
            prefill.push(step(low, done, weight, graph));
        }
        let mut low = lower_step(plan, 1);
        let mut graph = None;
        let samples = generate.min(MAX_SIMULATED_DECODE_STEPS);
        let decode = (0..samples)
            .map(|k| {
                let (g, weight) = sample(k, samples, generate);
                step(&mut low, depth + prompt + g + (weight - 1) / 2, weight, &mut graph)
            })
            .collect();
        Schedule { graphs, prefill, decode, nodes: plan.n(), generate, jitter_cv: plan.jitter_cv, pipelined: pipelined_prefill(plan) }
    }

    /// The run with seed `seed`: every step on the event core's lean kernel, one jitter stream.
    pub fn run(&self, seed: u64) -> GenerateRun {
        let mut jitter = Jitter::new(seed, self.jitter_cv);
        let mut kernel = LeanRun::new();
        let mut durations: Vec<Vec<Time>> = self.graphs.iter().map(durations_of).collect();
        let mut events = 0;
        let mut pre = PhaseTotals::new(self.nodes);
        let mut now: Time = 0;
        for (i, s) in self.prefill.iter().enumerate() {
            let graph = &self.graphs[s.graph];
            let makespan = kernel.run(graph, s.durations(&mut durations), &mut jitter);
            pre.add_graph(graph, kernel.busy_by_resource(), &s.work, s.weight);
            now = now.saturating_add(prefill_piece_time(graph, kernel.busy_by_resource(), makespan, s.weight, self.pipelined, i == 0));
            events += kernel.events();
        }
        let prefill_ns = now;
        let mut dec = PhaseTotals::new(self.nodes);
        let mut steps = Vec::with_capacity(self.decode.len());
        let mut bytes = 0;
        for s in &self.decode {
            let graph = &self.graphs[s.graph];
            let step = kernel.run(graph, s.durations(&mut durations), &mut jitter);
            events += kernel.events();
            steps.push(step);
            now = now.saturating_add(step.saturating_mul(s.weight));
            bytes += s.bytes_sent * s.weight;
            dec.add_graph(graph, kernel.busy_by_resource(), &s.work, s.weight);
        }
        GenerateRun::from_phases(prefill_ns, now, self.generate, steps, events, bytes, pre, dec)
    }
}

impl ScheduledStep {
    /// This step's durations: its changes applied to its graph's running durations in `by_graph`.
    fn durations<'d>(&self, by_graph: &'d mut [Vec<Time>]) -> &'d [Time] {
        let d = &mut by_graph[self.graph];
        for &(task, t) in &self.changed {
            d[task as usize] = t;
        }
        d
    }
}

/// Every task's nominal duration, in task order.
fn durations_of(graph: &TaskGraph) -> Vec<Time> {
    graph.tasks().iter().map(|t| t.duration()).collect()
}

/// The tasks of `graph` whose duration differs from `last`, as (task, duration); `last` becomes
/// the graph's durations.
fn changes(last: &mut [Time], graph: &TaskGraph) -> Vec<(u32, Time)> {
    let mut out = Vec::new();
    for (i, (l, t)) in last.iter_mut().zip(graph.tasks()).enumerate() {
        if *l != t.duration() {
            *l = t.duration();
            out.push((u32::try_from(i).expect("a step graph has fewer than 2^32 tasks"), *l));
        }
    }
    out
}

/// The prefill forwards of a `prompt`-token prompt after `depth` cached tokens, in order:
/// (tokens, tokens in the cache before it, chunks it stands for). Full-size chunks (sampled past [`MAX_SIMULATED_PREFILL_CHUNKS`], each
/// timed at the middle of the chunks it stands for), then the rest of the chunked part, then
/// mlx-lm's lone last token.
fn prefill_pieces(plan: &Plan, depth: u64, prompt: u64) -> Vec<(u64, u64, u64)> {
    let chunk = plan.options.prefill_chunk.max(1);
    let chunked = if plan.options.prefill_last_token_alone { prompt.saturating_sub(1) } else { prompt };
    let full = chunked / chunk;
    let samples = full.min(MAX_SIMULATED_PREFILL_CHUNKS);
    let mut out: Vec<(u64, u64, u64)> = (0..samples)
        .map(|k| {
            let (c, weight) = sample(k, samples, full);
            (chunk, depth + (c + (weight - 1) / 2) * chunk, weight)
        })
        .collect();
    let mut done = depth + full * chunk;
    for t in [chunked % chunk, prompt - chunked].into_iter().filter(|&t| t > 0) {
        out.push((t, done, 1));
        done += t;
    }
    out
}

/// A request's timing (after `depth` cached tokens) from a sample of its decode steps: the whole prefill, then one decode
/// step at each of `samples` contexts spread evenly over the generation (the middle of each
/// equal share), each standing for its share. For fault simulations, which need the rate of
/// many cluster states: cheaper than every step, and exact when steps do not vary.
pub fn sample_generate(plan: &Plan, depth: u64, prompt: u64, generate: u64, samples: u64, seed: u64) -> GenerateRun {
    let mut run = simulate_generate_at(plan, depth, prompt, 0, seed);
    let k = samples.clamp(1, generate.max(1));
    let mut jitter = Jitter::new(seed ^ 0x5eed, plan.jitter_cv);
    let mut low = lower_step(plan, 1);
    let mut now = run.prefill_ns;
    let (mut decode, mut bytes) = (0.0, 0.0);
    let share = generate as f64 / k as f64;
    for j in 0..k {
        let context = depth + prompt + (2 * j + 1) * generate / (2 * k);
        low.retime(plan, context);
        let tl = execute(&low.graph, now, &mut jitter);
        for (t, w) in run.decode_work.iter_mut().zip(low.work(plan, context)) {
            *t += w.scaled(share);
        }
        run.events += tl.events();
        run.step_ns.push(tl.makespan() - now);
        decode += (tl.makespan() - now) as f64 * share;
        bytes += low.bytes_sent as f64 * share;
        now = tl.makespan();
    }
    run.decode_ns = decode.round() as Time;
    run.decode_steps = generate;
    run.decode_bytes_sent = bytes.round() as u64;
    run
}

/// The `k`-th of `samples` evenly spread samples of `total` items: (first item it stands for,
/// how many it stands for). With `samples >= total`, item `k` alone.
pub(super) fn sample(k: u64, samples: u64, total: u64) -> (u64, u64) {
    if samples >= total {
        return (k, 1);
    }
    // u128: `k * total` can exceed u64 for absurd totals.
    let at = |k: u64| (u128::from(k) * u128::from(total) / u128::from(samples)) as u64;
    (at(k), at(k + 1) - at(k))
}

/// [`simulate_generate`], recording the executed tasks into `trace` when given. Once the
/// trace's cap is reached, the remaining chunks and steps are counted, not simulated (the
/// returned run then covers only the traced part: a traced run is for its trace).
pub fn simulate_generate_traced(
    plan: &Plan,
    depth: u64,
    prompt: u64,
    generate: u64,
    seed: u64,
    mut trace: Option<&mut Trace<'_>>,
) -> GenerateRun {
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let mut events = 0;
    let n = plan.n();
    let mut pre = PhaseTotals::new(n);
    let (prefill_ns, prefill_events) = prefill(plan, depth, prompt, &mut jitter, trace.as_deref_mut(), &mut pre);
    events += prefill_events;
    let mut now = prefill_ns;
    let mut low = lower_step(plan, 1);
    let mut dec = PhaseTotals::new(n);
    let samples = generate.min(MAX_SIMULATED_DECODE_STEPS);
    let mut steps = Vec::with_capacity(samples as usize);
    let mut bytes = 0;
    for k in 0..samples {
        if trace.as_deref_mut().is_some_and(Trace::skip_if_full) {
            continue;
        }
        let (g, weight) = sample(k, samples, generate);
        // The sample stands for steps g..g+weight: time it at their middle context.
        let context = depth + prompt + g + (weight - 1) / 2;
        low.retime(plan, context);
        let tl = execute(&low.graph, now, &mut jitter);
        if let Some(tr) = trace.as_deref_mut() {
            tr.record(&low, &tl, now, "decode", g);
        }
        events += tl.events();
        let step = tl.makespan() - now;
        steps.push(step);
        now = now.saturating_add(step.saturating_mul(weight));
        bytes += low.bytes_sent * weight;
        let work = low.work(plan, context);
        dec.add(&low, tl.busy_by_resource(), work, weight);
    }
    GenerateRun::from_phases(prefill_ns, now, generate, steps, events, bytes, pre, dec)
}

/// Prefill in chunks (mlx-lm chunks all but the last prompt token, then runs that token alone);
/// more than [`MAX_SIMULATED_PREFILL_CHUNKS`] full-size chunks are sampled. Returns the prefill
/// time and the events processed; adds busy time and work to `totals`.
fn prefill(
    plan: &Plan,
    depth: u64,
    prompt: u64,
    jitter: &mut Jitter,
    mut trace: Option<&mut Trace<'_>>,
    totals: &mut PhaseTotals,
) -> (Time, u64) {
    let chunk = plan.options.prefill_chunk.max(1);
    let chunked = if plan.options.prefill_last_token_alone { prompt.saturating_sub(1) } else { prompt };
    // The full-size chunks, then the rest of the chunked part, then the lone last token.
    let full = chunked / chunk;
    let mut tail = vec![chunked % chunk, prompt - chunked];
    tail.retain(|&t| t > 0);
    let samples = full.min(MAX_SIMULATED_PREFILL_CHUNKS);
    let (mut now, mut events): (Time, u64) = (0, 0);
    let mut cached: Option<Lowered> = None;
    let pipelined = pipelined_prefill(plan);
    let mut first = true;
    let mut run = |tokens: u64, done: u64, index: u64, weight: u64, now: &mut Time| {
        if trace.as_deref_mut().is_some_and(Trace::skip_if_full) {
            return 0;
        }
        if cached.as_ref().is_none_or(|c| c.tokens != tokens) {
            cached = Some(lower_step(plan, tokens));
        }
        let low = cached.as_mut().expect("just built");
        low.retime(plan, done);
        let tl = execute(&low.graph, *now, jitter);
        if let Some(tr) = trace.as_deref_mut() {
            tr.record(low, &tl, *now, "prefill", index);
        }
        let work = low.work(plan, done);
        totals.add(low, tl.busy_by_resource(), work, weight);
        let makespan = tl.makespan() - *now;
        *now = now.saturating_add(prefill_piece_time(&low.graph, tl.busy_by_resource(), makespan, weight, pipelined, first));
        first = false;
        tl.events()
    };
    for k in 0..samples {
        let (c, weight) = sample(k, samples, full);
        // The sample stands for chunks c..c+weight: time it at their middle.
        events += run(chunk, depth + (c + (weight - 1) / 2) * chunk, c, weight, &mut now);
    }
    let mut done = depth + full * chunk;
    for (i, t) in tail.into_iter().enumerate() {
        events += run(t, done, full + i as u64, 1, &mut now);
        done += t;
    }
    (now, events)
}

#[cfg(test)]
mod tests {
    use super::{changes, pipeline_interval, prefill_advance};
    use crate::sim::{ResourceKind, TaskGraph};

    /// A two-stage pipeline by hand: stage 0 busy 3 ns (GPU 2 + CPU 1), stage 1 GPU 2 ns, the
    /// link 1 ns; one chunk's makespan 6. The pipeline takes a chunk every 3 ns (the busiest
    /// stage), so 4 chunks take 6 + 3 x 3 = 15 ns, not 24; the interval never exceeds the
    /// makespan.
    #[test]
    fn a_pipeline_takes_a_chunk_per_busiest_stage_after_filling() {
        let mut g = TaskGraph::new();
        g.add_resource("node0.gpu", ResourceKind::Gpu, 0);
        g.add_resource("node0.cpu", ResourceKind::Cpu, 0);
        g.add_resource("link 0->1", ResourceKind::Link, 0);
        g.add_resource("node1.gpu", ResourceKind::Gpu, 1);
        let busy = [2, 1, 1, 2];
        assert_eq!(pipeline_interval(&g, &busy, 6), 3);
        assert_eq!(pipeline_interval(&g, &busy, 2), 2);
        assert_eq!(prefill_advance(6, 3, 4, true, true), 15);
        assert_eq!(prefill_advance(6, 3, 4, true, false), 12);
        assert_eq!(prefill_advance(6, 3, 4, false, true), 24);
        assert_eq!(prefill_advance(6, 3, 1, true, true), 6);
    }

    /// A step keeps only the tasks whose duration moved since its graph's last step, and the
    /// running durations become the graph's.
    #[test]
    fn a_step_keeps_only_the_durations_that_moved() {
        let mut g = TaskGraph::new();
        let gpu = g.add_resource("gpu", ResourceKind::Gpu, 0);
        let a = g.compute(gpu, 10, "a", &[]);
        let b = g.compute(gpu, 20, "b", &[a]);
        g.compute(gpu, 30, "c", &[b]);
        let mut last = vec![10, 25, 30];
        assert_eq!(changes(&mut last, &g), vec![(1, 20)]);
        assert_eq!(last, vec![10, 20, 30]);
        assert!(changes(&mut last, &g).is_empty(), "nothing moved");
    }
}
