//! Hostile input, bounded resources (issue 14, item 1 "Bounded everything", and the `--resume`
//! part of item 5): huge and overflowing sweep ranges, corrupt result files.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::{bin, write_text as write};

const BASE: &str = r#"name = "hostile"
seed = 1

[cluster]
node = "m3-ultra-80c-512gb"
count = 1
fabric = "tb5-rdma"

[model]
name = "llama-3.2-3b"

[engine]
name = "exo"

[workload]
prompt_tokens = 8
generate_tokens = 4
"#;

/// Issue 14 item 1 (lazy sweep points): a legal 1e9-value range axis used to build every point
/// up front (a 32 GB allocation, then abort). Now range axes are not expanded: the sweep is read
/// at once and a shard of it streams, its points built on demand.
#[test]
fn a_billion_point_range_streams() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "huge.toml", &format!("{BASE}[sweep]\nseed = {{ from = 1, to = 1000000000 }}\n"));
    let out = t.path().join("out");
    let t0 = Instant::now();
    let o = bin()
        .arg("sweep")
        .arg(&f)
        .arg("--out")
        .arg(&out)
        .args(["--shard", "0/10000000", "--no-charts"])
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("swept 100 points (shard 0/10000000 of 1000000000)"), "{text}");
    assert!(t0.elapsed() < Duration::from_secs(60), "took {:?}", t0.elapsed());
    let lines = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(last["index"], 990_000_000);
    assert_eq!(last["overrides"]["seed"], 990_000_001);
}

/// Issue 14 item 1 (the prompt against the model's context window, in a sweep): a sweep with
/// one point past the window used to fail whole (the error was a bad value, refused up front
/// like a typo). Now such a point is a row that cannot run, kind `context-window`, with the
/// reason; the sweep goes on, and the memory-fit map says the window, not memory, cut it short.
#[test]
fn a_sweep_point_past_the_context_window_is_a_row_not_a_failure() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "ctx.toml", &format!("{BASE}[sweep]\n\"workload.prompt_tokens\" = [8, 200000]\n\"cluster.count\" = [1, 2]\n"));
    let out = t.path().join("out");
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(&out).assert().success().get_output().clone();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("swept 4 points"), "{text}");
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(out.join("results.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let past = r["overrides"]["workload.prompt_tokens"] == 200000;
        assert_eq!(r["fits"], !past, "{r}");
        if past {
            assert_eq!(r["error"]["kind"], "context-window", "{r}");
            let msg = r["error"]["message"].as_str().unwrap();
            assert!(msg.contains("200004 tokens is past Llama 3.2 3B's context window of 131072"), "{msg}");
            assert!(r["error"]["help"].as_str().unwrap().contains("at most 131072 tokens"), "{r}");
            // What the point is, for tables and charts, with its own token counts.
            assert_eq!(r["scenario"]["model"], "llama-3.2-3b", "{r}");
            assert_eq!(r["scenario"]["prompt_tokens"], 200000, "{r}");
        }
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(csv.matches(",context-window,").count(), 2, "{csv}");
    let map = std::fs::read_to_string(out.join("charts/memory-fit.svg")).unwrap();
    assert!(map.contains("(its window)"), "the map must say the window, not memory, cut the context");
    // `run` on such a point says the same kind.
    let o = bin()
        .arg("run")
        .arg(&f)
        .args(["--no-write", "--json", "--set", "workload.prompt_tokens=200000"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "context-window", "{v}");
}

/// Issue 14 item 1 (checked range arithmetic): a range over the whole i64 domain used to
/// overflow and report "swept 0 points" with exit 0; now it is refused with its count and a fix.
#[test]
fn a_range_over_the_whole_i64_domain_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "wide.toml", &format!("{BASE}[sweep]\nseed = {{ from = -9223372036854775808, to = 9223372036854775807 }}\n"));
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("out")).arg("--no-charts").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has 18446744073709551616 values, more than the 1000000000"), "{err}");
    assert!(err.contains("wide.toml:"), "{err}");
    // One value past the maximum is refused too.
    let f = write(t.path(), "over.toml", &format!("{BASE}[sweep]\nseed = {{ from = 0, to = 1000000000 }}\n"));
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("o2")).arg("--no-charts").assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("has 1000000001 values"));
    let f = write(
        t.path(),
        "step.toml",
        &format!("{BASE}[sweep]\nseed = {{ from = -9223372036854775808, to = 9223372036854775807, step = 4611686018427387904 }}\n"),
    );
    // Four values spanning the domain: read without overflow, the first value checked.
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("o3")).arg("--no-charts").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sweep value -9223372036854775808 for `seed`"), "{err}");
}

/// Issue 14 item 5 (`--resume`): a corrupt middle line of results.jsonl is refused with its line
/// number (it used to end the prefix silently, recomputing every good line after it); a torn or
/// garbage last line is the crash case and is dropped and recomputed.
#[test]
fn resume_refuses_a_corrupt_middle_line_and_drops_a_torn_last_line() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "s.toml", &format!("{BASE}[sweep]\nseed = {{ from = 1, to = 12 }}\n"));
    let full = t.path().join("full");
    bin().arg("sweep").arg(&f).arg("--out").arg(&full).arg("--no-charts").assert().success();
    let whole = std::fs::read_to_string(full.join("results.jsonl")).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 12);
    // Line 5 garbage, good lines after it.
    let mut bad = lines.clone();
    bad[4] = "{not json";
    std::fs::write(full.join("results.jsonl"), bad.join("\n") + "\n").unwrap();
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(&full).args(["--resume", "--no-charts"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 5 of") && err.contains("corrupt"), "{err}");
    // A line of another point in the middle is corrupt too.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    std::fs::write(full.join("results.jsonl"), swapped.join("\n") + "\n").unwrap();
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(&full).args(["--resume", "--no-charts"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3 of") && err.contains("holds point 3 where point 2 belongs"), "{err}");
    // Garbage as the last line (with its newline): dropped and recomputed, bytes as before.
    let mut torn = lines[..8].to_vec();
    torn.push("{\"index\": 8, \"fi");
    std::fs::write(full.join("results.jsonl"), torn.join("\n") + "\n").unwrap();
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(&full).args(["--resume", "--no-charts"]).assert().success().get_output().clone();
    assert!(String::from_utf8_lossy(&o.stdout).contains("8 resumed"));
    assert_eq!(std::fs::read_to_string(full.join("results.jsonl")).unwrap(), whole);
}

/// A scenario importing `config.json` from the same directory.
const HF_SCENARIO: &str = r#"name = "hf"
[cluster]
node = "m3-ultra-80c-256gb"
count = 2
fabric = "tb5-rdma"
[model]
hf_config = "config.json"
quant = "mlx-4bit"
[engine]
name = "exo"
"#;

/// `supernode run --no-write` on `file`, expecting failure within `secs`; returns stderr.
fn run_fails(file: &Path, secs: u64) -> String {
    let t0 = Instant::now();
    let o = bin().arg("run").arg(file).arg("--no-write").timeout(Duration::from_secs(secs)).assert().failure().get_output().clone();
    assert!(t0.elapsed() < Duration::from_secs(secs), "took {:?}", t0.elapsed());
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Issue 14 item 1 (size and file-type checks on every file read): `/dev/zero`, a FIFO and a
/// directory used to be read until memory ran out or block forever; a file over the maximum
/// was read whole. Now each is refused at once, the message naming the path.
#[test]
fn inputs_that_are_not_regular_files_or_too_large_are_refused_promptly() {
    let t = tempfile::tempdir().unwrap();
    let err = run_fails(Path::new("/dev/zero"), 20);
    assert!(err.contains("/dev/zero") && err.contains("a device, not a regular file"), "{err}");
    let fifo = t.path().join("fifo.toml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let err = run_fails(&fifo, 20);
    assert!(err.contains("fifo.toml") && err.contains("FIFO"), "{err}");
    let err = run_fails(t.path(), 20);
    assert!(err.contains("a directory"), "{err}");
    // hf_config pointing at a FIFO, and at /dev/zero through a symlink.
    let d = t.path().join("hf");
    std::fs::create_dir(&d).unwrap();
    let s = write(&d, "s.toml", HF_SCENARIO);
    assert!(std::process::Command::new("mkfifo").arg(d.join("config.json")).status().unwrap().success());
    let err = run_fails(&s, 20);
    assert!(err.contains("config.json") && err.contains("FIFO"), "{err}");
    std::fs::remove_file(d.join("config.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("config.json")).unwrap();
    let err = run_fails(&s, 20);
    assert!(err.contains("config.json") && err.contains("a device"), "{err}");
    // validate --against and import read through the same check.
    let o = bin().args(["validate", "--against", "/dev/zero"]).timeout(Duration::from_secs(20)).assert().failure().get_output().clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("/dev/zero"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bin()
        .args(["import", "/dev/zero", "--node", "m3-ultra-80c-512gb"])
        .timeout(Duration::from_secs(20))
        .assert()
        .failure()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("a device"), "{}", String::from_utf8_lossy(&o.stderr));
    // A sparse file over the 64 MiB maximum.
    let big = t.path().join("big.toml");
    std::fs::File::create(&big).unwrap().set_len(65 << 20).unwrap();
    let err = run_fails(&big, 20);
    assert!(err.contains("big.toml") && err.contains("larger than the 64 MiB"), "{err}");
}

/// Issue 14 item 1 (sanity bounds on imported model configs): a million layers took 45 s,
/// u64::MAX dimensions hung, `head_dim = 0` and `sliding_window = 0` predicted 1,395 tok/s. Now
/// each is refused at once, naming the key, at the `hf_config` line of the scenario.
#[test]
fn absurd_model_configs_are_refused_naming_the_key() {
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate::root().join("tests/fixtures/user-model/config.json")).unwrap()).unwrap();
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "s.toml", HF_SCENARIO);
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("num_hidden_layers", 1_000_000.into(), "exceeds the sanity bound 1000"),
        ("hidden_size", u64::MAX.into(), "exceeds the sanity bound"),
        ("vocab_size", 1e300.into(), "is not a non-negative integer"),
        ("head_dim", 0.into(), "must be positive"),
        ("num_key_value_heads", 0.into(), "must be positive"),
        ("num_experts", 10_000_000.into(), "exceeds the sanity bound 100000"),
    ];
    for (key, value, want) in cases {
        let mut c = base.clone();
        c[key] = value;
        write(t.path(), "config.json", &c.to_string());
        let err = run_fails(&s, 20);
        assert!(err.contains(&format!("`{key}`")) && err.contains(want), "{key}: {err}");
        assert!(err.contains("s.toml:7:"), "{key}: {err}");
    }
    // Each dimension within its bound, together absurd: refused by the parameter estimate.
    let mut c = base.clone();
    c["num_hidden_layers"] = 1000.into();
    c["hidden_size"] = 1_000_000.into();
    c["moe_intermediate_size"] = 1_000_000.into();
    write(t.path(), "config.json", &c.to_string());
    let err = run_fails(&s, 20);
    assert!(err.contains("parameters, more than the 1e15"), "{err}");
    // gpt_oss: sliding_window = 0.
    let oss = serde_json::json!({
        "model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
        "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 32, "num_experts_per_tok": 4,
        "intermediate_size": 2880, "vocab_size": 201088, "sliding_window": 0
    });
    write(t.path(), "config.json", &oss.to_string());
    let err = run_fails(&s, 20);
    assert!(err.contains("`sliding_window`") && err.contains("must be positive"), "{err}");
}

/// Issue 14 item 1 (every numeric option validated): `calibrate --prior-weight=1e200` never
/// finished; now it is refused at once with the accepted range.
#[test]
fn a_huge_prior_weight_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["calibrate", "--prior-weight=1e200", "-o"])
        .arg(t.path().join("p.toml"))
        .arg(crate::measurements_csv())
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--prior-weight") && err.contains("from 0 to 1e6"), "{err}");
}

/// `run --no-write ARGS --trace-max-tasks 500 --trace PATH` on `s`, which must succeed: its
/// stderr and the trace.
fn traced(s: &Path, path: &Path, args: &[&str]) -> (String, serde_json::Value) {
    let o = bin().arg("run").arg(s).arg("--no-write").args(args).args(["--trace-max-tasks", "500", "--trace"]).arg(path).assert().success();
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    (err, serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

/// Issue 14 item 1 (the trace streams to disk with a cap): `run --trace` with many decode steps
/// used to build the whole trace in memory (7 GB, then abort). Now tasks stream to a temporary
/// file moved into place when complete, at most a cap of them (the note and the file's metadata
/// say how many were left out), and `--trace-steps` is bounded.
#[test]
fn the_trace_streams_to_disk_with_a_cap_on_tasks_and_steps() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "s.toml", BASE);
    let path = t.path().join("trace.json");
    let (err, v) = traced(&s, &path, &["--set", "workload.generate_tokens=1024", "--trace-steps", "1024"]);
    assert!(err.contains("trace: 500 tasks written") && err.contains("capped at 500 tasks:"), "{err}");
    assert_eq!(v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count(), 500);
    assert_eq!(v["metadata"]["tasks_written"], 500);
    assert!(v["metadata"]["tasks_not_written"].as_u64().unwrap() > 0, "{}", v["metadata"]);
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 2);
    // --trace-steps past the bound is refused by name.
    let o = bin()
        .arg("run")
        .arg(&s)
        .args(["--no-write", "--trace-steps", "100000", "--trace"])
        .arg(&path)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--trace-steps") && err.contains("1..=1024"), "{err}");
}

/// Issue 14 item 1 (the trace's cap stops the traced work): a capped trace used to keep
/// simulating every prefill chunk and decode step after the cap, counting tasks it would not
/// write. Now the traced run stops once the cap is reached; the note and the file's metadata
/// say after how many of the run's steps.
#[test]
fn a_capped_trace_stops_simulating_at_the_cap() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "s.toml", &BASE.replace("name = \"exo\"", "name = \"exo\"\nprefill_chunk = 128"));
    let path = t.path().join("trace.json");
    let (err, v) =
        traced(&s, &path, &["--set", "workload.prompt_tokens=131000", "--set", "workload.generate_tokens=64", "--trace-steps", "64"]);
    let meta = &v["metadata"];
    let (done, left) = (meta["steps_simulated"].as_u64().unwrap(), meta["steps_not_simulated"].as_u64().unwrap());
    // The run: 1,023 full chunks of 128 (sampled at 1,024 at most: all of them), the 55-token
    // rest, exo's lone last prompt token, then 64 decode steps.
    assert_eq!(done + left, 1023 + 2 + 64, "{meta}");
    // A step of this one-node run is about 60 tasks: the cap is reached in the ninth.
    assert!(done <= 10, "the traced run went on past the cap: {meta}");
    assert_eq!(meta["tasks_written"], 500, "{meta}");
    assert_eq!(v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count(), 500);
    assert!(err.contains(&format!("capped at 500 tasks: the trace stops after {done} of 1089 prefill chunks and decode steps")), "{err}");
}

/// Issue 14 item 6 (bounded work): a generation of a million tokens used to simulate every step
/// (over 10 s for a four-node DeepSeek). Past 1,024 steps the steps are sampled over the context
/// range, so the work is bounded and the prediction stays consistent with shorter runs.
#[test]
fn a_million_token_generation_is_estimated_in_bounded_work() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "s.toml", BASE);
    let est = |generate: &str| -> serde_json::Value {
        let o = bin()
            .arg("run")
            .arg(&s)
            .args(["--no-write", "--json", "--set", &format!("workload.generate_tokens={generate}")])
            .timeout(Duration::from_secs(60))
            .assert()
            .success()
            .get_output()
            .clone();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // 131,000 steps (within Llama 3.2 3B's 131,072-token window): 128 times the simulated ones.
    let (short, long) = (est("1024"), est("131000"));
    let events = |v: &serde_json::Value| v["sim_events"].as_f64().unwrap();
    assert!(events(&long) <= events(&short) * 1.01, "{} vs {}", events(&long), events(&short));
    // A longer context makes decode slower, never faster, and not absurdly so.
    let rate = |v: &serde_json::Value| v["decode_tokens_per_s"].as_f64().unwrap();
    assert!(rate(&long) < rate(&short) && rate(&long) > rate(&short) / 100.0, "{} vs {}", rate(&long), rate(&short));
}

/// Issue 14 item 4 (`--json` on every error): a command line clap refuses (unknown flag,
/// missing value) printed only clap's text. With `--json` it is also a JSON error object on
/// stdout, kind `usage`, exit 2.
#[test]
fn json_usage_errors_are_json_objects() {
    let o = bin().args(["validate", "--json", "--against"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "usage");
    assert!(v["error"]["message"].as_str().unwrap().contains("--against"), "{v}");
    assert!(v["error"]["help"].as_str().unwrap().contains("supernode validate --help"), "{v}");
    for k in ["file", "line", "column"] {
        assert!(v["error"][k].is_null(), "{v}");
    }
    let o = bin().args(["run", "--json", "--bogus", "x.toml"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["fits"], false, "run keeps its contract: {v}");
    assert_eq!(v["detail"]["kind"], "usage");
    assert!(v["error"].as_str().unwrap().contains("--bogus"), "{v}");
    // Without --json, stdout stays empty; clap's message is on stderr either way.
    let o = bin().args(["run", "--bogus", "x.toml"]).assert().code(2).get_output().clone();
    assert!(o.stdout.is_empty() && String::from_utf8_lossy(&o.stderr).contains("--bogus"));
    // A --json after `--` is an argument, not the flag.
    let o = bin().args(["validate", "--bogus", "--", "--json"]).assert().code(2).get_output().clone();
    assert!(o.stdout.is_empty());
}

/// Issue 14 item 3 (internal names in messages): serde's Rust words reached the user ("integer
/// `99999999999999999999` as i128, expected i64", "expected f64", "RawCluster", "a sequence").
/// Scenario, sweep and profile errors now speak TOML: integers, numbers, lists, tables.
#[test]
fn error_messages_name_no_rust_types() {
    let t = tempfile::tempdir().unwrap();
    let leaks = ["i128", "i64", "u64", "f64", "Raw", "struct ", "sequence", "map,"];
    let check = |err: &str| {
        for l in leaks {
            assert!(!err.contains(l), "`{l}` in: {err}");
        }
    };
    let cases = [
        ("big.toml", BASE.replace("prompt_tokens = 8", "prompt_tokens = 99999999999999999999"), "is out of range"),
        ("float.toml", format!("{BASE}[cost]\namortization_years = \"x\"\n"), "expected a number"),
        ("list.toml", BASE.replace("count = 1", "count = 1\nnodes = 5"), "expected a list"),
        (
            "table.toml",
            BASE.replace("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 1\nfabric = \"tb5-rdma\"\n", "cluster = 5\n"),
            "[cluster] table",
        ),
        ("sweep.toml", format!("{BASE}[sweep]\nseed = {{ from = 1, to = 99999999999999999999 }}\n"), "out of range"),
    ];
    for (name, text, want) in cases {
        let f = write(t.path(), name, &text);
        let sub = if name == "sweep.toml" { "sweep" } else { "run" };
        let o = bin().arg(sub).arg(&f).arg("--out").arg(t.path().join("o")).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{name}: {err}");
        check(&err);
    }
    let default = std::fs::read_to_string(crate::root().join("calibration/profiles/default.toml")).unwrap();
    let p = write(t.path(), "p.toml", &default.replacen("calibrated_max_context = ", "calibrated_max_context = 1.5 #", 1));
    let s = write(t.path(), "s.toml", BASE);
    let o = bin().arg("run").arg(&s).arg("--no-write").arg("--profile").arg(&p).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("p.toml"), "{err}");
    check(&err);
}

/// Issue 14 item 3 (raw serde messages): `[[workload]]` said "invalid type: table, expected a
/// string"; `[faults.crash]` "expected a list"; a date "invalid type: table, expected an
/// integer"; a range missing `to` "sweep axis `cluster.count.from` must be a list"; a plan spec's
/// `[[model]]` the same raw words without a fix. Each now names the TOML shape at file:line
/// with the fix.
#[test]
fn toml_shape_mistakes_get_a_clear_error_with_a_fix() {
    let t = tempfile::tempdir().unwrap();
    let cases = [
        (
            "aot.toml",
            BASE.replace("[workload]", "[[workload]]"),
            "aot.toml:15:1",
            "`[[workload]]` (double brackets) makes `workload` an array of tables",
            "write `[workload]` (single brackets)",
        ),
        (
            "crash.toml",
            format!("{BASE}[faults.crash]\nnode = 0\nat_minutes = 5\n"),
            "crash.toml:18:1",
            "`[faults.crash]` makes `faults.crash` a table, but it takes a list",
            "write `[[faults.crash]]` before each item",
        ),
        (
            "name.toml",
            BASE.replace("name = \"hostile\"", "[name]\nx = 1"),
            "name.toml:1:1",
            "`[name]` makes `name` a table, but it takes a string",
            "write `name = ...` (a string) before the first table",
        ),
        (
            "date.toml",
            BASE.replace("seed = 1", "seed = 1979-05-27"),
            "date.toml:2:8",
            "`1979-05-27` is a TOML date, not an integer",
            "quote the text",
        ),
        (
            "range.toml",
            format!("{BASE}[sweep]\n\"cluster.count\" = {{ from = 1, stop = 4 }}\n"),
            "range.toml:19:19",
            "the range for sweep axis `cluster.count`: it lacks `to`; it has the unknown key `stop` (did you mean `step`?)",
            "write { from = 1, to = 8 }",
        ),
    ];
    for (name, text, at, msg, fix) in cases {
        let f = write(t.path(), name, &text);
        let sub = if name == "range.toml" { "sweep" } else { "run" };
        let o = bin().arg(sub).arg(&f).arg("--out").arg(t.path().join("o")).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&format!("{at}: {msg}")) && err.contains(fix), "{name}: {err}");
        assert!(!err.contains("invalid type"), "{name}: {err}");
    }
    let spec = write(t.path(), "spec.toml", "[[model]]\nname = \"kimi-k2-thinking\"\n");
    let o = bin().arg("plan").arg("--spec").arg(&spec).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("spec.toml:1:1: `[[model]]` (double brackets)") && err.contains("write `[model]`"), "{err}");
}

/// Issue 14 item 2 (numeric options against the physics): `hpl_n = 10000000` "fit" (an 800 TB
/// matrix on 1 TB of nodes), and a prompt past the model's context window was only flagged as an
/// extrapolation. Now both are errors at the value, with the limit in the help.
#[test]
fn hpl_n_past_memory_and_a_prompt_past_the_context_window_are_refused() {
    let hpl = crate::scenario("m3-ultra-hpl-2x.toml");
    let o =
        bin().arg("run").arg(&hpl).args(["--no-write", "--json", "--set", "workload.hpl_n=10000000"]).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kind"], "does-not-fit", "{v}");
    assert!(v["detail"]["message"].as_str().unwrap().contains("does not fit in the 1024 GiB"), "{v}");
    assert!(v["detail"]["help"].as_str().unwrap().contains("at most 370727"), "{v}");
    bin().arg("run").arg(&hpl).args(["--no-write", "--set", "workload.hpl_n=370727"]).assert().success();
    let t = tempfile::tempdir().unwrap();
    // Llama 3.2 3B reads 131,072 tokens.
    let s = write(t.path(), "s.toml", &BASE.replace("prompt_tokens = 8", "prompt_tokens = 131070"));
    let err = run_fails(&s, 60);
    assert!(err.contains("s.toml:16:17") && err.contains("131074 tokens is past Llama 3.2 3B's context window of 131072"), "{err}");
    assert!(err.contains("at most 131072 tokens"), "{err}");
    let ok = write(t.path(), "ok.toml", &BASE.replace("prompt_tokens = 8", "prompt_tokens = 131068"));
    bin().arg("run").arg(&ok).arg("--no-write").assert().success();
}

/// Issue 14 item 5 (`--set` errors at the `--set` argument, on every path): the library's
/// `scenario::load` applied overrides and then pointed errors at a line of re-serialised TOML
/// ("s.toml (with --set):17:17"). Now it shares the CLI's path: an error in a `--set` value
/// points at the argument, an error elsewhere at the user's own file.
#[test]
fn set_errors_point_at_the_argument_or_the_file_on_every_path() {
    let t = tempfile::tempdir().unwrap();
    let s = write(t.path(), "s.toml", BASE);
    let e = supernode::scenario::load(&s, &["workload.prompt_tokens=-3".into()]).unwrap_err();
    assert_eq!((e.path.as_str(), e.line, e.col), ("--set", 1, 24), "{e}");
    // The context check blames the prompt (the larger part), which the file sets at 16:17.
    let e = supernode::scenario::load(&s, &["workload.generate_tokens=7".into(), "workload.prompt_tokens=131070".into()]).unwrap_err();
    assert_eq!((e.path.as_str(), e.col), ("--set", 24), "{e}");
    let big = write(t.path(), "big.toml", &BASE.replace("prompt_tokens = 8", "prompt_tokens = 131070"));
    let e = supernode::scenario::load(&big, &["seed=3".into()]).unwrap_err();
    assert!(e.path.ends_with("big.toml") && (e.line, e.col) == (16, 17), "{e}");
    // The CLI says the same.
    let o = bin().arg("run").arg(&big).args(["--no-write", "--set", "seed=3"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("big.toml:16:17") && !err.contains("with --set"), "{err}");
}

/// Issue 23 item 5 (every size product bounded): `hpl_p x hpl_q` had no bound, so a two-line
/// scenario allocated a rank table of any size (65,536 x 65,536 ranks: 32 GB) or hung. Now a
/// grid of more than 4 ranks per CPU core of the cluster is refused at the key, with the fix.
#[test]
fn an_hpl_grid_past_the_clusters_cores_is_refused_at_once() {
    let hpl = crate::scenario("m3-ultra-hpl-2x.toml");
    let t0 = Instant::now();
    let o = bin()
        .arg("run")
        .arg(&hpl)
        .args(["--no-write", "--json", "--set", "workload.hpl_p=65536", "--set", "workload.hpl_q=65536"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(t0.elapsed() < Duration::from_secs(30));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let msg = v["detail"]["message"].as_str().unwrap();
    assert!(msg.contains("65536 x 65536 = 4294967296 ranks") && msg.contains("(64 cores)"), "{v}");
    assert!(v["detail"]["help"].as_str().unwrap().contains("at most 64 (one rank per core)"), "{v}");
    // One rank per core, and the 4x oversubscription bound itself, still run.
    bin().arg("run").arg(&hpl).args(["--no-write", "--set", "workload.hpl_p=8", "--set", "workload.hpl_q=8"]).assert().success();
    bin().arg("run").arg(&hpl).args(["--no-write", "--set", "workload.hpl_p=16", "--set", "workload.hpl_q=16"]).assert().success();
    bin().arg("run").arg(&hpl).args(["--no-write", "--set", "workload.hpl_p=16", "--set", "workload.hpl_q=17"]).assert().code(2);
}

/// Issue 23 item 5 (the context-window check on every workload): a serving run skipped it, so a
/// 500,000-token prompt on a 131k-token model "fit". Now serving checks its longest fixed or
/// uniform request like `generate` does.
#[test]
fn a_serving_prompt_past_the_context_window_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let serve = BASE
        .replace("prompt_tokens = 8", "kind = \"serve\"\narrival = \"closed\"\nconcurrency = 2\nduration_s = 10\nprompt_tokens = 500000");
    let err = run_fails(&write(t.path(), "s.toml", &serve), 60);
    assert!(err.contains("500004 tokens is past Llama 3.2 3B's context window of 131072"), "{err}");
    let uniform = serve.replace("prompt_tokens = 500000", "prompt_tokens = { dist = \"uniform\", min = 100, max = 131070 }");
    let err = run_fails(&write(t.path(), "u.toml", &uniform), 60);
    assert!(err.contains("131074 tokens is past"), "{err}");
    let ok = serve.replace("prompt_tokens = 500000", "prompt_tokens = 1000");
    bin().arg("run").arg(write(t.path(), "ok.toml", &ok)).arg("--no-write").assert().success();
}

/// Issue 23 item 5 (every size product bounded): Poisson arrivals x duration had no bound on
/// the queue an overloaded server builds (10^6 requests/s for a year: 2.9 GB and past a minute).
/// Now the queue stops the run at [`MAX_QUEUED_REQUESTS`], reported like the cap on forwards.
#[test]
fn an_overloaded_servers_queue_is_bounded_and_said() {
    use supernode::estimate::serve::MAX_QUEUED_REQUESTS;
    let text = BASE.replace(
        "prompt_tokens = 8",
        "kind = \"serve\"\narrival = \"poisson\"\nrate_per_s = 1000000\nduration_s = 30000000\nprompt_tokens = 8",
    );
    let s = supernode::scenario::parse(supernode::scenario::Source { path: "q.toml".into(), dir: Default::default(), text }).unwrap();
    let sv = s.workload.serve.as_ref().unwrap();
    let plan = s.plan(12, &supernode::profile::Profile::default_profile()).unwrap();
    let run = supernode::estimate::ServeSim::new(&plan, sv, &s.slo, s.seed).run();
    assert!(run.truncated, "the queue cap stops the run");
    assert!(run.stats.peak_queue as usize <= MAX_QUEUED_REQUESTS, "{}", run.stats.peak_queue);
    assert!(run.stats.peak_queue as usize >= MAX_QUEUED_REQUESTS / 2, "it was the queue that stopped it: {}", run.stats.peak_queue);
    assert!(run.window_ns < 10_000_000_000, "stopped within seconds of simulated time: {}", run.window_ns);
}

/// Issue 23 item 5: a tiny MTBF over a long horizon made the fault run advance through millions
/// of events (7.9 million crashes after a minute of CPU, unfinished). Now a key whose expected
/// events pass 100,000 is refused at the key, naming the least MTBF that runs.
#[test]
fn an_mtbf_expecting_millions_of_faults_is_refused_at_the_key() {
    let t = tempfile::tempdir().unwrap();
    let faults = |node: &str, link: &str| {
        format!(
            "{}[faults]\nhorizon_days = 3650\n[faults.node]\nmtbf_hours = {node}\nreboot_minutes = 2\n[faults.link]\nmtbf_hours = {link}\nrepair_minutes = 60\n",
            BASE.replace("count = 1", "count = 4")
        )
    };
    let err = run_fails(&write(t.path(), "n.toml", &faults("0.000001", "1000")), 60);
    assert!(err.contains("`faults.node.mtbf_hours` = 0.000001 expects 3.504e11 faults over the 3650-day horizon on 4 nodes"), "{err}");
    assert!(err.contains("use faults.node.mtbf_hours >= 3.5040"), "{err}");
    // Four nodes in a full mesh: six cables.
    let err = run_fails(&write(t.path(), "l.toml", &faults("1000", "0.5")), 60);
    assert!(err.contains("`faults.link.mtbf_hours` = 0.5 expects 1.051e6 faults over the 3650-day horizon on 6 cables"), "{err}");
    // At the bound it runs.
    bin().arg("run").arg(write(t.path(), "ok.toml", &faults("3.6", "5.4"))).args(["--no-write", "--no-intervals"]).assert().success();
}

/// Issue 23 item 5: a profile missing a cost field is an error naming the field and the file,
/// never a silent 0 or 1 (every field of a runtime's table, the chip's, `[comm]` and `[misc]`),
/// except the two added later with the meaning older profiles had (CHANGELOG.md).
#[test]
fn a_profile_missing_any_field_names_it_and_the_file() {
    let text = std::fs::read_to_string(crate::root().join("calibration/profiles/default.toml")).unwrap();
    let mut checked = 0;
    for table in ["[chips.m3-ultra]", "[chips.m3-ultra.runtimes.mlx]", "[comm]", "[misc]"] {
        let start = text.find(&format!("\n{table}\n")).unwrap_or_else(|| panic!("{table}")) + table.len() + 2;
        let body = &text[start..];
        let end = body.find("\n[").unwrap_or(body.len());
        for line in body[..end].lines().filter(|l| l.contains(" = ") && !l.starts_with('#')) {
            let key = line.split(" = ").next().unwrap();
            if key == "bw_mult_fp8" || key == "host_per_kernel_us" {
                // The optional fields: profiles written before them (without them or their
                // sources) read FP8 at `bw_mult_8bit` and build MLX's graphs in no time.
                let mut cut = format!("{}{}", &text[..start], body.replacen(&format!("{line}\n"), "", 1));
                let head = format!("\n[sources.\"chips.m3-ultra.runtimes.mlx.{key}\"]\n");
                let from = cut.find(&head).expect("its source");
                let to = from + 1 + cut[from + 1..].find("\n[").unwrap();
                cut.replace_range(from..to, "");
                let p = supernode::profile::Profile::parse(&cut, "my-profile.toml").unwrap();
                let mlx = &p.chips["m3-ultra"].runtimes["mlx"];
                if key == "bw_mult_fp8" {
                    assert_eq!(mlx.bw_mult_fp8, mlx.bw_mult_8bit);
                } else {
                    assert_eq!(mlx.host_per_kernel_us, 0.0);
                }
                continue;
            }
            let cut = format!("{}{}", &text[..start], body.replacen(&format!("{line}\n"), "", 1));
            let e = supernode::profile::Profile::parse(&cut, "my-profile.toml").expect_err(key).to_string();
            assert!(e.contains("my-profile.toml") && e.contains(&format!("`{key}`")), "{table} {key}: {e}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked}");
    for key in ["host_per_seq_us", "stage_us", "bw_mult_half", "bw_mult_8bit", "bw_mult_mxfp4"] {
        assert!(text.contains(&format!("\n{key} = ")), "the default profile sets {key}");
    }
}

/// Issue 23 item 5: a serving row the twin has no answer for (no serving result, or a run that
/// decoded nothing in its window) is a skipped row with its reason, never a prediction of 0.
#[test]
fn a_serving_row_without_a_result_is_skipped_not_scored_as_zero() {
    use supernode::calibrate::validate::serve_rate;
    let text =
        BASE.replace("prompt_tokens = 8", "kind = \"serve\"\narrival = \"closed\"\nconcurrency = 2\nrequests = 2\nprompt_tokens = 8");
    let s = supernode::scenario::parse(supernode::scenario::Source { path: "r.toml".into(), dir: Default::default(), text }).unwrap();
    let mut est = supernode::estimate::estimate(&s, &supernode::profile::Profile::default_profile()).unwrap();
    let rate = serve_rate(&est).unwrap();
    assert!(rate > 0.0 && rate == est.serve.as_ref().unwrap().aggregate_decode_tokens_per_s);
    est.serve.as_mut().unwrap().aggregate_decode_tokens_per_s = 0.0;
    let e = serve_rate(&est).unwrap_err().to_string();
    assert!(e.starts_with("no result: the serving run decoded no token in its") && e.contains("2 requests completed"), "{e}");
    est.serve = None;
    assert_eq!(serve_rate(&est).unwrap_err().to_string(), "no result: the scenario ran no serving workload");
}
