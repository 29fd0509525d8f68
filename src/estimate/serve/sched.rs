//! Each runtime's serving scheduler, as read from its source (FACTS.md, "Serving concurrent
//! requests"). One iteration of the server loop per call; every forward goes through
//! `ServeSim::forward`, the same lowering and event core as `generate`.

use crate::engine::runtimes::ServingLoop;
use crate::engine::{EngineKind, Plan};
use crate::scenario::Serve;

use super::super::generate::prefill_piece;
use super::{Req, ServeSim};
use crate::sim::Time;

/// A runtime's serving loop.
///
/// Preemption (what happens when KV runs out mid-generation): the model reserves every
/// request's KV for its whole length (prompt + output) at admission, against what the wired
/// limit leaves after weights, so a running request never runs out; a request that does not fit
/// waits (or is turned away, `kv_full = "reject"`). None of the three runtimes preempts a running
/// sequence to make room for another:
/// - mlx-lm 0.32.2 (`generate.py`, `BatchGenerator`; `server.py` builds it with
///   `--decode-concurrency` / `--prompt-concurrency`): no memory-aware admission and no eviction
///   of a sequence; each sequence's cache grows until it finishes (with `max_kv_size`, a rotating
///   cache drops its oldest tokens instead). Running out of memory is a Metal allocation
///   failure, not a scheduling event.
/// - exo serves through mlx-lm's `BatchGenerator` (above): the same, no preemption.
/// - llama.cpp `llama-server` (`tools/server/server-context.cpp` as vendored by
///   llama-cpp-python 0.3.36): each slot owns `n_ctx_slot` of the cache; a slot whose context
///   fills stops that request (`truncated`, `STOP_TYPE_LIMIT`) unless `--context-shift` drops
///   old tokens. When a batch finds no room in the cache, the server frees idle slots or halves
///   the batch and retries; at one token it fails every processing slot ("Context size has been
///   exceeded."). No running slot is evicted for another (a TODO in the source).
///
/// The model's full-length reservation keeps all three from reaching those paths; the
/// per-slot `n_ctx` cut of llama-server is not modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// exo >= 1.0.69 (snapshot b5375f8c, continuous batching since PR 1642): up to `max_batch`
    /// (`EXO_MAX_CONCURRENT_REQUESTS` = 8) active requests, more wait in an unbounded queue. A
    /// new request's prefill runs to completion at batch 1 before the next decode step (the
    /// running decodes stall for it); all active requests decode in one forward. Tensor and
    /// pipeline instances alike: a pipeline runs its stages one after another on the same
    /// batch, no micro-batching across requests (the lowering's pipeline graph).
    Exo {
        /// Most active requests.
        max_batch: u64,
    },
    /// mlx-lm `BatchGenerator` / `mlx_lm.server` (PRs 443, 626, 1072): each iteration runs one
    /// decode step of the running batch, then admits new sequences (up to `prefill_batch` =
    /// `--prompt-concurrency` 8 prompting, `max_batch` = `--decode-concurrency` 32 in all) and
    /// runs one prefill chunk per prompting sequence, right-padded to the longest: prefill and
    /// decode alternate as separate forwards.
    MlxLm {
        /// Most sequences (prompting + generating).
        max_batch: u64,
        /// Most sequences prompting at once.
        prefill_batch: u64,
    },
    /// llama.cpp `llama-server` (continuous batching on, 4 slots by default, `-np`): each
    /// iteration builds one batch of one token per generating slot, then prompt tokens of
    /// prefilling slots up to `n_batch` = 2,048, run as micro-batches of `n_ubatch` (the
    /// engine's `prefill_chunk`, 512): prefill and decode fused in one forward. A request waits
    /// for a free slot. With RPC devices the micro-batches go through the stages one after
    /// another (the RPC lowering; ggml's pipeline overlap is off for RPC).
    LlamaServer {
        /// Slots (`-np`).
        slots: u64,
        /// Tokens per batch (`-b`), a multiple of the micro-batch.
        n_batch: u64,
    },
    /// vLLM V1 (`v1/core/sched/scheduler.py`; FACTS-2026 B2: chunked prefill always on,
    /// prefix caching on): each step spends a budget of `max_num_batched_tokens` tokens, first
    /// on the running requests in admission order (one token per decoding request, the rest of
    /// a partly prefilled prompt up to the budget), then, if nothing was preempted, on waiting
    /// requests (FCFS) while fewer than `max_num_seqs` run; every scheduled token runs in one
    /// forward (prefill and decode fused, no micro-batches). KV is paged: a request holds
    /// `ceil(tokens / block_tokens)` blocks of what `gpu_memory_utilization x memory -
    /// weights` leaves; a new request is admitted when its first chunk's blocks fit, and when a
    /// running request's next tokens need a block none is free, the last admitted running
    /// request is preempted (its blocks freed, back to the front of the queue, recomputed from
    /// its prompt and the tokens it had generated: V1's only preemption mode). Prefix-cache hits
    /// need shared prefixes; the model's requests share none, so the cache never hits here.
    /// On a pipeline split vLLM keeps one batch per stage in flight (its batch queue): decode
    /// steps run as that many batches at once (`ServeSim::pipelined_forwards`).
    VllmV1 {
        /// Most running sequences.
        max_num_seqs: u64,
        /// Most tokens per forward.
        max_num_batched_tokens: u64,
        /// Tokens per KV block.
        block_tokens: u64,
    },
    /// SGLang (`managers/scheduler.py` `get_next_batch_to_run`, an assumption where FACTS is
    /// silent): when waiting requests can be admitted, one prefill (extend) batch of their
    /// prompts up to `chunked_prefill` tokens runs and the decodes wait; otherwise one decode
    /// step of every running request. Admission reserves each request's whole length (SGLang's
    /// `PrefillAdder` reserves the remaining output times a `new_token_ratio` that decays from
    /// 0.7; the model keeps the ratio at 1, so its decode-time retraction never triggers).
    /// RadixAttention reuses shared prefixes, which the model's requests do not have.
    Sglang {
        /// Most running requests.
        max_running: u64,
        /// Most prompt tokens per prefill batch.
        chunked_prefill: u64,
    },
}

impl Policy {
    /// The scheduler of the plan's runtime, with the scenario's `max_batch` override. Under
    /// data-parallel attention each of the N ranks schedules its own sequences with the
    /// engine's budgets (vLLM's `DPEngineCoreProc`, one scheduler per rank) and the ranks step
    /// together: modelled as one scheduler with N times the budgets whose rows are dealt to the
    /// ranks in turn ([`crate::engine::Lowered::retime_rows`]).
    pub fn for_plan(plan: &Plan, serve: &Serve) -> Policy {
        let ranks = plan.options.parallelism.data_ranks(plan.n()) as u64;
        // The runtime chooses its loop and defaults (its module under `engine::runtimes`).
        match plan.options.kind.behaviour().serving_loop(serve.max_batch, &plan.options) {
            ServingLoop::Exo { max_batch } => Policy::Exo { max_batch },
            ServingLoop::MlxBatchGenerator { max_batch, prefill_batch } => Policy::MlxLm { max_batch, prefill_batch },
            ServingLoop::LlamaServer { slots, n_batch } => Policy::LlamaServer { slots, n_batch },
            ServingLoop::VllmV1 { max_num_seqs, max_num_batched_tokens, block_tokens } => {
                Policy::VllmV1 { max_num_seqs: max_num_seqs * ranks, max_num_batched_tokens: max_num_batched_tokens * ranks, block_tokens }
            }
            ServingLoop::Sglang { max_running, chunked_prefill } => {
                Policy::Sglang { max_running: max_running * ranks, chunked_prefill: chunked_prefill * ranks }
            }
        }
    }

    /// Whether the KV cache of a batch is one dense array left-padded to the longest sequence
    /// (mlx-lm's `BatchKVCache`, which exo uses too), so attention runs over the longest
    /// context for every sequence; llama.cpp's cells are per sequence.
    pub fn pads_context(self) -> bool {
        matches!(self, Policy::Exo { .. } | Policy::MlxLm { .. })
    }
}

impl ServeSim<'_> {
    /// One iteration of exo's loop; false when there was nothing to run.
    pub(super) fn exo_iteration(&mut self, max_batch: u64) -> bool {
        let mut worked = false;
        while (self.decoding.len() as u64) < max_batch
            && let Some(mut r) = self.admit_next()
        {
            // Prefill to completion at batch 1, in the same pieces as `generate`.
            while r.prefilled < r.prompt {
                let t = prefill_piece(self.plan, r.prompt, r.prefilled);
                self.forward(&[(t, r.prefilled)], 1, self.decoding.len() + 1);
                r.prefilled += t;
            }
            r.first_token = self.now;
            self.decoding.push(r);
            worked = true;
        }
        if !self.decoding.is_empty() {
            self.decode_step();
            worked = true;
        }
        worked
    }

    /// One iteration of mlx-lm's `BatchGenerator`; false when there was nothing to run.
    pub(super) fn mlx_iteration(&mut self, max_batch: u64, prefill_batch: u64) -> bool {
        let mut worked = false;
        if !self.decoding.is_empty() {
            self.decode_step();
            worked = true;
        }
        while (self.prefilling.len() as u64) < prefill_batch
            && ((self.prefilling.len() + self.decoding.len()) as u64) < max_batch
            && let Some(r) = self.admit_next()
        {
            self.prefilling.push(r);
        }
        if !self.prefilling.is_empty() {
            let pieces: Vec<u64> = self.prefilling.iter().map(|r| prefill_piece(self.plan, r.prompt, r.prefilled)).collect();
            // Right-padded: every prompting sequence runs the longest piece.
            let width = pieces.iter().copied().max().unwrap_or(1);
            let rows: Vec<(u64, u64)> = self.prefilling.iter().map(|r| (width, r.prefilled)).collect();
            let running = self.prefilling.len() + self.decoding.len();
            self.forward(&rows, rows.len() as u64, running);
            for (r, t) in self.prefilling.iter_mut().zip(pieces) {
                r.prefilled += t;
            }
            self.promote_prefilled();
            worked = true;
        }
        worked
    }

    /// One iteration of llama-server's `update_slots`; false when there was nothing to run.
    pub(super) fn llama_iteration(&mut self, slots: u64, n_batch: u64) -> bool {
        while ((self.prefilling.len() + self.decoding.len()) as u64) < slots
            && let Some(r) = self.admit_next()
        {
            self.prefilling.push(r);
        }
        if self.prefilling.is_empty() && self.decoding.is_empty() {
            return false;
        }
        // One token per generating slot first, then prompt tokens up to n_batch.
        let mut rows: Vec<(u64, u64)> = self.decoding.iter().map(|r| (1, r.prompt + r.generated)).collect();
        let mut budget = n_batch.saturating_sub(rows.len() as u64);
        let mut takes = Vec::with_capacity(self.prefilling.len());
        for r in &self.prefilling {
            let take = (r.prompt - r.prefilled).min(budget);
            budget -= take;
            takes.push(take);
            if take > 0 {
                rows.push((take, r.prefilled));
            }
        }
        let running = self.prefilling.len() + self.decoding.len();
        let ub = self.plan.options.prefill_chunk.max(1);
        for micro in micro_batches(&rows, ub) {
            self.forward(&micro, micro.len() as u64, running);
        }
        if !self.decoding.is_empty() {
            self.decoded();
        }
        for (r, take) in self.prefilling.iter_mut().zip(takes) {
            r.prefilled += take;
        }
        self.promote_prefilled();
        true
    }

    /// One step of vLLM V1's scheduler; false when there was nothing to run.
    pub(super) fn vllm_iteration(&mut self, max_seqs: u64, max_tokens: u64, block: u64) -> bool {
        let mut paged = Paged::new(self, block);
        let mut budget = max_tokens;
        // Running requests in admission order: decodes take one token, partial prefills the
        // rest of their prompt (and any recomputed output) up to the budget.
        let mut running = self.running_in_admission_order();
        let mut sched: Vec<(u64, u64)> = Vec::new(); // (request id, tokens)
        let mut preempted = false;
        let mut k = 0;
        while k < running.len() {
            let r = running[k];
            let take = if r.1 { 1 } else { prefill_piece(self.plan, recompute_target(&self.req(r.0)), self.req(r.0).prefilled) };
            let take = take.min(budget);
            if take == 0 {
                k += 1;
                continue;
            }
            // Preempt the last admitted running request until this one's blocks fit.
            while !paged.fits(self, &sched, (r.0, take)) {
                let victim = running.pop().expect("the request itself is running");
                paged.release(victim.0);
                self.preempt(victim.0);
                preempted = true;
                if victim.0 == r.0 {
                    break;
                }
            }
            if running.get(k).is_none_or(|x| x.0 != r.0) {
                break;
            }
            sched.push((r.0, take));
            budget -= take;
            k += 1;
        }
        // New requests, FCFS, if nothing was preempted in this step.
        while !preempted && budget > 0 && ((self.prefilling.len() + self.decoding.len()) as u64) < max_seqs {
            let Some(head) = self.waiting.front().copied() else { break };
            let take = prefill_piece(self.plan, recompute_target(&head), 0).min(budget);
            paged.held.push((head.id, 0));
            if !paged.fits(self, &sched, (head.id, take)) {
                paged.held.pop();
                break;
            }
            self.waiting.pop_front();
            let r = Req { admitted: if head.generated > 0 { head.admitted } else { self.now }, ..head };
            self.prefilling.push(r);
            sched.push((r.id, take));
            budget -= take;
        }
        if sched.is_empty() {
            return false;
        }
        let lanes = self.batches_in_flight();
        if lanes > 1 && sched.len() >= lanes && sched.iter().all(|s| self.decoding.iter().any(|d| d.id == s.0)) {
            self.pipelined_decode(&sched, lanes);
        } else {
            self.fused_forward(&sched);
        }
        paged.record_peak(self, block);
        true
    }

    /// Batches vLLM keeps in flight: V1's batch queue holds `max_concurrent_batches` =
    /// `pipeline_parallel_size` (`v1/engine/core.py` `step_with_batch_queue`, v0.11), so on a
    /// pipeline split (or tensor+pipeline) the stages work on different batches at once; one
    /// elsewhere.
    fn batches_in_flight(&self) -> usize {
        let o = &self.plan.options;
        if o.kind == EngineKind::Vllm { o.parallelism.stages(self.plan.n()) } else { 1 }
    }

    /// A decode-only step of vLLM's scheduler under its batch queue: the running requests
    /// split into `lanes` batches in flight together (a request is in one batch at a time; a
    /// burst of arrivals alternates between them as each batch returns), one token each per
    /// round ([`ServeSim::pipelined_forwards`]). Not modelled: the overlap of steps that carry
    /// prefill chunks, which run one batch at a time (a bound from below).
    fn pipelined_decode(&mut self, sched: &[(u64, u64)], lanes: usize) {
        let rows: Vec<(u64, u64)> = sched
            .iter()
            .map(|&(id, _)| {
                let r = self.req(id);
                (1, r.prompt + r.generated)
            })
            .collect();
        let running = self.prefilling.len() + self.decoding.len();
        self.pipelined_forwards(&rows, lanes, running);
        self.decoded();
    }

    /// One SGLang iteration: a prefill (extend) batch when there are prompts to run, else one
    /// decode step; false when there was nothing to run.
    pub(super) fn sglang_iteration(&mut self, max_running: u64, chunked_prefill: u64) -> bool {
        while ((self.prefilling.len() + self.decoding.len()) as u64) < max_running
            && let Some(r) = self.admit_next()
        {
            self.prefilling.push(r);
        }
        if !self.prefilling.is_empty() {
            let mut budget = chunked_prefill;
            let mut sched = Vec::new();
            for r in &self.prefilling {
                let take = prefill_piece(self.plan, r.prompt, r.prefilled).min(budget);
                budget -= take;
                if take > 0 {
                    sched.push((r.id, take));
                }
            }
            self.fused_forward(&sched);
            return true;
        }
        if !self.decoding.is_empty() {
            self.decode_step();
            return true;
        }
        false
    }

    /// Running requests (prefilling and decoding) as (id, decoding), in admission order.
    fn running_in_admission_order(&self) -> Vec<(u64, bool)> {
        let mut v: Vec<(Time, u64, bool)> = self.prefilling.iter().map(|r| (r.admitted, r.id, false)).collect();
        v.extend(self.decoding.iter().map(|r| (r.admitted, r.id, true)));
        v.sort_unstable();
        v.into_iter().map(|(_, id, d)| (id, d)).collect()
    }

    /// The running request `id`.
    fn req(&self, id: u64) -> Req {
        *self.prefilling.iter().chain(&self.decoding).find(|r| r.id == id).expect("running request")
    }

    /// Preempts running request `id` (vLLM V1 recompute): it leaves the batch, keeps the tokens
    /// it generated, and goes back to the front of the queue to prefill them again with its
    /// prompt.
    fn preempt(&mut self, id: u64) {
        let mut r = if let Some(i) = self.decoding.iter().position(|r| r.id == id) {
            self.decoding.remove(i)
        } else {
            let i = self.prefilling.iter().position(|r| r.id == id).expect("running request");
            self.prefilling.remove(i)
        };
        r.prefilled = 0;
        self.stats.preempted += 1;
        self.waiting.push_front(r);
    }

    /// One forward of the scheduled `(request id, tokens)`: a decoding request's token at its
    /// context, a prefilling one's chunk after what it has prefilled; then decoders get a token
    /// and finished prompts start decoding.
    fn fused_forward(&mut self, sched: &[(u64, u64)]) {
        let rows: Vec<(u64, u64)> = sched
            .iter()
            .map(|&(id, take)| {
                let r = self.req(id);
                if self.decoding.iter().any(|d| d.id == id) { (1, r.prompt + r.generated) } else { (take, r.prefilled) }
            })
            .collect();
        let running = self.prefilling.len() + self.decoding.len();
        self.forward(&rows, rows.len() as u64, running);
        if !self.decoding.is_empty() {
            self.decoded();
        }
        for r in self.prefilling.iter_mut() {
            if let Some(&(_, take)) = sched.iter().find(|s| s.0 == r.id) {
                r.prefilled += take;
            }
        }
        self.promote_recomputed();
    }

    /// Prompting sequences whose prompt (and, after a preemption, the output they had
    /// generated) is done start decoding; a first prompt gets its first token now.
    fn promote_recomputed(&mut self) {
        let now = self.now;
        let mut i = 0;
        while i < self.prefilling.len() {
            if self.prefilling[i].prefilled >= recompute_target(&self.prefilling[i]) {
                let mut r: Req = self.prefilling.remove(i);
                if r.generated == 0 {
                    r.first_token = now;
                }
                self.decoding.push(r);
            } else {
                i += 1;
            }
        }
    }

    /// Prompting sequences whose prompt is done get their first token now and start decoding.
    fn promote_prefilled(&mut self) {
        let now = self.now;
        let mut i = 0;
        while i < self.prefilling.len() {
            if self.prefilling[i].prefilled >= self.prefilling[i].prompt {
                let mut r: Req = self.prefilling.remove(i);
                r.first_token = now;
                self.decoding.push(r);
            } else {
                i += 1;
            }
        }
    }
}

/// Tokens a prompting request must prefill: its prompt, plus after a preemption the output it
/// had generated (recomputed).
fn recompute_target(r: &Req) -> u64 {
    r.prompt + r.generated
}

/// vLLM's paged KV over one step: blocks each running request holds, against each node's KV
/// capacity (`gpu_memory_utilization x memory - weights - overhead`, the plan's).
struct Paged {
    /// Tokens per block.
    block: u64,
    /// (request id, tokens whose KV it holds) for the running requests.
    held: Vec<(u64, u64)>,
}

impl Paged {
    fn new(sim: &ServeSim<'_>, block: u64) -> Self {
        let held =
            sim.prefilling.iter().map(|r| (r.id, r.prefilled)).chain(sim.decoding.iter().map(|r| (r.id, r.prompt + r.generated))).collect();
        Paged { block: block.max(1), held }
    }

    /// KV bytes on `node` of `tokens` tokens rounded up to whole blocks.
    fn bytes(&self, sim: &ServeSim<'_>, node: usize, tokens: u64) -> f64 {
        sim.kv_bytes.on(node, tokens.div_ceil(self.block) * self.block)
    }

    /// Whether every node holds the running requests' blocks after the scheduled tokens and
    /// `extra` = (request id, more tokens).
    fn fits(&self, sim: &ServeSim<'_>, sched: &[(u64, u64)], extra: (u64, u64)) -> bool {
        (0..sim.kv_capacity.len()).all(|node| {
            let used: f64 = self
                .held
                .iter()
                .map(|&(id, t)| {
                    let add: u64 = sched.iter().chain(std::iter::once(&extra)).filter(|s| s.0 == id).map(|s| s.1).sum();
                    self.bytes(sim, node, t + add)
                })
                .sum();
            used <= sim.kv_capacity[node]
        })
    }

    /// A preempted request's blocks are free again.
    fn release(&mut self, id: u64) {
        self.held.retain(|h| h.0 != id);
    }

    /// The peak KV use statistic after the step.
    fn record_peak(&self, sim: &mut ServeSim<'_>, block: u64) {
        let p = Paged::new(sim, block);
        for node in 0..sim.kv_capacity.len() {
            let used: f64 = p.held.iter().map(|&(_, t)| p.bytes(sim, node, t)).sum();
            if sim.kv_capacity[node] > 0.0 {
                sim.stats.peak_kv = sim.stats.peak_kv.max(used / sim.kv_capacity[node]);
            }
        }
    }
}

/// Splits a batch's rows `(tokens, context)` into micro-batches of at most `ub` tokens, in
/// order; a row cut in two continues at its advanced context.
pub fn micro_batches(rows: &[(u64, u64)], ub: u64) -> Vec<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(u64, u64)> = Vec::new();
    let mut room = ub;
    for &(mut t, mut c) in rows {
        while t > 0 {
            let take = t.min(room);
            cur.push((take, c));
            t -= take;
            c += take;
            room -= take;
            if room == 0 {
                out.push(std::mem::take(&mut cur));
                room = ub;
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::micro_batches;

    #[test]
    fn micro_batches_cut_rows_at_the_ubatch() {
        let m = micro_batches(&[(1, 100), (1, 7), (1000, 0)], 512);
        assert_eq!(m, vec![vec![(1, 100), (1, 7), (510, 0)], vec![(490, 510)]]);
    }
}
