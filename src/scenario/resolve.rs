//! Validation of a raw scenario into a typed [`Scenario`], one section at a time. The rules
//! themselves live with the physics (cabling in [`crate::hw::cabling`](mod@crate::hw::cabling), splits in
//! [`crate::engine::split`]); this file locates their errors in the file and says how to fix them.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use crate::catalog::{Catalog, catalog};
use crate::engine::split::{SplitError, check_data_attention, check_fleet, check_split, check_tensor_split, default_parallelism};
use crate::engine::{AllReduceAlgo, EngineKind, EngineOptions, LlamaBackend, Parallelism, RocmTiles, Runtime};
use crate::hw::cabling::{CablingError, check_cluster, check_node};
use crate::hw::{Backend, FabricSpec, NodeSpec, Topology, Transport};
use crate::llm::{ModelSpec, QuantFamily, QuantSpec};

use super::raw::{RawCluster, RawCost, RawEngine, RawModel, RawScenario, RawWorkload};
use super::serve::{self, Slo};
use super::source::{ErrorKind, ScenarioError, Source, one_of, positive, suggest, toml_error};
use super::{CostConfig, Scenario, Spans, Workload, WorkloadKind};

/// Most nodes a scenario may name.
const MAX_NODES: usize = 64;

/// Parses and validates scenario text.
pub fn parse(source: Source) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(&source.text).map_err(|e| toml_error(&source, &e))?;
    resolve(raw, source)
}

/// Validates a raw scenario (parsed from `source`, or built in code by
/// [`super::builder::ScenarioBuilder`]); errors locate at the raw spans in `source`.
pub(super) fn resolve(raw: RawScenario, source: Source) -> Result<Scenario, ScenarioError> {
    install_inline_catalog(&source)?;
    let cat = catalog();
    let src = &source;
    let mut spans = Spans::default();

    let cluster_span = raw.cluster.span();
    let cluster = raw.cluster.into_inner();
    let node_ids = node_ids(src, &cluster, cluster_span.clone(), &mut spans)?;
    // From here on the cluster is one replica's nodes: the copies are identical.
    let (node_ids, replicas) = replica_group(src, raw.engine.as_ref().map(|e| e.get_ref()), node_ids)?;
    let nodes = lookup_nodes(src, cat, &cluster, &node_ids)?;
    let n = nodes.len();
    let fabric = fabric(src, cat, &cluster, cluster_span, n, &mut spans)?;
    let topology = topology(src, &cluster, &fabric, n, &mut spans)?;
    check_cabling(src, &nodes, &node_ids, &fabric, topology, &spans)?;
    let wired_limit_fraction = wired_limit(src, &cluster)?;

    // The workload first: an HPL run needs no model.
    let raw_workload = raw.workload.map(|w| {
        spans.workload = w.span();
        let span = w.span();
        (w.into_inner(), span)
    });
    let workload = match &raw_workload {
        Some((w, span)) => workload(src, w, span.clone())?,
        None => Workload::default(),
    };
    let hpl = workload.kind == WorkloadKind::Hpl;
    let model_span = raw.model.span();
    let rm = raw.model.into_inner();
    let (model, default_quant, declared_quant) = if hpl && rm.name.is_none() && rm.hf_config.is_none() {
        no_model(cat)
    } else {
        model(src, cat, &rm, model_span.clone(), &mut spans)?
    };

    let (engine_name, engine_span, re) = match raw.engine {
        Some(e) => {
            let e = e.into_inner();
            (e.name.get_ref().clone(), e.name.span(), Some(e))
        }
        None => (crate::engine::runtimes::default_engine(&nodes).id().to_string(), model_span, None),
    };
    let kind = EngineKind::parse(&engine_name).ok_or_else(|| {
        src.error(
            engine_span.clone(),
            format!("unknown engine `{engine_name}`"),
            Some(suggest(&engine_name, &EngineKind::names(), "engines")),
        )
        .with_kind(ErrorKind::UnknownPreset)
    })?;
    let parallelism = parallelism(src, re.as_ref(), kind, engine_span, n, &mut spans)?;
    if !hpl {
        // HPL runs no model: the engine's splits do not apply.
        check_splits(&engine_name, kind, parallelism, &nodes, &model).map_err(|e| split_error(src, &spans, e))?;
    }
    let quant = quant(src, cat, &rm, (&model, &default_quant, declared_quant), kind, &engine_name, &mut spans)?;
    let size_gb = match &rm.size_gb {
        Some(v) if !(v.get_ref().is_finite() && *v.get_ref() > 0.0) => {
            return Err(src.error(v.span(), "`model.size_gb` must be a positive number of GB", None).with_kind(ErrorKind::BadValue));
        }
        v => v.as_ref().map(|v| *v.get_ref()),
    };
    let mut options = model_engine_defaults(EngineOptions::december_2025(kind, parallelism), cat, &rm);
    if let Some(e) = &re {
        engine_options(src, e, &fabric, &engine_name, &mut options)?;
    }

    if let Some((w, _)) = &raw_workload {
        check_workload_limits(src, w, &workload, &nodes, &model).and_then(|()| check_one_at_a_time(src, w, &options))?;
    }
    let slo = match &raw.slo {
        Some(x) => serve::slo(src, x.get_ref())?,
        None => Slo::default(),
    };
    if slo.any() && workload.kind != WorkloadKind::Serve {
        let span = raw.slo.as_ref().map(|x| x.span()).unwrap_or_default();
        return Err(src
            .error(span, "`[slo]` applies to kind = \"serve\" only", Some("remove [slo] or set workload.kind = \"serve\"".into()))
            .with_kind(ErrorKind::BadValue));
    }
    let cost = match raw.cost {
        Some(c) => cost(src, &c.into_inner())?,
        None => CostConfig::default(),
    };
    let (fabric, cabled_fabric) = tcp_only_fabric(src, cat, kind, fabric, &spans)?;
    let faults = raw.faults.map(|f| super::faults::faults(src, f, (n, topology.cables(n)), &fabric, &options)).transpose()?;
    let faults = faults.filter(super::faults::FaultConfig::is_active);
    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => return Err(src.error(s.span(), "`seed` must be non-negative", None).with_kind(ErrorKind::BadValue)),
        Some(s) => *s.get_ref() as u64,
        None => 1,
    };
    let name = raw.name.map(|n| n.into_inner()).unwrap_or_else(|| {
        Path::new(&source.path).file_stem().map_or_else(|| "scenario".to_string(), |s| s.to_string_lossy().into_owned())
    });
    check_replicated_workload(src, replicas, &raw_workload, &workload, faults.is_some(), &spans)?;
    Ok(Scenario {
        name,
        seed,
        nodes,
        replicas,
        fabric,
        cabled_fabric,
        topology,
        wired_limit_fraction,
        model,
        quant,
        size_gb,
        engine: options,
        workload,
        slo,
        cost,
        faults,
        sweep: raw.sweep,
        source,
        spans,
    })
}

/// One replica's node ids and `engine.replicas`, how many identical copies of them the cluster
/// `nodes` lists (1 when unset). The list must split into that many equal groups, each the same
/// presets in the same order.
fn replica_group(
    src: &Source,
    engine: Option<&RawEngine>,
    mut ids: Vec<Spanned<String>>,
) -> Result<(Vec<Spanned<String>>, usize), ScenarioError> {
    let count = replicas(src, engine, &ids)?;
    ids.truncate(ids.len() / count);
    Ok((ids, count))
}

/// `engine.replicas` of [`replica_group`].
fn replicas(src: &Source, engine: Option<&RawEngine>, ids: &[Spanned<String>]) -> Result<usize, ScenarioError> {
    let Some(r) = engine.and_then(|e| e.replicas.as_ref()) else { return Ok(1) };
    let count = positive(src, r, "engine.replicas", MAX_NODES as i64)? as usize;
    if ids.len() % count != 0 {
        return Err(src
            .error(
                r.span(),
                match ids.len() {
                    1 => format!("1 node does not split into {count} replicas"),
                    n => format!("{n} nodes do not split into {count} replicas"),
                },
                Some(format!(
                    "list every replica's nodes ({count} x the nodes of one: cluster.count = {count} for one node each), or set replicas to a divisor of {}",
                    ids.len()
                )),
            )
            .with_kind(ErrorKind::BadValue));
    }
    let group = ids.len() / count;
    if let Some(k) = (group..ids.len()).find(|&k| ids[k].get_ref() != ids[k % group].get_ref()) {
        return Err(src
            .error(
                ids[k].span(),
                format!(
                    "replica {} differs from the first: node {} is `{}` where the first replica has `{}`",
                    k / group + 1,
                    k % group + 1,
                    ids[k].get_ref(),
                    ids[k % group].get_ref()
                ),
                Some(format!("engine.replicas = {count} copies one group of {group} node(s): list the same presets in each")),
            )
            .with_kind(ErrorKind::BadValue));
    }
    Ok(count)
}

/// What replicas serve: one request of `generate` on one of them (the rest idle), or a serving
/// workload spread over them. A batched benchmark runs one server, HPL no model, and the fault
/// model one cluster: refused with replicas (anything goes with one).
fn check_replicated_workload(
    src: &Source,
    replicas: usize,
    raw: &Option<(RawWorkload, Range<usize>)>,
    workload: &Workload,
    faults: bool,
    spans: &Spans,
) -> Result<(), ScenarioError> {
    let span = raw.as_ref().map_or(spans.parallelism.clone(), |(_, s)| s.clone());
    let refuse = |what: &str| {
        Err(src
            .error(
                span.clone(),
                format!("{what} with engine.replicas > 1 is not modelled"),
                Some("remove engine.replicas (or run one replica)".into()),
            )
            .with_kind(ErrorKind::BadValue))
    };
    match workload.kind {
        _ if replicas == 1 => Ok(()),
        WorkloadKind::Hpl => refuse("HPL (it runs no model to replicate)"),
        WorkloadKind::BatchedBench => refuse("a batched benchmark (one server runs it)"),
        _ if faults => refuse("`[faults]`"),
        _ => Ok(()),
    }
}

/// The node preset ids of `[cluster]`, one per node (`nodes = [...]`, or `node` x `count`).
fn node_ids(
    src: &Source,
    cluster: &RawCluster,
    cluster_span: Range<usize>,
    spans: &mut Spans,
) -> Result<Vec<Spanned<String>>, ScenarioError> {
    let ids: Vec<Spanned<String>> = match (&cluster.nodes, &cluster.node, &cluster.count) {
        (Some(list), None, None) => {
            spans.cluster_nodes = list.span();
            if list.get_ref().is_empty() {
                return Err(src
                    .error(list.span(), "`cluster.nodes` is empty", Some("list at least one node preset".into()))
                    .with_kind(ErrorKind::BadValue));
            }
            list.get_ref().clone()
        }
        (None, Some(node), count) => {
            let n = match count {
                Some(c) => positive(src, c, "cluster.count", MAX_NODES as i64)?,
                None => 1,
            };
            spans.cluster_nodes = count.as_ref().map_or(node.span(), |c| c.span());
            (0..n).map(|_| node.clone()).collect()
        }
        (Some(list), _, _) => {
            return Err(src.error(
                list.span(),
                "`cluster.nodes` and `cluster.node`/`count` are both set",
                Some("use either nodes = [...] or node = \"...\" with count = N".into()),
            ));
        }
        (None, None, Some(c)) => {
            return Err(src.error(
                c.span(),
                "`cluster.count` needs `cluster.node`",
                Some("add node = \"m3-ultra-80c-512gb\" (or another preset)".into()),
            ));
        }
        (None, None, None) => {
            return Err(src.error(
                cluster_span,
                "`[cluster]` names no nodes",
                Some("add nodes = [\"...\"] or node = \"...\" with count = N".into()),
            ));
        }
    };
    if ids.len() > MAX_NODES {
        return Err(src
            .error(spans.cluster_nodes.clone(), format!("{} nodes is more than the 64 supported", ids.len()), None)
            .with_kind(ErrorKind::BadValue));
    }
    Ok(ids)
}

/// The node presets the ids name, with the cluster's GPU memory limit applied.
fn lookup_nodes(src: &Source, cat: &Catalog, cluster: &RawCluster, ids: &[Spanned<String>]) -> Result<Vec<NodeSpec>, ScenarioError> {
    let mut nodes = ids
        .iter()
        .map(|id| {
            cat.node(id.get_ref()).cloned().ok_or_else(|| {
                src.error(id.span(), format!("unknown node `{}`", id.get_ref()), Some(suggest(id.get_ref(), &cat.node_ids(), "nodes")))
                    .with_kind(ErrorKind::UnknownPreset)
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    gpu_memory_limit(src, cluster, &mut nodes, ids)?;
    power_mode(src, cluster, &mut nodes)?;
    Ok(nodes)
}

/// The fabric preset (`none` for a single node when the file names none).
fn fabric(
    src: &Source,
    cat: &Catalog,
    cluster: &RawCluster,
    cluster_span: Range<usize>,
    n: usize,
    spans: &mut Spans,
) -> Result<FabricSpec, ScenarioError> {
    let fabric = match &cluster.fabric {
        Some(f) => {
            spans.fabric = f.span();
            cat.fabric(f.get_ref()).cloned().ok_or_else(|| {
                src.error(f.span(), format!("unknown fabric `{}`", f.get_ref()), Some(suggest(f.get_ref(), &cat.fabric_ids(), "fabrics")))
                    .with_kind(ErrorKind::UnknownPreset)
            })?
        }
        None if n == 1 => {
            spans.fabric = cluster_span;
            cat.fabric("none").expect("fabric `none` exists").clone()
        }
        None => {
            return Err(src.error(
                cluster_span,
                format!("{n} nodes need a `cluster.fabric`"),
                Some(format!("add fabric = \"tb5-rdma\" (known fabrics: {})", cat.fabric_ids().join(", "))),
            ));
        }
    };
    if n > 1 && fabric.transport == Transport::None {
        return Err(src.error(
            spans.fabric.clone(),
            format!("fabric `none` cannot join {n} nodes"),
            Some("pick a network fabric such as tb5-rdma or eth-10g".into()),
        ));
    }
    Ok(fabric)
}

/// The fabric a TCP-only runtime (llama.cpp RPC) runs over `fabric`'s cables, and the RDMA
/// fabric named when that is its TCP sibling ([`FabricSpec::tcp_fabric`]): RPC's sockets get
/// the sibling's latency, bandwidth and per-message TCP cost, never the RDMA hop. Cabling was
/// checked against the fabric named (the same cables). An RDMA fabric with no sibling is refused.
fn tcp_only_fabric(
    src: &Source,
    cat: &Catalog,
    kind: EngineKind,
    fabric: FabricSpec,
    spans: &Spans,
) -> Result<(FabricSpec, Option<String>), ScenarioError> {
    if fabric.transport != Transport::Rdma || !kind.behaviour().speaks_tcp_only() {
        return Ok((fabric, None));
    }
    let sibling = fabric.tcp_fabric.as_deref().and_then(|id| cat.fabric(id));
    match sibling {
        Some(tcp) => Ok((tcp.clone(), Some(fabric.id))),
        None => Err(src
            .error(
                spans.fabric.clone(),
                format!(
                    "engine `{}` speaks TCP only, and RDMA fabric `{}` names no `tcp_fabric` to run it over",
                    kind.behaviour().id(),
                    fabric.id
                ),
                Some("add `tcp_fabric = \"<the TCP fabric of the same cables>\"` to the fabric, or pick a TCP fabric".into()),
            )
            .with_kind(ErrorKind::BadValue)),
    }
}

/// The topology: as written (if the fabric can be cabled so), else the fabric's first.
fn topology(src: &Source, cluster: &RawCluster, fabric: &FabricSpec, n: usize, spans: &mut Spans) -> Result<Topology, ScenarioError> {
    let Some(t) = &cluster.topology else {
        spans.topology = spans.fabric.clone();
        return Ok(if n == 1 { Topology::None } else { fabric.topologies.first().copied().unwrap_or(Topology::Switch) });
    };
    spans.topology = t.span();
    let topo = Topology::parse(t.get_ref()).ok_or_else(|| {
        src.error(
            t.span(),
            format!("unknown topology `{}`", t.get_ref()),
            Some(suggest(t.get_ref(), &["full-mesh", "ring", "switch"], "topologies")),
        )
        .with_kind(ErrorKind::UnknownPreset)
    })?;
    if n > 1 && !fabric.topologies.contains(&topo) {
        let offered: Vec<&str> = fabric.topologies.iter().map(|x| x.id()).collect();
        return Err(src
            .error(
                t.span(),
                format!("fabric `{}` cannot be cabled as `{}`", fabric.id, topo.id()),
                Some(format!("use one of: {}", offered.join(", "))),
            )
            .with_kind(ErrorKind::Topology));
    }
    Ok(if n == 1 { Topology::None } else { topo })
}

/// Ports, Thunderbolt generations and mesh size, located at the node or the cluster keys.
fn check_cabling(
    src: &Source,
    nodes: &[NodeSpec],
    ids: &[Spanned<String>],
    fabric: &FabricSpec,
    topology: Topology,
    spans: &Spans,
) -> Result<(), ScenarioError> {
    let n = nodes.len();
    if n <= 1 {
        return Ok(());
    }
    let located = |e: CablingError, node_span: Range<usize>| {
        let span = match e {
            CablingError::TooFewPorts { .. } => {
                spans.topology.start.min(spans.cluster_nodes.start)..spans.topology.end.max(spans.cluster_nodes.start + 1)
            }
            CablingError::MeshTooLarge { .. } | CablingError::NcclNeedsSwitch { .. } => spans.cluster_nodes.clone(),
            _ => node_span,
        };
        src.error(span, e.to_string(), Some(e.fix())).with_kind(ErrorKind::from(&e))
    };
    for (node, id) in nodes.iter().zip(ids) {
        check_node(node, fabric, topology, n).map_err(|e| located(e, id.span()))?;
    }
    check_cluster(fabric, topology, n).map_err(|e| located(e, spans.cluster_nodes.clone()))
}

/// Installs the scenario's own `[catalog]` entries (`[[catalog.node]]`, ...) into the catalog,
/// errors located in the scenario file.
fn install_inline_catalog(src: &Source) -> Result<(), ScenarioError> {
    let user = crate::catalog::user::parse_scenario_catalog(&src.path, &src.text).map_err(|e| {
        let kind = if e.message.contains("unknown field") {
            ErrorKind::UnknownKey
        } else if e.message.contains("no ") && e.message.contains("has that id") {
            ErrorKind::UnknownPreset
        } else {
            ErrorKind::BadValue
        };
        src.error(e.span.clone(), e.message, e.help).with_kind(kind)
    })?;
    if user.is_empty() {
        return Ok(());
    }
    crate::catalog::install(user).map_err(|m| src.error(0..0, m, Some("give the entry a new id".into())).with_kind(ErrorKind::Invalid))
}

/// `cluster.gpu_memory_limit_gb`, if set, as every node's GPU memory limit (a node whose catalog
/// entry sets its own keeps it); each limit above 0 and at most the node's memory.
fn gpu_memory_limit(src: &Source, cluster: &RawCluster, nodes: &mut [NodeSpec], ids: &[Spanned<String>]) -> Result<(), ScenarioError> {
    if let Some(l) = &cluster.gpu_memory_limit_gb {
        for n in nodes.iter_mut() {
            n.gpu_memory_limit_gb.get_or_insert(*l.get_ref());
        }
    }
    for (n, id) in nodes.iter().zip(ids) {
        let Some(limit) = n.gpu_memory_limit_gb else { continue };
        if !(limit > 0.0 && limit <= n.memory_gb) {
            let span = cluster.gpu_memory_limit_gb.as_ref().map_or(id.span(), |l| l.span());
            return Err(src
                .error(
                    span,
                    format!("gpu_memory_limit_gb = {limit} for node `{}` is out of range", n.id),
                    Some(format!("use a limit above 0 and at most the node's {} GB", n.memory_gb)),
                )
                .with_kind(ErrorKind::BadValue));
        }
    }
    Ok(())
}

/// `cluster.power_mode_w`, if set, as every node's power mode: each node must offer it (its
/// catalog `power_modes_w`; FACTS-2026 A3: the AI Max+ 395 boards' 55/85/120 W limits).
fn power_mode(src: &Source, cluster: &RawCluster, nodes: &mut [NodeSpec]) -> Result<(), ScenarioError> {
    let Some(w) = &cluster.power_mode_w else { return Ok(()) };
    for n in nodes.iter_mut() {
        n.power_mode_w = Some(*w.get_ref());
        if let Err(m) = n.check_power_mode() {
            let help = if n.power_modes_w.is_empty() {
                "remove `power_mode_w`: this node has no user-set power modes".to_string()
            } else {
                format!("use one of {:?}", n.power_modes_w)
            };
            return Err(src.error(w.span(), m, Some(help)).with_kind(ErrorKind::BadValue));
        }
    }
    Ok(())
}

/// `cluster.wired_limit_fraction`, if set, in 0.1..=1.0.
fn wired_limit(src: &Source, cluster: &RawCluster) -> Result<Option<f64>, ScenarioError> {
    let Some(w) = &cluster.wired_limit_fraction else { return Ok(None) };
    let x = *w.get_ref();
    if !(0.1..=1.0).contains(&x) {
        return Err(src
            .error(
                w.span(),
                format!("`cluster.wired_limit_fraction` = {x} is out of range"),
                Some("use a fraction from 0.1 to 1.0 (macOS default ~0.75)".into()),
            )
            .with_kind(ErrorKind::BadValue));
    }
    Ok(Some(x))
}

/// The stand-in model of an HPL scenario without `[model]`: the smallest preset, renamed `none`
/// (HPL never reads it; scenarios carry a model by type).
fn no_model(cat: &Catalog) -> (ModelSpec, String, Option<QuantSpec>) {
    let (preset, spec) = cat.model("llama-3.2-3b").expect("catalog has llama-3.2-3b");
    let mut spec = spec.clone();
    spec.id = "none".into();
    spec.name = "no model (HPL)".into();
    (spec, preset.default_quant.clone(), None)
}

/// The model (a preset or an imported `config.json`), its default quantization id, and the
/// quantization an imported `config.json` declares.
fn model(
    src: &Source,
    cat: &Catalog,
    rm: &RawModel,
    model_span: Range<usize>,
    spans: &mut Spans,
) -> Result<(ModelSpec, String, Option<QuantSpec>), ScenarioError> {
    match (&rm.name, &rm.hf_config) {
        (Some(name), None) => {
            spans.model = name.span();
            // An id or alias, else the name as people write it (org prefix, release and
            // format suffixes, ollama tags: `catalog::names`).
            let (preset, spec) = cat.find_model(name.get_ref()).map_err(|e| {
                let hint = match &e {
                    crate::catalog::names::ModelNameError::Unknown(_) => {
                        suggest(name.get_ref(), &cat.model_ids(), "models") + "; or use hf_config = \"path/to/config.json\""
                    }
                    crate::catalog::names::ModelNameError::Ambiguous { .. } => "name the preset by its id".to_string(),
                };
                src.error(name.span(), e.to_string(), Some(hint)).with_kind(ErrorKind::UnknownPreset)
            })?;
            Ok((spec.clone(), preset.default_quant.clone(), None))
        }
        (None, Some(path)) => {
            spans.model = path.span();
            let (m, q) = hf_model(src, path)?;
            Ok((m, "bf16".to_string(), q))
        }
        (Some(name), Some(_)) => Err(src.error(name.span(), "`model.name` and `model.hf_config` are both set", Some("keep one".into()))),
        (None, None) => Err(src.error(
            model_span,
            "`[model]` needs `name` (a preset) or `hf_config` (a config.json path)",
            Some(format!("known models: {}", cat.model_ids().join(", "))),
        )),
    }
}

/// The engine's defaults as the model's files decide them: llama.cpp runs the MLA of a preset
/// whose GGUFs predate MLA metadata over a per-head cache
/// ([`crate::catalog::ModelPreset::gguf_per_head_mla`]); an imported config.json is read as
/// converted today (the latent cache). `[engine]` keys override these.
fn model_engine_defaults(mut options: EngineOptions, cat: &Catalog, rm: &RawModel) -> EngineOptions {
    let preset = rm.name.as_ref().and_then(|n| cat.find_model(n.get_ref()).ok());
    options.mla_per_head_cache = preset.is_some_and(|(p, _)| crate::engine::runtimes::default_mla_per_head_cache(options.kind, p));
    options
}

/// A model imported from a Hugging Face `config.json` (path relative to the scenario file), with
/// the quantization its `quantization`/`quantization_config` block declares.
fn hf_model(src: &Source, path: &Spanned<String>) -> Result<(ModelSpec, Option<QuantSpec>), ScenarioError> {
    let p = src.dir.join(path.get_ref());
    let text = crate::util::read_bounded(&p, crate::util::MAX_INPUT_BYTES).map_err(|e| {
        src.error(
            path.span(),
            format!("cannot read `{}`: {e}", p.display()),
            Some("hf_config paths are relative to the scenario file".into()),
        )
    })?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| src.error(path.span(), format!("`{}` is not valid JSON: {e}", p.display()), None))?;
    // A model folder's `config.json` is named by its folder; a file of another name (the
    // shared `configs/minimax-m2.1.json`) by itself.
    let file = Path::new(path.get_ref());
    let named =
        if file.file_name().is_some_and(|f| f == "config.json") { file.parent().and_then(|d| d.file_name()) } else { file.file_stem() };
    let stem = named.map_or_else(|| path.get_ref().clone(), |s| s.to_string_lossy().into_owned());
    let model = ModelSpec::from_hf_config(&stem, &stem, &json).map_err(|e| {
        src.error(
            path.span(),
            format!("cannot import `{}`: {e}", p.display()),
            Some("supported architectures: llama, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss".into()),
        )
    })?;
    let quant = crate::llm::hf_quant::quant_from_hf_config(&format!("{stem} (config.json)"), &json)
        .map_err(|e| src.error(path.span(), format!("cannot read the quantization of `{}`: {e}", p.display()), None))?;
    Ok((model, quant))
}

/// The quantization of a tensor-type listing (`model.gguf_tensor_types`, relative to the
/// scenario file).
fn gguf_table(src: &Source, path: &Spanned<String>) -> Result<QuantSpec, ScenarioError> {
    let p = src.dir.join(path.get_ref());
    let text = crate::util::read_bounded(&p, crate::util::MAX_INPUT_BYTES).map_err(|e| {
        src.error(path.span(), format!("cannot read `{}`: {e}", p.display()), Some("paths are relative to the scenario file".into()))
    })?;
    let id = format!("gguf:{}", path.get_ref());
    crate::llm::gguf_table::quant_from_gguf_table(&id, &p.display().to_string(), &text).map_err(|e| {
        src.error(path.span(), e.to_string(), Some("write it with `gguf-dump model.gguf > types.txt` (gguf-py)".into()))
            .with_kind(ErrorKind::BadValue)
    })
}

/// `engine.parallelism`, or the engine's default for the node count.
fn parallelism(
    src: &Source,
    re: Option<&RawEngine>,
    kind: EngineKind,
    engine_span: Range<usize>,
    n: usize,
    spans: &mut Spans,
) -> Result<Parallelism, ScenarioError> {
    spans.parallelism = engine_span;
    let stages = re.and_then(|e| e.pipeline_stages.as_ref());
    let tensor = re.and_then(|e| e.tensor_ranks.as_ref());
    let Some(p) = re.and_then(|e| e.parallelism.as_ref()) else {
        if let Some(s) = stages {
            return Err(stages_without_hybrid(src, s));
        }
        if let Some(t) = tensor {
            return Err(tensor_ranks_without_data(src, t));
        }
        return Ok(default_parallelism(kind, n));
    };
    spans.parallelism = p.span();
    let parsed = Parallelism::parse(p.get_ref()).ok_or_else(|| {
        src.error(p.span(), format!("unknown parallelism `{}`", p.get_ref()), Some(suggest(p.get_ref(), &Parallelism::NAMES, "values")))
            .with_kind(ErrorKind::UnknownPreset)
    })?;
    if let Some(t) = tensor {
        if let Some(s) = stages {
            return Err(stages_without_hybrid(src, s));
        }
        let ranks = positive(src, t, "engine.tensor_ranks", 64)? as u32;
        spans.parallelism = t.span();
        if ranks > 1 && n % ranks as usize != 0 {
            return Err(src
                .error(
                    t.span(),
                    format!("`engine.tensor_ranks = {ranks}` does not divide the cluster's {n} nodes into data-parallel ranks"),
                    Some("use a count that divides the nodes (each data-parallel rank a tensor-parallel group of that many)".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        return match parsed {
            Parallelism::Data { .. } => Ok(Parallelism::Data { tensor: ranks }),
            Parallelism::DataExpert { .. } => Ok(Parallelism::DataExpert { tensor: ranks }),
            _ => Err(tensor_ranks_without_data(src, t)),
        };
    }
    match (parsed, stages) {
        (Parallelism::TensorPipeline { .. }, Some(s)) => {
            spans.parallelism = s.span();
            Ok(Parallelism::TensorPipeline { stages: positive(src, s, "engine.pipeline_stages", 64)? as u32 })
        }
        (_, Some(s)) => Err(stages_without_hybrid(src, s)),
        _ => Ok(parsed),
    }
}

/// `engine.tensor_ranks` beside a split other than data-parallel attention.
fn tensor_ranks_without_data(src: &Source, t: &Spanned<i64>) -> ScenarioError {
    src.error(
        t.span(),
        "`engine.tensor_ranks` applies to parallelism = \"data\" or \"data+expert\" only (the nodes of each data-parallel rank; tensor parallel alone uses every node)",
        Some("set parallelism = \"data\", or remove `tensor_ranks`".into()),
    )
    .with_kind(ErrorKind::BadValue)
}

/// `engine.pipeline_stages` beside a split other than tensor+pipeline.
fn stages_without_hybrid(src: &Source, s: &Spanned<i64>) -> ScenarioError {
    src.error(
        s.span(),
        "`engine.pipeline_stages` applies to parallelism = \"tensor+pipeline\" only (a pipeline split has one stage per node)",
        Some("set parallelism = \"tensor+pipeline\", or remove `pipeline_stages`".into()),
    )
    .with_kind(ErrorKind::BadValue)
}

/// The engine's split rules on `nodes` for `model`: the split itself, the fleet, and where the
/// split slices layers, the tensor-parallel size the model's heads must take.
fn check_splits(engine: &str, kind: EngineKind, parallelism: Parallelism, nodes: &[NodeSpec], model: &ModelSpec) -> Result<(), SplitError> {
    check_split(engine, kind, parallelism, nodes.len())?;
    check_fleet(engine, kind, nodes)?;
    kind.behaviour().check_model_split(engine, model, parallelism)?;
    check_data_attention(model, parallelism)?;
    if parallelism.slices_layers() {
        check_tensor_split(kind.behaviour().tensor_split_rule(), model, parallelism.tensor_ranks(nodes.len()))?;
    }
    Ok(())
}

/// A split error located at the key that chose it.
fn split_error(src: &Source, spans: &Spans, e: SplitError) -> ScenarioError {
    let span = match e {
        SplitError::SingleNodeEngine { .. }
        | SplitError::RpcSplitsLayers
        | SplitError::NoPipeline { .. }
        | SplitError::NoExpertParallel { .. }
        | SplitError::NoTensorPipeline { .. }
        | SplitError::NoDataAttention { .. }
        | SplitError::DataAttentionNeedsMoe { .. }
        | SplitError::ModelHasNoSplit { .. }
        | SplitError::IllegalStages { .. } => spans.parallelism.clone(),
        SplitError::NoSplitOnCluster { .. }
        | SplitError::IllegalTensorSplit { .. }
        | SplitError::IllegalVllmTensorSplit { .. }
        | SplitError::MixedFleet { .. }
        | SplitError::WrongDevice { .. } => spans.cluster_nodes.clone(),
    };
    src.error(span, e.to_string(), Some(e.fix())).with_kind(ErrorKind::from(&e))
}

/// Refuses a 16-bit `model.quant` (`bf16`, `f16`) of a model that ships MXFP4 routed experts
/// (gpt-oss) on a GGUF runtime: llama.cpp's converter keeps the experts MXFP4 whatever its
/// `--outtype`, so no GGUF stores them at 16 bits (234 GB for gpt-oss-120b); the file people
/// call F16/BF16 is `mxfp4-f16`, which the error names.
fn no_sixteen_bit_mxfp4_gguf(
    src: &Source,
    cat: &Catalog,
    rm: &RawModel,
    model: &ModelSpec,
    kind: EngineKind,
    engine_name: &str,
) -> Result<(), ScenarioError> {
    use crate::catalog::names::{MXFP4_F16, MXFP4_F16_WHY};
    let Some(q) = &rm.quant else { return Ok(()) };
    if kind.runtime().format() != QuantFamily::Gguf || !cat.is_sixteen_bit(q.get_ref()) || !cat.ships_mxfp4_experts(&model.id) {
        return Ok(());
    }
    Err(src
        .error(
            q.span(),
            format!("quantization `{}`: no GGUF of {} holds 16-bit experts; {MXFP4_F16_WHY}", q.get_ref(), model.id),
            Some(format!(
                "for the file llama-bench types F16/BF16 on engine `{engine_name}` use quant = \"{MXFP4_F16}\" (MXFP4 experts, 16-bit rest); ggml-org's MXFP4 GGUF is \"mxfp4\""
            )),
        )
        .with_kind(ErrorKind::QuantFormat))
}

/// `model.quant`, or the model's default in a format the engine loads; checked against the engine
/// (and, for a model that ships MXFP4 experts, against the files its converter writes).
fn quant(
    src: &Source,
    cat: &Catalog,
    rm: &RawModel,
    (model, default_quant, declared): (&ModelSpec, &str, Option<QuantSpec>),
    kind: EngineKind,
    engine_name: &str,
    spans: &mut Spans,
) -> Result<QuantSpec, ScenarioError> {
    let format = kind.runtime().format();
    no_sixteen_bit_mxfp4_gguf(src, cat, rm, model, kind, engine_name)?;
    let quant = match (&rm.gguf_tensor_types, &rm.quant) {
        (Some(t), Some(_)) => {
            return Err(src.error(
                t.span(),
                "`model.gguf_tensor_types` and `model.quant` are both set",
                Some("keep one: the listing gives the quantization".into()),
            ));
        }
        (Some(t), None) => {
            spans.quant = t.span();
            gguf_table(src, t)?
        }
        (None, Some(q)) => {
            spans.quant = q.span();
            cat.quant(q.get_ref()).cloned().ok_or_else(|| {
                src.error(
                    q.span(),
                    format!("unknown quantization `{}`", q.get_ref()),
                    Some(suggest(q.get_ref(), &cat.quant_ids(), "quantizations")),
                )
                .with_kind(ErrorKind::UnknownPreset)
            })?
        }
        (None, None) if declared.is_some() => {
            spans.quant = spans.model.clone();
            let d = declared.expect("checked");
            // A checkpoint of MXFP4 experts (gpt-oss) runs on MLX and llama.cpp as the
            // conversions people use (ggml-org's GGUF, mlx-community's MXFP4-Q8: `mxfp4`).
            if !d.family.loads_on(format) && crate::llm::hf_quant::mxfp4_experts(&d) {
                cat.quant("mxfp4").expect("quant exists").clone()
            } else {
                d
            }
        }
        (None, None) => {
            spans.quant = spans.model.clone();
            let preset = cat.quant(default_quant).expect("default quant exists");
            if preset.family.loads_on(format) {
                preset.clone()
            } else {
                let fallback = match format {
                    QuantFamily::Mlx => "mlx-4bit",
                    QuantFamily::Hf => "fp8",
                    QuantFamily::Gguf | QuantFamily::Any => "q4_k_m",
                };
                cat.quant(fallback).expect("quant exists").clone()
            }
        }
    };
    if !quant.family.loads_on(format) {
        let fix = match format {
            QuantFamily::Gguf => {
                "llama.cpp loads GGUF: use q4_k_m, q8_0, q2_k, ud-q4_k_xl, mxfp4, mxfp4-f16 (gpt-oss F16/BF16 files) or bf16"
            }
            QuantFamily::Hf => {
                "vLLM and SGLang load Hugging Face checkpoints: use fp8, nvfp4, gptq-int4, awq-int4, mxfp4-hf, mxfp4 or bf16"
            }
            QuantFamily::Mlx | QuantFamily::Any => "MLX loads MLX formats: use mlx-4bit, mlx-6bit, mlx-8bit, int4-g32, mxfp4 or bf16",
        };
        return Err(src
            .error(
                spans.quant.clone(),
                format!("quantization `{}` is a {} format; engine `{engine_name}` cannot load it", quant.id, quant.family.id()),
                Some(fix.into()),
            )
            .with_kind(ErrorKind::QuantFormat));
    }
    Ok(quant)
}

/// The `[engine]` options beyond name and split.
fn engine_options(
    src: &Source,
    e: &RawEngine,
    fabric: &FabricSpec,
    engine_name: &str,
    options: &mut EngineOptions,
) -> Result<(), ScenarioError> {
    if let Some(m) = &e.macos {
        options.jaccl_frame_bytes = macos_frame_bytes(src, m, fabric)?;
    }
    if let Some(f) = &e.jaccl_frame_kib {
        options.jaccl_frame_bytes = positive(src, f, "engine.jaccl_frame_kib", 512)? * 1024;
    }
    if let Some(a) = &e.allreduce {
        options.allreduce = one_of(
            src,
            a,
            &[
                ("fully-connected", AllReduceAlgo::FullyConnected),
                ("rs-ag", AllReduceAlgo::ReduceScatterAllGather),
                ("ring", AllReduceAlgo::Ring),
            ],
            ("all-reduce algorithm", "algorithms"),
            " (fully-connected = Dec 2025; rs-ag = mlx PR 3901 above 32 KiB)",
        )?;
    }
    if let Some(f) = &e.fast_sync {
        options.fast_sync = Some(*f.get_ref());
    }
    if let Some(c) = &e.prefill_chunk {
        options.prefill_chunk = positive(src, c, "engine.prefill_chunk", 65536)?;
    }
    if let Some(m) = &e.mla_prefill {
        options.mla_prefill_expanded = one_of(
            src,
            m,
            &[("expanded", true), ("absorbed", false)],
            ("MLA prefill form", "forms"),
            " (expanded = mlx-lm's prefill, absorbed = llama.cpp's, and every runtime's decode)",
        )?;
    }
    if let Some(m) = &e.mla_cache {
        let per_head = one_of(
            src,
            m,
            &[("latent", false), ("per-head", true)],
            ("MLA cache", "caches"),
            " (per-head = llama.cpp with a GGUF converted without MLA metadata)",
        )?;
        if per_head && !options.kind.runtime().has_per_head_mla_cache() {
            return Err(src.error(
                m.span(),
                format!("engine `{engine_name}` keeps the MLA latent cache; a per-head cache is llama.cpp's"),
                Some("remove `mla_cache`, or use a llama.cpp engine (llama-cpp, llama-cpp-rpc, ollama)".into()),
            ));
        }
        options.mla_per_head_cache = per_head;
    }
    llama_cpp_options(src, e, engine_name, options)?;
    if let Some(c) = &e.continuous_batching {
        if options.kind != EngineKind::VllmMlx {
            return Err(src
                .error(
                    c.span(),
                    format!("`engine.continuous_batching` picks vllm-mlx's mode; engine `{engine_name}` has no such option"),
                    Some("remove it, or use engine vllm-mlx (oMLX and mlx-lm's server always batch)".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        options.continuous_batching = *c.get_ref();
    }
    cuda_options(src, e, engine_name, options)
}

/// llama.cpp's own `[engine]` keys: `backend` (on an AMD GPU), `rocm_tiles` (ROCm only) and
/// `flash_attention`; refused, with why, on engines that are not llama.cpp.
fn llama_cpp_options(src: &Source, e: &RawEngine, engine_name: &str, options: &mut EngineOptions) -> Result<(), ScenarioError> {
    if let Some(b) = &e.backend {
        if options.kind.runtime() != Runtime::LlamaCpp {
            return Err(llama_cpp_only(
                src,
                b.span(),
                format!("`engine.backend` picks llama.cpp's GPU backend; engine `{engine_name}` has no such option"),
            ));
        }
        options.llama_backend = one_of(
            src,
            b,
            &LlamaBackend::NAMES,
            ("llama.cpp GPU backend", "backends"),
            " (on a Linux GPU that is neither Apple's nor NVIDIA's: Metal and CUDA nodes run their own)",
        )?;
    }
    if let Some(t) = &e.rocm_tiles {
        if options.llama_backend != LlamaBackend::Rocm {
            return Err(src
                .error(
                    t.span(),
                    "`engine.rocm_tiles` says how llama.cpp's ROCm build tiles MoE GEMMs; this engine does not run ROCm".to_string(),
                    Some("remove it, or set `backend = \"rocm\"` on a llama.cpp engine".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        options.rocm_tiles = one_of(
            src,
            t,
            &RocmTiles::NAMES,
            ("ROCm MoE tile choice", "choices"),
            " (per-step: llama.cpp builds before late September 2026)",
        )?;
    }
    if let Some(fa) = &e.flash_attention {
        if options.kind.runtime() != Runtime::LlamaCpp {
            return Err(llama_cpp_only(
                src,
                fa.span(),
                format!(
                    "`engine.flash_attention` switches llama.cpp's flash-attention kernel (`-fa`); engine `{engine_name}` has no such switch"
                ),
            ));
        }
        options.flash_attention = *fa.get_ref();
    }
    Ok(())
}

/// The error for a llama.cpp-only `[engine]` key set on another engine (`message` says what it
/// does and that this engine has none).
fn llama_cpp_only(src: &Source, span: std::ops::Range<usize>, message: String) -> ScenarioError {
    src.error(span, message, Some("remove it, or use a llama.cpp engine (llama-cpp, llama-cpp-rpc, ollama)".into()))
        .with_kind(ErrorKind::BadValue)
}

/// vllm-mlx's simple mode serves one request at a time: a larger `workload.max_batch` cannot be
/// asked of it.
fn check_one_at_a_time(src: &Source, w: &RawWorkload, options: &EngineOptions) -> Result<(), ScenarioError> {
    match w.max_batch.as_ref().filter(|m| *m.get_ref() > 1 && !options.continuous_batching) {
        Some(m) => Err(src
            .error(
                m.span(),
                format!("`workload.max_batch` = {} under vllm-mlx's simple mode, which serves one request at a time", m.get_ref()),
                Some("remove max_batch, or set engine.continuous_batching = true".into()),
            )
            .with_kind(ErrorKind::BadValue)),
        None => Ok(()),
    }
}

/// The CUDA engines' `[engine]` keys (vLLM, SGLang): `enforce_eager`, `kv_cache_dtype`,
/// `max_num_batched_tokens`, `max_num_seqs`, `gpu_memory_utilization`; an error on any other
/// engine.
fn cuda_options(src: &Source, e: &RawEngine, engine_name: &str, options: &mut EngineOptions) -> Result<(), ScenarioError> {
    let spans = [
        e.enforce_eager.as_ref().map(|x| x.span()),
        e.kv_cache_dtype.as_ref().map(|x| x.span()),
        e.max_num_batched_tokens.as_ref().map(|x| x.span()),
        e.max_num_seqs.as_ref().map(|x| x.span()),
        e.gpu_memory_utilization.as_ref().map(|x| x.span()),
    ];
    if options.kind.runtime() != Runtime::Cuda {
        if let Some(span) = spans.into_iter().flatten().next() {
            return Err(src
                .error(
                    span,
                    format!("this key is a CUDA engine's (vllm, sglang); engine `{engine_name}` has no such option"),
                    Some("remove it, or use engine vllm or sglang on GB10 nodes".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        return Ok(());
    }
    let c = &mut options.cuda;
    if let Some(x) = &e.enforce_eager {
        c.cuda_graphs = !*x.get_ref();
    }
    if let Some(x) = &e.kv_cache_dtype {
        c.kv_cache_fp8 = one_of(
            src,
            x,
            &[("auto", false), ("fp8", true)],
            ("KV cache dtype", "dtypes"),
            " (auto = the model's bf16; fp8 halves the KV bytes)",
        )?;
    }
    if let Some(x) = &e.max_num_batched_tokens {
        c.max_num_batched_tokens = positive(src, x, "engine.max_num_batched_tokens", 1 << 20)?;
        // V1 chunks every prompt at the step's token budget.
        options.prefill_chunk = c.max_num_batched_tokens;
    }
    if let Some(x) = &e.max_num_seqs {
        c.max_num_seqs = positive(src, x, "engine.max_num_seqs", 65536)?;
    }
    if let Some(x) = &e.gpu_memory_utilization {
        let v = *x.get_ref();
        if !(v > 0.0 && v <= 1.0) {
            return Err(src
                .error(
                    x.span(),
                    format!("`engine.gpu_memory_utilization` = {v} is out of range"),
                    Some("use a fraction in (0, 1], e.g. 0.9".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        c.gpu_memory_utilization = v;
    }
    // vLLM refuses a budget below the sequence cap: every running sequence must get its decode
    // token in each step.
    if c.max_num_batched_tokens < c.max_num_seqs {
        let span = e.max_num_batched_tokens.as_ref().or(e.max_num_seqs.as_ref()).map(|x| x.span()).unwrap_or_default();
        return Err(src
            .error(
                span,
                format!("`max_num_batched_tokens` ({}) is below `max_num_seqs` ({})", c.max_num_batched_tokens, c.max_num_seqs),
                Some("raise max_num_batched_tokens or lower max_num_seqs (vLLM requires budget >= sequences)".into()),
            )
            .with_kind(ErrorKind::BadValue));
    }
    Ok(())
}

/// The JACCL frame size of an `engine.macos` version (RDMA needs 26.2+; 26.3 raised the frame).
fn macos_frame_bytes(src: &Source, m: &Spanned<String>, fabric: &FabricSpec) -> Result<u64, ScenarioError> {
    let v = m.get_ref();
    let parsed: Option<(u32, u32)> =
        v.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))).or_else(|| v.parse().ok().map(|a| (a, 0)));
    match parsed {
        Some((maj, min)) if maj >= 26 => {
            if (maj, min) < (26, 2) && fabric.backend == Backend::Jaccl {
                return Err(src.error(
                    m.span(),
                    format!("RDMA over Thunderbolt needs macOS 26.2 or later, not {v}"),
                    Some("set macos = \"26.2\" or use tb5-tcp".into()),
                ));
            }
            Ok(EngineOptions::jaccl_frame_bytes_on_macos(maj, min))
        }
        Some((maj, min)) => Ok(EngineOptions::jaccl_frame_bytes_on_macos(maj, min)),
        None => Err(src
            .error(m.span(), format!("`engine.macos` = \"{v}\" is not a version"), Some("write e.g. macos = \"26.2\"".into()))
            .with_kind(ErrorKind::BadValue)),
    }
}

/// Most sequences of a `batched-bench` workload: an input bound that keeps one step's rows
/// small (not a llama.cpp limit; the published runs go to 32).
const MAX_BATCHED_BENCH_SEQUENCES: i64 = 1024;

/// Most tokens a `generate` run may find in its cache before the prompt: an input bound (no
/// model in the catalog has a window past 10M tokens; the model's own window is checked too).
const MAX_CONTEXT_TOKENS: i64 = 10_000_000;

/// The `[workload]` table; `whole` is its span.
fn workload(src: &Source, w: &RawWorkload, whole: Range<usize>) -> Result<Workload, ScenarioError> {
    let mut workload = Workload::default();
    if let Some(k) = &w.kind {
        workload.kind = match k.get_ref().as_str() {
            "generate" => WorkloadKind::Generate,
            "hpl" => WorkloadKind::Hpl,
            "serve" => WorkloadKind::Serve,
            "batched-bench" => WorkloadKind::BatchedBench,
            other => {
                return Err(src
                    .error(
                        k.span(),
                        format!("unknown workload kind `{other}`"),
                        Some(suggest(other, &["generate", "serve", "batched-bench", "hpl"], "kinds")),
                    )
                    .with_kind(ErrorKind::UnknownPreset));
            }
        };
    }
    let serving = workload.kind == WorkloadKind::Serve;
    if !serving && let Some((span, key)) = serve::stray_serve_key(w) {
        return Err(src
            .error(
                span,
                format!("`workload.{key}` applies to kind = \"serve\" only"),
                Some("set kind = \"serve\" or remove the key".into()),
            )
            .with_kind(ErrorKind::BadValue));
    }
    if let Some(p) = &w.prompt_tokens {
        workload.prompt_tokens = serve::length(src, p, "workload.prompt_tokens", serving)?.mean();
    }
    if let Some(g) = &w.generate_tokens {
        workload.generate_tokens = serve::length(src, g, "workload.generate_tokens", serving)?.mean();
    }
    if let Some(d) = &w.context_tokens {
        if workload.kind != WorkloadKind::Generate {
            return Err(src
                .error(
                    d.span(),
                    "`workload.context_tokens` applies to kind = \"generate\" only",
                    Some("set kind = \"generate\" (one request after a filled context, as llama-bench -d), or remove the key".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        // 0 is the default (an empty cache); negative is an error.
        workload.context_tokens = if *d.get_ref() == 0 { 0 } else { positive(src, d, "workload.context_tokens", MAX_CONTEXT_TOKENS)? };
    }
    if let Some(h) = &w.hpl_n {
        workload.hpl_n = positive(src, h, "workload.hpl_n", 10_000_000)?;
    }
    if let Some(b) = &w.batch {
        if workload.kind != WorkloadKind::BatchedBench {
            return Err(src
                .error(
                    b.span(),
                    "`workload.batch` applies to kind = \"batched-bench\" only",
                    Some("set kind = \"batched-bench\", or for concurrent requests kind = \"serve\" with `concurrency`".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        workload.batch = positive(src, b, "workload.batch", MAX_BATCHED_BENCH_SEQUENCES)?;
    }
    if let Some(same) = &w.same_tokens {
        if workload.kind != WorkloadKind::BatchedBench {
            return Err(src
                .error(same.span(), "`workload.same_tokens` applies to kind = \"batched-bench\" only", Some("remove the key".into()))
                .with_kind(ErrorKind::BadValue));
        }
        workload.same_tokens = *same.get_ref();
    }
    if serving {
        workload.serve = Some(serve::serve(src, w, whole)?);
    }
    if let Some(h) = &w.hpl_nb {
        workload.hpl_nb = positive(src, h, "workload.hpl_nb", 4096)?;
    }
    if let Some(h) = &w.hpl_p {
        workload.hpl_p = positive(src, h, "workload.hpl_p", 1 << 16)?;
    }
    if let Some(h) = &w.hpl_q {
        workload.hpl_q = positive(src, h, "workload.hpl_q", 1 << 16)?;
    }
    Ok(workload)
}

/// Limits of the workload against the cluster and the model: an HPL matrix (8 N^2 bytes, spread
/// over the nodes, the smallest node bounding each share) must fit in the nodes' memory, and a
/// prompt plus its generated tokens must fit in the model's context window.
fn check_workload_limits(
    src: &Source,
    w: &RawWorkload,
    workload: &Workload,
    nodes: &[NodeSpec],
    model: &ModelSpec,
) -> Result<(), ScenarioError> {
    if let (WorkloadKind::Hpl, Some(h)) = (workload.kind, &w.hpl_n) {
        let mem = nodes.iter().map(NodeSpec::memory_bytes).fold(f64::INFINITY, f64::min) * nodes.len() as f64;
        let max_n = (mem / 8.0).sqrt().floor() as u64;
        if workload.hpl_n > max_n {
            const GIB: f64 = (1u64 << 30) as f64;
            let matrix_gib = 8.0 * (workload.hpl_n as f64).powi(2) / GIB;
            return Err(src
                .error(
                    h.span(),
                    format!(
                        "`workload.hpl_n` = {}: its matrix (8 N^2 bytes = {matrix_gib:.0} GiB) does not fit in the {:.0} GiB of the {} node(s)",
                        workload.hpl_n,
                        mem / GIB,
                        nodes.len()
                    ),
                    Some(format!(
                        "use N at most {max_n}; the top500-benchmark convention is N about 0.9 sqrt(0.75 x memory / 8 B) (about {}), which leaving hpl_n out gives",
                        (0.9 * (0.75 * mem / 8.0).sqrt() / 256.0).floor() as u64 * 256
                    )),
                )
                .with_kind(ErrorKind::DoesNotFit));
        }
    }
    if workload.kind == WorkloadKind::Hpl && workload.hpl_p * workload.hpl_q > 0 {
        check_hpl_grid(src, w, workload, nodes)?;
    }
    // One request's context: a generate run's prompt and generation; a serving run's longest
    // fixed or uniform lengths (a log-normal draw past the window is the server's to refuse:
    // its mean is checked), trace arrivals carry their own.
    let longest = |l: &serve::Length| match *l {
        serve::Length::Uniform { max, .. } => max,
        _ => l.mean(),
    };
    let lengths = match (workload.kind, &workload.serve) {
        (WorkloadKind::Generate | WorkloadKind::BatchedBench, _) => Some((workload.prompt_tokens, workload.generate_tokens)),
        (WorkloadKind::Serve, Some(sv)) if !matches!(sv.arrival, serve::Arrival::Trace(_)) => {
            Some((longest(&sv.prompt), longest(&sv.generate)))
        }
        _ => None,
    };
    if let (Some((prompt, generate)), Some(max)) = (lengths, model.max_context) {
        let depth = workload.context_tokens;
        let context = depth + prompt + generate;
        if context > max {
            // At the largest of the three (the one to shorten), else whichever the file sets.
            let (p, g) = (w.prompt_tokens.as_ref().map(Spanned::span), w.generate_tokens.as_ref().map(Spanned::span));
            let d = w.context_tokens.as_ref().map(Spanned::span);
            let first = if depth > prompt.max(generate) {
                d.or(p)
            } else if generate > prompt {
                g.or(p)
            } else {
                p.or(g)
            };
            let span = first.unwrap_or(0..0);
            let already = if depth > 0 { format!("context_tokens {depth} + ") } else { String::new() };
            return Err(src
                .error(
                    span,
                    format!(
                        "{already}prompt_tokens {prompt} + generate_tokens {generate} = {context} tokens is past {}'s context window of {max} tokens",
                        model.name
                    ),
                    Some(format!(
                        "shorten the prompt or the generation so that together they are at most {max} tokens (the model's max_position_embeddings, with its rope scaling)"
                    )),
                )
                .with_kind(ErrorKind::ContextWindow));
        }
    }
    Ok(())
}

/// Ranks of an HPL grid must exist: at most [`HPL_RANKS_PER_CORE`] per CPU core of the cluster
/// (HPL runs one MPI rank per core; more only time-slice, and an unbounded `hpl_p x hpl_q` would
/// allocate a rank table of any size).
fn check_hpl_grid(src: &Source, w: &RawWorkload, workload: &Workload, nodes: &[NodeSpec]) -> Result<(), ScenarioError> {
    let cores: u64 = nodes.iter().map(|n| n.cpu_cores.max(1) as u64).sum();
    let ranks = workload.hpl_p.max(1) * workload.hpl_q.max(1);
    if ranks <= HPL_RANKS_PER_CORE * cores {
        return Ok(());
    }
    let span = w.hpl_p.as_ref().or(w.hpl_q.as_ref()).map_or(0..0, Spanned::span);
    Err(src
        .error(
            span,
            format!(
                "an HPL grid of {} x {} = {ranks} ranks is more than {HPL_RANKS_PER_CORE} per CPU core of the cluster ({cores} cores)",
                workload.hpl_p.max(1),
                workload.hpl_q.max(1)
            ),
            Some(format!("use hpl_p x hpl_q of at most {cores} (one rank per core), or leave them out for a near-square grid")),
        )
        .with_kind(ErrorKind::BadValue))
}

/// Most MPI ranks an HPL grid may place on one CPU core.
pub const HPL_RANKS_PER_CORE: u64 = 4;

/// The `[cost]` table.
fn cost(src: &Source, c: &RawCost) -> Result<CostConfig, ScenarioError> {
    let mut cost = CostConfig::default();
    if let Some(a) = &c.amortization_years {
        let x = *a.get_ref();
        if !(x > 0.0 && x <= 50.0) {
            return Err(src
                .error(
                    a.span(),
                    format!("`cost.amortization_years` = {x} is out of range"),
                    Some("use a number of years in (0, 50]".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        cost.amortization_years = x;
    }
    if let Some(e) = &c.electricity_usd_per_kwh {
        let x = *e.get_ref();
        if !(0.0..=10.0).contains(&x) || x.is_nan() {
            return Err(src
                .error(
                    e.span(),
                    format!("`cost.electricity_usd_per_kwh` = {x} is out of range"),
                    Some("use a price from 0 to 10 USD/kWh".into()),
                )
                .with_kind(ErrorKind::BadValue));
        }
        cost.electricity_usd_per_kwh = x;
    }
    Ok(cost)
}
