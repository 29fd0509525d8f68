//! The twin against published measurements.

use supernode::calibrate::validate::{read_csv, validate};
use supernode::profile::Profile;

#[test]
fn geerling_rows_within_15_percent_with_the_right_shape() {
    let rows = read_csv(&crate::measurements_csv()).unwrap();
    let report = validate(&rows, &Profile::default_profile());
    let g: Vec<_> = report.rows.iter().filter(|r| r.id.starts_with("g-")).collect();
    assert_eq!(g.len(), 12, "all twelve Geerling rows are predicted");
    let mape = g.iter().map(|r| r.error_percent.abs()).sum::<f64>() / g.len() as f64;
    eprintln!("Geerling MAPE {mape:.2}%");
    assert!(mape <= 15.0, "Geerling MAPE {mape:.2}%");
    let p = |id: &str| g.iter().find(|r| r.id == id).unwrap().predicted;
    for m in ["qwen3", "dsv31"] {
        assert!(
            p(&format!("g-{m}-exo-1")) < p(&format!("g-{m}-exo-2")) && p(&format!("g-{m}-exo-2")) < p(&format!("g-{m}-exo-4")),
            "exo speeds up with nodes"
        );
        assert!(p(&format!("g-{m}-llama-2")) > p(&format!("g-{m}-llama-4")), "llama.cpp RPC slows down from 2 to 4 nodes");
    }
    assert!(p("g-qwen3-llama-1") > p("g-qwen3-llama-2"));
}

#[test]
fn memory_fit_arithmetic_matches_facts() {
    let c = supernode::catalog::catalog();
    let dsv = &c.model("deepseek-v3.1").unwrap().1;
    let gb = dsv.weight_bytes(c.quant("mlx-4bit").unwrap()) / 1e9;
    assert!((gb - 378.0).abs() < 3.0, "{gb}");
    // KV per token: DeepSeek MLA 68.6 KiB, Qwen3-235B 188 KiB, Llama 70B 320 KiB (FACTS.md).
    assert_eq!(dsv.kv_bytes(1), 70_272);
    assert_eq!(c.model("qwen3-235b-a22b").unwrap().1.kv_bytes(1), 188 * 1024);
    assert_eq!(c.model("llama-3.3-70b").unwrap().1.kv_bytes(1), 320 * 1024);
}
