//! The network and the collectives: the cluster's resources in a task graph, routes over the
//! topology, point-to-point sends and the all-reduce / all-gather algorithms of each backend.

use crate::hw::{Backend, Topology};
use crate::llm::Op;
use crate::sim::{ResourceId, ResourceKind, TaskGraph, TaskId, Time};

use super::lowered::{Lowered, Segment};
use super::options::{AllReduceAlgo, CollectiveLowering};
use super::plan::Plan;

/// Resources of the cluster in a graph.
pub(super) struct Net {
    pub(super) gpu: Vec<ResourceId>,
    pub(super) cpu: Vec<ResourceId>,
    /// `links[a * n + b]`: the a->b direction (mesh, ring neighbours); for a switch the uplink
    /// of `a` is stored at `links[a * n + a]`.
    pub(super) links: Vec<Option<ResourceId>>,
    pub(super) n: usize,
    pub(super) topology: Topology,
    /// Cables lost to a fault (see [`Plan::lost_links`]).
    lost: Vec<(usize, usize)>,
}

impl Net {
    pub(super) fn new(g: &mut TaskGraph, plan: &Plan) -> Net {
        let n = plan.n();
        let gpu = (0..n).map(|i| g.add_resource(format!("node{i}.gpu"), ResourceKind::Gpu, i as u32)).collect();
        let cpu = (0..n).map(|i| g.add_resource(format!("node{i}.cpu"), ResourceKind::Cpu, i as u32)).collect();
        let mut links = vec![None; n * n];
        let lost = |a: usize, b: usize| plan.lost_links.iter().any(|&(p, q)| (p, q) == (a, b) || (q, p) == (a, b));
        match plan.topology {
            Topology::FullMesh => {
                for a in 0..n {
                    for b in 0..n {
                        if a != b && !lost(a, b) {
                            links[a * n + b] = Some(g.add_resource(format!("link {a}->{b}"), ResourceKind::Link, a as u32));
                        }
                    }
                }
            }
            Topology::Ring => {
                for a in 0..n {
                    for b in [(a + 1) % n, (a + n - 1) % n] {
                        if a != b && links[a * n + b].is_none() && !lost(a, b) {
                            links[a * n + b] = Some(g.add_resource(format!("link {a}->{b}"), ResourceKind::Link, a as u32));
                        }
                    }
                }
            }
            Topology::Switch => {
                for a in (0..n).filter(|&a| !lost(a, n)) {
                    links[a * n + a] = Some(g.add_resource(format!("uplink {a}"), ResourceKind::Link, a as u32));
                }
            }
            Topology::None => {}
        }
        Net { gpu, cpu, links, n, topology: plan.topology, lost: plan.lost_links.clone() }
    }

    /// Link resources a message from `a` to `b` crosses, in order, each with its cable (the
    /// unordered node pair; `(a, n)` for node a's cable to a switch).
    pub(super) fn route(&self, a: usize, b: usize) -> Vec<(ResourceId, (usize, usize))> {
        let n = self.n;
        let cable = |x: usize, y: usize| (x.min(y), x.max(y));
        if !self.lost.is_empty() {
            return self.detour(a, b);
        }
        match self.topology {
            Topology::FullMesh => vec![(self.links[a * n + b].expect("mesh link"), cable(a, b))],
            // Switched fabrics: the sender's uplink carries the message (incast at the
            // receiver is not modelled).
            Topology::Switch => vec![(self.links[a * n + a].expect("uplink"), (a, n))],
            Topology::Ring => {
                let fwd = (b + n - a) % n;
                let step = if fwd <= n - fwd { 1 } else { n - 1 };
                let mut out = Vec::new();
                let mut cur = a;
                while cur != b {
                    let next = (cur + step) % n;
                    out.push((self.links[cur * n + next].expect("ring link"), cable(cur, next)));
                    cur = next;
                }
                out
            }
            Topology::None => Vec::new(),
        }
    }

    /// The route around lost cables: the node path of [`crate::hw::route_around`], hop by hop
    /// (store-and-forward through the peer); on a switch only the senders' uplinks are
    /// resources, as without faults. No backend is known to forward through a peer (JACCL has
    /// no forwarding; no runtime source routes TCP through a node), so the fault simulation
    /// never plans a step across a lost cable it needs: this is for what-if studies only.
    fn detour(&self, a: usize, b: usize) -> Vec<(ResourceId, (usize, usize))> {
        let n = self.n;
        let path = crate::hw::route_around(self.topology, n, a, b, &self.lost).expect("a detour is planned for connected clusters only");
        path.windows(2)
            .filter(|w| w[0] < n)
            .map(|w| {
                let (x, y) = (w[0], w[1]);
                let link = if y == n { self.links[x * n + x] } else { self.links[x * n + y] };
                (link.expect("a link on the detour"), (x.min(y), x.max(y)))
            })
            .collect()
    }
}

/// Builds graph pieces for one step.
pub(super) struct Builder<'a> {
    pub(super) plan: &'a Plan,
    pub(super) g: TaskGraph,
    pub(super) net: Net,
    pub(super) gpu_tasks: Vec<(TaskId, usize)>,
    pub(super) segments: Vec<Segment>,
    /// `(task, node)` of every per-step host task (re-timed per batch by [`Lowered::retime_rows`]).
    pub(super) host_tasks: Vec<(TaskId, usize)>,
    /// Per node, its host's launch stream for the whole step, where the host launches ahead
    /// across the step's collectives ([`Builder::dispatch_ahead`]).
    pub(super) dispatch_tasks: Vec<Option<TaskId>>,
    pub(super) bytes_sent: u64,
    /// Cables the step's messages cross (unordered node pairs, see [`Net::route`]).
    pub(super) cables_crossed: std::collections::BTreeSet<(usize, usize)>,
    /// Collectives sit between kernels (a forward pass) rather than alone (a microbenchmark).
    pub(super) in_context: bool,
    /// Every rank is the same machine ([`crate::hw::NodeSpec::times_like`]: its memory size
    /// aside) with the same chip and runtime parameters, no cable is lost and the plan asks for
    /// collapsed collectives: see [`Builder::collapsible`].
    symmetric_ranks: bool,
}

impl<'a> Builder<'a> {
    pub(super) fn new(plan: &'a Plan) -> Self {
        let mut g = TaskGraph::new();
        let net = Net::new(&mut g, plan);
        let same =
            |i: usize| plan.nodes[i].times_like(&plan.nodes[0]) && plan.chips[i] == plan.chips[0] && plan.runtimes[i] == plan.runtimes[0];
        let symmetric_ranks = plan.collectives == CollectiveLowering::Collapsed && plan.lost_links.is_empty() && (0..plan.n()).all(same);
        Builder {
            plan,
            g,
            net,
            gpu_tasks: Vec::new(),
            segments: Vec::new(),
            host_tasks: Vec::new(),
            dispatch_tasks: vec![None; plan.n()],
            bytes_sent: 0,
            cables_crossed: Default::default(),
            in_context: true,
            symmetric_ranks,
        }
    }

    /// Whether a collective may run as O(N) tasks ([`CollectiveLowering::Collapsed`]): the
    /// ranks are symmetric (same node, chip and runtime parameters; no lost cable) and every
    /// message it sends (rank i to i+1 for a ring; to every peer when `every_peer`) is one hop on
    /// a link resource no other of its messages uses. Then every message costs the same
    /// `hop_ns`, no two contend, and the full graph is a circulant max-plus system: a rank's
    /// result is `max_j(start_j + c[(i - j) mod N])` with `max_m c[m]` the same total `T` for
    /// every rank. Collapsed, a rank ends at `max_j start_j + T` (a ring) or at the later of its
    /// own posts and the others' last messages (an exchange): the collective's last end is
    /// exact for any start times, each rank's own end exact when the inputs are ready at one
    /// instant (a tensor-parallel step of identical ranks, a pipeline's gather after its last
    /// stage) and otherwise no earlier than in the full graph.
    ///
    /// From 3 ranks only: at 2 the collapsed graph has as many tasks as the full one, and with
    /// jitter the full one lets a late rank skip its peer's hop (its message is in already),
    /// where the collapsed one charges every rank the last rank's time.
    fn collapsible(&self, every_peer: bool) -> bool {
        let n = self.net.n;
        if !self.symmetric_ranks || n < 3 {
            return false;
        }
        let pairs: Vec<(usize, usize)> = if every_peer {
            (0..n).flat_map(|i| (1..n).map(move |k| (i, (i + k) % n))).collect()
        } else {
            (0..n).map(|i| (i, (i + 1) % n)).collect()
        };
        let mut links = Vec::with_capacity(pairs.len());
        for (a, b) in pairs {
            match self.net.route(a, b).as_slice() {
                [(link, _)] => links.push(*link),
                _ => return false,
            }
        }
        links.sort_unstable();
        links.windows(2).all(|w| w[0] != w[1])
    }

    /// The one link a message from `a` to `b` crosses (a collapsible collective's), its cable
    /// recorded as crossed and `bytes` counted as sent.
    fn direct_link(&mut self, a: usize, b: usize, bytes: u64) -> ResourceId {
        let (link, cable) = self.net.route(a, b)[0];
        self.cables_crossed.insert(cable);
        self.bytes_sent += bytes;
        link
    }

    pub(super) fn gpu(&mut self, node: usize, ops: impl Into<std::sync::Arc<[Op]>>, logits_all_tokens: bool, deps: &[TaskId]) -> TaskId {
        let seg = self.segments.len();
        self.segments.push(Segment { node, ops: ops.into(), logits_all_tokens });
        let t = self.g.compute(self.net.gpu[node], 0, "compute", deps);
        self.gpu_tasks.push((t, seg));
        t
    }

    pub(super) fn cpu(&mut self, node: usize, ns: Time, label: &'static str, deps: &[TaskId]) -> TaskId {
        self.g.compute(self.net.cpu[node], ns, label, deps)
    }

    /// The host's launch stream of a whole step on `node`, begun with the step, where the
    /// runtime launches each kernel from the host (a CUDA engine run eagerly): returns the
    /// task the step's end must wait for, `None` where launches cost the host nothing. NCCL
    /// collectives are enqueued on the CUDA stream like any kernel (asynchronous to the host),
    /// so a tensor-parallel rank's host launches on through them and its step takes the longer
    /// of its GPU timeline (compute and collectives) and its launches, as one GPU's does
    /// ([`super::cost::LaunchCost`]). Timed by [`Lowered::retime_rows`].
    pub(super) fn dispatch_ahead(&mut self, node: usize) -> Option<TaskId> {
        self.dispatch_ahead_after(node, &[])
    }

    /// [`Self::dispatch_ahead`] begun once `deps` are done (a pipeline stage's host launches
    /// after the stage before it has launched and sent its hand-off's metadata).
    pub(super) fn dispatch_ahead_after(&mut self, node: usize, deps: &[TaskId]) -> Option<TaskId> {
        if self.plan.cost(node).launch.dispatch_us <= 0.0 {
            return None;
        }
        let t = self.cpu(node, 0, "dispatch", deps);
        self.dispatch_tasks[node] = Some(t);
        Some(t)
    }

    /// The runtime's host work after a forward on `node` (timed for one sampling sequence until
    /// [`Lowered::retime_rows`] sets it for the batch).
    pub(super) fn host(&mut self, node: usize, deps: &[TaskId]) -> TaskId {
        let t = self.cpu(node, self.plan.cost(node).host_ns(1), "host", deps);
        self.host_tasks.push((t, node));
        t
    }

    /// A message from `a` to `b`; returns the task at which it has arrived. Each hop runs at its
    /// link's rate ([`Plan::link_cost`]: the fabric's, capped by the slower port at its ends);
    /// on a switch the message leaves `a`'s port and enters `b`'s, so the slower of the two.
    pub(super) fn send(&mut self, a: usize, b: usize, bytes: u64, deps: &[TaskId]) -> TaskId {
        let route = self.net.route(a, b);
        let n = self.net.n;
        let mut last = None;
        // Multi-hop routes (rings) are store-and-forward at message level.
        for (link, cable) in route {
            let (x, y) = cable;
            let d = if y == n { self.plan.link_cost(x, b).hop_ns(bytes) } else { self.plan.link_cost(x, y).hop_ns(bytes) };
            self.cables_crossed.insert(cable);
            let dep: Vec<TaskId> = match last {
                Some(t) => vec![t],
                None => deps.to_vec(),
            };
            last = Some(self.g.transfer(link, d, bytes, &dep));
            self.bytes_sent += bytes;
        }
        last.unwrap_or_else(|| self.g.join(deps))
    }

    // Ranks are indices into several per-rank arrays at once; index loops read best here.
    #[allow(clippy::needless_range_loop)]
    /// An all_sum of `bytes` per rank across all nodes. `ready[i]` is when rank i's GPU has its
    /// input; returns when each rank's GPU has the sum.
    pub(super) fn all_sum(&mut self, ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let n = self.net.n;
        if n == 1 {
            return ready.to_vec();
        }
        let plan = self.plan;
        let cost = plan.net_cost();
        if plan.options.kind.runtime().gpu_collectives() {
            return self.nccl_all_sum(ready, bytes);
        }
        let context_ns = if self.in_context { cost.in_context_ns() } else { 0 };
        let synced: Vec<TaskId> = (0..n).map(|i| self.cpu(i, self.plan.cost(i).sync_ns() + context_ns, "gpu->cpu", &[ready[i]])).collect();
        // The algorithm follows the cables, not the label: where every pair of ranks has a
        // cable of its own (a full mesh, a ring of 2 or 3) JACCL runs its fully connected
        // algorithm; a longer ring runs the ring algorithm (mlx PR 3094), as TCP always does.
        let algo = if self.plan.fabric.backend != Backend::Jaccl || !self.plan.topology.every_pair_cabled(n) {
            AllReduceAlgo::Ring
        } else if self.plan.options.allreduce == AllReduceAlgo::ReduceScatterAllGather && bytes <= 32 * 1024 {
            AllReduceAlgo::FullyConnected
        } else {
            self.plan.options.allreduce
        };
        let reduce_ns = |b: u64| cost.reduce_ns(b);
        let peer_ns = cost.post_ns();
        let reduced: Vec<TaskId> = match algo {
            AllReduceAlgo::FullyConnected => {
                let arrivals = self.exchange(&synced, bytes, peer_ns);
                (0..n).map(|i| self.cpu(i, reduce_ns(bytes * (n as u64 - 1)), "reduce", &arrivals[i])).collect()
            }
            AllReduceAlgo::ReduceScatterAllGather => {
                let chunk = bytes.div_ceil(n as u64);
                let arrivals = self.exchange(&synced, chunk, peer_ns);
                let rs: Vec<TaskId> = (0..n).map(|i| self.cpu(i, reduce_ns(chunk * (n as u64 - 1)), "reduce", &arrivals[i])).collect();
                let arrivals = self.exchange(&rs, chunk, peer_ns);
                (0..n).map(|i| self.g.join(&arrivals[i])).collect()
            }
            AllReduceAlgo::Ring => {
                // Reduce-scatter (N-1 steps, each received chunk reduced on the CPU), then
                // all-gather (N-1 steps).
                let chunk = bytes.div_ceil(n as u64);
                if self.collapsible(false) {
                    self.collapsed_ring(&synced, 2 * (n - 1), chunk, (n - 1) as u32, reduce_ns(chunk))
                } else {
                    let mut have: Vec<TaskId> = synced.clone();
                    let mut last_send: Vec<Option<TaskId>> = vec![None; n];
                    for step in 0..2 * (n - 1) {
                        let reduce = (step < n - 1).then(|| reduce_ns(chunk));
                        have = self.ring_step(&have, &mut last_send, chunk, reduce);
                    }
                    have
                }
            }
        };
        (0..n).map(|i| self.g.compute(self.net.gpu[i], self.plan.cost(i).sync_ns(), "cpu->gpu", &[reduced[i]])).collect()
    }

    /// An NCCL all-reduce of `bytes` per rank (the CUDA engines): kernels on each rank's GPU
    /// stream, no CPU crossing; every rank starts once the slowest has its input and holds its
    /// GPU for [`super::cost::NetCost::nccl_all_reduce_ns`].
    fn nccl_all_sum(&mut self, ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let ranks: Vec<usize> = (0..self.net.n).collect();
        self.nccl_all_sum_among(&ranks, ready, bytes)
    }

    /// An NCCL all-reduce of `bytes` per rank among `ranks` (a tensor-parallel group: one
    /// pipeline stage's ranks), `ready[k]` when `ranks[k]` has its input; returns when each has
    /// the sum. As [`Self::nccl_all_sum`], timed for the group's size.
    pub(super) fn nccl_all_sum_among(&mut self, ranks: &[usize], ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let ns = self.plan.net_cost().nccl_all_reduce_ns(bytes, ranks.len());
        self.nccl_among(ranks, ready, ns, "nccl all-reduce")
    }

    /// An NCCL all-gather among `ranks` whose gathered result is `bytes` (each rank brings
    /// `bytes / ranks`), `ready[k]` when `ranks[k]` has its part; returns when each has the
    /// whole ([`super::cost::NetCost::nccl_all_gather_ns`]), on every rank's GPU stream.
    pub(super) fn nccl_all_gather_among(&mut self, ranks: &[usize], ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let ns = self.plan.net_cost().nccl_all_gather_ns(bytes, ranks.len());
        self.nccl_among(ranks, ready, ns, "nccl all-gather")
    }

    /// An NCCL collective of `ns` among `ranks` (none on one rank): every rank starts once the
    /// slowest has its input and holds its GPU stream for `ns`.
    fn nccl_among(&mut self, ranks: &[usize], ready: &[TaskId], ns: crate::sim::Time, label: &'static str) -> Vec<TaskId> {
        if ranks.len() == 1 {
            return ready.to_vec();
        }
        let all = self.g.join(ready);
        ranks.iter().map(|&i| self.g.compute(self.net.gpu[i], ns, label, &[all])).collect()
    }

    /// An NCCL point-to-point send of `bytes` from `a` to `b` (a pipeline stage's hand-off)
    /// once `deps` are done: NCCL's send and receive kernels hold both GPU streams until the
    /// bytes have arrived; the graph keeps the receiver's, the one the next stage waits on,
    /// for [`super::cost::NetCost::nccl_send_ns`]. Records the cables the route crosses.
    pub(super) fn nccl_send(&mut self, a: usize, b: usize, bytes: u64, deps: &[TaskId]) -> TaskId {
        for (_, cable) in self.net.route(a, b) {
            self.cables_crossed.insert(cable);
        }
        let ns = self.plan.net_cost().nccl_send_ns(bytes);
        self.g.compute(self.net.gpu[b], ns, "nccl send", deps)
    }

    /// Every rank sends `bytes` to every peer once `ready[rank]` is done; posts run one after
    /// another on the sender's CPU. Returns, per rank, what it must wait for before reducing:
    /// the arrivals from its peers and its own last post (the same thread posts, then reduces).
    pub(super) fn exchange(&mut self, ready: &[TaskId], bytes: u64, post_ns: Time) -> Vec<Vec<TaskId>> {
        let n = self.net.n;
        if self.collapsible(true) {
            return self.collapsed_exchange(ready, bytes, post_ns);
        }
        let mut arrivals: Vec<Vec<TaskId>> = vec![Vec::new(); n];
        let mut last_post = Vec::with_capacity(n);
        for (i, &r) in ready.iter().enumerate() {
            let mut posted = r;
            for k in 1..n {
                let j = (i + k) % n;
                posted = self.cpu(i, post_ns, "post", &[posted]);
                arrivals[j].push(self.send(i, j, bytes, &[posted]));
            }
            last_post.push(posted);
        }
        for (a, p) in arrivals.iter_mut().zip(last_post) {
            a.push(p);
        }
        arrivals
    }

    /// An all_gather of `bytes` per rank (ring, N-1 steps).
    pub(super) fn all_gather(&mut self, ready: &[TaskId], bytes: u64) -> Vec<TaskId> {
        let n = self.net.n;
        if n == 1 {
            return ready.to_vec();
        }
        let synced: Vec<TaskId> = (0..n).map(|i| self.cpu(i, self.plan.cost(i).sync_ns(), "gpu->cpu", &[ready[i]])).collect();
        let have = if self.collapsible(false) {
            self.collapsed_ring(&synced, n - 1, bytes, 0, 0)
        } else {
            let mut have = synced;
            let mut last_send: Vec<Option<TaskId>> = vec![None; n];
            for _ in 0..n - 1 {
                have = self.ring_step(&have, &mut last_send, bytes, None);
            }
            have
        };
        (0..n).map(|i| self.g.compute(self.net.gpu[i], self.plan.cost(i).sync_ns(), "cpu->gpu", &[have[i]])).collect()
    }

    /// [`Self::exchange`] collapsed (see [`Self::collapsible`]): each rank posts its N-1
    /// messages as one CPU task once it is ready (N-1 posts, one jitter draw of the chain's
    /// sigma) and the last of them crosses its link (`hop_ns`, carrying the N-1 messages'
    /// bytes); a rank then waits for its own posts and for every other rank's last message
    /// (prefix and suffix joins: O(N)). Symmetric, every message into a rank has arrived by
    /// then: the last posted one, from the peer N-1 ahead, arrives at `(N-1) post + hop` like
    /// these. A late rank thus skips its peers' hop, as in the full graph (their messages are in).
    fn collapsed_exchange(&mut self, ready: &[TaskId], bytes: u64, post_ns: Time) -> Vec<Vec<TaskId>> {
        let n = self.net.n;
        let hop = self.plan.net_cost().hop_ns(bytes);
        let peers = n as u64 - 1;
        let mut posted = Vec::with_capacity(n);
        let mut sent = Vec::with_capacity(n);
        for (i, &r) in ready.iter().enumerate() {
            for k in 1..n - 1 {
                let (_, cable) = self.net.route(i, (i + k) % n)[0];
                self.cables_crossed.insert(cable);
            }
            let link = self.direct_link(i, (i + n - 1) % n, peers * bytes);
            let p = self.g.compute_merged(self.net.cpu[i], peers * post_ns, peers as u32, "post", &[r]);
            sent.push(self.g.transfer(link, hop, peers * bytes, &[p]));
            posted.push(p);
        }
        // prefix[i]: ranks 0..=i have sent; suffix[i]: ranks i..n have.
        let mut prefix = vec![sent[0]];
        for i in 1..n {
            let p = self.g.join(&[prefix[i - 1], sent[i]]);
            prefix.push(p);
        }
        let mut suffix = vec![sent[n - 1]; n];
        for i in (0..n - 1).rev() {
            suffix[i] = self.g.join(&[suffix[i + 1], sent[i]]);
        }
        (0..n)
            .map(|j| std::iter::once(posted[j]).chain((j > 0).then(|| prefix[j - 1])).chain(suffix.get(j + 1).copied()).collect())
            .collect()
    }

    /// A ring collapsed (see [`Self::collapsible`]): after the last rank is ready, each rank's
    /// `steps` sends of `bytes` to its successor as one transfer (`steps x hop_ns`: its link's
    /// busy time), then its `reduces` reductions of `reduce_ns` each as one CPU task (one
    /// jitter draw with the chain's sigma). Symmetric, a ring step costs hop + reduce (the send
    /// leaves once the previous result is in, the reduce follows its arrival), so every rank
    /// has the result at `steps x hop + reduces x reduce_ns`, as here.
    fn collapsed_ring(&mut self, have: &[TaskId], steps: usize, bytes: u64, reduces: u32, reduce_ns: Time) -> Vec<TaskId> {
        let n = have.len();
        let all = self.g.join(have);
        let steps = steps as u64;
        let hop = self.plan.net_cost().hop_ns(bytes);
        (0..n)
            .map(|i| {
                let link = self.direct_link(i, (i + 1) % n, steps * bytes);
                let sent = self.g.transfer(link, steps * hop, steps * bytes, &[all]);
                if reduces == 0 {
                    sent
                } else {
                    self.g.compute_merged(self.net.cpu[i], u64::from(reduces) * reduce_ns, reduces, "reduce", &[sent])
                }
            })
            .collect()
    }

    /// One step of a ring: every rank i sends `bytes` to rank i+1 once it has its data and its
    /// previous send has left (a rank's sends leave in order on its link: one socket / queue
    /// pair); the receiver then reduces on its CPU for `reduce` ns, or only joins. Returns, per
    /// rank, when it has the step's result.
    fn ring_step(&mut self, have: &[TaskId], last_send: &mut [Option<TaskId>], bytes: u64, reduce: Option<Time>) -> Vec<TaskId> {
        let n = have.len();
        let mut next = have.to_vec();
        for i in 0..n {
            let j = (i + 1) % n;
            let deps: Vec<TaskId> = std::iter::once(have[i]).chain(last_send[i]).collect();
            let x = self.send(i, j, bytes, &deps);
            last_send[i] = Some(x);
            next[j] = match reduce {
                Some(ns) => self.cpu(j, ns, "reduce", &[x, have[j]]),
                None => self.g.join(&[x, have[j]]),
            };
        }
        next
    }

    pub(super) fn finish(self, tokens: u64) -> Lowered {
        Lowered {
            graph: self.g,
            gpu_tasks: self.gpu_tasks,
            segments: self.segments,
            host_tasks: self.host_tasks,
            dispatch_tasks: self.dispatch_tasks,
            tokens,
            bytes_sent: self.bytes_sent,
            cables_crossed: self.cables_crossed.into_iter().collect(),
            seg_parts: Vec::new(),
            ctx_ops: Vec::new(),
            head_rows: 0,
            node_tokens: Vec::new(),
            routed_tokens: None,
        }
    }
}
