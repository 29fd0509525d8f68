//! The generate workload on the event core: prefill in chunks, then decode step by step, one
//! jitter stream per run.

use crate::engine::{Lowered, Plan, Work, lower_step};
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
    /// GPU busy time per node during prefill, ns.
    pub prefill_busy_gpu: Vec<Time>,
    /// CPU busy time per node during prefill, ns.
    pub prefill_busy_cpu: Vec<Time>,
    /// DRAM bytes and FLOPs per node over the prefill.
    pub prefill_work: Vec<Work>,
    /// DRAM bytes and FLOPs per node over the decode.
    pub decode_work: Vec<Work>,
}

/// Adds a step's per-resource busy time to per-node GPU and CPU totals.
fn add_busy(low: &Lowered, busy: &[Time], gpu: &mut [Time], cpu: &mut [Time]) {
    for (r, res) in low.graph.resources.iter().enumerate() {
        match res.kind {
            ResourceKind::Gpu => gpu[res.node as usize] += busy[r],
            ResourceKind::Cpu => cpu[res.node as usize] += busy[r],
            ResourceKind::Link | ResourceKind::Virtual => {}
        }
    }
}

/// Adds a step's per-node work to the totals.
fn add_work(total: &mut [Work], step: Vec<Work>) {
    for (t, w) in total.iter_mut().zip(step) {
        *t += w;
    }
}

/// Simulates prefill (in chunks) and `generate` decode steps; one ChaCha stream per run.
pub fn simulate_generate(plan: &Plan, prompt: u64, generate: u64, seed: u64) -> GenerateRun {
    simulate_generate_traced(plan, prompt, generate, seed, None)
}

/// [`simulate_generate`], recording the executed tasks into `trace` when given.
pub fn simulate_generate_traced(plan: &Plan, prompt: u64, generate: u64, seed: u64, mut trace: Option<&mut Trace>) -> GenerateRun {
    let mut jitter = Jitter::new(seed, plan.jitter_cv);
    let mut now: Time = 0;
    let mut events = 0;
    let chunk = plan.options.prefill_chunk.max(1);
    let mut cached: Option<Lowered> = None;
    let mut done = 0;
    let mut chunks = 0;
    // mlx-lm chunks all but the last prompt token, then runs that token alone.
    let chunked = if plan.options.prefill_last_token_alone { prompt.saturating_sub(1) } else { prompt };
    let n = plan.n();
    let (mut pre_gpu, mut pre_cpu, mut pre_work) = (vec![0; n], vec![0; n], vec![Work::default(); n]);
    while done < prompt {
        let t = if done < chunked { chunk.min(chunked - done) } else { prompt - done };
        if cached.as_ref().is_none_or(|c| c.tokens != t) {
            cached = Some(lower_step(plan, t));
        }
        let low = cached.as_mut().expect("just built");
        low.retime(plan, done);
        let tl = execute(&low.graph, now, &mut jitter);
        if let Some(tr) = trace.as_deref_mut() {
            tr.record(low, &tl, "prefill", chunks);
        }
        add_busy(low, &tl.busy, &mut pre_gpu, &mut pre_cpu);
        add_work(&mut pre_work, low.work(plan, done));
        chunks += 1;
        events += tl.events;
        now = tl.makespan;
        done += t;
    }
    let prefill_ns = now;
    let mut low = lower_step(plan, 1);
    let mut decode_work = vec![Work::default(); n];
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
        add_busy(&low, &tl.busy, &mut busy_gpu, &mut busy_cpu);
        add_work(&mut decode_work, low.work(plan, prompt + g));
    }
    GenerateRun {
        prefill_ns,
        decode_ns: now - prefill_ns,
        step_ns: steps,
        decode_busy_gpu: busy_gpu,
        decode_busy_cpu: busy_cpu,
        events,
        decode_bytes_sent: bytes,
        prefill_busy_gpu: pre_gpu,
        prefill_busy_cpu: pre_cpu,
        prefill_work: pre_work,
        decode_work,
    }
}
