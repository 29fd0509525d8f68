//! Hardware: nodes (memory, bandwidth, compute, power), fabrics (latency, bandwidth, transport)
//! and topologies (full mesh, ring, switch; ports, cables, routes), and the cabling rules that
//! say whether a set of nodes can be wired as asked. Knows nothing about LLMs.

pub mod cabling;
pub mod fabric;
pub mod node;
pub mod topology;

pub use cabling::CablingError;
pub use fabric::{Backend, FabricSpec, PortKind, Transport};
pub use node::{NodeSpec, Os};
pub use topology::{Topology, cabling};

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
