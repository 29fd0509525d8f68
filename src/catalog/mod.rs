//! Built-in presets for nodes, fabrics, models and quantization formats. The data files live in
//! `src/catalog/*.toml` and are embedded at build time; every number carries its source.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::hw::{FabricSpec, NodeSpec};
use crate::llm::{ModelSpec, QuantSpec};

const NODES: &str = include_str!("nodes.toml");
const FABRICS: &str = include_str!("fabrics.toml");
const MODELS: &str = include_str!("models.toml");
const QUANTS: &str = include_str!("quants.toml");

/// A model preset: its config (Hugging Face keys) plus display data.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPreset {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Other ids accepted for it.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Quantization used when a scenario names none.
    pub default_quant: String,
    /// Where the config comes from.
    pub source: String,
    /// Hugging Face config.json keys.
    pub config: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuant {
    id: String,
    family: crate::llm::QuantFamily,
    bits: f64,
    expert_bits: Option<f64>,
    source: String,
}

#[derive(Deserialize)]
struct NodeFile {
    node: Vec<NodeSpec>,
}
#[derive(Deserialize)]
struct FabricFile {
    fabric: Vec<FabricSpec>,
}
#[derive(Deserialize)]
struct ModelFile {
    model: Vec<ModelPreset>,
}
#[derive(Deserialize)]
struct QuantFile {
    quant: Vec<RawQuant>,
}

/// All built-in presets.
#[derive(Debug)]
pub struct Catalog {
    /// Nodes.
    pub nodes: Vec<NodeSpec>,
    /// Fabrics.
    pub fabrics: Vec<FabricSpec>,
    /// Model presets (raw config) and their imported specs.
    pub models: Vec<(ModelPreset, ModelSpec)>,
    /// Quantization formats.
    pub quants: Vec<QuantSpec>,
}

/// The embedded catalog, parsed once. The data files are tested, so parsing cannot fail at run
/// time on a released build.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let nodes = toml::from_str::<NodeFile>(NODES).expect("embedded nodes.toml is valid").node;
        let fabrics = toml::from_str::<FabricFile>(FABRICS).expect("embedded fabrics.toml is valid").fabric;
        let models = toml::from_str::<ModelFile>(MODELS)
            .expect("embedded models.toml is valid")
            .model
            .into_iter()
            .map(|p| {
                let json = serde_json::to_value(&p.config).expect("toml table converts to json");
                let spec = ModelSpec::from_hf_config(&p.id, &p.name, &json).expect("embedded model config imports");
                (p, spec)
            })
            .collect();
        let quants = toml::from_str::<QuantFile>(QUANTS)
            .expect("embedded quants.toml is valid")
            .quant
            .into_iter()
            .map(|q| QuantSpec { id: q.id, family: q.family, bits: q.bits, expert_bits: q.expert_bits, source: q.source })
            .collect();
        Catalog { nodes, fabrics, models, quants }
    })
}

impl Catalog {
    /// A node preset by id.
    pub fn node(&self, id: &str) -> Option<&NodeSpec> {
        self.nodes.iter().find(|n| n.id == id)
    }
    /// A fabric preset by id.
    pub fn fabric(&self, id: &str) -> Option<&FabricSpec> {
        self.fabrics.iter().find(|f| f.id == id)
    }
    /// A model preset by id or alias.
    pub fn model(&self, id: &str) -> Option<&(ModelPreset, ModelSpec)> {
        self.models.iter().find(|(p, _)| p.id == id || p.aliases.iter().any(|a| a == id))
    }
    /// A quantization by id.
    pub fn quant(&self, id: &str) -> Option<&QuantSpec> {
        self.quants.iter().find(|q| q.id == id)
    }
    /// Ids of nodes.
    pub fn node_ids(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.id.as_str()).collect()
    }
    /// Ids of fabrics.
    pub fn fabric_ids(&self) -> Vec<&str> {
        self.fabrics.iter().map(|n| n.id.as_str()).collect()
    }
    /// Ids (and aliases) of models.
    pub fn model_ids(&self) -> Vec<&str> {
        self.models.iter().flat_map(|(p, _)| std::iter::once(p.id.as_str()).chain(p.aliases.iter().map(String::as_str))).collect()
    }
    /// Ids of quantizations.
    pub fn quant_ids(&self) -> Vec<&str> {
        self.quants.iter().map(|n| n.id.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::OpClass;
    use crate::util::did_you_mean;

    #[test]
    fn embedded_catalog_parses_and_sizes_match_facts() {
        let c = catalog();
        let gb = |m: &str, q: &str| c.model(m).unwrap().1.weight_bytes(c.quant(q).unwrap()) / 1e9;
        // FACTS.md: DeepSeek V3.1 378 GB (4-bit) / 713 GB (8-bit); Qwen3-235B 132 / 250 GB;
        // Kimi K2 Thinking 658 GB; Qwen3-Coder-480B 270 GB 4-bit.
        for (m, q, want) in [
            ("deepseek-v3.1", "mlx-4bit", 378.0),
            ("deepseek-v3.1", "mlx-8bit", 713.0),
            ("qwen3-235b-a22b", "mlx-4bit", 132.0),
            ("qwen3-235b-a22b", "mlx-8bit", 250.0),
            ("kimi-k2-thinking", "int4-g32", 658.0),
            ("qwen3-coder-480b-a35b", "mlx-4bit", 270.0),
            // 376.65 GiB
            ("deepseek-r1", "q4_k_m", 404.4),
        ] {
            let got = gb(m, q);
            assert!((got - want).abs() / want < 0.02, "{m} {q}: {got:.1} GB vs {want}");
        }
        assert!(c.quant("q4_k_m").unwrap().bits_for(OpClass::Expert) > 4.8);
    }

    #[test]
    fn fallback_fabrics_exist() {
        let c = catalog();
        for f in &c.fabrics {
            for id in [&f.degrade_to, &f.lost_to].into_iter().flatten() {
                assert!(c.fabric(id).is_some_and(|x| x.transport != crate::hw::Transport::None), "{}: {id}", f.id);
            }
        }
        assert_eq!(c.fabric("tb5-rdma").unwrap().degrade_to.as_deref(), Some("tb5-tcp"));
    }

    #[test]
    fn suggestions() {
        let c = catalog();
        assert_eq!(did_you_mean("m3-ultra-512gb", &c.node_ids()), Some("m3-ultra-80c-512gb"));
        assert_eq!(did_you_mean("tb5-rmda", &c.fabric_ids()), Some("tb5-rdma"));
        assert_eq!(did_you_mean("zzzzzzzzzzzzzzzzzzzz", &c.fabric_ids()), None);
    }
}
