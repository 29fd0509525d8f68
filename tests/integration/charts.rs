//! Charts render to PNG and SVG with text, using only the embedded font (no system fonts needed:
//! plotters is built without font-kit, so text either comes from the embedded DejaVu or fails).

use std::path::Path;

use crate::{bin, scenario};

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).len()
}

#[test]
fn parity_chart_renders_text_in_png_and_svg() {
    let t = tempfile::tempdir().unwrap();
    let points = vec![
        ("g-dsv31-exo-4".to_string(), 32.5, 33.6),
        ("g-qwen3-exo-2".to_string(), 26.2, 25.1),
        ("g-qwen3-llama-4".to_string(), 15.2, 15.0),
        ("zero".to_string(), 0.0, 1.0),
    ];
    let a = t.path().join("parity-a");
    supernode::report::charts::parity_chart(&a, "Decode tokens/s: measured vs predicted", &points).unwrap();
    let svg = std::fs::read_to_string(t.path().join("parity-a.svg")).unwrap();
    for needle in ["Decode tokens/s: measured vs predicted", "measured", "predicted", "g-dsv31-exo-4", "within ±15%"] {
        assert!(svg.contains(needle), "SVG lacks `{needle}`");
    }
    let png = std::fs::read(t.path().join("parity-a.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 20_000, "PNG of {} bytes looks empty", png.len());
    // Text is rasterized: the same chart with another title is a different image.
    let b = t.path().join("parity-b");
    supernode::report::charts::parity_chart(&b, "Another title", &points).unwrap();
    assert_ne!(std::fs::read(t.path().join("parity-b.png")).unwrap(), png);
    // Nothing to draw is an error, not a panic.
    assert!(supernode::report::charts::parity_chart(&b, "x", &[("a".into(), 0.0, 0.0)]).is_err());
}

#[test]
fn geerling_sweep_draws_his_three_charts_and_plot_redraws() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("g");
    let o = bin().arg("sweep").arg(scenario("sweep-geerling.toml")).arg("--out").arg(&out).assert().success().get_output().clone();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("swept 18 points"), "{text}");
    for (model, title) in [("qwen3-235b-a22b", "Qwen3 235B"), ("deepseek-v3.1", "DeepSeek V3.1"), ("kimi-k2-thinking", "Kimi K2 Thinking")]
    {
        let stem = out.join("charts").join(format!("scaling-{model}"));
        let svg = std::fs::read_to_string(stem.with_extension("svg").with_file_name(format!("scaling-{model}.svg"))).unwrap();
        for needle in [title, "decode tokens/s", "nodes", "exo", "llama.cpp", "m3-ultra-80c-256gb"] {
            assert!(svg.contains(needle), "scaling-{model}.svg lacks `{needle}`");
        }
        assert!(size(&out.join("charts").join(format!("scaling-{model}.png"))) > 20_000);
        for kind in ["power", "cost"] {
            assert!(size(&out.join("charts").join(format!("{kind}-{model}.svg"))) > 5_000);
        }
    }
    // Kimi on one 512 GB node does not fit: a row with its reason, named under the chart.
    let kimi = std::fs::read_to_string(out.join("charts/scaling-kimi-k2-thinking.svg")).unwrap();
    assert!(kimi.contains("does not fit"));
    assert!(std::fs::read_to_string(out.join("charts/memory-fit.svg")).unwrap().contains("Memory fit"));
    // Redraw one chart from the saved results.
    std::fs::remove_dir_all(out.join("charts")).unwrap();
    let o = bin().arg("plot").arg(&out).args(["--chart", "scaling"]).assert().success().get_output().clone();
    assert_eq!(String::from_utf8(o.stdout).unwrap().lines().count(), 6);
    assert!(out.join("charts/scaling-deepseek-v3.1.png").exists());
    assert!(!out.join("charts/power-deepseek-v3.1.png").exists());
    // Unknown chart, chart the data cannot support, not a sweep directory: input errors.
    bin().arg("plot").arg(&out).args(["--chart", "bogus"]).assert().code(2);
    bin().arg("plot").arg(&out).args(["--chart", "ttft"]).assert().code(2);
    bin().arg("plot").arg(t.path()).assert().code(2);
}

#[test]
fn equal_budget_ttft_and_memory_fit_charts() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("e");
    bin().arg("sweep").arg(scenario("sweep-equal-budget.toml")).arg("--out").arg(&out).assert().success();
    let svg = std::fs::read_to_string(out.join("charts/equal-budget-gpt-oss-120b.svg")).unwrap();
    for needle in ["equal-budget", "Mac Studio M3 Ultra", "NVIDIA GB10", "AMD Ryzen AI Max+ 395", "hardware cost (USD"] {
        assert!(svg.contains(needle), "equal-budget chart lacks `{needle}`");
    }
    // A TTFT chart from a prompt-length axis (small and fast).
    let f = t.path().join("ttft.toml");
    std::fs::write(
        &f,
        "name = \"ttft\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.2-3b\"\n\
         [workload]\ngenerate_tokens = 2\n[sweep]\n\"cluster.count\" = [1, 2]\n\"workload.prompt_tokens\" = [64, 256, 1024]\nseed = [1, 2]\n",
    )
    .unwrap();
    let out = t.path().join("t");
    bin().arg("sweep").arg(&f).arg("--out").arg(&out).assert().success();
    let svg = std::fs::read_to_string(out.join("charts/ttft-llama-3.2-3b.svg")).unwrap();
    assert!(svg.contains("time to first token (s)") && svg.contains("prompt length (tokens)") && svg.contains("2 nodes"));
    assert!(!svg.contains("seed 1"), "seeds are replicates, not lines");
    let scaling = std::fs::read_to_string(out.join("charts/scaling-llama-3.2-3b.svg")).unwrap();
    assert!(scaling.contains("mean over the seeds"));
    assert!(out.join("charts/ttft-llama-3.2-3b.png").exists());
}
