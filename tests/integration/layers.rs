//! The architecture on the page: each top-level module of `src/` imports only from layers below
//! it (no import circles, no reaching up), the files inside each module import each other without
//! circles, and the event core knows no model names. The layers are the ones ARCHITECTURE.md
//! draws.

use std::collections::{BTreeMap, BTreeSet};
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

/// A file's module path under `src/`: `src/estimate/serve/sched.rs` is `estimate::serve::sched`;
/// a `mod.rs` stands for its folder (`src/estimate/serve/mod.rs` is `estimate::serve`).
fn module_path(path: &str) -> Vec<String> {
    let rest = path.strip_prefix("src/").unwrap_or(path).trim_end_matches(".rs");
    let mut segments: Vec<String> = rest.split('/').map(str::to_string).collect();
    if segments.last().is_some_and(|s| s == "mod") {
        segments.pop();
    }
    segments
}

/// `code` without its comments and with its strings emptied: a doc link or a message that names
/// a sibling is not an import.
fn code_only(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let (mut i, mut kept) = (0, 0);
    // Drops `code[from..to]`, keeping what came before it and `keep` in its place.
    let cut = |out: &mut String, kept: &mut usize, from: usize, to: usize, keep: &str| {
        out.push_str(&code[*kept..from]);
        out.push_str(keep);
        *kept = to;
    };
    while i < b.len() {
        let from = i;
        if b[i..].starts_with(b"//") {
            i = code[i..].find('\n').map_or(b.len(), |n| i + n);
            cut(&mut out, &mut kept, from, i, "");
        } else if b[i..].starts_with(b"/*") {
            i = code[i..].find("*/").map_or(b.len(), |n| i + n + 2);
            cut(&mut out, &mut kept, from, i, " ");
        } else if b[i] == b'r' && (i == 0 || !is_ident(b[i - 1])) && matches!(b.get(i + 1), Some(b'"' | b'#')) {
            // A raw string ends at the quote followed by as many hashes as it opened with.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) == Some(&b'"') {
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                i = code[body..].find(&close).map_or(b.len(), |n| body + n + close.len());
                cut(&mut out, &mut kept, from, i, "\"\"");
            } else {
                i += 1;
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            cut(&mut out, &mut kept, from, i, "\"\"");
        } else if b[i..].starts_with(b"'\"'") {
            i += 3;
        } else {
            i += 1;
        }
    }
    out.push_str(&code[kept..]);
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The leading identifier of `text`.
fn ident(text: &str) -> &str {
    let end = text.bytes().position(|c| !is_ident(c)).unwrap_or(text.len());
    &text[..end]
}

/// The entries of a `use` group whose `{` was just before `text`, up to its matching `}`.
fn group_entries(text: &str) -> Vec<&str> {
    let (mut depth, mut from, mut out) = (0usize, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&text[from..i]);
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// The paths written at `text` (just after `prefix::`), `use` groups expanded:
/// `super::{a::X, Y}` gives `super::a::X` and `super::Y`.
fn expand_path(prefix: &[String], text: &str, out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            for entry in group_entries(group) {
                expand_path(&path, entry, out);
            }
            return;
        }
        let name = ident(rest);
        // `*`, `self` or the end of the path.
        if name.is_empty() || name == "self" {
            break;
        }
        path.push(name.to_string());
        match rest[name.len()..].strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// Every path `code` writes from `crate::` or `super::` (a path continuing another, as the
/// second `super` of `super::super::x`, is part of the first).
fn rooted_paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for root in ["crate::", "super::"] {
        for (i, _) in code.match_indices(root) {
            let before = if i == 0 { b' ' } else { b[i - 1] };
            if !is_ident(before) && before != b':' {
                expand_path(&[], &code[i..], &mut out);
            }
        }
    }
    out
}

/// Where a path written in the module `me` leads, from the crate root.
fn absolute(me: &[String], path: &[String]) -> Vec<String> {
    let mut abs: Vec<String> = if path.first().is_some_and(|p| p == "crate") { Vec::new() } else { me.to_vec() };
    for segment in path {
        match segment.as_str() {
            "crate" => {}
            "super" => {
                abs.pop();
            }
            s => abs.push(s.to_string()),
        }
    }
    abs
}

/// The file-level import graph inside each top-level module: `estimate/trace` ->
/// `estimate/generate` when trace.rs names `super::generate::...` (or
/// `crate::estimate::generate::...`). A path leads to the deepest file it names. Left out: the
/// top-level module's own root (`mod.rs`: it declares and re-exports every file, so it is the
/// module's front door, not a room in it) and paths down into a file's own children, which are
/// the module tree rather than an import.
fn file_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_path(p)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, code) in files {
        let me = module_path(path);
        if me.len() < 2 {
            continue;
        }
        for written in rooted_paths(&code_only(code)) {
            let abs = absolute(&me, &written);
            let Some(file) = (2..=abs.len()).rev().map(|n| &abs[..n]).find(|m| modules.contains(*m)) else { continue };
            if file[0] == me[0] && file != me.as_slice() {
                graph.entry(me.join("/")).or_default().insert(file.join("/"));
            }
        }
    }
    graph
}

/// Every import circle in `graph`, each named by its files in order, the first repeated at
/// the end (`a -> b -> a`); one per back edge of a depth-first search, in name order.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Seen {
        Open,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeMap<&'a str, Seen>,
        stack: &mut Vec<&'a str>,
        out: &mut Vec<String>,
    ) {
        seen.insert(node, Seen::Open);
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match seen.get(next.as_str()) {
                Some(Seen::Open) => {
                    let from = stack.iter().position(|n| n == next).expect("an open node is on the stack");
                    let mut circle: Vec<&str> = stack[from..].to_vec();
                    circle.push(next);
                    out.push(circle.join(" -> "));
                }
                Some(Seen::Done) => {}
                None => visit(next, graph, seen, stack, out),
            }
        }
        stack.pop();
        seen.insert(node, Seen::Done);
    }
    let mut seen = BTreeMap::new();
    let mut out = Vec::new();
    for node in graph.keys() {
        if !seen.contains_key(node.as_str()) {
            visit(node, graph, &mut seen, &mut Vec::new(), &mut out);
        }
    }
    out
}

#[test]
fn files_inside_each_module_import_each_other_without_circles() {
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    let graph = file_graph(&files);
    // The graph is really built: trace.rs drives the generate workload.
    assert!(graph.get("estimate/trace").is_some_and(|e| e.contains("estimate/generate")), "{graph:#?}");
    let found = circles(&graph);
    assert!(found.is_empty(), "import circles between files (move the shared piece down into a file both use): {found:#?}");
}

#[test]
fn the_circle_finder_names_a_circle_and_passes_a_tree() {
    let edges = |list: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in list {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(circles(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")])), ["a -> b -> c -> a"]);
    assert_eq!(circles(&edges(&[("x", "y"), ("y", "x")])), ["x -> y -> x"]);
    assert!(circles(&edges(&[("a", "b"), ("a", "c"), ("b", "c"), ("c", "d")])).is_empty());
}

#[test]
fn the_file_graph_reads_groups_parents_and_crate_paths_and_skips_comments() {
    let file = |path: &str, code: &str| (path.to_string(), code.to_string());
    // The circle this repository had: generate.rs recorded into trace.rs's `Trace`, trace.rs ran
    // generate.rs; sched.rs reached two folders up; a doc link and a string name no file.
    let files = [
        file("src/estimate/mod.rs", "pub mod generate; pub mod trace; pub mod serve; pub use trace::Trace;"),
        file("src/estimate/generate.rs", "use super::trace::Trace;\n/// See [`super::serve`].\nfn f() {}"),
        file("src/estimate/trace.rs", "use super::{EstimateError, generate::{simulate, X}};\nconst S: &str = \"super::serve\";"),
        file("src/estimate/serve/mod.rs", "pub mod sched; use sched::Policy; use crate::estimate::serve::sched::Q;"),
        file("src/estimate/serve/sched.rs", "use super::super::generate::prefill_piece; use super::{Req, ServeSim};"),
        file("src/llm/ops.rs", "fn g() -> crate::estimate::trace::Trace { todo!() }"),
    ];
    let graph = file_graph(&files);
    let got: Vec<(String, String)> = graph.iter().flat_map(|(a, bs)| bs.iter().map(|b| (a.clone(), b.clone()))).collect();
    let want = [
        ("estimate/generate", "estimate/trace"),
        ("estimate/serve", "estimate/serve/sched"),
        ("estimate/serve/sched", "estimate/generate"),
        ("estimate/serve/sched", "estimate/serve"),
        ("estimate/trace", "estimate/generate"),
    ];
    assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(
        circles(&graph),
        ["estimate/generate -> estimate/trace -> estimate/generate", "estimate/serve -> estimate/serve/sched -> estimate/serve"]
    );
}
