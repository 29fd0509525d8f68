//! Quantization formats per tensor class: which stored format (bits per weight with scales and
//! biases, and the kernel family that reads it) each class of weight gets, and which runtimes
//! load a format. Three sources: a preset (one format per class, e.g. natively INT4 routed
//! experts with everything else bf16), llama.cpp's GGUF type rules for a file type
//! ([`GgufFtype`], reproduced from `llama_tensor_get_type`), and a listing of a real file's
//! tensor types ([`super::gguf_table`]) or a checkpoint's `config.json` quantization block
//! ([`super::hf_quant`]).

use super::op_class::OpClass;

/// The file-format family of a quantization: which runtimes can load it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuantFamily {
    /// MLX safetensors (exo, mlx-lm).
    Mlx,
    /// GGUF (llama.cpp, ollama).
    Gguf,
    /// Hugging Face checkpoints as the CUDA engines load them (vLLM, SGLang): fp8, nvfp4,
    /// gptq/awq int4.
    Hf,
    /// Either (e.g. bf16, mxfp4).
    Any,
}

impl QuantFamily {
    /// Catalog id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Mlx => "mlx",
            Self::Gguf => "gguf",
            Self::Hf => "hf",
            Self::Any => "any",
        }
    }

    /// Whether a runtime that loads `format` can load this family.
    pub fn loads_on(self, format: QuantFamily) -> bool {
        self == QuantFamily::Any || self == format
    }
}

/// The classes of weight tensors a quantization may treat differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorClass {
    /// Attention projections (q, k, v, o; MLA's latent projections).
    Attention,
    /// Dense feed-forward (gate, up, down) of a dense model or a MoE's dense layers.
    DenseMlp,
    /// Always-on shared experts of a MoE.
    SharedExpert,
    /// Routed experts of a MoE.
    RoutedExpert,
    /// The MoE router (gate) projection.
    Router,
    /// The input token embedding table.
    Embedding,
    /// The output projection (`lm_head`).
    LmHead,
    /// Norm weights (vectors; counted for completeness, never quantized).
    Norm,
}

impl TensorClass {
    /// Every class, in this order.
    pub const ALL: [TensorClass; 8] =
        [Self::Attention, Self::DenseMlp, Self::SharedExpert, Self::RoutedExpert, Self::Router, Self::Embedding, Self::LmHead, Self::Norm];

    /// The key used in catalog files (`attention`, `routed_expert`, ...).
    pub fn id(self) -> &'static str {
        match self {
            Self::Attention => "attention",
            Self::DenseMlp => "dense_mlp",
            Self::SharedExpert => "shared_expert",
            Self::RoutedExpert => "routed_expert",
            Self::Router => "router",
            Self::Embedding => "embedding",
            Self::LmHead => "lm_head",
            Self::Norm => "norm",
        }
    }

    /// The class of a catalog key.
    pub fn parse(s: &str) -> Option<TensorClass> {
        Self::ALL.into_iter().find(|c| c.id() == s)
    }
}

/// The role of a weight op in a layer: finer than [`TensorClass`] where llama.cpp's rules tell
/// tensors of one class apart (the value projection, the output projection).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorRole {
    /// Query projection (`attn_q`).
    AttnQ,
    /// Key projection (`attn_k`).
    AttnK,
    /// Value projection (`attn_v`).
    AttnV,
    /// Attention output projection (`attn_output`).
    AttnOutput,
    /// MLA's latent projections (`attn_q_a`, `attn_q_b`, `attn_kv_a_mqa`, `attn_kv_b`).
    AttnLatent,
    /// Dense gate, up and down (one op, three equal tensors).
    Mlp,
    /// Shared experts' gate, up and down.
    SharedExpert,
    /// Routed experts' gate, up and down.
    RoutedExperts,
    /// MoE router.
    Router,
    /// Input embedding.
    Embedding,
    /// Output projection.
    LmHead,
}

impl TensorRole {
    /// The tensor class of this role.
    pub fn class(self) -> TensorClass {
        match self {
            Self::AttnQ | Self::AttnK | Self::AttnV | Self::AttnOutput | Self::AttnLatent => TensorClass::Attention,
            Self::Mlp => TensorClass::DenseMlp,
            Self::SharedExpert => TensorClass::SharedExpert,
            Self::RoutedExperts => TensorClass::RoutedExpert,
            Self::Router => TensorClass::Router,
            Self::Embedding => TensorClass::Embedding,
            Self::LmHead => TensorClass::LmHead,
        }
    }

    /// Whether the op is gate + up + down (three tensors of equal size).
    fn is_ffn(self) -> bool {
        matches!(self, Self::Mlp | Self::SharedExpert | Self::RoutedExperts)
    }
}

/// The kernel family that reads a weight format: each has its own bandwidth multiplier on a
/// chip and runtime (see `RuntimeParams` in the profile). Families that read ~4-bit blocks with
/// a per-group scale (MLX affine 2-5 bits, GGUF k-quants and i-quants) are the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelFamily {
    /// Unquantized bf16/f16/f32 matrix-vector.
    Half,
    /// MLX affine quantized matmul at 2-5 bits (the reference family on MLX).
    Affine4,
    /// MLX affine quantized matmul at 6-8 bits.
    Affine8,
    /// GGUF k-quant and i-quant dequant kernels, Q2_K..Q6_K (the reference family on llama.cpp).
    KQuant,
    /// GGUF legacy block formats Q8_0, Q4_0, Q5_0, ... (one scale per 32).
    Legacy,
    /// OCP MXFP4 (gpt-oss experts).
    Mxfp4,
    /// FP8 E4M3 weights (W8A8, per-tensor or per-channel scales; CUDA engines).
    Fp8,
    /// NVFP4 (E2M1, fp8 scale per 16; CUDA engines). On GB10 (sm_121) published vLLM builds run
    /// it through Marlin W4A16 (FACTS-2026 B1, vllm issue #50925).
    Nvfp4,
    /// GPTQ/AWQ int4 group 128 through Marlin W4A16 (the reference family of the CUDA engines).
    Int4,
}

impl KernelFamily {
    /// Catalog id.
    pub fn id(self) -> &'static str {
        match self {
            Self::Half => "half",
            Self::Affine4 => "affine4",
            Self::Affine8 => "affine8",
            Self::KQuant => "kquant",
            Self::Legacy => "legacy",
            Self::Mxfp4 => "mxfp4",
            Self::Fp8 => "fp8",
            Self::Nvfp4 => "nvfp4",
            Self::Int4 => "int4",
        }
    }

    /// The family of a catalog id.
    pub fn parse(s: &str) -> Option<KernelFamily> {
        [Self::Half, Self::Affine4, Self::Affine8, Self::KQuant, Self::Legacy, Self::Mxfp4, Self::Fp8, Self::Nvfp4, Self::Int4]
            .into_iter()
            .find(|k| k.id() == s)
    }

    /// MLX affine quantization at `bits` bits.
    pub fn affine(bits: u32) -> KernelFamily {
        if bits >= 6 { Self::Affine8 } else { Self::Affine4 }
    }
}

/// A stored weight format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorFormat {
    /// Stored bits per weight, scales and biases included.
    pub bits: f64,
    /// Kernel family that reads it.
    pub kernel: KernelFamily,
}

impl TensorFormat {
    /// bfloat16.
    pub const BF16: TensorFormat = TensorFormat { bits: 16.0, kernel: KernelFamily::Half };

    /// MLX affine quantization: `bits` bits plus a 16-bit scale and a 16-bit bias per group.
    pub fn mlx_affine(bits: u32, group_size: u32) -> TensorFormat {
        TensorFormat { bits: bits as f64 + 32.0 / group_size.max(1) as f64, kernel: KernelFamily::affine(bits) }
    }
}

/// GGUF tensor types with their block sizes (ggml `ggml-common.h`: bytes per block of 32 or
/// 256 weights).
#[allow(non_camel_case_types, missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufType {
    F32,
    F16,
    BF16,
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    IQ4_NL,
    IQ4_XS,
    IQ3_XXS,
    IQ3_S,
    IQ2_XXS,
    IQ2_XS,
    IQ2_S,
    IQ1_S,
    IQ1_M,
    MXFP4,
}

/// `(type, name, bytes per block, weights per block)`.
const GGUF_TYPES: &[(GgufType, &str, u32, u32)] = &[
    (GgufType::F32, "F32", 4, 1),
    (GgufType::F16, "F16", 2, 1),
    (GgufType::BF16, "BF16", 2, 1),
    (GgufType::Q8_0, "Q8_0", 34, 32),
    (GgufType::Q4_0, "Q4_0", 18, 32),
    (GgufType::Q4_1, "Q4_1", 20, 32),
    (GgufType::Q5_0, "Q5_0", 22, 32),
    (GgufType::Q5_1, "Q5_1", 24, 32),
    (GgufType::Q2_K, "Q2_K", 84, 256),
    (GgufType::Q3_K, "Q3_K", 110, 256),
    (GgufType::Q4_K, "Q4_K", 144, 256),
    (GgufType::Q5_K, "Q5_K", 176, 256),
    (GgufType::Q6_K, "Q6_K", 210, 256),
    (GgufType::IQ4_NL, "IQ4_NL", 18, 32),
    (GgufType::IQ4_XS, "IQ4_XS", 136, 256),
    (GgufType::IQ3_XXS, "IQ3_XXS", 98, 256),
    (GgufType::IQ3_S, "IQ3_S", 110, 256),
    (GgufType::IQ2_XXS, "IQ2_XXS", 66, 256),
    (GgufType::IQ2_XS, "IQ2_XS", 74, 256),
    (GgufType::IQ2_S, "IQ2_S", 82, 256),
    (GgufType::IQ1_S, "IQ1_S", 50, 256),
    (GgufType::IQ1_M, "IQ1_M", 56, 256),
    (GgufType::MXFP4, "MXFP4", 17, 32),
];

impl GgufType {
    fn row(self) -> &'static (GgufType, &'static str, u32, u32) {
        GGUF_TYPES.iter().find(|r| r.0 == self).expect("every type has a row")
    }

    /// The name ggml prints (`Q4_K`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// The type of a name as `gguf-dump` or llama.cpp's loader prints it (case-insensitive).
    pub fn parse(s: &str) -> Option<GgufType> {
        GGUF_TYPES.iter().find(|r| r.1.eq_ignore_ascii_case(s)).map(|r| r.0)
    }

    /// Stored bits per weight.
    pub fn bits(self) -> f64 {
        let r = self.row();
        r.2 as f64 * 8.0 / r.3 as f64
    }

    /// Weights per block (256 for k-quants: a row length must be a multiple of it).
    pub fn block(self) -> u64 {
        self.row().3 as u64
    }

    /// The kernel family that dequantizes it. The i-quants (IQ1_S..IQ4_XS) decode through
    /// llama.cpp's own i-quant kernels (codebook lookup grids, `iq2xxs_grid` etc. in
    /// ggml-common.h), not the k-quant ones; no FACTS line measures them apart, so they share
    /// the k-quant family's bandwidth multiplier (an assumption), and IQ4_NL, a 32-block type
    /// like Q4_0, the legacy family's.
    pub fn kernel(self) -> KernelFamily {
        use GgufType::*;
        match self {
            F32 | F16 | BF16 => KernelFamily::Half,
            Q8_0 | Q4_0 | Q4_1 | Q5_0 | Q5_1 | IQ4_NL => KernelFamily::Legacy,
            MXFP4 => KernelFamily::Mxfp4,
            _ => KernelFamily::KQuant,
        }
    }

    /// Stored format.
    pub fn format(self) -> TensorFormat {
        TensorFormat { bits: self.bits(), kernel: self.kernel() }
    }

    /// The type llama.cpp gives a tensor of this target type whose rows have `row` weights:
    /// `tensor_type_fallback` in `src/llama-quant.cpp` (llama.cpp 0c1e57098, as vendored by
    /// llama-cpp-python 0.3.36): a 256-block type falls back to a 32-block type, Q2_K and Q3_K
    /// to Q4_0 (not IQ4_NL: same 4.5 bits), and F16 when even 32-blocks do not fit.
    fn fallback(self, row: u64) -> GgufType {
        use GgufType::*;
        if row % self.block() == 0 {
            return self;
        }
        let t = match self {
            IQ4_XS | IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => IQ4_NL,
            Q2_K | Q3_K => Q4_0,
            Q4_K => Q5_0,
            Q5_K => Q5_1,
            Q6_K => Q8_0,
            other => other,
        };
        if row % t.block() == 0 { t } else { F16 }
    }
}

/// A llama.cpp file type (`llama-quantize` target): a default tensor type plus rules that
/// keep some tensors at higher precision.
#[allow(non_camel_case_types, missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufFtype {
    Q2_K,
    Q2_K_S,
    Q3_K_S,
    Q3_K_M,
    Q3_K_L,
    Q4_K_S,
    Q4_K_M,
    Q5_K_S,
    Q5_K_M,
    Q6_K,
    Q8_0,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    IQ4_XS,
    IQ4_NL,
    IQ3_M,
    IQ3_S,
    IQ3_XS,
    IQ3_XXS,
    IQ2_M,
    IQ2_S,
    IQ2_XS,
    IQ2_XXS,
    IQ1_M,
    IQ1_S,
}

const FTYPES: &[(GgufFtype, &str)] = &[
    (GgufFtype::Q2_K, "Q2_K"),
    (GgufFtype::Q2_K_S, "Q2_K_S"),
    (GgufFtype::Q3_K_S, "Q3_K_S"),
    (GgufFtype::Q3_K_M, "Q3_K_M"),
    (GgufFtype::Q3_K_L, "Q3_K_L"),
    (GgufFtype::Q4_K_S, "Q4_K_S"),
    (GgufFtype::Q4_K_M, "Q4_K_M"),
    (GgufFtype::Q5_K_S, "Q5_K_S"),
    (GgufFtype::Q5_K_M, "Q5_K_M"),
    (GgufFtype::Q6_K, "Q6_K"),
    (GgufFtype::Q8_0, "Q8_0"),
    (GgufFtype::Q4_0, "Q4_0"),
    (GgufFtype::Q4_1, "Q4_1"),
    (GgufFtype::Q5_0, "Q5_0"),
    (GgufFtype::Q5_1, "Q5_1"),
    (GgufFtype::IQ4_XS, "IQ4_XS"),
    (GgufFtype::IQ4_NL, "IQ4_NL"),
    (GgufFtype::IQ3_M, "IQ3_M"),
    (GgufFtype::IQ3_S, "IQ3_S"),
    (GgufFtype::IQ3_XS, "IQ3_XS"),
    (GgufFtype::IQ3_XXS, "IQ3_XXS"),
    (GgufFtype::IQ2_M, "IQ2_M"),
    (GgufFtype::IQ2_S, "IQ2_S"),
    (GgufFtype::IQ2_XS, "IQ2_XS"),
    (GgufFtype::IQ2_XXS, "IQ2_XXS"),
    (GgufFtype::IQ1_M, "IQ1_M"),
    (GgufFtype::IQ1_S, "IQ1_S"),
];

/// The shape facts llama.cpp's type rules look at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantShape {
    /// Decoder layers.
    pub layers: u64,
    /// Routed experts (0 for a dense model).
    pub experts: u64,
    /// Query heads per KV head.
    pub gqa: u64,
    /// llama.cpp's `LLM_TYPE_70B` (a llama with 80 layers).
    pub llama_70b: bool,
    /// Whether the embedding doubles as the output projection.
    pub tied: bool,
    /// Row length of most weights (the hidden size).
    pub hidden: u64,
    /// Row length of the attention output projection.
    pub attn_out_in: u64,
    /// Row length of the down projection of the dense MLP.
    pub ffn: u64,
    /// Row length of the down projection of an expert.
    pub expert_ffn: u64,
    /// Weight matrices of an MLP or expert (3 gated: gate, up, down; 2 ungated: up, down),
    /// which weigh the down projection's type in an FFN op's mean bits.
    pub ffn_matrices: u64,
}

/// `use_more_bits` of llama.cpp: the first and last eighth of the layers and every third in
/// between.
fn use_more_bits(i: u64, n: u64) -> bool {
    let (i, n) = (i as i64, n as i64);
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The part of a weight op a rule looks at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `attn_*`, `ffn_gate*`, `ffn_up*`, embeddings, output: named by the role.
    Whole,
    /// `ffn_down*` (dense, shared experts and routed experts alike).
    Down,
}

impl GgufFtype {
    /// The name `llama-quantize` takes (`Q4_K_M`).
    pub fn name(self) -> &'static str {
        FTYPES.iter().find(|f| f.0 == self).expect("every ftype has a name").1
    }

    /// The file type of a name (case-insensitive; `Q4_K_M`, `q4_k_m`).
    pub fn parse(s: &str) -> Option<GgufFtype> {
        FTYPES.iter().find(|f| f.1.eq_ignore_ascii_case(s)).map(|f| f.0)
    }

    /// The default tensor type of the file type (`llama_ftype_get_default_type`, the switch of
    /// `llama_model_quantize_impl` in older releases): IQ3_XS, IQ3_S and IQ3_M store IQ3_S,
    /// IQ2_S stores IQ2_XS and IQ2_M IQ2_S (their "S"/"M" is the mix, not the block type).
    pub fn default_type(self) -> GgufType {
        use GgufFtype as F;
        match self {
            F::Q2_K | F::Q2_K_S => GgufType::Q2_K,
            F::Q3_K_S | F::Q3_K_M | F::Q3_K_L => GgufType::Q3_K,
            F::Q4_K_S | F::Q4_K_M => GgufType::Q4_K,
            F::Q5_K_S | F::Q5_K_M => GgufType::Q5_K,
            F::Q6_K => GgufType::Q6_K,
            F::Q8_0 => GgufType::Q8_0,
            F::Q4_0 => GgufType::Q4_0,
            F::Q4_1 => GgufType::Q4_1,
            F::Q5_0 => GgufType::Q5_0,
            F::Q5_1 => GgufType::Q5_1,
            F::IQ4_XS => GgufType::IQ4_XS,
            F::IQ4_NL => GgufType::IQ4_NL,
            F::IQ3_XS | F::IQ3_S | F::IQ3_M => GgufType::IQ3_S,
            F::IQ3_XXS => GgufType::IQ3_XXS,
            F::IQ2_M => GgufType::IQ2_S,
            F::IQ2_S | F::IQ2_XS => GgufType::IQ2_XS,
            F::IQ2_XXS => GgufType::IQ2_XXS,
            F::IQ1_M => GgufType::IQ1_M,
            F::IQ1_S => GgufType::IQ1_S,
        }
    }

    /// The type llama.cpp gives one tensor. Rules checked rule by rule against
    /// `llama_tensor_get_type_impl` and `tensor_type_fallback` in `src/llama-quant.cpp` of
    /// llama.cpp 0c1e57098 (vendored in the llama-cpp-python 0.3.36 sdist on PyPI), for the
    /// non-imatrix k-quant and Q8_0 file types, non-Falcon architectures: attn_v (and
    /// attn_qkv, attn_kv_b) by `i_attention_wv`, ffn_down by block number out of
    /// `n_layer_all` (MoE tensors parse `blk.N.`), attn_output, output/tied embedding;
    /// ffn_gate, ffn_up, attn_q, attn_k and the untied embedding keep the default type.
    /// Router weights (`ffn_gate_inp`) and norms are never quantized
    /// (`tensor_allows_quantization`). Not modelled: today's converter splits MLA's attn_kv_b
    /// into attn_k_b (rows of qk_nope_head_dim = 128, so Q4_K falls back to Q5_0) and attn_v_b
    /// (default type); this counts the whole kv_b at the default type (DeepSeek V3 Q4_K_M:
    /// ~0.5 B weights at 4.5 instead of 5.5 bits, about 64 MB of ~400 GB).
    /// The legacy file types (Q4_0, Q4_1, Q5_0, Q5_1: ollama's older defaults) name no rule of
    /// their own outside imatrix runs (their ffn_down bump needs an imatrix, not modelled): every
    /// tensor takes the default type except the output (Q6_K) and the 8-expert attn_v/attn_k
    /// (Q8_0) rules shared by all file types. Assumption from the rule list as read above; no
    /// published legacy-type file size is in FACTS.md to check it against.
    ///
    /// The i-quant file types follow the same function (its i-quant rules read the same in
    /// llama.cpp 4227c9be, vendored by llama-cpp-python 0.3.16, where it is
    /// `llama_tensor_get_type`) and
    /// are read **with an importance matrix** (`has_imatrix`): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
    /// IQ2_S and IQ3_XXS tensors refuse to quantize without one (`tensor_requires_imatrix`), and
    /// the published i-quant GGUFs (Unsloth, bartowski) are imatrix files; so IQ3_XXS keeps
    /// IQ3_XXS for attn_v at n_gqa < 4 and its ffn_down, and IQ4_XS/IQ4_NL take no Q5_K
    /// ffn_down bump (both rules are for runs without an imatrix). The IQ1/IQ2 file types have
    /// a branch of their own (see [`GgufFtype::low_iquant_type`]); the others add rules to the
    /// k-quant ones (see [`GgufFtype::attn_v_type`], [`GgufFtype::attn_output_type`],
    /// [`GgufFtype::ffn_down_type`]); IQ3_XS and IQ3_XXS also lower attn_q and attn_k, and
    /// IQ3_XS the middle three quarters of ffn_gate/ffn_up (to IQ3_XXS).
    fn tensor_type(self, role: TensorRole, part: Part, layer: u64, s: &QuantShape) -> GgufType {
        use GgufFtype as F;
        use GgufType as T;
        let def = self.default_type();
        let ty = match (role, part) {
            (TensorRole::Router, _) => return T::F32,
            (TensorRole::LmHead, _) => self.output_type(s.hidden),
            (TensorRole::Embedding, _) if s.tied => self.output_type(s.hidden),
            (TensorRole::Embedding, _) => match self {
                F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ1_M => T::Q2_K,
                F::IQ2_S | F::IQ2_M | F::IQ3_XXS => T::IQ3_S,
                _ => def,
            },
            _ if self.is_low_iquant() => self.low_iquant_type(role, part, layer, s),
            (TensorRole::AttnV, _) => self.attn_v_type(layer, s),
            (TensorRole::AttnK, _) if s.experts == 8 => T::Q8_0,
            (TensorRole::AttnQ | TensorRole::AttnK, _) => match self {
                F::IQ3_XS => T::IQ3_XXS,
                F::IQ3_XXS => T::IQ2_S,
                _ => def,
            },
            (TensorRole::AttnOutput, _) => self.attn_output_type(s),
            (_, Part::Down) => self.ffn_down_type(layer, s),
            // ffn_gate and ffn_up (the `Whole` part of a gate+up+down op).
            (r, Part::Whole) if r.is_ffn() && self == F::IQ3_XS && layer >= s.layers / 8 && layer < 7 * s.layers / 8 => T::IQ3_XXS,
            _ => def,
        };
        let row = match (role, part) {
            (_, Part::Down) if role == TensorRole::RoutedExperts || role == TensorRole::SharedExpert => s.expert_ffn,
            (_, Part::Down) => s.ffn,
            (TensorRole::AttnOutput, _) => s.attn_out_in,
            _ => s.hidden,
        };
        ty.fallback(row)
    }

    /// The file types with their own branch of rules: IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S,
    /// IQ1_M.
    fn is_low_iquant(self) -> bool {
        use GgufFtype as F;
        matches!(self, F::IQ2_XXS | F::IQ2_XS | F::IQ2_S | F::IQ2_M | F::IQ1_S | F::IQ1_M)
    }

    /// The IQ1/IQ2 branch of `llama_tensor_get_type_impl`: attn_v Q4_K when n_gqa >= 4 or
    /// n_expert >= 4, else IQ3_S (IQ2_S, IQ2_M) or Q2_K (no 70B or 8-expert bump in this
    /// branch); attn_k Q4_K for 8 experts; the first eighth of ffn_down IQ3_S (IQ2_S, IQ2_M) or
    /// Q2_K; attn_output Q5_K for 8 experts, else IQ2_XXS (IQ1_S, IQ1_M), IQ3_S (IQ2_S, IQ2_M) or
    /// the default; attn_q, ffn_gate and ffn_up the default. The ffn_down rule counts ffn_down
    /// tensors (`i_ffn_down < n_ffn_down/8`, with `n_ffn_down = n_layer_all`), read here as the
    /// block number: exact with one ffn_down tensor a layer; a MoE with shared experts has two a
    /// layer, so llama.cpp's counter covers only the first sixteenth (this overcounts the bump
    /// on those models, by a few hundredths of a bit per weight of ffn_down).
    fn low_iquant_type(self, role: TensorRole, part: Part, layer: u64, s: &QuantShape) -> GgufType {
        use GgufFtype as F;
        use GgufType as T;
        let s_or_m = matches!(self, F::IQ2_S | F::IQ2_M);
        match (role, part) {
            (TensorRole::AttnV, _) if s.gqa >= 4 || s.experts >= 4 => T::Q4_K,
            (TensorRole::AttnV, _) if s_or_m => T::IQ3_S,
            (TensorRole::AttnV, _) => T::Q2_K,
            (TensorRole::AttnK, _) if s.experts == 8 => T::Q4_K,
            (TensorRole::AttnOutput, _) if s.experts == 8 => T::Q5_K,
            (TensorRole::AttnOutput, _) if matches!(self, F::IQ1_S | F::IQ1_M) => T::IQ2_XXS,
            (TensorRole::AttnOutput, _) if s_or_m => T::IQ3_S,
            (_, Part::Down) if layer < s.layers / 8 => {
                if s_or_m {
                    T::IQ3_S
                } else {
                    T::Q2_K
                }
            }
            _ => self.default_type(),
        }
    }

    /// attn_v outside the IQ1/IQ2 branch: Q2_K Q4_K (n_gqa >= 4) or Q3_K; Q2_K_S Q4_K at
    /// n_gqa >= 4; IQ3_XXS, IQ3_XS and IQ3_S Q4_K at n_gqa >= 4; IQ3_M Q4_K; Q3_K_M Q5_K in the
    /// first two layers, then Q4_K; Q3_K_L Q5_K; IQ4_NL and IQ4_XS Q5_K at n_gqa >= 4; Q4_K_M and
    /// Q5_K_M Q6_K in `use_more_bits` layers; Q4_K_S Q5_K in the first four; then a 70B llama's
    /// Q3_K/Q4_K becomes Q5_K and an 8-expert model's attn_v is Q8_0.
    fn attn_v_type(self, layer: u64, s: &QuantShape) -> GgufType {
        use GgufFtype as F;
        use GgufType as T;
        let gqa4 = s.gqa >= 4;
        let mut t = match self {
            F::Q2_K if gqa4 => T::Q4_K,
            F::Q2_K => T::Q3_K,
            F::Q2_K_S | F::IQ3_XXS | F::IQ3_XS | F::IQ3_S if gqa4 => T::Q4_K,
            F::IQ3_M => T::Q4_K,
            F::Q3_K_M if layer < 2 => T::Q5_K,
            F::Q3_K_M => T::Q4_K,
            F::Q3_K_L => T::Q5_K,
            F::IQ4_NL | F::IQ4_XS if gqa4 => T::Q5_K,
            F::Q4_K_M | F::Q5_K_M if use_more_bits(layer, s.layers) => T::Q6_K,
            F::Q4_K_S if layer < 4 => T::Q5_K,
            _ => self.default_type(),
        };
        if s.llama_70b && matches!(t, T::Q3_K | T::Q4_K) {
            t = T::Q5_K;
        }
        if s.experts == 8 {
            t = T::Q8_0;
        }
        t
    }

    /// attn_output outside the IQ1/IQ2 branch: with 8 experts Q5_K for Q2_K, Q3_K_S, Q3_K_M,
    /// Q4_K_S, Q4_K_M and IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M, IQ4_NL, IQ4_XS; otherwise Q3_K for Q2_K,
    /// IQ3_S for IQ3_XXS, Q4_K for Q3_K_M and IQ3_M, Q5_K for Q3_K_L.
    fn attn_output_type(self, s: &QuantShape) -> GgufType {
        use GgufFtype as F;
        use GgufType as T;
        match self {
            F::Q2_K
            | F::Q3_K_S
            | F::Q3_K_M
            | F::Q4_K_S
            | F::Q4_K_M
            | F::IQ3_XXS
            | F::IQ3_XS
            | F::IQ3_S
            | F::IQ3_M
            | F::IQ4_NL
            | F::IQ4_XS
                if s.experts == 8 =>
            {
                T::Q5_K
            }
            _ if s.experts == 8 => self.default_type(),
            F::Q2_K => T::Q3_K,
            F::IQ3_XXS => T::IQ3_S,
            F::Q3_K_M | F::IQ3_M => T::Q4_K,
            F::Q3_K_L => T::Q5_K,
            _ => self.default_type(),
        }
    }

    /// ffn_down outside the IQ1/IQ2 branch: Q2_K Q3_K; Q2_K_S Q4_K in the first eighth;
    /// Q3_K_M Q5_K in the first sixteenth, then Q4_K; IQ3_M Q4_K in the first eighth (and, with
    /// 8 experts, in `use_more_bits` layers); Q3_K_L Q5_K; Q4_K_M and Q5_K_M Q6_K in
    /// `use_more_bits` layers; Q4_K_S Q5_K in the first eighth.
    fn ffn_down_type(self, layer: u64, s: &QuantShape) -> GgufType {
        use GgufFtype as F;
        use GgufType as T;
        let n = s.layers;
        match self {
            F::Q2_K => T::Q3_K,
            F::Q2_K_S if layer < n / 8 => T::Q4_K,
            F::Q3_K_M if layer < n / 16 => T::Q5_K,
            F::Q3_K_M => T::Q4_K,
            F::IQ3_M if layer < n / 8 || (s.experts == 8 && use_more_bits(layer, n)) => T::Q4_K,
            F::Q3_K_L => T::Q5_K,
            F::Q4_K_M | F::Q5_K_M if use_more_bits(layer, n) => T::Q6_K,
            F::Q4_K_S if layer < n / 8 => T::Q5_K,
            _ => self.default_type(),
        }
    }

    /// `output.weight` (and a tied embedding): Q8_0 when rows do not split into 256-blocks,
    /// else Q5_K for the IQ1/IQ2 types and IQ3_XXS, Q6_K unless the file is Q8_0.
    fn output_type(self, hidden: u64) -> GgufType {
        if hidden % 256 != 0 || self == GgufFtype::Q8_0 {
            GgufType::Q8_0
        } else if self.is_low_iquant() || self == GgufFtype::IQ3_XXS {
            GgufType::Q5_K
        } else {
            GgufType::Q6_K
        }
    }
}

/// A format for one class, optionally only in one layer.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassFormat {
    /// The class.
    pub class: TensorClass,
    /// The layer, or every layer.
    pub layer: Option<u64>,
    /// The format.
    pub format: TensorFormat,
}

/// How a quantization assigns formats to tensors.
#[derive(Clone, Debug, PartialEq)]
pub enum QuantScheme {
    /// One default format, with per-class (and per-layer) overrides; the last matching override
    /// wins.
    PerClass {
        /// Format of every tensor without an override.
        default: TensorFormat,
        /// Overrides.
        overrides: Vec<ClassFormat>,
    },
    /// llama.cpp's rules for a file type.
    Gguf(GgufFtype),
}

/// A quantization format.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantSpec {
    /// Id, e.g. `mlx-4bit`.
    pub id: String,
    /// Which runtimes load it.
    pub family: QuantFamily,
    /// How tensors get their formats.
    pub scheme: QuantScheme,
    /// Where the figures come from.
    pub source: String,
}

impl QuantSpec {
    /// A quantization with one format for every tensor.
    pub fn uniform(id: &str, family: QuantFamily, format: TensorFormat, source: &str) -> QuantSpec {
        QuantSpec { id: id.into(), family, scheme: QuantScheme::PerClass { default: format, overrides: vec![] }, source: source.into() }
    }

    /// The stored format of one weight op (for gate+up+down ops, the mean over the three
    /// tensors' bits and the kernel of the gate/up pair, which carry two thirds of the bytes;
    /// for an ungated up+down op, the mean over the two).
    pub fn format(&self, role: TensorRole, layer: u64, shape: &QuantShape) -> TensorFormat {
        match &self.scheme {
            QuantScheme::PerClass { default, overrides } => overrides
                .iter()
                .rev()
                .find(|o| o.class == role.class() && o.layer.is_none_or(|l| l == layer))
                .map_or(*default, |o| o.format),
            QuantScheme::Gguf(ft) => {
                let whole = ft.tensor_type(role, Part::Whole, layer, shape).format();
                if !role.is_ffn() {
                    return whole;
                }
                let down = ft.tensor_type(role, Part::Down, layer, shape).format();
                let m = shape.ffn_matrices.max(2) as f64;
                TensorFormat { bits: ((m - 1.0) * whole.bits + down.bits) / m, kernel: whole.kernel }
            }
        }
    }

    /// The format of a whole class in layer-independent terms (for listings): the default
    /// layer-0 format of its first role.
    pub fn class_format(&self, class: TensorClass, shape: &QuantShape) -> TensorFormat {
        let role = match class {
            TensorClass::Attention => TensorRole::AttnQ,
            TensorClass::DenseMlp => TensorRole::Mlp,
            TensorClass::SharedExpert => TensorRole::SharedExpert,
            TensorClass::RoutedExpert => TensorRole::RoutedExperts,
            TensorClass::Router => TensorRole::Router,
            TensorClass::Embedding => TensorRole::Embedding,
            TensorClass::LmHead => TensorRole::LmHead,
            TensorClass::Norm => return TensorFormat { bits: 32.0, kernel: KernelFamily::Half },
        };
        self.format(role, shape.layers / 2, shape)
    }

    /// Bits per weight of a coarse kernel class in the middle layer (for listings and old
    /// callers): routed experts for `Expert`, attention projections otherwise.
    pub fn bits_for(&self, class: OpClass, shape: &QuantShape) -> f64 {
        let c = if class == OpClass::Expert { TensorClass::RoutedExpert } else { TensorClass::Attention };
        self.class_format(c, shape).bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_give_the_known_bits_per_weight() {
        for (t, bits) in [
            (GgufType::Q4_K, 4.5),
            (GgufType::Q6_K, 6.5625),
            (GgufType::Q2_K, 2.625),
            (GgufType::Q3_K, 3.4375),
            (GgufType::Q5_K, 5.5),
            (GgufType::Q8_0, 8.5),
            (GgufType::MXFP4, 4.25),
        ] {
            assert_eq!(t.bits(), bits, "{t:?}");
        }
        assert_eq!(TensorFormat::mlx_affine(4, 64).bits, 4.5);
        assert_eq!(TensorFormat::mlx_affine(4, 32).bits, 5.0);
    }

    #[test]
    fn use_more_bits_is_half_of_the_layers() {
        // 80 layers: 10 + 10 at the ends and 20 of the 60 between.
        assert_eq!((0..80).filter(|&i| use_more_bits(i, 80)).count(), 40);
        assert!(use_more_bits(0, 80) && use_more_bits(79, 80) && use_more_bits(12, 80) && !use_more_bits(10, 80));
    }

    #[test]
    fn q4_k_m_keeps_down_and_v_higher_and_the_router_f32() {
        let s = QuantShape {
            layers: 61,
            experts: 256,
            gqa: 1,
            llama_70b: false,
            tied: false,
            hidden: 7168,
            attn_out_in: 16384,
            ffn: 18432,
            expert_ffn: 2048,
            ffn_matrices: 3,
        };
        let q = GgufFtype::Q4_K_M;
        assert_eq!(q.tensor_type(TensorRole::RoutedExperts, Part::Down, 0, &s), GgufType::Q6_K);
        assert_eq!(q.tensor_type(TensorRole::RoutedExperts, Part::Down, 10, &s), GgufType::Q4_K);
        assert_eq!(q.tensor_type(TensorRole::RoutedExperts, Part::Whole, 0, &s), GgufType::Q4_K);
        assert_eq!(q.tensor_type(TensorRole::LmHead, Part::Whole, 0, &s), GgufType::Q6_K);
        assert_eq!(q.tensor_type(TensorRole::Router, Part::Whole, 0, &s), GgufType::F32);
        assert_eq!(GgufFtype::Q2_K.tensor_type(TensorRole::AttnOutput, Part::Whole, 5, &s), GgufType::Q3_K);
        // gpt-oss rows of 2880 are not 256-blocks: Q4_K falls back to Q5_0.
        let odd = QuantShape { hidden: 2880, ..s };
        assert_eq!(q.tensor_type(TensorRole::AttnQ, Part::Whole, 3, &odd), GgufType::Q5_0);
        // llama.cpp 0c1e57098 `tensor_type_fallback`: Q2_K and Q3_K fall back to Q4_0, and rows
        // that do not split into 32-blocks are stored F16.
        assert_eq!(GgufFtype::Q2_K.tensor_type(TensorRole::AttnQ, Part::Whole, 3, &odd), GgufType::Q4_0);
        assert_eq!(GgufFtype::Q3_K_M.tensor_type(TensorRole::AttnQ, Part::Whole, 3, &odd), GgufType::Q4_0);
        let ragged = QuantShape { hidden: 2888, ..s };
        assert_eq!(q.tensor_type(TensorRole::AttnQ, Part::Whole, 3, &ragged), GgufType::F16);
    }

    /// Bits per weight of each i-quant block, from ggml-common.h's structs (the static_asserts):
    /// a half scale `d` (2 bytes) plus the packed payload per 256 weights (IQ4_NL: per 32).
    #[test]
    fn i_quant_blocks_give_their_bits_per_weight() {
        for (t, bytes, weights) in [
            (GgufType::IQ1_S, 2 + 256 / 8 + 256 / 16, 256),         // d, qs, qh: 50
            (GgufType::IQ1_M, 256 / 8 + 256 / 16 + 256 / 32, 256),  // qs, qh, scales (no d): 56
            (GgufType::IQ2_XXS, 2 + 256 / 8 * 2, 256),              // d, qs as u16: 66
            (GgufType::IQ2_XS, 2 + 256 / 8 * 2 + 256 / 32, 256),    // d, qs, scales: 74
            (GgufType::IQ2_S, 2 + 256 / 4 + 256 / 16, 256),         // d, qs, qh + scales: 82
            (GgufType::IQ3_XXS, 2 + 3 * (256 / 8), 256),            // d, qs: 98
            (GgufType::IQ3_S, 2 + 13 * (256 / 32) + 256 / 64, 256), // d, qs + qh + signs, scales: 110
            (GgufType::IQ4_XS, 2 + 2 + 256 / 64 + 256 / 2, 256),    // d, scales_h, scales_l, qs: 136
            (GgufType::IQ4_NL, 2 + 32 / 2, 32),                     // d, qs: 18
        ] {
            assert_eq!(t.bits(), bytes as f64 * 8.0 / weights as f64, "{t:?}");
            assert_eq!(t.block(), weights, "{t:?}");
        }
        assert_eq!(GgufType::IQ2_XXS.bits(), 2.0625);
        assert_eq!(GgufType::IQ4_XS.bits(), 4.25);
        // i-quants read through the k-quant family (IQ4_NL, a 32-block, the legacy one).
        assert_eq!(GgufType::IQ3_S.kernel(), KernelFamily::KQuant);
        assert_eq!(GgufType::IQ4_NL.kernel(), KernelFamily::Legacy);
    }

    /// Every file type's name parses back, and the i-quant defaults of
    /// `llama_ftype_get_default_type`: the S/M/XS names are mixes of fewer block types.
    #[test]
    fn i_quant_file_types_name_their_default_type() {
        for &(ft, name) in FTYPES {
            assert_eq!(GgufFtype::parse(name), Some(ft));
            assert_eq!(GgufFtype::parse(&name.to_lowercase()), Some(ft));
        }
        use GgufFtype as F;
        use GgufType as T;
        for (ft, t) in [
            (F::IQ4_XS, T::IQ4_XS),
            (F::IQ4_NL, T::IQ4_NL),
            (F::IQ3_M, T::IQ3_S),
            (F::IQ3_S, T::IQ3_S),
            (F::IQ3_XS, T::IQ3_S),
            (F::IQ3_XXS, T::IQ3_XXS),
            (F::IQ2_M, T::IQ2_S),
            (F::IQ2_S, T::IQ2_XS),
            (F::IQ2_XS, T::IQ2_XS),
            (F::IQ2_XXS, T::IQ2_XXS),
            (F::IQ1_M, T::IQ1_M),
            (F::IQ1_S, T::IQ1_S),
        ] {
            assert_eq!(ft.default_type(), t, "{ft:?}");
        }
    }

    /// The type of one tensor: (file type, role, part, layer) -> type.
    type Case = (GgufFtype, TensorRole, Part, u64, GgufType);

    fn check(s: &QuantShape, cases: &[Case]) {
        for &(ft, role, part, layer, want) in cases {
            let down = if part == Part::Down { " down" } else { "" };
            assert_eq!(ft.tensor_type(role, part, layer, s), want, "{ft:?} {role:?}{down} layer {layer}");
        }
    }

    /// A dense 70B llama (80 layers, 64 query heads over 8 KV heads, hidden 8192, ffn 28672),
    /// checked against `llama_tensor_get_type_impl` read by hand: the 70B bump lifts a Q4_K
    /// attn_v to Q5_K outside the IQ1/IQ2 branch only.
    #[test]
    fn i_quant_rules_on_a_dense_70b_llama() {
        use GgufFtype as F;
        use GgufType as T;
        use Part::{Down, Whole};
        use TensorRole as R;
        let s = QuantShape {
            layers: 80,
            experts: 0,
            gqa: 8,
            llama_70b: true,
            tied: false,
            hidden: 8192,
            attn_out_in: 8192,
            ffn: 28672,
            expert_ffn: 28672,
            ffn_matrices: 3,
        };
        check(
            &s,
            &[
                // IQ4_XS: Q5_K attn_v (n_gqa >= 4), Q6_K output; imatrix: no ffn_down bump.
                (F::IQ4_XS, R::AttnV, Whole, 0, T::Q5_K),
                (F::IQ4_XS, R::AttnQ, Whole, 0, T::IQ4_XS),
                (F::IQ4_XS, R::AttnOutput, Whole, 0, T::IQ4_XS),
                (F::IQ4_XS, R::Mlp, Down, 0, T::IQ4_XS),
                (F::IQ4_XS, R::LmHead, Whole, 0, T::Q6_K),
                (F::IQ4_XS, R::Embedding, Whole, 0, T::IQ4_XS),
                (F::IQ4_NL, R::AttnV, Whole, 3, T::Q5_K),
                (F::IQ4_NL, R::Mlp, Whole, 3, T::IQ4_NL),
                // IQ3_XXS: attn_v Q4_K (n_gqa >= 4) -> Q5_K (70B); q and k IQ2_S; output Q5_K.
                (F::IQ3_XXS, R::AttnV, Whole, 40, T::Q5_K),
                (F::IQ3_XXS, R::AttnQ, Whole, 40, T::IQ2_S),
                (F::IQ3_XXS, R::AttnK, Whole, 40, T::IQ2_S),
                (F::IQ3_XXS, R::AttnOutput, Whole, 40, T::IQ3_S),
                (F::IQ3_XXS, R::Mlp, Down, 0, T::IQ3_XXS),
                (F::IQ3_XXS, R::Mlp, Whole, 0, T::IQ3_XXS),
                (F::IQ3_XXS, R::LmHead, Whole, 0, T::Q5_K),
                (F::IQ3_XXS, R::Embedding, Whole, 0, T::IQ3_S),
                // IQ3_XS: IQ3_S, with q, k and the middle gate/up (layers 10..70) at IQ3_XXS.
                (F::IQ3_XS, R::AttnQ, Whole, 0, T::IQ3_XXS),
                (F::IQ3_XS, R::AttnK, Whole, 0, T::IQ3_XXS),
                (F::IQ3_XS, R::AttnV, Whole, 0, T::Q5_K),
                (F::IQ3_XS, R::Mlp, Whole, 9, T::IQ3_S),
                (F::IQ3_XS, R::Mlp, Whole, 10, T::IQ3_XXS),
                (F::IQ3_XS, R::Mlp, Whole, 69, T::IQ3_XXS),
                (F::IQ3_XS, R::Mlp, Whole, 70, T::IQ3_S),
                (F::IQ3_XS, R::Mlp, Down, 40, T::IQ3_S),
                (F::IQ3_XS, R::AttnOutput, Whole, 40, T::IQ3_S),
                (F::IQ3_S, R::AttnV, Whole, 40, T::Q5_K),
                (F::IQ3_S, R::AttnQ, Whole, 40, T::IQ3_S),
                // IQ3_M: Q4_K attn_v (-> Q5_K, 70B), attn_output and the first 10 ffn_down.
                (F::IQ3_M, R::AttnV, Whole, 40, T::Q5_K),
                (F::IQ3_M, R::AttnOutput, Whole, 40, T::Q4_K),
                (F::IQ3_M, R::Mlp, Down, 9, T::Q4_K),
                (F::IQ3_M, R::Mlp, Down, 10, T::IQ3_S),
                (F::IQ3_M, R::LmHead, Whole, 0, T::Q6_K),
                // IQ1/IQ2 branch: attn_v Q4_K (n_gqa >= 4) with no 70B bump; first 10 ffn_down
                // Q2_K (IQ3_S for IQ2_S/IQ2_M); Q5_K output; Q2_K or IQ3_S embedding.
                (F::IQ2_XXS, R::AttnV, Whole, 40, T::Q4_K),
                (F::IQ2_XXS, R::AttnK, Whole, 40, T::IQ2_XXS),
                (F::IQ2_XXS, R::AttnOutput, Whole, 40, T::IQ2_XXS),
                (F::IQ2_XXS, R::Mlp, Down, 9, T::Q2_K),
                (F::IQ2_XXS, R::Mlp, Down, 10, T::IQ2_XXS),
                (F::IQ2_XXS, R::Mlp, Whole, 0, T::IQ2_XXS),
                (F::IQ2_XXS, R::LmHead, Whole, 0, T::Q5_K),
                (F::IQ2_XXS, R::Embedding, Whole, 0, T::Q2_K),
                (F::IQ2_XS, R::Mlp, Whole, 40, T::IQ2_XS),
                (F::IQ2_S, R::Mlp, Whole, 40, T::IQ2_XS),
                (F::IQ2_S, R::Mlp, Down, 0, T::IQ3_S),
                (F::IQ2_S, R::AttnOutput, Whole, 40, T::IQ3_S),
                (F::IQ2_M, R::Mlp, Whole, 40, T::IQ2_S),
                (F::IQ2_M, R::Embedding, Whole, 0, T::IQ3_S),
                (F::IQ1_S, R::AttnOutput, Whole, 40, T::IQ2_XXS),
                (F::IQ1_S, R::Mlp, Whole, 40, T::IQ1_S),
                (F::IQ1_M, R::AttnOutput, Whole, 40, T::IQ2_XXS),
                (F::IQ1_M, R::LmHead, Whole, 0, T::Q5_K),
                (F::IQ1_M, R::Router, Whole, 0, T::F32),
            ],
        );
        // At n_gqa < 4 (and no experts) the IQ1/IQ2 attn_v is Q2_K or IQ3_S, IQ3_XXS's its own.
        let mha = QuantShape { gqa: 1, llama_70b: false, ..s };
        check(
            &mha,
            &[
                (F::IQ2_XXS, R::AttnV, Whole, 0, T::Q2_K),
                (F::IQ2_M, R::AttnV, Whole, 0, T::IQ3_S),
                (F::IQ3_XXS, R::AttnV, Whole, 0, T::IQ3_XXS),
                (F::IQ3_XS, R::AttnV, Whole, 0, T::IQ3_S),
                (F::IQ4_XS, R::AttnV, Whole, 0, T::IQ4_XS),
                (F::IQ3_M, R::AttnV, Whole, 0, T::Q4_K),
            ],
        );
    }

    /// An 8-expert MoE (Mixtral 8x7B's shape: 32 layers, 32 heads over 8 KV heads, hidden
    /// 4096, ffn 14336): the `n_expert == 8` rules.
    #[test]
    fn i_quant_rules_on_an_8_expert_moe() {
        use GgufFtype as F;
        use GgufType as T;
        use Part::{Down, Whole};
        use TensorRole as R;
        let s = QuantShape {
            layers: 32,
            experts: 8,
            gqa: 4,
            llama_70b: false,
            tied: false,
            hidden: 4096,
            attn_out_in: 4096,
            ffn: 14336,
            expert_ffn: 14336,
            ffn_matrices: 3,
        };
        check(
            &s,
            &[
                (F::IQ4_XS, R::AttnV, Whole, 10, T::Q8_0),
                (F::IQ4_XS, R::AttnK, Whole, 10, T::Q8_0),
                (F::IQ4_XS, R::AttnQ, Whole, 10, T::IQ4_XS),
                (F::IQ4_XS, R::AttnOutput, Whole, 10, T::Q5_K),
                (F::IQ4_XS, R::RoutedExperts, Down, 0, T::IQ4_XS),
                (F::IQ3_XXS, R::AttnK, Whole, 10, T::Q8_0),
                (F::IQ3_XXS, R::AttnQ, Whole, 10, T::IQ2_S),
                (F::IQ3_XXS, R::AttnOutput, Whole, 10, T::Q5_K),
                // IQ3_M ffn_down: Q4_K in the first eighth (layers 0..4) and in
                // use_more_bits layers (28..32 and (i - 4) % 3 == 2: 6, 9, ...).
                (F::IQ3_M, R::RoutedExperts, Down, 3, T::Q4_K),
                (F::IQ3_M, R::RoutedExperts, Down, 4, T::IQ3_S),
                (F::IQ3_M, R::RoutedExperts, Down, 6, T::Q4_K),
                (F::IQ3_M, R::RoutedExperts, Down, 7, T::IQ3_S),
                (F::IQ3_M, R::RoutedExperts, Down, 28, T::Q4_K),
                (F::IQ3_M, R::AttnOutput, Whole, 10, T::Q5_K),
                // IQ1/IQ2 branch: attn_v and attn_k Q4_K, attn_output Q5_K (no Q8_0 here).
                (F::IQ2_XXS, R::AttnV, Whole, 10, T::Q4_K),
                (F::IQ2_XXS, R::AttnK, Whole, 10, T::Q4_K),
                (F::IQ2_XXS, R::AttnOutput, Whole, 10, T::Q5_K),
                (F::IQ2_XXS, R::RoutedExperts, Down, 3, T::Q2_K),
                (F::IQ2_XXS, R::RoutedExperts, Down, 4, T::IQ2_XXS),
                (F::IQ1_S, R::AttnOutput, Whole, 10, T::Q5_K),
                (F::IQ2_M, R::RoutedExperts, Whole, 10, T::IQ2_S),
            ],
        );
    }

    /// A 128-expert MoE (Qwen3-235B-A22B's shape: 94 layers, 64 heads over 4 KV heads, hidden
    /// 4096, attention output 8192 wide, experts' ffn 1536): no 8-expert rule; n_expert >= 4
    /// keeps the IQ1/IQ2 attn_v at Q4_K; the first eighth is layers 0..11 (94 / 8 = 11).
    #[test]
    fn i_quant_rules_on_a_128_expert_moe() {
        use GgufFtype as F;
        use GgufType as T;
        use Part::{Down, Whole};
        use TensorRole as R;
        let s = QuantShape {
            layers: 94,
            experts: 128,
            gqa: 16,
            llama_70b: false,
            tied: false,
            hidden: 4096,
            attn_out_in: 8192,
            ffn: 12288,
            expert_ffn: 1536,
            ffn_matrices: 3,
        };
        check(
            &s,
            &[
                (F::IQ2_XXS, R::AttnV, Whole, 50, T::Q4_K),
                (F::IQ2_XXS, R::AttnK, Whole, 50, T::IQ2_XXS),
                (F::IQ2_XXS, R::AttnOutput, Whole, 50, T::IQ2_XXS),
                (F::IQ2_XXS, R::RoutedExperts, Down, 10, T::Q2_K),
                (F::IQ2_XXS, R::RoutedExperts, Down, 11, T::IQ2_XXS),
                (F::IQ1_M, R::AttnOutput, Whole, 50, T::IQ2_XXS),
                (F::IQ4_XS, R::AttnV, Whole, 50, T::Q5_K),
                (F::IQ4_XS, R::AttnK, Whole, 50, T::IQ4_XS),
                (F::IQ4_XS, R::AttnOutput, Whole, 50, T::IQ4_XS),
                (F::IQ3_XS, R::AttnK, Whole, 50, T::IQ3_XXS),
                (F::IQ3_XS, R::RoutedExperts, Whole, 50, T::IQ3_XXS),
                (F::IQ3_M, R::AttnOutput, Whole, 50, T::Q4_K),
                (F::IQ3_M, R::RoutedExperts, Down, 11, T::IQ3_S),
            ],
        );
        // Rows that do not split into 256-blocks (gpt-oss's 2880) fall back to IQ4_NL, and the
        // output to Q8_0 (`tensor_type_fallback`).
        let odd = QuantShape { hidden: 2880, ..s };
        check(
            &odd,
            &[
                (F::IQ4_XS, R::AttnQ, Whole, 3, T::IQ4_NL),
                (F::IQ2_XXS, R::AttnQ, Whole, 3, T::IQ4_NL),
                (F::IQ2_XXS, R::LmHead, Whole, 0, T::Q8_0),
                (F::IQ2_XXS, R::Embedding, Whole, 0, T::Q4_0),
            ],
        );
    }
}
