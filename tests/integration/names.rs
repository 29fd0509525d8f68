//! Names as published rows write them (issue 21): `validate` on a small CSV of Hugging Face
//! names, ollama tags, a `config:` note, system prefixes with a memory size, quant labels and
//! time-to-first-token rows (one request, four at once); which rows resolve, and the reason of
//! each refused one.

use serde_json::Value;

use crate::{bin, root};

#[test]
fn validate_resolves_the_names_people_write_and_says_why_it_refuses_the_rest() {
    let csv = root().join("tests/fixtures/names/data/rows.csv");
    let out = bin().current_dir(root()).args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success().get_output().clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut scored: Vec<&str> = v["rows"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    scored.sort_unstable();
    assert_eq!(
        scored,
        ["config-note", "hf-name", "ollama-tag", "other-memory", "prefix-memory", "prefix-only", "ttft", "ttft-concurrent"],
        "{v}"
    );
    let why = |id: &str| crate::skip_reason(&v, id);
    for (id, reason) in [
        (
            "unknown-model",
            "unknown model `Qwen/Qwen3-20B`: not a preset (supernode catalog models) and the row's notes name no `config: PATH`",
        ),
        (
            "unreadable-config",
            "unknown model `acme/Bar-7B` and its config `nowhere/bar.json` (notes) cannot be read: tried nowhere/bar.json and",
        ),
        ("ambiguous-system", "system `macbook-pro` with `128gb` is ambiguous: macbook-pro-m4-max-40c-128gb, macbook-pro-m5-max-40c-128gb"),
        // An M3 (not the catalog's M3 Max) in a size no preset has: refused, not derived.
        (
            "no-such-memory",
            "system `macbook-pro-m3` with `16gb`: no node preset of that memory (macbook-pro-m3-max-40c-64gb, macbook-pro-m3-max-40c-128gb, macbook-pro-m3-pro-18c-36gb)",
        ),
        ("unknown-quant", "quant `iq9_zz` unknown: name a quantization preset"),
        ("bits-on-cuda", "quant `4bit`: a 4-bit label names no single format for this engine"),
    ] {
        assert!(why(id).starts_with(reason), "{id}: {}", why(id));
    }
    assert_eq!(v["skipped"].as_array().unwrap().len(), 6, "{v}");
    // What each resolved row became, in its assumptions.
    let row = |id: &str| v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap().clone();
    let said = |id: &str, what: &str| row(id)["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    assert!(said("config-note", "imported from") && said("config-note", "configs/minimax-m2.json"), "{}", row("config-note"));
    // A box in a memory size no preset has: the preset with the row's memory, said so.
    assert!(said("other-memory", "modelled as gmktec-evo-x2-128gb with 64 GB"), "{}", row("other-memory"));
    // The time to first token is the 30k prompt's prefill: tens of seconds, not a rate.
    let ttft = row("ttft")["predicted"].as_f64().unwrap();
    assert!(ttft > 20.0 && ttft < 300.0, "{ttft}");
    // Four requests sent at once: the serving run's mean TTFT, each waiting for the prefills
    // before its own, so above one 1024-token prefill and below four.
    assert!(said("ttft-concurrent", "4 concurrent requests sent at once: the mean over the requests"), "{}", row("ttft-concurrent"));
    let dir = tempfile::tempdir().unwrap();
    let sc = crate::write_text(
        dir.path(),
        "one.toml",
        "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"llama-3.1-8b\"\nquant = \"fp8\"\n[engine]\nname = \"vllm\"\n\
         [workload]\nprompt_tokens = 1024\ngenerate_tokens = 1\n",
    );
    let out = bin().args(["run", "--json", "--no-write", "--no-intervals", "-q"]).arg(&sc).assert().success().get_output().clone();
    let one = serde_json::from_slice::<Value>(&out.stdout).unwrap()["ttft_s"].as_f64().unwrap();
    let four = row("ttft-concurrent")["predicted"].as_f64().unwrap();
    assert!(four > one && four < 4.0 * one, "mean of four {four} vs one {one}");
}

/// A name two presets answer to is refused in a scenario file too, and a name people write
/// resolves there as in `validate`.
#[test]
fn a_scenario_names_its_model_as_people_write_it() {
    let dir = tempfile::tempdir().unwrap();
    let sc = crate::write_text(
        dir.path(),
        "s.toml",
        "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"openai/gpt-oss-20b\"\n[engine]\nname = \"llama-cpp\"\n",
    );
    let out = bin().args(["run", "--json", "--no-write", "--no-intervals", "-q"]).arg(&sc).assert().success().get_output().clone();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["model"], "gpt-oss-20b", "{j}");
    let bad = crate::write_text(dir.path(), "b.toml", "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"qwen3:20b\"\n");
    let out = bin().args(["run", "--no-write", "-q"]).arg(&bad).assert().failure().get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model `qwen3:20b`"), "{}", String::from_utf8_lossy(&out.stderr));
}
