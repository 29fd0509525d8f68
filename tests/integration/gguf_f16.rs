//! gpt-oss GGUF files labelled F16/BF16 (issue 20, "Files as they ship"): llama.cpp's converter
//! keeps gpt-oss's routed experts in MXFP4 whatever `--outtype` is (convert_hf_to_gguf.py class
//! `GptOssModel`, `repack_mxfp4`), so the file llama-bench types F16 holds MXFP4 experts and
//! 16-bit attention, router, embedding and LM head: the `mxfp4-f16` preset. `validate` reads the
//! labels people write for it so, and a scenario asking for 16-bit gpt-oss on a GGUF runtime is
//! refused with the preset named.

use serde_json::Value;
use supernode::llm::TensorClass;

use crate::{bin, write_text};

const HEADER: &str =
    "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";

/// Stored bytes of gpt-oss-120b under `quant`: the whole file, and those one decoded token reads
/// (every weight but the embedding table, of which a token reads one row, with the routed
/// experts at top-4 of 128).
fn gpt_oss_120b_bytes(quant: &str) -> (f64, f64) {
    let cat = supernode::catalog::catalog();
    let (_, spec) = cat.model("gpt-oss-120b").unwrap();
    let moe = spec.moe.as_ref().unwrap();
    let q = cat.quant(quant).unwrap();
    let per_token = spec
        .bytes_by_class(q)
        .into_iter()
        .map(|(c, b)| match c {
            TensorClass::Embedding => 0.0,
            TensorClass::RoutedExpert => b * moe.active as f64 / moe.experts as f64,
            _ => b,
        })
        .sum();
    (spec.weight_bytes(q), per_token)
}

#[test]
fn the_f16_file_is_the_mxfp4_hf_bytes_and_reads_more_per_token_than_the_q8_remainder() {
    let (file, token) = gpt_oss_120b_bytes("mxfp4-f16");
    let (hf_file, _) = gpt_oss_120b_bytes("mxfp4-hf");
    let (q8_file, q8_token) = gpt_oss_120b_bytes("mxfp4");
    // Experts 36 layers x 128 x 3 x 2880^2 = 114.65 B weights at 4.25 bits = 60.91 GB; the rest
    // (attention 26.5 M a layer, router 0.37 M a layer, embedding and LM head 579 M each)
    // 2.127 B weights at 2 bytes = 4.25 GB: 65.16 GB, as mxfp4-hf (the same bytes in GGUF).
    assert!((file / 1e9 - 65.16).abs() < 0.05, "{:.3} GB", file / 1e9);
    assert!((file / hf_file - 1.0).abs() < 0.02, "{file} vs mxfp4-hf {hf_file}");
    // Not 117 B x 2 bytes = 234 GB of 16-bit experts: it fits a 128 GB box.
    assert!(file < 128e9 * 0.75);
    // Per token: experts 1.90 GB (4 of 128) + the 16-bit rest 3.10 GB = 5.00 GB, against 3.55 GB
    // with the rest at 8.5 bits (the ggml-org MXFP4 GGUF): 1.41x.
    let ratio = token / q8_token;
    assert!((ratio - 1.41).abs() < 0.01, "per-token bytes ratio {ratio:.4} ({token} vs {q8_token})");
    assert!(file > q8_file, "{file} vs {q8_file}");
}

/// `validate --json` on a one-row CSV of a Framework Desktop llama-bench tg128 decode of
/// gpt-oss-120b with `quant` as written: the prediction and the row's assumptions.
fn validate_one(quant: &str) -> (f64, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let csv = format!(
        "{HEADER}r,framework-desktop-ai-max-395,1,128gb,gpt-oss-120b,{quant},llama-cpp,none,none,,,decode_tokens_per_s,30,tok/s,test,\n"
    );
    let path = write_text(dir.path(), "rows.csv", &csv);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().stdout.clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let row = &v["rows"].as_array().unwrap_or_else(|| panic!("{v}"))[0];
    let assumed = row["assumptions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    (row["predicted"].as_f64().unwrap_or_else(|| panic!("{v}")), assumed)
}

#[test]
fn validate_reads_a_16_bit_gpt_oss_gguf_as_mxfp4_experts_with_a_16_bit_rest() {
    let (mxfp4, plain) = validate_one("mxfp4");
    assert!(!plain.iter().any(|a| a.contains("mxfp4-f16")), "{plain:?}");
    let (_, per_token_q8) = gpt_oss_120b_bytes("mxfp4");
    let (_, per_token_f16) = gpt_oss_120b_bytes("mxfp4-f16");
    let bytes_ratio = per_token_f16 / per_token_q8;
    for label in ["mxfp4 (f16 label in llama-bench)", "F16", "BF16"] {
        let (f16, assumed) = validate_one(label);
        assert!(assumed.iter().any(|a| a.contains("read as mxfp4-f16") && a.contains("repack_mxfp4")), "{label}: {assumed:?}");
        // More bytes per token, never more than their ratio slower (launches and host work
        // do not grow with the bytes).
        let slower = mxfp4 / f16;
        assert!(
            slower > 1.05 && slower <= bytes_ratio * 1.001,
            "{label}: {f16:.2} vs mxfp4 {mxfp4:.2} ({slower:.3}x, bytes {bytes_ratio:.3}x)"
        );
    }
}

/// A one-node scenario of `model` in `quant` on `engine`.
fn scenario(node: &str, model: &str, quant: &str, engine: &str) -> String {
    format!(
        "[cluster]\nnodes = [\"{node}\"]\n[engine]\nname = \"{engine}\"\nparallelism = \"none\"\n\
         [workload]\nkind = \"generate\"\nprompt_tokens = 128\ngenerate_tokens = 32\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n"
    )
}

fn decode(dir: &std::path::Path, text: &str) -> f64 {
    let path = write_text(dir, "s.toml", text);
    let out = bin().args(["run", "--no-write", "--json"]).arg(&path).assert().success().get_output().stdout.clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["decode_tokens_per_s"].as_f64().unwrap_or_else(|| panic!("{v}"))
}

#[test]
fn a_16_bit_gpt_oss_scenario_on_a_gguf_runtime_is_refused_with_the_preset_named() {
    let dir = tempfile::tempdir().unwrap();
    let fw = "framework-desktop-ai-max-395";
    for (model, quant, engine) in
        [("gpt-oss-120b", "bf16", "llama-cpp"), ("gpt-oss-120b", "f16", "llama-cpp"), ("openai/gpt-oss-20b", "bf16", "ollama")]
    {
        let path = write_text(dir.path(), "bad.toml", &scenario(fw, model, quant, engine));
        let out = bin().args(["run", "--no-write"]).arg(&path).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("keeps the routed experts in MXFP4"), "{model} {quant}: {err}");
        assert!(err.contains("quant = \"mxfp4-f16\""), "{model} {quant}: {err}");
        assert!(err.contains("bad.toml:"), "located at the key: {err}");
    }
    // The F16 file runs, slower than the 8-bit remainder of ggml-org's MXFP4 file.
    let f16 = decode(dir.path(), &scenario(fw, "gpt-oss-120b", "mxfp4-f16", "llama-cpp"));
    let q8 = decode(dir.path(), &scenario(fw, "gpt-oss-120b", "mxfp4", "llama-cpp"));
    assert!(f16 < q8, "mxfp4-f16 {f16:.2} vs mxfp4 {q8:.2}");
    // 16 bits stay 16 bits where the files exist: gpt-oss bf16 on MLX (the dequantized
    // checkpoint, 234 GB on a 512 GB Mac) and any other model's bf16 GGUF.
    assert!(decode(dir.path(), &scenario("m3-ultra-80c-512gb", "gpt-oss-120b", "bf16", "mlx-lm")) > 0.0);
    assert!(decode(dir.path(), &scenario(fw, "llama-3.1-8b", "bf16", "llama-cpp")) > 0.0);
}

/// A gpt-oss `config.json` as OpenAI ships it (`quantization_config.quant_method = "mxfp4"`)
/// imported with no `model.quant` is the checkpoint it declares: MXFP4 experts and bf16 rest
/// (`mxfp4-hf`, ~65.2 GB) on vLLM, and on llama.cpp and mlx-lm the conversions people run there
/// (`mxfp4`: ggml-org's GGUF, mlx-community's MXFP4-Q8), never 234 GB of bf16 experts.
#[test]
fn an_imported_gpt_oss_config_is_its_mxfp4_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 36, "hidden_size": 2880,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4,
        "intermediate_size": 2880, "sliding_window": 128, "vocab_size": 201088, "tie_word_embeddings": false,
        "max_position_embeddings": 131072,
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}"#;
    write_text(dir.path(), "config.json", config);
    let weights = |engine: &str, node: &str| {
        let sc = write_text(
            dir.path(),
            &format!("{engine}.toml"),
            &format!(
                "name = \"x\"\n[cluster]\nnode = \"{node}\"\ncount = 1\n[model]\nhf_config = \"config.json\"\n[engine]\nname = \"{engine}\"\n[workload]\nprompt_tokens = 64\ngenerate_tokens = 2\n"
            ),
        );
        let out = bin().args(["run", "--json", "--no-intervals"]).arg(&sc).output().unwrap();
        assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["memory"][0]["weights_gb"].as_f64().unwrap()
    };
    let preset = |q: &str| gpt_oss_120b_bytes(q).0 / 1e9;
    let vllm = weights("vllm", "dgx-spark");
    assert!((vllm / preset("mxfp4-hf") - 1.0).abs() < 0.01, "{vllm} GB vs mxfp4-hf {}", preset("mxfp4-hf"));
    for (engine, node) in [("llama-cpp", "dgx-spark"), ("mlx-lm", "m3-ultra-80c-512gb")] {
        let w = weights(engine, node);
        assert!((w / preset("mxfp4") - 1.0).abs() < 0.01, "{engine}: {w} GB vs mxfp4 {}", preset("mxfp4"));
    }
}
