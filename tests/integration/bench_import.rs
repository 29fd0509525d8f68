//! llama-bench output imported as measurement rows: every format parses to the same rows, the
//! node is matched or must be named, unusable tests are skipped with a reason, and the imported
//! rows go straight into `validate`.

use supernode::calibrate::llama_bench;
use supernode::calibrate::validate::parse_csv;

use crate::{bin, root};

/// Runs the command, expects exit code 2 and returns its stderr.
fn refused(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().code(2).get_output().clone();
    String::from_utf8_lossy(&out.stderr).to_string()
}

fn fixture(name: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/llama-bench").join(name)
}

#[test]
fn markdown_table_becomes_rows_with_reasons_for_the_rest() {
    let out = bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(fixture("m3-ultra.md")).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let rows = parse_csv(&stdout, "stdout").unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "m3-ultra-1-pp512",
            "m3-ultra-2-pp4096",
            "m3-ultra-3-tg128",
            "m3-ultra-4-pp512",
            "m3-ultra-5-tg128",
            "m3-ultra-7-tg128-d4096",
            "m3-ultra-8-pp512",
            "m3-ultra-9-tg128"
        ]
    );
    let tg70 = &rows[4];
    assert_eq!(
        (tg70.model.as_str(), tg70.quant.as_str(), tg70.metric.as_str(), tg70.value),
        ("llama-3.3-70b", "q4_k_m", "decode_tokens_per_s", 14.41)
    );
    assert_eq!(
        (tg70.system.as_str(), tg70.nodes.as_str(), tg70.engine.as_str(), tg70.prompt_tokens.as_str()),
        ("m3-ultra-80c-512gb", "1", "llama-cpp", "0")
    );
    assert!(tg70.source.contains("build 0123abc (5000)"), "{}", tg70.source);
    assert!(tg70.notes.contains("stddev 0.02"), "{}", tg70.notes);
    assert_eq!(rows[5].prompt_tokens, "4096", "a decode at depth keeps its context");
    assert!(rows[6].model.starts_with("deepseek"));
    assert!(stderr.contains("pp512+tg128: a combined prompt+generation test"), "{stderr}");
    // A file type the twin has no preset for (llama.cpp's ternary TQ1_0; the i-quants import).
    assert!(stderr.contains("TQ1_0 - 1.69 bpw ternary") && stderr.contains("has no quantization preset"), "{stderr}");
    assert!(stderr.contains("import: 8 rows from 10 llama-bench tests"), "{stderr}");
}

#[test]
fn json_jsonl_and_csv_read_the_same_fields() {
    let json = llama_bench::read(&fixture("gb10.json")).unwrap();
    assert_eq!(json.len(), 1);
    assert_eq!((json[0].n_gen, json[0].n_prompt, json[0].avg_ts, json[0].stddev_ts), (128, 0, 97.93, Some(0.08)));
    assert_eq!(json[0].n_params, Some(3212749888.0));
    let jsonl = llama_bench::read(&fixture("fw.jsonl")).unwrap();
    assert_eq!(jsonl.len(), 2);
    assert!(jsonl[0].gpu_info.as_deref().unwrap().contains("RYZEN AI MAX+ 395"));
    let csv = llama_bench::read(&fixture("m3-ultra.csv")).unwrap();
    assert_eq!(csv.len(), 2);
    assert_eq!((csv[0].model_type.as_str(), csv[0].avg_ts, csv[0].backends.as_str()), ("llama 70B Q4_K - Medium", 14.41, "Metal,BLAS"));
}

#[test]
fn the_node_is_matched_when_unique_and_asked_for_otherwise() {
    // Framework: one preset has the Ryzen AI Max+ 395, so the GPU/CPU names decide.
    let out = bin().arg("import").arg(fixture("fw.jsonl")).assert().success();
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    assert!(rows.iter().all(|r| r.system == "framework-desktop-ai-max-395"));
    // GB10: two presets (Dell, DGX Spark) share the chip.
    let e = refused(bin().arg("import").arg(fixture("gb10.json")));
    assert!(e.contains("dell-pro-max-gb10") && e.contains("dgx-spark") && e.contains("--node"), "{e}");
    // The markdown table names no GPU at all.
    let e = refused(bin().arg("import").arg(fixture("m3-ultra.md")));
    assert!(e.contains("pass --node"), "{e}");
    let e = refused(bin().args(["import", "--node", "m3-ultra-80c-512"]).arg(fixture("m3-ultra.md")));
    assert!(e.contains("did you mean `m3-ultra-80c-512gb`"), "{e}");
}

#[test]
fn rpc_runs_are_skipped_and_bad_files_refused() {
    let out = bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(fixture("m3-ultra.csv")).assert().success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("RPC backend"), "{stderr}");
    assert!(stderr.contains("import: 1 rows from 2"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "a,b\n1,2\n").unwrap();
    let e = refused(bin().arg("import").arg(&bad));
    assert!(e.contains("not llama-bench output"), "{e}");
    let cpu = dir.path().join("cpu.md");
    std::fs::write(&cpu, "| model | params | backend | ngl | test | t/s |\n| --- | --: | --- | --: | --: | --: |\n| llama 3B Q4_K - Medium | 3.21 B | BLAS | 0 | tg128 | 30.0 ± 1.0 |\n| llama 3B Q4_K - Medium | 3.21 B | Metal | 99 | tg128 | 171.0 ± 1.0 |\n").unwrap();
    let out = bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(&cpu).arg(&cpu).assert().success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("CPU-only run (-ngl 0)"), "{stderr}");
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["cpu-2-tg128", "cpu-2-2-tg128"], "the same file twice: distinct ids");
    let md = dir.path().join("only-skipped.md");
    std::fs::write(&md, "| model | test | t/s |\n| --- | --: | --: |\n| mamba 2B Q8_0 | tg128 | 50.0 ± 1.0 |\n").unwrap();
    let e = refused(bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(&md));
    assert!(e.contains("none of the 1 llama-bench tests"), "{e}");
}

#[test]
fn validate_and_calibrate_point_raw_llama_bench_files_to_import() {
    for f in ["gb10.json", "m3-ultra.md", "m3-ultra.csv", "fw.jsonl"] {
        let e = refused(bin().args(["validate", "--against"]).arg(fixture(f)));
        assert!(e.contains("is llama-bench output") && e.contains("supernode import"), "{f}: {e}");
    }
    let e = refused(bin().args(["calibrate", "-o", "/dev/null"]).arg(fixture("m3-ultra.csv")));
    assert!(e.contains("is llama-bench output"), "{e}");
    for f in ["vllm-gpt-oss-120b-c8.json", "sglang-llama-3.1-8b-fp8.jsonl"] {
        let e = refused(bin().args(["validate", "--against"]).arg(serving(f)));
        assert!(e.contains("is a serving benchmark result") && e.contains("supernode import"), "{f}: {e}");
    }
}

#[test]
fn imported_rows_validate_like_the_published_ones() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    bin().args(["import", "--node", "m3-ultra-80c-512gb", "-o"]).arg(&csv).arg(fixture("m3-ultra.md")).assert().success();
    let out = bin().args(["validate", "--json", "--against"]).arg(&csv).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8, "{v}");
    // The same setups as the published b17 rows, so the same predictions (the published tg rows
    // assume a 128-token prompt; llama-bench's tg128 starts from an empty context, within 1%).
    let published =
        bin().args(["validate", "--json", "--rows", "b17-llama33-70b-tg", "--against"]).arg(crate::measurements_csv()).assert().success();
    let p: serde_json::Value = serde_json::from_slice(&published.get_output().stdout).unwrap();
    let ours = rows.iter().find(|r| r["id"] == "m3-ultra-5-tg128").unwrap()["predicted"].as_f64().unwrap();
    let theirs = p["rows"][0]["predicted"].as_f64().unwrap();
    assert!((ours / theirs - 1.0).abs() < 0.01, "{ours} vs {theirs}");
    // A handful of rows on one chip: calibrate fits only the parameters they move.
    let prof = dir.path().join("mine.toml");
    let out = bin().args(["calibrate", "-o"]).arg(&prof).arg(&csv).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("chips.m3-ultra.runtimes.llama-cpp.kernel_launch_us") && text.contains("(kept as is): "), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("chips.gb10")), "a GB10 parameter is not fitted to M3 Ultra rows:\n{text}");
    assert!(prof.exists());
    let deep = rows.iter().find(|r| r["id"] == "m3-ultra-7-tg128-d4096").unwrap()["predicted"].as_f64().unwrap();
    assert!(deep < ours, "decode after 4096 tokens of context is slower: {deep} vs {ours}");
}

/// Issue 20 item 5: llama-bench's `model_filename` decides the model through the catalog's name
/// resolver. The fixture holds ggml-org's published DGX Spark gpt-oss-120b runs (benches/dgx-spark.md
/// at 4c7e9893, build 2f68ce7cf (6918); the same means as the n-gb10-gptoss120b-lcpp-* rows), with
/// the file where llama.cpp caches `-hf ggml-org/gpt-oss-120b-GGUF` (`<org>_<repo>_<file>`,
/// common/arg.cpp) and the `model_type` llama.cpp 4227c9be prints for gpt-oss (`?B`: no size, so
/// the architecture rule alone could not tell the model). The imported rows predict as the
/// published ones do.
#[test]
fn a_gguf_file_name_decides_the_model_and_its_rows_validate_like_the_published_ones() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    let out = bin().args(["import", "--node", "dgx-spark", "-o"]).arg(&csv).arg(fixture("dgx-spark-gpt-oss.jsonl")).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    // All four tests, the prefill after a 32k context too (its prompt column holds 32768 + 2048).
    assert!(stderr.contains("import: 4 rows from 4 llama-bench tests"), "{stderr}");
    let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap(), "rows").unwrap();
    for r in &rows {
        assert_eq!((r.model.as_str(), r.quant.as_str()), ("gpt-oss-120b", "mxfp4"), "{}", r.id);
        assert!(
            r.notes.contains("model gpt-oss-120b from file name `ggml-org_gpt-oss-120b-GGUF_gpt-oss-120b-mxfp4-00001-of-00003.gguf`"),
            "{}",
            r.notes
        );
        assert!(r.notes.contains("-ub 2048"), "the micro-batch travels in llama.cpp's flag: {}", r.notes);
    }
    let predicted = |v: &serde_json::Value, id: &str| {
        v["rows"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}: {v}"))["predicted"].as_f64().unwrap()
    };
    let ours: serde_json::Value =
        serde_json::from_slice(&bin().args(["validate", "--json", "--against"]).arg(&csv).assert().success().get_output().stdout).unwrap();
    let published = bin()
        .args(["validate", "--json", "--rows", "n-gb10-gptoss120b-lcpp-", "--against"])
        .arg(crate::measurements_csv())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let theirs: serde_json::Value = serde_json::from_slice(&published).unwrap();
    for (mine, published) in [
        ("dgx-spark-gpt-oss-1-pp2048", "n-gb10-gptoss120b-lcpp-pp2048"),
        ("dgx-spark-gpt-oss-2-tg32", "n-gb10-gptoss120b-lcpp-tg32"),
        ("dgx-spark-gpt-oss-3-pp2048-d32768", "n-gb10-gptoss120b-lcpp-pp2048-d32k"),
        ("dgx-spark-gpt-oss-4-tg32-d32768", "n-gb10-gptoss120b-lcpp-tg32-d32k"),
    ] {
        let (a, b) = (predicted(&ours, mine), predicted(&theirs, published));
        // The published tg row leaves its prompt unstated; llama-bench's tg32 starts empty (within 1%).
        assert!((a / b - 1.0).abs() < 0.01, "{mine}: {a} vs {published}: {b}");
    }
}

/// The newer catalog architectures import by file name end to end; a file no preset answers to,
/// of an architecture the twin lacks, is skipped with both attempts named. (`avg_ts` values are
/// placeholders: only the names are under test.)
#[test]
fn newer_architectures_import_by_file_name_and_unknown_ones_say_what_was_tried() {
    let dir = tempfile::tempdir().unwrap();
    let tests = [
        ("qwen3next 80B.A3B Q4_K - Medium", "Qwen3-Next-80B-A3B-Instruct-Q4_K_M.gguf"),
        ("glm4moe 106B.A12B Q4_K - Medium", "GLM-4.5-Air-Q4_K_M-00001-of-00002.gguf"),
        ("gemma3 27B Q4_0", "gemma-3-27b-it-qat-Q4_0.gguf"),
        ("gpt-oss 20B MXFP4 MoE", "gpt-oss-20b-mxfp4.gguf"),
        ("llama4 17Bx16E (Scout) Q4_K - Medium", "Llama-4-Scout-17B-16E-Instruct-Q4_K_M.gguf"),
        ("mistral3 24B Q4_K - Medium", "Mistral-Small-3.2-24B-Instruct-2506-Q4_K_M.gguf"),
        ("mistral3 24B Q4_K - Medium", "Devstral-Small-2-24B-Instruct-2512-Q4_K_M.gguf"),
    ];
    let text: String = tests
        .iter()
        .map(|(t, f)| format!("{{\"model_type\": \"{t}\", \"model_filename\": \"models/{f}\", \"backends\": \"Metal,BLAS\", \"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 1.0}}\n"))
        .collect();
    let file = crate::write_text(dir.path(), "new.jsonl", &text);
    let out = bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(&file).assert().success();
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    let got: Vec<(&str, &str)> = rows.iter().map(|r| (r.model.as_str(), r.quant.as_str())).collect();
    assert_eq!(
        got,
        [
            ("qwen3-coder-next", "q4_k_m"),
            ("glm-4.5-air", "q4_k_m"),
            ("gemma-3-27b", "q4_0"),
            ("gpt-oss-20b", "mxfp4"),
            ("llama-4-scout-17b-16e", "q4_k_m"),
            ("mistral-small-3.1-24b", "q4_k_m")
        ]
    );
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("file name `Devstral-Small-2-24B-Instruct-2512-Q4_K_M.gguf` names no catalog model (compared as `devstralsmall224b`), and by architecture: architecture `mistral3` has no model preset"),
        "{stderr}"
    );
}

/// `import --help` says which names it understands.
#[test]
fn import_help_names_the_names_it_reads() {
    let out = bin().args(["import", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    for said in ["model_filename", "model_id", "model_type", "-4bit", "00001-of-00003", "supernode catalog models"] {
        assert!(help.contains(said), "{said}: {help}");
    }
}

fn serving(name: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/serve-bench").join(name)
}

/// `vllm bench serve --save-result` JSON (issue 22): one row per metric the run reports, the
/// model, format and engine read from the file (gpt-oss's native MXFP4, backend `openai-chat`
/// served by vLLM), the mean prompt and output and the prompt count carried; `validate` replays
/// them as 64 requests, 8 in flight, and every row is scored.
#[test]
fn a_vllm_serving_result_becomes_rows_that_validate_as_a_closed_loop() {
    let out = bin().args(["import", "--node", "dgx-spark"]).arg(serving("vllm-gpt-oss-120b-c8.json")).assert().success();
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    let metrics: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(
        metrics,
        [
            "requests_per_s",
            "aggregate_decode_tokens_per_s",
            "ttft_s",
            "ttft_p50_s",
            "ttft_p99_s",
            "tpot_ms",
            "tpot_p50_ms",
            "tpot_p99_ms",
            "itl_p50_ms",
            "itl_p99_ms",
            "total_tokens_per_s",
            "e2e_mean_s",
            "e2e_p50_s",
            "e2e_p99_s"
        ]
    );
    for r in &rows {
        assert_eq!(
            (r.system.as_str(), r.model.as_str(), r.quant.as_str(), r.engine.as_str()),
            ("dgx-spark", "openai/gpt-oss-120b", "mxfp4", "vllm")
        );
        assert_eq!((r.prompt_tokens.as_str(), r.concurrency.as_str()), ("1024", "8"));
        assert!(r.notes.contains("64 prompts, 128 generated tokens per request"), "{}", r.notes);
    }
    // Milliseconds read into the metrics' units.
    assert_eq!((rows[4].value, rows[4].unit.as_str()), (1.6503, "s"));
    assert_eq!((rows[7].value, rows[7].unit.as_str()), (63.0, "ms"));

    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    bin().args(["import", "--node", "dgx-spark", "-o"]).arg(&csv).arg(serving("vllm-gpt-oss-120b-c8.json")).assert().success();
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let scored = report["rows"].as_array().unwrap();
    assert_eq!(scored.len(), 14, "{report}");
    let said = |i: usize, what: &str| scored[i]["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    assert!(said(0, "64 requests, 8 in flight at a time"), "{}", scored[0]);
    let predicted = |i: usize| scored[i]["predicted"].as_f64().unwrap();
    // Requests a second times the tokens of one request is the output rate.
    assert!((predicted(1) / predicted(0) / 128.0 - 1.0).abs() < 0.02);
    // Single inter-token gaps: the median near the mean time per token, the p99 no shorter.
    assert!((predicted(8) / predicted(5) - 1.0).abs() < 0.25 && predicted(9) >= predicted(8), "{} {}", predicted(8), predicted(9));
    // Prompt and output tokens over the same window: 1152 tokens a request.
    assert!((predicted(10) / predicted(0) / 1152.0 - 1.0).abs() < 0.02, "{} {}", predicted(10), predicted(0));
    // A request's end-to-end time holds its time to first token and its 127 decode steps.
    let e2e = predicted(11);
    assert!(e2e > predicted(2) + 127.0 * predicted(5) / 1e3 * 0.98, "e2e {e2e} s");
    assert!(predicted(12) <= predicted(13), "median e2e at most the p99");

    // A server on two Sparks: the split must be named; the link is the machines' own.
    let file = serving("vllm-gpt-oss-120b-c8.json");
    let err = refused(bin().args(["import", "--node", "dgx-spark", "--nodes", "2"]).arg(&file));
    assert!(err.contains("say how the model was split over them (--parallelism, e.g. TP=2)"), "{err}");
    bin().args(["import", "--node", "dgx-spark", "--nodes", "2", "--parallelism", "TP=2", "-o"]).arg(&csv).arg(&file).assert().success();
    let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap(), "rows.csv").unwrap();
    assert!(rows.iter().all(|r| (r.nodes.as_str(), r.parallelism.as_str(), r.fabric.as_str()) == ("2", "TP=2", "")));
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let first = &report["rows"][1];
    assert!(first["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains("cx7-roce")), "{first}");
    assert!(first["predicted"].as_f64().unwrap() > predicted(1), "two Sparks serve eight users faster than one");
}

/// SGLang's `bench_serving` lines name no model (`--model` must), write Python's `Infinity` for
/// an unpaced run, and a run paced by a request rate is skipped with the reason; a file of no
/// hardware asks for `--node`.
#[test]
fn sglang_serving_lines_need_the_model_and_skip_paced_runs() {
    let file = serving("sglang-llama-3.1-8b-fp8.jsonl");
    let err = refused(bin().args(["import", "--node", "dgx-spark"]).arg(&file));
    assert!(err.contains("the file names no model: pass --model"), "{err}");
    assert!(err.contains("none of the 3 benchmark runs became a measurement row"), "{err}");
    let err = refused(bin().arg("import").arg(&file));
    assert!(err.contains("record no hardware: pass --node"), "{err}");

    let out = bin().args(["import", "--node", "dgx-spark", "--model", "RedHatAI/Llama-3.1-8B-Instruct-FP8"]).arg(&file).assert().success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("skipped run 3") && stderr.contains("paced at 2 requests/s"), "{stderr}");
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    // Ten metrics of each run (the ITL percentiles among them) and SGLang's three E2E latency
    // lines.
    assert_eq!(rows.len(), 26);
    assert!(rows.iter().all(|r| r.engine == "sglang" && r.quant == "fp8" && r.prompt_tokens == "1024"));
    let concurrency: Vec<&str> = rows.iter().map(|r| r.concurrency.as_str()).step_by(13).collect();
    assert_eq!(concurrency, ["1", "16"]);
}

/// `mlx_lm.benchmark`'s printed output: a prefill and a decode row per run (the tool's averages),
/// a batch of several as its aggregate rate at that concurrency, the format from the repo's bit
/// suffix; the text names no machine or model (`--node`, `--model`), and the rows validate, the
/// batch as `batch_generate` runs it (prefilled together, decoded together).
#[test]
fn mlx_lm_benchmark_output_becomes_prefill_and_decode_rows_that_validate() {
    let file = root().join("tests/fixtures/mlx-bench/qwen3-4b-4bit.txt");
    let err = refused(bin().arg("import").arg(&file));
    assert!(err.contains("record no hardware: pass --node"), "{err}");
    let err = refused(bin().args(["import", "--node", "m4-max-40c-128gb"]).arg(&file));
    assert!(err.contains("names no model: pass --model"), "{err}");
    let model = "mlx-community/Qwen3-4B-Instruct-2507-4bit";
    let out = bin().args(["import", "--node", "m4-max-40c-128gb", "--model", model]).arg(&file).assert().success();
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    let got: Vec<(&str, f64, &str, &str)> =
        rows.iter().map(|r| (r.metric.as_str(), r.value, r.prompt_tokens.as_str(), r.concurrency.as_str())).collect();
    assert_eq!(
        got,
        [
            ("prefill_tokens_per_s", 1500.0, "2048", "1"),
            ("decode_tokens_per_s", 110.0, "2048", "1"),
            ("prefill_tokens_per_s", 1400.0, "512", "4"),
            ("aggregate_decode_tokens_per_s", 300.0, "512", "4")
        ]
    );
    assert!(rows.iter().all(|r| r.engine == "mlx-lm" && r.quant == "4bit"));

    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    bin().args(["import", "--node", "m4-max-40c-128gb", "--model", model, "-o"]).arg(&csv).arg(&file).assert().success();
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let scored = report["rows"].as_array().unwrap();
    assert_eq!(scored.len(), 4, "{report}");
    let said = |i: usize, what: &str| scored[i]["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    assert!(said(3, "mlx_lm.benchmark at batch 4"), "{}", scored[3]);
    // Four sequences decoded together make more tokens a second than one, and fewer than four.
    let predicted = |i: usize| scored[i]["predicted"].as_f64().unwrap();
    assert!(predicted(3) > predicted(1) && predicted(3) < 4.0 * predicted(1), "{} vs {}", predicted(3), predicted(1));
    // validate and calibrate given the raw output point to import.
    let err = refused(bin().args(["validate", "--against"]).arg(&file));
    assert!(err.contains("is mlx_lm.benchmark or mlx_lm.generate output") && err.contains("supernode import"), "{err}");
}

/// `mlx_lm.generate --verbose`'s footer (the lines people paste): one prefill and one decode
/// row, the decode after the prompt for the generated tokens it names, which `validate` decodes.
#[test]
fn an_mlx_lm_generate_footer_becomes_a_prefill_and_a_decode_row() {
    let file = root().join("tests/fixtures/mlx-bench/generate-verbose.txt");
    let model = "mlx-community/Qwen3-4B-Instruct-2507-4bit";
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    bin().args(["import", "--node", "m4-max-40c-128gb", "--model", model, "-o"]).arg(&csv).arg(&file).assert().success();
    let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap(), "rows.csv").unwrap();
    let got: Vec<(&str, f64, &str)> = rows.iter().map(|r| (r.metric.as_str(), r.value, r.prompt_tokens.as_str())).collect();
    assert_eq!(got, [("prefill_tokens_per_s", 1500.0, "1024"), ("decode_tokens_per_s", 100.0, "1024")]);
    assert!(rows[1].source.starts_with("mlx_lm.generate") && rows[1].notes.contains("256 generated tokens"), "{:?}", rows[1]);
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(report["rows"].as_array().unwrap().len(), 2, "{report}");
}

/// `llama-batched-bench`'s printed table: an S_PP and an S_TG row per test at concurrency B, the
/// model, format and node from the log it begins with (the GGUF file it loaded, the GPU), and
/// the rows validate as the tool ran them: B prompts prefilled in `-ub` micro-batches, then
/// decoded together.
#[test]
fn llama_batched_bench_output_becomes_s_pp_and_s_tg_rows_that_validate() {
    let file = root().join("tests/fixtures/batched-bench/gb10-gpt-oss-120b.txt");
    // `NVIDIA GB10` is every GB10 box's GPU: the node is named.
    let err = refused(bin().arg("import").arg(&file));
    assert!(err.contains("matches several catalog nodes") && err.contains("--node"), "{err}");
    let out = bin().args(["import", "--node", "dgx-spark"]).arg(&file).assert().success();
    let rows = parse_csv(&String::from_utf8(out.get_output().stdout.clone()).unwrap(), "stdout").unwrap();
    let got: Vec<(&str, f64, &str)> = rows.iter().map(|r| (r.metric.as_str(), r.value, r.concurrency.as_str())).collect();
    assert_eq!(
        got,
        [
            ("prefill_tokens_per_s", 800.0, "1"),
            ("aggregate_decode_tokens_per_s", 60.0, "1"),
            ("prefill_tokens_per_s", 2000.0, "4"),
            ("aggregate_decode_tokens_per_s", 120.0, "4"),
            ("prefill_tokens_per_s", 2000.0, "8"),
            ("aggregate_decode_tokens_per_s", 160.0, "8")
        ]
    );
    assert!(rows.iter().all(|r| (r.system.as_str(), r.model.as_str(), r.quant.as_str()) == ("dgx-spark", "gpt-oss-120b", "mxfp4")));
    assert!(rows[0].notes.contains("-ub 2048"), "{}", rows[0].notes);

    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    bin().args(["import", "--node", "dgx-spark", "-o"]).arg(&csv).arg(&file).assert().success();
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let scored = report["rows"].as_array().unwrap();
    assert_eq!(scored.len(), 6, "{report}");
    let predicted = |i: usize| scored[i]["predicted"].as_f64().unwrap();
    // Four 512-token prompts fill one 2,048-token micro-batch: a faster prefill than one alone.
    assert!(predicted(2) > 1.5 * predicted(0), "{} vs {}", predicted(2), predicted(0));
    assert!(predicted(3) > predicted(1) && predicted(5) > predicted(3), "{report}");
    let err = refused(bin().args(["validate", "--against"]).arg(&file));
    assert!(err.contains("is llama-batched-bench output") && err.contains("supernode import"), "{err}");
}

/// llama-benchy's markdown report (the benchmark Spark users run against vLLM): per run its
/// prompt rate, generation rate, per-request rate (above one request) and TTFT, at the run's
/// concurrency; the output names neither the machine nor the server (`--node`, `--engine`);
/// runs after a filled context are skipped; the rows validate as the tool computes them.
#[test]
fn llama_benchy_output_becomes_rows_that_validate_as_the_tool_computes_them() {
    let file = root().join("tests/fixtures/benchy/spark-gpt-oss-120b.md");
    let err = refused(bin().arg("import").arg(&file));
    assert!(err.contains("record no hardware: pass --node"), "{err}");
    let err = refused(bin().args(["import", "--node", "dgx-spark"]).arg(&file));
    assert!(err.contains("names no server: pass --engine"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    let out = bin().args(["import", "--node", "dgx-spark", "--engine", "vllm", "-o"]).arg(&csv).arg(&file).assert().success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("filled context"), "{stderr}");
    let rows = parse_csv(&std::fs::read_to_string(&csv).unwrap(), "rows.csv").unwrap();
    let got: Vec<(&str, &str)> = rows.iter().map(|r| (r.metric.as_str(), r.concurrency.as_str())).collect();
    assert_eq!(
        got,
        [
            ("prefill_tokens_per_s", "1"),
            ("aggregate_decode_tokens_per_s", "1"),
            ("ttft_s", "1"),
            ("prefill_tokens_per_s", "8"),
            ("aggregate_decode_tokens_per_s", "8"),
            ("decode_tokens_per_s", "8"),
            ("ttft_s", "8")
        ]
    );
    assert!(rows.iter().all(|r| (r.model.as_str(), r.quant.as_str(), r.engine.as_str()) == ("openai/gpt-oss-120b", "mxfp4", "vllm")));
    let out = bin().args(["-q", "validate", "--json", "--against"]).arg(&csv).assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let scored = report["rows"].as_array().unwrap();
    assert_eq!(scored.len(), 7, "{report}");
    let said = |i: usize, what: &str| scored[i]["assumptions"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().contains(what));
    assert!(said(3, "pp t/s (total)") && said(5, "each one's decode rate") && said(6, "first streamed text"), "{report}");
    // Eight users: more tokens a second in all than one, fewer for each.
    let predicted = |i: usize| scored[i]["predicted"].as_f64().unwrap();
    assert!(predicted(4) > predicted(1) && predicted(5) < predicted(1), "{report}");
    let err = refused(bin().args(["validate", "--against"]).arg(&file));
    assert!(err.contains("is llama-benchy output") && err.contains("supernode import"), "{err}");
}
