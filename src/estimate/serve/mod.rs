//! The serve workload: requests arrive (closed loop, Poisson, trace), a runtime's scheduler
//! ([`sched`]) batches them, and every forward it decides on is lowered and executed on the
//! event core exactly like a `generate` step ([`ServeSim::forward`]): a workload, not a second
//! estimator. KV cache is reserved per node at admission (prompt + output at the split's share)
//! against what the wired limit leaves after weights; statistics stream ([`stats`]).

use std::collections::{HashMap, VecDeque};

use crate::engine::{Lowered, Plan, lower_step};
use crate::scenario::{KvFull, Serve, Slo, Stop};
use crate::sim::{Jitter, ResourceKind, Time, Timeline, execute};

pub mod arrivals;
pub mod sched;
pub mod stats;

use arrivals::{Arrivals, s_to_ns};
pub use sched::Policy;
pub use stats::{LogHistogram, ServeStats};

/// Most lowered step graphs kept (one per batch size in tokens); beyond it the cache restarts,
/// so memory stays bounded.
const MAX_CACHED_GRAPHS: usize = 64;

/// A request in the server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    id: u64,
    arrival: Time,
    admitted: Time,
    first_token: Time,
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
    /// Events processed.
    pub events: u64,
    /// Forwards executed.
    pub forwards: u64,
    /// Every request's lifecycle, when asked for.
    pub log: Option<Vec<RequestRecord>>,
}

/// A serving run in progress.
pub struct ServeSim<'a> {
    plan: &'a Plan,
    serve: &'a Serve,
    slo: Slo,
    policy: Policy,
    arrivals: Arrivals<'a>,
    jitter: Jitter,
    cache: HashMap<u64, Lowered>,
    now: Time,
    waiting: VecDeque<Req>,
    prefilling: Vec<Req>,
    decoding: Vec<Req>,
    kv_capacity: Vec<f64>,
    kv_used: Vec<f64>,
    stats: ServeStats,
    busy_gpu: Vec<Time>,
    busy_cpu: Vec<Time>,
    events: u64,
    forwards: u64,
    warmup: Time,
    horizon: Option<Time>,
    log: Option<Vec<RequestRecord>>,
    max_forwards: u64,
    observer: Option<Observer<'a>>,
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

/// Most forwards (batched model steps) one serving run simulates. A longer workload stops there
/// and reports its statistics over the window it simulated (`window_ns` ends at the cap), so the
/// work of an estimate is bounded whatever `duration_s` or `requests` says; the shipped
/// scenarios stay below it.
pub const MAX_SERVE_FORWARDS: u64 = 2_500;

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
            cache: HashMap::new(),
            now: 0,
            waiting: VecDeque::new(),
            prefilling: Vec::new(),
            decoding: Vec::new(),
            kv_capacity: (0..n).map(|i| plan.kv_capacity_bytes(i)).collect(),
            kv_used: vec![0.0; n],
            stats: ServeStats::default(),
            busy_gpu: vec![0; n],
            busy_cpu: vec![0; n],
            events: 0,
            forwards: 0,
            warmup: s_to_ns(serve.warmup_s),
            horizon: match serve.stop {
                Stop::Duration(d) => Some(s_to_ns(d)),
                Stop::Requests(_) => None,
            },
            log: None,
            max_forwards: MAX_SERVE_FORWARDS,
            observer: None,
        }
    }

    /// Replaces the cap on simulated forwards ([`MAX_SERVE_FORWARDS`]): long-run checks of
    /// the simulator itself.
    pub fn with_max_forwards(mut self, max_forwards: u64) -> Self {
        self.max_forwards = max_forwards;
        self
    }

    /// Keeps every request's lifecycle in [`ServeRun::log`] (memory grows with the run).
    pub fn with_request_log(mut self) -> Self {
        self.log = Some(Vec::new());
        self
    }

    /// Hands every executed forward to `f` (traces); the run itself is unchanged.
    pub fn with_observer(mut self, f: impl FnMut(&Forward<'_>) + 'a) -> Self {
        self.observer = Some(Box::new(f));
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
    pub fn run(mut self) -> ServeRun {
        loop {
            self.take_arrivals();
            if self.finished() {
                break;
            }
            if self.forwards >= self.max_forwards {
                self.horizon = Some(self.now);
                break;
            }
            let worked = match self.policy {
                Policy::Exo { max_batch } => self.exo_iteration(max_batch),
                Policy::MlxLm { max_batch, prefill_batch } => self.mlx_iteration(max_batch, prefill_batch),
                Policy::LlamaServer { slots, n_batch } => self.llama_iteration(slots, n_batch),
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
        ServeRun {
            window_ns: end.saturating_sub(self.warmup),
            end_ns: end.max(self.now),
            stats: self.stats,
            busy_gpu: self.busy_gpu,
            busy_cpu: self.busy_cpu,
            events: self.events,
            forwards: self.forwards,
            log: self.log,
        }
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
        while let Some(a) = self.arrivals.pop_until(self.now) {
            let r = Req {
                id: self.arrivals.created() - 1,
                arrival: a.at,
                admitted: 0,
                first_token: 0,
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
        self.plan.kv_bytes(node, r.prompt + r.output)
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
        let rec = RequestRecord {
            id: r.id,
            arrival: r.arrival,
            admitted,
            first_token,
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
    /// `generate` step; `running` sequences are in the server meanwhile.
    pub(crate) fn forward(&mut self, rows: &[(u64, u64)], head_rows: u64, running: usize) {
        let tokens: u64 = rows.iter().map(|r| r.0).sum();
        if self.cache.len() >= MAX_CACHED_GRAPHS && !self.cache.contains_key(&tokens) {
            self.cache.clear();
        }
        let plan = self.plan;
        let low = self.cache.entry(tokens).or_insert_with(|| lower_step(plan, tokens));
        low.retime_rows(plan, rows, head_rows);
        let tl = execute(&low.graph, self.now, &mut self.jitter);
        if let Some(f) = self.observer.as_mut() {
            f(&Forward { index: self.forwards, start: self.now, sequences: rows.len(), tokens, lowered: low, timeline: &tl });
        }
        for (r, res) in low.graph.resources.iter().enumerate() {
            match res.kind {
                ResourceKind::Gpu => self.busy_gpu[res.node as usize] += tl.busy[r],
                ResourceKind::Cpu => self.busy_cpu[res.node as usize] += tl.busy[r],
                ResourceKind::Link | ResourceKind::Virtual => {}
            }
        }
        self.events += tl.events;
        self.forwards += 1;
        self.stats.span(tl.makespan - self.now, running, self.waiting.len());
        self.now = tl.makespan;
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

    /// Every generating sequence got a token at `now`; the finished ones leave.
    pub(crate) fn decoded(&mut self) {
        if self.now > self.warmup && self.horizon.is_none_or(|h| self.now <= h) {
            self.stats.window_tokens += self.decoding.len() as u64;
        }
        let mut i = 0;
        while i < self.decoding.len() {
            self.decoding[i].generated += 1;
            if self.decoding[i].generated >= self.decoding[i].output {
                let r = self.decoding.remove(i);
                self.complete(r);
            } else {
                i += 1;
            }
        }
    }
}
