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
//! - a lost cable: traffic detours through a peer where a path is left
//!   ([`crate::hw::route_around`]), else the cluster falls back to the fabric's `lost_to`
//!   (Wi-Fi); exo's collective fails and the instance restarts, llama.cpp fails the request.
//!   A repaired cable is used again at once.
//! - a degraded cable runs at the fabric's `degrade_to` (RDMA -> TCP). A synchronous
//!   collective waits for its slowest link, so the step is timed with the whole fabric at the
//!   fallback's parameters: exact for fully connected all-reduce, pessimistic for pipelines.
//! - RDMA instability: each RDMA cable fails at `rdma_failures_per_link_hour * u^a *
//!   (frame/4 KiB)^b` (profile `[faults]`), u the cable's utilisation in that state; the
//!   instance restarts and reloads.
//! - Thunderbolt TCP load: each serving node crashes at `u^k / tb_tcp_crash_mean_s`; HPL is
//!   sustained load (u = 1).
//! - Slow states (straggler, throttled, detoured, degraded, fallback) count the throughput they
//!   lose as time lost, against the fault-free rate, under the most severe cause present.

use std::collections::BTreeMap;

use crate::engine::Plan;
use crate::engine::runtimes::CableLoss;
use crate::hw::{FabricSpec, PortKind, Topology, Transport, cabling, connected};
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

/// How fast the cluster serves in a mode.
#[derive(Clone, Debug)]
struct Rate {
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
            events: BTreeMap::new(),
            log: Vec::new(),
            corrupt: cfg.tp_corrupt_above_tokens.is_some_and(|t| s.workload.kind == WorkloadKind::Generate && s.workload.prompt_tokens > t),
        };
        sim.free_request_s = sim.evaluate(s.clone(), Vec::new(), None).request_s;
        sim
    }

    /// The mode the cluster is in now.
    fn mode(&self) -> Mode {
        let on = |v: &[Option<f64>]| v.iter().enumerate().filter(|(_, u)| u.is_some()).map(|(i, _)| i).collect();

        let throttled = self.cfg.thermal.as_ref().is_some_and(|th| self.serving && self.t >= self.serve_since + th.after_s);
        Mode { lost: on(&self.lost_until), degraded: self.degraded_until.iter().any(Option::is_some), throttled }
    }

    /// The rate of a mode, run once on the event core and cached.
    fn rate(&mut self, m: &Mode) -> Rate {
        if let Some(r) = self.modes.get(m) {
            return r.clone();
        }
        let mut ms = self.s.clone();
        let slow = |ms: &mut Scenario, node: usize, f: f64| {
            let x = &mut ms.nodes[node];
            x.mem_bw_gbs /= f;
            x.fp16_tflops /= f;
            x.hpl_cpu_gflops /= f;
        };
        let mut cause = None;
        if let Some(st) = &self.cfg.straggler {
            slow(&mut ms, st.node, st.factor);
            cause = Some("straggler");
        }
        if let (true, Some(th)) = (m.throttled, &self.cfg.thermal) {
            (0..ms.nodes.len()).for_each(|i| slow(&mut ms, i, th.factor));
            cause = Some("thermal");
        }
        let mut lost: Vec<(usize, usize)> = m.lost.iter().map(|&c| self.cables[c]).collect();
        if m.degraded {
            ms.fabric = fabric(self.s.fabric.degrade_to.as_deref());
            cause = Some("link-degraded");
        }
        if !lost.is_empty() {
            if connected(self.s.topology, self.s.nodes.len(), &lost) {
                cause = Some("rerouted");
            } else {
                ms.fabric = self.cfg.fallback.clone().unwrap_or_else(|| fabric(self.s.fabric.lost_to.as_deref()));
                ms.topology = Topology::Switch;
                lost.clear();
                cause = Some("fallback");
            }
        }
        let r = self.evaluate(ms, lost, cause);
        self.modes.insert(m.clone(), r.clone());
        r
    }

    /// Runs one request of scenario `ms` (with `lost` cables) on the event core.
    fn evaluate(&self, ms: Scenario, lost: Vec<(usize, usize)>, cause: Option<&'static str>) -> Rate {
        let transport = ms.fabric.transport;
        let tb_tcp = transport == Transport::Tcp && ms.fabric.port == PortKind::Thunderbolt;
        if ms.workload.kind == WorkloadKind::Hpl {
            let (_, seconds) = super::hpl::hpl_run(&ms);
            return Rate { request_s: seconds, link_util: 1.0, transport, tb_tcp, cause };
        }
        let Ok(mut plan) = super::generate_plan(&ms, self.profile) else {
            return Rate { request_s: f64::INFINITY, link_util: 0.0, transport, tb_tcp, cause };
        };
        plan.lost_links = lost;
        let w = &ms.workload;
        let run = super::sample_generate(&plan, w.prompt_tokens, w.generate_tokens, DECODE_SAMPLES, ms.seed);
        let link_util = decode_link_utilisation(&plan, run.decode_ns as f64, run.decode_bytes_sent as f64);
        Rate { request_s: (run.prefill_ns + run.decode_ns) as f64 / 1e9, link_util, transport, tb_tcp, cause }
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
    let capacity = decode_ns * plan.fabric.bytes_per_ns() * dirs as f64;
    if capacity > 0.0 { (bytes / capacity).min(1.0) } else { 0.0 }
}

/// Reboot time of a node that crashed, when the scenario gives none (the planner's
/// availability): no published reboot time for these machines exists (FACTS.md), so this is
/// the 2 minutes the shipped fault scenarios assume.
pub const ASSUMED_REBOOT_S: f64 = 120.0;

/// Steady-state availability of `s` (planned as `plan`) serving back to back under the
/// profile's load-dependent faults at decode link utilisation `link_util`: Thunderbolt TCP
/// crashes of every node (out for [`ASSUMED_REBOOT_S`] plus the reload the runtime needs, as
/// in [`simulate`]) and RDMA (JACCL) failures of every cable (out for the reload). Both
/// hazards run only while serving and stop service, so up times are exponential and outages
/// fixed: A = 1 / (1 + sum of rate x outage) over the causes, exactly the long-run fraction
/// [`simulate`] converges to with `tcp_load_crash` / `rdma_instability` on. Other faults (node
/// MTBF, cable losses) have no published rate and are not included. Decreasing in `link_util`.
pub fn load_fault_availability(s: &Scenario, plan: &Plan, link_util: f64, params: &FaultParams) -> f64 {
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
    1.0 / (1.0 + rate_x_outage)
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
            if s.engine.kind.behaviour().reloads_over_network(i) { bytes / disk.min(s.fabric.bandwidth_gbs * 1e9) } else { bytes / disk }
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
        for c in 0..self.cables.len() {
            if self.lost_until[c].is_some_and(|u| u <= t) {
                self.lost_until[c] = None;
                let (a, b) = self.cables[c];
                self.note(&format!("cable {} repaired", cable_name(a, b, self.s.nodes.len())), "traffic back on it".into());
            }
            if self.degraded_until[c].is_some_and(|u| u <= t) {
                self.degraded_until[c] = None;
            }
        }
    }

    /// Serves (or waits) from now to `until`.
    fn advance(&mut self, until: f64, rate: &Rate) {
        let dt = until - self.t;
        if self.serving {
            self.up_s += dt;
            if rate.request_s.is_finite() {
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
                    if let Some(c) = rate.cause {
                        *self.lost_s.entry(c.into()).or_default() += dt * (1.0 - self.free_request_s / rate.request_s).max(0.0);
                    }
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
                self.lost_until[cable] = Some(self.t + self.cfg.link_repair_s);
                let (a, b) = self.cables[cable];
                let mut lost: Vec<(usize, usize)> = self.mode().lost.iter().map(|&c| self.cables[c]).collect();
                lost.push((a, b));
                let path = if connected(self.s.topology, n, &lost) { "traffic detours through a peer" } else { "no path left: falls back" };
                let event = format!("cable {} lost", cable_name(a, b, n));
                match self.s.engine.kind.behaviour().cable_loss() {
                    CableLoss::RestartInstance(why) => {
                        let reload = self.reload_s.iter().copied().fold(0.0, f64::max);
                        self.interrupt("link-loss", self.t + reload, &event, &format!("{why}; {path}"), reload);
                    }
                    CableLoss::FailRequest(why) => self.interrupt("link-loss", self.t, &event, &format!("{why}; {path}"), 0.0),
                }
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
            let rate = self.rate(&self.mode());
            *self.lost_s.entry("interrupted-requests".into()).or_default() += self.progress * rate.request_s;
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
            events: self.events,
            log: self.log,
        }
    }
}

/// Floating-point operations of one HPL run.
fn hpl_flops(s: &Scenario) -> f64 {
    super::hpl::hpl_run(s).0
}
