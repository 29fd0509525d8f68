//! `supernode plan`: enumerate clusters for a model (node mixes and counts, fabrics,
//! topologies, engines and splits), predict each with the one estimator (scenarios are built as
//! TOML text and go through `scenario::parse`, so every validation applies), and pick the best
//! for an objective: the cheapest reaching a decode rate, or the fastest under a budget or a
//! power cap. Reports the best few, the Pareto front (tokens/s vs $ vs W), why each loser lost,
//! and the cabling of the winner.

use std::fmt::Write as _;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::json;

use crate::catalog::catalog;
use crate::estimate::{Estimate, EstimateError, estimate};
use crate::hw::{PortKind, Topology, cabling};
use crate::profile::Profile;
use crate::scenario::{self, Source};
use crate::util::did_you_mean;

/// What to optimize. With a target rate: minimize hardware cost (then power); otherwise
/// maximize decode tokens/s. Budget and power caps are constraints in both cases.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// Minimum decode tokens/s.
    pub target_tokens_per_s: Option<f64>,
    /// Maximum hardware cost, USD.
    pub budget_usd: Option<f64>,
    /// Maximum cluster power during decode, W.
    pub max_power_w: Option<f64>,
}

impl Objective {
    /// Checks that at least one objective is given and that values are positive.
    pub fn new(target_tokens_per_s: Option<f64>, budget_usd: Option<f64>, max_power_w: Option<f64>) -> Result<Self, String> {
        if target_tokens_per_s.is_none() && budget_usd.is_none() && max_power_w.is_none() {
            return Err(
                "give an objective: --target-tokens-per-s X (cheapest reaching X), --budget-usd X or --max-power-w X (fastest within X)"
                    .into(),
            );
        }
        for (name, v) in [("--target-tokens-per-s", target_tokens_per_s), ("--budget-usd", budget_usd), ("--max-power-w", max_power_w)] {
            if let Some(x) = v {
                if !(x > 0.0 && x.is_finite()) {
                    return Err(format!("{name} must be a positive number, not {x}"));
                }
            }
        }
        Ok(Objective { target_tokens_per_s, budget_usd, max_power_w })
    }

    fn minimizes_cost(&self) -> bool {
        self.target_tokens_per_s.is_some()
    }

    fn describe(&self, model: &str) -> String {
        let mut limits = Vec::new();
        if let Some(b) = self.budget_usd {
            limits.push(format!("hardware <= ${}", money(b)));
        }
        if let Some(p) = self.max_power_w {
            limits.push(format!("power <= {p:.0} W"));
        }
        let lim = if limits.is_empty() { String::new() } else { format!(" with {}", limits.join(" and ")) };
        match self.target_tokens_per_s {
            Some(t) => format!("cheapest cluster that runs {model} at >= {t} tok/s{lim}"),
            None => format!("fastest cluster for {model}{lim}"),
        }
    }
}

/// A planning request.
#[derive(Clone, Debug)]
pub struct PlanRequest {
    /// Model preset.
    pub model: String,
    /// Quantization (None: the engine's format of the model's default).
    pub quant: Option<String>,
    /// Context to hold: prompt + generated tokens.
    pub context: u64,
    /// Objective and constraints.
    pub objective: Objective,
    /// Node presets allowed (empty: all).
    pub nodes: Vec<String>,
    /// Largest cluster.
    pub max_nodes: usize,
    /// Fabrics allowed (empty: all).
    pub fabrics: Vec<String>,
    /// Engines allowed (empty: all).
    pub engines: Vec<String>,
    /// Worker threads.
    pub jobs: Option<usize>,
}

/// What happened to a candidate.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Predicted.
    Ran(Box<Estimate>),
    /// The scenario is not buildable (too few ports, illegal split, wrong format, ...).
    Invalid {
        /// The scenario error.
        message: String,
    },
    /// Valid but cannot run (does not fit, ...).
    NoRun {
        /// The estimate error.
        message: String,
    },
}

/// One cluster considered.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Enumeration order.
    pub id: usize,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric (None for one node).
    pub fabric: Option<String>,
    /// Topology (None for one node).
    pub topology: Option<String>,
    /// Engine id.
    pub engine: String,
    /// Parallelism id.
    pub parallelism: String,
    /// The scenario text.
    pub toml: String,
    /// The prediction or why not.
    pub outcome: Outcome,
}

impl Candidate {
    /// The estimate, if it ran.
    pub fn estimate(&self) -> Option<&Estimate> {
        match &self.outcome {
            Outcome::Ran(e) => Some(e),
            _ => None,
        }
    }

    /// Short description: `2x m3-ultra-80c-512gb, tb5-rdma full-mesh, exo tensor`.
    pub fn describe(&self) -> String {
        let wiring = match (&self.fabric, &self.topology) {
            (Some(f), Some(t)) => format!(", {f} {t}"),
            _ => String::new(),
        };
        format!("{}{wiring}, {} {}", nodes_label(&self.nodes), self.engine, self.parallelism)
    }
}

/// The result of planning.
#[derive(Debug)]
pub struct Plan {
    /// The request.
    pub request: PlanRequest,
    /// Every candidate, in enumeration order.
    pub candidates: Vec<Candidate>,
    /// Candidates meeting the objective's constraints, best first.
    pub ranked: Vec<usize>,
    /// The best, if any meets the constraints.
    pub winner: Option<usize>,
    /// Non-dominated candidates (more tok/s, fewer $, fewer W), by cost.
    pub pareto: Vec<usize>,
    /// Wall time of the search, s.
    pub seconds: f64,
}

fn money(x: f64) -> String {
    let s = format!("{:.0}", x.round());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn nodes_label(nodes: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in nodes {
        match out.last_mut() {
            Some((id, c)) if id == n => *c += 1,
            _ => out.push((n.clone(), 1)),
        }
    }
    out.iter().map(|(id, c)| format!("{c}x {id}")).collect::<Vec<_>>().join(" + ")
}

const ENGINES: &[&str] = &["exo", "mlx-lm", "llama-cpp", "llama-cpp-rpc"];

/// Multisets of `k` items from `types` (indices, non-decreasing).
fn multisets(types: usize, k: usize, out: &mut Vec<Vec<usize>>, cur: &mut Vec<usize>, from: usize) {
    if cur.len() == k {
        out.push(cur.clone());
        return;
    }
    for t in from..types {
        cur.push(t);
        multisets(types, k, out, cur, t);
        cur.pop();
    }
}

/// Enumerates candidate scenarios (not yet predicted).
pub fn candidates(req: &PlanRequest) -> Result<Vec<Candidate>, String> {
    let cat = catalog();
    if cat.model(&req.model).is_none() {
        let ids = cat.model_ids();
        let hint = did_you_mean(&req.model, &ids).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
        return Err(format!("unknown model `{}`; {hint}known models: {}", req.model, ids.join(", ")));
    }
    if let Some(q) = &req.quant {
        if cat.quant(q).is_none() {
            return Err(format!("unknown quantization `{q}`; known: {}", cat.quant_ids().join(", ")));
        }
    }
    if req.context < 2 || req.context > 1 << 20 {
        return Err(format!("--context {} is out of range (2 to {})", req.context, 1u64 << 20));
    }
    if req.max_nodes == 0 || req.max_nodes > 16 {
        return Err(format!("--max-nodes {} is out of range (1 to 16)", req.max_nodes));
    }
    let node_ids = cat.node_ids();
    for n in &req.nodes {
        if cat.node(n).is_none() {
            let hint = did_you_mean(n, &node_ids).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
            return Err(format!("unknown node `{n}`; {hint}known nodes: {}", node_ids.join(", ")));
        }
    }
    let fabric_ids: Vec<&str> = cat.fabric_ids().into_iter().filter(|f| *f != "none").collect();
    for f in &req.fabrics {
        if !fabric_ids.contains(&f.as_str()) {
            let hint = did_you_mean(f, &fabric_ids).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
            return Err(format!("unknown fabric `{f}`; {hint}known fabrics: {}", fabric_ids.join(", ")));
        }
    }
    for e in &req.engines {
        if !ENGINES.contains(&e.as_str()) {
            return Err(format!("unknown engine `{e}`; engines: {}", ENGINES.join(", ")));
        }
    }
    let allowed_engine = |e: &str| req.engines.is_empty() || req.engines.iter().any(|x| x == e);
    // Node types by chip; a mix combines types of one chip with different memory sizes.
    let types: Vec<&crate::hw::NodeSpec> = cat.nodes.iter().filter(|n| req.nodes.is_empty() || req.nodes.contains(&n.id)).collect();
    let mut families: Vec<Vec<&crate::hw::NodeSpec>> = Vec::new();
    for t in &types {
        match families.iter_mut().find(|f| f[0].chip == t.chip) {
            Some(f) => f.push(t),
            None => families.push(vec![t]),
        }
    }
    let mut mixes: Vec<Vec<String>> = Vec::new();
    for fam in &families {
        let mut fam = fam.clone();
        fam.sort_by(|a, b| b.memory_gb.total_cmp(&a.memory_gb).then(a.id.cmp(&b.id)));
        for k in 1..=req.max_nodes {
            let mut sets = Vec::new();
            multisets(fam.len(), k, &mut sets, &mut Vec::new(), 0);
            for s in sets {
                let mix: Vec<&crate::hw::NodeSpec> = s.iter().map(|&i| fam[i]).collect();
                // Same-memory types of a chip (e.g. Dell GB10 and DGX Spark) are alternatives, not a mix.
                let mixed_equal = mix.windows(2).any(|w| w[0].id != w[1].id && w[0].memory_gb == w[1].memory_gb);
                if !mixed_equal {
                    mixes.push(mix.iter().map(|n| n.id.clone()).collect());
                }
            }
        }
    }
    let generate = 128.min(req.context / 2).max(1);
    let prompt = req.context - generate;
    let mut out = Vec::new();
    for mix in mixes {
        let n = mix.len();
        // (fabric and topology, engine, parallelism)
        type Config<'a> = (Option<(String, String)>, &'a str, &'a str);
        let mut configs: Vec<Config> = Vec::new();
        if n == 1 {
            for (e, p) in [("mlx-lm", "none"), ("llama-cpp", "none"), ("exo", "none")] {
                if allowed_engine(e) {
                    configs.push((None, e, p));
                }
            }
        } else {
            for f in cat.fabrics.iter().filter(|f| f.id != "none" && (req.fabrics.is_empty() || req.fabrics.contains(&f.id))) {
                for t in &f.topologies {
                    for (e, p) in [("exo", "tensor"), ("exo", "pipeline"), ("llama-cpp-rpc", "pipeline")] {
                        if allowed_engine(e) {
                            configs.push((Some((f.id.clone(), t.id().to_string())), e, p));
                        }
                    }
                }
            }
        }
        for (wiring, engine, par) in configs {
            let mut t = String::new();
            let (fabric, topology) = match &wiring {
                Some((f, tp)) => (Some(f.clone()), Some(tp.clone())),
                None => (None, None),
            };
            let name = format!(
                "plan: {}{} {engine} {par}",
                nodes_label(&mix),
                wiring.as_ref().map(|(f, tp)| format!(" {f} {tp}")).unwrap_or_default()
            );
            let _ = writeln!(t, "name = {}", toml::Value::String(name));
            let _ = writeln!(t, "seed = 1\n\n[cluster]");
            let list: Vec<String> = mix.iter().map(|id| format!("\"{id}\"")).collect();
            let _ = writeln!(t, "nodes = [{}]", list.join(", "));
            if let Some((f, tp)) = &wiring {
                let _ = writeln!(t, "fabric = \"{f}\"\ntopology = \"{tp}\"");
            }
            let _ = writeln!(t, "\n[model]\nname = \"{}\"", req.model);
            if let Some(q) = &req.quant {
                let _ = writeln!(t, "quant = \"{q}\"");
            }
            let _ = writeln!(t, "\n[engine]\nname = \"{engine}\"\nparallelism = \"{par}\"");
            let _ = writeln!(t, "\n[workload]\nkind = \"generate\"\nprompt_tokens = {prompt}\ngenerate_tokens = {generate}");
            out.push(Candidate {
                id: out.len(),
                nodes: mix.clone(),
                fabric,
                topology,
                engine: engine.to_string(),
                parallelism: par.to_string(),
                toml: t,
                outcome: Outcome::Invalid { message: String::new() },
            });
        }
    }
    Ok(out)
}

fn evaluate(c: &Candidate, profile: &Profile) -> Outcome {
    let src = Source { path: format!("plan candidate {}", c.id), dir: std::path::PathBuf::new(), text: c.toml.clone() };
    match scenario::parse(src) {
        Err(e) => Outcome::Invalid { message: e.message },
        Ok(s) => match estimate(&s, profile) {
            Ok(e) => Outcome::Ran(Box::new(e)),
            Err(err) => {
                let EstimateError::Plan(_) = &err;
                Outcome::NoRun { message: err.to_string() }
            }
        },
    }
}

/// Plans: enumerates, predicts every candidate in parallel, ranks.
pub fn plan(req: &PlanRequest, profile: &Profile) -> Result<Plan, String> {
    let t0 = Instant::now();
    let mut cands = candidates(req)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(req.jobs.unwrap_or(0)).build().map_err(|e| e.to_string())?;
    pool.install(|| cands.par_iter_mut().for_each(|c| c.outcome = evaluate(c, profile)));
    let o = &req.objective;
    let feasible = |e: &Estimate| {
        o.target_tokens_per_s.is_none_or(|t| e.decode_tokens_per_s >= t)
            && o.budget_usd.is_none_or(|b| e.cost_usd <= b)
            && o.max_power_w.is_none_or(|p| e.cluster_power_w <= p)
    };
    let mut ranked: Vec<usize> = cands.iter().filter(|c| c.estimate().is_some_and(feasible)).map(|c| c.id).collect();
    let est = |i: usize| cands[i].estimate().expect("ran");
    ranked.sort_by(|&a, &b| {
        let (x, y) = (est(a), est(b));
        let by_cost = x.cost_usd.total_cmp(&y.cost_usd);
        let by_speed = y.decode_tokens_per_s.total_cmp(&x.decode_tokens_per_s);
        let by_power = x.cluster_power_w.total_cmp(&y.cluster_power_w);
        let primary = if o.minimizes_cost() { by_cost.then(by_power).then(by_speed) } else { by_speed.then(by_cost).then(by_power) };
        primary.then(a.cmp(&b))
    });
    let ran: Vec<usize> = cands.iter().filter(|c| c.estimate().is_some()).map(|c| c.id).collect();
    let mut pareto: Vec<usize> = Vec::new();
    for &i in &ran {
        let a = est(i);
        let dominated = ran.iter().any(|&j| {
            let b = est(j);
            let ge = b.decode_tokens_per_s >= a.decode_tokens_per_s && b.cost_usd <= a.cost_usd && b.cluster_power_w <= a.cluster_power_w;
            let gt = b.decode_tokens_per_s > a.decode_tokens_per_s || b.cost_usd < a.cost_usd || b.cluster_power_w < a.cluster_power_w;
            // Exact ties: keep the first enumerated.
            ge && (gt || j < i)
        });
        if !dominated {
            pareto.push(i);
        }
    }
    pareto.sort_by(|&a, &b| est(a).cost_usd.total_cmp(&est(b).cost_usd).then(a.cmp(&b)));
    Ok(Plan {
        request: req.clone(),
        winner: ranked.first().copied(),
        ranked,
        pareto,
        candidates: cands,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Groups scenario and estimate errors into a few causes.
fn cause(message: &str) -> &'static str {
    let m = message;
    if m.contains("does not fit") {
        "does not fit in memory"
    } else if m.contains("ports per node") || m.contains("MESH_MAX_PEERS") {
        "too few ports for the topology"
    } else if m.contains("tensor parallel over") || m.contains("pipeline stages") {
        "illegal split of the model"
    } else if m.contains("cannot load") {
        "quantization format the engine cannot load"
    } else if m.contains("cannot be cabled") {
        "fabric cannot be cabled that way"
    } else if m.contains("Thunderbolt") || m.contains("QSFP") || m.contains("RDMA") {
        "node lacks the fabric's ports"
    } else if m.contains("calibration") {
        "no calibration for this chip and runtime"
    } else {
        "other"
    }
}

impl Plan {
    fn est(&self, i: usize) -> &Estimate {
        self.candidates[i].estimate().expect("ran")
    }

    /// Why candidate `i` is not the winner.
    pub fn verdict(&self, i: usize) -> String {
        let c = &self.candidates[i];
        let o = &self.request.objective;
        let e = match &c.outcome {
            Outcome::Invalid { message } | Outcome::NoRun { message } => return format!("{}: {message}", cause(message)),
            Outcome::Ran(e) => e,
        };
        if Some(i) == self.winner {
            return "winner".into();
        }
        if let Some(t) = o.target_tokens_per_s.filter(|t| e.decode_tokens_per_s < *t) {
            return format!("too slow: {:.1} < {t} tok/s", e.decode_tokens_per_s);
        }
        if let Some(b) = o.budget_usd.filter(|b| e.cost_usd > *b) {
            return format!("over budget: ${} > ${}", money(e.cost_usd), money(b));
        }
        if let Some(p) = o.max_power_w.filter(|p| e.cluster_power_w > *p) {
            return format!("over power: {:.0} > {p:.0} W", e.cluster_power_w);
        }
        let Some(w) = self.winner.map(|w| self.est(w)) else { return "no winner".into() };
        if o.minimizes_cost() {
            if e.cost_usd > w.cost_usd {
                format!("dearer: +${} over the winner", money(e.cost_usd - w.cost_usd))
            } else if e.cluster_power_w > w.cluster_power_w {
                format!("same cost, more power: +{:.0} W", e.cluster_power_w - w.cluster_power_w)
            } else {
                format!("tie on cost and power; slower or enumerated later ({:.1} tok/s)", e.decode_tokens_per_s)
            }
        } else if e.decode_tokens_per_s < w.decode_tokens_per_s {
            format!("slower: {:.1} vs {:.1} tok/s", e.decode_tokens_per_s, w.decode_tokens_per_s)
        } else if e.cost_usd > w.cost_usd {
            format!("as fast, dearer: +${}", money(e.cost_usd - w.cost_usd))
        } else {
            "tie; enumerated later".into()
        }
    }

    /// Candidates that did not run, grouped by cause: (cause, count, first example).
    pub fn failures(&self) -> Vec<(&'static str, usize, String)> {
        let mut out: Vec<(&'static str, usize, String)> = Vec::new();
        for c in &self.candidates {
            let msg = match &c.outcome {
                Outcome::Invalid { message } | Outcome::NoRun { message } => message,
                Outcome::Ran(_) => continue,
            };
            let k = cause(msg);
            match out.iter_mut().find(|x| x.0 == k) {
                Some(x) => x.1 += 1,
                None => out.push((k, 1, format!("{}: {msg}", c.describe()))),
            }
        }
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        out
    }

    /// The cabling plan of candidate `i`: (text lines, number of cables).
    pub fn cabling(&self, i: usize) -> (Vec<String>, usize) {
        let c = &self.candidates[i];
        let Some(e) = c.estimate() else { return (vec![], 0) };
        let Some(topo) = Topology::parse(&e.topology) else { return (vec![], 0) };
        let n = e.nodes.len();
        let fabric = catalog().fabric(&e.fabric);
        let port_kind = fabric.map_or("port", |f| match f.port {
            PortKind::Thunderbolt if f.min_tb_generation >= 5 => "Thunderbolt 5 port",
            PortKind::Thunderbolt => "Thunderbolt/USB4 port",
            PortKind::Qsfp => "QSFP port",
            PortKind::Ethernet => "Ethernet port",
            PortKind::Wireless => "Wi-Fi",
            PortKind::None => "port",
        });
        let plan = cabling(topo, n);
        let mut lines = Vec::new();
        for (k, (a, pa, b, pb)) in plan.iter().enumerate() {
            let left = format!("node {a} ({}) {port_kind} {}", e.nodes[*a], pa + 1);
            let right =
                if *b == n { format!("switch port {}", pb + 1) } else { format!("node {b} ({}) {port_kind} {}", e.nodes[*b], pb + 1) };
            lines.push(format!("cable {:>2}: {left:<52} <-> {right}", k + 1));
        }
        (lines, plan.len())
    }

    fn row(&self, i: usize) -> String {
        let c = &self.candidates[i];
        let e = self.est(i);
        let cal = if e.calibration.status == "inside" { "" } else { " *" };
        format!(
            "{:<58} {:>8.2} {:>9} {:>7.0} {:>7.2} {:>8.2}{cal}",
            truncate(&c.describe(), 58),
            e.decode_tokens_per_s,
            money(e.cost_usd),
            e.cluster_power_w,
            e.energy_j_per_token,
            e.usd_per_mtok
        )
    }

    /// The human report.
    pub fn report(&self, top: usize, all: bool) -> String {
        let mut s = String::new();
        let req = &self.request;
        let model = catalog().model(&req.model).map_or(req.model.clone(), |(p, _)| format!("{} ({})", p.name, p.id));
        let ran = self.candidates.iter().filter(|c| c.estimate().is_some()).count();
        let _ = writeln!(s, "Plan: {}", req.objective.describe(&model));
        let generate = 128.min(req.context / 2).max(1);
        let _ = writeln!(
            s,
            "  context {} tokens ({} prompt + {generate} generated); quant: {}; up to {} nodes; nodes: {}; fabrics: {}; engines: {}",
            req.context,
            req.context - generate,
            req.quant.as_deref().unwrap_or("the engine's format of the model default"),
            req.max_nodes,
            if req.nodes.is_empty() { "all".into() } else { req.nodes.join(",") },
            if req.fabrics.is_empty() { "all".into() } else { req.fabrics.join(",") },
            if req.engines.is_empty() { "all".into() } else { req.engines.join(",") },
        );
        let _ = writeln!(
            s,
            "  searched {} candidates in {:.1} s with the run estimator: {ran} predicted, {} could not run, {} meet the objective",
            self.candidates.len(),
            self.seconds,
            self.candidates.len() - ran,
            self.ranked.len()
        );
        let header =
            format!("{:<58} {:>8} {:>9} {:>7} {:>7} {:>8}", "cluster, wiring, engine split", "tok/s", "USD", "W", "J/tok", "$/Mtok");
        let _ = writeln!(s);
        match self.winner {
            Some(w) => {
                let e = self.est(w);
                let _ = writeln!(s, "WINNER  {}", self.candidates[w].describe());
                let _ = writeln!(
                    s,
                    "        {:.2} tok/s decode, TTFT {:.2} s, ${} hardware, {:.0} W, {:.2} J/token, ${:.2}/Mtok, memory/node {} GB{}",
                    e.decode_tokens_per_s,
                    e.ttft_s,
                    money(e.cost_usd),
                    e.cluster_power_w,
                    e.energy_j_per_token,
                    e.usd_per_mtok,
                    e.memory_per_node_gb.iter().map(|m| format!("{m:.0}")).collect::<Vec<_>>().join("/"),
                    if e.calibration.status == "inside" {
                        String::new()
                    } else {
                        format!("\n        EXTRAPOLATION: {}", e.calibration.reasons.join("; "))
                    }
                );
            }
            None => {
                let _ = writeln!(s, "NO CLUSTER meets the objective (the closest are listed below).");
            }
        }
        if self.ranked.is_empty() {
            let _ = writeln!(s, "\nCLOSEST (fastest that ran; none meets the objective)\n  {header}  why not");
        } else {
            let _ = writeln!(s, "\nBEST {}\n  {header}  why not the winner", top.min(self.ranked.len()));
        }
        for &i in self.ranked.iter().take(top) {
            let _ = writeln!(s, "  {}  {}", self.row(i), self.verdict(i));
        }
        if self.ranked.is_empty() {
            let mut near: Vec<usize> = self.candidates.iter().filter(|c| c.estimate().is_some()).map(|c| c.id).collect();
            near.sort_by(|&a, &b| self.est(b).decode_tokens_per_s.total_cmp(&self.est(a).decode_tokens_per_s).then(a.cmp(&b)));
            for &i in near.iter().take(top) {
                let _ = writeln!(s, "  {}  {}", self.row(i), self.verdict(i));
            }
        }
        let shown = if all { self.pareto.len() } else { self.pareto.len().min(15) };
        let _ = writeln!(
            s,
            "\nPARETO FRONT (no other cluster is faster, cheaper and lower-power at once): {} clusters, fastest first",
            self.pareto.len()
        );
        let _ = writeln!(s, "  {header}  verdict");
        let mut front = self.pareto.clone();
        front.sort_by(|&a, &b| self.est(b).decode_tokens_per_s.total_cmp(&self.est(a).decode_tokens_per_s).then(a.cmp(&b)));
        for &i in front.iter().take(shown) {
            let _ = writeln!(s, "  {}  {}", self.row(i), self.verdict(i));
        }
        if shown < self.pareto.len() {
            let _ = writeln!(s, "  ... {} slower ones (--all)", self.pareto.len() - shown);
        }
        let _ = writeln!(s, "\nWHY THE OTHERS LOST");
        let mut by_verdict: Vec<(String, usize)> = Vec::new();
        for c in self.candidates.iter().filter(|c| c.estimate().is_some() && Some(c.id) != self.winner) {
            let v = self.verdict(c.id);
            let k = v.split(':').next().unwrap_or("").to_string();
            match by_verdict.iter_mut().find(|x| x.0 == k) {
                Some(x) => x.1 += 1,
                None => by_verdict.push((k, 1)),
            }
        }
        for (k, n) in &by_verdict {
            let _ = writeln!(s, "  {n:>6}  predicted, {k}");
        }
        for (k, n, example) in self.failures() {
            let _ = writeln!(s, "  {n:>6}  {k}, e.g. {}", truncate(&example, 200));
        }
        if all {
            let _ = writeln!(s, "\nEVERY CANDIDATE");
            for c in &self.candidates {
                let _ = writeln!(s, "  {:>5}  {:<58}  {}", c.id, truncate(&c.describe(), 58), self.verdict(c.id));
            }
        }
        if let Some(w) = self.winner {
            let (lines, n) = self.cabling(w);
            let e = self.est(w);
            let f = catalog().fabric(&e.fabric);
            if n == 0 {
                let _ = writeln!(s, "\nCABLING FOR THE WINNER: none (one node)");
            } else {
                let cable = f.map_or(String::new(), |f| format!(" ({}, ${} each)", f.name, money(f.cable_usd)));
                let switch = if e.topology == "switch" { " plus one switch" } else { "" };
                let _ = writeln!(
                    s,
                    "\nCABLING FOR THE WINNER: {n} cable{}{cable}{switch}, {} topology",
                    if n == 1 { "" } else { "s" },
                    e.topology
                );
                for l in lines {
                    let _ = writeln!(s, "  {l}");
                }
            }
        }
        let _ = writeln!(s, "\n  * prediction outside the calibrated envelope (see `supernode run` on the scenario)");
        s
    }

    /// The plan as JSON.
    pub fn to_json(&self, top: usize) -> serde_json::Value {
        let cand = |i: usize| {
            let c = &self.candidates[i];
            let e = c.estimate();
            json!({
                "cluster": c.describe(),
                "nodes": c.nodes,
                "fabric": c.fabric,
                "topology": c.topology,
                "engine": c.engine,
                "parallelism": c.parallelism,
                "decode_tokens_per_s": e.map(|e| e.decode_tokens_per_s),
                "cost_usd": e.map(|e| e.cost_usd),
                "cluster_power_w": e.map(|e| e.cluster_power_w),
                "energy_j_per_token": e.map(|e| e.energy_j_per_token),
                "usd_per_mtok": e.map(|e| e.usd_per_mtok),
                "calibration": e.map(|e| e.calibration.status.clone()),
                "verdict": self.verdict(i),
            })
        };
        let winner = self.winner.map(|w| {
            let (lines, n) = self.cabling(w);
            let mut v = cand(w);
            v["cables"] = json!(n);
            v["cabling"] = json!(lines);
            v["scenario"] = json!(self.candidates[w].toml);
            v
        });
        json!({
            "model": self.request.model,
            "objective": {
                "target_tokens_per_s": self.request.objective.target_tokens_per_s,
                "budget_usd": self.request.objective.budget_usd,
                "max_power_w": self.request.objective.max_power_w,
            },
            "context": self.request.context,
            "candidates": self.candidates.len(),
            "predicted": self.candidates.iter().filter(|c| c.estimate().is_some()).count(),
            "meet_objective": self.ranked.len(),
            "winner": winner,
            "best": self.ranked.iter().take(top).map(|&i| cand(i)).collect::<Vec<_>>(),
            "pareto": self.pareto.iter().map(|&i| cand(i)).collect::<Vec<_>>(),
            "could_not_run": self.failures().iter().map(|(k, n, ex)| json!({"cause": k, "count": n, "example": ex})).collect::<Vec<_>>(),
        })
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { s.chars().take(n - 1).collect::<String>() + "…" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_and_money() {
        let mut out = Vec::new();
        multisets(3, 2, &mut out, &mut Vec::new(), 0);
        assert_eq!(out.len(), 6);
        assert_eq!(money(23468.4), "23,468");
        assert_eq!(money(999.0), "999");
        assert!(Objective::new(None, None, None).is_err());
    }
}
