//! exo-bench output imported like llama-bench (issue 13 item 4): runs become measurement rows
//! (repeats averaged), unknown models are skipped with a reason, and a malformed file is refused
//! with the run and field named.

use supernode::calibrate::exo_bench;

use crate::{bin, root, write_text};

fn fixture() -> std::path::PathBuf {
    root().join("tests/fixtures/exo-bench/runs.json")
}

#[test]
fn exo_bench_runs_become_measurement_rows() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    assert!(exo_bench::looks_like(&text));
    let runs = exo_bench::parse(&text).unwrap();
    assert_eq!(runs.len(), 5);
    assert_eq!((runs[0].sharding.as_str(), runs[0].backend.as_str(), runs[0].nodes), ("tensor", "jaccl", 4));
    let (rows, skipped) = exo_bench::to_rows(&runs, "m3-ultra-80c-512gb", None, "runs", "runs.json").unwrap();
    // Kimi tensor (2 repeats -> 1 config), Kimi pipeline, Qwen3 single node: 3 configs x 2 metrics.
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].1.contains("matches no catalog model"), "{skipped:?}");
    let tg = rows.iter().find(|r| r.id == "runs-1-tg").unwrap();
    assert_eq!((tg.model.as_str(), tg.quant.as_str(), tg.engine.as_str()), ("kimi-k2-thinking", "int4-g32", "exo"));
    assert_eq!((tg.parallelism.as_str(), tg.fabric.as_str(), tg.nodes.as_str()), ("tensor", "tb5-rdma", "4"));
    assert_eq!(tg.value, 28.0);
    assert!(tg.notes.contains("mean of 2 repeats"), "{}", tg.notes);
    let ring = rows.iter().find(|r| r.id == "runs-2-pp").unwrap();
    assert_eq!((ring.fabric.as_str(), ring.metric.as_str(), ring.value), ("tb5-tcp", "prefill_tokens_per_s", 120.0));
    let one = rows.iter().find(|r| r.id == "runs-3-tg").unwrap();
    assert_eq!(
        (one.model.as_str(), one.quant.as_str(), one.parallelism.as_str(), one.fabric.as_str()),
        ("qwen3-235b-a22b", "mlx-4bit", "none", "none")
    );
    assert_eq!(one.prompt_tokens, "2048");
}

#[test]
fn import_reads_exo_bench_and_validate_predicts_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rows.csv");
    let o = bin().arg("import").arg(fixture()).args(["--node", "m3-ultra-80c-512gb", "-o"]).arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("import: 6 rows from 5 benchmark tests"), "{err}");
    assert!(err.contains("skipped mlx-community/Magistral-Medium-2509-4bit"), "{err}");
    let csv = std::fs::read_to_string(&out).unwrap();
    assert!(csv.starts_with("id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens"), "{csv}");
    // The rows are valid input to validate (each predicted by the twin).
    let o = bin().args(["validate", "--against"]).arg(&out).arg("--json").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // exo-bench records no hardware: --node is required, and named in the error.
    let o = bin().arg("import").arg(fixture()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("pass --node"));
}

#[test]
fn malformed_exo_bench_output_is_refused_with_the_run_and_field() {
    let cases = [
        (
            r#"[{"placement_sharding": "Tensor", "placement_instance_meta": "MlxJaccl", "placement_nodes": 2, "stats": {}}]"#,
            "run 0: missing field `model_id`",
        ),
        (
            r#"[{"model_id": "x", "placement_sharding": "Expert", "placement_instance_meta": "MlxJaccl", "placement_nodes": 2, "stats": {}}]"#,
            "expected Tensor or Pipeline",
        ),
        (
            r#"[{"model_id": "x", "placement_sharding": "Tensor", "placement_instance_meta": "MlxJaccl", "placement_nodes": 2, "stats": {"prompt_tps": "fast", "generation_tps": 1, "prompt_tokens": 1, "generation_tokens": 1}}]"#,
            "`stats.prompt_tps` must be a non-negative number",
        ),
        (r#"{"placement_sharding": 1}"#, "expected a JSON list of exo-bench runs"),
        (r#"[]"#, "no exo-bench runs"),
    ];
    for (text, want) in cases {
        let e = exo_bench::parse(text).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = write_text(dir.path(), "bad.json", cases[0].0);
    let o = bin().arg("import").arg(&bad).args(["--node", "m3-ultra-80c-512gb"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.json: exo-bench output: run 0: missing field `model_id`"), "{err}");
}
