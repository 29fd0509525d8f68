//! Transformer shapes: Hugging Face config import ([`hf_config`]), model shapes and per-layer
//! operations ([`model`], [`ops`], their kernel class in [`op_class`]), quantized sizes per tensor class ([`quant`], from a config's quantization block in
//! [`hf_quant`] or a GGUF tensor listing in [`gguf_table`]). Knows nothing about clusters.

pub mod gguf_table;
pub mod hf_config;
pub mod hf_quant;
pub mod model;
pub mod op_class;
pub mod ops;
pub mod quant;

pub use hf_config::LlmError;
pub use model::{Attention, LayerFfn, LayerMixer, LinearAttention, Mamba2, ModelSpec, Moe, SparseAttention};
pub use ops::{MlaExpanded, MlaPerHead, Op, OpClass, Placement, expert_coverage, kv_head_fraction};
pub use quant::{
    ClassFormat, GgufFtype, GgufType, KernelFamily, QuantFamily, QuantScheme, QuantShape, QuantSpec, TensorClass, TensorFormat, TensorRole,
};

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

    /// Hand-checkable coverage: uniform routing is `E (1 - (1 - k/E)^T)`; with 2 experts, one
    /// chosen per token, the popularities sit at the normal quantiles of 1/4 and 3/4 (`+-z`), so
    /// at spread `s` the first is chosen with `p = 1 / (1 + e^(-2 s z))` and two tokens touch
    /// `2 - p^2 - (1 - p)^2` experts (uniform: 3/2); at a spread that puts the first expert above
    /// certainty (k = 2 of 3 at quantiles 1/6, 1/2, 5/6 and spread 3: `2 e^(3z) / (e^(3z) + 1 +
    /// e^(-3z)) > 1`), the first is chosen by every token and the other two share one choice in
    /// proportion `1 : e^(-3z)`.
    #[test]
    fn expert_coverage_by_hand() {
        use super::expert_coverage;
        use super::ops::normal_quantile;
        assert!((expert_coverage(128, 4, 32, 0.0) - 128.0 * (1.0 - (1.0f64 - 4.0 / 128.0).powi(32))).abs() < 1e-9);
        let z = normal_quantile(0.75);
        let p = 1.0 / (1.0 + (-2.0 * z).exp());
        assert!((expert_coverage(2, 1, 2, 1.0) - (2.0 - p * p - (1.0 - p) * (1.0 - p))).abs() < 1e-12);
        assert!((expert_coverage(2, 1, 2, 0.0) - 1.5).abs() < 1e-12);
        let tail = (-3.0 * normal_quantile(5.0 / 6.0)).exp();
        let p: [f64; 3] = [1.0, 1.0 / (1.0 + tail), tail / (1.0 + tail)];
        assert!((expert_coverage(3, 2, 1, 3.0) - 2.0).abs() < 1e-12);
        let two: f64 = p.iter().map(|x| 1.0 - (1.0 - x).powi(2)).sum();
        assert!((expert_coverage(3, 2, 2, 3.0) - two).abs() < 1e-12);
        assert_eq!(expert_coverage(8, 8, 5, 1.0), 8.0);
        assert_eq!(expert_coverage(8, 2, 0, 1.0), 0.0);
    }

    /// The normal quantile against tabulated values (to 1e-8) and its symmetry.
    #[test]
    fn normal_quantile_matches_the_table() {
        use super::ops::normal_quantile;
        for (p, z) in [(0.5, 0.0), (0.975, 1.959_963_985), (0.99, 2.326_347_874), (0.841_344_746, 1.0), (0.001, -3.090_232_306)] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "{p}: {}", normal_quantile(p));
            assert!((normal_quantile(1.0 - p) + z).abs() < 1e-8, "{p}");
        }
    }
}
