//! Import of a Hugging Face `config.json` into a [`ModelSpec`].

use serde_json::Value;

use super::model::{Attention, GlobalAttention, LayerFfn, LayerMixer, LinearAttention, Mamba2, ModelSpec, Moe, SparseAttention};

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
    #[error("unsupported model_type `{0}` (supported: {SUPPORTED})")]
    UnsupportedArch(String),
}

/// The `model_type`s the importer reads (a multimodal wrapper's `text_config` names its own,
/// `_text` suffix dropped).
pub const SUPPORTED: &str = "llama, mistral, phi3, mixtral, qwen2, qwen3, qwen3_moe, qwen3_vl, qwen3_vl_moe, qwen3_next, qwen3_5, qwen3_5_moe, deepseek_v3, deepseek_v32, glm_moe_dsa, kimi_k2, gpt_oss, glm4_moe, minimax_m2, gemma2, gemma3, llama4, nemotron_h, gemma4, mimo_v2_flash";

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
    ("attention_chunk_size", 1_000_000_000),
    ("max_position_embeddings", 100_000_000),
    ("original_max_position_embeddings", 100_000_000),
];
/// Bound of a key without its own entry in [`BOUNDS`] (ranks and head dimensions of MLA).
const MAX_OTHER: u64 = 1_000_000;
/// Parameters (estimated from the dimensions, before any arithmetic on them) above which a
/// config is refused: 1,000 times the largest published models.
pub const MAX_PARAMS: f64 = 1e15;
/// Keys whose 0 means "none" (every other key must be positive when present).
const ZERO_MEANS_NONE: &[&str] = &[
    "q_lora_rank",
    "n_shared_experts",
    "first_k_dense_replace",
    "intermediate_size",
    "shared_intermediate_size",
    "shared_expert_intermediate_size",
];

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
fn params_estimate(
    layers: u64,
    hidden: u64,
    vocab: u64,
    attention: &Attention,
    ffn: u64,
    moe: Option<&Moe>,
    linear: Option<&LinearAttention>,
) -> f64 {
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
    let moe = moe.map_or(0.0, |m| {
        3.0 * h * (f(m.experts) * f(m.expert_ffn) + f(m.shared) * f(m.shared_ffn)) + 3.0 * h * f(m.dense_ffn) + h * f(m.experts)
    });
    // A linear-attention layer's projections and its state's elements (bounded alike: the
    // state is allocated per sequence).
    let lin = linear.map_or(0.0, |l| {
        let (k, v) = (f(l.key_heads) * f(l.key_head_dim), f(l.value_heads) * f(l.value_head_dim));
        h * (2.0 * k + 3.0 * v) + v * f(l.key_head_dim) + (2.0 * k + v) * f(l.conv_kernel)
    });
    f(layers) * (att + ffn + moe + lin) + 2.0 * f(vocab) * h
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

/// The mixer each `layer_types` entry names (Hugging Face's per-layer list in newer configs).
fn mixer_of(kind: &str, window: Option<u64>, chunk: Option<u64>) -> Result<LayerMixer, LlmError> {
    let needs = |key: &'static str| LlmError::Invalid { key: "layer_types", why: format!("`{kind}` layers need `{key}`") };
    match kind {
        "full_attention" => Ok(LayerMixer::Full),
        "sliding_attention" => window.map(LayerMixer::Sliding).ok_or_else(|| needs("sliding_window")),
        "chunked_attention" => chunk.map(LayerMixer::Chunked).ok_or_else(|| needs("attention_chunk_size")),
        "linear_attention" => Ok(LayerMixer::Linear),
        other => Err(LlmError::Invalid {
            key: "layer_types",
            why: format!("unknown layer type `{other}` (known: full_attention, sliding_attention, chunked_attention, linear_attention)"),
        }),
    }
}

/// The per-layer mixers from `layer_types` when the config lists them (one per layer), else
/// from `default(layer)`.
fn mixers(
    v: &Value,
    layers: u64,
    window: Option<u64>,
    chunk: Option<u64>,
    default: impl Fn(u64) -> LayerMixer,
) -> Result<Vec<LayerMixer>, LlmError> {
    match v.get("layer_types").filter(|x| !x.is_null()) {
        Some(Value::Array(kinds)) => {
            if kinds.len() as u64 != layers {
                return Err(LlmError::Invalid {
                    key: "layer_types",
                    why: format!("lists {} layers, num_hidden_layers is {layers}", kinds.len()),
                });
            }
            kinds
                .iter()
                .map(|k| {
                    let k = k.as_str().ok_or(LlmError::Invalid { key: "layer_types", why: format!("{k} is not a string") })?;
                    mixer_of(k, window, chunk)
                })
                .collect()
        }
        Some(x) => Err(LlmError::Invalid { key: "layer_types", why: format!("{x} is not a list") }),
        None => Ok((0..layers).map(default).collect()),
    }
}

/// A list of 0/1 integers, one per layer (`no_rope_layers`, `attn_type_list`), or None.
fn flags(v: &Value, key: &'static str, layers: u64) -> Result<Option<Vec<bool>>, LlmError> {
    let Some(x) = v.get(key).filter(|x| !x.is_null()) else { return Ok(None) };
    let bad = |why: String| LlmError::Invalid { key, why };
    let list = x.as_array().ok_or_else(|| bad(format!("{x} is not a list")))?;
    if list.len() as u64 != layers {
        return Err(bad(format!("lists {} layers, num_hidden_layers is {layers}", list.len())));
    }
    list.iter()
        .map(|f| match f.as_u64() {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(bad(format!("{f} is not 0 or 1"))),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A boolean key, `default` when absent.
fn flag(v: &Value, key: &str, default: bool) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// Checks a fraction key (`partial_rotary_factor`, at the top or in `rope_parameters`): the
/// rotary part of a head changes no weight or cache size, but a value outside (0, 1] is a
/// broken file.
fn check_fraction(v: &Value, key: &'static str) -> Result<(), LlmError> {
    for x in [v.get(key), v.get("rope_parameters").and_then(|r| r.get(key))].into_iter().flatten().filter(|x| !x.is_null()) {
        match x.as_f64() {
            Some(f) if f > 0.0 && f <= 1.0 => {}
            _ => return Err(LlmError::Invalid { key, why: format!("{x} is not a fraction in (0, 1]") }),
        }
    }
    Ok(())
}

/// Refuses a non-empty `mlp_only_layers` (dense layers at listed positions, not modelled).
fn no_mlp_only_layers(v: &Value) -> Result<(), LlmError> {
    match v.get("mlp_only_layers") {
        Some(Value::Array(a)) if !a.is_empty() => Err(LlmError::Invalid {
            key: "mlp_only_layers",
            why: "dense layers at listed positions are not modelled (only `decoder_sparse_step`)".into(),
        }),
        _ => Ok(()),
    }
}

/// Shared expert count and size from a `*shared*_intermediate_size` key (0 or absent: none).
fn shared_expert(v: &Value, key: &'static str) -> Result<(u64, u64), LlmError> {
    Ok(match get_u(v, key)? {
        Some(n) if n > 0 => (1, n),
        _ => (0, 0),
    })
}

/// A routed MoE with the fields every family shares (no shared expert, every layer MoE,
/// softmax top-k routing).
/// The DeepSeek-style MoE block DeepSeek V3 / Kimi K2 and GLM-4.x share: the first
/// `first_k_dense_replace` layers dense, then routed experts top-k plus `n_shared_experts`
/// shared ones of the expert size, sigmoid routing.
fn first_k_dense_sigmoid_moe(v: &Value) -> Result<Moe, LlmError> {
    let expert_ffn = req(v, "moe_intermediate_size")?;
    Ok(Moe {
        shared: get_u(v, "n_shared_experts")?.unwrap_or(0),
        shared_ffn: expert_ffn,
        first_k_dense: get_u(v, "first_k_dense_replace")?.unwrap_or(0),
        dense_ffn: req(v, "intermediate_size")?,
        sigmoid_routing: true,
        ..routed(req(v, "n_routed_experts")?, req(v, "num_experts_per_tok")?, expert_ffn)
    })
}

fn routed(experts: u64, active: u64, expert_ffn: u64) -> Moe {
    Moe {
        experts,
        active,
        shared: 0,
        expert_ffn,
        first_k_dense: 0,
        dense_ffn: 0,
        shared_ffn: 0,
        sparse_step: 1,
        sigmoid_routing: false,
        latent: 0,
    }
}

/// Reads what each family's keys say beyond the common ones: its FFN or MoE, its per-layer
/// mixers, its attention's extras.
fn read_family(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    let heads = spec.heads();
    match spec.arch.as_str() {
        // Phi-3/Phi-4 (`phi3`) fuse q, k and v and gate and up into one matrix each: the same
        // shapes as Llama's.
        "llama" | "mistral" | "phi3" | "qwen2" | "qwen3" | "qwen3_vl" => spec.ffn = req(v, "intermediate_size")?,
        "gemma2" => {
            // Gemma 2: sliding-window and global layers alternate, the first local (Hugging
            // Face `Gemma2`: layer `i` slides when `(i + 1) % 2 != 0`); norms after attention
            // and after the FFN; soft-capped logits instead of query/key norms.
            spec.ffn = req(v, "intermediate_size")?;
            let window = req(v, "sliding_window")?;
            spec.mixers =
                mixers(v, layers, Some(window), None, |i| if (i + 1) % 2 != 0 { LayerMixer::Sliding(window) } else { LayerMixer::Full })?;
            spec.post_norms = true;
        }
        "gemma3" => {
            // Local layers with a sliding window, a global one every `sliding_window_pattern`
            // (6: 5 local to 1 global; Hugging Face `is_sliding = (i + 1) % pattern != 0`).
            spec.ffn = req(v, "intermediate_size")?;
            let window = req(v, "sliding_window")?;
            let pattern = get_u(v, "sliding_window_pattern")?.unwrap_or(6);
            let local_or_global = |i: u64| if (i + 1) % pattern != 0 { LayerMixer::Sliding(window) } else { LayerMixer::Full };
            spec.mixers = mixers(v, layers, Some(window), None, local_or_global)?;
            spec.qk_norm = true;
            spec.post_norms = true;
        }
        "qwen3_moe" | "qwen3_vl_moe" => {
            no_mlp_only_layers(v)?;
            spec.moe = Some(Moe {
                dense_ffn: get_u(v, "intermediate_size")?.unwrap_or(0),
                sparse_step: get_u(v, "decoder_sparse_step")?.unwrap_or(1),
                ..routed(req(v, "num_experts")?, req(v, "num_experts_per_tok")?, req(v, "moe_intermediate_size")?)
            });
        }
        "qwen3_next" | "qwen3_5_moe" | "qwen3_5" => read_gated_deltanet(spec, v)?,
        "mixtral" => {
            // Mixtral: Mistral's attention with `num_local_experts` routed SwiGLU experts of
            // `intermediate_size` (softmax top-k, no shared expert) on every layer; a sliding
            // window only when the config sets one (8x7B and 8x22B v0.1: null).
            spec.moe = Some(routed(req(v, "num_local_experts")?, req(v, "num_experts_per_tok")?, req(v, "intermediate_size")?));
            if let Some(w) = get_u(v, "sliding_window")? {
                spec.mixers = mixers(v, layers, Some(w), None, |_| LayerMixer::Sliding(w))?;
            }
        }
        "gpt_oss" => {
            spec.moe = Some(routed(req(v, "num_local_experts")?, req(v, "num_experts_per_tok")?, req(v, "intermediate_size")?));
            if let Some(w) = get_u(v, "sliding_window")? {
                // Alternating, starting with a sliding layer.
                spec.mixers = mixers(v, layers, Some(w), None, |i| if i % 2 == 0 { LayerMixer::Sliding(w) } else { LayerMixer::Full })?;
            }
        }
        "deepseek_v3" | "deepseek_v2" | "kimi_k2" | "deepseek_v32" | "glm_moe_dsa" => {
            spec.attention = Attention::Mla {
                heads,
                q_lora_rank: get_u(v, "q_lora_rank")?.unwrap_or(0),
                kv_lora_rank: req(v, "kv_lora_rank")?,
                qk_nope_head_dim: req(v, "qk_nope_head_dim")?,
                qk_rope_head_dim: req(v, "qk_rope_head_dim")?,
                v_head_dim: req(v, "v_head_dim")?,
            };
            spec.moe = Some(first_k_dense_sigmoid_moe(v)?);
            if matches!(spec.arch.as_str(), "deepseek_v32" | "glm_moe_dsa") {
                // DeepSeek Sparse Attention: DeepSeek-V3.2's MLA and MoE with a lightning
                // indexer; GLM-5 (`glm_moe_dsa`) the same blocks at its own sizes.
                spec.sparse_attention = Some(SparseAttention {
                    top_k: req(v, "index_topk")?,
                    index_heads: req(v, "index_n_heads")?,
                    index_head_dim: req(v, "index_head_dim")?,
                });
            }
        }
        "glm4_moe" => {
            // GLM-4.5/4.6/4.7: the first `first_k_dense_replace` layers dense, then routed
            // experts plus shared ones of the expert size, DeepSeek-style sigmoid routing with
            // a correction bias; q, k and v with biases (`attention_bias`).
            spec.moe = Some(first_k_dense_sigmoid_moe(v)?);
            spec.qkv_bias = flag(v, "attention_bias", false);
        }
        "minimax_m2" => read_minimax_m2(spec, v)?,
        "llama4" => read_llama4(spec, v)?,
        "nemotron_h" => read_nemotron_h(spec, v)?,
        "gemma4" => read_gemma4(spec, v)?,
        "mimo_v2_flash" => read_mimo_v2_flash(spec, v)?,
        other => return Err(LlmError::UnsupportedArch(other.to_string())),
    }
    Ok(())
}

/// Qwen3-Next and Qwen3.5: routed experts with one gated shared expert, Gated DeltaNet layers
/// with a gated full-attention layer every `full_attention_interval`-th.
fn read_gated_deltanet(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    no_mlp_only_layers(v)?;
    if spec.arch == "qwen3_5" {
        // The dense Qwen3.5 models (Qwen3.5-27B): the same mixers, one SwiGLU FFN a layer.
        spec.ffn = req(v, "intermediate_size")?;
    } else {
        let (shared, shared_ffn) = shared_expert(v, "shared_expert_intermediate_size")?;
        spec.moe = Some(Moe {
            shared,
            shared_ffn,
            dense_ffn: get_u(v, "intermediate_size")?.unwrap_or(0),
            sparse_step: get_u(v, "decoder_sparse_step")?.unwrap_or(1),
            ..routed(req(v, "num_experts")?, req(v, "num_experts_per_tok")?, req(v, "moe_intermediate_size")?)
        });
    }
    spec.linear = Some(LinearAttention {
        key_heads: req(v, "linear_num_key_heads")?,
        key_head_dim: req(v, "linear_key_head_dim")?,
        value_heads: req(v, "linear_num_value_heads")?,
        value_head_dim: req(v, "linear_value_head_dim")?,
        conv_kernel: req(v, "linear_conv_kernel_dim")?,
    });
    // Full attention on every `full_attention_interval`-th layer (Hugging Face:
    // `(i + 1) % interval == 0`), Gated DeltaNet on the others.
    let interval = get_u(v, "full_attention_interval")?.unwrap_or(4);
    spec.mixers = mixers(v, layers, None, None, |i| if (i + 1) % interval == 0 { LayerMixer::Full } else { LayerMixer::Linear })?;
    spec.attn_output_gate = flag(v, "attn_output_gate", true);
    Ok(())
}

/// MiniMax-M2/M2.1.
fn read_minimax_m2(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    // Every layer full attention (`attn_type_list` 1; MiniMax-01's 0 is a lightning
    // linear attention this twin does not model), no shared expert.
    if flags(v, "attn_type_list", layers)?.is_some_and(|f| f.iter().any(|full| !full)) {
        return Err(LlmError::Invalid {
            key: "attn_type_list",
            why: "lists linear (lightning) attention layers, which are not modelled; only full attention (1)".into(),
        });
    }
    let (shared, shared_ffn) = shared_expert(v, "shared_intermediate_size")?;
    let scoring = v.get("scoring_func").and_then(Value::as_str).unwrap_or("softmax");
    spec.moe = Some(Moe {
        shared,
        shared_ffn,
        sigmoid_routing: scoring == "sigmoid",
        ..routed(req(v, "num_local_experts")?, req(v, "num_experts_per_tok")?, req(v, "intermediate_size")?)
    });
    Ok(())
}

/// Nemotron-H (Nemotron-H 8B/47B/56B, Nemotron 3 Nano): each layer is ONE block, a norm, one
/// mixer or feed-forward and the residual (Hugging Face `NemotronHBlock`), its kind from
/// `hybrid_override_pattern` (`M` Mamba-2, `*` attention, `-` MLP, `E` MoE) or the
/// `layers_block_type` list (`mamba`, `attention`, `mlp`, `moe`). MLPs and experts are
/// squared-ReLU up and down projections (`mlp_hidden_act` relu2); the MoE routes by sigmoid
/// with a correction bias, plus shared experts of `moe_shared_expert_intermediate_size`; with
/// `moe_latent_size` (Nemotron 3 Super, Ultra) the routed experts run in that latent space.
fn read_nemotron_h(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    let kinds: Vec<char> = match (v.get("hybrid_override_pattern").and_then(Value::as_str), v.get("layers_block_type")) {
        (Some(p), _) => p.chars().collect(),
        (None, Some(Value::Array(list))) => list
            .iter()
            .map(|k| match k.as_str() {
                Some("mamba") => Ok('M'),
                Some("attention") => Ok('*'),
                Some("mlp") => Ok('-'),
                Some("moe") => Ok('E'),
                _ => Err(LlmError::Invalid { key: "layers_block_type", why: format!("{k} is not mamba, attention, mlp or moe") }),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(LlmError::Missing("hybrid_override_pattern")),
    };
    if kinds.len() as u64 != layers {
        return Err(LlmError::Invalid {
            key: "hybrid_override_pattern",
            why: format!("lists {} layers, num_hidden_layers is {layers}", kinds.len()),
        });
    }
    if let Some(bad) = kinds.iter().find(|c| !"M*-E".contains(**c)) {
        return Err(LlmError::Invalid { key: "hybrid_override_pattern", why: format!("unknown block `{bad}` (known: M, *, -, E)") });
    }
    spec.mixers = kinds
        .iter()
        .map(|c| match c {
            'M' => LayerMixer::Mamba,
            '*' => LayerMixer::Full,
            _ => LayerMixer::NoMixer,
        })
        .collect();
    spec.layer_ffns = Some(
        kinds
            .iter()
            .map(|c| match c {
                '-' => LayerFfn::Dense,
                'E' => LayerFfn::Moe,
                _ => LayerFfn::None,
            })
            .collect(),
    );
    let ssm_elem = match v.get("mamba_ssm_cache_dtype").and_then(Value::as_str) {
        Some("bfloat16" | "float16") => 2,
        _ => 4,
    };
    spec.mamba = Some(Mamba2 {
        heads: req(v, "mamba_num_heads")?,
        head_dim: req(v, "mamba_head_dim")?,
        state_size: req(v, "ssm_state_size")?,
        groups: get_u(v, "n_groups")?.unwrap_or(1),
        conv_kernel: req(v, "conv_kernel")?,
        state_elem_bytes: ssm_elem,
    });
    if let (Attention::Gqa { heads, kv_heads, .. }, Some(d)) = (spec.attention.clone(), get_u(v, "attention_head_dim")?) {
        spec.attention = Attention::Gqa { heads, kv_heads, head_dim: d };
    }
    spec.ffn_matrices = match v.get("mlp_hidden_act").and_then(Value::as_str) {
        Some("relu2") | None => 2,
        Some(_) => 3,
    };
    spec.ffn = if kinds.contains(&'-') { req(v, "intermediate_size")? } else { get_u(v, "intermediate_size")?.unwrap_or(0) };
    if kinds.contains(&'E') {
        let (shared, shared_ffn) = match get_u(v, "n_shared_experts")? {
            Some(n) if n > 0 => (n, req(v, "moe_shared_expert_intermediate_size")?),
            _ => (0, 0),
        };
        spec.moe = Some(Moe {
            shared,
            shared_ffn,
            dense_ffn: spec.ffn,
            sigmoid_routing: true,
            // Nemotron 3 Super and Ultra: the experts work in a `moe_latent_size` space.
            latent: get_u(v, "moe_latent_size")?.unwrap_or(0),
            ..routed(req(v, "n_routed_experts")?, req(v, "num_experts_per_tok")?, req(v, "moe_intermediate_size")?)
        });
    }
    Ok(())
}

/// Gemma 4 (mlx-lm 0.32.2 `gemma4_text.py`; llama.cpp as vendored in xllamacpp 2026.10.11549):
/// sliding and full-attention layers by `layer_types`, the full ones with their own KV heads and
/// head dimension and (`attention_k_eq_v`) no value projection; with `enable_moe_block` every
/// layer runs its dense GeGLU MLP and routed GeGLU experts side by side (llama.cpp calls the
/// MLP the shared expert; softmax over the selected experts). Per-layer input embeddings and
/// KV sharing across layers (the small Gemma 4 models) are not modelled and refused by key.
fn read_gemma4(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    for key in ["hidden_size_per_layer_input", "num_kv_shared_layers"] {
        if v.get(key).and_then(Value::as_u64).is_some_and(|n| n > 0) {
            let why = "per-layer input embeddings and KV shared across layers (small Gemma 4 models) are not modelled".into();
            return Err(LlmError::Invalid { key, why });
        }
    }
    let window = req(v, "sliding_window")?;
    spec.mixers = mixers(v, layers, Some(window), None, |i| if (i + 1) % 6 != 0 { LayerMixer::Sliding(window) } else { LayerMixer::Full })?;
    spec.qk_norm = true;
    spec.post_norms = true;
    let ffn = req(v, "intermediate_size")?;
    if let Attention::Gqa { kv_heads, head_dim, .. } = spec.attention {
        spec.global_attention = Some(GlobalAttention {
            kv_heads: get_u(v, "num_global_key_value_heads")?.unwrap_or(kv_heads),
            head_dim: get_u(v, "global_head_dim")?.unwrap_or(head_dim),
            k_eq_v: flag(v, "attention_k_eq_v", false),
        });
    }
    if flag(v, "enable_moe_block", false) {
        spec.moe = Some(Moe {
            shared: 1,
            shared_ffn: ffn,
            ..routed(req(v, "num_experts")?, req(v, "top_k_experts")?, req(v, "moe_intermediate_size")?)
        });
    } else {
        spec.ffn = ffn;
    }
    Ok(())
}

/// A head of `k` key and `v` value dimensions as one of their mean: the query, key, value and
/// output projections, the cache and attention's FLOPs are all sums over the two, so the mean
/// counts every one exactly. Refuses an odd sum (no integer mean).
fn mean_head_dim(k: u64, v: u64, key: &'static str) -> Result<u64, LlmError> {
    if (k + v) % 2 != 0 {
        return Err(LlmError::Invalid { key, why: format!("key heads of {k} and value heads of {v}: an odd sum is not modelled") });
    }
    Ok((k + v) / 2)
}

/// Xiaomi MiMo-V2-Flash (mlx-lm 0.32.2 `mimo_v2_flash.py`): `hybrid_layer_pattern` 1 marks a
/// sliding-window layer (`sliding_window` tokens, `swa_*` heads), 0 a full one (the top-level
/// heads); keys of `head_dim`, values of `v_head_dim`; `moe_layer_freq` 0 a dense SwiGLU of
/// `intermediate_size`, 1 routed experts (sigmoid top-k, shared ones only when
/// `n_shared_experts` is set). Attention sink biases (one scalar per head) are not counted.
fn read_mimo_v2_flash(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    let pattern = flags(v, "hybrid_layer_pattern", layers)?.ok_or(LlmError::Missing("hybrid_layer_pattern"))?;
    let moe_layers = flags(v, "moe_layer_freq", layers)?.ok_or(LlmError::Missing("moe_layer_freq"))?;
    let window = req(v, "sliding_window")?;
    spec.mixers = pattern.iter().map(|&swa| if swa { LayerMixer::Sliding(window) } else { LayerMixer::Full }).collect();
    // The model keeps one geometry and names the full layers' own: here the sliding layers'.
    let full_heads = req(v, "num_attention_heads")?;
    let swa_heads = get_u(v, "swa_num_attention_heads")?.unwrap_or(full_heads);
    if swa_heads != full_heads {
        let why = format!("{swa_heads} query heads on sliding layers and {full_heads} on full ones: not modelled");
        return Err(LlmError::Invalid { key: "swa_num_attention_heads", why });
    }
    let full_dim = mean_head_dim(req(v, "head_dim")?, req(v, "v_head_dim")?, "v_head_dim")?;
    let swa_dim = mean_head_dim(req(v, "swa_head_dim")?, req(v, "swa_v_head_dim")?, "swa_v_head_dim")?;
    spec.attention = Attention::Gqa { heads: swa_heads, kv_heads: req(v, "swa_num_key_value_heads")?, head_dim: swa_dim };
    spec.global_attention = Some(GlobalAttention { kv_heads: req(v, "num_key_value_heads")?, head_dim: full_dim, k_eq_v: false });
    // Dense layers first, then experts on every layer: the only order the MoE block models.
    let first_k_dense = moe_layers.iter().take_while(|m| !**m).count() as u64;
    if moe_layers[first_k_dense as usize..].iter().any(|m| !*m) {
        return Err(LlmError::Invalid { key: "moe_layer_freq", why: "dense layers after the first MoE layer are not modelled".into() });
    }
    let expert_ffn = req(v, "moe_intermediate_size")?;
    let shared = get_u(v, "n_shared_experts")?.unwrap_or(0);
    spec.moe = Some(Moe {
        shared,
        shared_ffn: expert_ffn,
        first_k_dense,
        dense_ffn: req(v, "intermediate_size")?,
        sigmoid_routing: true,
        ..routed(req(v, "n_routed_experts")?, req(v, "num_experts_per_tok")?, expert_ffn)
    });
    Ok(())
}

/// Llama 4 (Scout, Maverick).
fn read_llama4(spec: &mut ModelSpec, v: &Value) -> Result<(), LlmError> {
    let layers = spec.layers;
    // Routed experts (top-1) plus one shared expert of the same size on every
    // `interleave_moe_layer_step`-th layer, dense layers of `intermediate_size_mlp`
    // between (Maverick); RoPE layers attend inside `attention_chunk_size` chunks,
    // NoPE layers (`no_rope_layers` 0, by default every 4th) globally.
    let expert_ffn = req(v, "intermediate_size")?;
    spec.moe = Some(Moe {
        shared: 1,
        shared_ffn: expert_ffn,
        dense_ffn: get_u(v, "intermediate_size_mlp")?.unwrap_or(0),
        sparse_step: get_u(v, "interleave_moe_layer_step")?.unwrap_or(1),
        ..routed(req(v, "num_local_experts")?, req(v, "num_experts_per_tok")?, expert_ffn)
    });
    let chunk = get_u(v, "attention_chunk_size")?;
    let rope = flags(v, "no_rope_layers", layers)?.unwrap_or_else(|| (0..layers).map(|i| (i + 1) % 4 != 0).collect());
    let chunked = |i: u64| match chunk {
        Some(c) if rope[i as usize] => LayerMixer::Chunked(c),
        _ => LayerMixer::Full,
    };
    spec.mixers = mixers(v, layers, None, chunk, chunked)?;
    Ok(())
}

impl ModelSpec {
    /// Imports a model from a Hugging Face `config.json` value (a multimodal wrapper's
    /// `text_config` is the language model: vision towers are not modelled). Supports dense
    /// (llama, mistral, qwen2/3, gemma3), MoE (qwen3_moe, mixtral, gpt_oss, glm4_moe, minimax_m2,
    /// llama4), MLA (deepseek_v3, kimi_k2; with DeepSeek Sparse Attention deepseek_v32 and
    /// glm_moe_dsa), sliding-window and chunked attention, and the
    /// Gated DeltaNet hybrids (qwen3_next, qwen3_5, qwen3_5_moe).
    pub fn from_hf_config(id: &str, name: &str, top: &Value) -> Result<Self, LlmError> {
        // Some configs (kimi_k2, multimodal wrappers) nest the language model config; keys a
        // wrapper keeps at its top (tie_word_embeddings in Qwen3.5's and Gemma 3's) still count.
        let v = top.get("text_config").filter(|t| t.is_object()).unwrap_or(top);
        let arch = v.get("model_type").or_else(|| top.get("model_type")).and_then(Value::as_str).ok_or(LlmError::Missing("model_type"))?;
        // Wrappers name their text model `<arch>_text` (gemma3_text, llama4_text, qwen3_5_moe_text).
        let arch = arch.strip_suffix("_text").unwrap_or(arch).to_string();
        // Nemotron 3 Ultra's config gives its depth only as the `layers_block_type` list.
        let listed = v.get("layers_block_type").and_then(Value::as_array).map(|l| l.len() as u64).filter(|n| *n > 0);
        let layers = match (opt(v, "num_hidden_layers")?, listed) {
            (Some(n), _) => n,
            (None, Some(n)) if n <= bound("num_hidden_layers") => n,
            _ => req(v, "num_hidden_layers")?,
        };
        let hidden = req(v, "hidden_size")?;
        let vocab = req(v, "vocab_size")?;
        let heads = req(v, "num_attention_heads")?;
        let kv_heads = get_u(v, "num_key_value_heads")?.unwrap_or(heads);
        let tie_default = matches!(arch.as_str(), "gemma2" | "gemma3" | "gemma4"); // Gemma's config classes tie by default.
        let tie = v.get("tie_word_embeddings").or_else(|| top.get("tie_word_embeddings")).and_then(Value::as_bool).unwrap_or(tie_default);
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
        check_fraction(v, "partial_rotary_factor")?;
        let gqa = || Attention::Gqa { heads, kv_heads, head_dim: head_dim.unwrap_or(hidden / heads) };
        let all_full = || vec![LayerMixer::Full; layers as usize];
        let mut spec = ModelSpec {
            id: id.into(),
            name: name.into(),
            arch: arch.clone(),
            layers,
            hidden,
            vocab,
            attention: gqa(),
            ffn: 0,
            moe: None,
            mixers: all_full(),
            linear: None,
            sparse_attention: None,
            global_attention: None,
            mamba: None,
            layer_ffns: None,
            ffn_matrices: 3,
            attn_output_gate: false,
            qkv_bias: false,
            qk_norm: arch.starts_with("qwen3") || flag(v, "use_qk_norm", false),
            post_norms: false,
            tie_embeddings: tie,
            max_context: max_context(v)?,
        };
        read_family(&mut spec, v)?;
        if let Some(m) = &spec.moe {
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
        if spec.mixers.contains(&LayerMixer::Linear) && spec.linear.is_none() {
            return Err(LlmError::Invalid { key: "layer_types", why: format!("`linear_attention` layers are not modelled for {arch}") });
        }
        let params = params_estimate(layers, hidden, vocab, &spec.attention, spec.ffn, spec.moe.as_ref(), spec.linear.as_ref());
        if params > MAX_PARAMS {
            return Err(LlmError::TooLarge { params });
        }
        Ok(spec)
    }
}
