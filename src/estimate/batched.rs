//! The `batched-bench` workload: `llama-batched-bench` as the benchmark defines itself
//! (ggml-org/llama.cpp `tools/batched-bench/batched-bench.cpp`; FACTS.md "How published
//! benchmarks measure"). `-npl B` sequences, each with its own `-npp P`-token prompt
//! (`is_pp_shared = 0`), are prefilled as one batch cut into micro-batches of `-ub` (the
//! engine's `prefill_chunk`), then `-ntg T` decode steps run one token of every sequence in one
//! forward. The tool draws random token ids since late September 2025 (`get_token_rand`), so
//! the sequences route as independent requests; the older tool fed id 0 everywhere
//! (`same_tokens`): the B sequences are identical, at every step they route to the same experts
//! ([`crate::engine::Lowered::set_routed_tokens`]), while each still attends over its own KV
//! cache. No server, slots or sampling loop: the tool calls `llama_decode` on the batch directly.

use std::collections::HashMap;

use crate::engine::{Lowered, Plan, lower_step};
use crate::sim::{Jitter, Time, execute};

use super::generate::{GenerateRun, MAX_SIMULATED_DECODE_STEPS, PhaseTotals, sample};
use super::serve::sched::micro_batches;

/// A micro-batch's span and busy time per resource, ns: reused for a later one of its shape.
type SpanAndBusy = (Time, Vec<Time>);

/// Simulates `batch` sequences (identical with `same_tokens`): the prefill of their
/// `prompt`-token prompts, then `generate` decode steps of the whole batch. The run's `prefill_ns` is the benchmark's T_PP
/// and `decode_ns` its T_TG (S_PP = batch x prompt / T_PP, S_TG = batch x generate / T_TG);
/// `decode_steps` counts the batch's steps. A micro-batch of a shape already run reuses that
/// run's timing (exact without jitter; with jitter the shape's first draw repeats, as in a
/// serving run), so the work is bounded by the distinct shapes.
/// With `same_tokens` false the sequences route on their own (independent requests' expected
/// expert coverage), everything else alike.
pub fn simulate_batched_bench(plan: &Plan, batch: u64, prompt: u64, generate: u64, same_tokens: bool, seed: u64) -> GenerateRun {
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let n = plan.n();
    let b = batch.max(1);
    let mut events = 0;
    // Prefill: B prompts of P tokens in one batch, cut at the micro-batch.
    let mut pre = PhaseTotals::new(n);
    let rows = vec![(prompt, 0); b as usize];
    let mut lowered: HashMap<u64, Lowered> = HashMap::new();
    let mut seen: HashMap<Vec<(u64, u64)>, SpanAndBusy> = HashMap::new();
    let mut now: Time = 0;
    for micro in micro_batches(&rows, plan.options.prefill_chunk.max(1)) {
        let tokens: u64 = micro.iter().map(|r| r.0).sum();
        let low = lowered.entry(tokens).or_insert_with(|| lower_step(plan, tokens));
        // Identical sequences: tokens at one position route alike, whichever sequence holds them.
        low.set_routed_tokens(same_tokens.then(|| distinct_positions(&micro)));
        // The last prompt token of each sequence asks for logits.
        let head = micro.iter().filter(|&&(t, c)| t + c == prompt).count() as u64;
        low.retime_rows(plan, &micro, head);
        let work = low.work_rows(plan, &micro, head);
        if let Some((span, busy)) = seen.get(&micro) {
            now += span;
            pre.add(low, busy, work, 1);
            continue;
        }
        let tl = execute(&low.graph, now, &mut jitter);
        events += tl.events();
        pre.add(low, tl.busy_by_resource(), work, 1);
        seen.insert(micro, (tl.makespan() - now, tl.busy_by_resource().to_vec()));
        now = tl.makespan();
    }
    let prefill_ns = now;
    // Decode: T steps of one token per sequence, each at its own (equal) context.
    let mut low = lower_step(plan, b);
    low.set_routed_tokens(same_tokens.then_some(1));
    let mut dec = PhaseTotals::new(n);
    let samples = generate.min(MAX_SIMULATED_DECODE_STEPS);
    let mut steps = Vec::with_capacity(samples as usize);
    let mut bytes = 0;
    for k in 0..samples {
        let (g, weight) = sample(k, samples, generate);
        let rows = vec![(1, prompt + g + (weight - 1) / 2); b as usize];
        low.retime_rows(plan, &rows, b);
        let tl = execute(&low.graph, now, &mut jitter);
        events += tl.events();
        let step = tl.makespan() - now;
        steps.push(step);
        now = now.saturating_add(step.saturating_mul(weight));
        bytes += low.bytes_sent * weight;
        let work = low.work_rows(plan, &rows, b);
        dec.add(&low, tl.busy_by_resource(), work, weight);
    }
    GenerateRun::from_phases(prefill_ns, now, generate, steps, events, bytes, pre, dec)
}

/// Distinct positions in a micro-batch of identical sequences: the union of the rows' position
/// ranges `[context, context + tokens)`.
fn distinct_positions(rows: &[(u64, u64)]) -> u64 {
    let mut ranges: Vec<(u64, u64)> = rows.iter().map(|&(t, c)| (c, c + t)).collect();
    ranges.sort_unstable();
    let (mut total, mut end) = (0, 0);
    for (s, e) in ranges {
        let s = s.max(end);
        if e > s {
            total += e - s;
            end = e;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::distinct_positions;

    #[test]
    fn identical_sequences_share_their_positions() {
        // Four 512-token prompts in one 2,048-token micro-batch: 512 distinct positions.
        assert_eq!(distinct_positions(&[(512, 0); 4]), 512);
        // A prompt cut across micro-batches: the second holds its tail and the next's head.
        assert_eq!(distinct_positions(&[(300, 212), (212, 0)]), 512);
        assert_eq!(distinct_positions(&[(1, 700)]), 1);
    }
}
