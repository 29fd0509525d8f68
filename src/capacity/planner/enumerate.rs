//! The candidates of a planning request: node mixes (one chip per mix, up to `max_nodes`), and
//! per mix every fabric, topology, engine and split allowed, each as a [`ScenarioBuilder`].

use crate::catalog::{Catalog, catalog};
use crate::hw::NodeSpec;
use crate::scenario::ScenarioBuilder;
use crate::util::did_you_mean;

use super::{Candidate, Outcome, PlanRequest, nodes_label};
use crate::scenario::ErrorKind;

/// Engines the planner may choose from.
pub const ENGINES: &[&str] = &["exo", "mlx-lm", "llama-cpp", "llama-cpp-rpc"];

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

/// An unknown name with a did-you-mean.
fn unknown(what: &str, plural: &str, name: &str, known: &[&str]) -> String {
    let hint = did_you_mean(name, known).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
    format!("unknown {what} `{name}`; {hint}known {plural}: {}", known.join(", "))
}

/// Checks the request's names and ranges.
fn check_request(req: &PlanRequest, cat: &Catalog) -> Result<(), String> {
    if cat.model(&req.model).is_none() {
        return Err(unknown("model", "models", &req.model, &cat.model_ids()));
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
    if let Some(n) = req.nodes.iter().find(|n| cat.node(n).is_none()) {
        return Err(unknown("node", "nodes", n, &cat.node_ids()));
    }
    let fabric_ids: Vec<&str> = cat.fabric_ids().into_iter().filter(|f| *f != "none").collect();
    if let Some(f) = req.fabrics.iter().find(|f| !fabric_ids.contains(&f.as_str())) {
        return Err(unknown("fabric", "fabrics", f, &fabric_ids));
    }
    if let Some(e) = req.engines.iter().find(|e| !ENGINES.contains(&e.as_str())) {
        return Err(format!("unknown engine `{e}`; engines: {}", ENGINES.join(", ")));
    }
    Ok(())
}

/// Node mixes: per chip, multisets of its node types (largest memory first) of 1..=max nodes.
fn node_mixes(req: &PlanRequest, cat: &Catalog) -> Vec<Vec<String>> {
    let types: Vec<&NodeSpec> = cat.nodes.iter().filter(|n| req.nodes.is_empty() || req.nodes.contains(&n.id)).collect();
    let mut families: Vec<Vec<&NodeSpec>> = Vec::new();
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
                let mix: Vec<&NodeSpec> = s.iter().map(|&i| fam[i]).collect();
                // Same-memory types of a chip (e.g. Dell GB10 and DGX Spark) are alternatives, not a mix.
                let mixed_equal = mix.windows(2).any(|w| w[0].id != w[1].id && w[0].memory_gb == w[1].memory_gb);
                if !mixed_equal {
                    mixes.push(mix.iter().map(|n| n.id.clone()).collect());
                }
            }
        }
    }
    mixes
}

/// Wiring (fabric, topology) if more than one node, engine, parallelism.
type Config = (Option<(String, String)>, &'static str, &'static str);

/// The configurations of a mix of `n` nodes the request allows.
fn configs(req: &PlanRequest, cat: &Catalog, n: usize) -> Vec<Config> {
    let allowed_engine = |e: &str| req.engines.is_empty() || req.engines.iter().any(|x| x == e);
    let mut configs: Vec<Config> = Vec::new();
    if n == 1 {
        for (e, p) in [("mlx-lm", "none"), ("llama-cpp", "none"), ("exo", "none")] {
            if allowed_engine(e) {
                configs.push((None, e, p));
            }
        }
        return configs;
    }
    for f in cat.fabrics.iter().filter(|f| f.id != "none" && (req.fabrics.is_empty() || req.fabrics.contains(&f.id))) {
        for t in &f.topologies {
            for (e, p) in [("exo", "tensor"), ("exo", "pipeline"), ("llama-cpp-rpc", "pipeline")] {
                if allowed_engine(e) {
                    configs.push((Some((f.id.clone(), t.id().to_string())), e, p));
                }
            }
        }
    }
    configs
}

/// Prompt and generated tokens of a context: 128 generated (at most half), the rest prompt.
pub fn split_context(context: u64) -> (u64, u64) {
    let generate = 128.min(context / 2).max(1);
    (context - generate, generate)
}

/// The scenario of one candidate.
fn scenario(req: &PlanRequest, id: usize, mix: &[String], (wiring, engine, par): &Config) -> ScenarioBuilder {
    let (prompt, generate) = split_context(req.context);
    let name =
        format!("plan: {}{} {engine} {par}", nodes_label(mix), wiring.as_ref().map(|(f, tp)| format!(" {f} {tp}")).unwrap_or_default());
    let mut b = ScenarioBuilder::new(format!("plan candidate {id}"));
    b.name(name).seed(1).nodes(mix);
    if let Some((f, tp)) = wiring {
        b.fabric(f).topology(tp);
    }
    b.model(&req.model);
    if let Some(q) = &req.quant {
        b.quant(q);
    }
    b.engine(engine).parallelism(par).workload_kind("generate").tokens(prompt, generate);
    b
}

/// Enumerates candidate scenarios (not yet predicted).
pub fn candidates(req: &PlanRequest) -> Result<Vec<Candidate>, String> {
    let cat = catalog();
    check_request(req, cat)?;
    let mut out = Vec::new();
    for mix in node_mixes(req, cat) {
        for config in configs(req, cat, mix.len()) {
            let id = out.len();
            let (fabric, topology) = config.0.clone().unzip();
            out.push(Candidate {
                id,
                scenario: scenario(req, id, &mix, &config),
                nodes: mix.clone(),
                fabric,
                topology,
                engine: config.1.to_string(),
                parallelism: config.2.to_string(),
                outcome: Outcome::Failed { kind: ErrorKind::Invalid, message: "not evaluated".into() },
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multisets_count() {
        let mut out = Vec::new();
        multisets(3, 2, &mut out, &mut Vec::new(), 0);
        assert_eq!(out.len(), 6);
        assert_eq!(split_context(8192), (8064, 128));
        assert_eq!(split_context(3), (2, 1));
    }
}
