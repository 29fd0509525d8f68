//! Faults over a long horizon (a scenario's `[faults]`): node crashes and reboots, cables lost
//! and degraded, RDMA instability and Thunderbolt TCP crashes under load, stragglers and thermal
//! throttling, and what each runtime does about them.
//!
//! Days to months run fast because nothing is simulated per token: every distinct state of the
//! cluster (which cables are lost or degraded, whether it is throttled) is run once on the event
//! core (a request's prefill and a sample of its decode steps, [`super::sample_generate`]) to get its request
//! time and link utilisation; the horizon is then advanced from fault event to fault event,
//! requests completing analytically in between. Fault times are competing exponentials drawn
//! from the run's seed ([`crate::sim::FaultDraws`]); repairs take fixed times.
//!
//! Runtime reactions (what a user sees):
//! - a node crash: exo tensor parallel stops the instance and reloads every node once the node
//!   is back; an exo pipeline stalls until that node is back and has reloaded its layers;
//!   llama.cpp RPC fails the request and re-sends the server's tensors over the network.
//!   The interrupted request is retried (`faults.retry`, default) or fails.
//! - a lost cable: a cable the runtime's step does not cross (e.g. a mesh chord under the TCP
//!   ring all-reduce) changes nothing. One it crosses is a lost path for that pair: no backend
//!   forwards through a peer (JACCL over RDMA has no forwarding; no runtime source routes TCP
//!   through a node), so the runtime reacts as it does ([`CableLoss`]): exo tensor parallel
//!   re-places the instance on the largest set of nodes still cabled pair by pair that holds
//!   the model ([`crate::hw::fully_cabled_sets`]), reloading it, or stops until a repair; an exo
//!   pipeline is placed over the fabric's `lost_to` (Wi-Fi, exo issue 2295); llama.cpp RPC fails
//!   requests until the repair. A repair that moves the placement back restarts the runtime
//!   there (another reload).
//! - a degraded cable runs at the fabric's `degrade_to` (RDMA -> TCP). A synchronous
//!   collective waits for its slowest link, so the step is timed with the whole fabric at the
//!   fallback's parameters: exact for fully connected all-reduce, pessimistic for pipelines.
//! - RDMA instability: each RDMA cable fails at `rdma_failures_per_link_hour * u^a *
//!   (frame/4 KiB)^b` (profile `[faults]`), u the cable's utilisation in that state; the
//!   instance restarts and reloads.
//! - Thunderbolt TCP load: each serving node crashes at `u^k / tb_tcp_crash_mean_s`; HPL is
//!   sustained load (u = 1).
//! - Slow states (straggler, throttled, re-placed, degraded, fallback) count the throughput they
//!   lose as time lost, against the fault-free rate, under the most severe cause present, and
//!   their wall time as degraded time (`degraded_s`, by cause).
//!
//! Availability is the share of the horizon spent serving at a useful rate: at least the
//! profile's `faults.useful_rate_fraction` of the fault-free rate. Outages, a stopped
//! instance, requests failing for a lost path and slower states (e.g. Wi-Fi at a few percent
//! of the cables' rate) are not available; goodput counts only tokens delivered.

use std::collections::BTreeMap;

use crate::engine::runtimes::CableLoss;
use crate::engine::{Plan, lower_step};
use crate::hw::{FabricSpec, PortKind, Topology, Transport, cabling, fully_cabled_sets};
use crate::profile::{FaultParams, Profile};
use crate::scenario::{FaultConfig, Scenario, WorkloadKind};
use crate::sim::FaultDraws;
use crate::util::{round3, round6};

use super::types::{FaultLogEntry, FaultReport};

/// Decode steps run per cluster state (spread over the generation; see [`super::sample_generate`]).
const DECODE_SAMPLES: u64 = 8;

/// Log lines kept (the first events of the horizon).
const LOG_LINES: usize = 12;

/// The state of the cables and the heat that decides the cluster's speed. Which cables are
/// degraded does not matter, only whether any is: the step is timed with the whole fabric at
/// the fallback's parameters (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Mode {
    lost: Vec<usize>,
    degraded: bool,
    throttled: bool,
}

/// Where the runtime's instance runs in a mode.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Placement {
    /// On every node, over its cables.
    Whole,
    /// Re-placed on these nodes (every pair cabled).
    Nodes(Vec<usize>),
    /// On every node, over the fabric's `lost_to` (the LAN).
    Lan,
    /// Stopped: no set of nodes still cabled pair by pair holds the model.
    Stopped,
    /// Requests fail until the cable is repaired.
    Failing,
}

/// How fast the cluster serves in a mode.
#[derive(Clone, Debug)]
struct Rate {
    /// Where the instance runs.
    placement: Placement,
    /// Seconds the instance takes to load there (the largest share over its nodes).
    reload_s: f64,
    /// Seconds per request (prompt and generation; HPL: one run).
    request_s: f64,
    /// Average utilisation of a link direction.
    link_util: f64,
    /// Transport of the fabric in use.
    transport: Transport,
    /// The fabric in use is TCP over Thunderbolt.
    tb_tcp: bool,
    /// Cause of the slowdown against the fault-free rate (`None`: full speed).
    cause: Option<&'static str>,
}

/// What interrupts service, and how long the cluster is out.
#[derive(Clone, Copy, Debug)]
enum Hit {
    Crash { node: usize, cause: &'static str },
    Cable { cable: usize },
    Degrade { cable: usize },
    Rdma { cable: usize },
}

/// The fault simulation's state and tallies.
struct FaultSim<'a> {
    s: &'a Scenario,
    cfg: &'a FaultConfig,
    params: &'a FaultParams,
    profile: &'a Profile,
    cables: Vec<(usize, usize)>,
    reload_s: Vec<f64>,
    modes: BTreeMap<Mode, Rate>,
    /// Rates of placements already run on the event core, by (placement, degraded, throttled).
    placed: BTreeMap<(Placement, bool, bool), Rate>,
    /// Per cable: whether the runtime's step crosses it (its loss is a lost path).
    needed: Vec<bool>,
    /// The rate in effect since the last event (what an interrupted request was running at).
    in_effect: Option<Rate>,
    free_request_s: f64,
    draws: FaultDraws,
    t: f64,
    node_up_at: Vec<f64>,
    lost_until: Vec<Option<f64>>,
    degraded_until: Vec<Option<f64>>,
    serving: bool,
    ready_at: f64,
    outage: &'static str,
    serve_since: f64,
    progress: f64,
    up_s: f64,
    completed: u64,
    failed: u64,
    retried: u64,
    lost_s: BTreeMap<String, f64>,
    degraded_s: BTreeMap<String, f64>,
    events: BTreeMap<String, u64>,
    log: Vec<FaultLogEntry>,
    /// Every request's output is corrupt on JACCL (prompt past `tp_corrupt_above_tokens`).
    corrupt: bool,
}

/// Simulates `cfg` over its horizon for scenario `s` (planned as `plan`).
pub fn simulate(s: &Scenario, cfg: &FaultConfig, plan: Option<&Plan>, profile: &Profile) -> FaultReport {
    let mut sim = FaultSim::new(s, cfg, plan, profile);
    sim.run();
    sim.report()
}

impl<'a> FaultSim<'a> {
    fn new(s: &'a Scenario, cfg: &'a FaultConfig, plan: Option<&Plan>, profile: &'a Profile) -> Self {
        let n = s.nodes.len();
        let cables: Vec<(usize, usize)> = cabling(s.topology, n).into_iter().map(|(a, _, b, _)| (a, b)).collect();
        let reload_s = reload_seconds(s, cfg.disk_read_gbs, plan);
        // The cables the runtime's step crosses (HPL, or a plan that failed: all of them).
        let crossed = plan.filter(|_| s.workload.kind != WorkloadKind::Hpl).map(|p| lower_step(p, 1).cables_crossed);
        let needed = cables.iter().map(|c| crossed.as_ref().is_none_or(|x| x.contains(c))).collect();
        let mut sim = FaultSim {
            s,
            cfg,
            params: &profile.faults,
            profile,
            lost_until: vec![None; cables.len()],
            degraded_until: vec![None; cables.len()],
            cables,
            reload_s,
            modes: BTreeMap::new(),
            placed: BTreeMap::new(),
            needed,
            in_effect: None,
            free_request_s: 0.0,
            draws: FaultDraws::new(s.seed),
            t: 0.0,
            node_up_at: vec![0.0; n],
            serving: true,
            ready_at: 0.0,
            outage: "",
            serve_since: 0.0,
            progress: 0.0,
            up_s: 0.0,
            completed: 0,
            failed: 0,
            retried: 0,
            lost_s: BTreeMap::new(),
            degraded_s: BTreeMap::new(),
            events: BTreeMap::new(),
            log: Vec::new(),
            corrupt: cfg.tp_corrupt_above_tokens.is_some_and(|t| s.workload.kind == WorkloadKind::Generate && s.workload.prompt_tokens > t),
        };
        sim.free_request_s = sim.evaluate(s.clone(), Placement::Whole, None).request_s;
        sim
    }

    /// The mode the cluster is in now.
    fn mode(&self) -> Mode {
        let on = |v: &[Option<f64>]| v.iter().enumerate().filter(|(_, u)| u.is_some()).map(|(i, _)| i).collect();

        let throttled = self.cfg.thermal.as_ref().is_some_and(|th| self.serving && self.t >= self.serve_since + th.after_s);
        Mode { lost: on(&self.lost_until), degraded: self.degraded_until.iter().any(Option::is_some), throttled }
    }

    /// The rate of a mode, run once on the event core per placement and cached.
    fn rate(&mut self, m: &Mode) -> Rate {
        if let Some(r) = self.modes.get(m) {
            return r.clone();
        }
        let lost: Vec<(usize, usize)> = m.lost.iter().map(|&c| self.cables[c]).collect();
        let placement = if m.lost.iter().all(|&c| !self.needed[c]) {
            Placement::Whole
        } else if self.s.workload.kind == WorkloadKind::Hpl {
            // An MPI job with a rank it cannot reach dies; it runs again once the cable is back.
            Placement::Failing
        } else {
            match self.s.engine.kind.behaviour().cable_loss(self.s.engine.parallelism) {
                CableLoss::FailUntilRepaired(_) => Placement::Failing,
                CableLoss::FallBack(_) => Placement::Lan,
                CableLoss::Replace(_) => self.replacement(&lost),
            }
        };
        let key = (placement.clone(), m.degraded, m.throttled);
        if let Some(r) = self.placed.get(&key) {
            self.modes.insert(m.clone(), r.clone());
            return r.clone();
        }
        let r = self.run_placement(placement, m);
        self.placed.insert(key, r.clone());
        self.modes.insert(m.clone(), r.clone());
        r
    }

    /// The largest set of nodes still cabled pair by pair (ties: the lowest-numbered) on which
    /// the scenario plans (the model fits, the split divides), or `Stopped`.
    fn replacement(&self, lost: &[(usize, usize)]) -> Placement {
        fully_cabled_sets(self.s.topology, self.s.nodes.len(), lost)
            .into_iter()
            .find(|set| super::generate_plan(&self.on_nodes(set), self.profile).is_ok())
            .map_or(Placement::Stopped, Placement::Nodes)
    }

    /// The scenario with its instance on `set` alone: a full mesh of those nodes (a switch
    /// stays a switch), one node without a split.
    fn on_nodes(&self, set: &[usize]) -> Scenario {
        let mut ms = self.s.clone();
        ms.nodes = set.iter().map(|&i| self.s.nodes[i].clone()).collect();
        ms.topology = match (set.len(), self.s.topology) {
            (1, _) => Topology::None,
            (_, Topology::Switch) => Topology::Switch,
            _ => Topology::FullMesh,
        };
        if set.len() == 1 {
            ms.engine.parallelism = ms.engine.kind.behaviour().default_parallelism(1);
        }
        ms
    }

    /// Runs `placement` in mode `m` (heat, degraded cables) on the event core.
    fn run_placement(&self, placement: Placement, m: &Mode) -> Rate {
        let transport = self.s.fabric.transport;
        let (mut ms, nodes): (Scenario, Vec<usize>) = match &placement {
            Placement::Stopped | Placement::Failing => {
                let cause = if placement == Placement::Stopped { "stopped" } else { "lost-path" };
                return Rate {
                    placement,
                    reload_s: 0.0,
                    request_s: f64::INFINITY,
                    link_util: 0.0,
                    transport,
                    tb_tcp: false,
                    cause: Some(cause),
                };
            }
            Placement::Nodes(set) => (self.on_nodes(set), set.clone()),
            Placement::Whole | Placement::Lan => (self.s.clone(), (0..self.s.nodes.len()).collect()),
        };
        let slow = |ms: &mut Scenario, node: usize, f: f64| {
            let x = &mut ms.nodes[node];
            x.mem_bw_gbs /= f;
            x.fp16_tflops /= f;
            x.hpl_cpu_gflops /= f;
        };
        let mut cause = None;
        if let Some(st) = &self.cfg.straggler
            && let Some(at) = nodes.iter().position(|&i| i == st.node)
        {
            slow(&mut ms, at, st.factor);
            cause = Some("straggler");
        }
        if let (true, Some(th)) = (m.throttled, &self.cfg.thermal) {
            (0..ms.nodes.len()).for_each(|i| slow(&mut ms, i, th.factor));
            cause = Some("thermal");
        }
        if m.degraded {
            ms.fabric = fabric(self.s.fabric.degrade_to.as_deref());
            cause = Some("link-degraded");
        }
        match placement {
            Placement::Lan => {
                ms.fabric = self.cfg.fallback.clone().unwrap_or_else(|| fabric(self.s.fabric.lost_to.as_deref()));
                ms.topology = Topology::Switch;
                cause = Some("fallback");
            }
            Placement::Nodes(_) => cause = Some("re-placed"),
            _ => {}
        }
        self.evaluate(ms, placement, cause)
    }

    /// Runs one request of scenario `ms` (the instance placed as `placement`) on the event core.
    fn evaluate(&self, ms: Scenario, placement: Placement, cause: Option<&'static str>) -> Rate {
        let transport = ms.fabric.transport;
        let tb_tcp = transport == Transport::Tcp && ms.fabric.port == PortKind::Thunderbolt;
        if ms.workload.kind == WorkloadKind::Hpl {
            let (_, seconds) = super::hpl::hpl_run(&ms);
            return Rate { placement, reload_s: 0.0, request_s: seconds, link_util: 1.0, transport, tb_tcp, cause };
        }
        let Ok(plan) = super::generate_plan(&ms, self.profile) else {
            return Rate { placement, reload_s: 0.0, request_s: f64::INFINITY, link_util: 0.0, transport, tb_tcp, cause };
        };
        let reload_s = reload_seconds(&ms, self.cfg.disk_read_gbs, Some(&plan)).into_iter().fold(0.0, f64::max);
        let w = &ms.workload;
        let run = super::sample_generate(&plan, w.context_tokens, w.prompt_tokens, w.generate_tokens, DECODE_SAMPLES, ms.seed);
        let link_util = decode_link_utilisation(&plan, run.decode_ns as f64, run.decode_bytes_sent as f64);
        Rate { placement, reload_s, request_s: (run.prefill_ns + run.decode_ns) as f64 / 1e9, link_util, transport, tb_tcp, cause }
    }
}

/// A catalog fabric by id (the shipped fallbacks exist: a catalog test checks them).
fn fabric(id: Option<&str>) -> FabricSpec {
    let cat = crate::catalog::catalog();
    cat.fabric(id.unwrap_or("wifi")).or_else(|| cat.fabric("wifi")).expect("fabric `wifi` exists").clone()
}

/// Average utilisation of a link direction while decoding: the bytes put on links over the
/// capacity of the directions left (lost cables take theirs away) during `decode_ns`.
pub fn decode_link_utilisation(plan: &Plan, decode_ns: f64, bytes: f64) -> f64 {
    let dirs = link_directions(plan.topology, plan.n()).saturating_sub(2 * plan.lost_links.len()).max(1);
    // Each direction at the slowest link's rate (a port slower than the fabric caps its links).
    let capacity = decode_ns * plan.net_cost().bandwidth_gbs * dirs as f64;
    if capacity > 0.0 { (bytes / capacity).min(1.0) } else { 0.0 }
}

/// Reboot time of a node that crashed, when the scenario gives none (the planner's
/// availability): no published reboot time for these machines exists (FACTS.md), so this is
/// the 2 minutes the shipped fault scenarios assume.
pub const ASSUMED_REBOOT_S: f64 = 120.0;

/// Steady-state availability of `s` (planned as `plan`) serving back to back under the
/// profile's load-dependent faults at decode link utilisation `link_util`, and of the
/// `cables_needed` cables its step crosses ([`crate::engine::Lowered::cables_crossed`]).
///
/// Load faults: Thunderbolt TCP crashes of every node (out for [`ASSUMED_REBOOT_S`] plus the
/// reload the runtime needs, as in [`simulate`]) and RDMA (JACCL) failures of every cable (out
/// for the reload). Both hazards run only while serving and stop service, so up times are
/// exponential and outages fixed: A_load = 1 / (1 + sum of rate x outage) over the causes,
/// exactly the long-run fraction [`simulate`] converges to with `tcp_load_crash` /
/// `rdma_instability` on.
///
/// Cable loss: each needed cable is out a share q = repair / (MTBF + repair) of the time (an
/// alternating renewal, the profile's `cable_mtbf_hours` and `cable_repair_hours`), cables
/// independent; no backend forwards through a peer, so one needed cable out is a lost path and
/// the cluster does not serve as planned (a re-placed instance is another, smaller cluster):
/// A_cable = (1 - q)^cables_needed. An 8-node ring's tensor all-reduce needs all 8 cables, a
/// 4-node JACCL mesh its 6. A = A_load x A_cable (the causes taken independent). Node MTBF has
/// no published rate and is not included. Decreasing in `link_util` and in `cables_needed`.
pub fn load_fault_availability(s: &Scenario, plan: &Plan, link_util: f64, cables_needed: usize, params: &FaultParams) -> f64 {
    let n = plan.n();
    if n < 2 {
        return 1.0;
    }
    let reload = reload_seconds(s, None, Some(plan));
    let max_reload = reload.iter().copied().fold(0.0, f64::max);
    let mut rate_x_outage = 0.0;
    let f = &plan.fabric;
    if f.transport == Transport::Tcp && f.port == PortKind::Thunderbolt {
        let rate = link_util.powf(params.tb_tcp_crash_exponent) / params.tb_tcp_crash_mean_s;
        let runtime = s.engine.kind.behaviour();
        for (node, r) in reload.iter().enumerate() {
            let all = runtime.crash_reloads_every_node(s.engine.parallelism, node);
            rate_x_outage += rate * (ASSUMED_REBOOT_S + if all { max_reload } else { *r });
        }
    }
    if f.transport == Transport::Rdma {
        let frame = s.engine.jaccl_frame_bytes as f64 / 4096.0;
        let per_s =
            params.rdma_failures_per_link_hour * link_util.powf(params.rdma_utilisation_exponent) * frame.powf(params.rdma_frame_exponent)
                / 3600.0;
        rate_x_outage += cabling(plan.topology, n).len() as f64 * per_s * max_reload;
    }
    let cable_down = params.cable_repair_hours / (params.cable_mtbf_hours + params.cable_repair_hours);
    (1.0 - cable_down).powi(cables_needed as i32) / (1.0 + rate_x_outage)
}

/// Link directions (resources) of a topology.
fn link_directions(t: Topology, n: usize) -> usize {
    match t {
        Topology::FullMesh => n * (n - 1),
        Topology::Ring if n == 2 => 2,
        Topology::Ring => 2 * n,
        Topology::Switch => n,
        Topology::None => 0,
    }
}

/// Seconds each node takes to load its weights again: from its disk, or where the runtime
/// reloads it over the network (a llama.cpp RPC server, which holds no files, from the client)
/// at the slower of disk and link. HPL loads nothing: a
/// crashed run starts again from scratch.
fn reload_seconds(s: &Scenario, disk_read_gbs: Option<f64>, plan: Option<&Plan>) -> Vec<f64> {
    // HPL loads no model.
    let Some(plan) = plan.filter(|_| s.workload.kind != WorkloadKind::Hpl) else {
        return vec![0.0; s.nodes.len()];
    };
    let disk = disk_read_gbs.unwrap_or(crate::hw::node::DEFAULT_DISK_READ_GBS) * 1e9;
    plan.memory
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let bytes = m.weights_gb * 1e9;
            // Over the network, at most at the rate the node's own port links at.
            let network = s.fabric.bandwidth_gbs * s.fabric.port_share(&s.nodes[i]) * 1e9;
            if s.engine.kind.behaviour().reloads_over_network(i) { bytes / disk.min(network) } else { bytes / disk }
        })
        .collect()
}

impl FaultSim<'_> {
    /// Advances from fault event to fault event until the horizon.
    fn run(&mut self) {
        let horizon = self.cfg.horizon_s;
        let mut next_crash = 0;
        while self.t < horizon {
            let mode = self.mode();
            let rate = self.rate(&mode);
            self.in_effect = Some(rate.clone());
            let (hits, rates) = self.hazards(&rate);
            let dt = self.draws.exponential(rates.iter().sum());
            let scheduled = self.cfg.crashes.get(next_crash).map_or(f64::INFINITY, |c| c.0);
            let due = self.next_due(&mode).min(scheduled).min(horizon);
            if self.t + dt < due {
                self.advance(self.t + dt, &rate);
                let hit = hits[self.draws.pick(&rates)];
                self.hit(hit);
            } else {
                self.advance(due, &rate);
                if due == scheduled && due < horizon {
                    let node = self.cfg.crashes[next_crash].1;
                    next_crash += 1;
                    if self.node_up_at[node] <= self.t {
                        self.hit(Hit::Crash { node, cause: "node-crash" });
                    }
                }
                self.finish_due();
            }
        }
    }

    /// The competing exponential faults in the current state and their rates, per second.
    fn hazards(&self, rate: &Rate) -> (Vec<Hit>, Vec<f64>) {
        let (cfg, p) = (self.cfg, self.params);
        let mut hits = Vec::new();
        let mut rates = Vec::new();
        for node in 0..self.s.nodes.len() {
            if self.node_up_at[node] > self.t {
                continue;
            }
            if let Some(m) = cfg.node_mtbf_s {
                hits.push(Hit::Crash { node, cause: "node-crash" });
                rates.push(1.0 / m);
            }
            if cfg.tcp_load_crash && self.serving && rate.tb_tcp {
                hits.push(Hit::Crash { node, cause: "tcp-load-crash" });
                rates.push(rate.link_util.powf(p.tb_tcp_crash_exponent) / p.tb_tcp_crash_mean_s);
            }
        }
        let frame = self.s.engine.jaccl_frame_bytes as f64 / 4096.0;
        for cable in 0..self.cables.len() {
            if self.lost_until[cable].is_some() {
                continue;
            }
            if let Some(m) = cfg.link_mtbf_s {
                hits.push(Hit::Cable { cable });
                rates.push(1.0 / m);
            }
            if self.degraded_until[cable].is_none() {
                if let Some(m) = cfg.degrade_mtbf_s {
                    hits.push(Hit::Degrade { cable });
                    rates.push(1.0 / m);
                }
                if cfg.rdma_instability && self.serving && rate.transport == Transport::Rdma {
                    let per_hour = p.rdma_failures_per_link_hour
                        * rate.link_util.powf(p.rdma_utilisation_exponent)
                        * frame.powf(p.rdma_frame_exponent);
                    hits.push(Hit::Rdma { cable });
                    rates.push(per_hour / 3600.0);
                }
            }
        }
        (hits, rates)
    }

    /// The next fixed-time event: recovery, a repair, the end of a degradation, throttling.
    fn next_due(&self, mode: &Mode) -> f64 {
        let mut due = if self.serving { f64::INFINITY } else { self.ready_at };
        for u in self.lost_until.iter().chain(&self.degraded_until).flatten() {
            due = due.min(*u);
        }
        if let (Some(th), true, false) = (&self.cfg.thermal, self.serving, mode.throttled) {
            due = due.min(self.serve_since + th.after_s);
        }
        due
    }

    /// Ends what is due now: recovery, repairs, degradations.
    fn finish_due(&mut self) {
        let t = self.t;
        if !self.serving && self.ready_at <= t {
            self.serving = true;
            self.serve_since = t;
            self.note("cluster serving again", String::new());
        }
        let before = self.rate(&self.mode()).placement;
        let mut repaired = Vec::new();
        for c in 0..self.cables.len() {
            if self.lost_until[c].is_some_and(|u| u <= t) {
                self.lost_until[c] = None;
                let (a, b) = self.cables[c];
                repaired.push(cable_name(a, b, self.s.nodes.len()));
            }
            if self.degraded_until[c].is_some_and(|u| u <= t) {
                self.degraded_until[c] = None;
            }
        }
        if !repaired.is_empty() {
            self.follow_placement(&before, &format!("cable {} repaired", repaired.join(", ")), "link-repair");
        }
    }

    /// After cables were lost or repaired: where the runtime's instance goes now. A placement
    /// that moved restarts the runtime there (a reload); a stopped or failing one interrupts
    /// the request in flight and serves nothing until a repair moves it again.
    fn follow_placement(&mut self, before: &Placement, event: &str, cause: &'static str) {
        let now = self.rate(&self.mode());
        if now.placement == *before {
            let effect = match before {
                Placement::Whole => "the instance does not use it: nothing changes",
                _ => "the instance stays where it is",
            };
            self.note(event, effect.into());
            return;
        }
        let runtime = self.s.engine.kind.behaviour();
        let why = match runtime.cable_loss(self.s.engine.parallelism) {
            CableLoss::Replace(w) | CableLoss::FallBack(w) | CableLoss::FailUntilRepaired(w) => w,
        };
        let what = match &now.placement {
            Placement::Whole => "the instance is placed on the whole cluster again".to_string(),
            Placement::Nodes(set) => {
                let nodes: Vec<String> = set.iter().map(usize::to_string).collect();
                format!("{why}: re-placed on node(s) {}", nodes.join(", "))
            }
            Placement::Lan => {
                let lan = self.cfg.fallback.as_ref().map_or_else(|| self.s.fabric.lost_to.clone().unwrap_or_default(), |f| f.id.clone());
                format!("{why}: now over {lan}")
            }
            Placement::Stopped => format!("{why}: no set of nodes still cabled to each other holds the model; stopped until a repair"),
            Placement::Failing if self.s.workload.kind == WorkloadKind::Hpl => "the HPL run fails until the cable is repaired".into(),
            Placement::Failing => why.to_string(),
        };
        let kind = match &now.placement {
            Placement::Whole => "placed-whole",
            Placement::Nodes(_) => "re-placed",
            Placement::Lan => "lan-fallback",
            Placement::Stopped => "stopped",
            Placement::Failing => "lost-path",
        };
        *self.events.entry(kind.into()).or_default() += 1;
        let reload = now.reload_s;
        self.interrupt(cause, self.t + reload, event, &what, reload);
    }

    /// Serves (or waits) from now to `until`.
    fn advance(&mut self, until: f64, rate: &Rate) {
        let dt = until - self.t;
        if self.serving && !rate.request_s.is_finite() {
            // Stopped, or failing every request: no service at all.
            *self.lost_s.entry(rate.cause.unwrap_or("stopped").into()).or_default() += dt;
        } else if self.serving {
            let share = self.free_request_s / rate.request_s;
            if share >= self.params.useful_rate_fraction {
                self.up_s += dt;
            }
            if share < 1.0 - 1e-9 {
                *self.degraded_s.entry(rate.cause.unwrap_or("slow").into()).or_default() += dt;
            }
            let total = self.progress + dt / rate.request_s;
            let done = total.floor();
            self.progress = total - done;
            if self.corrupt && rate.transport == Transport::Rdma {
                // Served, but every output is garbage (exo issue 2270): failed requests.
                self.failed += done as u64;
                *self.events.entry("tp-corruption".into()).or_default() += done as u64;
                *self.lost_s.entry("tp-corruption".into()).or_default() += dt;
                if done > 0.0 && !self.log.iter().any(|l| l.event.starts_with("corrupt output")) {
                    let what = format!(
                        "the {}-token prompt is past the tensor-parallel corruption threshold on JACCL",
                        self.s.workload.prompt_tokens
                    );
                    self.note("corrupt output", format!("{what}; the requests fail"));
                }
            } else {
                self.completed += done as u64;
                if let (Some(c), true) = (rate.cause, share < 1.0) {
                    *self.lost_s.entry(c.into()).or_default() += dt * (1.0 - share);
                }
            }
        } else {
            *self.lost_s.entry(self.outage.into()).or_default() += dt;
        }
        self.t = until;
    }
}

/// A cable's name: `0-1`, or `2-switch`.
fn cable_name(a: usize, b: usize, n: usize) -> String {
    if b == n { format!("{a}-switch") } else { format!("{a}-{b}") }
}

impl FaultSim<'_> {
    /// A fault happens now.
    fn hit(&mut self, hit: Hit) {
        let n = self.s.nodes.len();
        match hit {
            Hit::Crash { node, cause } => {
                *self.events.entry(cause.into()).or_default() += 1;
                self.node_up_at[node] = self.t + self.cfg.reboot_s;
                let runtime = self.s.engine.kind.behaviour();
                let parallelism = self.s.engine.parallelism;
                // The runtime says who reloads: every node (exo tensor parallel; any runtime whose
                // client, node 0 of llama.cpp RPC, or only node crashed) or the crashed one.
                let all = runtime.crash_reloads_every_node(parallelism, node);
                let reload = if all { self.reload_s.iter().copied().fold(0.0, f64::max) } else { self.reload_s[node] };
                let what = if self.s.workload.kind == WorkloadKind::Hpl {
                    "the HPL run dies and starts again from scratch"
                } else {
                    runtime.crash_reaction(parallelism, node)
                };
                let event = format!("node {node} crashed ({cause})");
                self.interrupt(cause, self.node_up_at[node] + reload, &event, what, reload);
            }
            Hit::Degrade { cable: c } => {
                *self.events.entry("link-degraded".into()).or_default() += 1;
                self.degraded_until[c] = Some(self.t + self.cfg.degrade_s);
                let (a, b) = self.cables[c];
                let to = self.s.fabric.degrade_to.clone().unwrap_or_default();
                self.note(&format!("cable {} degraded", cable_name(a, b, n)), format!("runs at {to} for {:.0} s", self.cfg.degrade_s));
            }
            Hit::Cable { cable } => {
                *self.events.entry("link-loss".into()).or_default() += 1;
                let before = self.rate(&self.mode()).placement;
                self.lost_until[cable] = Some(self.t + self.cfg.link_repair_s);
                let (a, b) = self.cables[cable];
                self.follow_placement(&before, &format!("cable {} lost", cable_name(a, b, n)), "link-loss");
            }
            Hit::Rdma { cable } => {
                *self.events.entry("rdma-failure".into()).or_default() += 1;
                let (a, b) = self.cables[cable];
                let reload = self.reload_s.iter().copied().fold(0.0, f64::max);
                let event = format!("RDMA failure on cable {}", cable_name(a, b, n));
                self.interrupt("rdma-failure", self.t + reload, &event, "the instance stops and reloads", reload);
            }
        }
    }

    /// Stops service until `ready` (at least until every node is up again and has reloaded).
    fn interrupt(&mut self, cause: &'static str, ready: f64, event: &str, what: &str, reload: f64) {
        let mut request = String::new();
        if self.serving && self.progress > 0.0 {
            let request_s = self.in_effect.as_ref().map_or(self.free_request_s, |r| r.request_s);
            *self.lost_s.entry("interrupted-requests".into()).or_default() += self.progress * request_s;
            self.progress = 0.0;
            if self.cfg.retry {
                self.retried += 1;
                request = format!("; the {} in flight is retried", self.job());
            } else {
                self.failed += 1;
                request = format!("; the {} in flight fails", self.job());
            }
        }
        let mut ready = ready.max(if self.serving { self.t } else { self.ready_at });
        let mut what = what.to_string();
        if reload > 0.0 {
            ready += self.load_failures(if self.serving { cause } else { self.outage }, ready, &mut what);
        }
        if ready > self.t {
            if self.serving {
                self.outage = cause;
            }
            self.serving = false;
            self.ready_at = ready;
        }
        let reload = if reload > 0.0 { format!(" (reload {reload:.1} s)") } else { String::new() };
        let effect =
            if ready > self.t { format!("{what}{reload}{request}; serving again at {ready:.1} s") } else { format!("{what}{request}") };
        self.note(event, effect);
    }

    /// Draws whether the reload that ends an outage at `ready` fails (exo, `load_failure`), again
    /// and again until one succeeds: each failure costs a reboot of the cluster and another
    /// full load. Returns the extra outage; its time counts as `load-failure`, not as the
    /// outage's `cause`.
    fn load_failures(&mut self, cause: &'static str, ready: f64, what: &mut String) -> f64 {
        let Some(p) = self.cfg.load_failure else { return 0.0 };
        let mut fails = 0u64;
        while self.draws.pick(&[p, 1.0 - p]) == 0 {
            fails += 1;
        }
        if fails == 0 {
            return 0.0;
        }
        let extra = fails as f64 * (self.cfg.reboot_s + self.reload_s.iter().copied().fold(0.0, f64::max));
        let h = self.cfg.horizon_s;
        let counted = (ready + extra).min(h) - ready.min(h);
        *self.lost_s.entry("load-failure".into()).or_default() += counted;
        *self.lost_s.entry(cause.into()).or_default() -= counted;
        *self.events.entry("load-failure".into()).or_default() += fails;
        what.push_str(&format!("; the load fails {fails}x, each cured by a cluster reboot and another load"));
        extra
    }

    /// What one unit of work is called.
    fn job(&self) -> &'static str {
        if self.s.workload.kind == WorkloadKind::Hpl { "run" } else { "request" }
    }

    fn note(&mut self, event: &str, effect: String) {
        if self.log.len() < LOG_LINES {
            self.log.push(FaultLogEntry { t_s: round3(self.t), event: event.into(), effect });
        }
    }

    fn report(self) -> FaultReport {
        let h = self.cfg.horizon_s;
        let days = h / 86_400.0;
        let generate = self.s.workload.kind == WorkloadKind::Generate;
        let tokens = self.completed as f64 * self.s.workload.generate_tokens as f64;
        let free_per_day = self.s.workload.generate_tokens as f64 / self.free_request_s * 86_400.0;
        FaultReport {
            horizon_days: round6(days),
            availability: round6(self.up_s / h),
            goodput_tokens_per_s: generate.then(|| round3(tokens / h)),
            expected_tokens_per_day: generate.then(|| tokens / days).map(f64::round),
            fault_free_tokens_per_day: generate.then_some(free_per_day.round()),
            hpl_goodput_gflops: (!generate).then(|| round3(self.completed as f64 * hpl_flops(self.s) / h / 1e9)),
            requests_completed: self.completed,
            requests_failed: self.failed,
            requests_retried: self.retried,
            time_lost_s: self.lost_s.into_iter().map(|(k, v)| (k, round3(v))).collect(),
            degraded_s: self.degraded_s.into_iter().map(|(k, v)| (k, round3(v))).collect(),
            useful_rate_fraction: self.params.useful_rate_fraction,
            events: self.events,
            log: self.log,
        }
    }
}

/// Floating-point operations of one HPL run.
fn hpl_flops(s: &Scenario) -> f64 {
    super::hpl::hpl_run(s).0
}
