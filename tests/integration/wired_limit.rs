//! One wired-limit default for every command: a Mac plan that needs more than the macOS default
//! raises the limit as users do and says how; a model that does not fit even raised is refused.

use crate::{bin, write_text};

/// One 512 GB M3 Ultra running `model` at `quant` under llama.cpp, wired limit left unset.
fn one_m3_ultra(model: &str, quant: &str) -> String {
    format!(
        "name = \"{model} on one M3 Ultra\"\nseed = 1\n[cluster]\nnodes = [\"m3-ultra-80c-512gb\"]\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"llama-cpp\"\nparallelism = \"none\"\n[workload]\nkind = \"generate\"\nprompt_tokens = 128\ngenerate_tokens = 128\n"
    )
}

/// 0.9 of a 512 GB Mac's RAM (512 GiB: DRAM comes in binary sizes) in whole MiB:
/// 0.9 x 524,288 = 471,859.2.
const RAISED_MIB: u64 = 471_859;

/// 512 GiB in GB.
const RAM_512_GB: f64 = 549.755_813_888;

/// DeepSeek R1 at Q5_K_M (~477 GB) needs more than the default 75% of 512 GiB (412.3 GB) and
/// less than 90% (494.8 GB). (At Q4_K_M, ~406 GB, it fits the default.)
#[test]
fn deepseek_r1_q5_k_m_runs_on_one_m3_ultra_with_the_sysctl() {
    let dir = tempfile::tempdir().unwrap();
    let f = write_text(dir.path(), "r1.toml", &one_m3_ultra("deepseek-r1", "q5_k_m"));
    let out = bin().arg("run").arg(&f).arg("--no-write").assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let cmd = format!("sudo sysctl iogpu.wired_limit_mb={RAISED_MIB}");
    assert!(text.contains(&cmd), "the table names the sysctl:\n{text}");
    let out = bin().arg("run").arg(&f).args(["--json", "--no-write"]).assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mem = &v["memory"][0];
    assert_eq!(mem["raise_wired_limit"], serde_json::json!(cmd));
    // The plan uses the raised limit: 90% of 512 GiB, and the model needs more than the 75% default.
    assert!((mem["limit_gb"].as_f64().unwrap() - 0.9 * RAM_512_GB).abs() < 1e-3, "{mem}");
    assert!(mem["total_gb"].as_f64().unwrap() > 0.75 * RAM_512_GB, "{mem}");
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_model_that_fits_the_default_keeps_it_and_prints_no_sysctl() {
    let dir = tempfile::tempdir().unwrap();
    // Llama 3.3 70B, and DeepSeek R1 at Q4_K_M (~406 GB: under 75% of 512 GiB, 412.3 GB).
    for (name, model) in [("l70.toml", "llama-3.3-70b"), ("r1.toml", "deepseek-r1")] {
        let f = write_text(dir.path(), name, &one_m3_ultra(model, "q4_k_m"));
        let out = bin().arg("run").arg(&f).args(["--json", "--no-write"]).assert().success().get_output().clone();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["memory"][0].get("raise_wired_limit").is_none(), "{model}: {}", v["memory"][0]);
        assert!((v["memory"][0]["limit_gb"].as_f64().unwrap() - 0.75 * RAM_512_GB).abs() < 1e-3, "75% of 512 GiB");
    }
}

#[test]
fn a_model_that_does_not_fit_even_raised_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // DeepSeek R1 in bf16 is ~1.34 TB of weights: over 90% of 512 GB.
    let f = write_text(dir.path(), "r1-bf16.toml", &one_m3_ultra("deepseek-r1", "bf16"));
    let out = bin().arg("run").arg(&f).arg("--no-write").assert().failure().get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("does not fit"), "{err}");
    assert!(err.contains("even with the wired limit raised to 90%"), "{err}");
}

#[test]
fn an_explicit_wired_limit_is_taken_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let text = one_m3_ultra("deepseek-r1", "q5_k_m").replace("[model]", "wired_limit_fraction = 0.75\n[model]");
    let f = write_text(dir.path(), "r1-75.toml", &text);
    let out = bin().arg("run").arg(&f).arg("--no-write").assert().failure().get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("does not fit") && err.contains("cluster.wired_limit_fraction"), "{err}");
}

#[test]
fn linux_unified_memory_nodes_use_their_gtt_limit_from_the_catalog() {
    for id in ["dgx-spark", "dell-pro-max-gb10", "framework-desktop-ai-max-395"] {
        let node = supernode::catalog::catalog().node(id).unwrap();
        assert_eq!(node.wired_fraction, 0.9, "{id}");
        assert!(node.sources["wired_fraction"].contains("GTT/TTM"), "{id}: {:?}", node.sources.get("wired_fraction"));
    }
}

#[test]
fn plan_names_the_sysctl_for_a_one_box_deepseek_r1() {
    let out = bin()
        .args(["plan", "--model", "deepseek-r1", "--quant", "q5_k_m", "--nodes", "m3-ultra-80c-512gb", "--max-nodes", "1"])
        .args(["--budget-usd", "20000", "-q"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("WINNER  1x m3-ultra-80c-512gb"), "{text}");
    assert!(text.contains(&format!("sudo sysctl iogpu.wired_limit_mb={RAISED_MIB}")), "{text}");
}
