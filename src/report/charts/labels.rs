//! Names and short texts charts print: values, models, chip families, clusters.

use crate::capacity::sweep::value_label;
use crate::catalog::catalog;

pub(super) const GROUP_KEYS: &[&str] = &["model.name", "model.hf_config"];
pub(super) const NODE_X_KEYS: &[&str] = &["cluster.count", "cluster.nodes"];
pub(super) const SINGLE_NODE_WILDCARDS: &[&str] = &["cluster.fabric", "cluster.topology", "engine.parallelism"];

pub(super) fn pretty_value(key: &str, v: &serde_json::Value) -> String {
    let s = value_label(v);
    match key {
        "engine.name" => crate::engine::runtimes::by_name(&s).map_or(s, |r| r.label().to_string()),
        "cluster.count" => format!("{s} node{}", if s == "1" { "" } else { "s" }),
        "workload.prompt_tokens" => format!("{s} prompt tokens"),
        "workload.generate_tokens" => format!("{s} generated"),
        "seed" => format!("seed {s}"),
        _ => s,
    }
}

pub(super) fn model_name(id: &str) -> String {
    catalog().model(id).map_or_else(|| id.to_string(), |(p, _)| p.name.clone())
}

pub(super) fn chip_family(nodes: &[String]) -> String {
    let mut chips: Vec<String> = Vec::new();
    for n in nodes {
        let c = catalog().node(n).map_or_else(|| n.clone(), |s| s.chip.clone());
        if !chips.contains(&c) {
            chips.push(c);
        }
    }
    chips
        .iter()
        .map(|c| match c.as_str() {
            "m3-ultra" => "Mac Studio M3 Ultra".to_string(),
            "m4-max" => "Mac Studio M4 Max".to_string(),
            "m2-ultra" => "Mac Studio M2 Ultra".to_string(),
            "gb10" => "NVIDIA GB10 (DGX Spark)".to_string(),
            "ryzen-ai-max-395" => "AMD Ryzen AI Max+ 395".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

pub(super) fn cluster_label(nodes: &[String]) -> String {
    value_label(&serde_json::Value::Array(nodes.iter().map(|n| serde_json::Value::String(n.clone())).collect()))
}
