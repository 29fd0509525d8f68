//! The one estimator behind `run`, `sweep`, `plan` and `validate`: resolve a scenario into a
//! plan, lower each forward step, execute it on the discrete-event core, and turn the timeline
//! into throughput, latency, power, energy and cost.

pub mod microbench;

use serde::Serialize;

use crate::engine::{Lowered, MemoryBreakdown, Plan, PlanError, lower_step};
use crate::hw::Topology;
use crate::profile::Profile;
use crate::scenario::{Scenario, WorkloadKind};
use crate::sim::{Jitter, ResourceKind, Time, execute};
use crate::util::{round3, round6};

/// Latency percentiles, milliseconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Mean.
    pub mean: f64,
}

/// Whether a prediction is inside the calibrated envelope.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Envelope {
    /// Profile used.
    pub profile: String,
    /// `inside` or `extrapolation`.
    pub status: String,
    /// Why it is an extrapolation (empty when inside).
    pub reasons: Vec<String>,
}

/// Memory of one node, for reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NodeMemory {
    /// Node preset.
    pub node: String,
    /// Layers held (first..end).
    pub layers: [u64; 2],
    /// Weights, GB.
    pub weights_gb: f64,
    /// KV cache, GB.
    pub kv_cache_gb: f64,
    /// Runtime overhead, GB.
    pub overhead_gb: f64,
    /// Total, GB.
    pub total_gb: f64,
    /// Wired limit, GB.
    pub limit_gb: f64,
}

/// The result of one scenario. Field names are the JSON contract of DESIGN.md.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Estimate {
    /// Scenario name.
    pub name: String,
    /// Whether the model fits (always true here; failures are [`EstimateError`]).
    pub fits: bool,
    /// Engine id.
    pub engine: String,
    /// Parallelism id.
    pub parallelism: String,
    /// Model id.
    pub model: String,
    /// Quantization id.
    pub quant: String,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric id.
    pub fabric: String,
    /// Topology id.
    pub topology: String,
    /// Workload kind.
    pub workload: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub generate_tokens: u64,
    /// Seed.
    pub seed: u64,
    /// Decode throughput, tokens/s.
    pub decode_tokens_per_s: f64,
    /// Prefill throughput, tokens/s.
    pub prefill_tokens_per_s: f64,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, ms.
    pub tpot_ms: Percentiles,
    /// Cluster wall power during decode, W.
    pub cluster_power_w: f64,
    /// Per-node wall power during decode, W.
    pub node_power_w: Vec<f64>,
    /// Per node, the share of decode time its GPU computes; the rest it waits on GPU<->CPU
    /// crossings, collectives and transfers, %.
    pub decode_gpu_busy_percent: Vec<f64>,
    /// Energy per generated token, J.
    pub energy_j_per_token: f64,
    /// Memory used per node, GB.
    pub memory_per_node_gb: Vec<f64>,
    /// Memory breakdown per node.
    pub memory: Vec<NodeMemory>,
    /// Hardware cost (nodes, cables, switch), USD.
    pub cost_usd: f64,
    /// Cost per million generated tokens at 100% duty (amortized hardware + electricity), USD.
    pub usd_per_mtok: f64,
    /// Hardware USD per decode token/s.
    pub usd_per_token_per_s: f64,
    /// Cables the topology needs.
    pub cables: usize,
    /// HPL result, Gflops (HPL workload only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpl_gflops: Option<f64>,
    /// Calibration envelope.
    pub calibration: Envelope,
    /// Events processed by the simulation.
    pub sim_events: u64,
}

/// Why a scenario cannot be estimated.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum EstimateError {
    /// Planning failed (fit, calibration).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Hardware cost of a scenario's cluster: nodes, cables, and a switch for switched fabrics, USD.
/// Cheap (no simulation), so planners can prune by budget before estimating.
pub fn hardware_cost(s: &Scenario) -> f64 {
    let cables = s.topology.cables(s.nodes.len());
    let mut cost: f64 = s.nodes.iter().map(|n| n.price_usd).sum::<f64>() + cables as f64 * s.fabric.cable_usd;
    if s.topology == Topology::Switch && s.nodes.len() > 1 {
        cost += s.fabric.switch_usd;
    }
    cost
}

/// Runs the whole estimate for a scenario.
pub fn estimate(s: &Scenario, profile: &Profile) -> Result<Estimate, EstimateError> {
    let plan = generate_plan(s, profile)?;
    let cables = s.topology.cables(s.nodes.len());
    let cost_usd = hardware_cost(s);
    let envelope = envelope(s, profile);
    let memory: Vec<NodeMemory> = plan
        .memory
        .iter()
        .zip(&plan.shares)
        .zip(&s.nodes)
        .map(|((m, sh), node): ((&MemoryBreakdown, _), _)| NodeMemory {
            node: node.id.clone(),
            layers: [sh.first_layer, sh.end_layer],
            weights_gb: round3(m.weights_gb),
            kv_cache_gb: round3(m.kv_cache_gb),
            overhead_gb: round3(m.overhead_gb),
            total_gb: round3(m.total_gb),
            limit_gb: round3(m.limit_gb),
        })
        .collect();
    let mut out = Estimate {
        name: s.name.clone(),
        fits: true,
        engine: s.engine.kind.id().into(),
        parallelism: s.engine.parallelism.id().into(),
        model: s.model.id.clone(),
        quant: s.quant.id.clone(),
        nodes: s.nodes.iter().map(|n| n.id.clone()).collect(),
        fabric: s.fabric.id.clone(),
        topology: s.topology.id().into(),
        workload: match s.workload.kind {
            WorkloadKind::Generate => "generate".into(),
            WorkloadKind::Hpl => "hpl".into(),
        },
        prompt_tokens: s.workload.prompt_tokens,
        generate_tokens: s.workload.generate_tokens,
        seed: s.seed,
        decode_tokens_per_s: 0.0,
        prefill_tokens_per_s: 0.0,
        ttft_s: 0.0,
        tpot_ms: Percentiles { p50: 0.0, p99: 0.0, mean: 0.0 },
        cluster_power_w: 0.0,
        node_power_w: vec![],
        decode_gpu_busy_percent: vec![],
        energy_j_per_token: 0.0,
        memory_per_node_gb: memory.iter().map(|m| m.total_gb).collect(),
        memory,
        cost_usd: round3(cost_usd),
        usd_per_mtok: 0.0,
        usd_per_token_per_s: 0.0,
        cables,
        hpl_gflops: None,
        calibration: envelope,
        sim_events: 0,
    };
    if s.workload.kind == WorkloadKind::Hpl {
        hpl(s, &mut out);
        return Ok(out);
    }
    let run = simulate_generate(&plan, s.workload.prompt_tokens, s.workload.generate_tokens, s.seed);
    let decode_s = run.decode_ns as f64 / 1e9;
    let prefill_s = run.prefill_ns as f64 / 1e9;
    out.decode_tokens_per_s = round3(s.workload.generate_tokens as f64 / decode_s);
    out.prefill_tokens_per_s = round3(s.workload.prompt_tokens as f64 / prefill_s);
    out.ttft_s = round6(prefill_s);
    let mut steps: Vec<Time> = run.step_ns.clone();
    steps.sort_unstable();
    let pct = |p: f64| steps[((p * (steps.len() - 1) as f64).round() as usize).min(steps.len() - 1)] as f64 / 1e6;
    let mean = run.step_ns.iter().map(|&x| x as f64).sum::<f64>() / run.step_ns.len() as f64 / 1e6;
    out.tpot_ms = Percentiles { p50: round6(pct(0.5)), p99: round6(pct(0.99)), mean: round6(mean) };
    // Power over the decode phase from resource utilization.
    let mut node_power = Vec::with_capacity(plan.n());
    for (i, node) in plan.nodes.iter().enumerate() {
        let chip = &plan.chips[i];
        let gpu_util = (run.decode_busy_gpu[i] as f64 / run.decode_ns as f64).min(1.0);
        out.decode_gpu_busy_percent.push(round3(gpu_util * 100.0));
        let cpu_util = (run.decode_busy_cpu[i] as f64 / run.decode_ns as f64).min(1.0);
        let p = node.idle_w + chip.gpu_dynamic_w * gpu_util + chip.cpu_core_w * cpu_util;
        node_power.push(round3(p.min(node.max_w)));
    }
    let cluster_power: f64 = node_power.iter().sum();
    out.cluster_power_w = round3(cluster_power);
    out.node_power_w = node_power;
    out.energy_j_per_token = round6(cluster_power / out.decode_tokens_per_s);
    let secs = s.cost.amortization_years * 365.25 * 86400.0;
    let usd_per_s = cost_usd / secs + cluster_power / 1000.0 * s.cost.electricity_usd_per_kwh / 3600.0;
    out.usd_per_mtok = round6(usd_per_s / out.decode_tokens_per_s * 1e6);
    out.usd_per_token_per_s = round3(cost_usd / out.decode_tokens_per_s);
    out.sim_events = run.events;
    Ok(out)
}

/// The plan of a scenario whose KV cache holds the whole prompt and generation.
fn generate_plan(s: &Scenario, profile: &Profile) -> Result<Plan, PlanError> {
    s.plan(s.workload.prompt_tokens + s.workload.generate_tokens, profile)
}

/// Traces the scenario's generate run as [`estimate`] simulates it (same plan, seed and jitter
/// stream): every prefill chunk and the first `max_decode_steps` decode steps.
pub fn trace(s: &Scenario, profile: &Profile, max_decode_steps: u64) -> Result<(Plan, Trace), EstimateError> {
    let plan = generate_plan(s, profile)?;
    let mut tr = Trace { max_decode_steps, events: Vec::new() };
    let steps = s.workload.generate_tokens.min(max_decode_steps);
    simulate_generate_traced(&plan, s.workload.prompt_tokens, steps, s.seed, Some(&mut tr));
    Ok((plan, tr))
}

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

/// One task of a traced run: what ran where, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Resource name (`node0.gpu`, `node1.cpu`, `link 0->1`, ...).
    pub resource: String,
    /// Node the resource belongs to (for links: the sender).
    pub node: u32,
    /// Task label (`compute`, `gpu->cpu`, `send`, `host`, ...).
    pub label: &'static str,
    /// `prefill` or `decode`.
    pub phase: &'static str,
    /// Step index within its phase (chunk number, or decode step).
    pub step: u64,
    /// Start, ns from the start of the run.
    pub start: Time,
    /// End, ns.
    pub end: Time,
    /// For a GPU task: the operations it runs, comma-separated.
    pub ops: Option<String>,
}

/// A recorder of the tasks a run executes (every prefill chunk, the first `max_decode_steps`
/// decode steps); zero-length tasks and join points are left out.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Decode steps to record.
    pub max_decode_steps: u64,
    /// The tasks, in execution-graph order per step.
    pub events: Vec<TraceEvent>,
}

impl Trace {
    fn record(&mut self, low: &Lowered, tl: &crate::sim::Timeline, phase: &'static str, step: u64) {
        let graph = &low.graph;
        let mut ops: Vec<Option<String>> = vec![None; graph.tasks.len()];
        for &(task, seg) in &low.gpu_tasks {
            let names: Vec<&str> = low.segments[seg].ops.iter().map(|o| o.name).collect();
            ops[task.0 as usize] = Some(names.join(", "));
        }
        for ((task, t), ops) in graph.tasks.iter().zip(&tl.timings).zip(ops) {
            let res = &graph.resources[task.resource.0 as usize];
            if res.kind == ResourceKind::Virtual || t.end == t.start {
                continue;
            }
            self.events.push(TraceEvent {
                resource: res.name.clone(),
                node: res.node,
                label: task.label,
                phase,
                step,
                start: t.start,
                end: t.end,
                ops,
            });
        }
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

/// HPL on the CPUs: netlib's model with the measured single-node rate of each node.
fn hpl(s: &Scenario, out: &mut Estimate) {
    let n_nodes = s.nodes.len();
    let mem: f64 = s.nodes.iter().map(|n| n.memory_gb * 1e9).fold(f64::INFINITY, f64::min) * n_nodes as f64;
    // Default problem size: the usual HPL tuning rule (matrix fills ~80% of memory, N a multiple
    // of NB); a convention, not a measurement: set `workload.hpl_n` to match a real run.
    let n = if s.workload.hpl_n > 0 { s.workload.hpl_n as f64 } else { ((0.8 * mem / 8.0).sqrt() / 256.0).floor() * 256.0 };
    let flops = 2.0 / 3.0 * n.powi(3) + 1.5 * n * n;
    // Process grid P x Q, as square as possible.
    let p = (1..=n_nodes).rev().find(|p| n_nodes % p == 0 && p * p <= n_nodes).unwrap_or(1) as f64;
    let q = n_nodes as f64 / p;
    let rate = s.nodes.iter().map(|x| x.hpl_cpu_gflops).fold(f64::INFINITY, f64::min) * 1e9;
    let nb = 256.0; // block size, matching the default N rounding above
    let beta = 8.0 / (s.fabric.bandwidth_gbs * 1e9).max(1.0); // s per double
    let alpha = s.fabric.latency_us * 1e-6;
    let comm = if n_nodes > 1 {
        beta * n * n * (3.0 * p + q) / (2.0 * p * q) + alpha * n * ((nb + 1.0) * p.log2().max(1.0) + p) / nb
    } else {
        0.0
    };
    let t = 2.0 * n.powi(3) / (3.0 * p * q * rate) + comm;
    let gflops = flops / t / 1e9;
    out.hpl_gflops = Some(round3(gflops));
    let compute_frac = (2.0 * n.powi(3) / (3.0 * p * q * rate)) / t;
    out.node_power_w = s.nodes.iter().map(|x| round3(x.idle_w + (x.hpl_w - x.idle_w) * compute_frac)).collect();
    out.cluster_power_w = round3(out.node_power_w.iter().sum());
}

fn envelope(s: &Scenario, profile: &Profile) -> Envelope {
    let mut reasons = Vec::new();
    let n = s.nodes.len() as u32;
    if !profile.meta.calibrated_node_counts.is_empty() && !profile.meta.calibrated_node_counts.contains(&n) {
        reasons.push(format!("{n} nodes: calibrated on {:?}", profile.meta.calibrated_node_counts));
    }
    for chip in s.nodes.iter().map(|x| &x.chip) {
        if !profile.meta.calibrated_chips.is_empty() && !profile.meta.calibrated_chips.contains(chip) {
            let r = format!("chip `{chip}` was never profiled (parameters are assumed)");
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
    }
    let ctx = s.workload.prompt_tokens + s.workload.generate_tokens;
    if profile.meta.calibrated_max_context > 0 && ctx > profile.meta.calibrated_max_context {
        reasons.push(format!("context {ctx} beyond the {} calibrated", profile.meta.calibrated_max_context));
    }
    Envelope {
        profile: profile.meta.name.clone(),
        status: if reasons.is_empty() { "inside".into() } else { "extrapolation".into() },
        reasons,
    }
}
