//! Power, energy and cost: node wall power from resource utilization during decode, energy per
//! token, hardware cost and the cost of a million tokens.

use crate::engine::Plan;
use crate::scenario::Scenario;
use crate::util::{round3, round6};

use super::{Estimate, GenerateRun};

/// Hardware cost of a scenario's cluster: nodes, cables, and a switch for switched fabrics, USD.
/// Cheap (no simulation), so planners can prune by budget before estimating.
pub fn hardware_cost(s: &Scenario) -> f64 {
    crate::hw::cluster_cost(s.nodes.iter(), &s.fabric, s.topology)
}

/// Fills power (per node and cluster, from GPU and CPU utilization over the decode phase), GPU
/// busy share, energy per token and the cost figures of a generate run.
pub(super) fn decode_power_and_cost(s: &Scenario, plan: &Plan, run: &GenerateRun, out: &mut Estimate) {
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
    let cost_usd = hardware_cost(s);
    let secs = s.cost.amortization_years * 365.25 * 86400.0;
    let usd_per_s = cost_usd / secs + cluster_power / 1000.0 * s.cost.electricity_usd_per_kwh / 3600.0;
    out.usd_per_mtok = round6(usd_per_s / out.decode_tokens_per_s * 1e6);
    out.usd_per_token_per_s = round3(cost_usd / out.decode_tokens_per_s);
}
