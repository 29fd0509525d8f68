//! The calibrated envelope: a prediction is "inside" only where the profile's calibration rows
//! ran the same chip, runtime, parallelism, fabric, quantization family and concurrency.

use crate::{bin, scenario};

/// `run --json` of `file` with `--set` overrides: the estimate's `calibration` object.
fn calibration(file: &std::path::Path, sets: &[&str]) -> serde_json::Value {
    let mut c = bin();
    c.arg("run").arg(file).args(["--json", "--no-write"]);
    for s in sets {
        c.args(["--set", s]);
    }
    let out = c.assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["calibration"].clone()
}

fn reasons(c: &serde_json::Value) -> Vec<String> {
    c["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect()
}

#[test]
fn the_geerling_deepseek_exo_rdma_scenario_is_inside() {
    for n in [2, 4] {
        let c = calibration(&scenario(&format!("geerling-{n}x-m3-ultra-deepseek-v3.1-exo-rdma.toml")), &[]);
        assert_eq!(c["status"], "inside", "{n} nodes: {c}");
    }
}

#[test]
fn exo_pipeline_over_10_gbe_was_never_measured_and_says_so() {
    let f = scenario("geerling-2x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    let c = calibration(&f, &["engine.parallelism=pipeline", "cluster.fabric=eth-10g", "cluster.topology=switch"]);
    assert_eq!(c["status"], "extrapolation", "{c}");
    let r = reasons(&c);
    assert!(r.iter().any(|x| x.contains("no calibration row ran exo pipeline over eth-10g with mlx weights on `m3-ultra`")), "{r:?}");
}

#[test]
fn a_chip_whose_parameters_are_all_priors_is_extrapolated() {
    // The M4 Max has published MLX rows (vllm-mlx) but no llama.cpp row: every llama.cpp figure
    // of it is a prior (the M2 Ultra, used here before, now has fitted llama.cpp prefill rows).
    let f = scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml");
    let c = calibration(&f, &["cluster.nodes=[\"m4-max-40c-128gb\"]", "model.name=llama-3.3-70b", "cluster.wired_limit_fraction=0.75"]);
    assert_eq!(c["status"], "extrapolation");
    let r = reasons(&c);
    assert!(r.iter().any(|x| x.contains("chip `m4-max` extrapolated: none of its llama-cpp parameters was fitted")), "{r:?}");
}

#[test]
fn serving_beyond_the_measured_concurrency_is_extrapolated() {
    let c = calibration(&scenario("serve-4x-m3-ultra-qwen3-235b-a22b-exo-8-users.toml"), &[]);
    let r = reasons(&c);
    assert!(r.iter().any(|x| x.contains("concurrency 8 beyond the 1 measured for exo tensor over tb5-rdma")), "{r:?}");
}

/// A file either runtime family loads (mxfp4, bf16) is the runtime's own format in the envelope:
/// gpt-oss-120b MXFP4 on one Spark under vLLM is the setup the n-spark1 rows ran (inside), and
/// under exo it is an MLX file, named so (it once read "with any weights" and never matched).
#[test]
fn a_file_either_family_loads_counts_as_the_runtimes_own_format() {
    let spark = calibration(&scenario("spark-vllm-gptoss120b.toml"), &[]);
    assert_eq!(spark["status"], "inside", "{spark}");
    let mac = reasons(&calibration(&scenario("plans/equal-budget-gpt-oss-120b-serve.toml"), &[]));
    assert!(mac.iter().any(|r| r.contains("with mlx weights on `m3-ultra`")), "{mac:?}");
    assert!(!mac.iter().any(|r| r.contains("any weights")), "{mac:?}");
}

#[test]
fn a_model_mechanism_no_calibration_row_had_is_extrapolated() {
    // The default profile's rows exercised MLA, sliding windows, Gated DeltaNet and routed
    // experts; a Mamba-2 scan or a sparse-attention indexer was never measured.
    let f = scenario("geerling-2x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    for (model, mechanism) in
        [("deepseek-v3.2", "sparse-attention indexer (deepseek_v32)"), ("nemotron-3-super-120b-a12b", "Mamba-2 scan (nemotron_h)")]
    {
        let c = calibration(&f, &[&format!("model.name={model}")]);
        assert_eq!(c["status"], "extrapolation", "{c}");
        let r = reasons(&c);
        assert!(r.iter().any(|x| x.contains(&format!("no calibration row's model has {mechanism}"))), "{r:?}");
    }
    let c = calibration(&f, &["model.name=nemotron-3-super-120b-a12b"]);
    assert!(reasons(&c).iter().any(|x| x.contains("latent-space experts")), "{c}");
    // What the rows had is not flagged: DeepSeek V3.1 itself stays inside.
    assert_eq!(calibration(&f, &[])["status"], "inside");
}

/// The shipped profile's envelope is its data's: the node counts, chips, context, setups, model
/// mechanisms (each with the kernel library that ran it) and weight kernels `calibrate` would record from the
/// published rows today, so a change to how rows are read cannot leave a stale envelope behind.
#[test]
fn the_shipped_profiles_envelope_is_its_datas() {
    let profile = supernode::profile::Profile::default_profile();
    let mut data = supernode::calibrate::Dataset::default();
    data.add_csv(&crate::measurements_csv(), &profile).unwrap();
    let cov = data.envelope();
    let m = &profile.meta;
    assert_eq!(m.calibrated_mechanisms, cov.mechanisms);
    assert_eq!(m.calibrated_kernels, cov.kernels);
    assert_eq!((&m.calibrated_node_counts, &m.calibrated_chips, m.calibrated_max_context), (&cov.node_counts, &cov.chips, cov.max_context));
    assert_eq!(m.calibrated_setups, cov.setups);
}

/// A mechanism is calibrated per kernel library: Gated DeltaNet ran on MLX in the published rows
/// (Qwen3.5 on vllm-mlx), never on llama.cpp, whose delta rule is a graph of its own ops; MLA
/// ran on both.
#[test]
fn a_mechanism_measured_on_another_library_is_extrapolated_and_says_where_it_was_measured() {
    let f = scenario("qwen3-next-1x-m3-ultra-mlx-32k.toml");
    let mlx = reasons(&calibration(&f, &[]));
    assert!(!mlx.iter().any(|x| x.contains("Gated DeltaNet")), "{mlx:?}");
    let lcpp = reasons(&calibration(&f, &["engine.name=llama-cpp", "model.quant=q4_k_m"]));
    assert!(
        lcpp.iter().any(|x| x.contains("no calibration row ran Gated DeltaNet recurrence on llama-cpp (qwen3_next; measured on mlx)")),
        "{lcpp:?}"
    );
    let ds = reasons(&calibration(&scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml"), &[]));
    assert!(!ds.iter().any(|x| x.contains("MLA")), "{ds:?}");
}

/// A weight kernel family is calibrated per library and chip: the GB10's vLLM rows streamed
/// MXFP4 and FP8 weights, so FP8 is inside and NVFP4 (Marlin) is an extrapolation that says so.
#[test]
fn a_kernel_family_no_row_streamed_is_extrapolated() {
    let f = scenario("spark-vllm-gptoss120b.toml");
    let fp8 = reasons(&calibration(&f, &["model.name=llama-3.1-8b", "model.quant=fp8"]));
    assert!(!fp8.iter().any(|x| x.contains("weights on cuda")), "{fp8:?}");
    let nvfp4 = reasons(&calibration(&f, &["model.name=llama-3.1-8b", "model.quant=nvfp4"]));
    assert!(nvfp4.iter().any(|x| x.contains("no calibration row ran nvfp4 weights on cuda, gb10")), "{nvfp4:?}");
}
