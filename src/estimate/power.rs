//! Power, energy and cost. Wall power per node and per phase (prefill, decode) from the work the
//! phase does:
//!
//! `P = idle + e_byte x DRAM bytes/s + e_flop x issued FLOP/s + cpu_core_w x busy cores`
//!
//! with `e_byte` (`chips.*.pj_per_byte`) fitted on memory-bound evidence (decode), `e_flop`
//! (`chips.*.pj_per_flop`) on compute-bound evidence (prefill). FLOPs count as issued: an op's
//! FLOPs over its kernel's compute efficiency ([`crate::engine::Work::issued_flops`]), so a
//! compute-bound phase draws near full ALU power whatever its kernels' efficiency, while a
//! memory-bound one, whose ALUs stall on DRAM, draws little. Busy cores = the runtime's
//! host thread (its CPU busy share on the timeline) plus threads that spin for the whole phase
//! ([`spinning_cores`]). A memory-bound decode whose GPU stalls on collectives reads fewer bytes
//! per second and so draws less than a compute-bound prefill. `energy_j_per_token` comes from the
//! decode average; the run's peak is the larger phase (what a wall meter's maximum during a
//! benchmark shows).

use crate::engine::{Plan, Work};
use crate::hw::Backend;
use crate::scenario::Scenario;
use crate::sim::Time;
use crate::util::{round3, round6};

use super::{Estimate, GenerateRun};

/// Hardware cost of a scenario's cluster: nodes, cables, and a switch for switched fabrics, USD
/// (each replica its own; the network that carries requests to replicas is not priced).
/// Cheap (no simulation), so planners can prune by budget before estimating.
pub fn hardware_cost(s: &Scenario) -> f64 {
    s.replicas as f64 * crate::hw::cluster_cost(s.nodes.iter(), &s.fabric, s.topology)
}

/// Host threads per node that spin for a whole phase: MLX's CPU-stream thread when it waits on
/// the GPU by polling a shared event (`MLX_METAL_FAST_SYNCH`) or drives a collective backend that
/// polls its completion queues (JACCL's RDMA, NCCL's proxy). It is one thread either way (MLX runs
/// the GPU wait and the collective on the same CPU stream). Blocking waits (the default Metal
/// fence, TCP sockets, llama.cpp's command-buffer wait) sleep.
pub fn spinning_cores(plan: &Plan) -> f64 {
    // Only MLX runs its collectives through these backends; llama.cpp RPC talks TCP sockets
    // over any fabric.
    if !plan.options.kind.runtime().can_spin_on_waits() {
        return 0.0;
    }
    let polls_nic = plan.n() > 1 && matches!(plan.fabric.backend, Backend::Jaccl | Backend::Nccl);
    if polls_nic || plan.fast_sync() { 1.0 } else { 0.0 }
}

/// What one node did over one phase.
pub struct PhaseLoad {
    /// Phase length, ns.
    pub ns: Time,
    /// CPU busy time of the runtime's host work, ns.
    pub cpu_busy: Time,
    /// DRAM bytes and FLOPs.
    pub work: Work,
}

/// Wall power of node `i` of `plan` over a phase, W (capped at the node's maximum, or its power
/// mode's ceiling).
pub fn phase_power_w(plan: &Plan, i: usize, load: &PhaseLoad) -> f64 {
    let node = &plan.nodes[i];
    let chip = &plan.chips[i];
    if load.ns == 0 {
        return node.idle_w;
    }
    let secs = load.ns as f64 / 1e9;
    let cores = (load.cpu_busy as f64 / load.ns as f64 + spinning_cores(plan)).min(node.cpu_cores as f64);
    let p = node.idle_w
        + chip.pj_per_byte * 1e-12 * load.work.bytes / secs
        + chip.pj_per_flop * 1e-12 * load.work.issued_flops / secs
        + chip.cpu_core_w * cores;
    p.min(node.max_wall_w())
}

/// [`phase_power_w`] of node `i` of a cluster of copies of `plan`'s nodes: a copy that did
/// nothing in the phase (an idle replica) draws its idle power, no spinning thread included.
fn node_power_w(plan: &Plan, i: usize, load: &PhaseLoad) -> f64 {
    let idle_copy = i >= plan.n() && load.cpu_busy == 0 && load.work == Work::default();
    if idle_copy { plan.nodes[i % plan.n()].idle_w } else { phase_power_w(plan, i % plan.n(), load) }
}

/// Fills power per phase (per node and cluster), GPU busy share, energy per token and the cost
/// figures of a generate run.
pub(super) fn decode_power_and_cost(s: &Scenario, plan: &Plan, run: &GenerateRun, out: &mut Estimate) {
    // One entry per node of the cluster: a replicated run's copies of the plan's nodes follow
    // the first's ([`Scenario::replicas`]).
    let n = run.decode_busy_gpu.len();
    let (mut decode, mut prefill) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let gpu_util = (run.decode_busy_gpu[i] as f64 / run.decode_ns as f64).min(1.0);
        out.decode_gpu_busy_percent.push(round3(gpu_util * 100.0));
        let d = PhaseLoad { ns: run.decode_ns, cpu_busy: run.decode_busy_cpu[i], work: run.decode_work[i] };
        decode.push(node_power_w(plan, i, &d));
        let p = PhaseLoad { ns: run.prefill_ns, cpu_busy: run.prefill_busy_cpu[i], work: run.prefill_work[i] };
        prefill.push(node_power_w(plan, i, &p));
    }
    let cluster_power: f64 = decode.iter().sum();
    let prefill_power: f64 = prefill.iter().sum();
    out.cluster_power_w = round3(cluster_power);
    out.prefill_power_w = round3(prefill_power);
    out.peak_power_w = round3(cluster_power.max(prefill_power));
    out.node_peak_power_w = decode.iter().zip(&prefill).map(|(d, p)| round3(d.max(*p))).collect();
    out.node_prefill_power_w = prefill.iter().map(|p| round3(*p)).collect();
    out.node_power_w = decode.iter().map(|p| round3(*p)).collect();
    out.energy_j_per_token = round6(cluster_power / out.decode_tokens_per_s);
    let cost_usd = hardware_cost(s);
    let secs = s.cost.amortization_years * 365.25 * 86400.0;
    let usd_per_s = cost_usd / secs + cluster_power / 1000.0 * s.cost.electricity_usd_per_kwh / 3600.0;
    out.usd_per_mtok = round6(usd_per_s / out.decode_tokens_per_s * 1e6);
    out.usd_per_token_per_s = round3(cost_usd / out.decode_tokens_per_s);
}
