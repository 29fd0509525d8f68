//! `--set key.path=value` overrides applied to a scenario's TOML before validation.
//!
//! A value is typed by the key it sets (a string key takes `26.3` as the string "26.3", an
//! integer key refuses `abc`), and every error about a `--set` value points at the `--set`
//! argument the user typed, not at the re-serialised TOML.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::PathBuf;

use super::Scenario;
use super::source::{ErrorKind, ScenarioError, Source, toml_error};

/// The type a scenario key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyType {
    Str,
    Int,
    Float,
    Bool,
    StrList,
}

/// Every scenario key `--set` knows the type of (the keys of `raw.rs`). Others (e.g. `sweep.*`)
/// are read as TOML, falling back to a bare string.
const KEYS: &[(&str, KeyType)] = &[
    ("name", KeyType::Str),
    ("description", KeyType::Str),
    ("seed", KeyType::Int),
    ("cluster.nodes", KeyType::StrList),
    ("cluster.node", KeyType::Str),
    ("cluster.count", KeyType::Int),
    ("cluster.fabric", KeyType::Str),
    ("cluster.topology", KeyType::Str),
    ("cluster.wired_limit_fraction", KeyType::Float),
    ("cluster.gpu_memory_limit_gb", KeyType::Float),
    ("cluster.power_mode_w", KeyType::Float),
    ("model.name", KeyType::Str),
    ("model.hf_config", KeyType::Str),
    ("model.quant", KeyType::Str),
    ("model.gguf_tensor_types", KeyType::Str),
    ("model.size_gb", KeyType::Float),
    ("engine.name", KeyType::Str),
    ("engine.parallelism", KeyType::Str),
    ("engine.pipeline_stages", KeyType::Int),
    ("engine.tensor_ranks", KeyType::Int),
    ("engine.replicas", KeyType::Int),
    ("engine.macos", KeyType::Str),
    ("engine.jaccl_frame_kib", KeyType::Int),
    ("engine.allreduce", KeyType::Str),
    ("engine.fast_sync", KeyType::Bool),
    ("engine.prefill_chunk", KeyType::Int),
    ("engine.mla_prefill", KeyType::Str),
    ("engine.mla_cache", KeyType::Str),
    ("engine.backend", KeyType::Str),
    ("engine.rocm_tiles", KeyType::Str),
    ("engine.flash_attention", KeyType::Bool),
    ("engine.enforce_eager", KeyType::Bool),
    ("engine.kv_cache_dtype", KeyType::Str),
    ("engine.max_num_batched_tokens", KeyType::Int),
    ("engine.max_num_seqs", KeyType::Int),
    ("engine.gpu_memory_utilization", KeyType::Float),
    ("engine.continuous_batching", KeyType::Bool),
    ("workload.kind", KeyType::Str),
    ("workload.prompt_tokens", KeyType::Int),
    ("workload.generate_tokens", KeyType::Int),
    ("workload.context_tokens", KeyType::Int),
    ("workload.hpl_n", KeyType::Int),
    ("workload.arrival", KeyType::Str),
    ("workload.concurrency", KeyType::Int),
    ("workload.think_s", KeyType::Float),
    ("workload.think", KeyType::Str),
    ("workload.rate_per_s", KeyType::Float),
    ("workload.trace", KeyType::Str),
    ("workload.duration_s", KeyType::Float),
    ("workload.requests", KeyType::Int),
    ("workload.warmup_s", KeyType::Float),
    ("workload.max_batch", KeyType::Int),
    ("workload.kv_full", KeyType::Str),
    ("slo.ttft_p99_s", KeyType::Float),
    ("slo.tpot_p99_ms", KeyType::Float),
    ("workload.hpl_nb", KeyType::Int),
    ("workload.hpl_p", KeyType::Int),
    ("workload.hpl_q", KeyType::Int),
    ("cost.amortization_years", KeyType::Float),
    ("cost.electricity_usd_per_kwh", KeyType::Float),
];

/// One `--set KEY=VALUE` argument, split.
struct Override<'a> {
    /// The argument as typed.
    arg: &'a str,
    /// The key, trimmed.
    key: &'a str,
    /// Byte range of the value in `arg` (trimmed).
    value: Range<usize>,
}

impl Override<'_> {
    /// A source whose text is the argument as typed, for errors that point at it.
    fn source(&self) -> Source {
        Source { path: "--set".into(), dir: PathBuf::new(), text: self.arg.to_string() }
    }

    fn key_range(&self) -> Range<usize> {
        let start = self.arg.find(self.key).unwrap_or(0);
        start..start + self.key.len()
    }
}

fn split(arg: &str) -> Result<Override<'_>, ScenarioError> {
    let Some((key, value)) = arg.split_once('=') else {
        let src = Source { path: "--set".into(), dir: PathBuf::new(), text: arg.to_string() };
        return Err(src
            .error(0..arg.len(), format!("`--set {arg}` is not KEY=VALUE"), Some("write e.g. --set workload.prompt_tokens=32768".into()))
            .with_kind(ErrorKind::BadValue));
    };
    let lead = value.len() - value.trim_start().len();
    let start = key.len() + 1 + lead;
    Ok(Override { arg, key: key.trim(), value: start..start + value.trim().len() })
}

/// Applies `key.path=value` overrides to a source. A known key's value is typed by the key
/// (see `KEYS`); others are read as TOML (`32768`, `true`, `"x"`, `[1, 2]`), falling back to
/// a bare string. Errors point at the `--set` argument.
pub fn apply_overrides(source: Source, overrides: &[String]) -> Result<Source, ScenarioError> {
    if overrides.is_empty() {
        return Ok(source);
    }
    let mut doc: toml::Table = toml::from_str(&source.text).map_err(|e| toml_error(&source, &e))?;
    for o in overrides {
        let o = split(o)?;
        let value = typed_value(&o)?;
        set_dotted(&mut doc, o.key, value).map_err(|why| {
            o.source()
                .error(o.key_range(), why, Some("keys are dotted paths such as cluster.count or model.quant".into()))
                .with_kind(ErrorKind::UnknownKey)
        })?;
    }
    let text = toml::to_string(&doc).expect("a toml table serializes");
    Ok(Source { path: format!("{} (with --set)", source.path), dir: source.dir, text })
}

/// Applies the overrides and validates the scenario; an error located in a value that a
/// `--set` argument gave points at that argument instead of the re-serialised TOML.
pub fn parse_with_overrides(source: Source, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    if overrides.is_empty() {
        return super::parse(source);
    }
    let original = source.clone();
    let applied = apply_overrides(source, overrides)?;
    let text = applied.text.clone();
    super::parse(applied).map_err(|e| retarget(e, &text, overrides, &original))
}

/// Moves an error still in the re-serialised `text` (a key no `--set` gave) to the same key in
/// the file the user wrote; left as it is when the key is not found there.
fn back_to_file(e: ScenarioError, text: &str, original: &Source) -> ScenarioError {
    let at = e.span().start;
    if e.span().is_empty() && at == 0 {
        return e;
    }
    let (Ok(doc), Ok(orig)) = (toml::de::DeTable::parse(text), toml::de::DeTable::parse(&original.text)) else { return e };
    let Some((path, on_key)) = leaf_at(doc.get_ref(), at, "") else { return e };
    match find(orig.get_ref(), &path) {
        Some((k, v)) => original.error(if on_key { k } else { v }, e.message.clone(), e.help.clone()).with_kind(e.kind),
        None => e,
    }
}

/// The dotted path of the key or value at byte `at`, and whether `at` is on the key.
fn leaf_at(table: &toml::de::DeTable<'_>, at: usize, prefix: &str) -> Option<(String, bool)> {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() { k.get_ref().to_string() } else { format!("{prefix}.{}", k.get_ref()) };
        if let toml::de::DeValue::Table(t) = v.get_ref() {
            if let Some(found) = leaf_at(t, at, &path) {
                return Some(found);
            }
        }
        if k.span().contains(&at) {
            return Some((path, true));
        }
        if v.span().contains(&at) {
            return Some((path, false));
        }
    }
    None
}

/// Moves an error that lies inside a `--set` value (in the re-serialised `text`) to the argument.
fn retarget(e: ScenarioError, text: &str, overrides: &[String], original: &Source) -> ScenarioError {
    if overrides.is_empty() {
        return e;
    }
    let at = e.span().start;
    let Ok(doc) = toml::de::DeTable::parse(text) else { return e };
    // The last --set of a key wins, so search from the end.
    for o in overrides.iter().rev() {
        let Ok(o) = split(o) else { continue };
        if let Some((key_span, value_span)) = find(doc.get_ref(), o.key) {
            if value_span.contains(&at) || key_span.contains(&at) || (value_span.start == at && value_span.is_empty()) {
                let range = if key_span.contains(&at) { o.key_range() } else { o.value.clone() };
                let range = if range.is_empty() { 0..o.arg.len() } else { range };
                let kind = e.kind;
                let help = e.help.clone();
                return o.source().error(range, e.message.clone(), help).with_kind(kind);
            }
        }
    }
    back_to_file(e, text, original)
}

/// The spans of a dotted key and its value in a parsed document.
fn find(table: &toml::de::DeTable<'_>, key: &str) -> Option<(Range<usize>, Range<usize>)> {
    let (head, rest) = match key.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (key, None),
    };
    let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == head)?;
    match (rest, v.get_ref()) {
        (None, _) => Some((k.span(), v.span())),
        (Some(r), toml::de::DeValue::Table(t)) => find(t, r),
        _ => None,
    }
}

/// The type a key takes, if it is a known scenario key.
fn key_type(key: &str) -> Option<KeyType> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, t)| *t)
}

/// The value of an override, typed by its key.
fn typed_value(o: &Override<'_>) -> Result<toml::Value, ScenarioError> {
    let raw = &o.arg[o.value.clone()];
    let parsed = toml_value(raw);
    let Some(ty) = key_type(o.key) else {
        return Ok(parsed.unwrap_or_else(|| toml::Value::String(raw.to_string())));
    };
    let wrong = |what: &str, example: &str| {
        let range = if o.value.is_empty() { 0..o.arg.len() } else { o.value.clone() };
        o.source()
            .error(range, format!("`{}` takes {what}; `{raw}` is not one", o.key), Some(format!("write e.g. --set {}={example}", o.key)))
            .with_kind(ErrorKind::BadValue)
    };
    match ty {
        // A quoted TOML string is unquoted; anything else is the text as typed (`26.3`, `true`).
        KeyType::Str => Ok(match parsed {
            Some(toml::Value::String(s)) => toml::Value::String(s),
            _ => toml::Value::String(raw.to_string()),
        }),
        KeyType::Int => match parsed {
            Some(v @ toml::Value::Integer(_)) => Ok(v),
            _ => Err(wrong("an integer", "32768")),
        },
        KeyType::Float => match parsed {
            Some(v @ toml::Value::Float(_)) => Ok(v),
            Some(toml::Value::Integer(i)) => Ok(toml::Value::Float(i as f64)),
            _ => Err(wrong("a number", "0.25")),
        },
        KeyType::Bool => match parsed {
            Some(v @ toml::Value::Boolean(_)) => Ok(v),
            _ => Err(wrong("true or false", "true")),
        },
        // A TOML array of strings, or names separated by commas.
        KeyType::StrList => match parsed {
            Some(toml::Value::Array(a)) if a.iter().all(toml::Value::is_str) => Ok(toml::Value::Array(a)),
            Some(toml::Value::Array(_)) => Err(wrong("a list of node names", "m3-ultra-80c-512gb,m3-ultra-80c-512gb")),
            _ => Ok(toml::Value::Array(
                raw.split(',').map(|s| toml::Value::String(s.trim().to_string())).filter(|v| v.as_str() != Some("")).collect(),
            )),
        },
    }
}

/// A value as TOML, if it is one.
fn toml_value(v: &str) -> Option<toml::Value> {
    toml::from_str::<toml::Table>(&format!("v = {v}")).ok().and_then(|mut t| t.remove("v"))
}

/// Reads a `--set` value as TOML, or a bare string.
pub fn parse_value(v: &str) -> toml::Value {
    toml_value(v).unwrap_or_else(|| toml::Value::String(v.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> Source {
        Source {
            path: "t.toml".into(),
            dir: PathBuf::new(),
            text: "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nname = \"llama-3.2-3b\"\n[engine]\nname = \"mlx-lm\"\n".into(),
        }
    }

    /// Issue 14 item 5: `--set` values are typed by the key (a string key takes `26.3`).
    #[test]
    fn set_values_are_typed_by_the_key() {
        let s = apply_overrides(src(), &["engine.macos=26.3".into(), "cost.amortization_years=4".into(), "seed=7".into()]).unwrap();
        let t: toml::Table = toml::from_str(&s.text).unwrap();
        assert_eq!(t["engine"]["macos"].as_str(), Some("26.3"));
        assert_eq!(t["cost"]["amortization_years"].as_float(), Some(4.0));
        assert_eq!(t["seed"].as_integer(), Some(7));
        let s = apply_overrides(src(), &["engine.macos=\"26.3\"".into(), "cluster.nodes=a,b".into()]).unwrap();
        let t: toml::Table = toml::from_str(&s.text).unwrap();
        assert_eq!(t["engine"]["macos"].as_str(), Some("26.3"));
        assert_eq!(t["cluster"]["nodes"].as_array().unwrap().len(), 2);
        let e = apply_overrides(src(), &["workload.prompt_tokens=lots".into()]).unwrap_err();
        assert_eq!((e.path.as_str(), e.line, e.col), ("--set", 1, 24), "{e}");
        assert!(e.message.contains("takes an integer"), "{e}");
    }

    /// Issue 14 item 5: an error in a `--set` value points at the `--set` argument.
    #[test]
    fn errors_in_set_values_point_at_the_argument() {
        let e = parse_with_overrides(src(), &["workload.prompt_tokens=64".into(), "engine.mla_prefill=expandd".into()]).unwrap_err();
        assert_eq!((e.path.as_str(), e.line, e.col), ("--set", 1, 20), "{e}");
        assert!(e.message.contains("expandd"), "{e}");
        let e = parse_with_overrides(src(), &["workload.prompt_tokens=-3".into()]).unwrap_err();
        assert_eq!((e.path.as_str(), e.col), ("--set", 24), "{e}");
        let e = parse_with_overrides(src(), &["engine.colour=red".into()]).unwrap_err();
        assert_eq!((e.path.as_str(), e.col), ("--set", 1), "{e}");
        assert_eq!(e.kind, ErrorKind::UnknownKey);
    }
}
