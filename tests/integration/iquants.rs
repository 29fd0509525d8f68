//! llama.cpp's i-quant file types and Unsloth's dynamic labels (issue 20 item 5): whole-model
//! sizes in the order their block sizes and tensor rules give, `supernode catalog quants` lists
//! them, and `validate` predicts rows that name them (an Unsloth label read as the nearest
//! standard file type, the assumption said).

use serde_json::Value;
use supernode::catalog::catalog;

use crate::{bin, write_text};

/// Stored bits per weight of a catalog model under a quant preset (norms and embeddings
/// included).
fn bits_per_weight(model: &str, quant: &str) -> f64 {
    let c = catalog();
    let (_, m) = c.model(model).unwrap_or_else(|| panic!("model {model}"));
    m.weight_bytes(c.quant(quant).unwrap_or_else(|| panic!("quant {quant}"))) * 8.0 / m.total_params() as f64
}

/// On every catalog model the GGUF presets store bytes in the order llama.cpp's mixes give: each
/// i-quant mix below the next, IQ4_XS (4.25-bit blocks) below Q4_K_S (4.5), and the S/M/L k-quant
/// mixes of one base in order; strictly where every weight row splits into 256-blocks. Where some
/// do not (GLM 4.5 Air's experts, gpt-oss's 2880 everywhere) those tensors fall back to a 32-block
/// type (`tensor_type_fallback`) and neighbours may tie; on gpt-oss every 256-block type falls
/// back, IQ3_M's Q4_K bumps become Q5_0 (5.5 bits) and IQ3_M ends up larger than IQ4_XS, as
/// llama.cpp's rules make it: that pair alone is skipped there.
#[test]
fn gguf_presets_order_by_size_on_every_catalog_model() {
    let chain =
        ["iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq3_xxs", "iq3_xs", "iq3_s", "iq3_m", "iq4_xs", "q4_k_s", "q4_k_m"];
    let pairs = [("iq4_xs", "iq4_nl"), ("q3_k_s", "q3_k_m"), ("q3_k_m", "q3_k_l"), ("q5_k_s", "q5_k_m"), ("q3_k_l", "q4_k_s")];
    let mut strict = 0;
    for (p, m) in &catalog().models {
        let s = m.quant_shape();
        let bpw = |q: &str| bits_per_weight(&p.id, q);
        let all_256 = [s.hidden, s.attn_out_in, s.ffn, s.expert_ffn].iter().all(|r| r % 256 == 0);
        strict += usize::from(all_256);
        for (a, b) in chain.windows(2).map(|w| (w[0], w[1])).chain(pairs) {
            if s.hidden % 256 != 0 && (a, b) == ("iq3_m", "iq4_xs") {
                continue;
            }
            let ok = if all_256 { bpw(a) < bpw(b) } else { bpw(a) <= bpw(b) * (1.0 + 1e-12) };
            assert!(ok, "{}: {a} {:.4} bits, {b} {:.4}", p.id, bpw(a), bpw(b));
        }
    }
    assert!(strict >= 10, "{strict} models checked strictly");
}

/// Llama 3.3 70B by hand: IQ2_XXS is 2.0625-bit blocks with a Q2_K embedding, a Q5_K output,
/// Q4_K attn_v and the first 10 of 80 ffn_down at Q2_K: about 2.2 bits overall; IQ4_XS is
/// 4.25-bit blocks with Q5_K attn_v and a Q6_K output: between 4.25 and 4.5.
#[test]
fn llama_70b_i_quant_sizes_by_hand() {
    let iq2 = bits_per_weight("llama-3.3-70b", "iq2_xxs");
    assert!((2.1..2.4).contains(&iq2), "iq2_xxs {iq2:.3} bits per weight");
    let iq4 = bits_per_weight("llama-3.3-70b", "iq4_xs");
    assert!((4.25..4.5).contains(&iq4), "iq4_xs {iq4:.3} bits per weight");
    let iq1 = bits_per_weight("llama-3.3-70b", "iq1_s");
    assert!((1.5625..2.0).contains(&iq1), "iq1_s {iq1:.3} bits per weight");
}

#[test]
fn catalog_lists_the_i_quant_presets_with_their_sources() {
    let out = bin().args(["catalog", "quants"]).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    for id in [
        "iq4_xs", "iq4_nl", "iq3_xxs", "iq3_xs", "iq3_s", "iq3_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq1_s", "iq1_m", "q3_k_s",
        "q3_k_l", "q5_k_s",
    ] {
        assert!(text.lines().any(|l| l.split_whitespace().next() == Some(id)), "{id} not listed:\n{text}");
    }
    assert!(text.contains("llama.cpp IQ4_XS rules"), "{text}");
}

const HEADER: &str =
    "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";

/// A decode row on one Framework Desktop with llama.cpp.
fn row(id: &str, model: &str, quant: &str) -> String {
    format!("{id},framework-desktop-ai-max-395,1,128gb,{model},{quant},llama-cpp,none,none,,1,decode_tokens_per_s,10,tok/s,test,\n")
}

/// `validate` predicts rows naming i-quants (as written and as llama.cpp prints them) and
/// Unsloth dynamic labels; a decode streams fewer bytes, so it is faster, and an Unsloth label
/// predicts what its standard file type does, with the assumption listed.
#[test]
fn validate_predicts_i_quant_and_unsloth_dynamic_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from(HEADER);
    for line in [
        row("iq4xs", "llama-3.3-70b", "IQ4_XS"),
        row("q4km", "llama-3.3-70b", "Q4_K_M"),
        row("iq2xxs", "llama-3.3-70b", "IQ2_XXS - 2.0625 bpw"),
        row("udq3", "qwen3-30b-a3b", "UD-Q3_K_XL"),
        row("q3km", "qwen3-30b-a3b", "q3_k_m"),
        row("udiq2", "qwen3-30b-a3b", "UD-IQ2_XXS"),
    ] {
        csv.push_str(&line);
    }
    let path = write_text(dir.path(), "rows.csv", &csv);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{v}");
    let get = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not scored: {v}")).clone();
    let predicted = |id: &str| get(id)["predicted"].as_f64().unwrap();
    let said = |id: &str, what: &str| get(id)["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    assert!(predicted("iq4xs") > predicted("q4km"), "{v}");
    assert!(predicted("iq2xxs") > predicted("iq4xs"), "{v}");
    assert_eq!(predicted("udq3"), predicted("q3km"));
    assert!(said("udq3", "`UD-Q3_K_XL` read as llama.cpp's q3_k_m rules"), "{}", get("udq3"));
    assert!(said("udiq2", "read as llama.cpp's iq2_xxs rules"), "{}", get("udiq2"));
    assert!(!said("iq4xs", "quant") && !said("iq4xs", "Unsloth"), "{}", get("iq4xs"));
}

/// A label no preset, file type or Unsloth reading answers to is still refused, listing the
/// presets (the i-quants among them).
#[test]
fn an_unknown_gguf_label_is_refused_listing_the_presets() {
    let dir = tempfile::tempdir().unwrap();
    let csv = format!("{HEADER}{}{}", row("tq", "llama-3.3-70b", "TQ1_0"), row("ok", "llama-3.3-70b", "IQ4_XS"));
    let path = write_text(dir.path(), "rows.csv", &csv);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&path).assert().success().get_output().clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = v["skipped"].as_array().unwrap();
    let why = skipped.iter().find(|s| s["id"] == "tq").unwrap_or_else(|| panic!("tq not skipped: {v}"))["reason"].as_str().unwrap();
    assert!(why.contains("quant `TQ1_0` unknown") && why.contains("iq4_xs"), "{why}");
}
