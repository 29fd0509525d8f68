//! The quantization a Hugging Face checkpoint declares in its `config.json`: MLX's
//! `quantization` block (global bits and group size, per-module overrides) or a
//! `compressed-tensors` `quantization_config` (natively INT4 models such as Kimi K2: quantized
//! `Linear` layers except the modules its `ignore` list names).

use serde_json::Value;

use super::hf_config::LlmError;
use super::quant::{ClassFormat, KernelFamily, QuantFamily, QuantScheme, QuantSpec, TensorClass, TensorFormat};

/// The tensor class of an MLX/Hugging Face module path (`model.layers.3.mlp.experts.7.up_proj`,
/// `model.layers.0.self_attn.q_proj`, `lm_head`), and its layer if it has one.
pub fn module_class(path: &str) -> Option<(TensorClass, Option<u64>)> {
    let parts: Vec<&str> = path.split('.').collect();
    let layer = parts.windows(2).find(|w| w[0] == "layers" || w[0] == "h" || w[0] == "blk").and_then(|w| w[1].parse().ok());
    let last = parts.last().copied().unwrap_or("");
    let has = |s: &str| parts.iter().any(|p| p.contains(s));
    let class = if has("embed_tokens") || has("wte") {
        TensorClass::Embedding
    } else if has("lm_head") {
        TensorClass::LmHead
    } else if has("norm") {
        TensorClass::Norm
    } else if has("attn") {
        TensorClass::Attention
    } else if has("shared_expert") {
        TensorClass::SharedExpert
    } else if has("switch_mlp") || parts.contains(&"experts") {
        TensorClass::RoutedExpert
    } else if last == "gate" || last == "router" {
        TensorClass::Router
    } else if has("mlp") {
        TensorClass::DenseMlp
    } else {
        return None;
    };
    Some((class, layer))
}

fn invalid(key: &'static str, why: impl Into<String>) -> LlmError {
    LlmError::Invalid { key, why: why.into() }
}

/// One MLX format entry: `{"bits": 4, "group_size": 64, "mode": "affine"}`.
fn mlx_format(v: &Value, default_group: u64) -> Result<TensorFormat, LlmError> {
    let bits = v.get("bits").and_then(Value::as_u64).ok_or_else(|| invalid("quantization", "an entry has no integer `bits`"))?;
    if !(1..=16).contains(&bits) {
        return Err(invalid("quantization", format!("bits {bits} is not in 1..=16")));
    }
    let group = v.get("group_size").and_then(Value::as_u64).unwrap_or(default_group);
    if group == 0 {
        return Err(invalid("quantization", "group_size 0"));
    }
    match v.get("mode").and_then(Value::as_str).unwrap_or("affine") {
        // OCP MX formats: 8-bit shared exponent per 32 elements.
        "mxfp4" => Ok(TensorFormat { bits: 4.0 + 8.0 / 32.0, kernel: KernelFamily::Mxfp4 }),
        "affine" => Ok(TensorFormat::mlx_affine(bits as u32, group as u32)),
        other => Err(invalid("quantization", format!("mode `{other}` is not known (affine, mxfp4)"))),
    }
}

/// The MLX `quantization` block: global `bits`/`group_size` plus per-module entries (a format,
/// or `false` for a module left unquantized).
fn mlx_quant(id: &str, q: &Value) -> Result<QuantSpec, LlmError> {
    let group = q.get("group_size").and_then(Value::as_u64).unwrap_or(64);
    let default = mlx_format(q, 64)?;
    let mut overrides = vec![
        // MLX never quantizes norms.
        ClassFormat { class: TensorClass::Norm, layer: None, format: TensorFormat::BF16 },
    ];
    let obj = q.as_object().ok_or_else(|| invalid("quantization", "is not an object"))?;
    for (path, v) in obj {
        let format = match v {
            Value::Bool(false) => TensorFormat::BF16,
            Value::Object(_) => mlx_format(v, group)?,
            _ => continue,
        };
        if let Some((class, layer)) = module_class(path) {
            overrides.push(ClassFormat { class, layer, format });
        }
    }
    // Layer-wide overrides first, so a per-layer one wins over them.
    overrides.sort_by_key(|o| o.layer.is_some());
    Ok(QuantSpec {
        id: id.into(),
        family: QuantFamily::Mlx,
        scheme: QuantScheme::PerClass { default, overrides },
        source: format!("{id}: config.json `quantization` (MLX affine, {} bits per weight by default)", default.bits),
    })
}

/// A module path standing for each class, in the DeepSeek/Kimi naming that compressed-tensors
/// `ignore` patterns are written against.
const REPRESENTATIVES: &[(TensorClass, &str)] = &[
    (TensorClass::Attention, "model.layers.1.self_attn.q_a_proj"),
    (TensorClass::DenseMlp, "model.layers.0.mlp.gate_proj"),
    (TensorClass::SharedExpert, "model.layers.1.mlp.shared_experts.gate_proj"),
    (TensorClass::RoutedExpert, "model.layers.1.mlp.experts.0.gate_proj"),
    (TensorClass::LmHead, "lm_head"),
];

/// Whether a compressed-tensors `ignore` entry (a module name, or `re:` and a regex) matches.
fn ignored(patterns: &[String], module: &str) -> bool {
    patterns.iter().any(|p| match p.strip_prefix("re:") {
        Some(re) => regex::Regex::new(&format!("^(?:{re})$")).is_ok_and(|r| r.is_match(module)),
        None => p == module,
    })
}

/// A `compressed-tensors` config: every `Linear` quantized to the first config group's weight
/// format (stored as packed integers plus a bf16 scale per group, and a zero point when
/// asymmetric), except modules the `ignore` list names; embeddings, routers and norms are not
/// `Linear` and stay bf16.
fn compressed_tensors(id: &str, q: &Value) -> Result<QuantSpec, LlmError> {
    let groups = q.get("config_groups").and_then(Value::as_object).ok_or_else(|| invalid("quantization_config", "no `config_groups`"))?;
    let w = groups
        .values()
        .find_map(|g| g.get("weights").filter(|w| !w.is_null()))
        .ok_or_else(|| invalid("quantization_config", "no config group quantizes weights"))?;
    let bits = w.get("num_bits").and_then(Value::as_u64).ok_or_else(|| invalid("quantization_config", "weights have no `num_bits`"))?;
    let group = w.get("group_size").and_then(Value::as_u64).filter(|g| *g > 0).unwrap_or(128);
    let symmetric = w.get("symmetric").and_then(Value::as_bool).unwrap_or(true);
    let per_group = 16.0 + if symmetric { 0.0 } else { bits as f64 };
    let quantized = TensorFormat { bits: bits as f64 + per_group / group as f64, kernel: KernelFamily::affine(bits as u32) };
    let patterns: Vec<String> = q
        .get("ignore")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let overrides = REPRESENTATIVES
        .iter()
        .filter(|(_, m)| !ignored(&patterns, m))
        .map(|&(class, _)| ClassFormat { class, layer: None, format: quantized })
        .collect();
    Ok(QuantSpec {
        id: id.into(),
        family: QuantFamily::Mlx,
        scheme: QuantScheme::PerClass { default: TensorFormat::BF16, overrides },
        source: format!("{id}: config.json `quantization_config` (compressed-tensors, int{bits} group {group}, ignore list applied)"),
    })
}

/// Whether a `config.json` declares MXFP4 routed experts (`quantization_config.quant_method =
/// "mxfp4"`, as openai/gpt-oss-120b and -20b ship).
pub fn declares_mxfp4(v: &Value) -> bool {
    v.get("quantization_config").and_then(|q| q.get("quant_method")).and_then(Value::as_str) == Some("mxfp4")
}

/// A checkpoint as OpenAI ships gpt-oss (`quant_method = "mxfp4"`): OCP MXFP4 routed experts
/// (4-bit elements and an 8-bit scale per 32: 4.25 bits), every other weight bf16 (the config's
/// `modules_to_not_convert`): the catalog's `mxfp4-hf`, as vLLM and SGLang load it.
fn mxfp4_checkpoint(id: &str) -> QuantSpec {
    let experts = TensorFormat { bits: 4.25, kernel: KernelFamily::Mxfp4 };
    QuantSpec {
        id: id.into(),
        family: QuantFamily::Hf,
        scheme: QuantScheme::PerClass {
            default: TensorFormat::BF16,
            overrides: vec![ClassFormat { class: TensorClass::RoutedExpert, layer: None, format: experts }],
        },
        source: format!("{id}: config.json `quantization_config` (mxfp4: MXFP4 routed experts, the rest bf16)"),
    }
}

/// Whether a quantization stores its routed experts in MXFP4 (gpt-oss as it ships or converted).
pub fn mxfp4_experts(q: &QuantSpec) -> bool {
    matches!(&q.scheme, QuantScheme::PerClass { overrides, .. }
        if overrides.iter().any(|o| o.class == TensorClass::RoutedExpert && o.format.kernel == KernelFamily::Mxfp4))
}

/// The quantization a `config.json` declares, if any: MLX's `quantization` block, or a
/// `compressed-tensors` `quantization_config`, or gpt-oss's MXFP4 experts. Other methods (fp8, gptq, ...) are not modelled
/// and give `None` (the checkpoint is then treated as bf16 unless the scenario names a quant).
pub fn quant_from_hf_config(id: &str, v: &Value) -> Result<Option<QuantSpec>, LlmError> {
    let v = v.get("text_config").filter(|t| t.get("quantization").is_some()).unwrap_or(v);
    if let Some(q) = v.get("quantization").filter(|q| q.is_object()) {
        return mlx_quant(id, q).map(Some);
    }
    if declares_mxfp4(v) {
        return Ok(Some(mxfp4_checkpoint(id)));
    }
    match v.get("quantization_config") {
        Some(q) if q.get("quant_method").and_then(Value::as_str) == Some("compressed-tensors") => compressed_tensors(id, q).map(Some),
        Some(q) if q.get("bits").is_some() && q.get("quant_method").is_none() => mlx_quant(id, q).map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::TensorRole;
    use serde_json::json;

    fn shape() -> crate::llm::QuantShape {
        crate::catalog::catalog().model("kimi-k2-thinking").unwrap().1.quant_shape()
    }

    #[test]
    fn mlx_block_with_overrides() {
        let q = quant_from_hf_config(
            "x",
            &json!({"quantization": {"group_size": 64, "bits": 4,
                "model.layers.5.mlp.gate": {"group_size": 64, "bits": 8},
                "lm_head": {"group_size": 64, "bits": 6},
                "model.embed_tokens": false}}),
        )
        .unwrap()
        .unwrap();
        let s = shape();
        assert_eq!(q.format(TensorRole::AttnQ, 3, &s).bits, 4.5);
        assert_eq!(q.format(TensorRole::Router, 5, &s).bits, 8.5);
        assert_eq!(q.format(TensorRole::Router, 6, &s).bits, 4.5);
        assert_eq!(q.format(TensorRole::LmHead, 0, &s).bits, 6.5);
        assert_eq!(q.format(TensorRole::Embedding, 0, &s).bits, 16.0);
        assert_eq!(q.format(TensorRole::AttnQ, 3, &s).kernel, KernelFamily::Affine4);
    }

    #[test]
    fn kimi_k2_compressed_tensors_quantizes_routed_experts_only() {
        // moonshotai/Kimi-K2-Thinking config.json `quantization_config` (abridged).
        let q = quant_from_hf_config(
            "kimi",
            &json!({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "group_size": 32, "symmetric": true, "type": "int"}}},
                "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}}),
        )
        .unwrap()
        .unwrap();
        let s = shape();
        assert_eq!(q.format(TensorRole::RoutedExperts, 3, &s).bits, 4.5);
        for r in [TensorRole::AttnLatent, TensorRole::SharedExpert, TensorRole::Mlp, TensorRole::LmHead, TensorRole::Embedding] {
            assert_eq!(q.format(r, 3, &s), TensorFormat::BF16, "{r:?}");
        }
    }

    #[test]
    fn module_paths_map_to_classes() {
        assert_eq!(module_class("model.layers.3.mlp.switch_mlp.up_proj"), Some((TensorClass::RoutedExpert, Some(3))));
        assert_eq!(module_class("model.layers.0.mlp.gate_proj"), Some((TensorClass::DenseMlp, Some(0))));
        assert_eq!(module_class("model.layers.9.mlp.gate"), Some((TensorClass::Router, Some(9))));
        assert_eq!(module_class("model.layers.1.mlp.shared_experts.down_proj"), Some((TensorClass::SharedExpert, Some(1))));
        assert_eq!(module_class("model.layers.1.self_attn.kv_b_proj"), Some((TensorClass::Attention, Some(1))));
    }
}
