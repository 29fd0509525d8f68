//! End-to-end CLI runs.

use crate::{bin, root, scenario};

#[test]
fn run_prints_the_table_and_writes_json() {
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .arg("run")
        .arg(scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml"))
        .arg("--out")
        .arg(out.path())
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(o.stdout).unwrap();
    for k in [
        "fits",
        "decode",
        "prefill",
        "time to first token",
        "TPOT p50 / p99",
        "cluster power",
        "J/token",
        "hardware cost",
        "cost per Mtok",
        "memory node 3",
        "calibration",
    ] {
        assert!(text.contains(k), "missing `{k}` in\n{text}");
    }
    let files: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one result file, no temp files left");
}

#[test]
fn json_has_the_contract_keys() {
    let o = bin()
        .arg("run")
        .arg(scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml"))
        .args(["--json", "--no-write"])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "fits",
        "decode_tokens_per_s",
        "prefill_tokens_per_s",
        "ttft_s",
        "tpot_ms",
        "cluster_power_w",
        "node_power_w",
        "energy_j_per_token",
        "memory_per_node_gb",
        "cost_usd",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["fits"], true);
    assert!(v["tpot_ms"]["p50"].as_f64().unwrap() > 0.0 && v["tpot_ms"]["p99"].as_f64().unwrap() >= v["tpot_ms"]["p50"].as_f64().unwrap());
    assert_eq!(v["node_power_w"].as_array().unwrap().len(), 4);
    assert_eq!(v["memory_per_node_gb"].as_array().unwrap().len(), 4);
    // Tensor parallel over RDMA: every GPU waits on its all_sums part of each step.
    let busy: Vec<f64> = v["decode_gpu_busy_percent"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(busy.len(), 4);
    assert!(busy.iter().all(|b| *b > 10.0 && *b < 100.0), "{busy:?}");
    // 2 x 11,699 + 2 x 8,099 + 6 cables x 70.
    assert_eq!(v["cost_usd"].as_f64().unwrap(), 2.0 * 11699.0 + 2.0 * 8099.0 + 6.0 * 70.0);
}

#[test]
fn set_overrides_any_key() {
    let f = scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    let get = |sets: &[&str]| -> serde_json::Value {
        let mut c = bin();
        c.arg("run").arg(&f).args(["--json", "--no-write"]);
        for s in sets {
            c.args(["--set", s]);
        }
        serde_json::from_slice(&c.assert().success().get_output().stdout).unwrap()
    };
    let base = get(&[]);
    // Past the longest context the profile's rows ran (34,817 tokens: the MiniMax rows at 30k).
    let long = get(&["workload.prompt_tokens=40960"]);
    assert_eq!(long["prompt_tokens"], 40960);
    assert!(long["ttft_s"].as_f64().unwrap() > 50.0 * base["ttft_s"].as_f64().unwrap());
    assert!(
        long["decode_tokens_per_s"].as_f64().unwrap() < base["decode_tokens_per_s"].as_f64().unwrap(),
        "decode slows with a long KV cache"
    );
    assert!(long["calibration"]["status"] == "extrapolation");
    // macOS 26.3's 512 KiB frames (26.2: 4 KiB) change no timing: an RDMA message costs one round
    // plus its bytes at the link rate whatever its frames (issue 20); the frame enters only the
    // fault model's RDMA instability.
    let newer = get(&["engine.macos=\"26.3\""]);
    assert_eq!(newer["decode_tokens_per_s"], base["decode_tokens_per_s"], "the frame size is not a timing term");
    // exo prefills MLA models in mlx-lm's expanded form; the absorbed form is slower at long context.
    // At 64K tokens: 908 s absorbed vs 682 s expanded.
    let expanded = get(&["workload.prompt_tokens=65536"]);
    let absorbed = get(&["workload.prompt_tokens=65536", "engine.mla_prefill=\"absorbed\""]);
    assert!(absorbed["ttft_s"].as_f64().unwrap() > 1.25 * expanded["ttft_s"].as_f64().unwrap());
    assert_eq!(absorbed["decode_tokens_per_s"], expanded["decode_tokens_per_s"], "decode is absorbed either way");
    let out = bin().arg("run").arg(&f).args(["--no-write", "--set", "engine.mla_prefill=expandd"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown MLA prefill form `expandd`") && err.contains("did you mean `expanded`"), "{err}");
    // A per-head MLA cache is llama.cpp's (old GGUFs); exo keeps the latent one.
    let out = bin().arg("run").arg(&f).args(["--no-write", "--set", "engine.mla_cache=per-head"]).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("keeps the MLA latent cache") && err.contains("use a llama.cpp engine"), "{err}");
    let llama = scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml");
    let run = |sets: &[&str]| -> serde_json::Value {
        let mut c = bin();
        c.arg("run").arg(&llama).args(["--json", "--no-write", "--set", "workload.prompt_tokens=4096"]);
        for s in sets {
            c.args(["--set", s]);
        }
        serde_json::from_slice(&c.assert().success().get_output().stdout).unwrap()
    };
    let (latent, per_head) = (run(&[]), run(&["engine.mla_cache=per-head"]));
    // One node: its memory and the KV cache's share of it.
    let mem = |v: &serde_json::Value| v["memory_per_node_gb"][0].as_f64().unwrap();
    let kv = |v: &serde_json::Value| v["memory"][0]["kv_cache_gb"].as_f64().unwrap();
    assert!(mem(&per_head) > mem(&latent) + 15.0, "a 4096-token per-head cache is ~20 GB");
    assert!((mem(&per_head) - mem(&latent) - (kv(&per_head) - kv(&latent))).abs() < 0.01, "only the cache grows");
    assert!(per_head["decode_tokens_per_s"].as_f64().unwrap() < latent["decode_tokens_per_s"].as_f64().unwrap());
    // R1's and V3's GGUFs predate llama.cpp's MLA metadata: per-head unless the file says otherwise.
    for model in ["model.name=deepseek-r1", "model.name=deepseek-ai/DeepSeek-V3"] {
        let default = run(&[model]);
        assert_eq!(default["memory"], per_head["memory"], "{model}");
        assert_eq!(default["decode_tokens_per_s"], per_head["decode_tokens_per_s"], "{model}");
        assert_eq!(run(&[model, "engine.mla_cache=latent"])["memory"], latent["memory"], "{model}");
    }
    // R1-0528's GGUFs came after: its own preset, the latent cache.
    assert_eq!(run(&["model.name=unsloth/DeepSeek-R1-0528-GGUF"])["memory"], latent["memory"]);
}

#[test]
fn hf_config_model_runs() {
    let o = bin()
        .arg("run")
        .arg(root().join("tests/fixtures/hf-model.toml"))
        .args(["--json", "--no-write"])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"], "user-model");
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 10.0);
}

#[test]
fn catalog_lists_everything_with_sources() {
    let o = bin().arg("catalog").assert().success().get_output().clone();
    let t = String::from_utf8(o.stdout).unwrap();
    for id in [
        "m3-ultra-80c-512gb",
        "dgx-spark",
        "framework-desktop-ai-max-395",
        "tb5-rdma",
        "cx7-roce",
        "wifi",
        "kimi-k2-thinking",
        "deepseek-r1",
        "gpt-oss-120b",
        "q4_k_m",
        "int4-g32",
        "ib_send_lat",
    ] {
        assert!(t.contains(id), "catalog lacks {id}");
    }
    let out = bin().args(["catalog", "gpus"]).assert().code(2).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("engines"), "the error lists the sections");
    // The engines: every scenario name, its kernels, its host-cost table and where it runs.
    let o = bin().args(["catalog", "engines"]).assert().success().get_output().clone();
    let t = String::from_utf8(o.stdout).unwrap();
    for name in supernode::engine::EngineKind::names() {
        assert!(t.contains(name), "engines lack {name}:\n{t}");
    }
    let line = |id: &str| t.lines().find(|l| l.split_whitespace().next() == Some(id)).unwrap_or_else(|| panic!("{id}:\n{t}")).to_string();
    assert!(line("omlx").contains("mlx") && line("omlx").contains("engines.omlx") && line("omlx").contains("one node"), "{t}");
    assert!(line("vllm").contains("cuda") && line("vllm").contains("tensor, pipeline, expert"), "{t}");
    assert!(line("ollama").contains("runs llama-cpp's kernels"), "{t}");
    assert!(t.contains("runs on chips: gb10\n"), "the CUDA engines run on the GB10 only:\n{t}");
    assert!(!t.contains("NODES"), "one section");
}

#[test]
fn every_shipped_scenario_runs() {
    for e in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") && !p.file_name().unwrap().to_string_lossy().starts_with("sweep") {
            bin().arg("run").arg(&p).args(["--json", "--no-write"]).assert().success();
        }
    }
}

#[test]
fn trace_is_a_perfetto_file_of_the_same_run() {
    let f = scenario("geerling-2x-m3-ultra-qwen3-235b-a22b-exo-rdma.toml");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let out = bin()
        .arg("run")
        .arg(&f)
        .args(["--json", "--no-write", "--trace-steps", "3", "--trace"])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .clone();
    let est: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events.iter().filter(|e| e["name"] == "process_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["node0 m3-ultra-80c-512gb", "node1 m3-ultra-80c-512gb"]);
    let tasks: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    // Every resource runs one task at a time (FIFO), and every task takes time.
    let mut by: std::collections::BTreeMap<(u64, u64), Vec<(f64, f64)>> = Default::default();
    for e in &tasks {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(dur > 0.0);
        by.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push((ts, ts + dur));
    }
    for spans in by.values_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(spans.windows(2).all(|w| w[1].0 >= w[0].1 - 1e-6), "overlapping tasks on one resource");
    }
    // The traced prefill ends at the estimate's time to first token; three decode steps follow.
    let prefill_end =
        tasks.iter().filter(|e| e["cat"] == "prefill").map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()).fold(0.0, f64::max);
    assert!((prefill_end - est["ttft_s"].as_f64().unwrap() * 1e6).abs() < 1.0, "{prefill_end} vs {}", est["ttft_s"]);
    let steps: std::collections::BTreeSet<u64> =
        tasks.iter().filter(|e| e["cat"] == "decode").map(|e| e["args"]["step"].as_u64().unwrap()).collect();
    assert_eq!(steps.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    // GPU tasks name the operations they run.
    let first = tasks.iter().find(|e| e["name"] == "compute").unwrap();
    assert!(first["args"]["ops"].as_str().unwrap().contains("o_proj"), "{first}");
    // Same scenario, same seed: the same file.
    let again = dir.path().join("t2.json");
    bin().arg("run").arg(&f).args(["--no-write", "--trace-steps", "3", "--trace"]).arg(&again).assert().success();
    assert_eq!(text, std::fs::read_to_string(&again).unwrap());
    // HPL has no prefill or decode to trace.
    let hpl = scenario("m3-ultra-hpl-2x.toml");
    let out =
        bin().arg("run").arg(&hpl).args(["--no-write", "--trace"]).arg(dir.path().join("h.json")).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("--trace records generate workloads") && err.contains("not HPL"), "{err}");
    // A batched-bench run is named as what it is, with the kinds that trace.
    let out = bin()
        .arg("run")
        .arg(&f)
        .args(["--no-write", "--set", "workload.kind=batched-bench", "--set", "workload.batch=4", "--trace"])
        .arg(dir.path().join("b.json"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("not batched-bench") && err.contains("kind = \"generate\""), "{err}");
}

#[test]
fn verbose_logs_go_to_stderr_and_leave_stdout_alone() {
    let f = scenario("geerling-2x-m3-ultra-qwen3-235b-a22b-exo-rdma.toml");
    let go = |flags: &[&str], rust_log: Option<&str>| {
        let mut c = bin();
        c.arg("run").arg(&f).args(["--json", "--no-write"]).args(flags).env_remove("RUST_LOG");
        if let Some(e) = rust_log {
            c.env("RUST_LOG", e);
        }
        let o = c.assert().success().get_output().clone();
        (o.stdout, String::from_utf8(o.stderr).unwrap())
    };
    let (quiet, err) = go(&[], None);
    assert_eq!(err, "", "no debug output unless asked");
    let debug_line = "DEBUG supernode::cli::run: run: `Qwen3";
    for (flags, rust_log) in
        [(&["-v"][..], None), (&["-vv"], None), (&[], Some("supernode=debug")), (&["-v"], Some("supernode::cli=debug"))]
    {
        let (out, err) = go(flags, rust_log);
        assert_eq!(out, quiet, "{flags:?} {rust_log:?}: stdout unchanged");
        assert!(err.contains(debug_line), "{flags:?} {rust_log:?}: {err}");
    }
    // RUST_LOG chooses over -v: another module's events only.
    let (_, err) = go(&["-v"], Some("supernode::calibrate=debug"));
    assert!(!err.contains("supernode::cli"), "{err}");
}

/// A profile that does not exist: exit 2 and a message naming it, for every command that takes one.
#[test]
fn bad_profile_is_an_input_error_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-profile.toml");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "this is = = not toml").unwrap();
    let run = scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml");
    let csv = crate::measurements_csv();
    let sweep = scenario("sweep-geerling.toml");
    let commands: Vec<Vec<std::ffi::OsString>> = vec![
        vec!["run".into(), run.clone().into(), "--no-write".into()],
        vec!["validate".into(), "--against".into(), csv.clone().into()],
        vec!["calibrate".into(), csv.into(), "-o".into(), dir.path().join("p.toml").into()],
        vec!["sweep".into(), sweep.into(), "--no-charts".into(), "--out".into(), dir.path().join("sw").into()],
        vec!["plan".into(), "--model".into(), "qwen3-235b-a22b".into(), "--budget-usd".into(), "20000".into()],
    ];
    for args in &commands {
        for (profile, needle) in [(&missing, "cannot read profile"), (&broken, "broken.toml")] {
            let out = bin().args(args).arg("--profile").arg(profile).assert().code(2).get_output().clone();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.starts_with("error: ") && err.contains(needle), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout without --json");
        }
    }
    assert!(!dir.path().join("p.toml").exists() && !dir.path().join("sw").exists(), "nothing written");
    // With --json, `run` prints the error object on stdout as well.
    let out = bin().arg("run").arg(&run).args(["--json", "--no-write", "--profile"]).arg(&missing).assert().code(2).get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["fits"], false);
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("cannot read profile") && msg.contains("no-such-profile.toml"), "{msg}");
}

#[test]
fn unwritable_output_is_an_io_failure() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let f = scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml");
    // --out below a regular file cannot be created: exit 1, the path named, no table.
    let out = bin().arg("run").arg(&f).arg("--out").arg(file.join("sub")).assert().code(1).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: cannot write ") && err.contains("a-file"), "{err}");
    assert!(out.stdout.is_empty());
    let out = bin().arg("run").arg(&f).args(["--no-write", "--trace"]).arg(file.join("t.json")).assert().code(1).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: cannot write the trace"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary files left");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    bin().args(["run"]).assert().code(2);
    bin().args(["sweep", "x.toml", "--jobs", "0"]).assert().code(2);
    let out = bin().arg("--help").assert().success().get_output().clone();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Exit codes: 0 ok, 1") && help.contains("3 `validate --max-mape` exceeded") && help.contains("RUST_LOG"),
        "{help}"
    );
    let out = bin().args(["catalog", "gpus"]).assert().code(2).get_output().clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: unknown catalog section `gpus` (use nodes, fabrics, models, quants or engines)\n"
    );
}

/// Issue 14 item 5: `--set` values are typed by the target key: a string key takes `26.3` as the
/// string "26.3" (it was read as a float and refused).
#[test]
fn set_string_key_takes_a_bare_number() {
    let f = scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    let get = |set: &str| -> serde_json::Value {
        let o = bin().arg("run").arg(&f).args(["--json", "--no-write", "--set", set]).assert().success().get_output().clone();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    assert_eq!(get("engine.macos=26.3")["decode_tokens_per_s"], get("engine.macos=\"26.3\"")["decode_tokens_per_s"]);
}

/// Issue 14 item 5: `run -` reads the scenario from standard input; relative paths in it resolve
/// against the current directory.
#[test]
fn run_reads_the_scenario_from_stdin() {
    let f = scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml");
    let text = std::fs::read_to_string(&f).unwrap();
    let from_file = bin().arg("run").arg(&f).args(["--json", "--no-write"]).assert().success().get_output().stdout.clone();
    let from_stdin = bin().args(["run", "-", "--json", "--no-write"]).write_stdin(text).assert().success().get_output().stdout.clone();
    assert_eq!(from_file, from_stdin);
    // hf_config relative to the current directory.
    let sc = "[cluster]\nnode = \"m3-ultra-80c-512gb\"\n[model]\nhf_config = \"tests/fixtures/user-model/config.json\"\nquant = \"q4\"\n[engine]\nname = \"mlx-lm\"\n";
    let o = bin().current_dir(root()).args(["run", "-", "--no-write"]).write_stdin(sc).assert().get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("cannot read") && !err.contains("config.json:"), "{err}");
    assert!(bin().args(["run", "--help"]).assert().success().get_output().stdout.windows(5).any(|w| w == b"stdin" || w == b"stand"));
}

/// Issue 14 item 5: result file names come from the effective scenario (with `--set`) and are
/// safe for any name (empty, emoji only, 300 characters).
#[test]
fn result_file_names_follow_set_and_are_safe() {
    let f = scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml");
    let out = tempfile::tempdir().unwrap();
    let run = |sets: &[&str]| {
        let mut c = bin();
        c.arg("run").arg(&f).arg("--out").arg(out.path());
        for s in sets {
            c.args(["--set", s]);
        }
        c.assert().success();
    };
    let names = || -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    run(&[]);
    run(&["workload.prompt_tokens=4096"]);
    assert_eq!(names().len(), 2, "the override writes its own file: {:?}", names());
    for name in ["", "🦀🚀", &"long name ".repeat(30)] {
        run(&[&format!("name=\"{name}\"")]);
    }
    let all = names();
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(all.iter().all(|n| !n.starts_with('.') && n.ends_with(".json") && n.len() < 200), "{all:?}");
}

/// Issue 14 items 5 and 3: completions and a man page generated from clap; exit codes in
/// `--help`; `--quiet` accepted everywhere.
#[test]
fn completions_man_exit_codes_and_quiet() {
    for shell in ["bash", "zsh", "fish"] {
        let o = bin().args(["completions", shell]).assert().success().get_output().stdout.clone();
        let t = String::from_utf8(o).unwrap();
        assert!(!t.is_empty() && t.contains("run"), "{shell}");
    }
    let man = String::from_utf8(bin().arg("man").assert().success().get_output().stdout.clone()).unwrap();
    assert!(man.contains(".TH") && man.contains("run"));
    let help = String::from_utf8(bin().arg("--help").assert().success().get_output().stdout.clone()).unwrap();
    assert!(["Exit codes: 0", "1 internal", "2 bad input", "3 `validate"].iter().all(|k| help.contains(k)), "{help}");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme.split("## Exit codes").nth(1).expect("README has an exit-code section");
    assert!(["`0`", "`1`", "`2`", "`3`"].iter().all(|k| section.contains(k)), "README's exit codes");
    for cmd in ["run", "validate", "sweep", "merge", "plot", "plan", "calibrate", "import", "catalog"] {
        bin().args([cmd, "--quiet", "--help"]).assert().success();
    }
    let f = scenario("geerling-1x-m3-ultra-qwen3-235b-a22b-exo.toml");
    let a = bin().arg("run").arg(&f).args(["--json", "--no-write"]).assert().success().get_output().stdout.clone();
    let b = bin().arg("--quiet").arg("run").arg(&f).args(["--json", "--no-write", "-q"]).assert().success().get_output().clone();
    assert_eq!(a, b.stdout, "--quiet changes nothing on stdout");
    assert!(b.stderr.is_empty());
}

/// Issue 14 item 5: `import` refuses a `--node` that contradicts the GPU name in the file (a GB10
/// run relabelled as an M3 Ultra) unless `--force`.
#[test]
fn import_refuses_a_node_that_contradicts_the_gpu() {
    let gb10 = root().join("tests/fixtures/llama-bench/gb10.json");
    let o = bin().args(["import", "--node", "m3-ultra-80c-512gb"]).arg(&gb10).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("NVIDIA GB10") && err.contains("--force") && err.contains("dgx-spark"), "{err}");
    let o = bin().args(["import", "--node", "m3-ultra-80c-512gb", "--force"]).arg(&gb10).assert().success().get_output().clone();
    assert!(String::from_utf8_lossy(&o.stdout).contains("m3-ultra-80c-512gb"));
    bin().args(["import", "--node", "dgx-spark"]).arg(&gb10).assert().success();
}

/// Issue 23 item 3: `--no-intervals` gives the same headlines without the interval keys (and
/// without the re-estimates behind them), for scripts.
#[test]
fn no_intervals_keeps_the_headlines_and_drops_the_interval_keys() {
    let json = |extra: &[&str]| -> serde_json::Value {
        let o = bin()
            .arg("run")
            .arg(scenario("geerling-2x-m3-ultra-deepseek-v3.1-exo-rdma.toml"))
            .args(["--json", "--no-write"])
            .args(extra)
            .assert()
            .success()
            .get_output()
            .clone();
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let (with, without) = (json(&[]), json(&["--no-intervals"]));
    assert!(with.get("decode_tokens_per_s_interval").is_some(), "{with}");
    let mut stripped = with.as_object().unwrap().clone();
    stripped.retain(|k, _| !k.ends_with("_interval"));
    assert_eq!(serde_json::Value::Object(stripped), without);
}
