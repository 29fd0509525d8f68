//! Systems and engines as published rows write them (issue 20 item 5): chip names and makers'
//! words in the system column, `llama.cpp` with a backend, LM Studio by its file; and a row the
//! twin refuses (a model that does not fit) listed with its reason while the other rows are
//! scored, never an error that stops `validate`.

use serde_json::Value;

use crate::{bin, write_text};

const HEADER: &str =
    "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";

/// A decode row of Llama 3.2 3B (`model` and `quant` as given).
fn row(id: &str, system: &str, mix: &str, quant: &str, engine: &str) -> String {
    format!("{id},{system},1,{mix},llama-3.2-3b,{quant},{engine},none,none,,1,decode_tokens_per_s,50,tok/s,test,\n")
}

#[test]
fn validate_reads_chip_names_engine_spellings_and_lists_a_row_that_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from(HEADER);
    for line in [
        row("strix", "AMD Ryzen AI Max+ 395", "128gb", "Q4_K_M", "llama.cpp (Vulkan)"),
        row("framework", "framework-desktop-ai-max-395", "128gb", "q4_k_m", "llama-cpp"),
        row("gx10", "asus-gx10", "128gb", "Q4_K_M", "llama.cpp"),
        row("spark", "NVIDIA DGX Spark", "128gb", "q4_k_m", "llama-cpp"),
        row("m5", "m5-max", "128gb", "4bit", "mlx_lm"),
        row("lmstudio-mlx", "mac-studio-m3-ultra", "512gb", "4bit", "LM Studio"),
        row("lmstudio-gguf", "mac-studio-m3-ultra", "512gb", "Q4_K_M", "lm-studio"),
        row("mlx", "mac-studio-m3-ultra", "512gb", "mlx-4bit", "mlx-lm"),
        row("gguf", "mac-studio-m3-ultra", "512gb", "q4_k_m", "llama-cpp"),
        row("cpu", "framework-desktop-ai-max-395", "128gb", "q4_k_m", "llama.cpp (CPU)"),
        "no-fit,mac-studio-m3-ultra,1,512gb,kimi-k2-thinking,mlx-4bit,mlx-lm,none,none,,1,decode_tokens_per_s,10,tok/s,test,\n".into(),
    ] {
        csv.push_str(&line);
    }
    let path = write_text(dir.path(), "rows.csv", &csv);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let get = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not scored: {v}")).clone();
    let predicted = |id: &str| get(id)["predicted"].as_f64().unwrap();
    let said = |id: &str, what: &str| get(id)["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    // The chip's marketing name is the Framework Desktop (the first preset of that chip and
    // memory), said so; the Vulkan backend is named as not told apart.
    assert_eq!(predicted("strix"), predicted("framework"));
    assert!(said("strix", "taken as framework-desktop-ai-max-395"), "{}", get("strix"));
    assert!(said("strix", "vulkan"), "{}", get("strix"));
    // One GB10 box alone decodes as another (same chip and memory).
    assert_eq!(predicted("gx10"), predicted("spark"));
    assert!(predicted("m5") > 0.0);
    // LM Studio runs MLX files with MLX, GGUF files with llama.cpp.
    assert_eq!(predicted("lmstudio-mlx"), predicted("mlx"));
    assert_eq!(predicted("lmstudio-gguf"), predicted("gguf"));
    assert!(said("lmstudio-mlx", "LM Studio running an MLX file"), "{}", get("lmstudio-mlx"));
    let why = |id: &str| crate::skip_reason(&v, id);
    assert!(why("cpu").contains("CPU backend is not modelled"), "{v}");
    assert!(
        why("no-fit").starts_with("the twin refuses the row's scenario: kimi-k2-thinking (mlx-4bit) does not fit"),
        "{}",
        why("no-fit")
    );
    assert_eq!(rows.len(), 9, "{v}");
}
