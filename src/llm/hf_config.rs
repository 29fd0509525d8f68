//! Import of a Hugging Face `config.json` into a [`ModelSpec`].

use serde_json::Value;

use super::model::{Attention, ModelSpec, Moe};

/// Errors while importing a model configuration.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// A required key is absent.
    #[error("config is missing `{0}`")]
    Missing(&'static str),
    /// A key has an unusable value.
    #[error("config key `{key}` is invalid: {why}")]
    Invalid {
        /// The key.
        key: &'static str,
        /// What is wrong.
        why: String,
    },
    /// `model_type` is not one the twin knows.
    #[error("unsupported model_type `{0}` (supported: llama, mistral, qwen2, qwen3, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss)")]
    UnsupportedArch(String),
}

fn get_u(v: &Value, key: &'static str) -> Option<u64> {
    v.get(key).and_then(|x| x.as_u64().or_else(|| x.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64)))
}

fn req(v: &Value, key: &'static str) -> Result<u64, LlmError> {
    let x = get_u(v, key).ok_or(LlmError::Missing(key))?;
    if x == 0 {
        return Err(LlmError::Invalid { key, why: "must be positive".into() });
    }
    Ok(x)
}

impl ModelSpec {
    /// Imports a model from a Hugging Face `config.json` value. Supports dense (llama family),
    /// MoE (qwen3_moe, gpt_oss), GQA, MLA (deepseek_v3, kimi_k2) and sliding-window attention.
    pub fn from_hf_config(id: &str, name: &str, v: &Value) -> Result<Self, LlmError> {
        // Some configs (kimi_k2, multimodal wrappers) nest the language model config.
        let v = v.get("text_config").unwrap_or(v);
        let arch = v.get("model_type").and_then(Value::as_str).ok_or(LlmError::Missing("model_type"))?.to_string();
        let layers = req(v, "num_hidden_layers")?;
        let hidden = req(v, "hidden_size")?;
        let vocab = req(v, "vocab_size")?;
        let heads = req(v, "num_attention_heads")?;
        let kv_heads = get_u(v, "num_key_value_heads").unwrap_or(heads);
        let tie = v.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false);
        if hidden % heads != 0 && get_u(v, "head_dim").is_none() {
            return Err(LlmError::Invalid { key: "hidden_size", why: format!("{hidden} is not divisible by num_attention_heads {heads}") });
        }
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(LlmError::Invalid {
                key: "num_key_value_heads",
                why: format!("{kv_heads} must divide num_attention_heads {heads}"),
            });
        }
        let gqa = || Attention::Gqa { heads, kv_heads, head_dim: get_u(v, "head_dim").unwrap_or(hidden / heads) };
        let (attention, ffn, moe, sliding) = match arch.as_str() {
            "llama" | "mistral" | "qwen2" | "qwen3" => (gqa(), req(v, "intermediate_size")?, None, None),
            "qwen3_moe" => {
                let experts = req(v, "num_experts")?;
                let moe = Moe {
                    experts,
                    active: req(v, "num_experts_per_tok")?,
                    shared: 0,
                    expert_ffn: req(v, "moe_intermediate_size")?,
                    first_k_dense: 0,
                    dense_ffn: get_u(v, "intermediate_size").unwrap_or(0),
                };
                (gqa(), 0, Some(moe), None)
            }
            "gpt_oss" => {
                let moe = Moe {
                    experts: req(v, "num_local_experts")?,
                    active: req(v, "num_experts_per_tok")?,
                    shared: 0,
                    expert_ffn: req(v, "intermediate_size")?,
                    first_k_dense: 0,
                    dense_ffn: 0,
                };
                (gqa(), 0, Some(moe), get_u(v, "sliding_window"))
            }
            "deepseek_v3" | "deepseek_v2" | "kimi_k2" => {
                let att = Attention::Mla {
                    heads,
                    q_lora_rank: get_u(v, "q_lora_rank").unwrap_or(0),
                    kv_lora_rank: req(v, "kv_lora_rank")?,
                    qk_nope_head_dim: req(v, "qk_nope_head_dim")?,
                    qk_rope_head_dim: req(v, "qk_rope_head_dim")?,
                    v_head_dim: req(v, "v_head_dim")?,
                };
                let moe = Moe {
                    experts: req(v, "n_routed_experts")?,
                    active: req(v, "num_experts_per_tok")?,
                    shared: get_u(v, "n_shared_experts").unwrap_or(0),
                    expert_ffn: req(v, "moe_intermediate_size")?,
                    first_k_dense: get_u(v, "first_k_dense_replace").unwrap_or(0),
                    dense_ffn: req(v, "intermediate_size")?,
                };
                (att, 0, Some(moe), None)
            }
            other => return Err(LlmError::UnsupportedArch(other.to_string())),
        };
        if let Some(m) = &moe {
            if m.active > m.experts {
                return Err(LlmError::Invalid {
                    key: "num_experts_per_tok",
                    why: format!("{} exceeds the {} experts", m.active, m.experts),
                });
            }
            if m.first_k_dense > layers {
                return Err(LlmError::Invalid {
                    key: "first_k_dense_replace",
                    why: format!("{} exceeds num_hidden_layers {layers}", m.first_k_dense),
                });
            }
        }
        Ok(ModelSpec {
            id: id.into(),
            name: name.into(),
            arch,
            layers,
            hidden,
            vocab,
            attention,
            ffn,
            moe,
            sliding_window: sliding,
            tie_embeddings: tie,
        })
    }
}
