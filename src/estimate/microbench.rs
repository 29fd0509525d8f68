//! Microbenchmark entry points: what `calibrate` and `validate` predict for a harness's
//! measurements, on a plan built like any scenario's ([`Plan::new`]) and timed by the same cost
//! model ([`crate::engine::NodeCost::op_ns`]), lowering and event core as `run`. A single kernel, one all_sum, a
//! chain of kernel segments with collectives, and the tokens per second of a generate run.

use super::GenerateRun;
use crate::engine::{Plan, lower_all_sum, lower_segment_chain, lower_step};
use crate::llm::Op;
use crate::sim::{Jitter, Time, execute};

/// Seconds of one op on node 0, timed alone (no jitter): `tokens` rows after `context` cached.
pub fn op_seconds(plan: &Plan, op: &Op, tokens: u64, context: u64) -> f64 {
    plan.cost(0).op_ns(op, tokens, context) / 1e9
}

/// Seconds of one all_sum of `bytes` across the plan's nodes, timed alone (no jitter).
pub fn all_sum_seconds(plan: &Plan, bytes: u64) -> f64 {
    let low = lower_all_sum(plan, bytes);
    execute(&low.graph, 0, &mut Jitter::none()).makespan() as f64 / 1e9
}

/// Mean seconds of `reps` runs of a segment chain: `blocks` (each a list of ops) run in order
/// `repeats` times on every node, each block followed by an all_sum of `all_sum_bytes` when that
/// is not 0; one seeded jitter stream across the runs.
pub fn segment_chain_seconds(plan: &Plan, blocks: &[Vec<Op>], repeats: usize, all_sum_bytes: u64, seed: u64, reps: u32) -> f64 {
    let mut low = lower_segment_chain(plan, blocks, repeats, all_sum_bytes);
    low.retime(plan, 0);
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let total: Time = (0..reps).map(|_| execute(&low.graph, 0, &mut jitter).makespan()).sum();
    total as f64 / f64::from(reps.max(1)) / 1e9
}

/// Aggregate decode tokens/s of `batch` sequences decoded together for `generate` steps from a
/// `prompt`-token context each: every step is one forward over the batch's rows (one token per
/// sequence), lowered and re-timed as a serving run's decode step is ([`lower_step`] and
/// [`crate::engine::Lowered::retime_rows`], see [`crate::estimate::ServeSim`]): weight-bound ops
/// once over `batch` rows, MoE layers over the experts the batch touches, attention per sequence
/// over its own context, the LM head over `batch` rows. One seeded jitter stream per run; with
/// `batch` 1 and no jitter, the decode of [`crate::estimate::simulate_generate`] step for step.
pub fn batched_decode_tokens_per_s(plan: &Plan, batch: u64, prompt: u64, generate: u64, seed: u64) -> f64 {
    let (batch, steps) = (batch.max(1), generate.max(1));
    let mut low = lower_step(plan, batch);
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let mut now: Time = 0;
    let mut rows = vec![(1, prompt); batch as usize];
    for k in 0..steps {
        rows.iter_mut().for_each(|r| r.1 = prompt + k);
        low.retime_rows(plan, &rows, batch);
        now = execute(&low.graph, now, &mut jitter).makespan();
    }
    (batch * steps) as f64 / (now as f64 / 1e9)
}

impl GenerateRun {
    /// Decode throughput: decoded tokens over the decode time, tokens/s.
    pub fn decode_tokens_per_s(&self) -> f64 {
        self.decode_steps as f64 / (self.decode_ns as f64 / 1e9)
    }

    /// Prefill throughput of a `prompt`-token prompt over the prefill time, tokens/s.
    pub fn prefill_tokens_per_s(&self, prompt: u64) -> f64 {
        prompt as f64 / (self.prefill_ns as f64 / 1e9)
    }
}
