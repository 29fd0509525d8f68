//! Fabric presets: transport, collective backend, port kind, latency and bandwidth.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::node::NodeSpec;
use super::topology::Topology;

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
    /// MLX distributed backend used over it.
    pub backend: Backend,
    /// Physical port kind.
    pub port: PortKind,
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
    pub topologies: Vec<Topology>,
    /// Price of one cable, USD.
    pub cable_usd: f64,
    /// Price of a switch, USD (switched fabrics).
    #[serde(default)]
    pub switch_usd: f64,
    /// The fabric a degraded link of this one falls back to on the same cable (RDMA -> TCP).
    #[serde(default)]
    pub degrade_to: Option<String>,
    /// The fabric TCP sockets run as over these same cables (an RDMA fabric's TCP sibling:
    /// `tb5-rdma` -> `tb5-tcp`): what a runtime that speaks only TCP (llama.cpp RPC) gets on
    /// this fabric. Checked at load: it names a TCP fabric, and only an RDMA fabric has one.
    #[serde(default)]
    pub tcp_fabric: Option<String>,
    /// The fabric the cluster falls back to when a lost cable leaves no path (Wi-Fi).
    #[serde(default)]
    pub lost_to: Option<String>,
    /// Whether `plan` wires candidates with this fabric when the request names no fabrics
    /// (false for a NIC or adapter the boxes do not ship with, and for one box's own link).
    #[serde(default = "yes")]
    pub planner: bool,
    /// Source of each figure.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
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

    /// The line rate, Gb/s, `node`'s port joins this fabric at when its port is slower than the
    /// fabric's: Ethernet auto-negotiation settles on the highest rate both ends support, so the
    /// Framework Desktop's 5 GbE port (Realtek RTL8126: FACTS.md fabrics table, FACTS-2026 A3)
    /// on a 10 GbE switch links at 5 Gb/s. `None` when the port keeps up with the fabric, and
    /// on Thunderbolt: a Thunderbolt fabric refuses a node of an older generation
    /// ([`super::cabling::check_node`]). A node with no Ethernet port (0) is refused by
    /// cabling, and a fabric without a line rate (`link_gbps` 0) is taken at its own bandwidth.
    ///
    /// QSFP: a node whose ConnectX-7 reaches less than the fabric carries
    /// ([`NodeSpec::qsfp_gbps`], the GX10's x2 endpoint) caps its links at that payload rate,
    /// compared with the fabric's own payload rate (`bandwidth_gbs` x 8): a GX10 on `cx7-roce`
    /// runs as `cx7-roce-gx10`, and on one x4 half (`cx7-roce-x4`) its x4 endpoint keeps up.
    pub fn slower_port_gbps(&self, node: &NodeSpec) -> Option<f64> {
        match self.port {
            PortKind::Ethernet => {
                let capped = self.link_gbps > 0.0 && node.ethernet_gbps > 0.0;
                (capped && node.ethernet_gbps < self.link_gbps).then_some(node.ethernet_gbps)
            }
            PortKind::Qsfp => node.qsfp_gbps.filter(|&gbps| gbps > 0.0 && gbps < self.payload_gbps()),
            _ => None,
        }
    }

    /// The fabric's payload rate, Gb/s (its achieved bandwidth in bits).
    fn payload_gbps(&self) -> f64 {
        self.bandwidth_gbs * 8.0
    }

    /// The share of the fabric's bandwidth a link with `node` at one end reaches: its port's
    /// line rate over the fabric's (1 when the port keeps up). Assumption: TCP/IP takes the
    /// same share of a slower line rate as of the fabric's own (its `bandwidth_gbs` over its
    /// `link_gbps`): headers per frame, not per second. A QSFP node's rate is a payload rate
    /// already, over the fabric's payload rate.
    pub fn port_share(&self, node: &NodeSpec) -> f64 {
        match self.slower_port_gbps(node) {
            Some(gbps) if self.port == PortKind::Qsfp => gbps / self.payload_gbps(),
            Some(gbps) => gbps / self.link_gbps,
            None => 1.0,
        }
    }

    /// Achieved bandwidth of the link between `a` and `b`, GB/s per direction: the fabric's,
    /// capped by the slower port at its two ends. On a switch the two ends of a message are the
    /// sender's and the receiver's ports (the switch forwards at the slower one's rate).
    pub fn link_gbs(&self, a: &NodeSpec, b: &NodeSpec) -> f64 {
        self.bandwidth_gbs * self.port_share(a).min(self.port_share(b))
    }

    /// Achieved bandwidth of the slowest link among `nodes`, GB/s per direction: the fabric's,
    /// capped by the slowest port (every node has a link, and a link runs at its slower end).
    /// What a collective paced by its slowest link (a ring, NCCL) and HPL's panel broadcasts see.
    pub fn slowest_link_gbs(&self, nodes: &[NodeSpec]) -> f64 {
        self.bandwidth_gbs * nodes.iter().map(|x| self.port_share(x)).fold(1.0, f64::min)
    }
}

/// The collective backend MLX uses over a fabric.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// JACCL: RDMA over Thunderbolt 5 (macOS 26.2+), fully connected mesh or ring.
    Jaccl,
    /// MLX's TCP ring.
    Ring,
    /// NCCL (GB10 over ConnectX-7).
    Nccl,
    /// No backend (single node).
    None,
}

/// The physical port a fabric's cables plug into.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PortKind {
    /// Thunderbolt / USB4.
    Thunderbolt,
    /// Built-in Ethernet.
    Ethernet,
    /// QSFP (ConnectX-7).
    Qsfp,
    /// Wi-Fi.
    Wireless,
    /// No port (single node).
    None,
}
