//! Transformer shapes: Hugging Face config import, per-layer operations (weights, FLOPs, KV
//! cache), quantized sizes and memory footprints. Knows nothing about clusters.

use serde_json::Value;

/// Attention flavour of a model.
#[derive(Clone, Debug, PartialEq)]
pub enum Attention {
    /// Grouped-query attention (MHA when `kv_heads == heads`).
    Gqa {
        /// Query heads.
        heads: u64,
        /// Key/value heads.
        kv_heads: u64,
        /// Dimension per head.
        head_dim: u64,
    },
    /// DeepSeek multi-head latent attention with a compressed (latent) KV cache.
    Mla {
        /// Query heads.
        heads: u64,
        /// Rank of the query down-projection.
        q_lora_rank: u64,
        /// Rank of the latent KV.
        kv_lora_rank: u64,
        /// Non-rotary query/key dimension per head.
        qk_nope_head_dim: u64,
        /// Rotary dimension (shared key part).
        qk_rope_head_dim: u64,
        /// Value dimension per head.
        v_head_dim: u64,
    },
}

/// Feed-forward configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub experts: u64,
    /// Experts selected per token.
    pub active: u64,
    /// Always-on shared experts.
    pub shared: u64,
    /// Intermediate size of one expert.
    pub expert_ffn: u64,
    /// The first `first_k_dense` layers use a dense FFN of `dense_ffn`.
    pub first_k_dense: u64,
    /// Intermediate size of the dense FFN layers.
    pub dense_ffn: u64,
}

/// A transformer, as far as the twin needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// Preset id or the config path it came from.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Hugging Face `model_type`.
    pub arch: String,
    /// Decoder layers.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// Vocabulary size.
    pub vocab: u64,
    /// Attention configuration.
    pub attention: Attention,
    /// Dense FFN intermediate size (when `moe` is `None`).
    pub ffn: u64,
    /// Mixture of experts, if any.
    pub moe: Option<Moe>,
    /// Sliding-window size on alternating layers (gpt-oss), if any.
    pub sliding_window: Option<u64>,
    /// Input embeddings shared with the LM head.
    pub tie_embeddings: bool,
}

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

    /// Query heads.
    pub fn heads(&self) -> u64 {
        match self.attention {
            Attention::Gqa { heads, .. } | Attention::Mla { heads, .. } => heads,
        }
    }

    /// KV heads (MLA: the latent cache is one shared "head").
    pub fn kv_heads(&self) -> u64 {
        match self.attention {
            Attention::Gqa { kv_heads, .. } => kv_heads,
            Attention::Mla { .. } => 1,
        }
    }

    /// KV-cache bytes per token per full-attention layer (bf16 cache).
    pub fn kv_bytes_per_token_layer(&self) -> u64 {
        match self.attention {
            Attention::Gqa { kv_heads, head_dim, .. } => 2 * kv_heads * head_dim * 2,
            Attention::Mla { kv_lora_rank, qk_rope_head_dim, .. } => (kv_lora_rank + qk_rope_head_dim) * 2,
        }
    }

    /// The per-head (non-MLA) attention of an MLA model, `None` for other attentions.
    pub fn mla_per_head(&self) -> Option<MlaPerHead> {
        match self.attention {
            Attention::Mla { heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, .. } => {
                let dims = qk_nope_head_dim + qk_rope_head_dim + v_head_dim;
                Some(MlaPerHead { kv_bytes_per_ctx: heads * dims * 2, attn_flops_per_ctx: 2 * heads * dims })
            }
            Attention::Gqa { .. } => None,
        }
    }

    /// Whether layer `i` uses a sliding window (gpt-oss alternates, starting with sliding).
    pub fn layer_window(&self, i: u64) -> Option<u64> {
        self.sliding_window.filter(|_| i % 2 == 0)
    }

    /// KV-cache bytes for the whole model at `context` tokens.
    pub fn kv_bytes(&self, context: u64) -> u64 {
        (0..self.layers).map(|i| self.kv_bytes_per_token_layer() * self.layer_window(i).map_or(context, |w| w.min(context))).sum()
    }

    /// The per-layer operations, in execution order, with the all_sum points tensor parallelism
    /// needs.
    pub fn layer_ops(&self, layer: u64) -> Vec<Op> {
        let h = self.hidden;
        let mut ops = Vec::with_capacity(16);
        ops.push(Op::elementwise("attn_norm", 1));
        match self.attention {
            Attention::Gqa { heads, kv_heads, head_dim } => {
                ops.push(Op::dense("q_proj", h * heads * head_dim, Placement::Sharded));
                ops.push(Op::dense("k_proj", h * kv_heads * head_dim, Placement::Sharded));
                ops.push(Op::dense("v_proj", h * kv_heads * head_dim, Placement::Sharded));
                let qk_norm = if self.arch.starts_with("qwen3") { 2 } else { 0 };
                ops.push(Op::elementwise("rope+norms", 2 + qk_norm));
                ops.push(Op::attention("sdpa", self.kv_bytes_per_token_layer(), true, 4 * heads * head_dim, self.layer_window(layer)));
                ops.push(Op::dense("o_proj", heads * head_dim * h, Placement::Sharded));
            }
            Attention::Mla { heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim } => {
                let qk = qk_nope_head_dim + qk_rope_head_dim;
                if q_lora_rank > 0 {
                    ops.push(Op::dense("q_a_proj", h * q_lora_rank, Placement::Replicated));
                    ops.push(Op::elementwise("q_a_norm", 1));
                    ops.push(Op::dense("q_b_proj", q_lora_rank * heads * qk, Placement::Sharded));
                } else {
                    ops.push(Op::dense("q_proj", h * heads * qk, Placement::Sharded));
                }
                ops.push(Op::dense("kv_a_proj_with_mqa", h * (kv_lora_rank + qk_rope_head_dim), Placement::Replicated));
                ops.push(Op::elementwise("kv_a_norm+rope", 3));
                let mut kv_b =
                    Op::dense("kv_b_proj (absorbed)", kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim), Placement::Sharded);
                kv_b.expands_latent = true;
                ops.push(kv_b);
                let flops = 2 * heads * (2 * kv_lora_rank + qk_rope_head_dim);
                let mut sdpa = Op::attention("sdpa (latent)", self.kv_bytes_per_token_layer(), false, flops, None);
                sdpa.mla_expanded = Some(MlaExpanded {
                    attn_flops_per_ctx: 2 * heads * (qk_nope_head_dim + v_head_dim + qk_rope_head_dim),
                    score_bytes_per_ctx: 4 * 2 * heads,
                });
                sdpa.mla_per_head = self.mla_per_head();
                ops.push(sdpa);
                ops.push(Op::dense("o_proj", heads * v_head_dim * h, Placement::Sharded));
            }
        }
        ops.push(Op::all_sum());
        ops.push(Op::elementwise("residual+ffn_norm", 2));
        match &self.moe {
            Some(m) if layer >= m.first_k_dense => {
                ops.push(Op::dense("router", h * m.experts, Placement::Replicated));
                let routing_kernels = if self.arch.starts_with("deepseek") || self.arch == "kimi_k2" { 6 } else { 3 };
                ops.push(Op::elementwise("routing", routing_kernels));
                ops.push(Op::experts("experts (gather_qmm x3)", 3 * h * m.expert_ffn, 3, m.experts, m.active));
                ops.push(Op::elementwise("act+combine", 3));
                if m.shared > 0 {
                    ops.push(Op::dense("shared_expert", 3 * h * m.expert_ffn * m.shared, Placement::Sharded));
                    ops.push(Op::elementwise("shared act", 2));
                }
            }
            Some(m) => {
                ops.push(Op::dense("mlp gate+up+down", 3 * h * m.dense_ffn, Placement::Sharded));
                ops.push(Op::elementwise("act", 1));
                // gate, up and down are three matmul kernels.
                if let Some(op) = ops.iter_mut().rev().find(|o| o.class == OpClass::Dense) {
                    op.kernels = 3;
                }
            }
            None => {
                ops.push(Op::dense("mlp gate+up+down", 3 * h * self.ffn, Placement::Sharded));
                if let Some(op) = ops.iter_mut().rev().find(|o| o.class == OpClass::Dense) {
                    op.kernels = 3;
                }
                ops.push(Op::elementwise("act", 1));
            }
        }
        ops.push(Op::all_sum());
        ops.push(Op::elementwise("residual", 1));
        ops
    }

    /// Operations after the last layer: final norm, LM head, sampling.
    pub fn head_ops(&self) -> Vec<Op> {
        vec![
            Op::elementwise("final_norm", 1),
            Op::dense("lm_head", self.hidden * self.vocab, Placement::Replicated),
            Op::elementwise("sample", 2),
        ]
    }

    /// Parameters of the input embedding table.
    pub fn embedding_params(&self) -> u64 {
        self.hidden * self.vocab
    }

    /// Total parameters (embeddings, all layers, LM head unless tied).
    pub fn total_params(&self) -> u64 {
        let layers: u64 = (0..self.layers).map(|l| self.layer_ops(l).iter().map(Op::total_params).sum::<u64>()).sum();
        let head = if self.tie_embeddings { 0 } else { self.hidden * self.vocab };
        self.embedding_params() + layers + head
    }

    /// Parameters read per decoded token (active experts only, no embedding table).
    pub fn active_params(&self) -> u64 {
        let layers: u64 = (0..self.layers).map(|l| self.layer_ops(l).iter().map(|o| o.active_params()).sum::<u64>()).sum();
        layers + self.hidden * self.vocab
    }

    /// Stored bytes of all weights under `quant`.
    pub fn weight_bytes(&self, quant: &QuantSpec) -> f64 {
        let layers: f64 =
            (0..self.layers).map(|l| self.layer_ops(l).iter().map(|o| quant.bytes(o.class, o.total_params())).sum::<f64>()).sum();
        let head = if self.tie_embeddings { 0.0 } else { quant.bytes(OpClass::Dense, self.hidden * self.vocab) };
        quant.bytes(OpClass::Dense, self.embedding_params()) + layers + head
    }
}

/// What kind of kernel an operation is; each class has its own calibrated efficiency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// Quantized matrix-vector / matrix-matrix on a dense weight.
    Dense,
    /// MoE gather kernels over routed experts.
    Expert,
    /// Attention over the KV cache.
    Attention,
    /// Norms, rope, activations, residual adds, routing: launch cost only.
    Elementwise,
    /// A tensor-parallel all_sum point (no compute).
    AllSum,
}

/// Where an operation's weights live under tensor parallelism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Split 1/N across ranks.
    Sharded,
    /// A full copy on every rank.
    Replicated,
}

/// One operation of a layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// Name for traces.
    pub name: &'static str,
    /// Kernel class.
    pub class: OpClass,
    /// Weight parameters (for `Expert`: per expert).
    pub params: u64,
    /// Kernel launches.
    pub kernels: u32,
    /// Tensor-parallel placement.
    pub placement: Placement,
    /// KV-cache bytes read per token of context (attention only).
    pub kv_bytes_per_ctx: u64,
    /// Whether the KV cache is split across ranks (GQA by KV head) or replicated (MLA latent).
    pub kv_sharded: bool,
    /// Attention FLOPs per query token per context token.
    pub attn_flops_per_ctx: u64,
    /// Sliding window, if the layer has one.
    pub window: Option<u64>,
    /// `(experts, active)` for routed experts.
    pub experts: Option<(u64, u64)>,
    /// MLA only: the multi-token form of a runtime that expands the latent cache into per-head
    /// keys and values instead of absorbing the up-projections (see [`MlaExpanded`]).
    pub mla_expanded: Option<MlaExpanded>,
    /// MLA only: the attention of llama.cpp's path for GGUFs converted without MLA metadata (see
    /// [`MlaPerHead`]).
    pub mla_per_head: Option<MlaPerHead>,
    /// MLA only: this op's weights are the latent up-projections, which the expanded form applies
    /// to every cached position of a multi-token step (FLOPs scale with the context, not the
    /// step's tokens).
    pub expands_latent: bool,
}

/// MLA run as plain multi-head attention over a per-head cache: llama.cpp's `deepseek2` graph
/// for a GGUF converted without MLA metadata (`hparams.is_mla()` false) up-projects each new
/// token's latent into per-head keys (nope + rope) and values, caches those, and attends with
/// every head over them in every step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaPerHead {
    /// KV-cache bytes per token (bf16/f16): `heads x (nope + rope + v) x 2`.
    pub kv_bytes_per_ctx: u64,
    /// Attention FLOPs per query token per context token: `2 x heads x (nope + rope + v)`.
    pub attn_flops_per_ctx: u64,
}

/// How an MLA attention runs a multi-token step in the expanded form. mlx-lm's DeepSeek V3 (also
/// used for Kimi K2; mlx-lm 0.32.2 `deepseek_v3.py`) absorbs the up-projections into the query
/// only for one-token steps (`L == 1`); for a prefill chunk it computes `k = embed_q(latent)` and
/// `v = unembed_out(latent)` over the whole cache, runs the attention over 128-dim keys and values,
/// and adds the rope scores as a separately materialised mask.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaExpanded {
    /// Attention FLOPs per query token per context token: `2 x heads x (nope + v + rope)`.
    pub attn_flops_per_ctx: u64,
    /// Bytes per query token per context token of the rope-score mask (written by a matmul,
    /// read and rewritten by the masking `where`, read by the attention kernel: 4 passes of 2
    /// bytes per head), streamed by two extra kernels.
    pub score_bytes_per_ctx: u64,
}

impl Op {
    /// An op with no weights, KV cache or experts: the fields every constructor starts from.
    fn base(name: &'static str, class: OpClass, kernels: u32, placement: Placement) -> Self {
        Op {
            name,
            class,
            params: 0,
            kernels,
            placement,
            kv_bytes_per_ctx: 0,
            kv_sharded: false,
            attn_flops_per_ctx: 0,
            window: None,
            experts: None,
            mla_expanded: None,
            mla_per_head: None,
            expands_latent: false,
        }
    }

    /// A dense weight op.
    pub fn dense(name: &'static str, params: u64, placement: Placement) -> Self {
        Op { params, ..Op::base(name, OpClass::Dense, 1, placement) }
    }

    /// An elementwise op (launch cost only).
    pub fn elementwise(name: &'static str, kernels: u32) -> Self {
        Op::base(name, OpClass::Elementwise, kernels, Placement::Replicated)
    }

    /// Attention over the KV cache (heads sharded under tensor parallelism; the cache itself
    /// split by KV head when `kv_sharded`, replicated otherwise).
    pub fn attention(name: &'static str, kv_bytes_per_ctx: u64, kv_sharded: bool, attn_flops_per_ctx: u64, window: Option<u64>) -> Self {
        Op { kv_bytes_per_ctx, kv_sharded, attn_flops_per_ctx, window, ..Op::base(name, OpClass::Attention, 1, Placement::Sharded) }
    }

    /// Routed experts: `params_per_expert` weights per expert, `active` of `experts` selected
    /// per token, `kernels` gather kernels.
    pub fn experts(name: &'static str, params_per_expert: u64, kernels: u32, experts: u64, active: u64) -> Self {
        Op { params: params_per_expert, experts: Some((experts, active)), ..Op::base(name, OpClass::Expert, kernels, Placement::Sharded) }
    }

    fn all_sum() -> Self {
        Op::base("all_sum", OpClass::AllSum, 0, Placement::Replicated)
    }

    /// All parameters stored for this op.
    pub fn total_params(&self) -> u64 {
        match self.experts {
            Some((e, _)) => self.params * e,
            None => self.params,
        }
    }

    /// Parameters read when one token passes through.
    pub fn active_params(&self) -> u64 {
        match self.experts {
            Some((_, k)) => self.params * k,
            None => self.params,
        }
    }

    /// Distinct experts touched by a batch of `tokens` tokens (expected value under uniform
    /// routing): `E (1 - (1 - k/E)^T)`.
    pub fn experts_touched(&self, tokens: u64) -> f64 {
        match self.experts {
            Some((e, k)) => {
                let (e, k) = (e as f64, k as f64);
                e * (1.0 - (1.0 - k / e).powf(tokens as f64))
            }
            None => 1.0,
        }
    }

    /// Whether the op's cost depends on the cached context: attention, and the MLA latent
    /// up-projections (which the expanded prefill form runs over the whole cache).
    pub fn depends_on_context(&self) -> bool {
        self.class == OpClass::Attention || self.expands_latent
    }

    /// Context length this op attends over at position `ctx`.
    pub fn effective_context(&self, ctx: u64) -> u64 {
        self.window.map_or(ctx, |w| w.min(ctx))
    }
}

/// The file-format family of a quantization: which runtimes can load it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuantFamily {
    /// MLX safetensors (exo, mlx-lm).
    Mlx,
    /// GGUF (llama.cpp, ollama).
    Gguf,
    /// Either (e.g. bf16, mxfp4).
    Any,
}

impl QuantFamily {
    /// Catalog id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Mlx => "mlx",
            Self::Gguf => "gguf",
            Self::Any => "any",
        }
    }

    /// Whether a runtime that loads `format` can load this family.
    pub fn loads_on(self, format: QuantFamily) -> bool {
        self == QuantFamily::Any || self == format
    }
}

/// A quantization format.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantSpec {
    /// Id, e.g. `mlx-4bit`.
    pub id: String,
    /// Which runtimes load it.
    pub family: QuantFamily,
    /// Stored bits per weight (with scales and biases).
    pub bits: f64,
    /// Bits per weight of routed experts, if different.
    pub expert_bits: Option<f64>,
    /// Where the figure comes from.
    pub source: String,
}

impl QuantSpec {
    /// Bits per weight for a kernel class.
    pub fn bits_for(&self, class: OpClass) -> f64 {
        match class {
            OpClass::Expert => self.expert_bits.unwrap_or(self.bits),
            _ => self.bits,
        }
    }

    /// Stored bytes of `params` weights of a class.
    pub fn bytes(&self, class: OpClass, params: u64) -> f64 {
        params as f64 * self.bits_for(class) / 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dsv3() -> ModelSpec {
        ModelSpec::from_hf_config(
            "dsv3",
            "dsv3",
            &json!({"model_type":"deepseek_v3","num_hidden_layers":61,"hidden_size":7168,"num_attention_heads":128,
                "num_key_value_heads":128,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,
                "v_head_dim":128,"n_routed_experts":256,"num_experts_per_tok":8,"n_shared_experts":1,"moe_intermediate_size":2048,
                "intermediate_size":18432,"first_k_dense_replace":3,"vocab_size":129280}),
        )
        .unwrap()
    }

    #[test]
    fn deepseek_v3_parameter_counts_match_published() {
        let m = dsv3();
        let total = m.total_params() as f64 / 1e9;
        assert!((total - 671.0).abs() < 2.0, "total {total} B");
        let active = m.active_params() as f64 / 1e9;
        assert!((active - 37.0).abs() < 1.5, "active {active} B");
        assert_eq!(m.kv_bytes(1), 70_272); // 68.6 KiB per token, all layers
    }

    #[test]
    fn missing_key_is_named() {
        let e = ModelSpec::from_hf_config("x", "x", &json!({"model_type":"llama","hidden_size":8})).unwrap_err();
        assert_eq!(e.to_string(), "config is missing `num_hidden_layers`");
    }

    #[test]
    fn experts_touched_grows_with_batch() {
        let m = dsv3();
        let op = m.layer_ops(10).into_iter().find(|o| o.class == OpClass::Expert).unwrap();
        assert!((op.experts_touched(1) - 8.0).abs() < 1e-9);
        assert!(op.experts_touched(2048) > 255.9);
    }
}
