//! Scenario files: raw serde structs with spans, `--set` overrides, and validation into a typed
//! [`Scenario`] once. Every error names file:line:column and says how to fix it.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::{Path, PathBuf};

use miette::{NamedSource, SourceSpan};
use serde::Deserialize;
use toml::Spanned;

use crate::catalog::catalog;
use crate::engine::{AllReduceAlgo, EngineKind, EngineOptions, Parallelism, Plan, PlanError, PlanInput};
use crate::hw::{FabricSpec, NodeSpec, Topology, Transport};
use crate::llm::{ModelSpec, QuantSpec};
use crate::profile::Profile;
use crate::util::did_you_mean;

/// A scenario error located in the source text.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{path}:{line}:{col}: {message}")]
pub struct ScenarioError {
    /// File name as given.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
    #[source_code]
    src: NamedSource<String>,
    #[label("here")]
    span: SourceSpan,
}

/// The text of a scenario and where it came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// Path as given on the command line (or a label).
    pub path: String,
    /// Directory relative paths in the file resolve against.
    pub dir: PathBuf,
    /// The TOML text (after `--set` overrides, if any).
    pub text: String,
}

impl Source {
    /// Builds an error at a byte range of this source.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>, help: Option<String>) -> ScenarioError {
        let start = span.start.min(self.text.len());
        let (line, col) = line_col(&self.text, start);
        ScenarioError {
            path: self.path.clone(),
            line,
            col,
            message: message.into(),
            help,
            src: NamedSource::new(self.path.clone(), self.text.clone()),
            span: (start, span.end.saturating_sub(start).max(1).min(self.text.len().saturating_sub(start).max(1))).into(),
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

// ---------------------------------------------------------------------------------------------
// Raw structs: exactly the file's shape, with spans.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<Spanned<String>>,
    description: Option<String>,
    seed: Option<Spanned<i64>>,
    cluster: Spanned<RawCluster>,
    model: Spanned<RawModel>,
    engine: Option<Spanned<RawEngine>>,
    workload: Option<Spanned<RawWorkload>>,
    cost: Option<Spanned<RawCost>>,
    /// Sweep axes; read by `supernode sweep`, ignored by `run`.
    sweep: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    nodes: Option<Spanned<Vec<Spanned<String>>>>,
    node: Option<Spanned<String>>,
    count: Option<Spanned<i64>>,
    fabric: Option<Spanned<String>>,
    topology: Option<Spanned<String>>,
    wired_limit_fraction: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    name: Option<Spanned<String>>,
    hf_config: Option<Spanned<String>>,
    quant: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    name: Spanned<String>,
    parallelism: Option<Spanned<String>>,
    macos: Option<Spanned<String>>,
    jaccl_frame_kib: Option<Spanned<i64>>,
    allreduce: Option<Spanned<String>>,
    fast_sync: Option<Spanned<bool>>,
    prefill_chunk: Option<Spanned<i64>>,
    mla_prefill: Option<Spanned<String>>,
    mla_cache: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    kind: Option<Spanned<String>>,
    prompt_tokens: Option<Spanned<i64>>,
    generate_tokens: Option<Spanned<i64>>,
    hpl_n: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    amortization_years: Option<Spanned<f64>>,
    electricity_usd_per_kwh: Option<Spanned<f64>>,
}

// ---------------------------------------------------------------------------------------------
// Typed scenario.

/// What the workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// One stream: prefill a prompt, then decode tokens.
    Generate,
    /// High-Performance Linpack on the CPUs.
    Hpl,
}

/// The workload of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Kind.
    pub kind: WorkloadKind,
    /// Prompt length in tokens.
    pub prompt_tokens: u64,
    /// Tokens to generate.
    pub generate_tokens: u64,
    /// HPL problem size N (0: sized to memory).
    pub hpl_n: u64,
}

/// Cost assumptions.
#[derive(Clone, Debug, PartialEq)]
pub struct CostConfig {
    /// Years over which hardware is amortized.
    pub amortization_years: f64,
    /// Electricity price, USD per kWh.
    pub electricity_usd_per_kwh: f64,
}

/// Default amortization period: three years, a common depreciation schedule for computers.
pub const DEFAULT_AMORTIZATION_YEARS: f64 = 3.0;
/// Default electricity price in USD per kWh (stated default; override with `[cost]`).
pub const DEFAULT_ELECTRICITY_USD_PER_KWH: f64 = 0.15;

/// Byte ranges of the keys that later (plan-time) errors point at.
#[derive(Clone, Debug, Default)]
pub struct Spans {
    /// `[cluster]` nodes/node/count.
    pub cluster_nodes: Range<usize>,
    /// `cluster.fabric` (or the table).
    pub fabric: Range<usize>,
    /// `cluster.topology` (or the fabric).
    pub topology: Range<usize>,
    /// `model.name` or `model.hf_config`.
    pub model: Range<usize>,
    /// `model.quant` (or the model).
    pub quant: Range<usize>,
    /// `engine.parallelism` (or the engine name).
    pub parallelism: Range<usize>,
    /// `[workload]`.
    pub workload: Range<usize>,
}

/// A validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name.
    pub name: String,
    /// Seed of the run's random stream.
    pub seed: u64,
    /// The nodes, in order (node 0 is the llama.cpp RPC client).
    pub nodes: Vec<NodeSpec>,
    /// Fabric.
    pub fabric: FabricSpec,
    /// Cabling.
    pub topology: Topology,
    /// Wired-memory fraction override.
    pub wired_limit_fraction: Option<f64>,
    /// Model.
    pub model: ModelSpec,
    /// Quantization.
    pub quant: QuantSpec,
    /// Engine and its options.
    pub engine: EngineOptions,
    /// Workload.
    pub workload: Workload,
    /// Cost assumptions.
    pub cost: CostConfig,
    /// Sweep table, if present.
    pub sweep: Option<toml::Table>,
    /// Source text, for errors found later.
    pub source: Source,
    /// Spans of keys for errors found later.
    pub spans: Spans,
}

impl Scenario {
    /// The engine plan of this scenario when its KV cache must hold `context` tokens.
    pub fn plan(&self, context: u64, profile: &Profile) -> Result<Plan, PlanError> {
        Plan::new(PlanInput {
            nodes: &self.nodes,
            fabric: &self.fabric,
            topology: self.topology,
            model: &self.model,
            quant: &self.quant,
            options: &self.engine,
            wired_limit_fraction: self.wired_limit_fraction,
            context,
            profile,
        })
    }

    /// An error located at a key span.
    pub fn error_at(&self, span: &Range<usize>, message: impl Into<String>, help: Option<String>) -> ScenarioError {
        self.source.error(span.clone(), message, help)
    }
}

/// Reads a scenario file, applies `--set key=value` overrides, and validates it.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let src = Source { path: shown.clone(), dir: PathBuf::new(), text: String::new() };
        src.error(0..0, format!("cannot read scenario file: {e}"), Some("check the path".into()))
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let source = Source { path: shown, dir, text };
    let source = apply_overrides(source, overrides)?;
    parse(source)
}

/// Applies `key.path=value` overrides to a source. The value is read as TOML (`32768`, `true`,
/// `"x"`, `[1, 2]`), falling back to a bare string.
pub fn apply_overrides(source: Source, overrides: &[String]) -> Result<Source, ScenarioError> {
    if overrides.is_empty() {
        return Ok(source);
    }
    let mut doc: toml::Table = toml::from_str(&source.text).map_err(|e| toml_error(&source, &e))?;
    for o in overrides {
        let (key, value) = o.split_once('=').ok_or_else(|| {
            Source { path: "--set".into(), dir: PathBuf::new(), text: o.clone() }.error(
                0..o.len(),
                format!("`--set {o}` is not KEY=VALUE"),
                Some("write e.g. --set workload.prompt_tokens=32768".into()),
            )
        })?;
        let value = parse_value(value.trim());
        set_dotted(&mut doc, key.trim(), value).map_err(|why| {
            Source { path: "--set".into(), dir: PathBuf::new(), text: o.clone() }.error(
                0..key.len(),
                why,
                Some("keys are dotted paths such as cluster.count or model.quant".into()),
            )
        })?;
    }
    let text = toml::to_string(&doc).expect("a toml table serializes");
    Ok(Source { path: format!("{} (with --set)", source.path), dir: source.dir, text })
}

/// Reads a `--set` value as TOML, or a bare string.
pub fn parse_value(v: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {v}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(v.to_string()))
}

/// Sets `a.b.c = value` in a table, creating intermediate tables.
pub fn set_dotted(doc: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("`{key}` is not a dotted key"));
    }
    let mut table = doc;
    for p in &parts[..parts.len() - 1] {
        let entry = table.entry(p.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
        table = entry.as_table_mut().ok_or_else(|| format!("`{p}` in `{key}` is not a table"))?;
    }
    let last = parts[parts.len() - 1];
    // `node`/`count` and `nodes` are alternatives: setting one removes the other.
    if parts.len() == 2 && parts[0] == "cluster" {
        match last {
            "nodes" => {
                table.remove("node");
                table.remove("count");
            }
            "node" | "count" => {
                if let Some(toml::Value::Array(list)) = table.remove("nodes") {
                    if last == "count" && !table.contains_key("node") {
                        if let Some(first) = list.first() {
                            table.insert("node".into(), first.clone());
                        }
                    }
                    if last == "node" && !table.contains_key("count") {
                        table.insert("count".into(), toml::Value::Integer(list.len() as i64));
                    }
                }
            }
            _ => {}
        }
    }
    if parts.len() == 2 && parts[0] == "model" {
        match last {
            "name" => {
                table.remove("hf_config");
            }
            "hf_config" => {
                table.remove("name");
            }
            _ => {}
        }
    }
    table.insert(last.to_string(), value);
    Ok(())
}

fn toml_error(source: &Source, e: &toml::de::Error) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    let msg = e.message().trim().to_string();
    let help = if msg.contains("unknown field") {
        Some("remove the key or fix its spelling; see DESIGN.md \"Contracts\" for the scenario keys".to_string())
    } else if msg.contains("invalid type") {
        Some("check the value's type: numbers unquoted, names in quotes".to_string())
    } else if msg.contains("missing field") {
        Some("add the missing key".to_string())
    } else {
        None
    };
    source.error(span, msg, help)
}

fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    match did_you_mean(word, candidates) {
        Some(s) => format!("did you mean `{s}`? known {what}: {}", candidates.join(", ")),
        None => format!("known {what}: {}", candidates.join(", ")),
    }
}

/// The value a string key names among `choices`; else an error at the key with the known
/// names (`what` = singular and plural) and a did-you-mean.
fn one_of<T: Copy>(src: &Source, v: &Spanned<String>, choices: &[(&str, T)], what: (&str, &str), hint: &str) -> Result<T, ScenarioError> {
    let word = v.get_ref().as_str();
    match choices.iter().find(|(name, _)| *name == word) {
        Some((_, x)) => Ok(*x),
        None => {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            Err(src.error(v.span(), format!("unknown {} `{word}`", what.0), Some(suggest(word, &names, what.1) + hint)))
        }
    }
}

fn positive(src: &Source, v: &Spanned<i64>, key: &str, max: i64) -> Result<u64, ScenarioError> {
    let x = *v.get_ref();
    if x < 1 || x > max {
        return Err(src.error(v.span(), format!("`{key}` = {x} is out of range"), Some(format!("use a value from 1 to {max}"))));
    }
    Ok(x as u64)
}

/// Parses and validates scenario text.
pub fn parse(source: Source) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(&source.text).map_err(|e| toml_error(&source, &e))?;
    let cat = catalog();
    let src = &source;
    let mut spans = Spans::default();

    // Cluster.
    let cluster_span = raw.cluster.span();
    let cluster = raw.cluster.into_inner();
    let node_ids: Vec<Spanned<String>> = match (cluster.nodes, cluster.node, cluster.count) {
        (Some(list), None, None) => {
            spans.cluster_nodes = list.span();
            let l = list.into_inner();
            if l.is_empty() {
                return Err(src.error(
                    spans.cluster_nodes.clone(),
                    "`cluster.nodes` is empty",
                    Some("list at least one node preset".into()),
                ));
            }
            l
        }
        (None, Some(node), count) => {
            let n = match &count {
                Some(c) => positive(src, c, "cluster.count", 64)?,
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
    if node_ids.len() > 64 {
        return Err(src.error(spans.cluster_nodes.clone(), format!("{} nodes is more than the 64 supported", node_ids.len()), None));
    }
    let mut nodes = Vec::with_capacity(node_ids.len());
    for id in &node_ids {
        match cat.node(id.get_ref()) {
            Some(n) => nodes.push(n.clone()),
            None => {
                return Err(src.error(
                    id.span(),
                    format!("unknown node `{}`", id.get_ref()),
                    Some(suggest(id.get_ref(), &cat.node_ids(), "nodes")),
                ));
            }
        }
    }
    let n = nodes.len();
    let fabric = match &cluster.fabric {
        Some(f) => {
            spans.fabric = f.span();
            cat.fabric(f.get_ref()).cloned().ok_or_else(|| {
                src.error(f.span(), format!("unknown fabric `{}`", f.get_ref()), Some(suggest(f.get_ref(), &cat.fabric_ids(), "fabrics")))
            })?
        }
        None if n == 1 => {
            spans.fabric = cluster_span.clone();
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
    let topology = match &cluster.topology {
        Some(t) => {
            spans.topology = t.span();
            let topo = Topology::parse(t.get_ref()).ok_or_else(|| {
                src.error(
                    t.span(),
                    format!("unknown topology `{}`", t.get_ref()),
                    Some(suggest(t.get_ref(), &["full-mesh", "ring", "switch"], "topologies")),
                )
            })?;
            if n > 1 && !fabric.topologies.iter().any(|x| x == topo.id()) {
                return Err(src.error(
                    t.span(),
                    format!("fabric `{}` cannot be cabled as `{}`", fabric.id, topo.id()),
                    Some(format!("use one of: {}", fabric.topologies.join(", "))),
                ));
            }
            if n == 1 { Topology::None } else { topo }
        }
        None => {
            spans.topology = spans.fabric.clone();
            if n == 1 { Topology::None } else { Topology::parse(&fabric.topologies[0]).unwrap_or(Topology::Switch) }
        }
    };
    // Ports and generations.
    if n > 1 {
        let need = topology.ports_per_node(n);
        for (node, id) in nodes.iter().zip(&node_ids) {
            let (have, what) = match (fabric.port.as_str(), fabric.transport) {
                ("thunderbolt", Transport::Rdma) => (node.rdma_ports as usize, "RDMA-capable Thunderbolt 5 ports"),
                ("thunderbolt", _) => (node.tb_ports as usize, "Thunderbolt ports"),
                ("qsfp", _) => (node.qsfp_ports as usize, "QSFP ports"),
                _ => (usize::MAX, ""),
            };
            if fabric.port == "thunderbolt" && node.tb_generation < fabric.min_tb_generation {
                return Err(src.error(
                    id.span(),
                    format!(
                        "node `{}` has {} ports, fabric `{}` needs Thunderbolt {}",
                        node.id,
                        if node.tb_generation == 0 { "no Thunderbolt".to_string() } else { format!("Thunderbolt {}", node.tb_generation) },
                        fabric.id,
                        fabric.min_tb_generation
                    ),
                    Some("pick a fabric the node supports (e.g. tb4-tcp or eth-10g)".into()),
                ));
            }
            if fabric.port == "qsfp" && node.qsfp_ports == 0 {
                return Err(src.error(
                    id.span(),
                    format!("node `{}` has no ConnectX-7 QSFP ports for fabric `{}`", node.id, fabric.id),
                    Some("cx7 fabrics are for GB10 machines; use eth-10g or a Thunderbolt fabric".into()),
                ));
            }
            if fabric.transport == Transport::Rdma && fabric.port == "thunderbolt" && node.rdma_ports == 0 {
                return Err(src.error(
                    id.span(),
                    format!("node `{}` has no RDMA-capable Thunderbolt 5 ports", node.id),
                    Some("use tb5-tcp / tb4-tcp, or M3 Ultra / M4 Max nodes on macOS 26.2+".into()),
                ));
            }
            if need > have {
                return Err(src.error(
                    spans.topology.start.min(spans.cluster_nodes.start)..spans.topology.end.max(spans.cluster_nodes.start + 1),
                    format!("a {} of {n} nodes needs {need} {what} per node; `{}` has {have}", topology.id(), node.id,),
                    Some(match topology {
                        Topology::FullMesh => {
                            format!("use at most {} nodes for a full mesh, or topology = \"ring\" (JACCL ring, mlx PR 3094)", have + 1)
                        }
                        _ => "use fewer nodes or a switched fabric".to_string(),
                    }),
                ));
            }
        }
        if fabric.backend == "jaccl" && topology == Topology::FullMesh && n - 1 > 8 {
            return Err(src.error(
                spans.cluster_nodes.clone(),
                format!("JACCL full mesh supports at most 8 peers (MESH_MAX_PEERS); {n} nodes have {}", n - 1),
                Some("use topology = \"ring\"".into()),
            ));
        }
    }
    let wired_limit_fraction = match &cluster.wired_limit_fraction {
        Some(w) => {
            let x = *w.get_ref();
            if !(0.1..=1.0).contains(&x) {
                return Err(src.error(
                    w.span(),
                    format!("`cluster.wired_limit_fraction` = {x} is out of range"),
                    Some("use a fraction from 0.1 to 1.0 (macOS default ~0.75)".into()),
                ));
            }
            Some(x)
        }
        None => None,
    };

    // Model.
    let model_span = raw.model.span();
    let rm = raw.model.into_inner();
    let (model, default_quant) = match (&rm.name, &rm.hf_config) {
        (Some(name), None) => {
            spans.model = name.span();
            let (preset, spec) = cat.model(name.get_ref()).ok_or_else(|| {
                src.error(
                    name.span(),
                    format!("unknown model `{}`", name.get_ref()),
                    Some(suggest(name.get_ref(), &cat.model_ids(), "models") + "; or use hf_config = \"path/to/config.json\""),
                )
            })?;
            (spec.clone(), preset.default_quant.clone())
        }
        (None, Some(path)) => {
            spans.model = path.span();
            let p = source.dir.join(path.get_ref());
            let text = std::fs::read_to_string(&p).map_err(|e| {
                src.error(
                    path.span(),
                    format!("cannot read `{}`: {e}", p.display()),
                    Some("hf_config paths are relative to the scenario file".into()),
                )
            })?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| src.error(path.span(), format!("`{}` is not valid JSON: {e}", p.display()), None))?;
            let stem = Path::new(path.get_ref())
                .parent()
                .and_then(|d| d.file_name())
                .map_or_else(|| path.get_ref().clone(), |s| s.to_string_lossy().into_owned());
            let spec = ModelSpec::from_hf_config(&stem, &stem, &json).map_err(|e| {
                src.error(
                    path.span(),
                    format!("cannot import `{}`: {e}", p.display()),
                    Some("supported architectures: llama, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss".into()),
                )
            })?;
            (spec, "bf16".to_string())
        }
        (Some(name), Some(_)) => {
            return Err(src.error(name.span(), "`model.name` and `model.hf_config` are both set", Some("keep one".into())));
        }
        (None, None) => {
            return Err(src.error(
                model_span,
                "`[model]` needs `name` (a preset) or `hf_config` (a config.json path)",
                Some(format!("known models: {}", cat.model_ids().join(", "))),
            ));
        }
    };
    // Engine.
    let (engine_name, engine_span, re) = match raw.engine {
        Some(e) => {
            let _span = e.span();
            let e = e.into_inner();
            (e.name.get_ref().clone(), e.name.span(), Some(e))
        }
        None => ((if n > 1 { "exo" } else { "mlx-lm" }).to_string(), model_span.clone(), None),
    };
    let kind = match engine_name.as_str() {
        "exo" => EngineKind::Exo,
        "mlx-lm" => EngineKind::MlxLm,
        "llama-cpp" | "ollama" => EngineKind::LlamaCpp,
        "llama-cpp-rpc" => EngineKind::LlamaCppRpc,
        other => {
            return Err(src.error(
                engine_span,
                format!("unknown engine `{other}`"),
                Some(suggest(other, &["exo", "mlx-lm", "llama-cpp", "llama-cpp-rpc", "ollama"], "engines")),
            ));
        }
    };
    spans.parallelism = engine_span.clone();
    let parallelism = match re.as_ref().and_then(|e| e.parallelism.as_ref()) {
        Some(p) => {
            spans.parallelism = p.span();
            match p.get_ref().as_str() {
                "tensor" => Parallelism::Tensor,
                "pipeline" => Parallelism::Pipeline,
                "none" => Parallelism::None,
                other => {
                    return Err(src.error(
                        p.span(),
                        format!("unknown parallelism `{other}`"),
                        Some(suggest(other, &["tensor", "pipeline", "none"], "values")),
                    ));
                }
            }
        }
        None => match kind {
            EngineKind::Exo if n > 1 => Parallelism::Tensor,
            EngineKind::LlamaCppRpc if n > 1 => Parallelism::Pipeline,
            _ => Parallelism::None,
        },
    };
    let par_err = |msg: String, help: &str| src.error(spans.parallelism.clone(), msg, Some(help.to_string()));
    match (kind, parallelism) {
        (EngineKind::MlxLm | EngineKind::LlamaCpp, Parallelism::Tensor | Parallelism::Pipeline) => {
            return Err(par_err(
                format!("engine `{engine_name}` runs on one node and has no {} parallelism", parallelism.id()),
                "use engine exo (tensor/pipeline) or llama-cpp-rpc (pipeline)",
            ));
        }
        (EngineKind::LlamaCppRpc, Parallelism::Tensor) => {
            return Err(par_err(
                "llama.cpp RPC splits layers (pipeline), not tensors".into(),
                "use parallelism = \"pipeline\" or engine exo",
            ));
        }
        _ => {}
    }
    if n > 1 && parallelism == Parallelism::None {
        return Err(src.error(
            spans.cluster_nodes.clone(),
            format!("engine `{engine_name}` with parallelism none runs on one node, but the cluster has {n}"),
            Some("use count = 1, or engine exo / llama-cpp-rpc".into()),
        ));
    }
    // Quantization family vs runtime.
    let runtime_family = match kind {
        EngineKind::Exo | EngineKind::MlxLm => "mlx",
        EngineKind::LlamaCpp | EngineKind::LlamaCppRpc => "gguf",
    };
    let quant = match &rm.quant {
        Some(q) => {
            spans.quant = q.span();
            cat.quant(q.get_ref()).cloned().ok_or_else(|| {
                src.error(
                    q.span(),
                    format!("unknown quantization `{}`", q.get_ref()),
                    Some(suggest(q.get_ref(), &cat.quant_ids(), "quantizations")),
                )
            })?
        }
        None => {
            spans.quant = spans.model.clone();
            let preset = cat.quant(&default_quant).expect("default quant exists");
            if preset.family == "any" || preset.family == runtime_family {
                preset.clone()
            } else {
                cat.quant(if runtime_family == "mlx" { "mlx-4bit" } else { "q4_k_m" }).expect("quant exists").clone()
            }
        }
    };
    if quant.family != "any" && quant.family != runtime_family {
        let fix = if runtime_family == "gguf" {
            "llama.cpp loads GGUF: use q4_k_m, q8_0, q2_k, ud-q4_k_xl, mxfp4 or bf16"
        } else {
            "MLX loads MLX formats: use mlx-4bit, mlx-6bit, mlx-8bit, int4-g32, mxfp4 or bf16"
        };
        return Err(src.error(
            spans.quant.clone(),
            format!("quantization `{}` is a {} format; engine `{engine_name}` cannot load it", quant.id, quant.family),
            Some(fix.into()),
        ));
    }
    // Tensor split legality (exo: N divides KV heads and hidden).
    if parallelism == Parallelism::Tensor && n > 1 {
        let n64 = n as u64;
        let kvh = model.kv_heads();
        let heads = model.heads();
        let legal = |k: u64| model.hidden % k == 0 && heads % k == 0 && (kvh == 1 || kvh % k == 0);
        if !legal(n64) {
            let ok: Vec<String> = (1..=16u64).filter(|k| legal(*k)).map(|k| k.to_string()).collect();
            return Err(src.error(
                spans.cluster_nodes.clone(),
                format!(
                    "tensor parallel over {n} nodes is illegal for `{}`: {n} must divide the {} KV heads, the {} heads and hidden {}",
                    model.id, kvh, heads, model.hidden
                ),
                Some(format!("use a node count in {{{}}}, or parallelism = \"pipeline\"", ok.join(", "))),
            ));
        }
    }
    let mut options = EngineOptions::december_2025(kind, parallelism);
    if let Some(e) = &re {
        if let Some(m) = &e.macos {
            let v = m.get_ref();
            let parsed: Option<(u32, u32)> =
                v.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))).or_else(|| v.parse().ok().map(|a| (a, 0)));
            match parsed {
                Some((maj, min)) if maj >= 26 => {
                    if (maj, min) < (26, 2) && fabric.backend == "jaccl" {
                        return Err(src.error(
                            m.span(),
                            format!("RDMA over Thunderbolt needs macOS 26.2 or later, not {v}"),
                            Some("set macos = \"26.2\" or use tb5-tcp".into()),
                        ));
                    }
                    options.jaccl_frame_bytes = if (maj, min) >= (26, 3) { 512 * 1024 } else { 4096 };
                }
                Some(_) => options.jaccl_frame_bytes = 4096,
                None => {
                    return Err(src.error(
                        m.span(),
                        format!("`engine.macos` = \"{v}\" is not a version"),
                        Some("write e.g. macos = \"26.2\"".into()),
                    ));
                }
            }
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
            if per_head && kind.runtime() != crate::engine::Runtime::LlamaCpp {
                return Err(src.error(
                    m.span(),
                    format!("engine `{engine_name}` keeps the MLA latent cache; a per-head cache is llama.cpp's"),
                    Some("remove `mla_cache`, or use a llama.cpp engine (llama-cpp, llama-cpp-rpc, ollama)".into()),
                ));
            }
            options.mla_per_head_cache = per_head;
        }
    }

    // Workload.
    let mut workload = Workload { kind: WorkloadKind::Generate, prompt_tokens: 128, generate_tokens: 128, hpl_n: 0 };
    if let Some(w) = raw.workload {
        spans.workload = w.span();
        let w = w.into_inner();
        if let Some(k) = &w.kind {
            workload.kind = match k.get_ref().as_str() {
                "generate" => WorkloadKind::Generate,
                "hpl" => WorkloadKind::Hpl,
                "serve" => {
                    return Err(src.error(
                        k.span(),
                        "workload kind `serve` (arrivals and batching) is not implemented yet",
                        Some("use kind = \"generate\"".into()),
                    ));
                }
                other => {
                    return Err(src.error(
                        k.span(),
                        format!("unknown workload kind `{other}`"),
                        Some(suggest(other, &["generate", "hpl"], "kinds")),
                    ));
                }
            };
        }
        if let Some(p) = &w.prompt_tokens {
            workload.prompt_tokens = positive(src, p, "workload.prompt_tokens", 1 << 20)?;
        }
        if let Some(g) = &w.generate_tokens {
            workload.generate_tokens = positive(src, g, "workload.generate_tokens", 1 << 20)?;
        }
        if let Some(h) = &w.hpl_n {
            workload.hpl_n = positive(src, h, "workload.hpl_n", 10_000_000)?;
        }
    }

    // Cost.
    let mut cost = CostConfig { amortization_years: DEFAULT_AMORTIZATION_YEARS, electricity_usd_per_kwh: DEFAULT_ELECTRICITY_USD_PER_KWH };
    if let Some(c) = raw.cost {
        let c = c.into_inner();
        if let Some(a) = &c.amortization_years {
            let x = *a.get_ref();
            if !(x > 0.0 && x <= 50.0) {
                return Err(src.error(
                    a.span(),
                    format!("`cost.amortization_years` = {x} is out of range"),
                    Some("use a number of years in (0, 50]".into()),
                ));
            }
            cost.amortization_years = x;
        }
        if let Some(e) = &c.electricity_usd_per_kwh {
            let x = *e.get_ref();
            if !(0.0..=10.0).contains(&x) || x.is_nan() {
                return Err(src.error(
                    e.span(),
                    format!("`cost.electricity_usd_per_kwh` = {x} is out of range"),
                    Some("use a price from 0 to 10 USD/kWh".into()),
                ));
            }
            cost.electricity_usd_per_kwh = x;
        }
    }

    let seed = match &raw.seed {
        Some(s) if *s.get_ref() < 0 => return Err(src.error(s.span(), "`seed` must be non-negative", None)),
        Some(s) => *s.get_ref() as u64,
        None => 1,
    };
    let name = raw.name.map(|n| n.into_inner()).unwrap_or_else(|| {
        Path::new(&source.path).file_stem().map_or_else(|| "scenario".to_string(), |s| s.to_string_lossy().into_owned())
    });
    let _ = raw.description;
    Ok(Scenario {
        name,
        seed,
        nodes,
        fabric,
        topology,
        wired_limit_fraction,
        model,
        quant,
        engine: options,
        workload,
        cost,
        sweep: raw.sweep,
        source,
        spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source { path: "t.toml".into(), dir: PathBuf::new(), text: text.into() }
    }

    #[test]
    fn unknown_key_points_at_line() {
        let e = parse(src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncolor = 1\n[model]\nname = \"llama-3.2-3b\"\n")).unwrap_err();
        assert_eq!((e.line, e.col), (3, 1), "{e}");
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn unknown_node_suggests() {
        let e = parse(src("[cluster]\nnode = \"m3-ultra-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.help.unwrap().contains("did you mean `m3-ultra-80c-512gb`"));
    }

    #[test]
    fn overrides_apply() {
        let s = apply_overrides(
            src("[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n"),
            &["workload.prompt_tokens=32768".into(), "cluster.count=2".into(), "cluster.fabric=tb5-rdma".into()],
        )
        .unwrap();
        let s = parse(s);
        // llama.cpp engine default is mlx-lm for one node; with 2 nodes exo tensor: 24 heads / 8 kv: legal for 2.
        let s = s.unwrap();
        assert_eq!(s.workload.prompt_tokens, 32768);
        assert_eq!(s.nodes.len(), 2);
    }
}
