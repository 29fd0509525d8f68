//! The candidates of a planning request: node mixes (one chip per mix, up to `max_nodes`; with
//! `mixed_fleets` also mixes across chip families), and per mix every fabric, topology, engine,
//! split (and with `vary_options`, engine option set) allowed, each as a [`ScenarioBuilder`]
//! with its hardware cost computed up front (for pruning).

use crate::catalog::{Catalog, catalog};
use crate::engine::Parallelism;
use crate::engine::runtimes::{EngineRuntime, planner_candidates, planner_engines};
use crate::engine::split::fleet_is_legal;
use crate::hw::{FabricSpec, NodeSpec, Topology, cluster_cost};
use crate::scenario::ScenarioBuilder;
use crate::util::did_you_mean;

use super::{Candidate, Outcome, PlanRequest, nodes_label};
use crate::scenario::ErrorKind;

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
    let engines = planner_engines();
    if let Some(e) = req.engines.iter().find(|e| !engines.contains(&e.as_str())) {
        return Err(format!("unknown engine `{e}`; engines: {}", engines.join(", ")));
    }
    Ok(())
}

/// Node mixes: per chip, multisets of its node types (largest memory first) of 1..=max nodes.
/// With no `--nodes`, the types the catalog marks `planner` (the reference box of each
/// measured chip; other boxes of a chip and chips never measured are named to be searched).
fn node_mixes(req: &PlanRequest, cat: &Catalog) -> Vec<Vec<String>> {
    let wanted = |n: &NodeSpec| if req.nodes.is_empty() { n.planner } else { req.nodes.contains(&n.id) };
    let types: Vec<&NodeSpec> = cat.nodes.iter().filter(|n| wanted(n)).collect();
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
    if req.mixed_fleets {
        mixes.extend(cross_family_mixes(&families, req.max_nodes));
    }
    mixes
}

/// Mixes across chip families: for every set of 2+ families, one node type from each, and
/// every split of 2..=`max` nodes giving each family at least one (families in catalog order).
fn cross_family_mixes(families: &[Vec<&NodeSpec>], max: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for subset in 1u32..(1 << families.len()) {
        let fams: Vec<&Vec<&NodeSpec>> = (0..families.len()).filter(|i| subset & (1 << i) != 0).map(|i| &families[i]).collect();
        if fams.len() < 2 || fams.len() > max {
            continue;
        }
        // Every choice of one type per family.
        let mut choices: Vec<Vec<&NodeSpec>> = vec![vec![]];
        for f in &fams {
            choices = choices.iter().flat_map(|c| f.iter().map(move |t| [c.clone(), vec![*t]].concat())).collect();
        }
        for types in &choices {
            for counts in compositions(types.len(), max) {
                out.push(types.iter().zip(&counts).flat_map(|(t, &k)| std::iter::repeat_n(t.id.clone(), k)).collect());
            }
        }
    }
    out
}

/// Every way to give `parts` parts at least one each, at most `max` in all.
fn compositions(parts: usize, max: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = vec![1; parts];
    loop {
        out.push(cur.clone());
        // Odometer: increase the last part that can grow; reset the ones after it.
        let mut i = parts;
        loop {
            if i == 0 {
                return out;
            }
            i -= 1;
            cur[i] += 1;
            if cur.iter().sum::<usize>() <= max {
                break;
            }
            cur[i] = 1;
        }
    }
}

/// Wiring (fabric, topology) if more than one node, engine, parallelism, engine options.
type Config = (Option<(String, String)>, &'static str, &'static str, Vec<(&'static str, toml::Value)>);

/// The configurations of a mix the request allows (the (runtime, split) pairs the runtimes
/// enumerate on its node count, where their fleet rules allow it and the model can take the
/// split; with `vary_options`, one per engine option set).
fn configs(req: &PlanRequest, cat: &Catalog, mix: &[&NodeSpec]) -> Vec<Config> {
    let allowed_engine =
        |r: &dyn EngineRuntime| (req.engines.is_empty() || req.engines.iter().any(|x| x == r.id())) && fleet_is_legal(r.kind(), mix);
    let mut candidates = planner_candidates(mix.len());
    if let Some((_, model)) = cat.model(&req.model) {
        candidates.retain(|&(r, p)| split_fits_model(r, p, model, mix.len()));
    }
    let mut configs: Vec<Config> = Vec::new();
    let mut push = |wiring: Option<(String, String)>, jaccl: bool, r: &'static dyn EngineRuntime, p: Parallelism| {
        if allowed_engine(r) {
            for opts in option_sets(req.vary_options, r, p, jaccl, mix.len()) {
                configs.push((wiring.clone(), r.id(), p.id(), opts));
            }
        }
    };
    if mix.len() == 1 {
        for &(r, p) in &candidates {
            push(None, false, r, p);
        }
        return configs;
    }
    let wanted = |f: &FabricSpec| if req.fabrics.is_empty() { f.planner } else { req.fabrics.contains(&f.id) };
    // A TCP-only runtime (llama.cpp RPC) on an RDMA fabric runs its TCP sibling over the same
    // cables (scenario resolution): where the sibling is enumerated with that topology too, the
    // RDMA wiring would list the same prediction again as if it were another option.
    let runs_sibling = |f: &FabricSpec, t: &crate::hw::Topology| {
        f.transport == crate::hw::Transport::Rdma
            && f.tcp_fabric.as_deref().and_then(|id| cat.fabric(id)).is_some_and(|tcp| wanted(tcp) && tcp.topologies.contains(t))
    };
    for f in cat.fabrics.iter().filter(|f| f.id != "none" && wanted(f)) {
        for t in &f.topologies {
            for &(r, p) in &candidates {
                if r.speaks_tcp_only() && runs_sibling(f, t) {
                    continue;
                }
                push(Some((f.id.clone(), t.id().to_string())), f.backend == crate::hw::Backend::Jaccl, r, p);
            }
        }
    }
    configs
}

/// Whether `model` can take split `p` of runtime `r` over `nodes` nodes: a split that shards
/// every layer needs a rank count the runtime's rule accepts (a scenario asking for another is
/// refused with the legal counts; under tensor+pipeline, one stage's ranks), expert
/// parallelism needs experts, and the runtime's model code must offer the split for the
/// model's architecture ([`EngineRuntime::check_model_split`]).
fn split_fits_model(r: &dyn EngineRuntime, p: Parallelism, model: &crate::llm::ModelSpec, nodes: usize) -> bool {
    let sharded_ok = !p.slices_layers() || r.tensor_split_rule().is_legal(model, p.tensor_ranks(nodes) as u64);
    sharded_ok
        && (p != Parallelism::Expert || model.moe.is_some())
        && crate::engine::split::check_data_attention(model, p).is_ok()
        && r.check_model_split(r.id(), model, p).is_ok()
}

/// Engine option sets of a configuration: only the defaults, or with `vary` the cartesian
/// product of the options that runtime, split and backend read: the runtime's own axes
/// ([`EngineRuntime::planner_option_axes`]: for exo the macOS version, fast sync and the
/// all-reduce algorithm) and, for every engine, its two prefill chunks
/// ([`EngineRuntime::planner_prefill_chunks`]).
pub fn option_sets(
    vary: bool,
    runtime: &dyn EngineRuntime,
    par: Parallelism,
    jaccl: bool,
    nodes: usize,
) -> Vec<Vec<(&'static str, toml::Value)>> {
    if !vary {
        return vec![vec![]];
    }
    let mut axes = runtime.planner_option_axes(par, jaccl, nodes);
    let chunks = runtime.planner_prefill_chunks();
    axes.push(("engine.prefill_chunk", chunks.iter().map(|&c| toml::Value::Integer(c)).collect()));
    let mut sets: Vec<Vec<(&'static str, toml::Value)>> = vec![vec![]];
    for (key, values) in &axes {
        sets = sets.iter().flat_map(|set| values.iter().map(move |v| [set.clone(), vec![(*key, v.clone())]].concat())).collect();
    }
    sets
}

/// Prompt and generated tokens of a context: 128 generated (at most half), the rest prompt.
pub fn split_context(context: u64) -> (u64, u64) {
    let generate = 128.min(context / 2).max(1);
    (context - generate, generate)
}

/// The scenario of one candidate.
fn scenario(req: &PlanRequest, id: usize, mix: &[String], (wiring, engine, par, opts): &Config) -> ScenarioBuilder {
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
    for (k, v) in opts {
        // The keys and value types are the builder's own (KEYS); values are checked on build.
        let _ = b.set(k, v);
    }
    b
}

/// Hardware cost of a mix wired as `wiring` (one node: no fabric), from the catalog alone.
fn cost_of(cat: &Catalog, mix: &[&NodeSpec], wiring: Option<&(String, String)>) -> f64 {
    let (fabric, topology) = match wiring {
        Some((f, t)) => (cat.fabric(f), Topology::parse(t).unwrap_or(Topology::None)),
        None => (cat.fabric("none"), Topology::None),
    };
    let none = cat.fabric("none").expect("the catalog has fabric `none`");
    cluster_cost(mix.iter().copied(), fabric.unwrap_or(none), topology)
}

/// Enumerates candidate scenarios (not yet predicted), each with its hardware cost.
pub fn candidates(req: &PlanRequest) -> Result<Vec<Candidate>, String> {
    let cat = catalog();
    check_request(req, cat)?;
    let mut out = Vec::new();
    for mix in node_mixes(req, cat) {
        let specs: Vec<&NodeSpec> = mix.iter().filter_map(|id| cat.node(id)).collect();
        for config in configs(req, cat, &specs) {
            let id = out.len();
            let hardware_usd = cost_of(cat, &specs, config.0.as_ref());
            let (fabric, topology) = config.0.clone().unzip();
            out.push(Candidate {
                id,
                scenario: scenario(req, id, &mix, &config),
                nodes: mix.clone(),
                fabric,
                topology,
                engine: config.1.to_string(),
                parallelism: config.2.to_string(),
                options: config.3.iter().map(|(k, v)| (k.to_string(), v.to_string().trim_matches('"').to_string())).collect(),
                hardware_usd,
                availability: 1.0,
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
        // 2 parts of >= 1 within 4: (1,1) (1,2) (1,3) (2,1) (2,2) (3,1).
        assert_eq!(compositions(2, 4).len(), 6);
        assert_eq!(compositions(3, 3), vec![vec![1, 1, 1]]);
        let exo = crate::engine::EngineKind::Exo.behaviour();
        assert_eq!(option_sets(true, exo, Parallelism::Tensor, true, 4).len(), 16);
        assert_eq!(option_sets(false, exo, Parallelism::Tensor, true, 4).len(), 1);
    }
}
