//! `plan --slo`: end to end on a small serving case (table, JSON, chart files), determinism
//! across thread counts, and the spec's errors. The bisection itself is tested on synthetic
//! thresholds in `capacity::slo::search`.

use crate::{bin, write_text};

const SERVE: &str = r#"
name = "small serve"
seed = 3
[cluster]
node = "m4-max-40c-128gb"
count = 1
[model]
name = "llama-3.2-1b"
quant = "mlx-4bit"
[engine]
name = "mlx-lm"
parallelism = "none"
[workload]
kind = "serve"
arrival = "poisson"
rate_per_s = 1.0
prompt_tokens = 64
generate_tokens = 32
duration_s = 60
[slo]
ttft_p99_s = 0.5
tpot_p99_ms = 20
"#;

const SPEC: &str = r#"
question = "Highest rate at p99 TPOT <= 20 ms, one M4 Max"
scenario = "serve.toml"
start = 2
probe_requests = 60
[[option]]
label = "mlx-lm, 4-bit"
[[option]]
label = "llama.cpp, Q4_K_M"
set = ["engine.name=llama-cpp", "model.quant=q4_k_m"]
"#;

fn slo_json(dir: &std::path::Path, jobs: &str) -> (serde_json::Value, Vec<u8>) {
    let out = bin().current_dir(dir).args(["plan", "--slo", "spec.toml", "--json", "--jobs", jobs, "--out", "o"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (serde_json::from_slice(&out.stdout).unwrap(), std::fs::read(dir.join("o/slo.json")).unwrap())
}

#[test]
fn slo_plan_finds_each_options_capacity_and_draws_the_chart() {
    let t = tempfile::tempdir().unwrap();
    write_text(t.path(), "serve.toml", SERVE);
    write_text(t.path(), "spec.toml", SPEC);
    let (j, file) = slo_json(t.path(), "2");
    let options = j["options"].as_array().unwrap();
    assert_eq!(options.len(), 2);
    for o in options {
        let cap = o["capacity"].as_f64().unwrap_or_else(|| panic!("no capacity: {o}"));
        let failed = o["failed_at"].as_f64().unwrap();
        assert!(cap < failed && failed - cap <= 0.05 * failed + 1e-9, "{o}");
        let probes = o["probes"].as_array().unwrap();
        // Sorted by load; every probe at or below the capacity passed, every one at or above the first miss failed.
        let loads: Vec<f64> = probes.iter().map(|p| p["load"].as_f64().unwrap()).collect();
        assert!(loads.windows(2).all(|w| w[0] < w[1]), "{loads:?}");
        for p in probes {
            let (x, ok) = (p["load"].as_f64().unwrap(), p["ok"].as_bool().unwrap());
            assert_eq!(ok, x <= cap, "{p}");
            assert_eq!(ok, p["why"].as_str().unwrap().is_empty(), "{p}");
        }
        let at = probes.iter().find(|p| p["load"].as_f64() == Some(cap)).unwrap();
        assert!(at["tpot_p99_ms"].as_f64().unwrap() <= 20.0 && at["ttft_p99_s"].as_f64().unwrap() <= 0.5, "{at}");
    }
    // The same bytes at one thread, and on stdout and in slo.json.
    let (j1, file1) = slo_json(t.path(), "1");
    assert_eq!((&j1, &file1), (&j, &file));
    // The chart: PNG and SVG, both with something drawn.
    let png = image::open(t.path().join("o/slo-latency-vs-load.png")).unwrap().to_rgb8();
    let inked = png.pixels().filter(|p| p.0 != [255, 255, 255]).count();
    assert!(inked > png.len() / 3 / 50, "PNG looks blank: {inked} inked pixels");
    let svg = std::fs::read_to_string(t.path().join("o/slo-latency-vs-load.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("capacity") && svg.contains("llama.cpp, Q4_K_M") && svg.contains("SLO: p99 TTFT"), "svg");
    // The table names every option and its capacity.
    let out = bin().current_dir(t.path()).args(["plan", "--slo", "spec.toml", "--out", "o"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let cap0 = options[0]["capacity"].as_f64().unwrap();
    assert!(text.contains("mlx-lm, 4-bit") && text.contains(&format!("{cap0} req/s")), "{text}");
}

#[test]
fn slo_spec_errors_name_the_cause() {
    let t = tempfile::tempdir().unwrap();
    write_text(t.path(), "serve.toml", &SERVE.replace("arrival = \"poisson\"\nrate_per_s = 1.0", "arrival = \"closed\"\nconcurrency = 2"));
    write_text(t.path(), "spec.toml", SPEC);
    let out = bin().current_dir(t.path()).args(["plan", "--slo", "spec.toml", "--out", "o"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("axis = \"rate\" needs arrival = \"poisson\""), "{err}");
    write_text(t.path(), "spec.toml", &format!("{SPEC}\nbogus = 1\n"));
    let out = bin().current_dir(t.path()).args(["plan", "--slo", "spec.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("spec.toml:"), "located");
    // --slo is its own question: no --model or objective beside it.
    let out = bin().current_dir(t.path()).args(["plan", "--slo", "spec.toml", "--model", "llama-3.2-1b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn slo_plan_names_its_answer_and_refuses_options_over_the_budget() {
    let t = tempfile::tempdir().unwrap();
    write_text(t.path(), "serve.toml", SERVE);
    // The M4 Max costs $3,699 in the catalog: a $3,000 budget refuses both options, $5,000 admits both.
    write_text(t.path(), "spec.toml", &SPEC.replace("probe_requests = 60", "probe_requests = 60\nbudget_usd = 3000"));
    let (j, _) = slo_json(t.path(), "2");
    assert_eq!(j["format"], "supernode-slo-plan/1");
    assert_eq!(j["budget_usd"], 3000.0);
    assert!(j["answer"].is_null(), "{}", j["answer"]);
    for o in j["options"].as_array().unwrap() {
        assert_eq!(o["hardware_usd"], 3699.0, "{o}");
        let e = o["error"].as_str().unwrap();
        assert!(e.contains("over budget: its hardware costs $3,699 of the $3,000 budget"), "{e}");
        assert!(o["probes"].as_array().unwrap().is_empty());
    }
    write_text(t.path(), "spec.toml", &SPEC.replace("probe_requests = 60", "probe_requests = 60\nbudget_usd = 5000"));
    let (j, _) = slo_json(t.path(), "2");
    let options = j["options"].as_array().unwrap();
    // The highest capacity; the two options cost the same, so a tie goes to the first listed.
    let top = options.iter().map(|o| o["capacity"].as_f64().unwrap()).fold(f64::MIN, f64::max);
    let best = options.iter().find(|o| o["capacity"].as_f64().unwrap() == top).unwrap();
    assert_eq!(j["answer"], best["label"]);
    assert_eq!(options[0]["cluster"], "1x m4-max-40c-128gb, mlx-lm none, mlx-4bit");
    for o in options {
        let status = o["calibration"]["status"].as_str().unwrap();
        assert!(status == "inside" || status == "extrapolation", "{o}");
    }
    // The page: the answer, every option, the chart, and the calibration of each option.
    let out = bin().current_dir(t.path()).args(["report", "o"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(t.path().join("o/report.html")).unwrap();
    let label = best["label"].as_str().unwrap();
    assert!(html.contains(&format!("<div class=\"answer\" id=\"the-answer\">{}</div>", label)), "answer box");
    assert!(html.contains("<svg") && html.contains("Which numbers are calibrated and which extrapolated"), "chart and envelope");
    assert!(html.contains("llama.cpp, Q4_K_M") && html.contains("$3,699") && html.contains("Equal budget"), "options table");
    // The slo.json path itself renders too, beside it.
    let out = bin().current_dir(t.path()).args(["report", "o/slo.json"]).output().unwrap();
    assert!(out.status.success() && t.path().join("o/slo.html").exists());
}
