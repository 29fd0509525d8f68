//! What messages cost: one hop on the fabric (an RDMA or a TCP message), the CPU side of
//! collectives (posting a peer's transfer, reducing received bytes, the hand-offs of a collective
//! between kernels) and llama.cpp RPC calls.

use crate::hw::{Backend, FabricSpec, Transport};
use crate::profile::CommParams;
use crate::sim::Time;

use super::us_to_ns;

/// The cost model of the cluster's fabric and collectives. Built by
/// [`crate::engine::Plan::net_cost`] (the cluster's slowest link) and
/// [`crate::engine::Plan::link_cost`] (one link); all durations are nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct NetCost<'a> {
    /// The fabric (transport, backend, latency).
    pub fabric: &'a FabricSpec,
    /// Software costs of messages and collectives.
    pub comm: &'a CommParams,
    /// Achieved bandwidth of the link(s) timed, GB/s (bytes/ns): the fabric's, capped by the
    /// slower port at a link's ends ([`FabricSpec::link_gbs`]).
    pub bandwidth_gbs: f64,
}

impl<'a> NetCost<'a> {
    /// The cost model of a link running at the fabric's own bandwidth (every port keeps up).
    pub fn new(fabric: &'a FabricSpec, comm: &'a CommParams) -> NetCost<'a> {
        NetCost { fabric, comm, bandwidth_gbs: fabric.bandwidth_gbs }
    }
}

impl NetCost<'_> {
    /// One message of `bytes` on one hop, ns: a Hockney alpha-beta cost, a fixed start-up
    /// (alpha) plus the bytes at the link's bandwidth (beta).
    ///
    /// RDMA: alpha = the wire latency + one JACCL software round (`jaccl_round_us`: post,
    /// completion poll, wake-up) per message. The frames of a message stream back to back: a
    /// 4 KiB frame on macOS 26.2 is a unit of the NIC, not a round trip of the software, and
    /// ib_send_bw reaches 75 Gbit/s (the catalog's 9.375 GB/s) at 64 KiB messages; a JACCL link
    /// moves "approximately 6.1-6.5 GB/s" with "27-31 us" latency (omlx PR 3118) and a 4-node
    /// 256 MB all-reduce reaches 12.2 GB/s algorithm bandwidth (mlx PR 3412), so bulk traffic
    /// runs near the link rate and small messages pay about one round (FACTS.md, tb5-rdma).
    /// Timing a round per window of frames instead capped a link near 0.5 GB/s and made RDMA
    /// prefill slower than TCP on the same cables. The frame size stays in the fault model,
    /// where FACTS gives it an effect (RDMA instability).
    ///
    /// RDMA under another library (ConnectX-7 RoCE, NCCL's fabrics): alpha = the wire latency
    /// alone. `jaccl_round_us` was fitted on JACCL over Thunderbolt 5 and describes JACCL's
    /// software, not a verbs round on a CX-7 (whose `ib_write_lat` floor the catalog latency
    /// already is, FACTS-2026 B3); NCCL's own software costs are its priors in `engine::cost::nccl`.
    ///
    /// TCP: alpha = the wire latency + one message's software cost (syscalls, copies).
    ///
    /// With an RDMA alpha below the TCP one and an RDMA bandwidth above it (every catalog pair
    /// of fabrics on the same cables), RDMA is never slower than TCP, at any size.
    pub fn hop_ns(&self, bytes: u64) -> Time {
        let wire = bytes as f64 / self.bandwidth_gbs;
        let alpha_us = match self.fabric.transport {
            Transport::Rdma if self.fabric.backend == Backend::Jaccl => self.fabric.latency_us + self.comm.jaccl_round_us,
            Transport::Rdma => self.fabric.latency_us,
            Transport::Tcp => self.fabric.latency_us + self.comm.tcp_message_us,
            Transport::None => return 0,
        };
        (alpha_us * 1e3 + wire).round() as Time
    }

    /// An NCCL all-reduce of `bytes` (each rank's buffer) over `ranks` ranks, one per node, ns:
    /// tree on the LL protocol for small messages, ring on Simple for bulk, the cheaper one (the
    /// model and its sources: `engine::cost::nccl`). 0 on one rank.
    pub fn nccl_all_reduce_ns(&self, bytes: u64, ranks: usize) -> Time {
        self.nccl_all_reduce(bytes, ranks).ns
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm() -> CommParams {
        let mut c = crate::profile::Profile::default_profile().comm;
        c.jaccl_round_us = 15.0;
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
    fn an_rdma_hop_pays_one_latency_and_one_round_plus_the_wire() {
        let (f, c) = (fabric("tb5-rdma", 5.0, 10.0), comm());
        let net = NetCost::new(&f, &c);
        // (5 + 15) us, plus 20,480 B / 10 B/ns: the frames do not add rounds.
        assert_eq!(net.hop_ns(5 * 4096), 20_000 + 2_048);
        // An empty message still takes one round.
        assert_eq!(net.hop_ns(0), 20_000);
    }

    #[test]
    fn jaccls_round_stays_off_connectx7_and_nccls_priors_off_every_hop() {
        let cat = crate::catalog::catalog();
        let (roce, tb5) = (cat.fabric("cx7-roce").unwrap().clone(), cat.fabric("tb5-rdma").unwrap().clone());
        let (c, mut other) = (comm(), comm());
        other.jaccl_round_us += 100.0;
        other.nccl_base_us += 100.0;
        other.nccl_simple_us += 100.0;
        other.nccl_ll_gbs *= 2.0;
        let (a, b) = (NetCost::new(&roce, &c), NetCost::new(&roce, &other));
        // A CX-7 RoCE hop: its wire latency (6.73 us) and bytes, no JACCL round, no NCCL prior.
        assert_eq!(a.hop_ns(23_730), 6_730 + 1_000);
        assert_eq!(a.hop_ns(1 << 20), b.hop_ns(1 << 20));
        // NCCL's collectives never read JACCL's round: only the NCCL priors move them.
        let mut jaccl_only = c.clone();
        jaccl_only.jaccl_round_us += 100.0;
        let j = NetCost::new(&roce, &jaccl_only);
        assert_eq!(a.nccl_all_reduce_ns(16 << 10, 2), j.nccl_all_reduce_ns(16 << 10, 2));
        assert_eq!(a.nccl_send_ns(32 << 10), j.nccl_send_ns(32 << 10));
        assert!(b.nccl_all_reduce_ns(16 << 10, 2) > a.nccl_all_reduce_ns(16 << 10, 2));
        // JACCL over Thunderbolt 5 keeps its round; the NCCL priors leave its hops alone.
        let (t, u) = (NetCost::new(&tb5, &c), NetCost::new(&tb5, &other));
        assert_eq!(u.hop_ns(4096) - t.hop_ns(4096), 100_000);
        let mut nccl_only = c.clone();
        nccl_only.nccl_base_us += 100.0;
        assert_eq!(NetCost::new(&tb5, &nccl_only).hop_ns(4096), t.hop_ns(4096));
    }

    #[test]
    fn a_64_mib_message_on_tb5_rdma_runs_at_the_link_rate_plus_one_alpha() {
        // The catalog's tb5-rdma: ib_send_lat 4.64 us, ib_send_bw 75 Gbit/s = 9.375 GB/s.
        let f = crate::catalog::catalog().fabric("tb5-rdma").unwrap().clone();
        let c = comm();
        let net = NetCost::new(&f, &c);
        let bytes = 64u64 << 20;
        // 67,108,864 B / 9.375 B/ns = 7,158,278.8 ns; alpha = (4.64 + 15) us = 19,640 ns.
        assert_eq!(net.hop_ns(bytes), 7_158_279 + 19_640);
        // Effective bandwidth ~9.35 GB/s: within 0.3% of the link rate.
        let gbs = bytes as f64 / net.hop_ns(bytes) as f64;
        assert!((9.3..9.375).contains(&gbs), "{gbs}");
    }

    #[test]
    fn rdma_is_never_slower_than_tcp_on_the_same_cables_at_any_size() {
        let cat = crate::catalog::catalog();
        let c = crate::profile::Profile::default_profile().comm;
        for (rdma, tcp) in [("tb5-rdma", "tb5-tcp"), ("cx7-roce", "cx7-tcp")] {
            let (r, t) = (cat.fabric(rdma).unwrap().clone(), cat.fabric(tcp).unwrap().clone());
            let (r, t) = (NetCost::new(&r, &c), NetCost::new(&t, &c));
            // 1 B .. 1 GiB, every power of two and its neighbours.
            for shift in 0..=30 {
                for bytes in [(1u64 << shift).saturating_sub(1), 1 << shift, (1 << shift) + 1] {
                    assert!(r.hop_ns(bytes) <= t.hop_ns(bytes), "{rdma} {bytes} B: {} > {tcp} {}", r.hop_ns(bytes), t.hop_ns(bytes));
                }
            }
        }
    }

    #[test]
    fn a_tcp_hop_pays_one_latency_and_one_message_cost_plus_the_wire() {
        let (f, c) = (fabric("tb5-tcp", 100.0, 5.0), comm());
        let net = NetCost::new(&f, &c);
        assert_eq!(net.hop_ns(20_480), 100_000 + 20_000 + 4_096);
        let none = FabricSpec { transport: Transport::None, ..f.clone() };
        assert_eq!(NetCost::new(&none, net.comm).hop_ns(20_480), 0);
    }

    #[test]
    fn collective_and_rpc_costs_are_the_profile_values() {
        let (f, c) = (fabric("tb5-rdma", 5.0, 10.0), comm());
        let net = NetCost::new(&f, &c);
        assert_eq!(net.post_ns(), 3_000);
        // 1 MB at 20 GB/s (20 bytes/ns).
        assert_eq!(net.reduce_ns(1_000_000), 50_000);
        assert_eq!(net.in_context_ns(), 100_000);
        assert_eq!(net.rpc_half_call_ns(), 50_000);
        assert_eq!(net.rpc_graph_bytes(10), 640);
        assert_eq!(net.rpc_deserialize_ns(10), 50_000 + 25_000);
    }
}
