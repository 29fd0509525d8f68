//! Each runtime's serving scheduler, as read from its source (FACTS.md, "Serving concurrent
//! requests"). One iteration of the server loop per call; every forward goes through
//! [`super::ServeSim::forward`], the same lowering and event core as `generate`.

use crate::engine::Plan;
use crate::engine::runtimes::ServingLoop;
use crate::scenario::Serve;

use super::super::generate::prefill_piece;
use super::{Req, ServeSim};

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
}

impl Policy {
    /// The scheduler of the plan's runtime, with the scenario's `max_batch` override.
    pub fn for_plan(plan: &Plan, serve: &Serve) -> Policy {
        // The runtime chooses its loop and defaults (its module under `engine::runtimes`).
        match plan.options.kind.behaviour().serving_loop(serve.max_batch, plan.options.prefill_chunk) {
            ServingLoop::Exo { max_batch } => Policy::Exo { max_batch },
            ServingLoop::MlxBatchGenerator { max_batch, prefill_batch } => Policy::MlxLm { max_batch, prefill_batch },
            ServingLoop::LlamaServer { slots, n_batch } => Policy::LlamaServer { slots, n_batch },
        }
    }

    /// Whether the KV cache of a batch is one dense array left-padded to the longest sequence
    /// (mlx-lm's `BatchKVCache`, which exo uses too), so attention runs over the longest
    /// context for every sequence; llama.cpp's cells are per sequence.
    pub fn pads_context(self) -> bool {
        !matches!(self, Policy::LlamaServer { .. })
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
