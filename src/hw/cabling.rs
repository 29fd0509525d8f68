//! Cabling rules: whether a node can join a fabric (port kind, Thunderbolt generation, RDMA
//! ports) and whether it has the ports a topology needs; JACCL's mesh size limit; NCCL over
//! ConnectX-7 without a switch (two nodes by one cable, three in a ring, more need a switch).

use super::fabric::{Backend, FabricSpec, PortKind, Transport};
use super::node::NodeSpec;
use super::topology::Topology;

/// JACCL's `MESH_MAX_PEERS`: a fully connected JACCL mesh has at most this many peers per rank.
pub const JACCL_MESH_MAX_PEERS: usize = 8;

/// The most GB10 nodes NCCL joins over direct ConnectX-7 cables: two by one QSFP cable, three
/// in a ring (a triangle: each node's two QSFP ports to its two peers), which needs NCCL >=
/// 2.30u1 built for sm_121 (FACTS-2026 B3, dgx-spark.warehack.ing). Assumption: a ring of
/// three is taken to run that NCCL (the scenario has no NCCL version); four or more go
/// through a switch (NVIDIA's recipes and the 8-node build report use one).
pub const NCCL_DIRECT_MAX_NODES: usize = 3;

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
    /// An Ethernet fabric on a node without an Ethernet port (the MacBooks).
    #[error("node `{node}` has no Ethernet port for fabric `{fabric}`")]
    NoEthernetPort {
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
    /// NCCL over direct ConnectX-7 cables with more nodes than a cable pair or a triangle.
    #[error("NCCL over direct `{fabric}` cables joins at most 3 nodes ({nodes} asked as a {})", topology.id())]
    NcclNeedsSwitch {
        /// Fabric preset id.
        fabric: String,
        /// The topology asked for.
        topology: Topology,
        /// Nodes in the cluster.
        nodes: usize,
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
            Self::NoEthernetPort { .. } => {
                "use a Thunderbolt fabric (tb5-tcp, tb4-tcp), or a Thunderbolt-to-Ethernet adapter (tb-eth-25g); or give the node an `ethernet_gbps` in a user catalog".into()
            }
            Self::NoRdmaPorts { .. } => "use tb5-tcp / tb4-tcp, or M3 Ultra / M4 Max nodes on macOS 26.2+".into(),
            Self::TooFewPorts { topology: Topology::FullMesh, have, .. } => {
                format!("use at most {} nodes for a full mesh, or topology = \"ring\" (JACCL ring, mlx PR 3094)", have + 1)
            }
            Self::TooFewPorts { .. } => "use fewer nodes or a switched fabric".into(),
            Self::MeshTooLarge { .. } => "use topology = \"ring\"".into(),
            Self::NcclNeedsSwitch { .. } => {
                "use topology = \"switch\" (a 200 GbE switch, one QSFP cable per node), or 2 nodes on one direct cable, or 3 in a ring (NCCL >= 2.30u1 built for sm_121)".into()
            }
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
    // A link runs at the slower of its ports (`FabricSpec::link_gbs`); with no port there is no link.
    if fabric.port == PortKind::Ethernet && node.ethernet_gbps <= 0.0 {
        return Err(CablingError::NoEthernetPort { node: node.id.clone(), fabric: fabric.id.clone() });
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
    if fabric.backend == Backend::Nccl && topology != Topology::Switch && n > NCCL_DIRECT_MAX_NODES {
        return Err(CablingError::NcclNeedsSwitch { fabric: fabric.id.clone(), topology, nodes: n });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spark() -> NodeSpec {
        crate::catalog::catalog().node("dgx-spark").expect("catalog node").clone()
    }

    fn fabric(id: &str) -> FabricSpec {
        crate::catalog::catalog().fabric(id).expect("catalog fabric").clone()
    }

    #[test]
    fn two_sparks_take_one_direct_cable_three_a_ring_and_more_a_switch() {
        let (node, roce) = (spark(), fabric("cx7-roce"));
        // Two: one QSFP cable, one port each.
        assert_eq!(check_node(&node, &roce, Topology::FullMesh, 2), Ok(()));
        assert_eq!(check_cluster(&roce, Topology::FullMesh, 2), Ok(()));
        // Three: a triangle on the two QSFP ports (NCCL >= 2.30u1).
        for t in [Topology::Ring, Topology::FullMesh] {
            assert_eq!(check_node(&node, &roce, t, 3), Ok(()));
            assert_eq!(check_cluster(&roce, t, 3), Ok(()));
        }
        // Four: a full mesh runs out of ports, a ring is refused, a switch is fine.
        assert!(matches!(check_node(&node, &roce, Topology::FullMesh, 4), Err(CablingError::TooFewPorts { need: 3, have: 2, .. })));
        let e = check_cluster(&roce, Topology::Ring, 4).unwrap_err();
        assert_eq!(e, CablingError::NcclNeedsSwitch { fabric: "cx7-roce".into(), topology: Topology::Ring, nodes: 4 });
        assert!(e.to_string().contains("at most 3 nodes (4 asked as a ring)"), "{e}");
        assert!(e.fix().contains("topology = \"switch\""), "{}", e.fix());
        assert_eq!(check_cluster(&roce, Topology::Switch, 8), Ok(()));
        // TCP over the same ports is plain IP: the rule is NCCL's, not the cable's.
        assert_eq!(check_cluster(&fabric("cx7-tcp"), Topology::Ring, 4), Ok(()));
    }

    #[test]
    fn cx7_fabrics_need_qsfp_ports() {
        let mac = crate::catalog::catalog().node("m3-ultra-80c-256gb").expect("catalog node").clone();
        let e = check_node(&mac, &fabric("cx7-roce-x4"), Topology::FullMesh, 2).unwrap_err();
        assert!(matches!(e, CablingError::NoQsfpPorts { .. }), "{e}");
    }
}
