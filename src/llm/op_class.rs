//! The kernel class of an operation. A leaf of `llm` in its own file so that quantization
//! ([`super::quant`]) can read it without importing operations ([`super::ops`]), which import
//! quantization (an operation carries its tensors' formats).

/// What kind of kernel an operation is; each class has its own calibrated efficiency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// Quantized matrix-vector / matrix-matrix on a dense weight.
    Dense,
    /// MoE gather kernels over routed experts.
    Expert,
    /// Attention over the KV cache.
    Attention,
    /// A linear-attention recurrence (Gated DeltaNet): a fixed state per sequence, read and
    /// written once per step, instead of a growing KV cache.
    Recurrent,
    /// Norms, rope, activations, residual adds, routing: launch cost only.
    Elementwise,
    /// A tensor-parallel all_sum point (no compute).
    AllSum,
}
