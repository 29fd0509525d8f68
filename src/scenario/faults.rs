//! `[faults]`: what can go wrong with the cluster over a long horizon, validated into a typed
//! [`FaultConfig`]. The simulation is `estimate::faults`; the facts it needs about links
//! (fallback fabrics, routes around a lost cable) live in [`crate::hw`].

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;

use toml::Spanned;

use crate::catalog::catalog;
use crate::hw::{FabricSpec, PortKind, Transport};

use crate::engine::EngineOptions;
use crate::engine::runtimes::RuntimeFault;

use super::raw::{RawFaults, RawLinkFaults, RawNodeFaults, RawRuntimeFaults};
use super::source::{ErrorKind, ScenarioError, Source, suggest};

/// Default horizon of a fault simulation, days (a month of service).
pub const DEFAULT_HORIZON_DAYS: f64 = 30.0;

/// A node slowed down by a factor (a straggler, or a node throttled by heat).
#[derive(Clone, Debug, PartialEq)]
pub struct Slowdown {
    /// Node index.
    pub node: usize,
    /// Factor by which its kernels take longer (>= 1).
    pub factor: f64,
}

/// Thermal throttling: after `after_s` of continuous service every node's kernels take
/// `factor` times longer, until an outage lets the cluster cool down.
#[derive(Clone, Debug, PartialEq)]
pub struct Thermal {
    /// Seconds of continuous service before throttling starts.
    pub after_s: f64,
    /// Factor by which kernels take longer once throttled (>= 1).
    pub factor: f64,
}

/// The validated `[faults]` table. Times are seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Simulated horizon, s.
    pub horizon_s: f64,
    /// Whether a request interrupted by a fault is retried (else it fails).
    pub retry: bool,
    /// Mean time between crashes of each node, s (exponential).
    pub node_mtbf_s: Option<f64>,
    /// Time a crashed node takes to reboot, s.
    pub reboot_s: f64,
    /// Disk read rate for reloading the model, GB/s (`None`: [`crate::hw::node::DEFAULT_DISK_READ_GBS`]).
    pub disk_read_gbs: Option<f64>,
    /// Nodes crash under sustained Thunderbolt TCP load (the profile's `faults.tb_tcp_*` model).
    pub tcp_load_crash: bool,
    /// Mean time between losses of each cable, s.
    pub link_mtbf_s: Option<f64>,
    /// Time to repair a lost cable, s.
    pub link_repair_s: f64,
    /// Mean time between degradations of each cable (it runs at the fabric's `degrade_to`), s.
    pub degrade_mtbf_s: Option<f64>,
    /// How long a degradation lasts, s.
    pub degrade_s: f64,
    /// Fabric the cluster falls back to when lost cables leave no path (default: the fabric's `lost_to`).
    pub fallback: Option<FabricSpec>,
    /// RDMA links fail under sustained load (the profile's `faults.rdma_*` model).
    pub rdma_instability: bool,
    /// A straggler node, slowed for the whole horizon.
    pub straggler: Option<Slowdown>,
    /// Thermal throttling after a time at high power.
    pub thermal: Option<Thermal>,
    /// Scheduled crashes: (time, node), in time order.
    pub crashes: Vec<(f64, usize)>,
    /// Probability that an exo model load fails (`[faults.runtime] load_failure_probability`);
    /// a failed load keeps failing until the cluster is rebooted (FACTS.md: "exo model loads
    /// failing until a cluster reboot"), so each failure costs a reboot and another load.
    pub load_failure: Option<f64>,
    /// Prompts longer than this many tokens come out corrupt under exo tensor parallel over
    /// JACCL (`[faults.runtime] tp_corrupt_above_prompt_tokens`; FACTS.md: exo issue 2270,
    /// "above ~4k prompt tokens"): such requests are failed and their tokens lost.
    pub tp_corrupt_above_tokens: Option<u64>,
}

impl FaultConfig {
    /// Whether any fault can happen (an empty `[faults]` table simulates nothing).
    pub fn is_active(&self) -> bool {
        self.node_mtbf_s.is_some()
            || self.tcp_load_crash
            || self.link_mtbf_s.is_some()
            || self.degrade_mtbf_s.is_some()
            || self.rdma_instability
            || self.straggler.is_some()
            || self.thermal.is_some()
            || !self.crashes.is_empty()
            || self.load_failure.is_some()
            || self.tp_corrupt_above_tokens.is_some()
    }
}

/// A number from `lo` (exclusive) to `hi` (inclusive), scaled by `unit`.
fn number(src: &Source, v: &Spanned<f64>, key: &str, lo: f64, hi: f64, unit: f64) -> Result<f64, ScenarioError> {
    let x = *v.get_ref();
    if !(x > lo && x <= hi) {
        return Err(src
            .error(v.span(), format!("`{key}` = {x} is out of range"), Some(format!("use a number in ({lo}, {hi}]")))
            .with_kind(ErrorKind::BadValue));
    }
    Ok(x * unit)
}

/// Most fault events one `*mtbf_hours` key may lead a horizon to expect (horizon over MTBF,
/// times the nodes or cables it applies to). The fault run advances event by event, so its work
/// grows with their count: a 1e-6 h node MTBF over 3,650 days had run 7.9 million crashes after
/// a minute of CPU, unfinished. 100,000 keeps a run near a second; ten years of a 64-node cluster
/// crashing once a week per node is 33,000.
const MAX_FAULT_EVENTS: f64 = 1e5;

/// Refuses an MTBF that would make the horizon expect more than [`MAX_FAULT_EVENTS`] events
/// over `count` `what` (nodes, cables).
fn event_budget(src: &Source, v: &Spanned<f64>, key: &str, horizon_s: f64, count: usize, what: &str) -> Result<(), ScenarioError> {
    let mtbf_h = *v.get_ref();
    let horizon_h = horizon_s / HOUR;
    let expected = horizon_h / mtbf_h * count as f64;
    if expected <= MAX_FAULT_EVENTS {
        return Ok(());
    }
    let least = horizon_h * count as f64 / MAX_FAULT_EVENTS;
    Err(src
        .error(
            v.span(),
            format!(
                "`{key}` = {mtbf_h} expects {expected:.3e} faults over the {:.0}-day horizon on {count} {what}, past the {MAX_FAULT_EVENTS:.0} a fault run simulates",
                horizon_h / 24.0
            ),
            Some(format!("use {key} >= {least:.4} or a shorter faults.horizon_days")),
        )
        .with_kind(ErrorKind::BadValue))
}

/// A node index of the cluster.
fn node_index(src: &Source, v: &Spanned<i64>, key: &str, n: usize) -> Result<usize, ScenarioError> {
    let x = *v.get_ref();
    if x < 0 || x as usize >= n {
        return Err(src
            .error(
                v.span(),
                format!("`{key}` = {x} is not a node of this {n}-node cluster"),
                Some(format!("nodes are numbered 0 to {}", n - 1)),
            )
            .with_kind(ErrorKind::BadValue));
    }
    Ok(x as usize)
}

/// A required duration next to the rate that needs it.
fn required(src: &Source, v: &Option<Spanned<f64>>, key: &str, at: Range<usize>) -> Result<f64, ScenarioError> {
    match v {
        Some(v) => number(src, v, key, 0.0, 525_600.0, 60.0),
        None => Err(src
            .error(at, format!("`{key}` is needed with this fault rate"), Some(format!("add {key} = <minutes>")))
            .with_kind(ErrorKind::BadValue)),
    }
}

const HOUR: f64 = 3600.0;
const MAX_HOURS: f64 = 1e7;

/// Validates `[faults]` for a cluster of `n` nodes on `fabric`.
pub(super) fn faults(
    src: &Source,
    raw: Spanned<RawFaults>,
    (n, cables): (usize, usize),
    fabric: &FabricSpec,
    engine: &EngineOptions,
) -> Result<FaultConfig, ScenarioError> {
    let raw = raw.into_inner();
    let horizon_days = match &raw.horizon_days {
        Some(h) => number(src, h, "faults.horizon_days", 0.0, 3650.0, 1.0)?,
        None => DEFAULT_HORIZON_DAYS,
    };
    let mut cfg = FaultConfig {
        horizon_s: horizon_days * 86_400.0,
        retry: raw.retry.as_ref().is_none_or(|r| *r.get_ref()),
        node_mtbf_s: None,
        reboot_s: 0.0,
        disk_read_gbs: None,
        tcp_load_crash: false,
        link_mtbf_s: None,
        link_repair_s: 0.0,
        degrade_mtbf_s: None,
        degrade_s: 0.0,
        fallback: None,
        rdma_instability: false,
        straggler: None,
        thermal: None,
        crashes: Vec::new(),
        load_failure: None,
        tp_corrupt_above_tokens: None,
    };
    let crash_span = raw.crash.as_ref().and_then(|c| c.first()).map(|c| c.span());
    for c in raw.crash.iter().flatten() {
        let c = c.get_ref();
        let at = number(src, &c.at_minutes, "faults.crash.at_minutes", -1e-300, horizon_days * 1440.0, 60.0)?;
        cfg.crashes.push((at, node_index(src, &c.node, "faults.crash.node", n)?));
    }
    cfg.crashes.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    node_faults(src, raw.node, fabric, crash_span, n, &mut cfg)?;
    if let Some(l) = raw.link {
        link_faults(src, l, n, cables, fabric, &mut cfg)?;
    }
    if let Some(s) = &raw.straggler {
        let s = s.get_ref();
        let node = node_index(src, &s.node, "faults.straggler.node", n)?;
        cfg.straggler = Some(Slowdown { node, factor: number(src, &s.slowdown, "faults.straggler.slowdown", 0.999_999, 100.0, 1.0)? });
    }
    if let Some(t) = &raw.thermal {
        let t = t.get_ref();
        let after_s = number(src, &t.after_minutes, "faults.thermal.after_minutes", 0.0, 525_600.0, 60.0)?;
        cfg.thermal = Some(Thermal { after_s, factor: number(src, &t.slowdown, "faults.thermal.slowdown", 0.999_999, 100.0, 1.0)? });
    }
    if let Some(r) = raw.runtime {
        runtime_faults(src, r, fabric, engine, &mut cfg)?;
    }
    Ok(cfg)
}

/// `[faults.runtime]`: exo load failures that last until a reboot, and tensor parallel output
/// corrupted past a prompt length on JACCL. FACTS.md reports both but gives no rate: the
/// probability and the threshold are the user's (the issue reports "~4k" prompt tokens).
fn runtime_faults(
    src: &Source,
    raw: Spanned<RawRuntimeFaults>,
    fabric: &FabricSpec,
    engine: &EngineOptions,
    cfg: &mut FaultConfig,
) -> Result<(), ScenarioError> {
    let r = raw.into_inner();
    let runtime = engine.kind.behaviour();
    let accepts = |fault| runtime.accepts_runtime_fault(fault, engine.parallelism, fabric.backend);
    if let Some(p) = &r.load_failure_probability {
        if !accepts(RuntimeFault::LoadFailure) {
            return Err(src
                .error(p.span(), "`load_failure_probability` models exo's model loads", Some("remove it, or use engine = \"exo\"".into()))
                .with_kind(ErrorKind::BadValue));
        }
        if cfg.reboot_s <= 0.0 {
            return Err(src
                .error(
                    p.span(),
                    "a failed exo load is cured by a reboot: give its time",
                    Some("add [faults.node] with reboot_minutes = <minutes>".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        cfg.load_failure = Some(number(src, p, "faults.runtime.load_failure_probability", 0.0, 0.99, 1.0)?);
    }
    if let Some(t) = &r.tp_corrupt_above_prompt_tokens {
        if !accepts(RuntimeFault::TensorParallelCorruption) {
            return Err(src
                .error(
                    t.span(),
                    "`tp_corrupt_above_prompt_tokens` models exo tensor parallel over JACCL (exo issue 2270)",
                    Some("remove it, or use engine exo, parallelism tensor, fabric tb5-rdma".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        let x = *t.get_ref();
        if x < 1 {
            return Err(src
                .error(
                    t.span(),
                    format!("`faults.runtime.tp_corrupt_above_prompt_tokens` = {x} is out of range"),
                    Some("use a token count >= 1, e.g. 4096".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        cfg.tp_corrupt_above_tokens = Some(x as u64);
    }
    Ok(())
}

/// `[faults.node]`: crashes, reboots, reloads, crashes under Thunderbolt TCP load.
fn node_faults(
    src: &Source,
    raw: Option<Spanned<RawNodeFaults>>,
    fabric: &FabricSpec,
    scheduled: Option<Range<usize>>,
    n: usize,
    cfg: &mut FaultConfig,
) -> Result<(), ScenarioError> {
    let Some(raw) = raw else {
        if let Some(at) = scheduled {
            return Err(src
                .error(at, "`[[faults.crash]]` needs a reboot time", Some("add [faults.node] with reboot_minutes = <minutes>".into()))
                .with_kind(ErrorKind::BadValue));
        }
        return Ok(());
    };
    let span = raw.span();
    let r = raw.into_inner();
    if let Some(m) = &r.mtbf_hours {
        cfg.node_mtbf_s = Some(number(src, m, "faults.node.mtbf_hours", 0.0, MAX_HOURS, HOUR)?);
        event_budget(src, m, "faults.node.mtbf_hours", cfg.horizon_s, n, "nodes")?;
    }
    if let Some(d) = &r.disk_read_gbs {
        cfg.disk_read_gbs = Some(number(src, d, "faults.node.disk_read_gbs", 0.0, 1000.0, 1.0)?);
    }
    if let Some(t) = &r.tcp_load_crash {
        cfg.tcp_load_crash = *t.get_ref();
        if cfg.tcp_load_crash && !(fabric.transport == Transport::Tcp && fabric.port == PortKind::Thunderbolt) {
            return Err(src
                .error(
                    t.span(),
                    format!("`tcp_load_crash` models TCP over Thunderbolt; fabric `{}` is not", fabric.id),
                    Some("remove it, or use tb5-tcp / tb4-tcp / usb4-tcp".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
    }
    if cfg.node_mtbf_s.is_some() || cfg.tcp_load_crash || scheduled.is_some() || r.reboot_minutes.is_some() {
        cfg.reboot_s = required(src, &r.reboot_minutes, "faults.node.reboot_minutes", span)?;
    }
    Ok(())
}

/// `[faults.link]`: cable losses, degradations, the fallback fabric, RDMA instability.
fn link_faults(
    src: &Source,
    raw: Spanned<RawLinkFaults>,
    n: usize,
    cables: usize,
    fabric: &FabricSpec,
    cfg: &mut FaultConfig,
) -> Result<(), ScenarioError> {
    let span = raw.span();
    let r = raw.into_inner();
    if n < 2 {
        return Err(src
            .error(span, "`[faults.link]` on a single node: there are no cables", Some("remove [faults.link] or add nodes".into()))
            .with_kind(ErrorKind::BadValue));
    }
    if let Some(m) = &r.mtbf_hours {
        cfg.link_mtbf_s = Some(number(src, m, "faults.link.mtbf_hours", 0.0, MAX_HOURS, HOUR)?);
        event_budget(src, m, "faults.link.mtbf_hours", cfg.horizon_s, cables, "cables")?;
        cfg.link_repair_s = required(src, &r.repair_minutes, "faults.link.repair_minutes", span.clone())?;
    }
    if let Some(m) = &r.degrade_mtbf_hours {
        if fabric.degrade_to.is_none() {
            return Err(src
                .error(
                    m.span(),
                    format!("fabric `{}` has nothing to degrade to", fabric.id),
                    Some("link degradation is RDMA falling back to TCP: use tb5-rdma or cx7-roce with an engine that speaks RDMA (llama.cpp RPC runs TCP on them already)".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        cfg.degrade_mtbf_s = Some(number(src, m, "faults.link.degrade_mtbf_hours", 0.0, MAX_HOURS, HOUR)?);
        event_budget(src, m, "faults.link.degrade_mtbf_hours", cfg.horizon_s, cables, "cables")?;
        cfg.degrade_s = required(src, &r.degrade_minutes, "faults.link.degrade_minutes", span.clone())?;
    }
    if let Some(f) = &r.fallback {
        let cat = catalog();
        let spec = cat.fabric(f.get_ref()).filter(|x| x.transport != Transport::None).ok_or_else(|| {
            src.error(
                f.span(),
                format!("unknown fallback fabric `{}`", f.get_ref()),
                Some(suggest(f.get_ref(), &cat.fabric_ids(), "fabrics")),
            )
            .with_kind(ErrorKind::UnknownPreset)
        })?;
        cfg.fallback = Some(spec.clone());
    }
    if let Some(x) = &r.rdma_instability {
        cfg.rdma_instability = *x.get_ref();
        if cfg.rdma_instability && fabric.transport != Transport::Rdma {
            return Err(src
                .error(x.span(), format!("fabric `{}` is not RDMA", fabric.id), Some("remove rdma_instability, or use tb5-rdma".into()))
                .with_kind(ErrorKind::BadValue));
        }
    }
    Ok(())
}
