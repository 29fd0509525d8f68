//! Quantization formats: bits per weight by kernel class and which runtimes load them.

use super::ops::OpClass;

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
