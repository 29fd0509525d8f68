//! Fabric presets: transport, collective backend, port kind, latency and bandwidth.

use std::collections::BTreeMap;

use serde::Deserialize;

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
