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

/// The chip families of `nodes`, in first-seen order, as a legend names them.
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
            // The M4 Max ships in a Mac Studio and in MacBook Pros; the newer chips only outside
            // a Mac Studio (FACTS-2026 A1): named by chip, not by box.
            "m4-max" => "Apple M4 Max".to_string(),
            "m4-pro" => "Apple M4 Pro".to_string(),
            "m4" => "Apple M4".to_string(),
            "m5-max" => "Apple M5 Max".to_string(),
            "m5-pro" => "Apple M5 Pro".to_string(),
            "m5" => "Apple M5".to_string(),
            "m2-ultra" => "Mac Studio M2 Ultra".to_string(),
            "m1-ultra" => "Mac Studio M1 Ultra".to_string(),
            "m3-max" => "Apple M3 Max".to_string(),
            "m1-max" => "Apple M1 Max".to_string(),
            "m2-max" => "Apple M2 Max".to_string(),
            "m3-pro" => "Apple M3 Pro".to_string(),
            "m2-pro" => "Apple M2 Pro".to_string(),
            "m1-pro" => "Apple M1 Pro".to_string(),
            "m3" => "Apple M3".to_string(),
            "m2" => "Apple M2".to_string(),
            "m1" => "Apple M1".to_string(),
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

#[cfg(test)]
mod tests {
    use super::chip_family;

    #[test]
    fn chips_shipped_in_more_than_one_box_are_named_by_chip() {
        assert_eq!(chip_family(&["macbook-pro-m4-max-40c-128gb".into()]), "Apple M4 Max");
        assert_eq!(chip_family(&["m4-max-40c-128gb".into(), "macbook-pro-m5-max-40c-128gb".into()]), "Apple M4 Max + Apple M5 Max");
        assert_eq!(chip_family(&["m3-ultra-80c-512gb".into()]), "Mac Studio M3 Ultra");
    }
}
