//! The generate workload on the event core: prefill in chunks, then decode step by step, one
//! jitter stream per run.

use crate::engine::{Lowered, Plan, lower_step};
use crate::sim::{Jitter, ResourceKind, Time, execute};

use super::trace::Trace;

/// Timing of a generate run.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateRun {
    /// Prefill time, ns.
    pub prefill_ns: Time,
    /// Decode time, ns.
    pub decode_ns: Time,
    /// Each decode step, ns.
    pub step_ns: Vec<Time>,
    /// GPU busy time per node during decode, ns.
    pub decode_busy_gpu: Vec<Time>,
    /// CPU busy time per node during decode, ns.
    pub decode_busy_cpu: Vec<Time>,
    /// Events processed.
    pub events: u64,
    /// Bytes put on links during decode.
    pub decode_bytes_sent: u64,
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
    simulate_generate_traced(plan, prompt, generate, seed, None)
}

/// A request's timing from a sample of its decode steps: the whole prefill, then one decode
/// step at each of `samples` contexts spread evenly over the generation (the middle of each
/// equal share), each standing for its share. For fault simulations, which need the rate of
/// many cluster states: cheaper than every step, and exact when steps do not vary.
pub fn sample_generate(plan: &Plan, prompt: u64, generate: u64, samples: u64, seed: u64) -> GenerateRun {
    let mut run = simulate_generate(plan, prompt, 0, seed);
    let k = samples.clamp(1, generate.max(1));
    let mut jitter = Jitter::new(seed ^ 0x5eed, plan.jitter_cv);
    let mut low = lower_step(plan, 1);
    let mut now = run.prefill_ns;
    let (mut decode, mut bytes) = (0.0, 0.0);
    let share = generate as f64 / k as f64;
    for j in 0..k {
        low.retime(plan, prompt + (2 * j + 1) * generate / (2 * k));
        let tl = execute(&low.graph, now, &mut jitter);
        run.events += tl.events;
        run.step_ns.push(tl.makespan - now);
        decode += (tl.makespan - now) as f64 * share;
        bytes += low.bytes_sent as f64 * share;
        now = tl.makespan;
    }
    run.decode_ns = decode.round() as Time;
    run.decode_bytes_sent = bytes.round() as u64;
    run
}

/// [`simulate_generate`], recording the executed tasks into `trace` when given.
pub fn simulate_generate_traced(plan: &Plan, prompt: u64, generate: u64, seed: u64, mut trace: Option<&mut Trace>) -> GenerateRun {
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let mut now: Time = 0;
    let mut events = 0;
    let mut cached: Option<Lowered> = None;
    let mut done = 0;
    let mut chunks = 0;
    while done < prompt {
        let t = prefill_piece(plan, prompt, done);
        if cached.as_ref().is_none_or(|c| c.tokens != t) {
            cached = Some(lower_step(plan, t));
        }
        let low = cached.as_mut().expect("just built");
        low.retime(plan, done);
        let tl = execute(&low.graph, now, &mut jitter);
        if let Some(tr) = trace.as_deref_mut() {
            tr.record(low, &tl, "prefill", chunks);
        }
        chunks += 1;
        events += tl.events;
        now = tl.makespan;
        done += t;
    }
    let prefill_ns = now;
    let mut low = lower_step(plan, 1);
    let n = plan.n();
    let mut busy_gpu = vec![0; n];
    let mut busy_cpu = vec![0; n];
    let mut steps = Vec::with_capacity(generate as usize);
    let mut bytes = 0;
    for g in 0..generate {
        low.retime(plan, prompt + g);
        let tl = execute(&low.graph, now, &mut jitter);
        if let Some(tr) = trace.as_deref_mut().filter(|tr| g < tr.max_decode_steps) {
            tr.record(&low, &tl, "decode", g);
        }
        events += tl.events;
        steps.push(tl.makespan - now);
        now = tl.makespan;
        bytes += low.bytes_sent;
        for (r, res) in low.graph.resources.iter().enumerate() {
            match res.kind {
                ResourceKind::Gpu => busy_gpu[res.node as usize] += tl.busy[r],
                ResourceKind::Cpu => busy_cpu[res.node as usize] += tl.busy[r],
                ResourceKind::Link | ResourceKind::Virtual => {}
            }
        }
    }
    GenerateRun {
        prefill_ns,
        decode_ns: now - prefill_ns,
        step_ns: steps,
        decode_busy_gpu: busy_gpu,
        decode_busy_cpu: busy_cpu,
        events,
        decode_bytes_sent: bytes,
    }
}
