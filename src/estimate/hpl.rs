//! High-Performance Linpack on the CPUs, as the benchmark runs it: right-looking LU, panel by
//! panel, with look-ahead depth 1 (HPL's default `DEPTH = 1`). Step `k` factors panel `k`
//! (`m = N - k NB` rows, NB columns) on one process column, broadcasts it along the process
//! rows, swaps the pivot rows along the process columns and updates the trailing matrix; with
//! look-ahead the next panel's broadcast overlaps the update, so a step costs
//!
//! `max(trailing update, panel broadcast) + row swaps + panel factorisation`.
//!
//! MPI runs one rank per core, ranks numbered row-major over the P x Q grid and placed on
//! nodes in order (a node's cores take consecutive ranks). Only bytes that cross nodes use the
//! NIC: the broadcast (HPL's ring) and the row swaps (spread and roll, `(P-1)/P` of the U block
//! each) count the hops between ranks on different nodes; hops inside a node go through shared
//! memory and are part of the single-node rate. Each node's rank rate is set so that the same
//! model on that node alone, at its own default N, reproduces its measured single-node HPL
//! (`hpl_cpu_gflops`, a catalog input). N, NB and the grid follow geerlingguy/top500-benchmark
//! (N ~ 0.9 sqrt(0.75 x RAM / 8 B) rounded down to a multiple of NB, NB = 256, the most
//! square P x Q with P <= Q) unless the scenario sets them.
//!
//! Power: MPI ranks busy-poll while they wait, so every core is busy the whole run; the CPU's
//! energy per FLOP is what the node's HPL wall power leaves after idle and busy cores.

use crate::engine::PlanError;
use crate::hw::NodeSpec;
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::util::round3;

use super::Estimate;

/// HPL's default block size in the top500-benchmark convention.
pub const DEFAULT_NB: u64 = 256;

/// The run's shape: problem size, block size, grid and where each rank lives.
#[derive(Clone, Debug, PartialEq)]
pub struct HplGrid {
    /// Matrix order N.
    pub n: u64,
    /// Block size NB.
    pub nb: u64,
    /// Process rows.
    pub p: u64,
    /// Process columns.
    pub q: u64,
    /// Node of each rank (rank = row x Q + column).
    pub node_of_rank: Vec<usize>,
}

/// Per-step costs of one panel, seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HplStep {
    /// Trailing-matrix update (DGEMM) on the slowest rank.
    pub update: f64,
    /// Panel broadcast along the process rows (NIC time of the busiest node plus hop latencies).
    pub broadcast: f64,
    /// Row swaps along the process columns.
    pub swaps: f64,
    /// Panel factorisation on one process column, with its pivot searches.
    pub panel: f64,
}

impl HplStep {
    /// The step's time with look-ahead depth 1.
    pub fn total(&self) -> f64 {
        self.update.max(self.broadcast) + self.swaps + self.panel
    }
}

/// The links and rates a run sees.
#[derive(Clone, Debug, PartialEq)]
pub struct HplMachine {
    /// FLOP/s of one rank (one core) on each node.
    pub rank_flops: Vec<f64>,
    /// Bytes/s a node's crossing traffic leaves through (one link: HPL's rings send to one
    /// neighbour at a time).
    pub nic_bytes_per_s: f64,
    /// One-way latency of a crossing message, s.
    pub latency_s: f64,
}

/// Total HPL FLOPs for order `n`: 2/3 N^3 + 3/2 N^2.
pub fn hpl_flops(n: u64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n.powi(3) + 1.5 * n * n
}

/// N by the top500-benchmark convention for `ram_bytes` of total memory.
pub fn default_n(ram_bytes: f64, nb: u64) -> u64 {
    let n = 0.9 * (0.75 * ram_bytes / 8.0).sqrt();
    ((n / nb as f64).floor() as u64 * nb).max(nb)
}

/// The most square grid P x Q = ranks with P <= Q.
pub fn default_grid(ranks: u64) -> (u64, u64) {
    let p = (1..=ranks).rev().find(|p| ranks % p == 0 && p * p <= ranks).unwrap_or(1);
    (p, ranks / p)
}

/// The grid of `nodes` with the scenario's overrides (0: the convention).
pub fn grid(nodes: &[NodeSpec], n: u64, nb: u64, p: u64, q: u64) -> HplGrid {
    let nb = if nb > 0 { nb } else { DEFAULT_NB };
    let ranks: u64 = nodes.iter().map(|x| x.cpu_cores.max(1) as u64).sum();
    let n = if n > 0 { n } else { default_n(nodes.iter().map(NodeSpec::memory_bytes).sum(), nb) };
    let (p, q) = match (p, q) {
        (0, 0) => default_grid(ranks),
        (p, 0) => (p, (ranks / p).max(1)),
        (0, q) => ((ranks / q).max(1), q),
        (p, q) => (p, q),
    };
    // Ranks fill the nodes in order; a grid larger than the cores oversubscribes the last node,
    // a smaller one leaves cores idle.
    let mut node_of_rank = Vec::with_capacity((p * q) as usize);
    for (i, node) in nodes.iter().enumerate() {
        node_of_rank.extend(std::iter::repeat_n(i, node.cpu_cores.max(1) as usize));
    }
    node_of_rank.resize((p * q) as usize, nodes.len().saturating_sub(1));
    HplGrid { n, nb, p, q, node_of_rank }
}

impl HplGrid {
    fn node(&self, row: u64, col: u64) -> usize {
        self.node_of_rank[(row * self.q + col) as usize]
    }

    /// Costs of step `k` (0-based) on `m`.
    pub fn step(&self, k: u64, m: &HplMachine, nodes: usize) -> HplStep {
        let (p, q, nb) = (self.p as f64, self.q as f64, self.nb as f64);
        let rows = self.n.saturating_sub(k * self.nb) as f64; // panel height
        let trail = (rows - nb).max(0.0); // trailing matrix order
        let slowest = self.node_of_rank.iter().map(|&i| m.rank_flops[i]).fold(f64::INFINITY, f64::min);
        let update = 2.0 * trail * trail * nb / (p * q * slowest);
        // Panel broadcast: along each process row a ring from column to column; each hop to a
        // rank on another node sends that row's piece of the panel (rows/P x NB doubles).
        let piece = rows / p * nb * 8.0;
        let mut out = vec![0.0; nodes];
        let mut hops = 0u64;
        for r in 0..self.p {
            let mut row_hops = 0;
            for c in 0..self.q.saturating_sub(1) {
                let (a, b) = (self.node(r, c), self.node(r, c + 1));
                if a != b {
                    out[a] += piece;
                    row_hops += 1;
                }
            }
            hops = hops.max(row_hops);
        }
        let broadcast = out.iter().fold(0.0f64, |x, &b| x.max(b)) / m.nic_bytes_per_s + hops as f64 * m.latency_s;
        // Row swaps: along each process column, spread then roll the U block of that column
        // (NB x trail/Q doubles) around the column's ring: each crossing hop carries (P-1)/P of
        // it twice.
        let u = nb * trail / q * 8.0;
        let mut out = vec![0.0; nodes];
        let mut col_hops = 0u64;
        let mut spans = 1;
        for c in 0..self.q {
            let mut seen = vec![false; nodes];
            let mut this = 0;
            for r in 0..self.p {
                seen[self.node(r, c)] = true;
                let (a, b) = (self.node(r, c), self.node((r + 1) % self.p, c));
                if a != b {
                    out[a] += 2.0 * u * (p - 1.0) / p;
                    this += 1;
                }
            }
            col_hops = col_hops.max(this);
            spans = spans.max(seen.iter().filter(|x| **x).count());
        }
        let swaps = out.iter().fold(0.0f64, |x, &b| x.max(b)) / m.nic_bytes_per_s + 2.0 * col_hops as f64 * m.latency_s;
        // Panel factorisation: rows x NB^2 FLOPs over the column's P ranks, plus NB pivot
        // searches, each a max-reduction whose cross-node rounds pay the latency.
        let rounds = (spans as f64).log2().ceil();
        let panel = rows * nb * nb / (p * slowest) + nb * rounds * 2.0 * m.latency_s;
        HplStep { update, broadcast, swaps, panel }
    }

    /// Time of the whole factorisation, s.
    pub fn seconds(&self, m: &HplMachine, nodes: usize) -> f64 {
        (0..self.n.div_ceil(self.nb)).map(|k| self.step(k, m, nodes).total()).sum()
    }
}

/// Rank rate that makes `node` alone, at its default N and grid, run at its measured HPL rate.
fn rank_flops(node: &NodeSpec) -> f64 {
    let g = grid(std::slice::from_ref(node), 0, 0, 0, 0);
    let unit = HplMachine { rank_flops: vec![1.0], nic_bytes_per_s: f64::INFINITY, latency_s: 0.0 };
    // With no crossing traffic the time is inversely proportional to the rank rate.
    let seconds_at_unit_rate = g.seconds(&unit, 1);
    seconds_at_unit_rate / (hpl_flops(g.n) / (node.hpl_cpu_gflops * 1e9))
}

/// The scenario's grid and the run's wall time, s.
fn solve(s: &Scenario) -> (HplGrid, f64) {
    let w = &s.workload;
    let g = grid(&s.nodes, w.hpl_n, w.hpl_nb, w.hpl_p, w.hpl_q);
    let n_nodes = s.nodes.len();
    let m = HplMachine {
        rank_flops: s.nodes.iter().map(rank_flops).collect(),
        // The panels cross every node's link: the slowest port paces them (a 5 GbE box on a
        // 10 GbE switch links at 5 Gb/s, `hw::FabricSpec::slowest_link_gbs`).
        nic_bytes_per_s: if n_nodes > 1 { s.fabric.slowest_link_gbs(&s.nodes) * 1e9 } else { f64::INFINITY },
        latency_s: s.fabric.latency_us * 1e-6,
    };
    let secs = g.seconds(&m, n_nodes);
    (g, secs)
}

/// One HPL run of the scenario: its FLOPs and its wall time, s (what the fault model needs).
pub(super) fn hpl_run(s: &Scenario) -> (f64, f64) {
    let (g, secs) = solve(s);
    (hpl_flops(g.n), secs)
}

/// HPL on the CPUs of the scenario's nodes: Gflops, memory and power (ranks busy-poll).
pub(super) fn hpl(s: &Scenario, profile: &Profile, out: &mut Estimate) -> Result<(), PlanError> {
    let (g, secs) = solve(s);
    let n_nodes = s.nodes.len();
    let flops = hpl_flops(g.n);
    out.hpl_gflops = Some(round3(flops / secs / 1e9));
    out.hpl_problem = Some(super::HplProblem { n: g.n, nb: g.nb, p: g.p, q: g.q });
    let ranks = g.node_of_rank.len() as f64;
    let mut power = Vec::with_capacity(n_nodes);
    for (i, node) in s.nodes.iter().enumerate() {
        let params_chip = profile.params_chip(node);
        let chip = profile.chip(&params_chip).ok_or_else(|| PlanError::Uncalibrated {
            chip: params_chip.clone(),
            runtime: "hpl".into(),
            profile: profile.meta.name.clone(),
        })?;
        let mine = g.node_of_rank.iter().filter(|&&x| x == i).count() as f64;
        let cores = mine.min(node.cpu_cores as f64) * chip.cpu_core_w;
        // The single-node HPL figure less idle and busy cores: energy per FLOP of the CPU.
        let j_per_flop = ((node.hpl_w - node.idle_w - node.cpu_cores as f64 * chip.cpu_core_w) / (node.hpl_cpu_gflops * 1e9)).max(0.0);
        let p = node.idle_w + cores + j_per_flop * flops * mine / ranks / secs;
        power.push(round3(p.min(node.max_wall_w())));
        let gb = g.n as f64 * g.n as f64 * 8.0 * mine / ranks / 1e9;
        out.memory_per_node_gb.push(round3(gb));
    }
    let total: f64 = power.iter().sum();
    out.cluster_power_w = round3(total);
    out.prefill_power_w = round3(total);
    out.peak_power_w = round3(total);
    out.node_prefill_power_w = power.clone();
    out.node_peak_power_w = power.clone();
    out.node_power_w = power;
    Ok(())
}
