//! Every scenario error, from a real file through the CLI: exit code 2, file:line:column, a fix.

use crate::{bin, root};

fn fails(fixture: &str, line_col: &str, needles: &[&str]) {
    let path = root().join("tests/fixtures").join(fixture);
    let out = bin().arg("run").arg(&path).arg("--no-write").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let loc = format!("{fixture}:{line_col}");
    assert!(err.contains(&loc), "{fixture}: expected `{loc}` in:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{fixture}: expected `{n}` in:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    // With --json, stdout is one object naming the cause.
    let out = bin().arg("run").arg(&path).arg("--json").arg("--no-write").assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    assert_eq!(v["fits"], false);
    assert!(v["error"].as_str().unwrap().contains(&loc));
}

#[test]
fn unknown_key() {
    fails("unknown-key.toml", "5:1", &["unknown field `colour`", "help"]);
}

#[test]
fn wrong_type() {
    fails("wrong-type.toml", "8:17", &["invalid type", "help"]);
}

#[test]
fn out_of_range() {
    fails("out-of-range.toml", "3:9", &["out of range", "from 1 to 64"]);
}

#[test]
fn unknown_preset_with_suggestion() {
    fails("unknown-node.toml", "2:32", &["unknown node `m3-ultra-512gb`", "did you mean `m3-ultra-80c-512gb`"]);
}

#[test]
fn model_does_not_fit() {
    fails("does-not-fit.toml", "7:8", &["does not fit", "wired-memory limit", "smaller quantization"]);
}

#[test]
fn illegal_tensor_split() {
    fails("illegal-split.toml", "3:9", &["tensor parallel over 3 nodes is illegal", "4 KV heads", "{1, 2, 4", "pipeline"]);
}

#[test]
fn mesh_needs_more_ports_than_a_node_has() {
    fails("too-many-ports.toml", "3:9", &["needs 7 RDMA-capable Thunderbolt 5 ports", "has 5", "at most 6 nodes"]);
}

#[test]
fn nccl_over_direct_cx7_cables_needs_a_switch_past_three_nodes() {
    fails(
        "nccl-ring-of-four.toml",
        "3:9",
        &["NCCL over direct `cx7-roce` cables joins at most 3 nodes", "topology = \"switch\"", "NCCL >= 2.30u1"],
    );
}

#[test]
fn bad_set_override() {
    let out = bin()
        .args(["run", "--no-write", "--set", "workload.prompt_tokens=-3"])
        .arg(crate::scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prompt_tokens") && err.contains("out of range"), "{err}");
}

#[test]
fn missing_file() {
    let out = bin().args(["run", "no/such/file.toml"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/file.toml") && err.contains("cannot read scenario file") && err.contains("check the path"), "{err}");
    assert!(out.stdout.is_empty());
    let out = bin().args(["run", "--json", "no/such/file.toml"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    assert_eq!(v.as_object().unwrap().len(), 4, "fits, error, kind and detail: {v}");
    assert_eq!(v["fits"], false);
    assert_eq!(v["kind"], "invalid");
    let msg = v["error"].as_str().unwrap();
    assert!(msg.starts_with("no/such/file.toml:1:1: cannot read scenario file") && msg.ends_with("(help: check the path)"), "{msg}");
}

/// Issue 14 item 5: machine-readable errors with `--json` on every command that has `--json`:
/// `{"error": {kind, message, file, line, column, help}}`; `run` keeps `fits`, `error` (a
/// string) and `kind`, and adds the same object as `detail`.
#[test]
fn json_errors_on_every_command_with_json() {
    let keys = ["kind", "message", "file", "line", "column", "help"];
    let check = |v: &serde_json::Value| {
        for k in keys {
            assert!(v.get(k).is_some(), "missing {k} in {v}");
        }
        assert!(!v["message"].as_str().unwrap().is_empty(), "{v}");
    };
    // run: located at file:line:col.
    let path = root().join("tests/fixtures/unknown-node.toml");
    let out = bin().arg("run").arg(&path).args(["--json", "--no-write"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fits"], false);
    assert!(v["error"].is_string());
    check(&v["detail"]);
    assert_eq!((v["detail"]["line"].as_u64(), v["detail"]["column"].as_u64()), (Some(2), Some(32)), "{v}");
    assert!(v["detail"]["file"].as_str().unwrap().ends_with("unknown-node.toml"), "{v}");
    assert_eq!(v["detail"]["kind"], "unknown-preset");
    // validate printed nothing on stdout on error before.
    let out = bin().args(["validate", "--json", "--against", "no/such.csv"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    check(&v["error"]);
    assert_eq!(v["error"]["kind"], "input");
    // plan and calibrate.
    let out =
        bin().args(["plan", "--json", "--model", "no-such-model", "--target-tokens-per-s", "5"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    check(&v["error"]);
    let dir = tempfile::tempdir().unwrap();
    let out = bin().args(["calibrate", "--json", "no/such.csv", "-o"]).arg(dir.path().join("p.toml")).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    check(&v["error"]);
}

/// Issue 14 item 5: errors for `--set` point at the `--set` argument the user typed, not at a
/// line of re-serialised TOML.
#[test]
fn set_errors_point_at_the_set_argument() {
    let f = crate::scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml");
    let out = bin().args(["run", "--no-write", "--set", "engine.mla_prefill=expandd"]).arg(&f).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--set:1:20") && err.contains("engine.mla_prefill=expandd") && !err.contains("(with --set)"), "{err}");
    let out = bin().args(["run", "--no-write", "--set", "workload.prompt_tokens=many"]).arg(&f).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--set:1:24") && err.contains("takes an integer"), "{err}");
}

/// Issue 14 item 5 (smaller ones): an empty measurement file says what is missing (it said "need
/// at least 0"); measured values of 0 or below are refused (MAPE was inf); no internal type names
/// ("RawCluster") in messages.
#[test]
fn empty_or_nonpositive_measurements_and_user_words() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let out = bin().args(["calibrate"]).arg(&empty).arg("-o").arg(dir.path().join("p.toml")).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no measurements in ") && err.contains("empty.csv") && !err.contains("need at least 0"), "{err}");
    // /dev/null is not a regular file: refused as such (issue 14 item 1), naming it.
    let out = bin().args(["calibrate", "/dev/null", "-o"]).arg(dir.path().join("p.toml")).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/null") && err.contains("not a regular file") && !err.contains("need at least 0"), "{err}");
    let csv = std::fs::read_to_string(crate::measurements_csv()).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    let row = lines.find(|l| l.contains(",decode_tokens_per_s,")).unwrap();
    let cols: Vec<&str> = header.split(',').collect();
    let vi = cols.iter().position(|c| *c == "value").unwrap();
    let mut fields: Vec<String> = row.split(',').map(String::from).collect();
    fields[vi] = "0".into();
    let bad = dir.path().join("zero.csv");
    std::fs::write(&bad, format!("{header}\n{}\n", fields.join(","))).unwrap();
    let out = bin().args(["validate", "--against"]).arg(&bad).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("measured value 0") && err.contains("positive"), "{err}");
    let out =
        bin().args(["run", "-", "--no-write"]).write_stdin("cluster = 3\n[model]\nname = \"x\"\n").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a [cluster] table") && !err.contains("RawCluster"), "{err}");
}

/// A measurement file whose every row is set aside says why, row by row: the label, engine or
/// column to change, not only that nothing was predictable.
#[test]
fn a_file_with_no_predictable_row_names_each_row_and_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rocm.csv");
    let header = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes";
    let row = |id: &str, engine: &str| {
        format!("{id},framework-desktop-ai-max-395,1,128gb,gpt-oss-120b,mxfp4,{engine},none,none,,1,decode_tokens_per_s,40,tok/s,probe,")
    };
    std::fs::write(&csv, format!("{header}\n{}\n{}\n", row("rocm-vllm", "vllm"), row("lmd", "lmdeploy"))).unwrap();
    let out = bin().args(["validate", "--against"]).arg(&csv).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 rows, none predictable"), "{err}");
    assert!(err.contains("rocm-vllm: engine `vllm` needs an NVIDIA GPU"), "{err}");
    assert!(err.contains("lmd: engine `lmdeploy` is not modelled"), "{err}");
}
