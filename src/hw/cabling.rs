//! Cabling rules: whether a node can join a fabric (port kind, Thunderbolt generation, RDMA
//! ports) and whether it has the ports a topology needs; JACCL's mesh size limit.

use super::fabric::{Backend, FabricSpec, PortKind, Transport};
use super::node::NodeSpec;
use super::topology::Topology;

/// JACCL's `MESH_MAX_PEERS`: a fully connected JACCL mesh has at most this many peers per rank.
pub const JACCL_MESH_MAX_PEERS: usize = 8;

/// Why a cluster cannot be cabled as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CablingError {
    /// The node's Thunderbolt generation is below the fabric's minimum.
    #[error("node `{node}` has {} ports, fabric `{fabric}` needs Thunderbolt {need}", tb_text(*have))]
    ThunderboltGeneration {
        /// Node preset id.
        node: String,
        /// The node's Thunderbolt generation (0: none).
        have: u32,
        /// Fabric preset id.
        fabric: String,
        /// Generation the fabric needs.
        need: u32,
    },
    /// A QSFP fabric on a node without QSFP ports.
    #[error("node `{node}` has no ConnectX-7 QSFP ports for fabric `{fabric}`")]
    NoQsfpPorts {
        /// Node preset id.
        node: String,
        /// Fabric preset id.
        fabric: String,
    },
    /// RDMA over Thunderbolt on a node without RDMA-capable ports.
    #[error("node `{node}` has no RDMA-capable Thunderbolt 5 ports")]
    NoRdmaPorts {
        /// Node preset id.
        node: String,
    },
    /// The topology needs more ports per node than the node has.
    #[error("a {} of {nodes} nodes needs {need} {what} per node; `{node}` has {have}", topology.id())]
    TooFewPorts {
        /// The topology.
        topology: Topology,
        /// Nodes in the cluster.
        nodes: usize,
        /// Ports needed per node.
        need: usize,
        /// Which ports.
        what: &'static str,
        /// Node preset id.
        node: String,
        /// Ports the node has.
        have: usize,
    },
    /// A JACCL full mesh with more peers than JACCL supports.
    #[error("JACCL full mesh supports at most 8 peers (MESH_MAX_PEERS); {nodes} nodes have {}", nodes - 1)]
    MeshTooLarge {
        /// Nodes in the cluster.
        nodes: usize,
    },
}

fn tb_text(generation: u32) -> String {
    if generation == 0 { "no Thunderbolt".to_string() } else { format!("Thunderbolt {generation}") }
}

impl CablingError {
    /// How to fix it.
    pub fn fix(&self) -> String {
        match self {
            Self::ThunderboltGeneration { .. } => "pick a fabric the node supports (e.g. tb4-tcp or eth-10g)".into(),
            Self::NoQsfpPorts { .. } => "cx7 fabrics are for GB10 machines; use eth-10g or a Thunderbolt fabric".into(),
            Self::NoRdmaPorts { .. } => "use tb5-tcp / tb4-tcp, or M3 Ultra / M4 Max nodes on macOS 26.2+".into(),
            Self::TooFewPorts { topology: Topology::FullMesh, have, .. } => {
                format!("use at most {} nodes for a full mesh, or topology = \"ring\" (JACCL ring, mlx PR 3094)", have + 1)
            }
            Self::TooFewPorts { .. } => "use fewer nodes or a switched fabric".into(),
            Self::MeshTooLarge { .. } => "use topology = \"ring\"".into(),
        }
    }
}

/// The ports of `node` a fabric's cables plug into, and what they are called; `None` when the
/// port kind has no per-node limit here (Ethernet and Wi-Fi go through a switch or router).
pub fn ports_for(node: &NodeSpec, fabric: &FabricSpec) -> Option<(usize, &'static str)> {
    match (fabric.port, fabric.transport) {
        (PortKind::Thunderbolt, Transport::Rdma) => Some((node.rdma_ports as usize, "RDMA-capable Thunderbolt 5 ports")),
        (PortKind::Thunderbolt, _) => Some((node.tb_ports as usize, "Thunderbolt ports")),
        (PortKind::Qsfp, _) => Some((node.qsfp_ports as usize, "QSFP ports")),
        _ => None,
    }
}

/// Checks that `node` can join `fabric` as one of `n` nodes cabled as `topology`.
pub fn check_node(node: &NodeSpec, fabric: &FabricSpec, topology: Topology, n: usize) -> Result<(), CablingError> {
    if fabric.port == PortKind::Thunderbolt && node.tb_generation < fabric.min_tb_generation {
        return Err(CablingError::ThunderboltGeneration {
            node: node.id.clone(),
            have: node.tb_generation,
            fabric: fabric.id.clone(),
            need: fabric.min_tb_generation,
        });
    }
    if fabric.port == PortKind::Qsfp && node.qsfp_ports == 0 {
        return Err(CablingError::NoQsfpPorts { node: node.id.clone(), fabric: fabric.id.clone() });
    }
    if fabric.transport == Transport::Rdma && fabric.port == PortKind::Thunderbolt && node.rdma_ports == 0 {
        return Err(CablingError::NoRdmaPorts { node: node.id.clone() });
    }
    let need = topology.ports_per_node(n);
    let (have, what) = ports_for(node, fabric).unwrap_or((usize::MAX, ""));
    if need > have {
        return Err(CablingError::TooFewPorts { topology, nodes: n, need, what, node: node.id.clone(), have });
    }
    Ok(())
}

/// Checks limits of the whole cluster that no single node decides (JACCL's mesh size).
pub fn check_cluster(fabric: &FabricSpec, topology: Topology, n: usize) -> Result<(), CablingError> {
    if fabric.backend == Backend::Jaccl && topology == Topology::FullMesh && n - 1 > JACCL_MESH_MAX_PEERS {
        return Err(CablingError::MeshTooLarge { nodes: n });
    }
    Ok(())
}
