//! What messages cost: one hop on the fabric (RDMA rounds or a TCP message), the CPU side of
//! collectives (posting a peer's transfer, reducing received bytes, the hand-offs of a collective
//! between kernels) and llama.cpp RPC calls.

use crate::hw::{Backend, FabricSpec, Transport};
use crate::profile::CommParams;
use crate::sim::Time;

use super::us_to_ns;

/// Frame of RDMA transports other than JACCL (whose frame is an engine option), bytes.
const RDMA_FRAME_BYTES: u64 = 1 << 20;

/// The cost model of the cluster's fabric and collectives. Built by
/// [`crate::engine::Plan::net_cost`]; all durations are nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct NetCost<'a> {
    /// The fabric (transport, backend, latency, bandwidth).
    pub fabric: &'a FabricSpec,
    /// Software costs of messages and collectives.
    pub comm: &'a CommParams,
    /// JACCL's RDMA frame, bytes (an engine option: it depends on the macOS version).
    pub jaccl_frame_bytes: u64,
}

impl NetCost<'_> {
    /// One message of `bytes` on one hop, ns: the wire time plus, over RDMA, a latency and a
    /// completion round per window of frames, or, over TCP, one latency and one message's
    /// software cost.
    pub fn hop_ns(&self, bytes: u64) -> Time {
        let wire = bytes as f64 / self.fabric.bytes_per_ns();
        let ns = match self.fabric.transport {
            Transport::Rdma => self.rdma_rounds(bytes) as f64 * self.rdma_round_ns() + wire,
            Transport::Tcp => self.fabric.latency_ns() + self.comm.tcp_message_us * 1e3 + wire,
            Transport::None => 0.0,
        };
        ns.round() as Time
    }

    /// CPU time to post and poll one peer's transfer in a collective, ns.
    pub fn post_ns(&self) -> Time {
        us_to_ns(self.comm.jaccl_peer_us)
    }

    /// CPU time to reduce (sum) `bytes` received in an all_sum, ns.
    pub fn reduce_ns(&self, bytes: u64) -> Time {
        (bytes as f64 / self.comm.cpu_reduce_gbs).round() as Time
    }

    /// Extra cost per rank of a collective issued between kernels rather than alone, ns.
    pub fn in_context_ns(&self) -> Time {
        us_to_ns(self.comm.collective_in_context_us)
    }

    /// Half of one blocking llama.cpp RPC call's software cost, ns: what the client and the
    /// server each pay per call.
    pub fn rpc_half_call_ns(&self) -> Time {
        us_to_ns(self.comm.rpc_call_us / 2.0)
    }

    /// Serialized bytes of a GRAPH_COMPUTE call for a graph of `graph_nodes` nodes.
    pub fn rpc_graph_bytes(&self, graph_nodes: u64) -> u64 {
        (graph_nodes as f64 * self.comm.rpc_graph_node_bytes).round() as u64
    }

    /// The server's side of a GRAPH_COMPUTE call for a graph of `graph_nodes` nodes, ns: its half
    /// of the call plus deserializing and rebuilding the graph.
    pub fn rpc_deserialize_ns(&self, graph_nodes: u64) -> Time {
        self.rpc_half_call_ns() + us_to_ns(graph_nodes as f64 * self.comm.rpc_graph_node_us)
    }

    /// Send/completion rounds of one RDMA message of `bytes`: its frames, `jaccl_window` in flight.
    fn rdma_rounds(&self, bytes: u64) -> u64 {
        let frame = if self.fabric.backend == Backend::Jaccl { self.jaccl_frame_bytes } else { RDMA_FRAME_BYTES };
        let frames = bytes.div_ceil(frame).max(1);
        frames.div_ceil(self.comm.jaccl_window.max(1) as u64)
    }

    /// One RDMA round, ns: the wire latency plus JACCL's software round.
    fn rdma_round_ns(&self) -> f64 {
        self.fabric.latency_ns() + self.comm.jaccl_round_us * 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm() -> CommParams {
        let mut c = crate::profile::Profile::default_profile().comm;
        c.jaccl_round_us = 15.0;
        c.jaccl_window = 2;
        c.jaccl_peer_us = 3.0;
        c.cpu_reduce_gbs = 20.0;
        c.tcp_message_us = 20.0;
        c.collective_in_context_us = 100.0;
        c.rpc_call_us = 100.0;
        c.rpc_graph_node_us = 2.5;
        c.rpc_graph_node_bytes = 64.0;
        c
    }

    /// A catalog fabric with round latency (us) and bandwidth (GB/s = bytes/ns).
    fn fabric(id: &str, latency_us: f64, bandwidth_gbs: f64) -> FabricSpec {
        FabricSpec { latency_us, bandwidth_gbs, ..crate::catalog::catalog().fabric(id).unwrap().clone() }
    }

    #[test]
    fn an_rdma_hop_pays_a_latency_and_a_round_per_window_of_frames_plus_the_wire() {
        let (f, c) = (fabric("tb5-rdma", 5.0, 10.0), comm());
        let net = NetCost { fabric: &f, comm: &c, jaccl_frame_bytes: 4096 };
        // 5 frames of 4 KiB, 2 in flight: 3 rounds of (5 + 15) us, plus 20,480 B / 10 B/ns.
        assert_eq!(net.hop_ns(5 * 4096), 3 * 20_000 + 2_048);
        // An empty message still takes one round.
        assert_eq!(net.hop_ns(0), 20_000);
        // RDMA without JACCL frames at 1 MiB: one round.
        let other = FabricSpec { backend: Backend::Ring, ..f.clone() };
        assert_eq!(NetCost { fabric: &other, ..net }.hop_ns(5 * 4096), 20_000 + 2_048);
    }

    #[test]
    fn a_tcp_hop_pays_one_latency_and_one_message_cost_plus_the_wire() {
        let (f, c) = (fabric("tb5-tcp", 100.0, 5.0), comm());
        let net = NetCost { fabric: &f, comm: &c, jaccl_frame_bytes: 4096 };
        assert_eq!(net.hop_ns(20_480), 100_000 + 20_000 + 4_096);
        let none = FabricSpec { transport: Transport::None, ..f.clone() };
        assert_eq!(NetCost { fabric: &none, ..net }.hop_ns(20_480), 0);
    }

    #[test]
    fn collective_and_rpc_costs_are_the_profile_values() {
        let (f, c) = (fabric("tb5-rdma", 5.0, 10.0), comm());
        let net = NetCost { fabric: &f, comm: &c, jaccl_frame_bytes: 4096 };
        assert_eq!(net.post_ns(), 3_000);
        // 1 MB at 20 GB/s (20 bytes/ns).
        assert_eq!(net.reduce_ns(1_000_000), 50_000);
        assert_eq!(net.in_context_ns(), 100_000);
        assert_eq!(net.rpc_half_call_ns(), 50_000);
        assert_eq!(net.rpc_graph_bytes(10), 640);
        assert_eq!(net.rpc_deserialize_ns(10), 50_000 + 25_000);
    }
}
