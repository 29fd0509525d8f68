//! Charts render to PNG and SVG with text, using only the embedded font (no system fonts needed:
//! plotters is built without font-kit, so text either comes from the embedded DejaVu or fails).

use std::path::Path;

use supernode::report::charts::{ParityPoint, parity_chart};

use crate::{bin, scenario};

fn pp(label: &str, unit: &str, measured: f64, predicted: f64) -> ParityPoint {
    ParityPoint { label: label.into(), unit: unit.into(), measured, predicted }
}

/// Whether the SVG has a text element reading exactly `t` (plotters puts the text on its own line).
fn has_text(svg: &str, t: &str) -> bool {
    svg.lines().any(|l| l.trim() == t)
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).len()
}

#[test]
fn parity_chart_renders_text_in_png_and_svg() {
    let t = tempfile::tempdir().unwrap();
    let points = vec![
        pp("g-dsv31-exo-4", "tok/s", 32.5, 43.6),
        pp("g-qwen3-exo-2", "tok/s", 26.2, 25.1),
        pp("g-qwen3-llama-4", "tok/s", 15.2, 15.0),
        pp("zero", "tok/s", 0.0, 1.0),
    ];
    let a = t.path().join("parity-a");
    parity_chart(&a, "Decode tokens/s: measured vs predicted", &points).unwrap();
    let svg = std::fs::read_to_string(t.path().join("parity-a.svg")).unwrap();
    for needle in ["Decode tokens/s: measured vs predicted", "measured", "predicted", "g-dsv31-exo-4", "within ±15%"] {
        assert!(svg.contains(needle), "SVG lacks `{needle}`");
    }
    let png = std::fs::read(t.path().join("parity-a.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 20_000, "PNG of {} bytes looks empty", png.len());
    // Text is rasterized: the same chart with another title is a different image.
    let b = t.path().join("parity-b");
    parity_chart(&b, "Another title", &points).unwrap();
    assert_ne!(std::fs::read(t.path().join("parity-b.png")).unwrap(), png);
    // Nothing to draw is an error, not a panic.
    assert!(parity_chart(&b, "x", &[pp("a", "W", 0.0, 0.0)]).is_err());
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
    // Issue 14 item 4 (legends name exactly the node preset and engine the sweep used).
    for needle in [
        "equal-budget",
        "Mac Studio M3 Ultra: m3-ultra-60c-96gb · llama.cpp",
        "NVIDIA GB10 (DGX Spark): dgx-spark · llama.cpp",
        "AMD Ryzen AI Max+ 395",
        "hardware cost (USD",
    ] {
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

/// Issue 14 item 2 (atomic writes, charts included): a chart drawn over an existing file
/// replaces it whole by a rename (a reader holding the old file keeps the old bytes; in-place
/// writing by plotters truncated it), the new file is a complete PNG, and no temporary file stays.
#[test]
fn chart_files_are_replaced_atomically() {
    let t = tempfile::tempdir().unwrap();
    let png = t.path().join("parity.png");
    std::fs::write(&png, b"old chart").unwrap();
    let keep = t.path().join("keep");
    std::fs::hard_link(&png, &keep).unwrap();
    parity_chart(&t.path().join("parity"), "t", &[pp("a", "tok/s", 10.0, 11.0), pp("b", "tok/s", 20.0, 19.0)]).unwrap();
    assert_eq!(std::fs::read(&keep).unwrap(), b"old chart", "the old file was written in place, not replaced");
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], b"IEND", "PNG is complete");
    let mut names: Vec<String> =
        std::fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["keep", "parity.png", "parity.svg"], "no temporary files left");
}

/// Issue 14 item 4 (parity charts per unit, readable labels; log ticks at 1-2-5): tok/s and W
/// are separate panels with their unit on the axes, only points off by more than 15% are
/// labelled (with their error), and log ticks read 1, 2, 5, 10, 20, 50 (never 3.16 or 31.6).
#[test]
fn parity_chart_has_a_panel_per_unit_labels_outliers_and_1_2_5_ticks() {
    let t = tempfile::tempdir().unwrap();
    let points = vec![
        pp("close-a", "tok/s", 2.0, 2.1),
        pp("close-b", "tok/s", 30.0, 31.0),
        pp("far-c", "tok/s", 400.0, 560.0),
        pp("power-d", "W", 180.0, 185.0),
        pp("power-e", "W", 260.0, 200.0),
    ];
    parity_chart(&t.path().join("p"), "t", &points).unwrap();
    let svg = std::fs::read_to_string(t.path().join("p.svg")).unwrap();
    for needle in ["measured tok/s", "predicted tok/s", "measured W", "predicted W", "far-c (+40%)", "power-e (-23%)"] {
        assert!(svg.contains(needle), "parity SVG lacks `{needle}`");
    }
    for hidden in ["close-a", "close-b", "power-d"] {
        assert!(!svg.contains(hidden), "`{hidden}` is within 15% and is not labelled");
    }
    for tick in ["1", "2", "5", "10", "20", "50", "100", "200", "500"] {
        assert!(has_text(&svg, tick), "log axis lacks the 1-2-5 tick `{tick}`");
    }
    for bad in ["3.16", "31.6", "316"] {
        assert!(!has_text(&svg, bad), "log axis has the tick {bad}");
    }
}

/// Issue 14 item 4 (no line across configurations that cannot run): with node counts 1, 2, 3,
/// 4, 5, 8 where 3 and 5 are illegal splits and 8 has too few ports, the line joins 1-2 only, 4
/// is a lone marker, and the x ticks are exactly the swept counts.
#[test]
fn node_lines_break_where_a_configuration_cannot_run() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("gap.toml");
    std::fs::write(
        &f,
        "name = \"gap\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.2-3b\"\n\
         [engine]\nname = \"exo\"\nparallelism = \"tensor\"\n[workload]\nprompt_tokens = 16\ngenerate_tokens = 2\n\
         [sweep]\n\"cluster.count\" = [1, 2, 3, 4, 5, 8]\n",
    )
    .unwrap();
    let out = t.path().join("g");
    bin().arg("sweep").arg(&f).arg("--out").arg(&out).assert().success();
    let svg = std::fs::read_to_string(out.join("charts/scaling-llama-3.2-3b.svg")).unwrap();
    let lines: Vec<&str> =
        svg.lines().filter(|l| l.contains("<polyline") && l.contains("#1F77B4") && l.contains("stroke-width=\"3\"")).collect();
    assert_eq!(lines.len(), 1, "one segment (1-2): {lines:?}");
    let pts = lines[0].split("points=\"").nth(1).unwrap().split('"').next().unwrap().split_whitespace().count();
    assert_eq!(pts, 2, "the segment has the points at 1 and 2 only: {}", lines[0]);
    for n in ["1", "2", "3", "4", "5", "8"] {
        assert!(has_text(&svg, n), "x tick {n}");
    }
    for n in ["6", "7"] {
        assert!(!has_text(&svg, n), "x tick {n} was not swept");
    }
    assert!(svg.contains("3 nodes: illegal split") && svg.contains("8 nodes: too few ports"), "reasons named");
}

/// Issue 14 item 4 (memory-fit cells per quant and engine; legends name the preset and engine;
/// footnotes wrap, never "…"): Geerling's sweep gives six columns, and Kimi on one node does not
/// fit in any format (two red cells, where the merged map showed one).
#[test]
fn geerling_memory_fit_has_a_cell_per_quant_and_engine() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("g");
    bin().arg("sweep").arg(scenario("sweep-geerling.toml")).arg("--out").arg(&out).assert().success();
    let svg = std::fs::read_to_string(out.join("charts/memory-fit.svg")).unwrap();
    for needle in
        ["mlx-8bit · exo", "q8_0 · llama.cpp", "mlx-4bit · exo", "q4_k_m · llama.cpp", "int4-g32 · exo", "18 (model, quantization, engine)"]
    {
        assert!(svg.contains(needle), "memory-fit lacks `{needle}`");
    }
    // DeepSeek V3.1 q4_k_m (404 GB) fits one 512 GB node with the wired limit raised to 90%, as
    // users run it (engine::plan::RAISED_WIRED_FRACTION_MACOS); Kimi K2 does not, in either format.
    assert_eq!(svg.lines().filter(|l| l.trim() == "does not fit").count(), 3, "two cells and the legend");
    for entry in std::fs::read_dir(out.join("charts")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "svg") {
            assert!(!std::fs::read_to_string(&p).unwrap().contains('…'), "{} truncates a text", p.display());
        }
    }
}

/// Issue 14 item 4 (`plot` warns about incomplete sweeps and fails on empty ones).
#[test]
fn plot_warns_on_an_incomplete_sweep_and_fails_on_an_empty_one() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("s.toml");
    std::fs::write(
        &f,
        "name = \"s\"\n[cluster]\nnode = \"m3-ultra-80c-512gb\"\nfabric = \"tb5-rdma\"\n[model]\nname = \"llama-3.2-3b\"\n\
         [workload]\nprompt_tokens = 16\ngenerate_tokens = 2\n[sweep]\n\"cluster.count\" = [1, 2]\n",
    )
    .unwrap();
    let out = t.path().join("s");
    bin().arg("sweep").arg(&f).arg("--out").arg(&out).args(["--no-charts"]).assert().success();
    let o = bin().arg("plot").arg(&out).assert().success().get_output().clone();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("incomplete"));
    let mpath = out.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["complete"] = serde_json::json!(false);
    m["points_done"] = serde_json::json!(1);
    std::fs::write(&mpath, serde_json::to_string(&m).unwrap()).unwrap();
    let o = bin().arg("plot").arg(&out).assert().success().get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("incomplete") && err.contains("1 of 2 points"), "{err}");
    std::fs::write(out.join("results.jsonl"), "").unwrap();
    let o = bin().arg("plot").arg(&out).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no results"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The point labels of an SVG chart (15 px type: `font-size` 12.1 in plotters' SVG): (x, y, text).
fn point_labels(svg: &str) -> Vec<(f64, f64, String)> {
    let lines: Vec<&str> = svg.lines().collect();
    let attr = |l: &str, k: &str| -> f64 {
        let at = l.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
        l[at..].split('"').next().unwrap().parse().unwrap()
    };
    lines
        .windows(2)
        .filter(|w| w[0].starts_with("<text") && (attr(w[0], "font-size") - 12.1).abs() < 0.1)
        .map(|w| (attr(w[0], "x"), attr(w[0], "y"), w[1].trim().to_string()))
        .collect()
}

/// Issue 14 item 4 (charts readable): the point labels of two lines piled on each other where the
/// lines meet (Qwen3's cost chart at one node: "629" over "596"), and the memory-fit map's tick
/// marks crossed its column names. Labels are now placed across all lines (below a point when
/// above is taken) and the map has no tick marks.
#[test]
fn point_labels_never_overlap_and_the_memory_fit_map_has_no_tick_marks() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("g");
    bin().arg("sweep").arg(scenario("sweep-geerling.toml")).arg("--out").arg(&out).assert().success();
    for model in ["qwen3-235b-a22b", "deepseek-v3.1", "kimi-k2-thinking"] {
        for kind in ["scaling", "power", "cost"] {
            let svg = std::fs::read_to_string(out.join(format!("charts/{kind}-{model}.svg"))).unwrap();
            let labels = point_labels(&svg);
            // Four points a chart; two that coincide (Kimi K2 at two nodes: exo 18.93 and
            // llama.cpp RPC 18.86 tok/s, both "18.9") share one label.
            assert!(labels.len() >= 3, "{kind}-{model}: {labels:?}");
            for (i, a) in labels.iter().enumerate() {
                for b in &labels[i + 1..] {
                    // 15 px type: about 8 px a character, 18 px a line.
                    let overlap_x = a.0 < b.0 + 8.0 * b.2.len() as f64 && b.0 < a.0 + 8.0 * a.2.len() as f64;
                    assert!(!(overlap_x && (a.1 - b.1).abs() < 16.0), "{kind}-{model}: {a:?} overlaps {b:?}");
                }
            }
        }
    }
    let map = std::fs::read_to_string(out.join("charts/memory-fit.svg")).unwrap();
    // Only the two axis lines: a tick mark is a polyline a few px long.
    let polylines: Vec<&str> = map.lines().filter(|l| l.starts_with("<polyline")).collect();
    assert_eq!(polylines.len(), 2, "{polylines:#?}");
}
