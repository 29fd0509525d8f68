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
pub use topology::{Topology, cabling, connected, fully_cabled_sets, route_around};

/// Hardware cost of a cluster, USD: node prices (summed in order), cables, and a switch for a
/// switched fabric of 2+ nodes. No simulation: planners prune by budget with it before
/// estimating, and `estimate::hardware_cost` is this function, so the two never disagree.
pub fn cluster_cost<'a>(nodes: impl ExactSizeIterator<Item = &'a NodeSpec>, fabric: &FabricSpec, topology: Topology) -> f64 {
    let n = nodes.len();
    let cables = topology.cables(n);
    let mut cost: f64 = nodes.map(|x| x.price_usd).sum::<f64>() + cables as f64 * fabric.cable_usd;
    if topology == Topology::Switch && n > 1 {
        cost += fabric.switch_usd;
    }
    cost
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

    #[test]
    fn a_lost_mesh_cable_detours_through_the_lowest_peer() {
        assert_eq!(route_around(Topology::FullMesh, 4, 0, 1, &[]), Some(vec![0, 1]));
        assert_eq!(route_around(Topology::FullMesh, 4, 0, 1, &[(1, 0)]), Some(vec![0, 2, 1]));
        assert_eq!(route_around(Topology::FullMesh, 4, 0, 1, &[(0, 1), (0, 2)]), Some(vec![0, 3, 1]));
        // Node 0 cut off: three cables gone.
        assert!(!connected(Topology::FullMesh, 4, &[(0, 1), (0, 2), (0, 3)]));
        // A ring of four with 0-1 lost goes the long way; two nodes with their cable lost cannot.
        assert_eq!(route_around(Topology::Ring, 4, 0, 1, &[(0, 1)]), Some(vec![0, 3, 2, 1]));
        assert!(!connected(Topology::Ring, 2, &[(0, 1)]));
        // A switch: a node's cable to the switch (vertex n) lost isolates it.
        assert_eq!(route_around(Topology::Switch, 3, 0, 2, &[]), Some(vec![0, 3, 2]));
        assert!(!connected(Topology::Switch, 3, &[(1, 3)]));
        // Fully cabled sets, largest first: a 4-node mesh without 0-1 keeps two triangles; an
        // 8-node ring with two cuts keeps its adjacent pairs; a 3-node ring is a triangle.
        let sets = fully_cabled_sets(Topology::FullMesh, 4, &[(1, 0)]);
        assert_eq!(sets[..2], [vec![0, 2, 3], vec![1, 2, 3]]);
        assert_eq!(sets.len(), 2 + 5 + 4);
        let sets = fully_cabled_sets(Topology::Ring, 8, &[(0, 1), (4, 5)]);
        assert_eq!(sets[0], vec![0, 7]);
        assert_eq!(sets.iter().filter(|s| s.len() == 2).count(), 6);
        assert!(sets.iter().all(|s| s.len() <= 2));
        assert_eq!(fully_cabled_sets(Topology::Ring, 3, &[])[0], vec![0, 1, 2]);
        assert_eq!(fully_cabled_sets(Topology::Switch, 3, &[(1, 3)]), [vec![0, 2], vec![0], vec![2]]);
        assert!(Topology::Ring.every_pair_cabled(3) && !Topology::Ring.every_pair_cabled(4));
    }
}
