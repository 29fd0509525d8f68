//! Sweeps through the CLI: grammar errors located at file:line:column, resume after a killed
//! run, shards merged byte for byte, mismatched shards refused, the same bytes at any --jobs.

use std::path::{Path, PathBuf};

use crate::{bin, write_text as write};

/// A small, fast sweep: 4 cluster sizes x 2 fabrics x 2 prompt lengths = 16 points, one of them
/// (3 nodes, tensor split of 8 KV heads) a row with a reason.
const SMALL: &str = r#"name = "small sweep"
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

[sweep]
"cluster.count" = [1, 2, 3, 4]
cluster.fabric = ["tb5-rdma", "tb5-tcp"]
"workload.prompt_tokens" = [8, 32]
"#;

fn sweep(file: &Path, out: &Path, extra: &[&str]) -> String {
    let o = bin().arg("sweep").arg(file).arg("--out").arg(out).args(extra).assert().success().get_output().clone();
    String::from_utf8(o.stdout).unwrap()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn grammar_errors_point_at_file_line_column() {
    let t = tempfile::tempdir().unwrap();
    let base = SMALL.split("[sweep]").next().unwrap().to_string();
    let lines = base.lines().count();
    let cases: [(&str, usize, usize, &str); 5] = [
        // A value that is not a preset: at the value, with a suggestion.
        ("[sweep]\n\"cluster.fabric\" = [\"tb5-rdma\", \"tb5-rmda\"]\n", 2, 33, "did you mean `tb5-rdma`"),
        // A key that is not a scenario key: at the key.
        ("[sweep]\n\"cluster.colour\" = [1, 2]\n", 2, 1, "not a scenario key"),
        // Not a list: at the value.
        ("[sweep]\n\"cluster.count\" = 4\n", 2, 19, "must be a list"),
        // Zip of axes with different lengths: at the second axis.
        ("[sweep]\n\"cluster.count\" = [1, 2]\nseed = [1, 2, 3]\nzip = [[\"cluster.count\", \"seed\"]]\n", 3, 1, "differ in length"),
        // Zip naming no axis: at the name.
        ("[sweep]\n\"cluster.count\" = [1, 2]\nzip = [[\"cluster.cont\"]]\n", 3, 9, "did you mean `cluster.count`"),
    ];
    for (i, (sweep_text, line, col, needle)) in cases.iter().enumerate() {
        let name = format!("bad-{i}.toml");
        let f = write(t.path(), &name, &format!("{base}{sweep_text}"));
        let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("o")).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        let loc = format!("{name}:{}:{col}", lines + line);
        assert!(err.contains(&loc), "case {i}: expected `{loc}` in\n{err}");
        assert!(err.contains(needle), "case {i}: expected `{needle}` in\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // No [sweep] at all.
    let f = write(t.path(), "none.toml", &base);
    let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("o")).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("no `[sweep]` table"));
}

#[test]
fn rows_carry_reasons_and_the_csv_matches() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "small.toml", SMALL);
    let out = t.path().join("out");
    let text = sweep(&f, &out, &["--no-charts"]);
    assert!(text.contains("swept 16 points"), "{text}");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(read(&out.join("results.jsonl"))).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 16);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["index"], i as u64);
    }
    // First axis varies slowest: point 4 is count 2, tb5-rdma, prompt 8.
    assert_eq!(lines[4]["overrides"]["cluster.count"], 2);
    assert_eq!(lines[4]["overrides"]["cluster.fabric"], "tb5-rdma");
    assert_eq!(lines[4]["estimate"]["nodes"].as_array().unwrap().len(), 2);
    let bad = &lines[8];
    assert_eq!(bad["overrides"]["cluster.count"], 3);
    assert_eq!(bad["fits"], false);
    assert!(bad["error"]["message"].as_str().unwrap().contains("tensor parallel over 3 nodes"), "{bad}");
    // The kind comes from the typed split error, not from the message.
    assert_eq!(bad["error"]["kind"], "illegal-split", "{bad}");
    let csv = String::from_utf8(read(&out.join("results.csv"))).unwrap();
    assert_eq!(csv.lines().count(), 17);
    let row8: Vec<&str> = csv.lines().nth(9).unwrap().split(',').collect();
    assert_eq!(&row8[..6], &["8", "3", "tb5-rdma", "8", "false", "illegal-split"], "{csv}");
    assert!(csv.starts_with("index,cluster.count,cluster.fabric,workload.prompt_tokens,fits,"), "{csv}");
    let m: serde_json::Value = serde_json::from_slice(&read(&out.join("manifest.json"))).unwrap();
    assert_eq!(m["points_total"], 16);
    assert_eq!(m["complete"], true);
}

#[test]
fn same_bytes_at_any_jobs() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "small.toml", SMALL);
    sweep(&f, &t.path().join("j1"), &["--jobs", "1", "--no-charts"]);
    sweep(&f, &t.path().join("j2"), &["--jobs", "2", "--no-charts"]);
    for name in ["results.jsonl", "results.csv", "manifest.json"] {
        assert_eq!(read(&t.path().join("j1").join(name)), read(&t.path().join("j2").join(name)), "{name}");
    }
}

#[test]
fn resume_after_a_killed_run_gives_the_same_bytes() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "small.toml", SMALL);
    let full = t.path().join("full");
    sweep(&f, &full, &["--no-charts"]);
    let whole = read(&full.join("results.jsonl"));
    // A run killed mid-write: the first lines plus half a line, the manifest still "running".
    let killed = t.path().join("killed");
    std::fs::create_dir_all(&killed).unwrap();
    let cut = whole.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(5).unwrap().0 + 40;
    std::fs::write(killed.join("results.jsonl"), &whole[..cut]).unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(&read(&full.join("manifest.json"))).unwrap();
    m["complete"] = false.into();
    m["points_done"] = 0.into();
    std::fs::write(killed.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let text = sweep(&f, &killed, &["--resume", "--no-charts"]);
    assert!(text.contains("6 resumed"), "{text}");
    assert_eq!(read(&killed.join("results.jsonl")), whole);
    assert_eq!(read(&killed.join("results.csv")), read(&full.join("results.csv")));
    // Resuming a finished run computes nothing.
    let text = sweep(&f, &killed, &["--resume", "--no-charts"]);
    assert!(text.contains("16 resumed"), "{text}");
    assert_eq!(read(&killed.join("results.jsonl")), whole);
    // Resuming into results of another sweep is refused.
    let other = write(t.path(), "other.toml", &SMALL.replace("[8, 32]", "[8, 64]"));
    let o = bin().arg("sweep").arg(&other).arg("--out").arg(&killed).arg("--resume").assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot resume"));
}

#[test]
fn four_shards_merged_equal_one_run_and_mismatches_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "small.toml", SMALL);
    let whole = t.path().join("whole");
    sweep(&f, &whole, &["--no-charts"]);
    let shard = |i: usize| t.path().join(format!("s{i}"));
    for i in 0..4 {
        let text = sweep(&f, &shard(i), &["--shard", &format!("{i}/4")]);
        assert!(text.contains(&format!("shard {i}/4 of 16")), "{text}");
    }
    // Scheduler variables select the same slices.
    let slurm = t.path().join("slurm");
    bin()
        .arg("sweep")
        .arg(&f)
        .arg("--out")
        .arg(&slurm)
        .env("SLURM_ARRAY_TASK_ID", "2")
        .env("SLURM_ARRAY_TASK_COUNT", "4")
        .assert()
        .success();
    assert_eq!(read(&slurm.join("results.jsonl")), read(&shard(2).join("results.jsonl")));
    let k8s = t.path().join("k8s");
    bin().arg("sweep").arg(&f).arg("--out").arg(&k8s).args(["--shard-count", "4"]).env("JOB_COMPLETION_INDEX", "3").assert().success();
    assert_eq!(read(&k8s.join("results.jsonl")), read(&shard(3).join("results.jsonl")));

    let merged = t.path().join("merged");
    bin().arg("merge").args((0..4).rev().map(shard)).arg("--out").arg(&merged).arg("--no-charts").assert().success();
    assert_eq!(read(&merged.join("results.jsonl")), read(&whole.join("results.jsonl")));
    assert_eq!(read(&merged.join("results.csv")), read(&whole.join("results.csv")));

    let refuse = |dirs: Vec<PathBuf>, needle: &str| {
        let o = bin().arg("merge").args(&dirs).arg("--out").arg(t.path().join("bad")).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(needle), "expected `{needle}` in\n{err}");
    };
    refuse(vec![shard(0), shard(1), shard(3)], "missing shard(s) 2/4");
    refuse(vec![shard(0), shard(1), shard(1), shard(2), shard(3)], "both shard 1/4");
    // A shard of another sweep (different axis values) has another hash.
    let other = write(t.path(), "other.toml", &SMALL.replace("[8, 32]", "[8, 64]"));
    sweep(&other, &t.path().join("o2"), &["--shard", "2/4"]);
    refuse(vec![shard(0), shard(1), t.path().join("o2"), shard(3)], "different sweeps");
    // A shard that was killed (incomplete).
    let mut m: serde_json::Value = serde_json::from_slice(&read(&shard(1).join("manifest.json"))).unwrap();
    m["complete"] = false.into();
    std::fs::write(shard(1).join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    refuse(vec![shard(0), shard(1), shard(2), shard(3)], "incomplete");
    // Not a sweep directory.
    refuse(vec![t.path().to_path_buf()], "not a sweep output directory");
}

#[test]
fn bad_shard_arguments_are_input_errors() {
    let t = tempfile::tempdir().unwrap();
    let f = write(t.path(), "small.toml", SMALL);
    for args in [vec!["--shard", "4/4"], vec!["--shard", "x"], vec!["--shard-count", "2"]] {
        let o = bin().arg("sweep").arg(&f).arg("--out").arg(t.path().join("o")).args(&args).assert().code(2).get_output().clone();
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
    }
}
