//! `--set key.path=value` overrides applied to a scenario's TOML before validation.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;

use super::source::{ScenarioError, Source, toml_error};

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
