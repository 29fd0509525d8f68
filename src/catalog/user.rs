//! User catalogs: `[[node]]`, `[[fabric]]`, `[[quant]]` and `[[model]]` entries a user writes in
//! a catalog file (`--catalog FILE`, `$SUPERNODE_CATALOG`) or inside a scenario's `[catalog]`
//! table, with the built-ins' schema. An entry may start from another with `like = "<id>"` and
//! give only the keys that differ. Parsed raw, validated once into the same rich types as the
//! embedded catalog; errors point at file:line:column and say how to fix them.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::{Catalog, ModelPreset, RawQuant};
use crate::hw::{FabricSpec, NodeSpec, PortKind, Transport};
use crate::llm::ModelSpec;
use crate::util::did_you_mean;

/// Most entries one user catalog may hold (a hostile file is refused, not parsed for minutes).
const MAX_ENTRIES: usize = 1000;
/// Longest chain of `like` references followed before the chain is called a loop.
const MAX_LIKE_DEPTH: usize = 16;

/// Where a user entry came from and which of its figures carry no source.
#[derive(Clone, Debug, PartialEq)]
pub struct UserOrigin {
    /// `node`, `fabric`, `quant` or `model`.
    pub section: &'static str,
    /// The entry's id.
    pub id: String,
    /// The file that defined it.
    pub file: String,
    /// The entry it extends, if any.
    pub like: Option<String>,
    /// Numeric figures the entry (not its `like` base) gives without a `sources` line: used as
    /// given, and predictions on them are labelled extrapolations.
    pub assumed: Vec<String>,
    /// The entry as merged (its `like` chain resolved): what a later file's `like` starts from.
    pub table: toml::Table,
}

/// A user catalog error at file:line:column.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}:{line}:{col}: {message}{}", help.as_ref().map(|h| format!(" (help: {h})")).unwrap_or_default())]
pub struct CatalogError {
    /// File name as given.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// Byte range in the file.
    pub span: Range<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

/// The entries of one user file, raw (tables with their spans).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUserFile {
    #[serde(default)]
    node: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    fabric: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    quant: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    model: Vec<Spanned<toml::Table>>,
}

/// A scenario file seen only for its `[catalog]` table.
#[derive(Deserialize)]
struct ScenarioCatalog {
    #[serde(default)]
    catalog: Option<RawUserFile>,
}

/// One user file being read: its name and text, for locating errors.
struct UserFile<'a> {
    path: &'a str,
    text: &'a str,
}

impl UserFile<'_> {
    fn error(&self, span: Range<usize>, message: impl Into<String>, help: Option<String>) -> CatalogError {
        let start = span.start.min(self.text.len());
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        CatalogError { path: self.path.to_string(), line, col, span, message: message.into(), help }
    }

    /// The span of `key = ...` inside an entry (its `[[header]]` span, as the toml parser gives
    /// it; the body runs to the next header that is not one of its sub-tables), or the header's
    /// span when not found.
    fn key_span(&self, entry: &Range<usize>, key: &str) -> Range<usize> {
        let header = self.text.get(entry.clone()).unwrap_or("");
        let sub = format!("[{}.", header.trim_matches(|c| c == '[' || c == ']'));
        let mut end = self.text.len();
        let mut at = entry.end;
        for line in self.text[entry.end.min(self.text.len())..].split_inclusive('\n') {
            let t = line.trim_start();
            if t.starts_with('[') && !t.starts_with(&sub) {
                end = at;
                break;
            }
            at += line.len();
        }
        let body = &self.text[entry.start..end];
        let mut offset = 0;
        for line in body.split_inclusive('\n') {
            let t = line.trim_start();
            if t.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('=')) {
                let at = entry.start + offset + (line.len() - t.len());
                return at..at + key.len();
            }
            offset += line.len();
        }
        entry.clone()
    }
}

/// A user catalog: entries parsed and checked, ready to add to the built-ins.
#[derive(Clone, Debug, Default)]
pub struct UserCatalog {
    /// Nodes.
    pub nodes: Vec<NodeSpec>,
    /// Fabrics.
    pub fabrics: Vec<FabricSpec>,
    /// Models.
    pub models: Vec<(ModelPreset, ModelSpec)>,
    /// Quantizations.
    pub quants: Vec<crate::llm::QuantSpec>,
    /// Where each entry came from.
    pub origins: Vec<UserOrigin>,
}

impl UserCatalog {
    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }
}

/// Reads a catalog file's text (`[[node]]`, `[[fabric]]`, `[[quant]]`, `[[model]]` at the top
/// level). `like` names a built-in, an entry of the same file, or an entry of a user file
/// installed before this one.
pub fn parse_catalog_file(path: &str, text: &str) -> Result<UserCatalog, CatalogError> {
    let file = UserFile { path, text };
    let raw: RawUserFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        file.error(
            span,
            e.message().to_string(),
            Some("a catalog file holds only [[node]], [[fabric]], [[quant]] and [[model]] tables".into()),
        )
    })?;
    build(&file, raw)
}

/// Reads the `[catalog]` table of a scenario's text (`[[catalog.node]]`, ...); an empty catalog
/// when it has none. Errors of the rest of the scenario are left to the scenario parser.
pub fn parse_scenario_catalog(path: &str, text: &str) -> Result<UserCatalog, CatalogError> {
    let file = UserFile { path, text };
    match toml::from_str::<ScenarioCatalog>(text) {
        Ok(ScenarioCatalog { catalog: Some(raw) }) => build(&file, raw),
        Ok(ScenarioCatalog { catalog: None }) => Ok(UserCatalog::default()),
        // Valid TOML that does not read as a catalog: the error is in `[catalog]`.
        Err(e) if toml::from_str::<toml::Table>(text).is_ok() => Err(file.error(
            e.span().unwrap_or(0..0),
            format!("[catalog]: {}", e.message()),
            Some("[catalog] holds only [[catalog.node]], [[catalog.fabric]], [[catalog.quant]] and [[catalog.model]] tables".into()),
        )),
        Err(_) => Ok(UserCatalog::default()),
    }
}

/// What a `like` in a section may start from: the built-ins' tables, then the merged tables of
/// the user entries installed so far; and how many of them are built-ins.
fn like_bases(section: &str, installed: &Catalog) -> (Vec<toml::Table>, usize) {
    let mut bases = builtin_tables(section);
    let builtins = bases.len();
    bases.extend(installed.user.iter().filter(|o| o.section == section).map(|o| o.table.clone()));
    (bases, builtins)
}

/// The embedded toml entries of a section, as raw tables.
fn builtin_tables(section: &str) -> Vec<toml::Table> {
    let text = match section {
        "node" => super::NODES,
        "fabric" => super::FABRICS,
        "quant" => super::QUANTS,
        _ => super::MODELS,
    };
    let t: toml::Table = toml::from_str(text).expect("embedded catalog is valid toml");
    match t.get(section) {
        Some(toml::Value::Array(a)) => a.iter().filter_map(|v| v.as_table().cloned()).collect(),
        _ => Vec::new(),
    }
}

/// `over` on top of `base`: tables merge key by key (so `sources` and a model's `config` keep
/// the base's keys the entry does not name), everything else is replaced.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn id_of(t: &toml::Table) -> Option<&str> {
    t.get("id").and_then(|v| v.as_str())
}

/// Each entry of one section with its `like` chain resolved: the merged table, and the keys the
/// entry itself wrote.
/// `bases` are what a `like` may name beyond the file's own entries: the built-ins (the first
/// `builtins` of them, which no entry may shadow), then the entries of user files installed
/// earlier (`$SUPERNODE_CATALOG` in order, then `--catalog` in order, then a scenario's own).
fn resolve_likes(
    file: &UserFile,
    section: &'static str,
    entries: &[Spanned<toml::Table>],
    bases: &[toml::Table],
    builtins: usize,
) -> Result<Vec<(Range<usize>, toml::Table, toml::Table)>, CatalogError> {
    let own_ids: Vec<&str> = entries.iter().filter_map(|e| id_of(e.get_ref())).collect();
    let mut out = Vec::new();
    for e in entries {
        let span = e.span();
        let table = e.get_ref();
        let id = id_of(table).ok_or_else(|| {
            file.error(span.clone(), format!("a [[{section}]] entry needs `id`"), Some("add `id = \"my-id\"` (a new id)".into()))
        })?;
        check_new_id(file, &span, section, id, bases[..builtins].iter().any(|b| id_of(b) == Some(id)), false)?;
        let mut chain = vec![id.to_string()];
        let mut layers = vec![table.clone()];
        let mut current = table.clone();
        while let Some(like) = current.get("like").map(|v| v.as_str().map(str::to_string)) {
            let Some(like) = like else {
                return Err(file.error(file.key_span(&span, "like"), "`like` must be a string id", None));
            };
            if chain.contains(&like) || chain.len() > MAX_LIKE_DEPTH {
                chain.push(like);
                return Err(file.error(
                    file.key_span(&span, "like"),
                    format!("`like` goes round in a loop: {}", chain.join(" -> ")),
                    Some("make one entry of the chain start from a built-in".into()),
                ));
            }
            let next = entries
                .iter()
                .map(|x| x.get_ref())
                .find(|x| id_of(x) == Some(like.as_str()))
                .or_else(|| bases.iter().find(|x| id_of(x) == Some(like.as_str())));
            let Some(next) = next else {
                let mut known: Vec<&str> = bases.iter().filter_map(id_of).collect();
                known.extend(own_ids.iter().copied());
                let hint = did_you_mean(&like, &known).map(|m| format!("did you mean `{m}`? ")).unwrap_or_default();
                return Err(file.error(
                    file.key_span(&span, "like"),
                    format!("`like = \"{like}\"`: no {section} has that id"),
                    Some(format!(
                        "{hint}`like` names a built-in, an entry of this file, or one of a catalog file read before this one \
                         ($SUPERNODE_CATALOG in order, then --catalog in order, then the scenario's own); `supernode catalog {section}s` lists them"
                    )),
                ));
            };
            chain.push(like);
            layers.push(next.clone());
            current = next.clone();
        }
        let mut merged = toml::Table::new();
        for layer in layers.iter().rev() {
            merge(&mut merged, layer);
        }
        merged.remove("like");
        // Whether `plan` searches a node or fabric by default is the entry's own say, not its
        // base's.
        if !table.contains_key("planner") {
            merged.remove("planner");
        }
        // Nor are the GGUFs of a model built `like` another its base's files: a checkpoint
        // converted now keeps llama.cpp's MLA latent cache unless the entry says otherwise.
        if !table.contains_key("gguf_per_head_mla") {
            merged.remove("gguf_per_head_mla");
        }
        merged.insert("id".into(), toml::Value::String(id.to_string()));
        out.push((span, merged, table.clone()));
    }
    Ok(out)
}

/// Numeric keys the entry wrote itself with no `sources` line for them.
fn assumed_keys(own: &toml::Table) -> Vec<String> {
    let sources = own.get("sources").and_then(|v| v.as_table());
    let mut out: Vec<String> = own
        .iter()
        .filter(|(k, v)| (v.is_float() || v.is_integer()) && !sources.is_some_and(|s| s.contains_key(k.as_str())))
        .map(|(k, _)| k.clone())
        .collect();
    out.sort();
    out
}

fn build(file: &UserFile, raw: RawUserFile) -> Result<UserCatalog, CatalogError> {
    // Ids are checked against the built-ins (a user entry may not shadow one); references
    // (`default_quant`, `degrade_to`) against everything installed so far.
    let base = super::embedded();
    let installed = super::catalog();
    let total = raw.node.len() + raw.fabric.len() + raw.quant.len() + raw.model.len();
    if total > MAX_ENTRIES {
        return Err(file.error(0..0, format!("{total} entries: a user catalog holds at most {MAX_ENTRIES}"), None));
    }
    let mut user = UserCatalog::default();
    let origin = |section: &'static str, own: &toml::Table, merged: &toml::Table, id: &str| UserOrigin {
        section,
        id: id.to_string(),
        file: file.path.to_string(),
        like: own.get("like").and_then(|v| v.as_str()).map(str::to_string),
        assumed: assumed_keys(own),
        table: merged.clone(),
    };
    let resolve = |section: &'static str, entries: &[Spanned<toml::Table>]| {
        let (bases, builtins) = like_bases(section, installed);
        resolve_likes(file, section, entries, &bases, builtins)
    };
    for (span, merged, own) in resolve("node", &raw.node)? {
        let node = NodeSpec::deserialize(toml::Value::Table(merged.clone())).map_err(|e| field_error(file, &span, "node", &e))?;
        check_node(file, &span, &node)?;
        check_new_id(file, &span, "node", &node.id, base.node(&node.id).is_some(), user.nodes.iter().any(|n| n.id == node.id))?;
        user.origins.push(origin("node", &own, &merged, &node.id));
        user.nodes.push(node);
    }
    for (span, merged, own) in resolve("fabric", &raw.fabric)? {
        let fabric = FabricSpec::deserialize(toml::Value::Table(merged.clone())).map_err(|e| field_error(file, &span, "fabric", &e))?;
        check_fabric(file, &span, &fabric, installed, &user)?;
        check_new_id(file, &span, "fabric", &fabric.id, base.fabric(&fabric.id).is_some(), user.fabrics.iter().any(|f| f.id == fabric.id))?;
        user.origins.push(origin("fabric", &own, &merged, &fabric.id));
        user.fabrics.push(fabric);
    }
    for (span, merged, own) in resolve("quant", &raw.quant)? {
        let rq = RawQuant::deserialize(toml::Value::Table(merged.clone())).map_err(|e| field_error(file, &span, "quant", &e))?;
        let quant = rq.try_spec().map_err(|m| file.error(span.clone(), m, None))?;
        check_new_id(file, &span, "quant", &quant.id, base.quant(&quant.id).is_some(), user.quants.iter().any(|q| q.id == quant.id))?;
        user.origins.push(origin("quant", &own, &merged, &quant.id));
        user.quants.push(quant);
    }
    for (span, merged, own) in resolve("model", &raw.model)? {
        let mut merged = merged;
        // A `like` copies the config, not the base's other names.
        if own.get("aliases").is_none() {
            merged.remove("aliases");
        }
        let preset = ModelPreset::deserialize(toml::Value::Table(merged.clone())).map_err(|e| field_error(file, &span, "model", &e))?;
        let json = serde_json::to_value(&preset.config).map_err(|e| file.error(span.clone(), format!("model config: {e}"), None))?;
        let spec = ModelSpec::from_hf_config(&preset.id, &preset.name, &json)
            .map_err(|e| file.error(file.key_span(&span, "config"), format!("model `{}`: {e}", preset.id), None))?;
        check_new_id(file, &span, "model", &preset.id, base.model(&preset.id).is_some(), user.models.iter().any(|m| m.0.id == preset.id))?;
        if !installed.quant_ids().contains(&preset.default_quant.as_str()) && !user.quants.iter().any(|q| q.id == preset.default_quant) {
            return Err(file.error(
                file.key_span(&span, "default_quant"),
                format!("default_quant `{}` is not a quantization", preset.default_quant),
                Some("`supernode catalog quants` lists them".into()),
            ));
        }
        user.origins.push(origin("model", &own, &merged, &preset.id));
        user.models.push((preset, spec));
    }
    Ok(user)
}

/// A serde error on an entry (unknown key, missing key, wrong type), located at the key it names.
fn field_error(file: &UserFile, span: &Range<usize>, section: &str, e: &toml::de::Error) -> CatalogError {
    let msg = e.message().to_string();
    let named = msg.split('`').nth(1).unwrap_or("");
    let at = if named.is_empty() { span.clone() } else { file.key_span(span, named) };
    let help = if msg.starts_with("missing field") {
        Some(format!("add `{named} = ...`, or start from a built-in with `like = \"<id>\"` (`supernode catalog {section}s`)"))
    } else if msg.starts_with("unknown field") {
        Some(format!("the keys a {section} takes are those of src/catalog/{section}s.toml (plus `like`)"))
    } else {
        None
    };
    file.error(at, format!("[[{section}]]: {msg}"), help)
}

fn check_new_id(file: &UserFile, span: &Range<usize>, section: &str, id: &str, builtin: bool, twice: bool) -> Result<(), CatalogError> {
    if builtin {
        return Err(file.error(
            file.key_span(span, "id"),
            format!("{section} `{id}` is already a {section} of the catalog: a user entry may not shadow it"),
            Some(format!("give it a new id and `like = \"{id}\"` to start from the built-in")),
        ));
    }
    if twice {
        return Err(file.error(file.key_span(span, "id"), format!("{section} `{id}` is defined twice in this file"), None));
    }
    Ok(())
}

/// A figure outside what the quantity can physically be, named with its range.
fn out_of_range(file: &UserFile, span: &Range<usize>, key: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), CatalogError> {
    if v.is_finite() && v >= lo && v <= hi {
        return Ok(());
    }
    Err(file.error(file.key_span(span, key), format!("`{key} = {v}` is out of range: {lo} to {hi} {unit}"), None))
}

/// Physical ranges of a node's figures (wide: they refuse typos and absurd numbers, never clamp).
fn check_node(file: &UserFile, span: &Range<usize>, n: &NodeSpec) -> Result<(), CatalogError> {
    out_of_range(file, span, "memory_gb", n.memory_gb, 0.001, 100_000.0, "GB")?;
    out_of_range(file, span, "mem_bw_gbs", n.mem_bw_gbs, 0.001, 100_000.0, "GB/s")?;
    out_of_range(file, span, "fp16_tflops", n.fp16_tflops, 0.001, 100_000.0, "TFLOPS")?;
    out_of_range(file, span, "price_usd", n.price_usd, 0.0, 1e8, "USD")?;
    out_of_range(file, span, "idle_w", n.idle_w, 0.0, 100_000.0, "W")?;
    out_of_range(file, span, "max_w", n.max_w, n.idle_w.max(0.001), 100_000.0, "W (at least idle_w)")?;
    out_of_range(file, span, "wired_fraction", n.wired_fraction, 0.01, 1.0, "of RAM")?;
    out_of_range(file, span, "ethernet_gbps", n.ethernet_gbps, 0.0, 10_000.0, "Gb/s")?;
    if let Some(q) = n.qsfp_gbps {
        out_of_range(file, span, "qsfp_gbps", q, 0.001, 10_000.0, "Gb/s")?;
    }
    out_of_range(file, span, "hpl_cpu_gflops", n.hpl_cpu_gflops, 0.0, 1e7, "Gflops")?;
    out_of_range(file, span, "hpl_w", n.hpl_w, 0.0, 100_000.0, "W")?;
    if let Some(t) = n.mlx_gemm_tflops {
        out_of_range(file, span, "mlx_gemm_tflops", t, 0.001, 100_000.0, "TFLOPS")?;
    }
    if let Some(t) = n.fp8_gemm_tflops {
        out_of_range(file, span, "fp8_gemm_tflops", t, 0.001, 100_000.0, "TFLOPS")?;
    }
    if let Some(r) = n.read_ceiling_gbs {
        out_of_range(file, span, "read_ceiling_gbs", r, 0.001, n.mem_bw_gbs.max(0.001), "GB/s (at most mem_bw_gbs)")?;
    }
    for &w in &n.power_modes_w {
        out_of_range(file, span, "power_modes_w", w, 1.0, 100_000.0, "W")?;
    }
    if let Err(m) = n.check_power_mode() {
        let modes = if n.power_modes_w.is_empty() {
            "list the box's modes in `power_modes_w`".to_string()
        } else {
            format!("use one of {:?}", n.power_modes_w)
        };
        return Err(file.error(file.key_span(span, "power_mode_w"), m, Some(modes)));
    }
    if let Some(limit) = n.gpu_memory_limit_gb {
        out_of_range(file, span, "gpu_memory_limit_gb", limit, 0.001, n.memory_gb, "GB (at most memory_gb)")?;
    }
    Ok(())
}

/// Why `tcp` cannot be `f`'s `tcp_fabric`: only an RDMA fabric has a TCP sibling, and the
/// sibling is a TCP fabric (what a TCP-only runtime such as llama.cpp RPC runs as on `f`).
pub fn tcp_sibling(f: &FabricSpec, tcp: &FabricSpec) -> Result<(), String> {
    if f.transport != Transport::Rdma {
        return Err(format!("`tcp_fabric` on fabric `{}`: only an RDMA fabric has a TCP sibling (remove the key)", f.id));
    }
    if tcp.transport != Transport::Tcp {
        return Err(format!("`tcp_fabric = \"{}\"`: that fabric is not TCP (name the TCP fabric of the same cables)", tcp.id));
    }
    Ok(())
}

fn check_fabric(file: &UserFile, span: &Range<usize>, f: &FabricSpec, base: &Catalog, user: &UserCatalog) -> Result<(), CatalogError> {
    out_of_range(file, span, "latency_us", f.latency_us, 0.0, 1e7, "us")?;
    out_of_range(file, span, "bandwidth_gbs", f.bandwidth_gbs, 1e-6, 100_000.0, "GB/s")?;
    out_of_range(file, span, "cable_usd", f.cable_usd, 0.0, 1e7, "USD")?;
    out_of_range(file, span, "switch_usd", f.switch_usd, 0.0, 1e8, "USD")?;
    // An Ethernet fabric's line rate caps a slower node port's links (`FabricSpec::link_gbs`),
    // and its payload cannot beat the line it rides on.
    if f.port == PortKind::Ethernet {
        out_of_range(file, span, "link_gbps", f.link_gbps, 0.001, 100_000.0, "Gb/s")?;
        if f.bandwidth_gbs * 8.0 > f.link_gbps {
            return Err(file.error(
                file.key_span(span, "bandwidth_gbs"),
                format!(
                    "`bandwidth_gbs = {}` ({} Gb/s) is faster than the line rate `link_gbps = {}`",
                    f.bandwidth_gbs,
                    f.bandwidth_gbs * 8.0,
                    f.link_gbps
                ),
                Some("bandwidth_gbs is what TCP achieves on the line, GB/s: at most link_gbps / 8".into()),
            ));
        }
    }
    if f.topologies.is_empty() {
        return Err(file.error(file.key_span(span, "topologies"), "`topologies` is empty: name at least one", None));
    }
    let known = |id: &str| base.fabric(id).or_else(|| user.fabrics.iter().find(|x| x.id == id));
    for (key, id) in [("degrade_to", &f.degrade_to), ("lost_to", &f.lost_to), ("tcp_fabric", &f.tcp_fabric)] {
        if let Some(id) = id {
            if known(id).is_none() {
                return Err(file.error(file.key_span(span, key), format!("`{key} = \"{id}\"`: no fabric has that id"), None));
            }
        }
    }
    if let Some(id) = &f.tcp_fabric {
        tcp_sibling(f, known(id).expect("checked above")).map_err(|m| file.error(file.key_span(span, "tcp_fabric"), m, None))?;
    }
    Ok(())
}

/// The catalog `base` plus `user`'s entries (ids already checked new; an entry identical to one
/// `base` already holds from an earlier install is kept once).
pub fn extend(base: &Catalog, user: &UserCatalog) -> Catalog {
    let mut c = base.clone();
    for n in &user.nodes {
        if c.node(&n.id).is_none() {
            c.nodes.push(n.clone());
        }
    }
    for f in &user.fabrics {
        if c.fabric(&f.id).is_none() {
            c.fabrics.push(f.clone());
        }
    }
    for q in &user.quants {
        if c.quant(&q.id).is_none() {
            c.quants.push(q.clone());
        }
    }
    for m in &user.models {
        if c.model(&m.0.id).is_none() {
            c.models.push(m.clone());
        }
    }
    for o in &user.origins {
        if !c.user.iter().any(|x| x.section == o.section && x.id == o.id) {
            c.user.push(o.clone());
        }
    }
    c
}

/// The user entries of `user` that `installed` already holds with the same content are dropped;
/// one with the same id and different content is an error (two files define it differently).
pub fn drop_installed(installed: &Catalog, user: UserCatalog) -> Result<UserCatalog, String> {
    let clash = |section: &str, id: &str| -> String {
        let file = installed.user.iter().find(|o| o.section == section && o.id == id).map_or("the catalog", |o| o.file.as_str());
        format!("{section} `{id}` is already defined differently by {file}")
    };
    let mut out = UserCatalog::default();
    for n in user.nodes {
        match installed.node(&n.id) {
            Some(old) if *old == n => {}
            Some(_) => return Err(clash("node", &n.id)),
            None => out.nodes.push(n),
        }
    }
    for f in user.fabrics {
        match installed.fabric(&f.id) {
            Some(old) if *old == f => {}
            Some(_) => return Err(clash("fabric", &f.id)),
            None => out.fabrics.push(f),
        }
    }
    for q in user.quants {
        match installed.quant(&q.id) {
            Some(old) if *old == q => {}
            Some(_) => return Err(clash("quant", &q.id)),
            None => out.quants.push(q),
        }
    }
    for m in user.models {
        match installed.model(&m.0.id) {
            Some(old) if old.1 == m.1 => {}
            Some(_) => return Err(clash("model", &m.0.id)),
            None => out.models.push(m),
        }
    }
    out.origins = user.origins.into_iter().filter(|o| !installed.user.iter().any(|x| x.section == o.section && x.id == o.id)).collect();
    Ok(out)
}

/// Sources of a user entry, by section and id.
pub fn origins_by_id(c: &Catalog) -> BTreeMap<(&'static str, &str), &UserOrigin> {
    c.user.iter().map(|o| ((o.section, o.id.as_str()), o)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;

    const NODE: &str = "[[node]]\nid = \"my-mini\"\nlike = \"m4-max-40c-128gb\"\nname = \"mini\"\nmemory_gb = 64\nmem_bw_gbs = 273\n[node.sources]\nmem_bw_gbs = \"Apple\"\n";

    #[test]
    fn a_like_entry_sets_its_own_planner_flag_and_only_modes_its_box_has() {
        let base = "[[node]]\nid = \"my-gx10\"\nlike = \"asus-ascent-gx10\"\nname = \"x\"\n";
        assert!(!embedded().node("asus-ascent-gx10").unwrap().planner);
        assert!(parse_catalog_file("p.toml", base).unwrap().nodes[0].planner, "not inherited");
        assert!(!parse_catalog_file("p.toml", &format!("{base}planner = false\n")).unwrap().nodes[0].planner);
        let evo = "[[node]]\nid = \"e\"\nlike = \"gmktec-evo-x2-128gb\"\nname = \"x\"\npower_mode_w = 70\n";
        let e = parse_catalog_file("p.toml", evo).unwrap_err().to_string();
        assert!(e.contains("p.toml:5:1: `power_mode_w = 70` is not a mode of node `e` (its modes: [55.0, 85.0, 120.0] W)"), "{e}");
        let ok = parse_catalog_file("p.toml", &evo.replace("70", "85")).unwrap();
        assert_eq!(ok.nodes[0].power_mode_w, Some(85.0));
    }

    /// A model built `like` DeepSeek R1 is another checkpoint: its GGUFs keep llama.cpp's MLA
    /// latent cache unless the entry says its files predate the metadata too.
    #[test]
    fn a_like_model_does_not_inherit_its_bases_gguf_vintage() {
        assert!(embedded().model("deepseek-r1").unwrap().0.gguf_per_head_mla);
        let base = "[[model]]\nid = \"my-r1\"\nlike = \"deepseek-r1\"\nname = \"r\"\n";
        assert!(!parse_catalog_file("m.toml", base).unwrap().models[0].0.gguf_per_head_mla, "not inherited");
        let old = parse_catalog_file("m.toml", &base.replace("name = \"r\"\n", "name = \"r\"\ngguf_per_head_mla = true\n")).unwrap();
        assert!(old.models[0].0.gguf_per_head_mla);
    }

    #[test]
    fn like_starts_from_the_built_in_and_overrides_what_it_names() {
        let u = parse_catalog_file("u.toml", NODE).unwrap();
        let n = &u.nodes[0];
        let base = embedded().node("m4-max-40c-128gb").unwrap();
        assert_eq!((n.id.as_str(), n.memory_gb, n.mem_bw_gbs), ("my-mini", 64.0, 273.0));
        assert_eq!((n.chip.as_str(), n.gpu_cores, n.fp16_tflops), (base.chip.as_str(), base.gpu_cores, base.fp16_tflops));
        // The base's sources stay, the entry's own are added; memory_gb has none: assumed.
        assert_eq!(n.sources["mem_bw_gbs"], "Apple");
        assert!(n.sources.contains_key("hpl_cpu_gflops"));
        assert_eq!(u.origins[0].assumed, vec!["memory_gb".to_string()]);
        assert_eq!(u.origins[0].like.as_deref(), Some("m4-max-40c-128gb"));
    }

    #[test]
    fn a_like_chain_inside_one_file_resolves_and_a_loop_is_refused() {
        let text = format!("{NODE}[[node]]\nid = \"my-mini-2\"\nlike = \"my-mini\"\nmemory_gb = 32\n");
        let u = parse_catalog_file("u.toml", &text).unwrap();
        assert_eq!((u.nodes[1].memory_gb, u.nodes[1].mem_bw_gbs), (32.0, 273.0));
        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"a\"\nlike = \"b\"\n[[node]]\nid = \"b\"\nlike = \"a\"\n").unwrap_err();
        assert!(e.message.contains("loop: a -> b -> a"), "{e}");
        assert_eq!((e.line, e.col), (3, 1), "{e}");
    }

    #[test]
    fn errors_name_the_key_the_line_and_the_fix() {
        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"x\"\nlike = \"m4-max-128gb\"\n").unwrap_err();
        assert_eq!(e.to_string().split(" (help").next().unwrap(), "u.toml:3:1: `like = \"m4-max-128gb\"`: no node has that id");
        assert!(e.help.unwrap().contains("did you mean `m4-max-40c-128gb`"));

        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"x\"\nlike = \"m4-max-40c-128gb\"\ncolour = 1\n").unwrap_err();
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        assert_eq!(e.line, 4);

        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"x\"\nname = \"x\"\nchip = \"m4-max\"\nos = \"macos\"\n").unwrap_err();
        assert!(e.message.contains("missing field `gpu_cores`"), "{e}");
        assert!(e.help.unwrap().contains("like = "), "fix names like");

        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"m4-max-40c-128gb\"\nlike = \"m4-max-40c-128gb\"\n").unwrap_err();
        assert!(e.message.contains("already a node of the catalog: a user entry may not shadow it"), "{e}");
        assert_eq!(e.line, 2);

        let e = parse_catalog_file("u.toml", "[[node]]\nid = \"x\"\nlike = \"m4-max-40c-128gb\"\nmem_bw_gbs = 1e9\n").unwrap_err();
        assert!(e.message.contains("`mem_bw_gbs = 1000000000` is out of range"), "{e}");
        assert_eq!(e.line, 4);

        let e = parse_catalog_file("u.toml", "[[nodes]]\nid = \"x\"\n").unwrap_err();
        assert!(e.message.contains("unknown field `nodes`"), "{e}");
    }

    #[test]
    fn numbers_are_used_as_given_not_clamped() {
        // A wired fraction of 1.0 and an idle power of 0 are legal and kept.
        let u =
            parse_catalog_file("u.toml", "[[node]]\nid = \"x\"\nlike = \"m4-max-40c-128gb\"\nwired_fraction = 1.0\nidle_w = 0\n").unwrap();
        assert_eq!((u.nodes[0].wired_fraction, u.nodes[0].idle_w), (1.0, 0.0));
    }

    #[test]
    fn fabrics_quants_and_models_read_with_like() {
        let text = "[[fabric]]\nid = \"eth-50g-t\"\nlike = \"eth-10g\"\nlink_gbps = 50\nbandwidth_gbs = 5.875\n\
                    [[quant]]\nid = \"q-t\"\nlike = \"mlx-4bit\"\nbits = 3.5\n\
                    [[model]]\nid = \"llama-t\"\nlike = \"llama-3.2-3b\"\nname = \"t\"\n[model.config]\nnum_hidden_layers = 14\n";
        let u = parse_catalog_file("u.toml", text).unwrap();
        assert_eq!((u.fabrics[0].link_gbps, u.fabrics[0].bandwidth_gbs), (50.0, 5.875));
        assert_eq!(u.fabrics[0].lost_to.as_deref(), Some("wifi"));
        let base = embedded().model("llama-3.2-3b").unwrap();
        assert_eq!(u.models[0].1.layers * 2, base.1.layers);
        assert_eq!(u.models[0].1.hidden, base.1.hidden);
        assert!(u.models[0].0.aliases.is_empty(), "a like does not copy the base's aliases");
        assert_eq!(u.quants[0].family, embedded().quant("mlx-4bit").unwrap().family);
        let e = parse_catalog_file("u.toml", "[[fabric]]\nid = \"f\"\nlike = \"eth-10g\"\nbandwidth_gbs = 2\n").unwrap_err();
        assert!(e.message.contains("`bandwidth_gbs = 2` (16 Gb/s) is faster than the line rate `link_gbps = 10`"), "{e}");
        let e = parse_catalog_file("u.toml", "[[fabric]]\nid = \"f\"\nlike = \"eth-10g\"\nlink_gbps = 0\n").unwrap_err();
        assert!(e.message.contains("`link_gbps = 0` is out of range"), "{e}");
        let e = parse_catalog_file("u.toml", "[[fabric]]\nid = \"f\"\nlike = \"eth-10g\"\nlost_to = \"carrier-pigeon\"\n").unwrap_err();
        assert!(e.message.contains("`lost_to = \"carrier-pigeon\"`: no fabric has that id"), "{e}");
    }

    #[test]
    fn a_scenario_catalog_is_read_from_its_catalog_table() {
        let text = "name = \"s\"\n[[catalog.node]]\nid = \"sc-node\"\nlike = \"m4-max-40c-128gb\"\n[cluster]\nnode = \"sc-node\"\n";
        let u = parse_scenario_catalog("s.toml", text).unwrap();
        assert_eq!(u.nodes[0].id, "sc-node");
        assert!(parse_scenario_catalog("s.toml", "[cluster]\nnode = \"x\"\n").unwrap().is_empty());
        let e = parse_scenario_catalog("s.toml", "[[catalog.nodes]]\nid = \"x\"\n").unwrap_err();
        assert!(e.message.contains("unknown field `nodes`"), "{e}");
    }
}
