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
    /// The dimensions together describe an absurdly large model.
    #[error(
        "config describes about {params:.3e} parameters, more than the {MAX_PARAMS:.0e} accepted (the largest published models have about 1e12); check the dimensions"
    )]
    TooLarge {
        /// Estimated parameters.
        params: f64,
    },
    /// `model_type` is not one the twin knows.
    #[error("unsupported model_type `{0}` (supported: llama, mistral, qwen2, qwen3, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss)")]
    UnsupportedArch(String),
}

/// Sanity bounds on each dimension of an imported config: the largest published models by a
/// wide margin (Llama 3.1 405B: 126 layers, hidden 16,384, FFN 53,248, 128 heads; DeepSeek V3:
/// 256 experts, vocabulary 129,280; Gemma: vocabulary 262,144). A value above its bound is a
/// typo or a hostile file, and would make the simulation take hours or overflow. Keys not listed
/// are bounded by [`MAX_OTHER`].
const BOUNDS: &[(&str, u64)] = &[
    ("num_hidden_layers", 1_000),
    ("hidden_size", 1_000_000),
    ("vocab_size", 10_000_000),
    ("num_attention_heads", 10_000),
    ("num_key_value_heads", 10_000),
    ("head_dim", 100_000),
    ("intermediate_size", 10_000_000),
    ("moe_intermediate_size", 10_000_000),
    ("num_experts", 100_000),
    ("num_local_experts", 100_000),
    ("n_routed_experts", 100_000),
    ("n_shared_experts", 100_000),
    ("num_experts_per_tok", 100_000),
    ("first_k_dense_replace", 1_000),
    ("sliding_window", 1_000_000_000),
    ("max_position_embeddings", 100_000_000),
    ("original_max_position_embeddings", 100_000_000),
];
/// Bound of a key without its own entry in [`BOUNDS`] (ranks and head dimensions of MLA).
const MAX_OTHER: u64 = 1_000_000;
/// Parameters (estimated from the dimensions, before any arithmetic on them) above which a
/// config is refused: 1,000 times the largest published models.
pub const MAX_PARAMS: f64 = 1e15;
/// Keys whose 0 means "none" (every other key must be positive when present).
const ZERO_MEANS_NONE: &[&str] = &["q_lora_rank", "n_shared_experts", "first_k_dense_replace", "intermediate_size"];

fn bound(key: &str) -> u64 {
    BOUNDS.iter().find(|(k, _)| *k == key).map_or(MAX_OTHER, |(_, b)| *b)
}

/// An optional non-negative integer key: absent or null is None; present, it must be an integer
/// within its bound, and positive unless 0 means "none" for it.
fn opt(v: &Value, key: &'static str) -> Result<Option<u64>, LlmError> {
    let Some(x) = v.get(key).filter(|x| !x.is_null()) else { return Ok(None) };
    let n = x.as_u64().or_else(|| x.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64));
    let Some(n) = n else {
        return Err(LlmError::Invalid { key, why: format!("{x} is not a non-negative integer") });
    };
    if n == 0 && !ZERO_MEANS_NONE.contains(&key) {
        return Err(LlmError::Invalid { key, why: "must be positive (0 is not a size)".into() });
    }
    if n > bound(key) {
        return Err(LlmError::Invalid { key, why: format!("{n} exceeds the sanity bound {} (far above any published model)", bound(key)) });
    }
    Ok(Some(n))
}

fn get_u(v: &Value, key: &'static str) -> Result<Option<u64>, LlmError> {
    opt(v, key)
}

fn req(v: &Value, key: &'static str) -> Result<u64, LlmError> {
    let x = opt(v, key)?.ok_or(LlmError::Missing(key))?;
    if x == 0 {
        return Err(LlmError::Invalid { key, why: "must be positive".into() });
    }
    Ok(x)
}

/// Parameters the dimensions describe, estimated in f64 (no overflow) and generously.
fn params_estimate(layers: u64, hidden: u64, vocab: u64, attention: &Attention, ffn: u64, moe: Option<&Moe>) -> f64 {
    let f = |x: u64| x as f64;
    let h = f(hidden);
    let att = match *attention {
        Attention::Gqa { heads, kv_heads, head_dim } => h * f(head_dim) * 2.0 * f(heads + kv_heads),
        Attention::Mla { heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim } => {
            let qk = f(heads) * f(qk_nope_head_dim + qk_rope_head_dim);
            let q = if q_lora_rank == 0 { h * qk } else { h * f(q_lora_rank) + f(q_lora_rank) * qk };
            q + h * f(kv_lora_rank + qk_rope_head_dim)
                + f(kv_lora_rank) * f(heads) * f(qk_nope_head_dim + v_head_dim)
                + f(heads) * f(v_head_dim) * h
        }
    };
    let ffn = 3.0 * h * f(ffn);
    let moe = moe.map_or(0.0, |m| 3.0 * h * (f(m.experts) + f(m.shared)) * f(m.expert_ffn) + 3.0 * h * f(m.dense_ffn) + h * f(m.experts));
    f(layers) * (att + ffn + moe) + 2.0 * f(vocab) * h
}

/// The longest context: `max_position_embeddings`, or with `rope_scaling` (`factor` and
/// `original_max_position_embeddings`) the scaled length when larger; None without the key.
fn max_context(v: &Value) -> Result<Option<u64>, LlmError> {
    let Some(mpe) = opt(v, "max_position_embeddings")? else { return Ok(None) };
    let scaled = match v.get("rope_scaling").filter(|r| r.is_object()) {
        Some(r) => {
            let factor = r.get("factor").and_then(Value::as_f64).filter(|f| f.is_finite() && *f >= 1.0 && *f <= 1e3);
            match (factor, opt(r, "original_max_position_embeddings")?) {
                (Some(f), Some(orig)) => (orig as f64 * f) as u64,
                _ => 0,
            }
        }
        None => 0,
    };
    Ok(Some(mpe.max(scaled)))
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
        let kv_heads = get_u(v, "num_key_value_heads")?.unwrap_or(heads);
        let tie = v.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false);
        let head_dim = get_u(v, "head_dim")?;
        if hidden % heads != 0 && head_dim.is_none() {
            return Err(LlmError::Invalid { key: "hidden_size", why: format!("{hidden} is not divisible by num_attention_heads {heads}") });
        }
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(LlmError::Invalid {
                key: "num_key_value_heads",
                why: format!("{kv_heads} must divide num_attention_heads {heads}"),
            });
        }
        let gqa = || Attention::Gqa { heads, kv_heads, head_dim: head_dim.unwrap_or(hidden / heads) };
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
                    dense_ffn: get_u(v, "intermediate_size")?.unwrap_or(0),
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
                (gqa(), 0, Some(moe), get_u(v, "sliding_window")?)
            }
            "deepseek_v3" | "deepseek_v2" | "kimi_k2" => {
                let att = Attention::Mla {
                    heads,
                    q_lora_rank: get_u(v, "q_lora_rank")?.unwrap_or(0),
                    kv_lora_rank: req(v, "kv_lora_rank")?,
                    qk_nope_head_dim: req(v, "qk_nope_head_dim")?,
                    qk_rope_head_dim: req(v, "qk_rope_head_dim")?,
                    v_head_dim: req(v, "v_head_dim")?,
                };
                let moe = Moe {
                    experts: req(v, "n_routed_experts")?,
                    active: req(v, "num_experts_per_tok")?,
                    shared: get_u(v, "n_shared_experts")?.unwrap_or(0),
                    expert_ffn: req(v, "moe_intermediate_size")?,
                    first_k_dense: get_u(v, "first_k_dense_replace")?.unwrap_or(0),
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
        let params = params_estimate(layers, hidden, vocab, &attention, ffn, moe.as_ref());
        if params > MAX_PARAMS {
            return Err(LlmError::TooLarge { params });
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
            max_context: max_context(v)?,
        })
    }
}
