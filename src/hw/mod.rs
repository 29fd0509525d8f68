//! Hardware: nodes (memory, bandwidth, compute, power), fabrics (latency, bandwidth, transport)
//! and topologies (full mesh, ring, switch; ports, cables, routes). Knows nothing about LLMs.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A machine preset.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Chip family; calibration profiles are keyed by it.
    pub chip: String,
    /// `macos` or `linux`.
    pub os: String,
    /// GPU cores (CUDA cores for GB10, CUs for Radeon).
    pub gpu_cores: u32,
    /// CPU cores.
    pub cpu_cores: u32,
    /// Unified memory, GB.
    pub memory_gb: f64,
    /// Peak memory bandwidth, GB/s.
    pub mem_bw_gbs: f64,
    /// Peak FP16 GPU throughput, TFLOPS.
    pub fp16_tflops: f64,
    /// Price, USD.
    pub price_usd: f64,
    /// Idle wall power, W.
    pub idle_w: f64,
    /// Maximum wall power, W.
    pub max_w: f64,
    /// Ports usable for RDMA (Thunderbolt 5 on Macs, QSFP on GB10).
    pub rdma_ports: u32,
    /// Thunderbolt/USB4 ports.
    pub tb_ports: u32,
    /// QSFP ports (ConnectX-7 on GB10 machines).
    #[serde(default)]
    pub qsfp_ports: u32,
    /// Thunderbolt generation of those ports (0: none).
    pub tb_generation: u32,
    /// Built-in Ethernet, Gb/s.
    pub ethernet_gbps: f64,
    /// Fraction of memory the GPU may wire (macOS recommended working set).
    pub wired_fraction: f64,
    /// Measured single-node CPU HPL, Gflops.
    pub hpl_cpu_gflops: f64,
    /// Wall power during HPL, W.
    pub hpl_w: f64,
    /// Source of each figure.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

impl NodeSpec {
    /// Memory the GPU may use, in bytes, for a wired fraction.
    pub fn usable_bytes(&self, wired_fraction: f64) -> f64 {
        self.memory_gb * 1e9 * wired_fraction
    }

    /// Peak memory bandwidth in bytes per second.
    pub fn mem_bw(&self) -> f64 {
        self.mem_bw_gbs * 1e9
    }

    /// Peak FP16 in FLOP/s.
    pub fn flops(&self) -> f64 {
        self.fp16_tflops * 1e12
    }
}

/// Transport of a fabric.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Kernel-bypass RDMA (JACCL over Thunderbolt 5, RoCE).
    Rdma,
    /// TCP/IP sockets.
    Tcp,
    /// No network (single node).
    None,
}

/// A network fabric preset.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Transport.
    pub transport: Transport,
    /// MLX distributed backend used over it (`jaccl`, `ring`, `nccl`, `none`).
    pub backend: String,
    /// Physical port kind (`thunderbolt`, `ethernet`, `qsfp`, `wireless`, `none`).
    pub port: String,
    /// Minimum Thunderbolt generation required of both ends.
    #[serde(default)]
    pub min_tb_generation: u32,
    /// Ethernet line rate needed from a node's built-in port, Gb/s.
    #[serde(default)]
    pub link_gbps: f64,
    /// One-way small-message latency, microseconds.
    pub latency_us: f64,
    /// Achieved bandwidth per direction per link, GB/s.
    pub bandwidth_gbs: f64,
    /// Topologies this fabric can be cabled as.
    pub topologies: Vec<String>,
    /// Price of one cable, USD.
    pub cable_usd: f64,
    /// Price of a switch, USD (switched fabrics).
    #[serde(default)]
    pub switch_usd: f64,
    /// Source of each figure.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

impl FabricSpec {
    /// Latency in nanoseconds.
    pub fn latency_ns(&self) -> f64 {
        self.latency_us * 1e3
    }

    /// Bandwidth in bytes per nanosecond.
    pub fn bytes_per_ns(&self) -> f64 {
        self.bandwidth_gbs
    }
}

/// How the nodes are cabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Every pair has a direct cable (N-1 ports per node, N(N-1)/2 cables).
    FullMesh,
    /// Each node cabled to its two neighbours (2 ports per node, N cables).
    Ring,
    /// Every node cabled to a switch (1 port per node).
    Switch,
    /// A single node.
    None,
}

impl Topology {
    /// Parses a topology id.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "full-mesh" => Some(Self::FullMesh),
            "ring" => Some(Self::Ring),
            "switch" => Some(Self::Switch),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The id used in scenario files.
    pub fn id(self) -> &'static str {
        match self {
            Self::FullMesh => "full-mesh",
            Self::Ring => "ring",
            Self::Switch => "switch",
            Self::None => "none",
        }
    }

    /// Ports each node needs for `n` nodes.
    pub fn ports_per_node(self, n: usize) -> usize {
        match (self, n) {
            (_, 0 | 1) | (Self::None, _) => 0,
            (Self::FullMesh, n) => n - 1,
            (Self::Ring, 2) => 1,
            (Self::Ring, _) => 2,
            (Self::Switch, _) => 1,
        }
    }

    /// Cables for `n` nodes.
    pub fn cables(self, n: usize) -> usize {
        match (self, n) {
            (_, 0 | 1) | (Self::None, _) => 0,
            (Self::FullMesh, n) => n * (n - 1) / 2,
            (Self::Ring, 2) => 1,
            (Self::Ring, n) => n,
            (Self::Switch, n) => n,
        }
    }

    /// Number of link hops from `a` to `b` (shortest way).
    pub fn hops(self, n: usize, a: usize, b: usize) -> usize {
        if a == b {
            return 0;
        }
        match self {
            Self::FullMesh => 1,
            Self::Switch => 2,
            Self::Ring => {
                let d = a.abs_diff(b);
                d.min(n - d)
            }
            Self::None => 0,
        }
    }
}

/// The cabling plan: which port of which node connects to which.
pub fn cabling(topology: Topology, n: usize) -> Vec<(usize, usize, usize, usize)> {
    // (node a, port on a, node b, port on b); for a switch, b == n means "the switch".
    let mut next_port = vec![0usize; n + 1];
    let mut out = Vec::new();
    let mut connect = |a: usize, b: usize, out: &mut Vec<_>| {
        let pa = next_port[a];
        next_port[a] += 1;
        let pb = next_port[b];
        next_port[b] += 1;
        out.push((a, pa, b, pb));
    };
    match topology {
        Topology::FullMesh => {
            for a in 0..n {
                for b in a + 1..n {
                    connect(a, b, &mut out);
                }
            }
        }
        Topology::Ring if n == 2 => connect(0, 1, &mut out),
        Topology::Ring if n > 2 => {
            for a in 0..n {
                connect(a.min((a + 1) % n), a.max((a + 1) % n), &mut out);
            }
        }
        Topology::Switch if n > 1 => {
            for a in 0..n {
                connect(a, n, &mut out);
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_of_four_needs_three_ports_and_six_cables() {
        assert_eq!(Topology::FullMesh.ports_per_node(4), 3);
        assert_eq!(Topology::FullMesh.cables(4), 6);
        assert_eq!(cabling(Topology::FullMesh, 4).len(), 6);
        assert_eq!(Topology::Ring.hops(6, 0, 4), 2);
    }
}
