//! The `[sweep]` grammar: axes (dotted scenario keys and their values, or integer ranges), zip
//! groups, and the points they expand to. Each point's scenario is built from the base scenario
//! with a typed [`ScenarioBuilder`] (no TOML text per point).

// Errors carry the source text for rendering; they are the cold path.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use crate::profile::Profile;
use crate::scenario::{self, ErrorKind, Scenario, ScenarioBuilder, ScenarioError, Source};
use crate::util::did_you_mean;

use super::{FORMAT, MAX_POINTS, SweepError, io_err};

/// One axis: a dotted scenario key and the values it takes. A range axis is not expanded: its
/// values are computed on demand, so memory does not grow with the number of points.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Dotted key, e.g. `cluster.count`.
    pub key: String,
    values: AxisValues,
    key_span: Range<usize>,
}

#[derive(Clone, Debug)]
enum AxisValues {
    /// Values listed in the file, each with its span.
    List { values: Vec<toml::Value>, spans: Vec<Range<usize>> },
    /// `{ from, to, step }`: `len` integers `from + i * step` (checked to fit in i64).
    Range { from: i64, step: i64, len: u64, span: Range<usize> },
}

/// Ranges with at most this many values enter the sweep's identity value by value (as lists
/// do); longer ranges enter as `{from, step, len}`, so hashing never walks a huge range.
const RANGE_HASH_BY_VALUE: u64 = 100_000;
/// Ranges with at most this many values have each value checked against the base scenario
/// when the sweep is read; longer ranges have their ends checked.
const RANGE_CHECK_EACH: u64 = 10_000;

impl Axis {
    /// Number of values.
    pub fn len(&self) -> u64 {
        match &self.values {
            AxisValues::List { values, .. } => values.len() as u64,
            AxisValues::Range { len, .. } => *len,
        }
    }

    /// Whether the axis has no values (never true for a parsed sweep).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` (`i < len()`).
    pub fn value(&self, i: u64) -> toml::Value {
        match &self.values {
            AxisValues::List { values, .. } => values[i as usize].clone(),
            // The true value lies between `from` and `to`, so it fits in i64; the product alone
            // may not (e.g. from = i64::MIN, step = 2^62), and wrapping arithmetic is exact
            // modulo 2^64, hence exact here.
            AxisValues::Range { from, step, .. } => toml::Value::Integer(from.wrapping_add((i as i64).wrapping_mul(*step))),
        }
    }

    fn span(&self, i: u64) -> Range<usize> {
        match &self.values {
            AxisValues::List { spans, .. } => spans[i as usize].clone(),
            AxisValues::Range { span, .. } => span.clone(),
        }
    }

    /// Indices of the values checked alone against the base: every listed value and every
    /// value of a range of at most [`RANGE_CHECK_EACH`]; a longer range's first and last (its
    /// values share one type; a bad one in the middle becomes that point's error row).
    fn check_indices(&self) -> Vec<u64> {
        match &self.values {
            AxisValues::List { values, .. } => (0..values.len() as u64).collect(),
            AxisValues::Range { len, .. } if *len <= RANGE_CHECK_EACH => (0..*len).collect(),
            AxisValues::Range { len, .. } => vec![0, len - 1],
        }
    }

    fn identity_text(&self) -> String {
        match &self.values {
            AxisValues::List { values, .. } => toml::Value::Array(values.clone()).to_string(),
            AxisValues::Range { len, .. } if *len <= RANGE_HASH_BY_VALUE => {
                toml::Value::Array((0..*len).map(|i| self.value(i)).collect()).to_string()
            }
            AxisValues::Range { from, step, len, .. } => format!("range(from={from}, step={step}, len={len})"),
        }
    }
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
    base: ScenarioBuilder,
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

const GRAMMAR_HELP: &str = "write axes as \"cluster.count\" = [1, 2, 4] (a dotted scenario key and a list), or seed = { from = 1, to = 8 }";
const ZIP_HELP: &str = "write zip = [[\"cluster.nodes\", \"engine.name\"]]: axes in a group vary together";
const KEY_HELP: &str =
    "axes are dotted scenario keys such as cluster.count, cluster.fabric, model.quant, engine.parallelism, workload.prompt_tokens";

/// Reads a sweep file (bounded in size) as a [`Source`] named by its path.
fn read_source(path: &Path) -> Result<Source, SweepError> {
    let text = crate::util::read_bounded(path, crate::util::MAX_INPUT_BYTES).map_err(|e| match io_err("read", path, e) {
        SweepError::Io(m) => SweepError::Input(m),
        other => other,
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(Source { path: path.display().to_string(), dir, text })
}

impl Sweep {
    /// Reads a sweep file.
    pub fn load(path: &Path, profile: &Profile) -> Result<Sweep, SweepError> {
        Self::from_source(read_source(path)?, profile)
    }

    /// Reads a sweep file with `--set KEY=VALUE` overrides applied to its base scenario (like
    /// `run --set`). An override of a key the sweep varies, or of the `[sweep]` table itself,
    /// is an error (the axis would silently win). The overrides are part of the sweep's
    /// identity: `--resume` needs the same ones.
    pub fn load_with_overrides(path: &Path, overrides: &[String], profile: &Profile) -> Result<Sweep, SweepError> {
        if overrides.is_empty() {
            return Self::load(path, profile);
        }
        if let Some(o) = overrides.iter().find(|o| o.trim_start().starts_with("sweep.") || o.trim_start().starts_with("sweep=")) {
            return Err(SweepError::Input(format!("--set {o}: the [sweep] table cannot be overridden; edit the file")));
        }
        let source = read_source(path)?;
        let plain = Self::from_source(source.clone(), profile)?;
        for o in overrides {
            let key = o.split('=').next().unwrap_or("").trim();
            if plain.groups.iter().flatten().any(|a| a.key == key) {
                return Err(SweepError::Input(format!(
                    "--set {o}: `{key}` is a sweep axis of {}; drop the --set, or edit the axis",
                    path.display()
                )));
            }
        }
        let sweep = Self::from_source(scenario::overrides::apply_overrides(source, overrides)?, profile)?;
        Ok(sweep)
    }

    /// Parses a sweep from scenario text with a `[sweep]` table.
    pub fn from_source(source: Source, profile: &Profile) -> Result<Sweep, SweepError> {
        // The file without [sweep] must be a valid scenario: it is what `supernode run` runs.
        let base_scenario = scenario::parse(source.clone())?;
        let src = &source;
        let doc = DeTable::parse(&src.text)
            .map_err(|e| src.error(e.span().unwrap_or(0..0), crate::util::user_words(e.message().trim()), None))?;
        let doc = doc.into_inner();
        let Some((sweep_key, sweep_val)) = doc.iter().find(|(k, _)| k.get_ref() == "sweep") else {
            return Err(src
                .error(
                    0..0,
                    "this scenario has no `[sweep]` table",
                    Some("add [sweep] with dotted keys mapping to lists, e.g. \"cluster.count\" = [1, 2, 4]".into()),
                )
                .into());
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
        let mut plain: toml::Table = toml::from_str(&src.text)
            .map_err(|e| src.error(e.span().unwrap_or(0..0), crate::util::user_words(e.message().trim()), None))?;
        let Some(toml::Value::Table(sweep_plain)) = plain.remove("sweep") else { unreachable!("checked above") };
        let axes = axes(src, raw, &sweep_plain)?;
        let groups = groups(src, axes, zip)?;
        let total = count_points(&groups).ok_or_else(|| {
            src.error(
                sweep_key.span(),
                format!("the sweep has more than {MAX_POINTS} points"),
                Some("zip axes that vary together or split the sweep".into()),
            )
        })?;
        // The base, named, so that every point is named alike.
        plain.entry("name").or_insert_with(|| toml::Value::String(base_scenario.name.clone()));
        let mut base = ScenarioBuilder::from_source(src)?;
        if !base.has_name() {
            base.name(base_scenario.name.clone());
        }
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
        sweep.hash = sweep.identity(&plain, profile);
        Ok(sweep)
    }

    /// Each value alone on the base: unknown presets, wrong types or keys are grammar errors
    /// (they would fail every point); combinations that cannot run are rows, not errors.
    fn check_values(&self) -> Result<(), SweepError> {
        for a in self.groups.iter().flatten() {
            for i in a.check_indices() {
                let (v, span) = (&a.value(i), a.span(i));
                let mut b = self.base.clone();
                let result = b.set(&a.key, v).map(|_| ()).and_then(|_| b.build().map(|_| ()));
                match result {
                    Err(e) if e.kind == ErrorKind::UnknownKey => {
                        let m = format!("sweep axis `{}` is not a scenario key: {}", a.key, e.message);
                        return Err(self.source.error(a.key_span.clone(), m, Some(KEY_HELP.into())).into());
                    }
                    Err(e) if e.kind.is_value_error() => {
                        let m = format!("sweep value {} for `{}`: {}", value_label_toml(v), a.key, e.message);
                        return Err(self.source.error(span, m, e.help.clone()).with_kind(e.kind).into());
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn identity(&self, base: &toml::Table, profile: &Profile) -> String {
        let mut s = String::new();
        s.push_str(FORMAT);
        s.push('\n');
        s.push_str(env!("CARGO_PKG_VERSION"));
        s.push('\n');
        s.push_str(&toml::to_string(base).expect("table serializes"));
        for g in &self.groups {
            s.push_str("group\n");
            for a in g {
                s.push_str(&a.key);
                s.push('=');
                s.push_str(&a.identity_text());
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
    pub fn overrides(&self, index: u64) -> Vec<(&str, toml::Value)> {
        let mut pick = vec![0u64; self.groups.len()];
        let mut rest = index;
        for (g, group) in self.groups.iter().enumerate().rev() {
            let len = group[0].len();
            pick[g] = rest % len;
            rest /= len;
        }
        self.groups.iter().zip(&pick).flat_map(|(g, &i)| g.iter().map(move |a| (a.key.as_str(), a.value(i)))).collect()
    }

    /// The scenario of point `index`: the base with the point's overrides, fully validated.
    /// Errors name the point and its axis values.
    pub fn scenario(&self, index: u64) -> Result<Scenario, ScenarioError> {
        let overrides = self.overrides(index);
        let built = self.point_builder(&overrides).and_then(|b| b.build());
        built.map_err(|mut e| {
            let values: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={}", value_label_toml(v))).collect();
            e.path = format!("{} [point {index}: {}]", self.path, values.join(", "));
            e
        })
    }
    /// The base with a point's overrides set, not yet validated.
    fn point_builder(&self, overrides: &[(&str, toml::Value)]) -> Result<ScenarioBuilder, ScenarioError> {
        let mut b = self.base.clone();
        overrides.iter().try_for_each(|(k, v)| b.set(k, v).map(|_| ()))?;
        Ok(b)
    }

    /// What point `index` is when its prompt and generation are past the model's context
    /// window (its scenario is refused, so the rows and charts learn what it was from this):
    /// the point built with a one-token request, then given its own token counts back.
    pub fn point_info_past_window(&self, index: u64) -> Option<(Scenario, u64, u64)> {
        let mut b = self.point_builder(&self.overrides(index)).ok()?;
        let (prompt, generate) = b.fixed_tokens();
        let d = crate::scenario::Workload::default();
        let sc = b.tokens(1, 1).build().ok()?;
        Some((sc, prompt.unwrap_or(d.prompt_tokens), generate.unwrap_or(d.generate_tokens)))
    }
}

/// The axes of the raw list, with their values; refuses repeated keys, empty lists and ranges.
fn axes(src: &Source, raw: Vec<RawAxis>, sweep_plain: &toml::Table) -> Result<Vec<Axis>, ScenarioError> {
    let mut axes: Vec<Axis> = Vec::new();
    for r in raw {
        let key = r.path.join(".");
        if axes.iter().any(|a| a.key == key) {
            return Err(src.error(r.key_span, format!("sweep axis `{key}` is given twice"), Some("keep one list per key".into())));
        }
        let values = match r.kind {
            RawKind::List(spans, list_span) => {
                let mut node = sweep_plain;
                for p in &r.path[..r.path.len() - 1] {
                    node = node.get(p).and_then(toml::Value::as_table).expect("path exists in both parses");
                }
                let arr = node.get(&r.path[r.path.len() - 1]).and_then(toml::Value::as_array).expect("array in both parses");
                if arr.is_empty() {
                    return Err(src.error(list_span, format!("sweep axis `{key}` has no values"), Some("list at least one value".into())));
                }
                AxisValues::List { values: arr.clone(), spans }
            }
            RawKind::Range { from, to, step, span } => range_values(src, &key, from, to, step, span)?,
        };
        axes.push(Axis { key, values, key_span: r.key_span });
    }
    Ok(axes)
}

/// How a range axis is written.
const RANGE_HELP: &str = "write { from = 1, to = 8 } (inclusive; step >= 1), e.g. \"cluster.count\" = { from = 1, to = 8, step = 1 }";

/// A `{ from, to, step }` range (inclusive), not expanded. Refuses an empty range and one with
/// more than [`MAX_POINTS`] values (counted without overflow, for any i64 bounds).
fn range_values(src: &Source, key: &str, from: i64, to: i64, step: i64, span: Range<usize>) -> Result<AxisValues, ScenarioError> {
    if step < 1 || to < from {
        return Err(src.error(span, format!("sweep range for `{key}` is empty"), Some(RANGE_HELP.into())));
    }
    // to >= from and step >= 1: the distance fits in u64 and so does the count (at most 2^64).
    let distance = to.abs_diff(from);
    let len = (distance / step as u64).checked_add(1);
    match len {
        Some(len) if len <= MAX_POINTS => Ok(AxisValues::Range { from, step, len, span }),
        _ => {
            let shown = match len {
                Some(n) => n.to_string(),
                None => "18446744073709551616".to_string(),
            };
            Err(src.error(
                span,
                format!("sweep range for `{key}` has {shown} values, more than the {MAX_POINTS} a sweep may have"),
                Some(format!(
                    "narrow the range (from = {from}, to = {to}) or raise its step so it has at most {MAX_POINTS} values, \
                     or split it across several sweep files"
                )),
            ))
        }
    }
}

/// The zip groups as axis indices (checked: known axes, each zipped once, equal lengths).
fn zip_groups(src: &Source, axes: &[Axis], z: &toml::Spanned<DeValue>) -> Result<Vec<Vec<usize>>, ScenarioError> {
    let bad = || src.error(z.span(), "`zip` must be a list of lists of axis keys", Some(ZIP_HELP.into()));
    let DeValue::Array(groups) = z.get_ref() else { return Err(bad()) };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for g in groups.iter() {
        let DeValue::Array(keys) = g.get_ref() else { return Err(bad()) };
        let mut members = Vec::new();
        for k in keys.iter() {
            let DeValue::String(name) = k.get_ref() else { return Err(bad()) };
            let Some(ai) = axes.iter().position(|a| a.key == name.as_ref()) else {
                let known: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
                let help = match did_you_mean(name, &known) {
                    Some(s) => format!("did you mean `{s}`? zip groups name axes of this [sweep]: {}", known.join(", ")),
                    None => format!("zip groups name axes of this [sweep]: {}", known.join(", ")),
                };
                return Err(src.error(k.span(), format!("zip names `{name}`, which is not a sweep axis"), Some(help)));
            };
            if out.iter().flatten().any(|&m| m == ai) || members.contains(&ai) {
                return Err(src.error(
                    k.span(),
                    format!("axis `{name}` is in more than one zip group"),
                    Some("each axis may be zipped once".into()),
                ));
            }
            members.push(ai);
        }
        if members.is_empty() {
            return Err(bad());
        }
        let a = &axes[members[0]];
        if let Some(b) = members[1..].iter().map(|&m| &axes[m]).find(|b| b.len() != a.len()) {
            return Err(src.error(
                b.key_span.clone(),
                format!("zipped axes differ in length: `{}` has {} values, `{}` has {}", b.key, b.len(), a.key, a.len()),
                Some("axes in a zip group vary together and need the same number of values".into()),
            ));
        }
        out.push(members);
    }
    Ok(out)
}

/// Groups in file order (a zip group sits where its first axis is).
fn groups(src: &Source, axes: Vec<Axis>, zip: Option<&toml::Spanned<DeValue>>) -> Result<Vec<Vec<Axis>>, ScenarioError> {
    let zipped = match zip {
        Some(z) => zip_groups(src, &axes, z)?,
        None => Vec::new(),
    };
    let group_of = |i: usize| zipped.iter().position(|g| g.contains(&i));
    let mut placed = vec![false; zipped.len()];
    let mut groups: Vec<Vec<Axis>> = Vec::new();
    for (i, axis) in axes.iter().enumerate() {
        match group_of(i) {
            None => groups.push(vec![axis.clone()]),
            Some(g) if !placed[g] => {
                placed[g] = true;
                let mut members = zipped[g].clone();
                members.sort_unstable();
                groups.push(members.iter().map(|&m| axes[m].clone()).collect());
            }
            Some(_) => {}
        }
    }
    Ok(groups)
}

/// Points of the product of the groups, if at most [`MAX_POINTS`].
fn count_points(groups: &[Vec<Axis>]) -> Option<u64> {
    groups.iter().try_fold(1u64, |total, g| total.checked_mul(g[0].len()).filter(|t| *t <= MAX_POINTS))
}

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
            const RANGE_KEYS: [&str; 3] = ["from", "to", "step"];
            let is_range = keys.contains(&"from") && keys.contains(&"to") && keys.iter().all(|k| RANGE_KEYS.contains(k));
            if !is_range && keys.iter().any(|k| RANGE_KEYS.contains(k)) {
                // A range with a key missing or misspelt, not a table of axes `cluster.count.from`.
                let missing: Vec<String> = ["from", "to"].iter().filter(|k| !keys.contains(k)).map(|k| format!("`{k}`")).collect();
                let unknown: Vec<String> = keys
                    .iter()
                    .filter(|k| !RANGE_KEYS.contains(k))
                    .map(|k| match crate::util::did_you_mean(k, &RANGE_KEYS) {
                        Some(m) => format!("`{k}` (did you mean `{m}`?)"),
                        None => format!("`{k}`"),
                    })
                    .collect();
                let mut problems = Vec::new();
                if !missing.is_empty() {
                    problems.push(format!("it lacks {}", missing.join(" and ")));
                }
                if !unknown.is_empty() {
                    problems.push(format!("it has the unknown key{} {}", if unknown.len() > 1 { "s" } else { "" }, unknown.join(", ")));
                }
                return Err(src
                    .error(v.span(), format!("the range for sweep axis `{key}`: {}", problems.join("; ")), Some(RANGE_HELP.into()))
                    .with_kind(ErrorKind::BadValue));
            }
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
                let (from, to, step) = (get("from", None)?, get("to", None)?, get("step", Some(1))?);
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
