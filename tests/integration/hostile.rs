//! Hostile input, bounded resources (issue 14, item 1 "Bounded everything", and the `--resume`
//! part of item 5): huge and overflowing sweep ranges, corrupt result files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bin;

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

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

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
