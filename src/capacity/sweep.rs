//! Sweeps: a scenario file with a `[sweep]` table of axes (dotted keys mapping to lists of
//! values), expanded into points, each predicted by the one estimator and streamed to
//! `DIR/results.jsonl`; sharding across machines and merging shard outputs; the CSV view.
//!
//! Grammar (see README "Sweeps"):
//!
//! ```toml
//! [sweep]
//! "cluster.count" = [1, 2, 4]               # an axis: a dotted scenario key and its values
//! cluster.fabric = ["tb5-rdma", "tb5-tcp"]  # unquoted dotted keys work too
//! seed = { from = 1, to = 10 }              # an integer range (inclusive; optional `step`)
//! zip = [["cluster.count", "cluster.fabric"]]  # axes in a zip group vary together
//! ```
//!
//! Points are the cartesian product of the groups (a plain axis is a group of one) in the order
//! the axes appear in the file, the first varying slowest. Point `i` of `N` belongs to shard
//! `i % n`. Lines are written in index order whatever the thread count, so the output bytes do
//! not depend on `--jobs`, and `merge` of all shards equals the unsharded run byte for byte.

// Errors carry the source text for rendering; they are the cold path.
#![allow(clippy::result_large_err)]

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use crate::estimate::{Estimate, EstimateError, estimate};
use crate::profile::Profile;
use crate::scenario::{self, Scenario, ScenarioError, Source};
use crate::util::did_you_mean;

/// Format tag of sweep output directories.
pub const FORMAT: &str = "supernode-sweep-1";
/// Result lines, one per point.
pub const RESULTS_JSONL: &str = "results.jsonl";
/// The same results as a table.
pub const RESULTS_CSV: &str = "results.csv";
/// What the directory holds: sweep hash, shard, point counts.
pub const MANIFEST: &str = "manifest.json";
/// Largest sweep accepted.
pub const MAX_POINTS: u64 = 1_000_000_000;
/// Points evaluated in parallel before their lines are written (in index order).
const BLOCK: usize = 512;

/// Why a sweep cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file is wrong (located at file:line:column).
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// Bad arguments or mismatched inputs.
    #[error("{0}")]
    Input(String),
    /// I/O failure.
    #[error("{0}")]
    Io(String),
}

impl From<ScenarioError> for SweepError {
    fn from(e: ScenarioError) -> Self {
        SweepError::Scenario(Box::new(e))
    }
}

fn io_err(what: impl std::fmt::Display, path: &Path, e: std::io::Error) -> SweepError {
    SweepError::Io(format!("cannot {what} {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Grammar.

/// One axis: a dotted scenario key and the values it takes.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Dotted key, e.g. `cluster.count`.
    pub key: String,
    /// Values, in file order.
    pub values: Vec<toml::Value>,
    key_span: Range<usize>,
    value_spans: Vec<Range<usize>>,
}

/// A parsed sweep: the base scenario and its axes.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// Scenario name (the base scenario's `name`, or the file stem).
    pub name: String,
    /// Path as given.
    pub path: String,
    /// Groups of axes that vary together (a plain axis is a group of one), in file order.
    pub groups: Vec<Vec<Axis>>,
    /// Number of points.
    pub total: u64,
    /// Identity of the sweep (base scenario, axes, profile, version): shards must agree on it.
    pub hash: String,
    /// Name of the calibration profile.
    pub profile: String,
    source: Source,
    base: toml::Table,
}

struct RawAxis {
    path: Vec<String>,
    key_span: Range<usize>,
    kind: RawKind,
}

enum RawKind {
    List(Vec<Range<usize>>, Range<usize>),
    Range { from: i64, to: i64, step: i64, span: Range<usize> },
}

impl Sweep {
    /// Reads a sweep file.
    pub fn load(path: &Path, profile: &Profile) -> Result<Sweep, SweepError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| io_err("read", path, e)).map_err(|e| match e {
            SweepError::Io(m) => SweepError::Input(m),
            other => other,
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::from_source(Source { path: shown, dir, text }, profile)
    }

    /// Parses a sweep from scenario text with a `[sweep]` table.
    pub fn from_source(source: Source, profile: &Profile) -> Result<Sweep, SweepError> {
        // The file without [sweep] must be a valid scenario: it is what `supernode run` runs.
        let base_scenario = scenario::parse(source.clone())?;
        let src = &source;
        let doc = DeTable::parse(&src.text).map_err(|e| src.error(e.span().unwrap_or(0..0), e.message().trim(), None))?;
        let doc = doc.into_inner();
        let Some((sweep_key, sweep_val)) = doc.iter().find(|(k, _)| k.get_ref() == "sweep") else {
            return Err(SweepError::Scenario(Box::new(src.error(
                0..0,
                "this scenario has no `[sweep]` table",
                Some("add [sweep] with dotted keys mapping to lists, e.g. \"cluster.count\" = [1, 2, 4]".into()),
            ))));
        };
        let DeValue::Table(sweep_table) = sweep_val.get_ref() else {
            return Err(src.error(sweep_key.span(), "`sweep` must be a table of axes", Some(GRAMMAR_HELP.into())).into());
        };
        let mut raw = Vec::new();
        let mut zip: Option<&toml::Spanned<DeValue>> = None;
        for (k, v) in sweep_table.iter() {
            if k.get_ref() == "zip" {
                zip = Some(v);
                continue;
            }
            collect(src, vec![k.get_ref().to_string()], k.span(), v, &mut raw)?;
        }
        raw.sort_by_key(|a| a.key_span.start);
        if raw.is_empty() {
            return Err(src.error(sweep_key.span(), "the `[sweep]` table has no axes", Some(GRAMMAR_HELP.into())).into());
        }
        // Values, read from the plain TOML (exact types), spans from the spanned parse.
        let mut plain: toml::Table =
            toml::from_str(&src.text).map_err(|e| src.error(e.span().unwrap_or(0..0), e.message().trim(), None))?;
        let sweep_plain = match plain.remove("sweep") {
            Some(toml::Value::Table(t)) => t,
            _ => unreachable!("checked above"),
        };
        let mut axes: Vec<Axis> = Vec::new();
        for r in raw {
            let key = r.path.join(".");
            if axes.iter().any(|a| a.key == key) {
                return Err(src
                    .error(r.key_span, format!("sweep axis `{key}` is given twice"), Some("keep one list per key".into()))
                    .into());
            }
            let (values, value_spans) = match r.kind {
                RawKind::List(spans, list_span) => {
                    let mut node = &sweep_plain;
                    for p in &r.path[..r.path.len() - 1] {
                        node = node.get(p).and_then(toml::Value::as_table).expect("path exists in both parses");
                    }
                    let arr = node.get(&r.path[r.path.len() - 1]).and_then(toml::Value::as_array).expect("array in both parses");
                    if arr.is_empty() {
                        return Err(src
                            .error(list_span, format!("sweep axis `{key}` has no values"), Some("list at least one value".into()))
                            .into());
                    }
                    (arr.clone(), spans)
                }
                RawKind::Range { from, to, step, span } => {
                    if step < 1 || to < from {
                        return Err(src
                            .error(
                                span,
                                format!("sweep range for `{key}` is empty"),
                                Some("write { from = 1, to = 8 } (inclusive; step >= 1)".into()),
                            )
                            .into());
                    }
                    let n = ((to - from) / step + 1) as u64;
                    if n > MAX_POINTS {
                        return Err(src.error(span, format!("sweep range for `{key}` has {n} values"), None).into());
                    }
                    let values: Vec<toml::Value> = (0..n).map(|i| toml::Value::Integer(from + i as i64 * step)).collect();
                    let spans = vec![span; values.len()];
                    (values, spans)
                }
            };
            axes.push(Axis { key, values, key_span: r.key_span, value_spans });
        }
        // Zip groups.
        let mut group_of: Vec<Option<usize>> = vec![None; axes.len()];
        let mut zip_groups: Vec<Vec<usize>> = Vec::new();
        if let Some(z) = zip {
            let bad = || src.error(z.span(), "`zip` must be a list of lists of axis keys", Some(ZIP_HELP.into()));
            let DeValue::Array(groups) = z.get_ref() else { return Err(bad().into()) };
            for g in groups.iter() {
                let DeValue::Array(keys) = g.get_ref() else { return Err(bad().into()) };
                let mut members = Vec::new();
                for k in keys.iter() {
                    let DeValue::String(name) = k.get_ref() else { return Err(bad().into()) };
                    let Some(ai) = axes.iter().position(|a| a.key == name.as_ref()) else {
                        let known: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
                        let help = match did_you_mean(name, &known) {
                            Some(s) => format!("did you mean `{s}`? zip groups name axes of this [sweep]: {}", known.join(", ")),
                            None => format!("zip groups name axes of this [sweep]: {}", known.join(", ")),
                        };
                        return Err(src.error(k.span(), format!("zip names `{name}`, which is not a sweep axis"), Some(help)).into());
                    };
                    if group_of[ai].is_some() || members.contains(&ai) {
                        return Err(src
                            .error(
                                k.span(),
                                format!("axis `{name}` is in more than one zip group"),
                                Some("each axis may be zipped once".into()),
                            )
                            .into());
                    }
                    members.push(ai);
                }
                if members.is_empty() {
                    return Err(bad().into());
                }
                let first_len = axes[members[0]].values.len();
                for &m in &members[1..] {
                    if axes[m].values.len() != first_len {
                        let a = &axes[members[0]];
                        let b = &axes[m];
                        return Err(src
                            .error(
                                b.key_span.clone(),
                                format!(
                                    "zipped axes differ in length: `{}` has {} values, `{}` has {}",
                                    b.key,
                                    b.values.len(),
                                    a.key,
                                    a.values.len()
                                ),
                                Some("axes in a zip group vary together and need the same number of values".into()),
                            )
                            .into());
                    }
                }
                for &m in &members {
                    group_of[m] = Some(zip_groups.len());
                }
                zip_groups.push(members);
            }
        }
        // Groups in file order (a zip group sits where its first axis is).
        let mut placed = vec![false; zip_groups.len()];
        let mut groups: Vec<Vec<Axis>> = Vec::new();
        for i in 0..axes.len() {
            match group_of[i] {
                None => groups.push(vec![axes[i].clone()]),
                Some(g) if !placed[g] => {
                    placed[g] = true;
                    let mut members = zip_groups[g].clone();
                    members.sort_unstable();
                    groups.push(members.iter().map(|&m| axes[m].clone()).collect());
                }
                Some(_) => {}
            }
        }
        let mut total: u64 = 1;
        for g in &groups {
            total = total.checked_mul(g[0].values.len() as u64).filter(|t| *t <= MAX_POINTS).ok_or_else(|| {
                SweepError::Scenario(Box::new(src.error(
                    sweep_key.span(),
                    format!("the sweep has more than {MAX_POINTS} points"),
                    Some("zip axes that vary together or split the sweep".into()),
                )))
            })?;
        }
        // The base document, with a name so that every point is named alike.
        let mut base = plain;
        base.entry("name").or_insert_with(|| toml::Value::String(base_scenario.name.clone()));
        let mut sweep = Sweep {
            name: base_scenario.name.clone(),
            path: source.path.clone(),
            groups,
            total,
            hash: String::new(),
            profile: profile.meta.name.clone(),
            base,
            source,
        };
        sweep.check_values()?;
        sweep.hash = sweep.identity(profile);
        Ok(sweep)
    }

    /// Each value alone on the base: unknown presets, wrong types or keys are grammar errors
    /// (they would fail every point); combinations that cannot run are rows, not errors.
    fn check_values(&self) -> Result<(), SweepError> {
        for g in &self.groups {
            for a in g {
                for (v, span) in a.values.iter().zip(&a.value_spans) {
                    let mut doc = self.base.clone();
                    if let Err(why) = scenario::set_dotted(&mut doc, &a.key, v.clone()) {
                        return Err(self
                            .source
                            .error(a.key_span.clone(), format!("sweep axis `{}`: {why}", a.key), Some(KEY_HELP.into()))
                            .into());
                    }
                    let text = toml::to_string(&doc).expect("a toml table serializes");
                    let src = Source { path: self.path.clone(), dir: self.source.dir.clone(), text };
                    if let Err(e) = scenario::parse(src) {
                        let m = &e.message;
                        if m.starts_with("unknown field") {
                            return Err(self
                                .source
                                .error(
                                    a.key_span.clone(),
                                    format!("sweep axis `{}` is not a scenario key: {m}", a.key),
                                    Some(KEY_HELP.into()),
                                )
                                .into());
                        }
                        let value_class = m.starts_with("unknown ")
                            || m.contains("invalid type")
                            || m.contains("out of range")
                            || m.contains("is not a version")
                            || m.contains("must be non-negative")
                            || m.contains("is empty");
                        if value_class {
                            return Err(self
                                .source
                                .error(span.clone(), format!("sweep value {} for `{}`: {m}", value_label_toml(v), a.key), e.help.clone())
                                .into());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn identity(&self, profile: &Profile) -> String {
        let mut s = String::new();
        s.push_str(FORMAT);
        s.push('\n');
        s.push_str(env!("CARGO_PKG_VERSION"));
        s.push('\n');
        s.push_str(&toml::to_string(&self.base).expect("table serializes"));
        for g in &self.groups {
            s.push_str("group\n");
            for a in g {
                s.push_str(&a.key);
                s.push('=');
                s.push_str(&toml::Value::Array(a.values.clone()).to_string());
                s.push('\n');
            }
        }
        s.push_str(&serde_json::to_string(profile).expect("profile serializes"));
        format!("{:016x}", fnv1a64(s.as_bytes()))
    }

    /// Axis keys in file order.
    pub fn axes(&self) -> Vec<String> {
        self.groups.iter().flatten().map(|a| a.key.clone()).collect()
    }

    /// Zip groups (groups of more than one axis).
    pub fn zip_groups(&self) -> Vec<Vec<String>> {
        self.groups.iter().filter(|g| g.len() > 1).map(|g| g.iter().map(|a| a.key.clone()).collect()).collect()
    }

    /// The overrides of point `index` (axis order).
    pub fn overrides(&self, index: u64) -> Vec<(&str, &toml::Value)> {
        let mut pick = vec![0usize; self.groups.len()];
        let mut rest = index;
        for (g, group) in self.groups.iter().enumerate().rev() {
            let len = group[0].values.len() as u64;
            pick[g] = (rest % len) as usize;
            rest /= len;
        }
        self.groups.iter().zip(&pick).flat_map(|(g, &i)| g.iter().map(move |a| (a.key.as_str(), &a.values[i]))).collect()
    }

    /// The scenario of point `index`: the base with the point's overrides, fully validated.
    pub fn scenario(&self, index: u64) -> Result<Scenario, ScenarioError> {
        let mut doc = self.base.clone();
        for (k, v) in self.overrides(index) {
            scenario::set_dotted(&mut doc, k, v.clone()).map_err(|why| self.source.error(0..0, why, None))?;
        }
        let text = toml::to_string(&doc).expect("a toml table serializes");
        scenario::parse(Source { path: format!("{} [point {index}]", self.path), dir: self.source.dir.clone(), text })
    }

    /// Predicts point `index` and renders its result line (without the newline).
    pub fn point_line(&self, index: u64, profile: &Profile) -> (String, bool) {
        let mut overrides = serde_json::Map::new();
        for (k, v) in self.overrides(index) {
            overrides.insert(k.to_string(), serde_json::to_value(v).unwrap_or(serde_json::Value::Null));
        }
        let mut line = LineOut { index, overrides, fits: false, estimate: None, error: None, scenario: None };
        let est;
        match self.scenario(index) {
            Err(e) => line.error = Some(ErrorInfo { kind: "invalid".into(), message: e.message.clone(), help: e.help.clone() }),
            Ok(sc) => match estimate(&sc, profile) {
                Ok(e) => {
                    est = e;
                    line.fits = true;
                    line.estimate = Some(&est);
                }
                Err(err) => {
                    let EstimateError::Plan(pe) = &err;
                    let kind = match pe {
                        crate::engine::PlanError::DoesNotFit { .. } => "does-not-fit",
                        crate::engine::PlanError::Uncalibrated { .. } => "uncalibrated",
                        crate::engine::PlanError::TooManyStages { .. } => "illegal-split",
                    };
                    line.error = Some(ErrorInfo { kind: kind.into(), message: err.to_string(), help: Some(pe.fix()) });
                    line.scenario = Some(PointInfo::of(&sc));
                }
            },
        }
        let fits = line.fits;
        (serde_json::to_string(&line).expect("line serializes"), fits)
    }
}

const GRAMMAR_HELP: &str = "write axes as \"cluster.count\" = [1, 2, 4] (a dotted scenario key and a list), or seed = { from = 1, to = 8 }";
const ZIP_HELP: &str = "write zip = [[\"cluster.nodes\", \"engine.name\"]]: axes in a group vary together";
const KEY_HELP: &str =
    "axes are dotted scenario keys such as cluster.count, cluster.fabric, model.quant, engine.parallelism, workload.prompt_tokens";

fn collect(
    src: &Source,
    path: Vec<String>,
    key_span: Range<usize>,
    v: &toml::Spanned<DeValue>,
    out: &mut Vec<RawAxis>,
) -> Result<(), ScenarioError> {
    let key = path.join(".");
    match v.get_ref() {
        DeValue::Array(items) => {
            out.push(RawAxis { path, key_span, kind: RawKind::List(items.iter().map(|i| i.span()).collect(), v.span()) });
            Ok(())
        }
        DeValue::Table(t) => {
            let keys: Vec<&str> = t.iter().map(|(k, _)| k.get_ref().as_ref()).collect();
            let is_range = keys.contains(&"from") && keys.contains(&"to") && keys.iter().all(|k| ["from", "to", "step"].contains(k));
            if is_range {
                let get = |name: &str, default: Option<i64>| -> Result<i64, ScenarioError> {
                    match t.iter().find(|(k, _)| k.get_ref() == name) {
                        Some((_, val)) => match val.get_ref() {
                            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                                .map_err(|_| src.error(val.span(), format!("`{name}` in the range for `{key}` is out of range"), None)),
                            _ => Err(src.error(val.span(), format!("`{name}` in the range for `{key}` must be an integer"), None)),
                        },
                        None => Ok(default.expect("from/to present")),
                    }
                };
                let from = get("from", None)?;
                let to = get("to", None)?;
                let step = get("step", Some(1))?;
                out.push(RawAxis { path, key_span, kind: RawKind::Range { from, to, step, span: v.span() } });
                return Ok(());
            }
            for (k, sub) in t.iter() {
                let mut p = path.clone();
                p.push(k.get_ref().to_string());
                collect(src, p, k.span(), sub, out)?;
            }
            Ok(())
        }
        _ => Err(src.error(
            v.span(),
            format!("sweep axis `{key}` must be a list of values"),
            Some(format!("write \"{key}\" = [value1, value2, ...] (a one-value list is fine)")),
        )),
    }
}

/// A value as a short label: strings bare, lists of node presets as `2x a + b`.
pub fn value_label(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => {
            let mut out: Vec<(String, usize)> = Vec::new();
            for i in items {
                let l = value_label(i);
                match out.last_mut() {
                    Some((prev, c)) if *prev == l => *c += 1,
                    _ => out.push((l, 1)),
                }
            }
            out.iter().map(|(l, c)| if *c > 1 { format!("{c}x {l}") } else { l.clone() }).collect::<Vec<_>>().join(" + ")
        }
        other => other.to_string(),
    }
}

fn value_label_toml(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

/// FNV-1a, 64 bit: a stable identity for sweeps (not a security hash).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// Result lines.

/// Why a point cannot run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ErrorInfo {
    /// `does-not-fit`, `invalid` (illegal split, too few ports, ...), `uncalibrated`, `illegal-split`.
    pub kind: String,
    /// The scenario error message.
    pub message: String,
    /// How to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

/// What a point is (for rows that have no estimate).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
pub struct PointInfo {
    /// Model id.
    pub model: String,
    /// Quantization id.
    pub quant: String,
    /// Engine id.
    pub engine: String,
    /// Parallelism id.
    pub parallelism: String,
    /// Node presets.
    pub nodes: Vec<String>,
    /// Fabric id.
    pub fabric: String,
    /// Topology id.
    pub topology: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub generate_tokens: u64,
}

impl PointInfo {
    fn of(s: &Scenario) -> Self {
        PointInfo {
            model: s.model.id.clone(),
            quant: s.quant.id.clone(),
            engine: s.engine.kind.id().into(),
            parallelism: s.engine.parallelism.id().into(),
            nodes: s.nodes.iter().map(|n| n.id.clone()).collect(),
            fabric: s.fabric.id.clone(),
            topology: s.topology.id().into(),
            prompt_tokens: s.workload.prompt_tokens,
            generate_tokens: s.workload.generate_tokens,
        }
    }
}

#[derive(Serialize)]
struct LineOut<'a> {
    index: u64,
    overrides: serde_json::Map<String, serde_json::Value>,
    fits: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimate: Option<&'a Estimate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scenario: Option<PointInfo>,
}

/// Latency percentiles of a saved estimate, ms.
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
pub struct Tpot {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// Calibration status of a saved estimate.
#[derive(Clone, Debug, Deserialize, PartialEq, Default)]
pub struct Calibration {
    /// `inside` or `extrapolation`.
    pub status: String,
}

/// The fields of a saved estimate that tables and charts use.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct EstimateRow {
    /// What was run.
    #[serde(flatten)]
    pub info: PointInfo,
    /// Decode tokens/s.
    pub decode_tokens_per_s: f64,
    /// Prefill tokens/s.
    pub prefill_tokens_per_s: f64,
    /// Time to first token, s.
    pub ttft_s: f64,
    /// Time per output token, ms.
    pub tpot_ms: Tpot,
    /// Cluster power, W.
    pub cluster_power_w: f64,
    /// Energy per token, J.
    pub energy_j_per_token: f64,
    /// Memory used per node, GB.
    pub memory_per_node_gb: Vec<f64>,
    /// Hardware cost, USD.
    pub cost_usd: f64,
    /// USD per million tokens.
    pub usd_per_mtok: f64,
    /// Hardware USD per token/s.
    pub usd_per_token_per_s: f64,
    /// Cables.
    pub cables: u64,
    /// Calibration envelope.
    #[serde(default)]
    pub calibration: Calibration,
    /// Tokens per joule (1 / energy per token), filled in when rows are read for charts.
    #[serde(skip)]
    pub tokens_per_joule: f64,
}

/// One result line read back.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Row {
    /// Point index.
    pub index: u64,
    /// The point's overrides (axis key -> value).
    #[serde(default)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Whether it runs.
    pub fits: bool,
    /// The prediction, when it runs.
    #[serde(default)]
    pub estimate: Option<EstimateRow>,
    /// Why not, when it does not.
    #[serde(default)]
    pub error: Option<ErrorInfo>,
    /// What it is, when it parsed but does not run.
    #[serde(default)]
    pub scenario: Option<PointInfo>,
}

impl Row {
    /// What the point is, when known.
    pub fn info(&self) -> Option<&PointInfo> {
        self.estimate.as_ref().map(|e| &e.info).or(self.scenario.as_ref())
    }
}

#[derive(Deserialize)]
struct IndexOnly {
    index: u64,
    fits: bool,
}

// ---------------------------------------------------------------------------------------------
// Manifest and shards.

/// What a sweep output directory holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Format tag.
    pub format: String,
    /// Scenario name.
    pub name: String,
    /// Sweep file as given.
    pub scenario: String,
    /// Identity of the sweep.
    pub sweep_hash: String,
    /// Axis keys in file order.
    pub axes: Vec<String>,
    /// Zip groups.
    pub zip: Vec<Vec<String>>,
    /// Points in the whole sweep.
    pub points_total: u64,
    /// This shard (0-based).
    pub shard: u64,
    /// Number of shards.
    pub shards: u64,
    /// Points in this shard.
    pub points_in_shard: u64,
    /// Points written so far.
    pub points_done: u64,
    /// Whether every point of the shard is written.
    pub complete: bool,
    /// Calibration profile name.
    pub profile: String,
    /// supernode version.
    pub supernode_version: String,
    /// Number of shards merged into this directory (0: written by `sweep`).
    #[serde(default)]
    pub merged_from: u64,
}

impl Manifest {
    /// Reads `DIR/manifest.json`.
    pub fn read(dir: &Path) -> Result<Manifest, SweepError> {
        let p = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&p)
            .map_err(|e| SweepError::Input(format!("{} is not a sweep output directory (cannot read {MANIFEST}: {e})", dir.display())))?;
        let m: Manifest =
            serde_json::from_str(&text).map_err(|e| SweepError::Input(format!("{}: not a sweep manifest: {e}", p.display())))?;
        if m.format != FORMAT {
            return Err(SweepError::Input(format!("{}: format `{}`, expected `{FORMAT}`", p.display(), m.format)));
        }
        Ok(m)
    }

    fn write(&self, dir: &Path) -> Result<(), SweepError> {
        let p = dir.join(MANIFEST);
        let body = serde_json::to_string_pretty(self).expect("manifest serializes") + "\n";
        crate::util::write_atomic(&p, body.as_bytes()).map_err(|e| io_err("write", &p, e))
    }
}

/// A deterministic slice of a sweep: points with `index % count == index_of_shard`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 0-based.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// The whole sweep.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Points of a sweep of `total` that fall in this shard.
    pub fn points(self, total: u64) -> u64 {
        if self.index >= total { 0 } else { (total - self.index).div_ceil(self.count) }
    }

    /// The `j`-th point index of this shard.
    pub fn point(self, j: u64) -> u64 {
        self.index + j * self.count
    }
}

/// Which shard to run: `--shard I/N`, else `SLURM_ARRAY_TASK_ID`/`SLURM_ARRAY_TASK_COUNT` (minus
/// `SLURM_ARRAY_TASK_MIN`), else `JOB_COMPLETION_INDEX` with `--shard-count N`, else all.
pub fn resolve_shard(flag: Option<&str>, shard_count: Option<u64>, env: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
    let make = |i: u64, n: u64, from: &str| -> Result<Shard, String> {
        if n == 0 || i >= n {
            return Err(format!("{from}: shard {i} of {n} is out of range (shards are 0..{})", n.max(1) - 1));
        }
        Ok(Shard { index: i, count: n })
    };
    let num = |s: &str, what: &str| s.trim().parse::<u64>().map_err(|_| format!("{what} = `{s}` is not a non-negative integer"));
    if let Some(f) = flag {
        let (i, n) = f.split_once('/').ok_or_else(|| format!("--shard `{f}` is not I/N (e.g. --shard 0/4)"))?;
        return make(num(i, "--shard I")?, num(n, "--shard N")?, "--shard");
    }
    if let (Some(id), Some(count)) = (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
        let min = match env("SLURM_ARRAY_TASK_MIN") {
            Some(m) => num(&m, "SLURM_ARRAY_TASK_MIN")?,
            None => 0,
        };
        let id = num(&id, "SLURM_ARRAY_TASK_ID")?;
        let i = id.checked_sub(min).ok_or_else(|| format!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"))?;
        return make(i, num(&count, "SLURM_ARRAY_TASK_COUNT")?, "Slurm array");
    }
    match (env("JOB_COMPLETION_INDEX"), shard_count) {
        (Some(i), Some(n)) => make(num(&i, "JOB_COMPLETION_INDEX")?, n, "JOB_COMPLETION_INDEX"),
        (Some(_), None) => Err("JOB_COMPLETION_INDEX is set: pass --shard-count N (the Job's completions) to shard the sweep".into()),
        (None, Some(_)) => Err("--shard-count needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); otherwise use --shard I/N".into()),
        (None, None) => Ok(Shard::ALL),
    }
}

// ---------------------------------------------------------------------------------------------
// Running.

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Worker threads (None: one per core).
    pub jobs: Option<usize>,
    /// Which slice.
    pub shard: Shard,
    /// Keep the points already in `results.jsonl`.
    pub resume: bool,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// Points in this shard.
    pub points: u64,
    /// Points found already done (`--resume`).
    pub resumed: u64,
    /// Points predicted now.
    pub computed: u64,
    /// Points that run.
    pub fits: u64,
    /// Wall time, s.
    pub seconds: f64,
    /// The manifest written.
    pub manifest: Manifest,
}

/// Runs (a shard of) a sweep into `opts.out`: `results.jsonl` streamed block by block in index
/// order, the manifest, and `results.csv`.
pub fn run(sweep: &Sweep, profile: &Profile, opts: &RunOptions) -> Result<RunSummary, SweepError> {
    let t0 = Instant::now();
    let shard = opts.shard;
    let count = shard.points(sweep.total);
    let dir = &opts.out;
    std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
    let results = dir.join(RESULTS_JSONL);
    let mut manifest = Manifest {
        format: FORMAT.into(),
        name: sweep.name.clone(),
        scenario: sweep.path.clone(),
        sweep_hash: sweep.hash.clone(),
        axes: sweep.axes(),
        zip: sweep.zip_groups(),
        points_total: sweep.total,
        shard: shard.index,
        shards: shard.count,
        points_in_shard: count,
        points_done: 0,
        complete: false,
        profile: sweep.profile.clone(),
        supernode_version: env!("CARGO_PKG_VERSION").into(),
        merged_from: 0,
    };
    let (mut start, mut fits) = (0u64, 0u64);
    let file = if opts.resume && results.exists() {
        let old = Manifest::read(dir)?;
        if old.sweep_hash != sweep.hash || old.shard != shard.index || old.shards != shard.count {
            return Err(SweepError::Input(format!(
                "cannot resume: {} holds shard {}/{} of sweep {} but this is shard {}/{} of sweep {} (the file, axes or profile changed); \
                 use another --out or run without --resume",
                dir.display(),
                old.shard,
                old.shards,
                old.sweep_hash,
                shard.index,
                shard.count,
                sweep.hash
            )));
        }
        let (done, done_fits, keep) = scan_done(&results, shard)?;
        start = done.min(count);
        fits = done_fits;
        let mut f = OpenOptions::new().read(true).write(true).open(&results).map_err(|e| io_err("open", &results, e))?;
        f.set_len(keep).map_err(|e| io_err("truncate", &results, e))?;
        f.seek(SeekFrom::End(0)).map_err(|e| io_err("seek", &results, e))?;
        f
    } else {
        File::create(&results).map_err(|e| io_err("create", &results, e))?
    };
    manifest.points_done = start;
    manifest.complete = start == count;
    manifest.write(dir)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(0))
        .build()
        .map_err(|e| SweepError::Io(format!("cannot start worker threads: {e}")))?;
    let pb = if opts.progress {
        let pb = ProgressBar::with_draw_target(Some(count), ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} points  {per_sec}  ETA {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        pb.set_position(start);
        pb
    } else {
        ProgressBar::hidden()
    };
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let mut j = start;
    while j < count {
        let end = (j + BLOCK as u64).min(count);
        let lines: Vec<(String, bool)> = pool.install(|| {
            (j as usize..end as usize)
                .into_par_iter()
                .map(|k| {
                    let r = sweep.point_line(shard.point(k as u64), profile);
                    pb.inc(1);
                    r
                })
                .collect()
        });
        for (line, fit) in &lines {
            w.write_all(line.as_bytes()).and_then(|_| w.write_all(b"\n")).map_err(|e| io_err("write", &results, e))?;
            fits += u64::from(*fit);
        }
        w.flush().map_err(|e| io_err("write", &results, e))?;
        j = end;
    }
    pb.finish_and_clear();
    let f = w.into_inner().map_err(|e| io_err("write", &results, e.into_error()))?;
    f.sync_all().map_err(|e| io_err("sync", &results, e))?;
    manifest.points_done = count;
    manifest.complete = true;
    manifest.write(dir)?;
    write_csv(dir, &manifest.axes)?;
    Ok(RunSummary { points: count, resumed: start, computed: count - start, fits, seconds: t0.elapsed().as_secs_f64(), manifest })
}

/// Reads the finished prefix of a shard's results: (points done, of which fit, byte length to
/// keep). A torn or foreign line ends the prefix; everything after it is recomputed.
fn scan_done(path: &Path, shard: Shard) -> Result<(u64, u64, u64), SweepError> {
    let f = File::open(path).map_err(|e| io_err("open", path, e))?;
    let mut r = BufReader::new(f);
    let (mut done, mut fits, mut keep) = (0u64, 0u64, 0u64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", path, e))?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        match serde_json::from_slice::<IndexOnly>(&buf) {
            Ok(l) if l.index == shard.point(done) => {
                done += 1;
                fits += u64::from(l.fits);
                keep += n as u64;
            }
            _ => break,
        }
    }
    Ok((done, fits, keep))
}

/// Reads every row of `DIR/results.jsonl`, in file order.
pub fn read_rows(dir: &Path) -> Result<Vec<Row>, SweepError> {
    let mut rows = Vec::new();
    for_each_row(dir, |r| {
        rows.push(r);
        Ok(())
    })?;
    Ok(rows)
}

/// Streams the rows of `DIR/results.jsonl`.
pub fn for_each_row(dir: &Path, mut f: impl FnMut(Row) -> Result<(), SweepError>) -> Result<(), SweepError> {
    let path = dir.join(RESULTS_JSONL);
    let file = File::open(&path).map_err(|e| SweepError::Input(format!("cannot open {}: {e}", path.display())))?;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| io_err("read", &path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let row: Row =
            serde_json::from_str(&line).map_err(|e| SweepError::Input(format!("{}:{}: not a result line: {e}", path.display(), i + 1)))?;
        f(row)?;
    }
    Ok(())
}

/// A file written in full under a temporary name, then renamed into place ([`crate::util::AtomicFile`]).
struct AtomicWriter {
    path: PathBuf,
    f: crate::util::AtomicFile,
}

impl AtomicWriter {
    fn create(path: &Path) -> Result<Self, SweepError> {
        let f = crate::util::AtomicFile::create(path).map_err(|e| io_err("create", path, e))?;
        Ok(AtomicWriter { path: path.to_path_buf(), f })
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), SweepError> {
        self.f.write_all(bytes).map_err(|e| io_err("write", &self.path, e))
    }

    fn commit(self) -> Result<(), SweepError> {
        self.f.commit().map_err(|e| io_err("write", &self.path, e))
    }
}

/// Columns of `results.csv` after the index and the axes.
pub const CSV_COLUMNS: &[&str] = &[
    "fits",
    "error_kind",
    "model",
    "quant",
    "engine",
    "parallelism",
    "nodes",
    "node_count",
    "fabric",
    "topology",
    "prompt_tokens",
    "generate_tokens",
    "decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "cluster_power_w",
    "energy_j_per_token",
    "tokens_per_joule",
    "max_memory_per_node_gb",
    "cost_usd",
    "usd_per_mtok",
    "usd_per_token_per_s",
    "cables",
    "calibration",
    "error",
];

/// Writes `DIR/results.csv` from `DIR/results.jsonl` (streaming).
pub fn write_csv(dir: &Path, axes: &[String]) -> Result<PathBuf, SweepError> {
    let path = dir.join(RESULTS_CSV);
    let mut out = AtomicWriter::create(&path)?;
    let mut buf = Vec::with_capacity(1024);
    {
        let mut w = csv::Writer::from_writer(&mut buf);
        let mut header = vec!["index".to_string()];
        header.extend(axes.iter().cloned());
        header.extend(CSV_COLUMNS.iter().map(|s| s.to_string()));
        w.write_record(&header).map_err(|e| SweepError::Io(e.to_string()))?;
        w.flush().map_err(|e| SweepError::Io(e.to_string()))?;
    }
    out.write(&buf)?;
    for_each_row(dir, |row| {
        let mut rec: Vec<String> = Vec::with_capacity(axes.len() + CSV_COLUMNS.len() + 1);
        rec.push(row.index.to_string());
        for a in axes {
            rec.push(row.overrides.get(a).map(value_label).unwrap_or_default());
        }
        rec.push(row.fits.to_string());
        rec.push(row.error.as_ref().map(|e| e.kind.clone()).unwrap_or_default());
        match row.info() {
            Some(i) => {
                rec.extend([i.model.clone(), i.quant.clone(), i.engine.clone(), i.parallelism.clone()]);
                rec.push(i.nodes.join("+"));
                rec.push(i.nodes.len().to_string());
                rec.extend([i.fabric.clone(), i.topology.clone(), i.prompt_tokens.to_string(), i.generate_tokens.to_string()]);
            }
            None => rec.extend(std::iter::repeat_n(String::new(), 10)),
        }
        match &row.estimate {
            Some(e) => {
                let tpj = if e.energy_j_per_token > 0.0 { crate::util::round6(1.0 / e.energy_j_per_token) } else { 0.0 };
                let max_mem = e.memory_per_node_gb.iter().copied().fold(0.0, f64::max);
                for x in [
                    e.decode_tokens_per_s,
                    e.prefill_tokens_per_s,
                    e.ttft_s,
                    e.tpot_ms.p50,
                    e.tpot_ms.p99,
                    e.cluster_power_w,
                    e.energy_j_per_token,
                    tpj,
                    max_mem,
                    e.cost_usd,
                    e.usd_per_mtok,
                    e.usd_per_token_per_s,
                ] {
                    rec.push(x.to_string());
                }
                rec.push(e.cables.to_string());
                rec.push(e.calibration.status.clone());
            }
            None => rec.extend(std::iter::repeat_n(String::new(), 14)),
        }
        rec.push(row.error.as_ref().map(|e| e.message.clone()).unwrap_or_default());
        buf.clear();
        {
            let mut w = csv::Writer::from_writer(&mut buf);
            w.write_record(&rec).map_err(|e| SweepError::Io(e.to_string()))?;
            w.flush().map_err(|e| SweepError::Io(e.to_string()))?;
        }
        out.write(&buf)
    })?;
    out.commit()?;
    Ok(path)
}

// ---------------------------------------------------------------------------------------------
// Merging shards.

/// What a merge did.
#[derive(Clone, Debug)]
pub struct MergeSummary {
    /// Points merged.
    pub points: u64,
    /// Points that run.
    pub fits: u64,
    /// The merged manifest.
    pub manifest: Manifest,
}

/// Joins the outputs of all shards of one sweep into `out` (sorted by point index), refusing
/// shards of different sweeps, overlapping or missing shards, and incomplete shards.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeSummary, SweepError> {
    if dirs.is_empty() {
        return Err(SweepError::Input("merge needs at least one shard directory".into()));
    }
    let mut shards: Vec<(PathBuf, Manifest)> = Vec::new();
    for d in dirs {
        let m = Manifest::read(d)?;
        if let Some((d0, m0)) = shards.first() {
            if m.sweep_hash != m0.sweep_hash {
                return Err(SweepError::Input(format!(
                    "shards are from different sweeps: {} has sweep hash {} ({}), {} has {} ({})",
                    d0.display(),
                    m0.sweep_hash,
                    m0.scenario,
                    d.display(),
                    m.sweep_hash,
                    m.scenario
                )));
            }
            if m.shards != m0.shards {
                return Err(SweepError::Input(format!(
                    "shards disagree on the shard count: {} is shard {}/{}, {} is shard {}/{}",
                    d0.display(),
                    m0.shard,
                    m0.shards,
                    d.display(),
                    m.shard,
                    m.shards
                )));
            }
        }
        if let Some((dp, _)) = shards.iter().find(|(_, x)| x.shard == m.shard) {
            return Err(SweepError::Input(format!(
                "{} and {} are both shard {}/{} (overlapping points)",
                dp.display(),
                d.display(),
                m.shard,
                m.shards
            )));
        }
        if !m.complete || m.points_done != m.points_in_shard {
            return Err(SweepError::Input(format!(
                "shard {}/{} in {} is incomplete ({} of {} points); rerun it with --resume",
                m.shard,
                m.shards,
                d.display(),
                m.points_done,
                m.points_in_shard
            )));
        }
        if std::fs::canonicalize(d).ok() == std::fs::canonicalize(out).ok() && out.exists() {
            return Err(SweepError::Input(format!("--out {} is one of the inputs; merge into another directory", out.display())));
        }
        shards.push((d.clone(), m));
    }
    let n = shards[0].1.shards;
    let total = shards[0].1.points_total;
    let missing: Vec<String> = (0..n).filter(|i| !shards.iter().any(|(_, m)| m.shard == *i)).map(|i| format!("{i}/{n}")).collect();
    if !missing.is_empty() {
        return Err(SweepError::Input(format!(
            "missing shard(s) {} of sweep {}: pass all {n} shard directories",
            missing.join(", "),
            shards[0].1.sweep_hash
        )));
    }
    shards.sort_by_key(|(_, m)| m.shard);
    let mut readers = Vec::with_capacity(shards.len());
    for (d, _) in &shards {
        let p = d.join(RESULTS_JSONL);
        let f = File::open(&p).map_err(|e| SweepError::Input(format!("cannot open {}: {e}", p.display())))?;
        readers.push((p, BufReader::new(f)));
    }
    std::fs::create_dir_all(out).map_err(|e| io_err("create", out, e))?;
    let mut w = AtomicWriter::create(&out.join(RESULTS_JSONL))?;
    let mut fits = 0;
    let mut buf = Vec::new();
    for k in 0..total {
        let (p, r) = &mut readers[(k % n) as usize];
        buf.clear();
        let got = r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", p, e))?;
        if got == 0 || buf.last() != Some(&b'\n') {
            return Err(SweepError::Input(format!(
                "{} ends before point {k} (torn or truncated); rerun that shard with --resume",
                p.display()
            )));
        }
        match serde_json::from_slice::<IndexOnly>(&buf) {
            Ok(l) if l.index == k => fits += u64::from(l.fits),
            Ok(l) => {
                return Err(SweepError::Input(format!(
                    "{}: expected point {k}, found point {} (not a shard of this sweep)",
                    p.display(),
                    l.index
                )));
            }
            Err(e) => return Err(SweepError::Input(format!("{}: point {k} is not a result line: {e}", p.display()))),
        }
        w.write(&buf)?;
    }
    for (p, r) in &mut readers {
        buf.clear();
        if r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", p, e))? > 0 {
            return Err(SweepError::Input(format!("{} has more lines than its shard's points", p.display())));
        }
    }
    w.commit()?;
    let m0 = &shards[0].1;
    let manifest =
        Manifest { shard: 0, shards: 1, points_in_shard: total, points_done: total, complete: true, merged_from: n, ..m0.clone() };
    manifest.write(out)?;
    write_csv(out, &manifest.axes)?;
    Ok(MergeSummary { points: total, fits, manifest })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> Source {
        Source { path: "s.toml".into(), dir: PathBuf::new(), text: text.into() }
    }

    const BASE: &str = "name = \"t\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.2-3b\"\n[workload]\nprompt_tokens = 8\ngenerate_tokens = 4\n";

    fn sweep(extra: &str) -> Result<Sweep, SweepError> {
        Sweep::from_source(src(&format!("{BASE}{extra}")), &Profile::default_profile())
    }

    fn err(extra: &str) -> ScenarioError {
        match sweep(extra) {
            Err(SweepError::Scenario(e)) => *e,
            other => panic!("expected a located error, got {other:?}"),
        }
    }

    #[test]
    fn product_in_file_order_first_slowest() {
        let s = sweep("[sweep]\n\"cluster.count\" = [1, 2]\nworkload.prompt_tokens = [8, 16, 32]\n").unwrap();
        assert_eq!(s.total, 6);
        assert_eq!(s.axes(), vec!["cluster.count", "workload.prompt_tokens"]);
        let o: Vec<String> = s.overrides(4).iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(o, vec!["cluster.count=2", "workload.prompt_tokens=16"]);
    }

    #[test]
    fn zip_and_range() {
        let s = sweep(
            "[sweep]\nseed = { from = 1, to = 3 }\n\"cluster.count\" = [1, 2]\n\"engine.name\" = [\"exo\", \"exo\"]\nzip = [[\"cluster.count\", \"engine.name\"]]\n",
        )
        .unwrap();
        assert_eq!(s.total, 6);
        assert_eq!(s.groups.len(), 2);
        assert_eq!(s.zip_groups(), vec![vec!["cluster.count".to_string(), "engine.name".to_string()]]);
    }

    #[test]
    fn errors_point_at_the_key_or_value() {
        let lines = BASE.lines().count();
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\n\"cluster.fabric\" = [\"tb5-rdma\", \"tb5-rmda\"]\n");
        assert_eq!((e.line, e.col), (lines + 3, 33), "{e}");
        assert!(e.help.as_deref().unwrap_or("").contains("tb5-rdma"), "{e:?}");
        let e = err("[sweep]\n\"cluster.colour\" = [1, 2]\n");
        assert_eq!((e.line, e.col), (lines + 2, 1), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = 4\n");
        assert_eq!((e.line, e.col), (lines + 2, 19), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\nseed = [1, 2, 3]\nzip = [[\"cluster.count\", \"seed\"]]\n");
        assert_eq!((e.line, e.col), (lines + 3, 1), "{e}");
        let e = err("[sweep]\n\"cluster.count\" = [1, 2]\nzip = [[\"cluster.cont\"]]\n");
        assert_eq!((e.line, e.col), (lines + 3, 9), "{e}");
        assert!(e.help.unwrap().contains("did you mean `cluster.count`"));
    }

    #[test]
    fn shards_partition() {
        let total = 10;
        let mut seen = [0; 10];
        for i in 0..4 {
            let s = Shard { index: i, count: 4 };
            for j in 0..s.points(total) {
                seen[s.point(j) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
        let env = |k: &str| match k {
            "SLURM_ARRAY_TASK_ID" => Some("5".to_string()),
            "SLURM_ARRAY_TASK_COUNT" => Some("4".to_string()),
            "SLURM_ARRAY_TASK_MIN" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(resolve_shard(None, None, env), Ok(Shard { index: 3, count: 4 }));
        let k8s = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "1".to_string());
        assert_eq!(resolve_shard(None, Some(3), k8s), Ok(Shard { index: 1, count: 3 }));
        assert!(resolve_shard(None, None, k8s).is_err());
        assert!(resolve_shard(Some("4/4"), None, |_| None).is_err());
        assert_eq!(resolve_shard(None, None, |_| None), Ok(Shard::ALL));
    }
}
