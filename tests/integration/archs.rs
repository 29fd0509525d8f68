//! Today's architectures from their config.json (issue 21, item 2): each file of
//! `../shared/configs/` (copied to `tests/fixtures/hf-configs/`, sources in its SOURCES.md)
//! imports, its total and active parameters match the published counts, its KV cache (and a
//! hybrid's recurrent state) at 0, 32k and 128k tokens is the hand-computed one, and
//! `supernode run` predicts a scenario that names it.
//!
//! "Active" is this twin's count of what decode reads per token: every layer's weights with
//! the selected experts, plus the LM head, without the embedding table (FACTS-2026 section C
//! uses the same convention for its INFERRED counts).

use std::path::PathBuf;

use serde_json::Value;
use supernode::llm::{LayerMixer, ModelSpec, OpClass};

use crate::{bin, root, write_text};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

fn fixture(file: &str) -> PathBuf {
    root().join("tests/fixtures/hf-configs").join(file)
}

fn config(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(file)).unwrap()).unwrap()
}

fn import(file: &str) -> ModelSpec {
    ModelSpec::from_hf_config(file, file, &config(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// `got` within `tol` (a fraction) of `want`.
fn near(what: &str, got: f64, want: f64, tol: f64) {
    assert!((got / want - 1.0).abs() <= tol, "{what}: {got:.3} vs {want} (tolerance {:.0}%)", tol * 100.0);
}

/// Billions of total and active parameters.
fn params_b(m: &ModelSpec) -> (f64, f64) {
    (m.total_params() as f64 / 1e9, m.active_params() as f64 / 1e9)
}

/// The fixture copies are the shared files (when the shared folder lies beside the clone).
#[test]
fn fixture_configs_are_the_shared_ones() {
    let shared = root().join("../shared/configs");
    let Ok(dir) = std::fs::read_dir(&shared) else { return };
    for e in dir.flatten() {
        let name = e.file_name().into_string().unwrap();
        let ours = std::fs::read(fixture(&name)).unwrap_or_else(|_| panic!("{name} is missing from tests/fixtures/hf-configs"));
        assert_eq!(ours, std::fs::read(e.path()).unwrap(), "{name} differs from ../shared/configs/{name}: copy it again");
    }
}

/// Every architecture imports, and its published total (model cards as FACTS-2026 section C and
/// the configs' SOURCES.md cite them) is met within 2%; the active count within 1% of FACTS-2026
/// section C's INFERRED one (published active counts are rounded and differ in whether they
/// count the embedding row).
#[test]
fn parameter_counts_match_the_published_ones() {
    // (file, published total B, FACTS-2026 active B)
    let cases = [
        ("glm-4.6.json", 355.0, 32.9),               // GLM-4.6 "355B total / 32B active"; no MTP layer here
        ("minimax-m2.json", 230.0, 10.4),            // MiniMax-M2 "230B / 10B"
        ("minimax-m2.1.json", 230.0, 10.4),          // same architecture (SOURCES.md)
        ("qwen3.5-35b-a3b.json", 35.0, 2.95),        // Qwen3.5-35B-A3B (llama.cpp prints 34.66 B)
        ("qwen3.5-122b-a10b.json", 122.0, 9.0),      // Qwen3.5-122B-A10B (text model)
        ("qwen3-coder-next.json", 80.0, 3.56),       // Qwen3-Next-80B-A3B
        ("gemma-3-27b-it.json", 27.0, 27.0),         // Gemma-3-27B, dense, tied embeddings
        ("llama-4-scout-17b-16e.json", 109.0, 16.1), // Llama-4-Scout "109B / 17B" (text model 107.8B)
    ];
    for (file, total, active) in cases {
        let m = import(file);
        let (t, a) = params_b(&m);
        near(&format!("{file} total"), t, total, 0.02);
        near(&format!("{file} active"), a, active, 0.01);
    }
    // Qwen3-30B-A3B (plain qwen3_moe, unchanged path): 30.5B total, 3.3B active with the
    // embedding row (Qwen3 model card).
    let m = import("qwen3-30b-a3b.json");
    let (t, a) = params_b(&m);
    near("qwen3-30b-a3b total", t, 30.5, 0.01);
    near("qwen3-30b-a3b active + embedding", a + m.embedding_params() as f64 / 1e9, 3.3, 0.02);
    assert_eq!(import("qwen3-coder-30b-a3b.json").total_params(), m.total_params());
    // Llama 3.1 8B: 8.03B.
    near("llama-3.1-8b total", params_b(&import("llama-3.1-8b-instruct.json")).0, 8.03, 0.01);
}

/// KV cache (and recurrent state) of one sequence at 0, 32k and 128k tokens, against the
/// per-token figures of FACTS-2026 section C (bf16 cache).
#[test]
fn kv_and_state_bytes_at_0_32k_and_128k() {
    let contexts = [0u64, 32_768, 131_072];
    // Full attention on every layer: KV = per token x L; no state.
    for (file, per_token) in [
        ("glm-4.6.json", 368 * KIB),      // 92 x 8 x 128 x 2 x 2 B
        ("minimax-m2.1.json", 248 * KIB), // 62 x 8 x 128 x 2 x 2 B
        ("qwen3-30b-a3b.json", 96 * KIB), // 48 x 4 x 128 x 2 x 2 B
        ("llama-3.1-8b-instruct.json", 128 * KIB),
    ] {
        let m = import(file);
        for l in contexts {
            assert_eq!(m.kv_bytes(l), per_token * l, "{file} at {l}");
        }
        assert_eq!(m.state_bytes(), 0, "{file}");
    }
    // Hybrids: KV only on the full-attention layers, a fixed state on the Gated DeltaNet ones.
    for (file, per_token, state) in [
        // 10 full layers x 2 KiB; 30 x (32 x 128 x 128 fp32 + 8192 conv channels x 3 x 2 B).
        ("qwen3.5-35b-a3b.json", 20 * KIB, 30 * (2 * MIB + 48 * KIB)),
        // 12 full x 2 KiB; 36 x (64 value heads: 4 MiB + 12288 x 3 x 2 B).
        ("qwen3.5-122b-a10b.json", 24 * KIB, 36 * (4 * MIB + 72 * KIB)),
        // 12 full x 2 KiB; 36 x (2 MiB + 48 KiB) = 73.7 MiB.
        ("qwen3-coder-next.json", 24 * KIB, 36 * (2 * MIB + 48 * KIB)),
    ] {
        let m = import(file);
        for l in contexts {
            assert_eq!(m.kv_bytes(l), per_token * l, "{file} at {l}");
        }
        assert_eq!(m.state_bytes(), state, "{file}");
    }
    near("Qwen3-Next state MiB", import("qwen3-coder-next.json").state_bytes() as f64 / MIB as f64, 73.7, 0.001);
    // Gemma 3 27B: 10 global layers x 8 KiB x L + 52 local x 8 KiB x min(L, 1024).
    let g = import("gemma-3-27b-it.json");
    for l in contexts {
        assert_eq!(g.kv_bytes(l), 10 * 8 * KIB * l + 52 * 8 * KIB * l.min(1024), "gemma at {l}");
    }
    // Llama 4 Scout: 12 NoPE global layers x 4 KiB x L + 36 chunked x 4 KiB x min(L, 8192).
    let s = import("llama-4-scout-17b-16e.json");
    for l in contexts {
        assert_eq!(s.kv_bytes(l), 12 * 4 * KIB * l + 36 * 4 * KIB * l.min(8192), "scout at {l}");
    }
}

/// What decode reads from the cache per token at context L: the attention ops' bytes per
/// context token times the tokens they attend over.
fn kv_read_per_token(m: &ModelSpec, l: u64) -> u64 {
    (0..m.layers)
        .flat_map(|i| m.layer_ops(i))
        .filter(|o| o.class == OpClass::Attention)
        .map(|o| o.kv_bytes_per_ctx * o.effective_context(l))
        .sum()
}

/// Decode reads: a chunked layer reads only its current chunk ((L - 1) mod 8192 + 1 tokens), a
/// sliding layer its window, a Gated DeltaNet layer its state (read and written once a step).
#[test]
fn decode_reads_follow_each_layers_mixer() {
    let s = import("llama-4-scout-17b-16e.json");
    // FACTS-2026 section C: 12 x 4 KiB x L + 36 x 4 KiB x ((L mod 8192) + 1) for the token at
    // position L (L + 1 tokens in the sequence).
    for pos in [0u64, 8191, 8192, 32_768, 131_071] {
        assert_eq!(kv_read_per_token(&s, pos + 1), 12 * 4 * KIB * (pos + 1) + 36 * 4 * KIB * (pos % 8192 + 1), "scout at {pos}");
    }
    assert_eq!(s.mixer(3), LayerMixer::Full);
    assert_eq!(s.mixer(0), LayerMixer::Chunked(8192));
    let g = import("gemma-3-27b-it.json");
    assert_eq!(kv_read_per_token(&g, 32_768), 10 * 8 * KIB * 32_768 + 52 * 8 * KIB * 1024);
    assert_eq!((g.mixer(4), g.mixer(5)), (LayerMixer::Sliding(1024), LayerMixer::Full));
    let q = import("qwen3.5-35b-a3b.json");
    assert_eq!(kv_read_per_token(&q, 32_768), 20 * KIB * 32_768);
    let rec: Vec<_> = (0..q.layers).flat_map(|i| q.layer_ops(i)).filter(|o| o.class == OpClass::Recurrent).collect();
    assert_eq!(rec.len(), 30);
    assert!(rec.iter().all(|o| o.state_bytes == 2 * MIB + 48 * KIB && o.depends_on_context()));
    // 7 x 32 x 128 x 128 (FACTS-2026: 3.7 MFLOP) + 2 x 8192 x 4 for the convolution.
    assert_eq!(rec[0].recurrence_flops_per_token, 7 * 32 * 128 * 128 + 2 * 8192 * 4);
}

/// The shapes each family's keys describe: GLM's dense first layers, biases and shared expert;
/// MiniMax's sigmoid routing without a shared expert; the hybrids' gated attention every 4th
/// layer; a multimodal wrapper's text model.
#[test]
fn family_shapes_come_from_their_keys() {
    let glm = import("glm-4.6.json");
    let moe = glm.moe.clone().unwrap();
    assert_eq!((moe.first_k_dense, moe.shared, moe.shared_ffn, moe.sigmoid_routing), (3, 1, 1536, true));
    assert!(!moe.is_moe_layer(2) && moe.is_moe_layer(3));
    assert!(glm.qkv_bias && glm.qk_norm);
    let q = glm.layer_ops(0).into_iter().find(|o| o.name == "q_proj").unwrap();
    assert_eq!(q.params, 5120 * 96 * 128 + 96 * 128);
    let mm = import("minimax-m2.1.json");
    let moe = mm.moe.clone().unwrap();
    assert_eq!((moe.shared, moe.sigmoid_routing, moe.experts, moe.active), (0, true, 256, 8));
    assert!(mm.mixers.iter().all(|m| *m == LayerMixer::Full));
    let next = import("qwen3-coder-next.json");
    let full: Vec<u64> = (0..next.layers).filter(|&i| next.mixer(i) == LayerMixer::Full).collect();
    assert_eq!(full, (0..12).map(|k| 4 * k + 3).collect::<Vec<_>>());
    // The output gate doubles q_proj: 2048 x 16 x 256 x 2.
    let q = next.layer_ops(3).into_iter().find(|o| o.name == "q_proj").unwrap();
    assert_eq!(q.params, 2048 * 16 * 256 * 2);
    // Qwen3.5 names its text model inside a wrapper, tie_word_embeddings at the top.
    let q35 = import("qwen3.5-35b-a3b.json");
    assert_eq!((q35.arch.as_str(), q35.tie_embeddings, q35.layers, q35.max_context), ("qwen3_5_moe", false, 40, Some(262_144)));
    assert!(import("gemma-3-27b-it.json").tie_embeddings);
    // A Qwen3-VL wrapper around Qwen3-30B-A3B's text model is that model.
    let text = config("qwen3-30b-a3b.json");
    let mut inner = text.clone();
    inner["model_type"] = "qwen3_vl_moe_text".into();
    let vl = serde_json::json!({"model_type": "qwen3_vl_moe", "text_config": inner, "vision_config": {"depth": 27}});
    let vl = ModelSpec::from_hf_config("vl", "vl", &vl).unwrap();
    assert_eq!((vl.total_params(), vl.kv_bytes(1000)), (import("qwen3-30b-a3b.json").total_params(), 96 * KIB * 1000));
}

/// Broken hybrid and pattern keys are refused naming the key.
#[test]
fn broken_layer_patterns_are_refused() {
    let mut c = config("qwen3.5-35b-a3b.json");
    c["text_config"]["layer_types"] = serde_json::json!(["linear_attention", "full_attention"]);
    let e = ModelSpec::from_hf_config("x", "x", &c).unwrap_err().to_string();
    assert!(e.contains("`layer_types`") && e.contains("lists 2 layers"), "{e}");
    let mut c = config("minimax-m2.json");
    c["attn_type_list"][5] = 0.into();
    let e = ModelSpec::from_hf_config("x", "x", &c).unwrap_err().to_string();
    assert!(e.contains("`attn_type_list`") && e.contains("lightning"), "{e}");
    let mut c = config("glm-4.6.json");
    c["partial_rotary_factor"] = 1.5.into();
    let e = ModelSpec::from_hf_config("x", "x", &c).unwrap_err().to_string();
    assert!(e.contains("`partial_rotary_factor`"), "{e}");
    let mut c = config("qwen3-coder-next.json");
    c["linear_num_value_heads"] = 1_000_000.into();
    c["linear_value_head_dim"] = 1_000_000.into();
    let e = ModelSpec::from_hf_config("x", "x", &c).unwrap_err().to_string();
    assert!(e.contains("parameters, more than"), "{e}");
    let e = ModelSpec::from_hf_config(
        "x",
        "x",
        &serde_json::json!({"model_type": "mamba", "num_hidden_layers": 1, "hidden_size": 8, "vocab_size": 8, "num_attention_heads": 1}),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unsupported model_type `mamba`") && e.contains("glm4_moe"), "{e}");
}

/// `supernode run` predicts a scenario naming each config (`[model] hf_config`), on one M3
/// Ultra with mlx-lm and with llama.cpp: decode and prefill positive, memory the weights plus
/// the cache.
#[test]
fn run_predicts_every_config() {
    let t = tempfile::tempdir().unwrap();
    let files = [
        "glm-4.6.json",
        "minimax-m2.1.json",
        "qwen3.5-35b-a3b.json",
        "qwen3.5-122b-a10b.json",
        "qwen3-coder-next.json",
        "gemma-3-27b-it.json",
        "llama-4-scout-17b-16e.json",
    ];
    for (file, (engine, quant)) in files.iter().flat_map(|f| [(f, ("mlx-lm", "mlx-4bit")), (f, ("llama-cpp", "q4_k_m"))]) {
        let scenario = format!(
            "name = \"{file}\"\nseed = 1\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\n[model]\nhf_config = {path:?}\nquant = \"{quant}\"\n[engine]\nname = \"{engine}\"\n[workload]\nprompt_tokens = 4096\ngenerate_tokens = 32\n",
            path = fixture(file).display().to_string()
        );
        let s = write_text(t.path(), "s.toml", &scenario);
        let o = bin().args(["run", "--json", "--no-write", "--no-intervals", "-q"]).arg(&s).output().unwrap();
        assert!(o.status.success(), "{file} {engine}: {}", String::from_utf8_lossy(&o.stderr));
        let j: Value = serde_json::from_slice(&o.stdout).unwrap();
        let decode = j["decode_tokens_per_s"].as_f64().unwrap_or_else(|| panic!("{file}: {j}"));
        assert!(decode > 1.0 && decode < 1000.0, "{file} {engine}: decode {decode}");
    }
}

/// The catalog presets of models with published rows import to the same model as their
/// config files, and answer to the Hugging Face names the rows use.
#[test]
fn presets_equal_their_config_files() {
    let c = supernode::catalog::catalog();
    for (hf, file) in [
        ("MiniMaxAI/MiniMax-M2.1", "minimax-m2.1.json"),
        ("zai-org/GLM-4.6", "glm-4.6.json"),
        ("Qwen/Qwen3.5-35B-A3B", "qwen3.5-35b-a3b.json"),
        ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b.json"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-30b-a3b.json"),
        ("MiniMaxAI/MiniMax-M2", "minimax-m2.json"),
        ("Qwen/Qwen3-Coder-Next", "qwen3-coder-next.json"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "qwen3-coder-next.json"),
        ("Qwen/Qwen3.5-122B-A10B", "qwen3.5-122b-a10b.json"),
        ("google/gemma-3-27b-it", "gemma-3-27b-it.json"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout-17b-16e.json"),
    ] {
        let (_, preset) = c.find_model(hf).unwrap_or_else(|e| panic!("no preset answers to {hf}: {e}"));
        let m = import(file);
        assert_eq!(
            (preset.total_params(), preset.active_params(), preset.kv_bytes(4096), preset.state_bytes(), preset.max_context),
            (m.total_params(), m.active_params(), m.kv_bytes(4096), m.state_bytes(), m.max_context),
            "{hf}"
        );
        assert_eq!((preset.mixers.clone(), preset.layer_ops(3)), (m.mixers.clone(), m.layer_ops(3)), "{hf}");
    }
}

/// Every preset added for the open world (issue 21) against its published totals: the model
/// card's total within 2%, FACTS-2026 section C's INFERRED active count within 1% (gpt-oss-20b
/// is not in FACTS: its model card's 21B / 3.6B, both within 2%).
#[test]
fn new_presets_match_their_published_parameter_counts() {
    let c = supernode::catalog::catalog();
    // (preset, published total B, active B, active tolerance)
    let cases = [
        ("qwen3-coder-next", 80.0, 3.56, 0.01),       // Qwen3-Next-80B-A3B; FACTS-2026 C 79.67B / 3.56B
        ("qwen3.5-122b-a10b", 122.0, 9.0, 0.01),      // FACTS-2026 C 122.1B / 9.0B
        ("gemma-3-27b", 27.0, 27.0, 0.01),            // FACTS-2026 C 27.0B, dense, tied
        ("llama-4-scout-17b-16e", 109.0, 16.1, 0.01), // "109B / 17B"; FACTS-2026 C 107.8B / 16.1B
        ("glm-4.5-air", 106.0, 12.8, 0.01),           // "106B / 12B"; FACTS-2026 C 106.9B / 12.8B
        ("gpt-oss-20b", 21.0, 3.6, 0.02),             // openai/gpt-oss-20b model card: 21B / 3.6B
        ("qwen3-coder-30b-a3b", 30.5, 3.04, 0.01),    // Qwen3-Coder-30B-A3B card: 30.5B; shapes of Qwen3-30B-A3B
    ];
    for (id, total, active, tol) in cases {
        let (_, m) = c.model(id).unwrap_or_else(|| panic!("no preset {id}"));
        let (t, a) = params_b(m);
        near(&format!("{id} total"), t, total, 0.02);
        near(&format!("{id} active"), a, active, tol);
    }
    // gpt-oss-20b is gpt-oss-120b with 24 layers and 32 experts: the same layer shapes.
    let (_, small) = c.model("gpt-oss-20b").unwrap();
    let (_, big) = c.model("gpt-oss-120b").unwrap();
    assert_eq!((small.layers, big.layers), (24, 36));
    assert_eq!(small.kv_bytes(4096) * 36, big.kv_bytes(4096) * 24);
}
