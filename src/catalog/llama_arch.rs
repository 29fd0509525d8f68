//! llama.cpp's model labels (`qwen3moe 30B.A3B`, `llama 70B`): its architecture names, the
//! Hugging Face families they cover, and the catalog preset a label (or a parameter count)
//! names. Shared by the llama-bench importer and `validate`.

use super::Catalog;

/// `70.55 B`, `3.21 B`, `999.89 M` -> parameter count.
pub(crate) fn parse_params(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix('B') {
        (n, 1e9)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('K') {
        (n, 1e3)
    } else {
        (s, 1.0)
    };
    num.trim().parse::<f64>().ok().map(|x| x * mult)
}

/// llama.cpp architecture names (`LLM_ARCH_NAMES`, src/llama-arch.cpp; checked at llama.cpp
/// 4227c9be, 2025-08-14, and for phi3, qwen3vl(moe), qwen3next, qwen35(moe), minimax-m2, deepseek32,
/// glm-dsa, nemotron_h(_moe), gemma4 and mimo2 as vendored in xllamacpp 2026.10.11549) and the Hugging
/// Face `model_type`s they cover.
pub(crate) const ARCHES: &[(&str, &[&str])] = &[
    // llama.cpp's converter writes Mistral's text models (`MistralForCausalLM`, Mistral Small
    // 3.1's `Mistral3ForConditionalGeneration`) as `llama` (convert_hf_to_gguf.py as vendored in
    // llama-cpp-python 0.3.16) and Phi-3/Phi-4 (`Phi3ForCausalLM`) as `phi3`.
    ("llama", &["llama", "mistral", "mixtral"]),
    ("phi3", &["phi3"]),
    ("qwen2", &["qwen2"]),
    ("qwen3", &["qwen3"]),
    ("qwen3vl", &["qwen3_vl"]),
    ("qwen3vlmoe", &["qwen3_vl_moe"]),
    ("qwen3next", &["qwen3_next"]),
    ("qwen35", &["qwen3_5"]),
    ("qwen35moe", &["qwen3_5_moe"]),
    ("minimax-m2", &["minimax_m2"]),
    ("llama4", &["llama4"]),
    ("deepseek2", &["deepseek_v3", "kimi_k2"]),
    ("qwen3moe", &["qwen3_moe"]),
    ("glm4moe", &["glm4_moe"]),
    ("gemma2", &["gemma2"]),
    ("gemma3", &["gemma3"]),
    ("gpt-oss", &["gpt_oss"]),
    ("gpt_oss", &["gpt_oss"]),
    ("deepseek32", &["deepseek_v32"]),
    ("glm-dsa", &["glm_moe_dsa"]),
    ("nemotron_h", &["nemotron_h"]),
    ("nemotron_h_moe", &["nemotron_h"]),
    ("gemma4", &["gemma4"]),
    ("mimo2", &["mimo_v2_flash"]),
];

/// How far llama-bench's parameter count may be from a preset's (a GGUF counts the text model's
/// tensors; a preset's config may count a few the file stores differently).
pub(crate) const PARAM_TOLERANCE: f64 = 0.15;

/// The catalog presets of a `model_type`'s architecture nearest its parameter count (within
/// [`PARAM_TOLERANCE`]): the first, and any others of exactly the same count (the same architecture
/// and size under another name, e.g. DeepSeek V3.1 and R1).
pub(crate) fn presets_by_architecture(model_type: &str, n_params: Option<f64>, cat: &Catalog) -> Result<Vec<String>, String> {
    let arch = model_type.split_whitespace().next().unwrap_or("");
    let known: Vec<&str> = ARCHES.iter().map(|(a, _)| *a).collect();
    let hf = ARCHES
        .iter()
        .find(|(a, _)| *a == arch)
        .map(|(_, h)| *h)
        .ok_or(format!("architecture `{arch}` has no model preset (known: {})", known.join(", ")))?;
    let size = model_type.split_whitespace().nth(1).unwrap_or("");
    if n_params.is_none()
        && let Some(shape) = ExpertSize::parse(size)
    {
        return presets_by_expert_shape(model_type, shape, hf, cat);
    }
    let params = n_params
        .or_else(|| parse_params(size.split('.').next().unwrap_or("")))
        .ok_or(format!("`{model_type}`: no parameter count to tell the model size"))?;
    let mut near: Vec<(&str, u64, f64)> = cat
        .models
        .iter()
        .filter(|(_, m)| hf.contains(&m.arch.as_str()))
        .map(|(p, m)| (p.id.as_str(), m.total_params(), ((m.total_params() as f64) / params - 1.0).abs()))
        .filter(|(_, _, rel)| *rel <= PARAM_TOLERANCE)
        .collect();
    near.sort_by(|a, b| a.2.total_cmp(&b.2));
    match near.first() {
        Some(&(_, count, _)) => Ok(near.iter().filter(|x| x.1 == count).map(|x| x.0.to_string()).collect()),
        None => Err(format!("`{model_type}` ({:.1} B parameters): no model preset of that architecture and size", params / 1e9)),
    }
}

/// A size llama.cpp writes with the expert count (`llm_type_name`, src/llama-model.cpp):
/// `17Bx16E` (Llama 4 Scout: active parameters by routed experts) or `8x7B` (Mixtral: experts
/// of a size), which no total parameter count reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ExpertSize {
    /// `{active}Bx{experts}E`.
    ActiveByExperts { active: f64, experts: u64 },
    /// `{experts}x{each}B`: the total is near `experts x each` (less: attention is shared).
    ExpertsOf { experts: u64, each: f64 },
}

impl ExpertSize {
    fn parse(size: &str) -> Option<ExpertSize> {
        let (a, b) = size.split_once('x')?;
        if let Some(e) = b.strip_suffix('E') {
            return Some(ExpertSize::ActiveByExperts { active: parse_params(a)?, experts: e.parse().ok()? });
        }
        Some(ExpertSize::ExpertsOf { experts: a.parse().ok()?, each: parse_params(b)? })
    }
}

/// The presets of architecture `hf` with the routed-expert count of `shape` nearest its size
/// (active parameters for `17Bx16E`, the total for `8x7B`, within [`PARAM_TOLERANCE`] of the
/// active count, or of the total for experts of a size: `8x7B` is 56 B by name and 46.7 B in
/// fact, so the nearest of that expert count is taken, within a factor of two).
fn presets_by_expert_shape(model_type: &str, shape: ExpertSize, hf: &[&str], cat: &Catalog) -> Result<Vec<String>, String> {
    // How far a preset is from the size (relative for the active count, log ratio for the
    // total), and how far it may be.
    let (experts, limit) = match shape {
        ExpertSize::ActiveByExperts { experts, .. } => (experts, PARAM_TOLERANCE),
        ExpertSize::ExpertsOf { experts, .. } => (experts, std::f64::consts::LN_2),
    };
    let rel_of = |m: &crate::llm::ModelSpec| match shape {
        ExpertSize::ActiveByExperts { active, .. } => (m.active_params() as f64 / active - 1.0).abs(),
        ExpertSize::ExpertsOf { experts, each } => (m.total_params() as f64 / (each * experts as f64)).ln().abs(),
    };
    let mut near: Vec<(&str, u64, f64)> = cat
        .models
        .iter()
        .filter(|(_, m)| hf.contains(&m.arch.as_str()) && m.moe.as_ref().is_some_and(|moe| moe.experts == experts))
        .map(|(p, m)| (p.id.as_str(), m.total_params(), rel_of(m)))
        .filter(|(_, _, rel)| *rel <= limit)
        .collect();
    near.sort_by(|a, b| a.2.total_cmp(&b.2));
    match near.first() {
        Some(&(_, count, _)) => Ok(near.iter().filter(|x| x.1 == count).map(|x| x.0.to_string()).collect()),
        None => Err(format!("`{model_type}`: no model preset of that architecture with {experts} routed experts near that size")),
    }
}

/// The catalog model of a llama-bench `model_type` (architecture plus parameter count; the count
/// must be within 15% of the preset's).
pub fn model_for(model_type: &str, n_params: Option<f64>, cat: &Catalog) -> Result<String, String> {
    presets_by_architecture(model_type, n_params, cat).map(|ids| ids[0].clone())
}
