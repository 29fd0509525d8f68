//! The planner's report: the winner, the best few, the Pareto front, why the others lost, and
//! the winner's cabling; as text or JSON.

use std::fmt::Write as _;

use serde_json::json;

use crate::catalog::catalog;
use crate::estimate::Estimate;
use crate::hw::{PortKind, Topology, cabling};
use crate::scenario::ErrorKind;

use super::enumerate::split_context;
use super::{Goal, Outcome, Plan, money};

/// Dollars with thousands separators, no cents: `23,468`.
pub fn money_text(x: f64) -> String {
    money(x)
}

/// The `format` of the plan JSON `plan --out` writes.
pub const PLAN_FORMAT: &str = "supernode-plan-1";

/// A score with three significant digits (tokens/day per $ run from ~10 to ~1,000).
pub fn sig_text(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// The failure group of a kind, as the report names it.
pub fn cause(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::DoesNotFit => "does not fit in memory",
        ErrorKind::ContextWindow => "longer than the model's context window",
        ErrorKind::TooFewPorts => "too few ports for the topology",
        ErrorKind::IllegalSplit => "illegal split of the model",
        ErrorKind::QuantFormat => "quantization format the engine cannot load",
        ErrorKind::Topology => "fabric cannot be cabled that way",
        ErrorKind::MissingPorts => "node lacks the fabric's ports",
        ErrorKind::Uncalibrated => "no calibration for this chip and runtime",
        ErrorKind::UnknownPreset | ErrorKind::UnknownKey | ErrorKind::BadValue | ErrorKind::Invalid => "other",
    }
}

impl Plan {
    pub(super) fn est(&self, i: usize) -> &Estimate {
        self.candidates[i].estimate().expect("ran")
    }

    /// The objective's score of candidate `i` (it must have run).
    pub fn score(&self, i: usize) -> f64 {
        self.request.objective.goal.score(self.est(i), self.candidates[i].availability)
    }

    /// Candidates skipped by budget pruning.
    pub fn pruned(&self) -> usize {
        self.candidates.iter().filter(|c| matches!(c.outcome, Outcome::Pruned { .. })).count()
    }

    /// Candidates skipped because a simulated one dominates them (by their bounds).
    pub fn dominated(&self) -> usize {
        self.candidates.iter().filter(|c| matches!(c.outcome, Outcome::Dominated { .. })).count()
    }

    /// Why candidate `i` is not the winner.
    pub fn verdict(&self, i: usize) -> String {
        let c = &self.candidates[i];
        let o = &self.request.objective;
        let e = match &c.outcome {
            Outcome::Failed { kind, message } => return format!("{}: {message}", cause(*kind)),
            Outcome::Pruned { cost_usd } => {
                let b = o.budget_usd.unwrap_or(0.0);
                return format!("over budget (pruned, not simulated): ${} > ${}", money(*cost_usd), money(b));
            }
            Outcome::Dominated { by, bounds } => {
                let d = self.candidates[*by].estimate().expect("a dominating candidate ran");
                return format!(
                    "dominated (pruned, not simulated): #{by} runs {:.1} tok/s >= this one's bound {:.1}, for ${} <= ${} and {:.0} W <= {:.0} W",
                    d.decode_tokens_per_s,
                    bounds.tokens_per_s_max,
                    money(d.cost_usd),
                    money(c.hardware_usd),
                    d.cluster_power_w,
                    bounds.power_w_min
                );
            }
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
        } else if o.goal != Goal::Speed && self.score(i) < self.score(self.winner.expect("winner")) {
            let (x, y) = (self.score(i), self.score(self.winner.expect("winner")));
            format!("lower {}: {} vs {}", o.goal.unit(), sig_text(x), sig_text(y))
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
            let (k, msg) = match &c.outcome {
                Outcome::Failed { kind, message } => (cause(*kind), message),
                Outcome::Ran(_) | Outcome::Pruned { .. } | Outcome::Dominated { .. } => continue,
            };
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
            "{:<58} {:>8.2} {:>9} {:>7.0} {:>7.2} {:>8.2} {:>8.4}{cal}",
            truncate(&c.describe(), 58),
            e.decode_tokens_per_s,
            money(e.cost_usd),
            e.cluster_power_w,
            e.energy_j_per_token,
            e.usd_per_mtok,
            c.availability * 100.0
        )
    }

    /// The human report.
    pub fn report(&self, top: usize, all: bool) -> String {
        let mut s = String::new();
        self.write_header(&mut s);
        let header = format!(
            "{:<58} {:>8} {:>9} {:>7} {:>7} {:>8} {:>8}",
            "cluster, wiring, engine split", "tok/s", "USD", "W", "J/tok", "$/Mtok", "avail %"
        );
        let _ = writeln!(s);
        self.write_winner(&mut s);
        self.write_best(&mut s, &header, top);
        self.write_pareto(&mut s, &header, all);
        self.write_losers(&mut s);
        if all {
            let _ = writeln!(s, "\nEVERY CANDIDATE");
            for c in &self.candidates {
                let _ = writeln!(s, "  {:>5}  {:<58}  {}", c.id, truncate(&c.describe(), 58), self.verdict(c.id));
            }
        }
        if let Some(w) = self.winner {
            self.write_cabling(&mut s, w);
        }
        let _ = writeln!(s, "\n  * prediction outside the calibrated envelope (see `supernode run` on the scenario)");
        s
    }

    /// The question asked, in words.
    pub fn question(&self) -> String {
        let req = &self.request;
        let model = catalog().model(&req.model).map_or(req.model.clone(), |(p, _)| format!("{} ({})", p.name, p.id));
        match &req.question {
            Some(q) => format!("{q} ({})", req.objective.describe(&model)),
            None => req.objective.describe(&model),
        }
    }

    /// The objective, the search space and how much of it ran.
    fn write_header(&self, s: &mut String) {
        let req = &self.request;
        let model = catalog().model(&req.model).map_or(req.model.clone(), |(p, _)| format!("{} ({})", p.name, p.id));
        let ran = self.candidates.iter().filter(|c| c.estimate().is_some()).count();
        let _ = writeln!(s, "Plan: {}", self.question());
        let _ = &model;
        let (prompt, generate) = split_context(req.context);
        let _ = writeln!(
            s,
            "  context {} tokens ({} prompt + {generate} generated); quant: {}; up to {} nodes; nodes: {}; fabrics: {}; engines: {}",
            req.context,
            prompt,
            req.quant.as_deref().unwrap_or("the engine's format of the model default"),
            req.max_nodes,
            if req.nodes.is_empty() { "the default set".into() } else { req.nodes.join(",") },
            if req.fabrics.is_empty() { "the default set".into() } else { req.fabrics.join(",") },
            if req.engines.is_empty() { "all".into() } else { req.engines.join(",") },
        );
        let (pruned, dominated) = (self.pruned(), self.dominated());
        let _ = writeln!(
            s,
            "  searched {} candidates in {:.1} s with the run estimator: {pruned} over budget (pruned before simulating), {dominated} dominated by a simulated one (bounded, not simulated), {ran} predicted, {} could not run, {} meet the objective{}",
            self.candidates.len(),
            self.seconds,
            self.candidates.len() - ran - pruned - dominated,
            self.ranked.len(),
            if req.mixed_fleets { "; mixed fleets on" } else { "" }
        );
    }

    /// The winner and its figures, or that none meets the objective.
    fn write_winner(&self, s: &mut String) {
        match self.winner {
            Some(w) => {
                let e = self.est(w);
                let _ = writeln!(s, "WINNER  {}", self.candidates[w].describe());
                let goal = self.request.objective.goal;
                if goal != Goal::Speed {
                    let _ = writeln!(
                        s,
                        "        {} {} (availability {:.6})",
                        sig_text(self.score(w)),
                        goal.unit(),
                        self.candidates[w].availability
                    );
                }
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
                // A Mac node that fits only with its wired limit raised (engine::plan): the command.
                for (i, m) in e.memory.iter().enumerate() {
                    if let Some(cmd) = &m.raise_wired_limit {
                        let _ = writeln!(
                            s,
                            "        node {i} ({}) fits only with its wired limit raised above the macOS default: {cmd}",
                            m.node
                        );
                    }
                }
            }
            None => {
                let _ = writeln!(s, "NO CLUSTER meets the objective (the closest are listed below).");
            }
        }
    }

    /// The best `top` that meet the objective (or the fastest that ran, if none does).
    fn write_best(&self, s: &mut String, header: &str, top: usize) {
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
    }

    /// The Pareto front, fastest first.
    fn write_pareto(&self, s: &mut String, header: &str, all: bool) {
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
    }

    /// Why the others lost: predicted ones by verdict, failed ones by kind.
    fn write_losers(&self, s: &mut String) {
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
    }

    /// The cabling of the winner.
    fn write_cabling(&self, s: &mut String, w: usize) {
        let (lines, n) = self.cabling(w);
        let e = self.est(w);
        let f = catalog().fabric(&e.fabric);
        if n == 0 {
            let _ = writeln!(s, "\nCABLING FOR THE WINNER: none (one node)");
        } else {
            let cable = f.map_or(String::new(), |f| format!(" ({}, ${} each)", f.name, money(f.cable_usd)));
            let switch = if e.topology == "switch" { " plus one switch" } else { "" };
            let _ =
                writeln!(s, "\nCABLING FOR THE WINNER: {n} cable{}{cable}{switch}, {} topology", if n == 1 { "" } else { "s" }, e.topology);
            for l in lines {
                let _ = writeln!(s, "  {l}");
            }
        }
    }

    /// The plan as the JSON `plan --out FILE` writes for `supernode report`: [`Self::to_json`]
    /// (with the best 50) plus `format` = `supernode-plan-1`, every predicted candidate as a
    /// point (figures, verdict, envelope), and the winner's full estimate.
    pub fn to_report_json(&self) -> serde_json::Value {
        let mut v = self.to_json(50);
        v["format"] = json!(PLAN_FORMAT);
        let points: Vec<serde_json::Value> = self
            .candidates
            .iter()
            .filter_map(|c| c.estimate().map(|e| (c, e)))
            .map(|(c, e)| {
                json!({
                    "id": c.id,
                    "cluster": c.describe(),
                    "nodes": c.nodes.len(),
                    "engine": c.engine,
                    "parallelism": c.parallelism,
                    "fabric": c.fabric,
                    "mixed_fleet": c.is_mixed_fleet(),
                    "decode_tokens_per_s": e.decode_tokens_per_s,
                    "cost_usd": e.cost_usd,
                    "cluster_power_w": e.cluster_power_w,
                    "ttft_s": e.ttft_s,
                    "tpot_ms": e.tpot_ms,
                    "usd_per_mtok": e.usd_per_mtok,
                    "score": self.score(c.id),
                    "availability": c.availability,
                    "meets_objective": self.ranked.contains(&c.id),
                    "pareto": self.pareto.contains(&c.id),
                    "calibration": e.calibration,
                    "verdict": self.verdict(c.id),
                })
            })
            .collect();
        v["points"] = json!(points);
        if let Some(w) = self.winner {
            v["winner"]["estimate"] = serde_json::to_value(self.est(w)).expect("estimate serializes");
        }
        v
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
                "options": c.options.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
                "hardware_usd": c.hardware_usd,
                "availability": c.availability,
                "score": e.map(|_| self.score(i)),
                "mixed_fleet": c.is_mixed_fleet(),
                "verdict": self.verdict(i),
            })
        };
        let winner = self.winner.map(|w| {
            let (lines, n) = self.cabling(w);
            let mut v = cand(w);
            v["cables"] = json!(n);
            v["cabling"] = json!(lines);
            v["scenario"] = json!(self.candidates[w].toml());
            v
        });
        json!({
            "model": self.request.model,
            "objective": {
                "target_tokens_per_s": self.request.objective.target_tokens_per_s,
                "budget_usd": self.request.objective.budget_usd,
                "max_power_w": self.request.objective.max_power_w,
                "goal": self.request.objective.goal.id(),
                "score_unit": self.request.objective.goal.unit(),
            },
            "question": self.question(),
            "mixed_fleets": self.request.mixed_fleets,
            "pruned": self.pruned(),
            "dominated": self.dominated(),
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
