//! High-Performance Linpack on the CPUs: netlib's performance model with each node's measured rate.

use crate::scenario::Scenario;
use crate::util::round3;

use super::Estimate;

/// HPL on the CPUs: netlib's model with the measured single-node rate of each node.
pub(super) fn hpl(s: &Scenario, out: &mut Estimate) {
    let (gflops, _, compute_frac) = hpl_run(s);
    out.hpl_gflops = Some(round3(gflops));
    out.node_power_w = s.nodes.iter().map(|x| round3(x.idle_w + (x.hpl_w - x.idle_w) * compute_frac)).collect();
    out.cluster_power_w = round3(out.node_power_w.iter().sum());
}

/// One HPL run: its rate (Gflops), its wall time (s) and the share of that time computing.
pub(super) fn hpl_run(s: &Scenario) -> (f64, f64, f64) {
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
    let compute_frac = (2.0 * n.powi(3) / (3.0 * p * q * rate)) / t;
    (gflops, t, compute_frac)
}
