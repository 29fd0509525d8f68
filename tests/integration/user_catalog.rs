//! User catalogs end to end: a scenario's own `[catalog]`, `--catalog FILE` and
//! `$SUPERNODE_CATALOG` for run, catalog, sweep and plan; bad entries refused at file:line:column;
//! the per-node GPU memory limit checked when the model is placed.

use crate::{bin, root, write_text};

const MINI: &str = "scenarios/user-4x-mac-mini-m4-pro-qwen3-235b-a22b-exo-rdma.toml";
const AI_MAX: &str = "scenarios/catalogs/ai-max-395-50gbe.toml";
const AI_MAX_RUN: &str = "scenarios/catalogs/2x-framework-50gbe-llama-3.3-70b-llama-rpc.toml";

fn json(args: &[&str]) -> serde_json::Value {
    let out = bin().current_dir(root()).args(args).assert().success().get_output().clone();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_scenario_with_its_own_node_runs_and_says_it_extrapolates() {
    let v = json(&["run", MINI, "--json", "--no-write"]);
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0, "{v}");
    let text = v.to_string();
    assert!(text.contains("chip `m4-pro` was never profiled: node `mac-mini-m4-pro-20c-48gb` uses the parameters of `m4-max`"), "{text}");
    // 75% of the 48 GB (GiB) the entry gives (the wired fraction comes from its `like`, the
    // built-in 64 GB Mac mini): 0.75 x 48 x 2^30 bytes.
    assert!((v["memory"][0]["limit_gb"].as_f64().unwrap() - 0.75 * 48.0 * 1.073_741_824).abs() < 1e-3, "{}", v["memory"][0]);
}

#[test]
fn a_catalog_file_serves_run_catalog_and_the_environment() {
    let v = json(&["run", AI_MAX_RUN, "--catalog", AI_MAX, "--json", "--no-write"]);
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0, "{v}");
    // Without the catalog the node is unknown, with a pointer to the fix.
    let out = bin().current_dir(root()).args(["run", AI_MAX_RUN, "--no-write"]).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown node `framework-desktop-50gbe`"));
    let out = bin().current_dir(root()).env("SUPERNODE_CATALOG", AI_MAX).args(["catalog", "nodes"]).assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("user entry: scenarios/catalogs/ai-max-395-50gbe.toml, like framework-desktop-ai-max-395"), "{text}");
    let out = bin().current_dir(root()).args(["catalog", "fabrics", "--catalog", AI_MAX]).assert().success().get_output().clone();
    assert!(String::from_utf8(out.stdout).unwrap().contains("eth-50g"));
}

#[test]
fn a_bad_catalog_file_is_refused_at_file_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_text(dir.path(), "bad.toml", "[[node]]\nid = \"x\"\nlike = \"m4-max-40c-128gb\"\nmem_bw_gbs = -5\n");
    let out = bin().current_dir(root()).args(["catalog", "nodes", "--catalog"]).arg(&f).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:4:1: `mem_bw_gbs = -5` is out of range: 0.001 to 100000 GB/s"), "{err}");
}

/// One 128 GB M4 Max running Llama 3.3 70B Q4_K_M (about 42.5 GB with its KV cache and runtime)
/// under a GPU memory limit.
fn limited(limit: &str) -> String {
    format!(
        "[cluster]\nnode = \"m4-max-40c-128gb\"\n{limit}\n[model]\nname = \"llama-3.3-70b\"\nquant = \"q4_k_m\"\n[engine]\nname = \"llama-cpp\"\nparallelism = \"none\"\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 128\n"
    )
}

#[test]
fn the_gpu_memory_limit_is_used_as_written_and_names_node_need_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write_text(dir.path(), "ok.toml", &limited("gpu_memory_limit_gb = 100"));
    let out = bin().arg("run").arg(&ok).args(["--json", "--no-write"]).assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["memory"][0]["limit_gb"].as_f64().unwrap(), 100.0);

    let small = write_text(dir.path(), "small.toml", &limited("gpu_memory_limit_gb = 30"));
    let out = bin().arg("run").arg(&small).arg("--no-write").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(err.contains("node 0 (m4-max-40c-128gb) needs"), "{err}");
    assert!(err.contains("but its GPU memory limit is 30.0 GB (gpu_memory_limit_gb)"), "{err}");
    assert!(err.contains("raise gpu_memory_limit_gb to at least"), "{err}");

    let absurd = write_text(dir.path(), "absurd.toml", &limited("gpu_memory_limit_gb = 500"));
    let out = bin().arg("run").arg(&absurd).arg("--no-write").assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gpu_memory_limit_gb = 500 for node `m4-max-40c-128gb` is out of range"), "{err}");
    assert!(err.contains(":3:"), "located at the key: {err}");
}
