//! Model shapes: attention flavour, MoE, the per-layer operations a forward step runs, KV
//! cache and parameter counts.

use super::ops::{MlaExpanded, MlaPerHead, Op, Placement};
use super::quant::{QuantShape, QuantSpec, TensorFormat, TensorRole};

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

/// KV-cache bytes per token of a grouped-query attention layer with `kv_heads` heads of
/// `head_dim`: keys and values, bf16.
fn gqa_kv_bytes_per_token(kv_heads: u64, head_dim: u64) -> u64 {
    2 * kv_heads * head_dim * 2
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
    /// Intermediate size of one shared expert (DeepSeek's equals `expert_ffn`; Qwen3-Next's
    /// `shared_expert_intermediate_size`, Llama 4's `intermediate_size`).
    pub shared_ffn: u64,
    /// Every `sparse_step`-th layer (from the first) is MoE, the others dense (Qwen's
    /// `decoder_sparse_step`, Llama 4's `interleave_moe_layer_step`; 1: every layer).
    pub sparse_step: u64,
    /// Width of the latent space the routed experts work in (0: the hidden size): Nemotron 3
    /// Super/Ultra's `moe_latent_size`, where a projection takes the hidden state down before
    /// the experts and one takes their sum back up (mlx-lm 0.32.2 `nemotron_h.py`
    /// `fc1_latent_proj`/`fc2_latent_proj`); the router and the shared experts see the hidden
    /// state.
    pub latent: u64,
    /// Scores by sigmoid with a selection bias (DeepSeek V3, Kimi K2, GLM-4.5+, MiniMax-M2):
    /// sigmoid, bias, top-k, gather, normalise and scale kernels rather than a softmax top-k.
    pub sigmoid_routing: bool,
}

impl Moe {
    /// Whether layer `layer` runs routed experts: past the first `first_k_dense` layers and on
    /// every `sparse_step`-th layer (Hugging Face: `(layer + 1) % step == 0`).
    pub fn is_moe_layer(&self, layer: u64) -> bool {
        layer >= self.first_k_dense && (layer + 1) % self.sparse_step.max(1) == 0
    }
}

/// How one layer mixes tokens across positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerMixer {
    /// Causal attention over the whole context.
    Full,
    /// Attention over the last `n` tokens (gpt-oss's alternate layers, Gemma 3's local ones):
    /// the cache holds at most `n` tokens.
    Sliding(u64),
    /// Attention inside the current `n`-token chunk only (Llama 4's RoPE layers; MLX's
    /// `ChunkedKVCache` holds at most `n` tokens, FACTS-2026 section C).
    Chunked(u64),
    /// Gated DeltaNet linear attention ([`LinearAttention`]): a fixed recurrent state per
    /// sequence, no KV cache.
    Linear,
    /// A Mamba-2 selective state-space mixer ([`Mamba2`], Nemotron-H): a fixed recurrent state
    /// per sequence, no KV cache.
    Mamba,
    /// No token mixer: the layer is a feed-forward block alone (Nemotron-H's `-` and `E`
    /// layers).
    NoMixer,
}

/// The feed-forward block of one layer where a model lists them per layer (Nemotron-H's
/// `hybrid_override_pattern`); other models derive it from [`Moe::is_moe_layer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerFfn {
    /// No feed-forward block (a mixer-only layer).
    None,
    /// The dense MLP (`intermediate_size`).
    Dense,
    /// The routed experts (and shared ones) of [`Moe`].
    Moe,
}

/// The attention geometry of a model's full-attention layers where it differs from its
/// sliding ones (Gemma 4: `num_global_key_value_heads`, `global_head_dim`, and with
/// `attention_k_eq_v` no value projection, the values taken from the keys' projection; mlx-lm
/// 0.32.2 `gemma4_text.py`). Both keys and values are still cached (they differ after their
/// norms and rope, and MLX and llama.cpp store both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalAttention {
    /// KV heads of a full-attention layer.
    pub kv_heads: u64,
    /// Head dimension of a full-attention layer (queries, keys and values).
    pub head_dim: u64,
    /// The values come from the key projection (no `v_proj` weights).
    pub k_eq_v: bool,
}

/// A Mamba-2 mixer (Nemotron-H's `mamba_*`, `ssm_state_size`, `n_groups`, `conv_kernel` keys):
/// `heads` x `head_dim` channels, each with a `state_size` state, B and C shared by `groups`
/// groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mamba2 {
    /// SSM heads (`mamba_num_heads`).
    pub heads: u64,
    /// Channels per head (`mamba_head_dim`).
    pub head_dim: u64,
    /// State size per channel (`ssm_state_size`).
    pub state_size: u64,
    /// Groups sharing B and C (`n_groups`).
    pub groups: u64,
    /// Width of the causal depthwise convolution (`conv_kernel`).
    pub conv_kernel: u64,
    /// Bytes per SSM state element: 4 for fp32 (`mamba_ssm_cache_dtype` float32, and when the
    /// config is silent), 2 for a 16-bit cache.
    pub state_elem_bytes: u64,
}

impl Mamba2 {
    /// Inner width: heads x head dimension.
    pub fn inner(&self) -> u64 {
        self.heads * self.head_dim
    }

    /// Channels the convolution runs over: x, B and C.
    pub fn conv_dim(&self) -> u64 {
        self.inner() + 2 * self.groups * self.state_size
    }

    /// Width of the input projection: z, x, B, C and one dt per head.
    pub fn in_proj_width(&self) -> u64 {
        2 * self.inner() + 2 * self.groups * self.state_size + self.heads
    }

    /// Recurrent state of one layer for one sequence, bytes: the SSM state [heads, head_dim,
    /// state_size] at [`Self::state_elem_bytes`] plus the convolution's last `conv_kernel - 1`
    /// inputs in bf16.
    pub fn state_bytes(&self) -> u64 {
        self.inner() * self.state_size * self.state_elem_bytes + self.conv_dim() * (self.conv_kernel - 1) * 2
    }

    /// Recurrence FLOPs per token: about 6 per state entry (mlx-lm 0.32.2 `ssm_update_kernel`:
    /// `x dt B` 2, `dA s + ...` 2, `C . s` and its sum 2; llama.cpp's `ggml_ssm_scan` runs the
    /// same recurrence token by token, prefill included), plus the convolution's 2 per weight.
    /// MLX's multi-token form (chunked SSD, 256-token chunks) runs as matrix multiplications
    /// (`Op::recurrence_chunked`) and does about 1.5 times this; the extra half is not counted,
    /// small beside the layer's projections.
    pub fn flops_per_token(&self) -> u64 {
        6 * self.inner() * self.state_size + 2 * self.conv_dim() * self.conv_kernel
    }
}

/// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5: `index_*` keys of config.json): a
/// lightning indexer scores every cached token with `index_heads` small heads of
/// `index_head_dim` over its own per-token key cache, and the MLA attention then runs over the
/// `top_k` best-scored tokens only (DeepSeek-V3.2-Exp report; DeepSeek's reference
/// `inference/model.py`). Decode attention therefore reads at most `top_k` latent entries per
/// layer, while the indexer reads its keys of the whole context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseAttention {
    /// Tokens each query attends to (`index_topk`).
    pub top_k: u64,
    /// Indexer heads (`index_n_heads`).
    pub index_heads: u64,
    /// Indexer head dimension (`index_head_dim`): one key of this size is cached per token per
    /// layer, shared by the indexer heads.
    pub index_head_dim: u64,
}

impl SparseAttention {
    /// Indexer key bytes cached per token per layer, bf16 like the rest of the twin's cache
    /// (a runtime's KV dtype scales it with the latent cache). DeepSeek's reference and vLLM
    /// keep it in FP8 with a scale per key (132 bytes at dimension 128) whatever the main
    /// cache: `engine.kv_cache_dtype = "fp8"` gives that.
    pub fn key_bytes(&self) -> u64 {
        self.index_head_dim * 2
    }

    /// Indexer FLOPs per query token per cached token: a dot product per head
    /// (`2 x index_heads x index_head_dim`), the ReLU and head weighting being elementwise.
    pub fn flops_per_ctx(&self) -> u64 {
        2 * self.index_heads * self.index_head_dim
    }
}

/// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): `linear_*` keys of config.json.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearAttention {
    /// Query/key heads (`linear_num_key_heads`).
    pub key_heads: u64,
    /// Dimension of a query/key head (`linear_key_head_dim`).
    pub key_head_dim: u64,
    /// Value heads (`linear_num_value_heads`).
    pub value_heads: u64,
    /// Dimension of a value head (`linear_value_head_dim`).
    pub value_head_dim: u64,
    /// Width of the causal depthwise convolution (`linear_conv_kernel_dim`).
    pub conv_kernel: u64,
}

impl LinearAttention {
    /// Channels the convolution runs over: q, k and v.
    pub fn conv_dim(&self) -> u64 {
        2 * self.key_heads * self.key_head_dim + self.value_heads * self.value_head_dim
    }

    /// Recurrent state of one layer for one sequence, bytes: the delta-rule matrix S =
    /// [Hv, Dv, Dk] in fp32 (MLX allocates it `mx.float32`; config `mamba_ssm_dtype` float32)
    /// plus the convolution's last `conv_kernel - 1` inputs in bf16 (FACTS-2026 section C:
    /// 2 MiB + 48 KiB per Qwen3-Next layer).
    pub fn state_bytes(&self) -> u64 {
        self.value_heads * self.value_head_dim * self.key_head_dim * 4 + self.conv_dim() * (self.conv_kernel - 1) * 2
    }

    /// Recurrence FLOPs per token: about 7 Hv Dk Dv for the gated delta rule (FACTS-2026
    /// section C, 3.7 MFLOP for Qwen3-Next) plus the convolution's 2 per weight.
    pub fn flops_per_token(&self) -> u64 {
        7 * self.value_heads * self.key_head_dim * self.value_head_dim + 2 * self.conv_dim() * self.conv_kernel
    }
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
    /// How each layer mixes tokens (one entry per layer).
    pub mixers: Vec<LayerMixer>,
    /// The linear attention of [`LayerMixer::Linear`] layers, if any.
    pub linear: Option<LinearAttention>,
    /// DeepSeek Sparse Attention on every attention layer (DeepSeek-V3.2, GLM-5), if any.
    pub sparse_attention: Option<SparseAttention>,
    /// The geometry of full-attention layers where it differs from the sliding ones (Gemma 4).
    pub global_attention: Option<GlobalAttention>,
    /// The Mamba-2 mixer of [`LayerMixer::Mamba`] layers, if any.
    pub mamba: Option<Mamba2>,
    /// The feed-forward block of each layer where the config lists them (Nemotron-H); `None`:
    /// every layer has one, MoE where [`Moe::is_moe_layer`] says, dense elsewhere.
    pub layer_ffns: Option<Vec<LayerFfn>>,
    /// Weight matrices of an MLP or expert: 3 for a gated one (SwiGLU/GeGLU gate, up, down), 2
    /// for an ungated one (Nemotron-H's squared-ReLU up and down).
    pub ffn_matrices: u64,
    /// Full-attention layers gate their output by a sigmoid of a second query-sized projection
    /// (Qwen3-Next, Qwen3.5: `q_proj` doubled).
    pub attn_output_gate: bool,
    /// The q, k and v projections carry biases (GLM-4.5+ `attention_bias`).
    pub qkv_bias: bool,
    /// Per-head RMS norms on queries and keys (Qwen3, GLM-4.5+, MiniMax-M2, Gemma 3, Llama 4).
    pub qk_norm: bool,
    /// Norms after attention and after the FFN besides the usual pre-norms (Gemma 3).
    pub post_norms: bool,
    /// Input embeddings shared with the LM head.
    pub tie_embeddings: bool,
    /// Longest context the model reads, tokens: `max_position_embeddings` (or, with rope
    /// scaling, its factor times `original_max_position_embeddings` when larger); None when the
    /// config does not say.
    pub max_context: Option<u64>,
}

impl ModelSpec {
    /// Query heads.
    pub fn heads(&self) -> u64 {
        match self.attention {
            Attention::Gqa { heads, .. } | Attention::Mla { heads, .. } => heads,
        }
    }

    /// Tokens a chat response opens with before any text a streaming client sees: gpt-oss
    /// answers in OpenAI's harmony format, every response starting `<|channel|>analysis<|message|>`
    /// (tokens 200005, 35644, 200008 in openai-harmony 0.0.8 `src/tests.rs`), which chat servers
    /// parse away (vLLM's and llama.cpp's harmony parsers stream only the text after it as
    /// `reasoning_content`); 0 for every other architecture.
    pub fn chat_header_tokens(&self) -> u64 {
        match self.arch.as_str() {
            "gpt_oss" => 3,
            _ => 0,
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
            Attention::Gqa { kv_heads, head_dim, .. } => gqa_kv_bytes_per_token(kv_heads, head_dim),
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

    /// How layer `i` mixes tokens (full attention past the listed layers).
    pub fn mixer(&self, i: u64) -> LayerMixer {
        self.mixers.get(i as usize).copied().unwrap_or(LayerMixer::Full)
    }

    /// Tokens of KV cache layer `i` holds for a sequence of `context` tokens: all of them, at
    /// most the window or chunk, none on a linear-attention layer.
    pub fn layer_kv_tokens(&self, i: u64, context: u64) -> u64 {
        match self.mixer(i) {
            LayerMixer::Full => context,
            LayerMixer::Sliding(w) | LayerMixer::Chunked(w) => w.min(context),
            LayerMixer::Linear | LayerMixer::Mamba | LayerMixer::NoMixer => 0,
        }
    }

    /// Recurrent state layer `i` holds per sequence, bytes (0 on attention layers).
    pub fn layer_state_bytes(&self, i: u64) -> u64 {
        match (self.mixer(i), self.linear, self.mamba) {
            (LayerMixer::Linear, Some(lin), _) => lin.state_bytes(),
            (LayerMixer::Mamba, _, Some(m)) => m.state_bytes(),
            _ => 0,
        }
    }

    /// The grouped-query geometry of a layer that mixes by `mixer`: (heads, KV heads, head
    /// dimension, values from the key projection); None for MLA.
    fn gqa_geometry(&self, mixer: LayerMixer) -> Option<(u64, u64, u64, bool)> {
        match (&self.attention, self.global_attention) {
            (&Attention::Gqa { heads, .. }, Some(g)) if mixer == LayerMixer::Full => Some((heads, g.kv_heads, g.head_dim, g.k_eq_v)),
            (&Attention::Gqa { heads, kv_heads, head_dim }, _) => Some((heads, kv_heads, head_dim, false)),
            (Attention::Mla { .. }, _) => None,
        }
    }

    /// KV heads of layer `layer`'s GQA attention (a full-attention layer's own geometry), or the
    /// model's ([`Self::kv_heads`]) for other layers.
    pub fn layer_kv_heads(&self, layer: u64) -> u64 {
        self.gqa_geometry(self.mixer(layer)).map_or(self.kv_heads(), |g| g.1)
    }

    /// KV-cache bytes per token of layer `layer` when it attends (bf16 cache): the model's
    /// [`Self::kv_bytes_per_token_layer`], or a full-attention layer's own geometry.
    pub fn layer_kv_bytes_per_token(&self, layer: u64) -> u64 {
        match self.gqa_geometry(self.mixer(layer)) {
            Some((_, kv_heads, head_dim, _)) => gqa_kv_bytes_per_token(kv_heads, head_dim),
            None => self.kv_bytes_per_token_layer(),
        }
    }

    /// The cost mechanisms this model's layers use beyond dense attention and FFNs, by name:
    /// what a calibration row must have exercised before a prediction that rests on them is
    /// called calibrated (`estimate::envelope`).
    pub fn mechanisms(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |m: &'static str| {
            if !out.contains(&m) {
                out.push(m);
            }
        };
        if matches!(self.attention, Attention::Mla { .. }) {
            add("MLA latent attention");
        }
        for m in &self.mixers {
            match m {
                LayerMixer::Sliding(_) => add("sliding-window attention"),
                LayerMixer::Chunked(_) => add("chunked attention"),
                LayerMixer::Linear => add("Gated DeltaNet recurrence"),
                LayerMixer::Mamba => add("Mamba-2 scan"),
                LayerMixer::Full | LayerMixer::NoMixer => {}
            }
        }
        if self.sparse_attention.is_some() {
            add("sparse-attention indexer");
        }
        if let Some(m) = &self.moe {
            add("routed experts");
            if m.latent > 0 {
                add("latent-space experts");
            }
        }
        out
    }

    /// Cache bytes per token of an attention layer besides its KV: the sparse-attention
    /// indexer's key (0 without one). Never split under tensor parallelism: every rank runs
    /// the whole indexer (vLLM builds its projections as replicated layers).
    pub fn index_bytes_per_token_layer(&self) -> u64 {
        self.sparse_attention.map_or(0, |s| s.key_bytes())
    }

    /// KV-cache bytes for the whole model at `context` tokens, the sparse-attention indexer's
    /// keys included (recurrent state excluded: see [`Self::state_bytes`]).
    pub fn kv_bytes(&self, context: u64) -> u64 {
        let index = self.index_bytes_per_token_layer();
        (0..self.layers).map(|i| (self.layer_kv_bytes_per_token(i) + index) * self.layer_kv_tokens(i, context)).sum()
    }

    /// Recurrent state of one sequence over all layers, bytes: fixed, whatever the context.
    pub fn state_bytes(&self) -> u64 {
        (0..self.layers).map(|i| self.layer_state_bytes(i)).sum()
    }

    /// The per-layer operations, in execution order, with the all_sum points tensor parallelism
    /// needs.
    pub fn layer_ops(&self, layer: u64) -> Vec<Op> {
        let h = self.hidden;
        let mut ops = Vec::with_capacity(16);
        let mixer = self.mixer(layer);
        if mixer != LayerMixer::NoMixer {
            ops.push(Op::elementwise("attn_norm", 1));
            match (mixer, self.linear, self.mamba) {
                (LayerMixer::Linear, Some(lin), _) => Self::push_gated_deltanet(&mut ops, h, lin),
                (LayerMixer::Mamba, _, Some(m)) => Self::push_mamba2(&mut ops, h, m),
                (mixer, _, _) => self.push_attention(&mut ops, mixer),
            }
            if self.post_norms {
                ops.push(Op::elementwise("post_attn_norm", 1));
            }
            ops.push(Op::all_sum());
        }
        let ffn = self.layer_ffn(layer);
        if ffn == LayerFfn::None {
            ops.push(Op::elementwise("residual", 1));
            return ops;
        }
        let (norm, kernels) = if mixer == LayerMixer::NoMixer { ("ffn_norm", 1) } else { ("residual+ffn_norm", 2) };
        ops.push(Op::elementwise(norm, kernels));
        let mats = self.ffn_matrices;
        match (&self.moe, ffn) {
            (Some(m), LayerFfn::Moe) => {
                ops.push(Op::dense("router", TensorRole::Router, h * m.experts, Placement::Replicated));
                let routing_kernels = if m.sigmoid_routing { 6 } else { 3 };
                ops.push(Op::elementwise("routing", routing_kernels));
                let name = if mats == 2 { "experts (gather_qmm x2)" } else { "experts (gather_qmm x3)" };
                // Latent projections: replicated under tensor parallelism (assumption: small,
                // 2 x hidden x latent, and every rank needs the whole latent for its experts).
                let expert_in = if m.latent > 0 { m.latent } else { h };
                if m.latent > 0 {
                    ops.push(Op::dense("fc1_latent_proj", TensorRole::Mlp, h * m.latent, Placement::Replicated));
                }
                ops.push(Op::experts(name, mats * expert_in * m.expert_ffn, mats as u32, m.experts, m.active));
                ops.push(Op::elementwise("act+combine", 3));
                if m.latent > 0 {
                    ops.push(Op::dense("fc2_latent_proj", TensorRole::Mlp, m.latent * h, Placement::Replicated));
                }
                if m.shared > 0 {
                    ops.push(Op::dense("shared_expert", TensorRole::SharedExpert, mats * h * m.shared_ffn * m.shared, Placement::Sharded));
                    ops.push(Op::elementwise("shared act", 2));
                }
            }
            (moe, _) => {
                let ffn = moe.as_ref().map_or(self.ffn, |m| m.dense_ffn);
                // Each weight matrix (gate, up, down; up and down ungated) is one matmul kernel.
                let name = if mats == 2 { "mlp up+down" } else { "mlp gate+up+down" };
                let mut mlp = Op::dense(name, TensorRole::Mlp, mats * h * ffn, Placement::Sharded);
                mlp.kernels = mats as u32;
                ops.push(mlp);
                ops.push(Op::elementwise("act", 1));
            }
        }
        if self.post_norms {
            ops.push(Op::elementwise("post_ffn_norm", 1));
        }
        ops.push(Op::all_sum());
        ops.push(Op::elementwise("residual", 1));
        ops
    }

    /// The feed-forward block of layer `layer`: as listed, else MoE where [`Moe::is_moe_layer`]
    /// says and dense elsewhere.
    pub fn layer_ffn(&self, layer: u64) -> LayerFfn {
        if let Some(list) = &self.layer_ffns {
            return list.get(layer as usize).copied().unwrap_or(LayerFfn::None);
        }
        match &self.moe {
            Some(m) if m.is_moe_layer(layer) => LayerFfn::Moe,
            _ => LayerFfn::Dense,
        }
    }

    /// A Mamba-2 layer (Hugging Face `NemotronHMamba2Mixer`): one input projection to z, x, B,
    /// C and dt, the causal depthwise convolution over x, B and C, the selective scan over the
    /// fixed state, a gated RMS norm and the output projection. Its weights take the
    /// attention's role, as the Gated DeltaNet's do.
    fn push_mamba2(ops: &mut Vec<Op>, h: u64, m: Mamba2) {
        ops.push(Op::dense("in_proj (z x B C dt)", TensorRole::AttnQ, h * m.in_proj_width(), Placement::Sharded));
        // Its own weights: the convolution's with its bias, and A_log, D and dt_bias per head.
        let params = m.conv_dim() * (m.conv_kernel + 1) + 3 * m.heads;
        // Kernels: the convolution with its activation, dt's softplus, the scan, the gated
        // norm's gate and norm.
        let mut scan = Op::recurrent("mamba2 (conv+scan)", params, m.state_bytes(), m.flops_per_token(), m.state_size, 5);
        // MLX runs a multi-token step as the chunked SSD's matrix multiplications (mlx-lm 0.32.2
        // `ssm_attn`), not as its one-token kernel in a loop.
        scan.recurrence_chunked = true;
        ops.push(scan);
        ops.push(Op::elementwise("gated norm", 2));
        ops.push(Op::dense("out_proj", TensorRole::AttnQ, m.inner() * h, Placement::Sharded));
    }

    /// The attention of a layer that mixes by `mixer` (full, sliding or chunked).
    fn push_attention(&self, ops: &mut Vec<Op>, mixer: LayerMixer) {
        let h = self.hidden;
        match self.attention {
            Attention::Gqa { .. } => {
                let (heads, kv_heads, head_dim, k_eq_v) = self.gqa_geometry(mixer).expect("a GQA model");
                // An output gate doubles the query projection (Qwen3-Next's q_proj emits the
                // query and the gate); biases add one weight per output.
                let gate = if self.attn_output_gate { 2 } else { 1 };
                let bias = |n: u64| if self.qkv_bias { n } else { 0 };
                let (q, kv) = (heads * head_dim, kv_heads * head_dim);
                ops.push(Op::dense("q_proj", TensorRole::AttnQ, h * q * gate + bias(q), Placement::Sharded));
                let kv_op = |name, role| Op { kv_heads, ..Op::dense(name, role, h * kv + bias(kv), Placement::Sharded) };
                ops.push(kv_op("k_proj", TensorRole::AttnK));
                if !k_eq_v {
                    ops.push(kv_op("v_proj", TensorRole::AttnV));
                }
                let qk_norm = if self.qk_norm { 2 } else { 0 };
                ops.push(Op::elementwise("rope+norms", 2 + qk_norm));
                let window = match mixer {
                    LayerMixer::Sliding(w) => Some(w),
                    _ => None,
                };
                let mut sdpa = Op::attention("sdpa", gqa_kv_bytes_per_token(kv_heads, head_dim), true, 4 * heads * head_dim, window);
                sdpa.kv_heads = kv_heads;
                if let LayerMixer::Chunked(c) = mixer {
                    sdpa.chunk = Some(c);
                }
                ops.push(sdpa);
                if self.attn_output_gate {
                    // sigmoid(gate) * attention output.
                    ops.push(Op::elementwise("output gate", 2));
                }
                ops.push(Op::dense("o_proj", TensorRole::AttnOutput, heads * head_dim * h, Placement::Sharded));
            }
            Attention::Mla { heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim } => {
                let qk = qk_nope_head_dim + qk_rope_head_dim;
                if q_lora_rank > 0 {
                    ops.push(Op::dense("q_a_proj", TensorRole::AttnLatent, h * q_lora_rank, Placement::Replicated));
                    ops.push(Op::elementwise("q_a_norm", 1));
                    ops.push(Op::dense("q_b_proj", TensorRole::AttnLatent, q_lora_rank * heads * qk, Placement::Sharded));
                } else {
                    ops.push(Op::dense("q_proj", TensorRole::AttnQ, h * heads * qk, Placement::Sharded));
                }
                if let Some(dsa) = self.sparse_attention {
                    self.push_indexer(ops, dsa, q_lora_rank);
                }
                ops.push(Op::dense(
                    "kv_a_proj_with_mqa",
                    TensorRole::AttnLatent,
                    h * (kv_lora_rank + qk_rope_head_dim),
                    Placement::Replicated,
                ));
                ops.push(Op::elementwise("kv_a_norm+rope", 3));
                let mut kv_b = Op::dense(
                    "kv_b_proj (absorbed)",
                    TensorRole::AttnLatent,
                    kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim),
                    Placement::Sharded,
                );
                kv_b.expands_latent = true;
                ops.push(kv_b);
                let flops = 2 * heads * (2 * kv_lora_rank + qk_rope_head_dim);
                let mut sdpa = Op::attention("sdpa (latent)", self.kv_bytes_per_token_layer(), false, flops, None);
                // Under sparse attention each query attends to the indexer's top-k tokens (the
                // cache itself keeps every token: `layer_kv_tokens`).
                sdpa.sparse_top_k = self.sparse_attention.map(|d| d.top_k);
                sdpa.mla_expanded = Some(MlaExpanded {
                    attn_flops_per_ctx: 2 * heads * (qk_nope_head_dim + v_head_dim + qk_rope_head_dim),
                    score_bytes_per_ctx: 4 * 2 * heads,
                });
                sdpa.mla_per_head = self.mla_per_head();
                ops.push(sdpa);
                ops.push(Op::dense("o_proj", TensorRole::AttnOutput, heads * v_head_dim * h, Placement::Sharded));
            }
        }
    }

    /// The lightning indexer of DeepSeek Sparse Attention (DeepSeek's reference `Indexer`): a
    /// query projection from the query latent (`wq_b`, or from the hidden state without one),
    /// one key and per-head weights from the hidden state (`wk`, `weights_proj`), the key's
    /// norm and rope, the scores of every cached token (`index_heads` dot products each, ReLU,
    /// weighted sum over heads) and the top-k selection. Replicated under tensor parallelism:
    /// every rank scores every head (vLLM's `Indexer` uses replicated linear layers).
    fn push_indexer(&self, ops: &mut Vec<Op>, dsa: SparseAttention, q_lora_rank: u64) {
        let h = self.hidden;
        let q_in = if q_lora_rank > 0 { q_lora_rank } else { h };
        ops.push(Op::dense("indexer wq_b", TensorRole::AttnLatent, q_in * dsa.index_heads * dsa.index_head_dim, Placement::Replicated));
        ops.push(Op::dense(
            "indexer wk+weights_proj",
            TensorRole::AttnLatent,
            h * (dsa.index_head_dim + dsa.index_heads),
            Placement::Replicated,
        ));
        ops.push(Op::elementwise("indexer k_norm+rope", 3));
        let mut scores = Op::attention("indexer scores", dsa.key_bytes(), false, dsa.flops_per_ctx(), None);
        scores.placement = Placement::Replicated;
        ops.push(scores);
        ops.push(Op::elementwise("indexer relu+weights+top-k", 3));
    }

    /// A Gated DeltaNet layer (Hugging Face / mlx-lm `Qwen3NextGatedDeltaNet`): q, k, v and the
    /// output gate z from one projection, the decay and update rates a and b from another, a
    /// causal depthwise convolution, the delta-rule recurrence over the fixed state, a gated
    /// RMS norm and the output projection. Its weights have no tensor role of their own: they
    /// take the attention's (`AttnQ`: the file type's default in llama.cpp's rules, MLX's
    /// attention class).
    fn push_gated_deltanet(ops: &mut Vec<Op>, h: u64, lin: LinearAttention) {
        let (k, v) = (lin.key_heads * lin.key_head_dim, lin.value_heads * lin.value_head_dim);
        ops.push(Op::dense("in_proj_qkvz", TensorRole::AttnQ, h * (2 * k + 2 * v), Placement::Sharded));
        ops.push(Op::dense("in_proj_ba", TensorRole::AttnQ, h * 2 * lin.value_heads, Placement::Sharded));
        // Its own weights: the convolution's, plus A_log and dt_bias per value head.
        let params = lin.conv_dim() * lin.conv_kernel + 2 * lin.value_heads;
        // Kernels counted from the layer's equations: the convolution with its activation, the
        // two L2 norms of q and k, the decay (one compiled kernel in mlx-lm), beta's sigmoid,
        // the recurrence, the gated norm's norm and gate.
        ops.push(Op::recurrent("gated_delta (conv+recurrence)", params, lin.state_bytes(), lin.flops_per_token(), lin.key_head_dim, 8));
        ops.push(Op::dense("out_proj", TensorRole::AttnQ, v * h, Placement::Sharded));
    }

    /// Operations after the last layer: final norm, LM head, sampling.
    pub fn head_ops(&self) -> Vec<Op> {
        vec![
            Op::elementwise("final_norm", 1),
            Op::dense("lm_head", TensorRole::LmHead, self.hidden * self.vocab, Placement::Replicated),
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

    /// Parameters read per decoded token (active experts only, no embedding table; the LM head
    /// included).
    pub fn active_params(&self) -> u64 {
        let layers: u64 = (0..self.layers).map(|l| self.layer_ops(l).iter().map(|o| o.active_params()).sum::<u64>()).sum();
        layers + self.hidden * self.vocab
    }

    /// The shape facts a quantization's rules look at.
    pub fn quant_shape(&self) -> QuantShape {
        let (heads, kv_heads, out_in) = match self.attention {
            Attention::Gqa { heads, kv_heads, head_dim } => (heads, kv_heads, heads * head_dim),
            Attention::Mla { heads, v_head_dim, .. } => (heads, heads, heads * v_head_dim),
        };
        QuantShape {
            layers: self.layers,
            experts: self.moe.as_ref().map_or(0, |m| m.experts),
            gqa: heads / kv_heads.max(1),
            llama_70b: self.arch == "llama" && self.layers == 80,
            tied: self.tie_embeddings,
            hidden: self.hidden,
            attn_out_in: out_in,
            ffn: self.moe.as_ref().map_or(self.ffn, |m| m.dense_ffn),
            expert_ffn: self.moe.as_ref().map_or(self.ffn, |m| m.expert_ffn),
            ffn_matrices: self.ffn_matrices,
        }
    }

    /// [`ModelSpec::layer_ops`] with every weight op's stored format under `quant`.
    pub fn quantized_layer_ops(&self, layer: u64, quant: &QuantSpec) -> Vec<Op> {
        let shape = self.quant_shape();
        let mut ops = self.layer_ops(layer);
        for op in &mut ops {
            if let Some(role) = op.role {
                op.format = quant.format(role, layer, &shape);
            }
        }
        ops
    }

    /// [`ModelSpec::head_ops`] with the LM head's stored format under `quant` (a tied head reads
    /// the embedding table, in the embedding's format).
    pub fn quantized_head_ops(&self, quant: &QuantSpec) -> Vec<Op> {
        let mut ops = self.head_ops();
        let f = if self.tie_embeddings { self.embedding_format(quant) } else { self.format_of(quant, TensorRole::LmHead) };
        for op in &mut ops {
            if op.role.is_some() {
                op.format = f;
            }
        }
        ops
    }

    /// Stored format of the input embedding table under `quant`.
    pub fn embedding_format(&self, quant: &QuantSpec) -> TensorFormat {
        self.format_of(quant, TensorRole::Embedding)
    }

    fn format_of(&self, quant: &QuantSpec, role: TensorRole) -> TensorFormat {
        quant.format(role, 0, &self.quant_shape())
    }

    /// Stored bytes of all weights under `quant`.
    pub fn weight_bytes(&self, quant: &QuantSpec) -> f64 {
        let layers: f64 = (0..self.layers)
            .map(|l| self.quantized_layer_ops(l, quant).iter().map(|o| o.weight_bytes(o.total_params() as f64)).sum::<f64>())
            .sum();
        let head = if self.tie_embeddings {
            0.0
        } else {
            self.quantized_head_ops(quant).iter().map(|o| o.weight_bytes(o.total_params() as f64)).sum::<f64>()
        };
        let emb = self.embedding_params() as f64 * self.embedding_format(quant).bits / 8.0;
        emb + layers + head
    }

    /// Stored bytes per tensor class under `quant` (norm weights included, at f32).
    pub fn bytes_by_class(&self, quant: &QuantSpec) -> Vec<(super::quant::TensorClass, f64)> {
        use super::quant::TensorClass;
        let mut out: Vec<(TensorClass, f64)> = TensorClass::ALL.iter().map(|&c| (c, 0.0)).collect();
        let mut add = |c: TensorClass, b: f64| out.iter_mut().find(|x| x.0 == c).expect("every class").1 += b;
        for l in 0..self.layers {
            for o in self.quantized_layer_ops(l, quant) {
                if let Some(role) = o.role {
                    add(role.class(), o.weight_bytes(o.total_params() as f64));
                }
            }
        }
        if !self.tie_embeddings {
            add(TensorClass::LmHead, (self.hidden * self.vocab) as f64 * self.format_of(quant, TensorRole::LmHead).bits / 8.0);
        }
        add(TensorClass::Embedding, self.embedding_params() as f64 * self.embedding_format(quant).bits / 8.0);
        // Two norms per layer plus the final norm, hidden-sized, f32 in GGUF (bf16 in MLX: a
        // difference of kilobytes).
        add(TensorClass::Norm, ((2 * self.layers + 1) * self.hidden * 4) as f64);
        out
    }
}
