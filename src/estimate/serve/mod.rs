//! The serve workload: requests arrive (closed loop, Poisson, trace), a runtime's scheduler
//! ([`sched`]) batches them, and every forward it decides on is lowered and executed on the
//! event core exactly like a `generate` step (`ServeSim::forward`): a workload, not a second
//! estimator. KV cache is reserved per node at admission (prompt + output at the split's share)
//! against what the wired limit leaves after weights; statistics stream ([`stats`]).
//!
//! Speed: a forward's timeline does not depend on when it starts, so a forward of a shape
//! already run (same rows of tokens and contexts, same LM-head rows) reuses that run's span and
//! busy times instead of executing its graph again (exact without jitter; with jitter, the
//! shape's first draw is repeated, see [`ServeSim::with_exact_steps`]). Work is bounded by
//! [`MAX_SERVE_FORWARDS`] and [`MAX_SIMULATED_TASKS`]; a run cut there says so
//! ([`ServeRun::truncated`]).

use std::collections::{BTreeMap, VecDeque};

use crate::engine::{Lowered, Plan, Work, lower_step};
use crate::scenario::{KvFull, Serve, Slo, Stop};
use crate::sim::{Jitter, ResourceKind, Time, Timeline, execute};
use crate::util::FastMap;

pub mod arrivals;
pub mod sched;
pub mod stats;

use arrivals::{Arrivals, s_to_ns};
pub use sched::Policy;
pub use stats::{LogHistogram, ServeStats};

/// Most lowered step graphs kept (one per batch size in tokens); beyond it the cache restarts,
/// so memory stays bounded.
const MAX_CACHED_GRAPHS: usize = 64;

/// Most rows (one per sequence of a forward) summed over the forward shapes whose timing is kept
/// for reuse ([`ServeSim::with_exact_steps`]); beyond it the table restarts, so memory stays flat
/// however long the run (~16 MB at most).
const MAX_CACHED_STEP_ROWS: usize = 1 << 20;

/// What one forward cost: reused for every later forward of the same shape (same rows, same
/// LM-head rows), since a forward's timeline does not depend on when it starts.
#[derive(Clone, Debug)]
struct StepTime {
    /// Start to last task's end, ns.
    span: Time,
    /// GPU busy time per node, ns.
    busy_gpu: Vec<Time>,
    /// CPU busy time per node, ns.
    busy_cpu: Vec<Time>,
    /// Events the event core processed.
    events: u64,
    /// DRAM bytes and FLOPs per node.
    work: Vec<Work>,
}

impl StepTime {
    /// This timing with its span and busy times scaled by `f` (a nudged profile's step times
    /// over the base's) and its work by theirs (issued FLOPs move with a compute efficiency,
    /// bytes with the expert popularity: the experts a batch touches); events do not depend on
    /// the profile.
    fn scaled(&self, f: &StepFactors) -> StepTime {
        let scale = |t: Time, f: f64| (t as f64 * f).round() as Time;
        StepTime {
            span: scale(self.span, f.span),
            busy_gpu: self.busy_gpu.iter().zip(&f.gpu).map(|(&t, &f)| scale(t, f)).collect(),
            busy_cpu: self.busy_cpu.iter().zip(&f.cpu).map(|(&t, &f)| scale(t, f)).collect(),
            events: self.events,
            work: self.work.iter().zip(&f.work).map(|(w, k)| w.times(*k)).collect(),
        }
    }

    /// Adds this step's busy time and work to the run's per-node totals.
    fn add_to(&self, gpu: &mut [Time], cpu: &mut [Time], work: &mut [Work]) {
        for (b, x) in gpu.iter_mut().zip(&self.busy_gpu) {
            *b += x;
        }
        for (b, x) in cpu.iter_mut().zip(&self.busy_cpu) {
            *b += x;
        }
        for (w, x) in work.iter_mut().zip(&self.work) {
            *w += *x;
        }
    }
}

/// Per forward size in tokens, its representative shape: (rows of (tokens, context), LM-head rows).
pub type Representatives = BTreeMap<u64, (Vec<(u64, u64)>, u64)>;

/// The step timings a serving run measured, kept for replays of the same workload under a
/// nudged profile ([`ServeSim::with_base_steps`]): every forward shape's timing (the last
/// `MAX_CACHED_STEP_ROWS` rows of them) and, per forward size in tokens, the first shape of that
/// size (its representative for a step's sensitivity).
#[derive(Clone, Debug, Default)]
pub struct StepTable {
    steps: FastMap<Vec<(u64, u64)>, StepTime>,
    reps: Representatives,
}

impl StepTable {
    /// The representative shape of each forward size: tokens -> (rows, LM-head rows).
    pub fn representatives(&self) -> &Representatives {
        &self.reps
    }
}

/// How a replay under a nudged profile times a shape the base run timed: the base timing with
/// its span and busy times scaled by the factors of its size (tokens); the work (bytes, FLOPs)
/// does not depend on the profile.
struct BaseSteps<'a> {
    table: &'a StepTable,
    factors: &'a BTreeMap<u64, StepFactors>,
}

/// A forward size's step-time ratios, nudged plan over base plan: the span and each node's GPU
/// and CPU busy time.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFactors {
    /// Start to last end.
    pub span: f64,
    /// GPU busy time per node.
    pub gpu: Vec<f64>,
    /// CPU busy time per node.
    pub cpu: Vec<f64>,
    /// Bytes, FLOPs and issued FLOPs per node, each its own ratio: the compute efficiencies
    /// move the issued FLOPs, the expert popularity the bytes (experts touched).
    pub work: Vec<Work>,
}

impl StepFactors {
    /// Whether every ratio is 1 (the nudge moves no time of this size).
    pub fn is_identity(&self) -> bool {
        self.span == 1.0
            && self.gpu.iter().chain(&self.cpu).all(|&f| f == 1.0)
            && self.work.iter().all(|w| w.bytes == 1.0 && w.flops == 1.0 && w.issued_flops == 1.0)
    }
}

/// Most sequence lengths whose KV bytes per node [`KvBytes`] keeps; past it the memo restarts.
const MAX_KV_LENGTHS: usize = 4096;

/// The plan's KV bytes per node of one sequence, by length, memoised: the scheduler asks at
/// every arrival, admission, completion and (vLLM's paged check) step, and each answer sums
/// the node's layers ([`Plan::kv_bytes`], pure). A third of a serving run's CPU before.
struct KvBytes<'a> {
    plan: &'a Plan,
    by_length: std::cell::RefCell<FastMap<u64, Box<[f64]>>>,
}

impl<'a> KvBytes<'a> {
    fn new(plan: &'a Plan) -> Self {
        KvBytes { plan, by_length: Default::default() }
    }

    /// [`Plan::kv_bytes`]`(node, tokens)`.
    fn on(&self, node: usize, tokens: u64) -> f64 {
        let mut memo = self.by_length.borrow_mut();
        if let Some(bytes) = memo.get(&tokens) {
            return bytes[node];
        }
        if memo.len() >= MAX_KV_LENGTHS {
            memo.clear();
        }
        let bytes: Box<[f64]> = (0..self.plan.n()).map(|i| self.plan.kv_bytes(i, tokens)).collect();
        let out = bytes[node];
        memo.insert(tokens, bytes);
        out
    }
}

/// A request in the server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    id: u64,
    arrival: Time,
    admitted: Time,
    first_token: Time,
    /// When a chat client sees the first text: the decode step that passes the model's chat
    /// header ([`crate::llm::ModelSpec::chat_header_tokens`]); the first token without one.
    first_text: Time,
    /// Its latest token, ns (0 before the first): the start of the next inter-token gap.
    last_token: Time,
    user: u32,
    prompt: u64,
    output: u64,
    prefilled: u64,
    generated: u64,
}

/// One request's lifecycle, kept only when asked for ([`ServeSim::with_request_log`]): for
/// tests and traces, not for statistics (those stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// Arrival order, from 0.
    pub id: u64,
    /// Arrival, ns.
    pub arrival: Time,
    /// Admission (KV reserved, batch slot taken), ns; 0 when rejected.
    pub admitted: Time,
    /// First token, ns; 0 when rejected.
    pub first_token: Time,
    /// First text a streaming chat client sees, ns: the first token, or, for a model whose
    /// responses open with a chat header (gpt-oss's harmony `<|channel|>analysis<|message|>`),
    /// the token after it (the last token when the output ends inside the header); 0 when
    /// rejected.
    pub first_text: Time,
    /// Tokens after the first text (the output's decode steps past the header).
    pub text_tokens: u64,
    /// Last token (or rejection), ns.
    pub done: Time,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens.
    pub output: u64,
    /// Turned away.
    pub rejected: bool,
}

/// What a serving run produced.
#[derive(Clone, Debug)]
pub struct ServeRun {
    /// Statistics after warm-up.
    pub stats: ServeStats,
    /// The measurement window (warm-up to the end), ns.
    pub window_ns: Time,
    /// When the run ended, ns.
    pub end_ns: Time,
    /// GPU busy time per node over the run, ns.
    pub busy_gpu: Vec<Time>,
    /// CPU busy time per node over the run, ns.
    pub busy_cpu: Vec<Time>,
    /// DRAM bytes and FLOPs per node over the run (what power charges energy for).
    pub work: Vec<Work>,
    /// Events processed.
    pub events: u64,
    /// Forwards executed.
    pub forwards: u64,
    /// Every request's lifecycle, when asked for.
    pub log: Option<Vec<RequestRecord>>,
    /// The run stopped at its cap on forwards ([`MAX_SERVE_FORWARDS`]) before the workload's
    /// end: the statistics cover `window_ns` only.
    pub truncated: bool,
    /// Forwards whose timing was reused from an earlier forward of the same shape.
    pub reused_forwards: u64,
}

/// A serving run in progress.
pub struct ServeSim<'a> {
    plan: &'a Plan,
    serve: &'a Serve,
    slo: Slo,
    policy: Policy,
    arrivals: Arrivals<'a>,
    jitter: Jitter,
    cache: FastMap<u64, Lowered>,
    steps: FastMap<Vec<(u64, u64)>, StepTime>,
    reps: Representatives,
    base: Option<BaseSteps<'a>>,
    step_rows: usize,
    step_key: Vec<(u64, u64)>,
    reuse_steps: bool,
    reused: u64,
    truncated: bool,
    now: Time,
    waiting: VecDeque<Req>,
    prefilling: Vec<Req>,
    decoding: Vec<Req>,
    kv_bytes: KvBytes<'a>,
    kv_capacity: Vec<f64>,
    kv_used: Vec<f64>,
    stats: ServeStats,
    busy_gpu: Vec<Time>,
    busy_cpu: Vec<Time>,
    work: Vec<Work>,
    events: u64,
    forwards: u64,
    warmup: Time,
    horizon: Option<Time>,
    log: Option<Vec<RequestRecord>>,
    max_forwards: u64,
    max_tasks: u64,
    tasks: u64,
    observer: Option<Observer<'a>>,
    /// The model's chat header ([`crate::llm::ModelSpec::chat_header_tokens`]), read once.
    chat_header: u64,
}

/// What [`ServeSim::with_observer`] keeps: a callback per executed forward.
type Observer<'a> = Box<dyn FnMut(&Forward<'_>) + 'a>;

/// One executed forward, as an observer ([`ServeSim::with_observer`]) sees it: for traces.
#[derive(Debug)]
pub struct Forward<'x> {
    /// Forwards before it in the run.
    pub index: u64,
    /// When it started, ns.
    pub start: Time,
    /// Sequences in it.
    pub sequences: usize,
    /// Tokens in it (equal to `sequences` for a pure decode step).
    pub tokens: u64,
    /// Its lowered graph.
    pub lowered: &'x Lowered,
    /// Its executed timeline.
    pub timeline: &'x Timeline,
}

/// Most forwards (batched model steps) one serving run simulates: ~30 simulated hours of a busy
/// 4-node cluster, ~0.4 s of CPU when each reuses an earlier forward's timing. A longer workload stops there and reports its statistics over the window it
/// simulated (`window_ns` ends at the cap, [`ServeRun::truncated`] says so), so the work of an
/// estimate is bounded whatever `duration_s` or `requests` says; the shipped scenarios and an
/// hour at 8 requests/s stay far below it.
pub const MAX_SERVE_FORWARDS: u64 = 1_000_000;

/// Most tasks one serving run executes on the event core (forwards simulated task by task, the
/// rest reuse a timing), ~30 ns each: the work of ~4,000 forwards of a 4-node tensor-parallel
/// step of a 94-layer MoE, about a second of CPU. A workload whose forwards keep changing shape (drawn lengths,
/// long contexts) stops there, reported like the forward cap.
pub const MAX_SIMULATED_TASKS: u64 = 30_000_000;

/// Most requests waiting in the queue (~100 bytes each, ~100 MB at the cap): an overloaded
/// server's queue grows with every arrival (Poisson at 10^6 requests/s for a year held 2.9 GB
/// and ran past a minute before the cap), so a run whose queue passes it stops there,
/// reported like the forward cap: its statistics already say the server cannot keep up.
pub const MAX_QUEUED_REQUESTS: usize = 1 << 20;

/// Simulates a serving workload on a plan; one jitter stream per run (seeded like `generate`'s)
/// and one workload stream for arrivals and lengths.
pub fn simulate_serve(plan: &Plan, serve: &Serve, slo: &Slo, seed: u64) -> ServeRun {
    ServeSim::new(plan, serve, slo, seed).run()
}

impl<'a> ServeSim<'a> {
    /// A run at time 0 with empty queues; KV capacity per node from the plan.
    pub fn new(plan: &'a Plan, serve: &'a Serve, slo: &Slo, seed: u64) -> Self {
        let n = plan.n();
        ServeSim {
            plan,
            serve,
            slo: *slo,
            policy: Policy::for_plan(plan, serve),
            arrivals: Arrivals::new(serve, seed),
            jitter: Jitter::new(seed, plan.jitter_cv),
            cache: FastMap::default(),
            steps: FastMap::default(),
            reps: BTreeMap::new(),
            base: None,
            step_rows: 0,
            step_key: Vec::new(),
            reuse_steps: true,
            reused: 0,
            truncated: false,
            now: 0,
            waiting: VecDeque::new(),
            prefilling: Vec::new(),
            decoding: Vec::new(),
            kv_bytes: KvBytes::new(plan),
            kv_capacity: (0..n).map(|i| plan.kv_capacity_bytes(i)).collect(),
            kv_used: vec![0.0; n],
            stats: ServeStats::default(),
            busy_gpu: vec![0; n],
            busy_cpu: vec![0; n],
            work: vec![Work::default(); n],
            events: 0,
            forwards: 0,
            warmup: s_to_ns(serve.warmup_s),
            horizon: match serve.stop {
                Stop::Duration(d) => Some(s_to_ns(d)),
                Stop::Requests(_) => None,
            },
            log: None,
            max_forwards: MAX_SERVE_FORWARDS,
            max_tasks: MAX_SIMULATED_TASKS,
            tasks: 0,
            observer: None,
            chat_header: plan.model.chat_header_tokens(),
        }
    }

    /// Replaces the cap on simulated forwards ([`MAX_SERVE_FORWARDS`]) and lifts the one on
    /// tasks executed ([`MAX_SIMULATED_TASKS`]): long-run checks of the simulator itself.
    pub fn with_max_forwards(mut self, max_forwards: u64) -> Self {
        self.max_forwards = max_forwards;
        self.max_tasks = u64::MAX;
        self
    }

    /// Simulates every forward task by task on the event core, jitter drawn afresh each time,
    /// instead of reusing the timing of an earlier forward of the same shape. Without jitter the
    /// two give the same bytes (a forward's timeline does not depend on when it starts); with
    /// jitter, reuse repeats the first draw of a shape (its straggler delay at the barriers)
    /// rather than drawing anew, which moves the 8-user scenario's rates by ~0.1%.
    pub fn with_exact_steps(mut self) -> Self {
        self.reuse_steps = false;
        self
    }

    /// Replays the workload reusing `table`'s timings (a run of the same scenario under another
    /// profile) with each shape's span and busy times scaled by `factors[tokens]` (this plan's
    /// step time over the base plan's, at that size's representative shape): a forward of a
    /// shape the base run timed is not simulated again. Shapes the base run did not time (the
    /// replay's batches can differ once step times move) are simulated on this run's plan.
    /// Factors of 1 replay the base run exactly.
    pub fn with_base_steps(mut self, table: &'a StepTable, factors: &'a BTreeMap<u64, StepFactors>) -> Self {
        self.base = Some(BaseSteps { table, factors });
        self
    }

    /// Keeps every request's lifecycle in [`ServeRun::log`] (memory grows with the run).
    pub fn with_request_log(mut self) -> Self {
        self.log = Some(Vec::new());
        self
    }

    /// Hands every executed forward to `f` (traces). Every forward is then simulated task by
    /// task (no step reuse, see [`ServeSim::with_exact_steps`]).
    pub fn with_observer(mut self, f: impl FnMut(&Forward<'_>) + 'a) -> Self {
        self.observer = Some(Box::new(f));
        // A reused step has no timeline to show: every forward is simulated task by task.
        self.reuse_steps = false;
        self
    }

    /// Replaces the KV capacity per node, bytes (hand-made admission cases).
    pub fn with_kv_capacity(mut self, bytes: Vec<f64>) -> Self {
        assert_eq!(bytes.len(), self.kv_capacity.len(), "one capacity per node");
        self.kv_capacity = bytes;
        self
    }

    /// The scheduler this run uses.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Runs to the end of the workload.
    pub fn run(self) -> ServeRun {
        self.run_keeping_steps().0
    }

    /// Runs to the end of the workload, keeping the step timings for replays under a nudged
    /// profile ([`ServeSim::with_base_steps`]).
    pub fn run_keeping_steps(mut self) -> (ServeRun, StepTable) {
        loop {
            self.take_arrivals();
            if self.finished() {
                break;
            }
            if self.forwards >= self.max_forwards || self.tasks >= self.max_tasks || self.waiting.len() >= MAX_QUEUED_REQUESTS {
                self.horizon = Some(self.now);
                self.truncated = true;
                break;
            }
            let worked = match self.policy {
                Policy::Exo { max_batch } => self.exo_iteration(max_batch),
                Policy::MlxLm { max_batch, prefill_batch } => self.mlx_iteration(max_batch, prefill_batch),
                Policy::LlamaServer { slots, n_batch } => self.llama_iteration(slots, n_batch),
                Policy::VllmV1 { max_num_seqs, max_num_batched_tokens, block_tokens } => {
                    self.vllm_iteration(max_num_seqs, max_num_batched_tokens, block_tokens)
                }
                Policy::Sglang { max_running, chunked_prefill } => self.sglang_iteration(max_running, chunked_prefill),
            };
            if !worked {
                // Idle until the next arrival (or the end of the run).
                let next = self.arrivals.next_time().map(|t| self.horizon.map_or(t, |h| t.min(h)));
                match next {
                    Some(t) if t > self.now => {
                        self.stats.span(t - self.now, 0, self.waiting.len());
                        self.now = t;
                    }
                    _ => break,
                }
            }
        }
        let end = self.horizon.unwrap_or(self.now);
        let run = ServeRun {
            window_ns: end.saturating_sub(self.warmup),
            end_ns: end.max(self.now),
            stats: self.stats,
            busy_gpu: self.busy_gpu,
            busy_cpu: self.busy_cpu,
            work: self.work,
            events: self.events,
            forwards: self.forwards,
            log: self.log,
            truncated: self.truncated,
            reused_forwards: self.reused,
        };
        (run, StepTable { steps: self.steps, reps: self.reps })
    }

    fn finished(&self) -> bool {
        match self.serve.stop {
            Stop::Duration(_) => self.horizon.is_some_and(|h| self.now >= h),
            Stop::Requests(n) => {
                self.arrivals.created() >= n && self.waiting.is_empty() && self.prefilling.is_empty() && self.decoding.is_empty()
            }
        }
    }

    /// Moves requests that have arrived into the queue; one that could never fit is rejected.
    fn take_arrivals(&mut self) {
        // Past the queue cap the run stops (`run`): arrivals beyond it are not drawn.
        while self.waiting.len() < MAX_QUEUED_REQUESTS {
            let Some(a) = self.arrivals.pop_until(self.now) else { break };
            let r = Req {
                id: self.arrivals.created() - 1,
                arrival: a.at,
                admitted: 0,
                first_token: 0,
                first_text: 0,
                last_token: 0,
                user: a.user,
                prompt: a.prompt,
                output: a.output,
                prefilled: 0,
                generated: 0,
            };
            if (0..self.kv_used.len()).any(|i| self.kv_need(&r, i) > self.kv_capacity[i]) {
                self.reject(r);
            } else {
                self.waiting.push_back(r);
            }
        }
        self.stats.peak_queue = self.stats.peak_queue.max(self.waiting.len() as u64);
    }

    /// KV bytes a request holds on `node` at its full length.
    fn kv_need(&self, r: &Req, node: usize) -> f64 {
        self.kv_bytes.on(node, r.prompt + r.output)
    }

    /// The head of the queue, admitted with its KV reserved, if it fits now; with
    /// `kv_full = "reject"` heads that do not fit are turned away, else the queue waits
    /// (first come, first served).
    pub(crate) fn admit_next(&mut self) -> Option<Req> {
        if self.prefilling.is_empty() && self.decoding.is_empty() {
            // Nothing holds KV: clear the float residue of reservations and releases.
            self.kv_used.fill(0.0);
        }
        loop {
            let r = *self.waiting.front()?;
            let need: Vec<f64> = (0..self.kv_used.len()).map(|i| self.kv_need(&r, i)).collect();
            let fits = need.iter().enumerate().all(|(i, b)| self.kv_used[i] + b <= self.kv_capacity[i]);
            if fits {
                self.waiting.pop_front();
                for (i, b) in need.iter().enumerate() {
                    self.kv_used[i] += b;
                    if self.kv_capacity[i] > 0.0 {
                        self.stats.peak_kv = self.stats.peak_kv.max(self.kv_used[i] / self.kv_capacity[i]);
                    }
                }
                return Some(Req { admitted: self.now, ..r });
            }
            if self.serve.kv_full == KvFull::Reject {
                self.waiting.pop_front();
                self.reject(r);
                continue;
            }
            return None;
        }
    }

    fn measured(&self, arrival: Time) -> bool {
        arrival >= self.warmup && self.horizon.is_none_or(|h| self.now <= h)
    }

    fn record(&mut self, r: &Req, rejected: bool) -> RequestRecord {
        let (admitted, first_token) = if rejected { (0, 0) } else { (r.admitted, r.first_token) };
        let header = self.chat_header;
        let first_text = match (rejected, header) {
            (true, _) => 0,
            (false, 0) => r.first_token,
            (false, _) if r.generated >= header => r.first_text,
            (false, _) => self.now,
        };
        let rec = RequestRecord {
            id: r.id,
            arrival: r.arrival,
            admitted,
            first_token,
            first_text,
            text_tokens: r.output.saturating_sub(header),
            done: self.now,
            prompt: r.prompt,
            output: r.output,
            rejected,
        };
        if let Some(log) = self.log.as_mut() {
            log.push(rec);
        }
        rec
    }

    fn reject(&mut self, r: Req) {
        self.record(&r, true);
        if self.measured(r.arrival) {
            self.stats.rejected += 1;
        }
        if r.user != u32::MAX {
            self.arrivals.user_done(r.user, self.now);
        }
    }

    fn complete(&mut self, r: Req) {
        let rec = self.record(&r, false);
        for i in 0..self.kv_used.len() {
            self.kv_used[i] = (self.kv_used[i] - self.kv_need(&r, i)).max(0.0);
        }
        if self.measured(r.arrival) {
            let ttft_s = (r.first_token - r.arrival) as f64 / 1e9;
            let tpot_ms = (self.now - r.first_token) as f64 / r.output as f64 / 1e6;
            let met = self.slo.met(ttft_s, tpot_ms);
            self.stats.complete(&rec, met);
        }
        if r.user != u32::MAX {
            self.arrivals.user_done(r.user, self.now);
        }
    }

    /// One forward over `rows` (tokens, context) per sequence, lowered and executed like a
    /// `generate` step; `running` sequences are in the server meanwhile. A forward of a shape
    /// already run reuses that run's timing (unless [`ServeSim::with_exact_steps`]).
    pub(crate) fn forward(&mut self, rows: &[(u64, u64)], head_rows: u64, running: usize) {
        let (span, events) = self.run_forward(rows, head_rows);
        self.events += events;
        self.forwards += 1;
        self.stats.span(span, running, self.waiting.len());
        self.now += span;
    }

    /// Times one forward over `rows` and adds its busy time and work to the run's totals
    /// (not its span to the clock): (span, events). A shape already run reuses that run's
    /// timing (unless [`ServeSim::with_exact_steps`]).
    fn run_forward(&mut self, rows: &[(u64, u64)], head_rows: u64) -> (Time, u64) {
        self.step_key.clear();
        self.step_key.extend_from_slice(rows);
        self.step_key.push((head_rows, u64::MAX));
        let from_base = if self.reuse_steps && !self.steps.contains_key(&self.step_key[..]) {
            self.base.as_ref().and_then(|b| {
                let st = b.table.steps.get(&self.step_key[..])?;
                let tokens: u64 = rows.iter().map(|r| r.0).sum();
                Some(match b.factors.get(&tokens) {
                    Some(f) => st.scaled(f),
                    None => st.clone(),
                })
            })
        } else {
            None
        };
        if let Some(st) = from_base {
            // Kept in this run's own table: a later forward of the shape reuses it as usual.
            self.keep_step(st);
        }
        let reused = if self.reuse_steps { self.steps.get(&self.step_key[..]) } else { None };
        match reused {
            Some(st) => {
                st.add_to(&mut self.busy_gpu, &mut self.busy_cpu, &mut self.work);
                self.reused += 1;
                (st.span, st.events)
            }
            None => {
                let st = self.simulate_forward(rows, head_rows);
                st.add_to(&mut self.busy_gpu, &mut self.busy_cpu, &mut self.work);
                let out = (st.span, st.events);
                if self.reuse_steps {
                    self.keep_step(st);
                }
                out
            }
        }
    }

    /// One round of `lanes` forwards kept in flight at once over a pipeline's stages (vLLM V1's
    /// batch queue): `rows` split into `lanes` batches of consecutive sequences, each through
    /// every stage in turn while the others occupy the other stages. Every batch gets its next
    /// token once per round, which lasts the longer of one batch's own pass through the stages
    /// and the busiest resource's work for all of them (a stage's GPU, or the host that
    /// dispatches every batch): each batch still reads its stage's weights, so a memory-bound
    /// decode gains only on the per-sequence work (KV, the experts a smaller batch leaves
    /// untouched). `running` sequences are in the server meanwhile.
    ///
    /// Each batch is executed (and traced) from when the first stage is done with the batches
    /// before it in the round, as the stages' occupancy is laid out in steady state.
    pub(crate) fn pipelined_forwards(&mut self, rows: &[(u64, u64)], lanes: usize, running: usize) {
        let per = rows.len().div_ceil(lanes.max(1));
        let (start, mut round, mut events) = (self.now, 0, 0);
        let (gpu0, cpu0) = (self.busy_gpu.clone(), self.busy_cpu.clone());
        for batch in rows.chunks(per) {
            // The first stage (node 0) is free once it has run the round's earlier batches.
            self.now = start + (self.busy_gpu[0] - gpu0[0]);
            let (span, ev) = self.run_forward(batch, batch.len() as u64);
            round = round.max(span);
            events += ev;
            self.forwards += 1;
        }
        let loads = self.busy_gpu.iter().zip(&gpu0).chain(self.busy_cpu.iter().zip(&cpu0)).map(|(after, before)| after - before);
        round = round.max(loads.max().unwrap_or(0));
        self.events += events;
        self.stats.span(round, running, self.waiting.len());
        self.now = start + round;
    }

    /// Keeps a shape's timing (the current `step_key`) for reuse; the table restarts past
    /// [`MAX_CACHED_STEP_ROWS`].
    fn keep_step(&mut self, st: StepTime) {
        if self.step_rows + self.step_key.len() > MAX_CACHED_STEP_ROWS {
            self.steps.clear();
            self.step_rows = 0;
        }
        self.step_rows += self.step_key.len();
        self.steps.insert(self.step_key.clone(), st);
    }

    /// Lowers (or re-times a cached graph of the same tokens) and executes one forward task by
    /// task, jitter drawn from the run's stream.
    fn simulate_forward(&mut self, rows: &[(u64, u64)], head_rows: u64) -> StepTime {
        let tokens: u64 = rows.iter().map(|r| r.0).sum();
        if self.cache.len() >= MAX_CACHED_GRAPHS && !self.cache.contains_key(&tokens) {
            self.cache.clear();
        }
        let plan = self.plan;
        self.reps.entry(tokens).or_insert_with(|| (rows.to_vec(), head_rows));
        let low = self.cache.entry(tokens).or_insert_with(|| lower_step(plan, tokens));
        low.retime_rows(plan, rows, head_rows);
        let work = low.work_rows(plan, rows, head_rows);
        let tl = execute(&low.graph, self.now, &mut self.jitter);
        self.tasks += low.graph.task_count() as u64;
        let n = self.busy_gpu.len();
        let mut st = StepTime { span: tl.makespan() - self.now, busy_gpu: vec![0; n], busy_cpu: vec![0; n], events: tl.events(), work };
        if let Some(f) = self.observer.as_mut() {
            f(&Forward { index: self.forwards, start: self.now, sequences: rows.len(), tokens, lowered: low, timeline: &tl });
        }
        for (res, &busy) in low.graph.resources().iter().zip(tl.busy_by_resource()) {
            match res.kind() {
                ResourceKind::Gpu => st.busy_gpu[res.node() as usize] += busy,
                ResourceKind::Cpu => st.busy_cpu[res.node() as usize] += busy,
                ResourceKind::Link | ResourceKind::Virtual => {}
            }
        }
        st
    }

    /// One decode step of every generating sequence.
    pub(crate) fn decode_step(&mut self) {
        let ctx = |r: &Req| r.prompt + r.generated;
        let longest = self.decoding.iter().map(ctx).max().unwrap_or(0);
        let pad = self.policy.pads_context();
        let rows: Vec<(u64, u64)> = self.decoding.iter().map(|r| (1, if pad { longest } else { ctx(r) })).collect();
        self.forward(&rows, rows.len() as u64, self.prefilling.len() + self.decoding.len());
        self.decoded();
    }

    /// Every generating sequence got a token at `now`; the finished ones leave. Each token's
    /// gap since its sequence's previous one (its first token's, for the first decode step) is
    /// an inter-token latency, as streaming clients time them.
    pub(crate) fn decoded(&mut self) {
        if self.now > self.warmup && self.horizon.is_none_or(|h| self.now <= h) {
            self.stats.window_tokens += self.decoding.len() as u64;
            // Sequences that decoded together share a gap: one record per run of equal starts.
            let mut run: Option<(crate::sim::Time, u32)> = None;
            for r in &self.decoding {
                let since = r.last_token.max(r.first_token);
                run = match run {
                    Some((t, n)) if t == since => Some((t, n + 1)),
                    Some((t, n)) => {
                        self.stats.itl_ms.record_n((self.now - t) as f64 / 1e6, n);
                        Some((since, 1))
                    }
                    None => Some((since, 1)),
                };
            }
            if let Some((t, n)) = run {
                self.stats.itl_ms.record_n((self.now - t) as f64 / 1e6, n);
            }
        }
        let header = self.chat_header;
        let mut i = 0;
        while i < self.decoding.len() {
            self.decoding[i].generated += 1;
            self.decoding[i].last_token = self.now;
            if self.decoding[i].generated == header {
                self.decoding[i].first_text = self.now;
            }
            if self.decoding[i].generated >= self.decoding[i].output {
                let r = self.decoding.remove(i);
                self.complete(r);
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KvBytes, MAX_KV_LENGTHS};
    use crate::profile::Profile;
    use crate::scenario::{Source, parse};

    /// The memo answers what the plan does, bit for bit, on a model with sliding-window layers
    /// (gpt-oss: the sum is not linear in the length), before and after it restarts.
    #[test]
    fn kv_bytes_memo_is_the_plans_sum_bit_for_bit() {
        let text = r#"
[cluster]
nodes = ["m3-ultra-80c-512gb", "m3-ultra-80c-512gb"]
fabric = "tb5-rdma"
[model]
name = "gpt-oss-120b"
[engine]
name = "exo"
parallelism = "pipeline"
[workload]
kind = "generate"
"#;
        let s = parse(Source { path: "t.toml".into(), dir: std::path::PathBuf::new(), text: text.into() }).unwrap();
        let plan = crate::estimate::generate_plan(&s, &Profile::default_profile()).unwrap();
        let memo = KvBytes::new(&plan);
        let lengths = (0..MAX_KV_LENGTHS as u64 + 10).map(|k| k * 37 % 300_000).chain([1, 128, 129, 4096, 1 << 20]);
        for tokens in lengths {
            for node in 0..plan.n() {
                assert_eq!(memo.on(node, tokens).to_bits(), plan.kv_bytes(node, tokens).to_bits(), "{tokens} tokens on node {node}");
            }
        }
        assert!(memo.by_length.borrow().len() <= MAX_KV_LENGTHS, "the memo restarts at its bound");
    }
}
