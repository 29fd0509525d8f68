//! The architecture on the page: each top-level module of `src/` imports only from layers below
//! it (no import circles, no reaching up), and the event core knows no model names. The layers
//! are the ones ARCHITECTURE.md draws.

use std::collections::BTreeMap;
use std::path::Path;

use crate::root;

/// Top-level modules by layer, bottom first. A module may use `crate::x` only for an `x` in a
/// lower layer; modules in one layer are independent of each other.
const LAYERS: &[&[&str]] = &[
    &["util"],
    &["sim", "hw", "llm"],
    &["catalog"],
    &["profile"],
    &["engine"],
    &["scenario"],
    &["estimate"],
    &["calibrate"],
    &["capacity"],
    &["report"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Non-test source text of every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            out.push((p.strip_prefix(root()).unwrap().display().to_string(), code));
        }
    }
}

/// The top-level module a file under src/ belongs to.
fn module_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("src/")?;
    let first = rest.split('/').next()?;
    let m = first.trim_end_matches(".rs");
    (m != "lib" && m != "main").then(|| m.to_string())
}

/// Every `crate::name` (and `super::super::name` is not used at the top level) a file mentions.
fn crate_refs(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.push(name);
        }
        rest = after;
    }
    out
}

#[test]
fn every_module_imports_only_from_lower_layers() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    let mut violations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (path, code) in &files {
        let Some(module) = module_of(path) else { continue };
        let Some(mine) = layer_of(&module) else {
            violations.entry(path.clone()).or_default().push(format!("module `{module}` is in no layer"));
            continue;
        };
        for used in crate_refs(code) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(l) if l < mine => {}
                _ => violations.entry(path.clone()).or_default().push(format!("`{module}` uses `crate::{used}`")),
            }
        }
    }
    assert!(violations.is_empty(), "imports against the layers: {violations:#?}");
}

#[test]
fn the_event_core_knows_no_models_and_no_files() {
    let mut files = Vec::new();
    sources(&root().join("src/sim"), &mut files);
    for (path, code) in files {
        let lower = code.to_lowercase();
        for word in ["deepseek", "llama", "qwen", "kimi", "mlx", "std::fs", "crate::"] {
            assert!(!lower.contains(word), "{path} mentions `{word}`");
        }
    }
}
