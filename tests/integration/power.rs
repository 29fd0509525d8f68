//! Power by phase and HPL as the benchmark runs it (issue 11 items 3 and 4).

use supernode::estimate::hpl::{HplGrid, HplMachine, default_grid, default_n, grid, hpl_flops};
use supernode::estimate::{estimate, simulate_generate};
use supernode::profile::Profile;
use supernode::scenario::load;

use crate::{bin, scenario, write_text};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

/// A 2x2 grid, one rank per core on two 2-core nodes, N = 1024, NB = 256, 1 GFLOP/s per rank,
/// 1 GB/s NIC, 10 us latency: step 0 worked by hand.
#[test]
fn hpl_step_arithmetic_on_a_2x2_grid() {
    let m = HplMachine { rank_flops: vec![1e9, 1e9], nic_bytes_per_s: 1e9, latency_s: 1e-5 };
    // Rows of the grid on one node each (ranks 0,1 on node 0; 2,3 on node 1).
    let g = HplGrid { n: 1024, nb: 256, p: 2, q: 2, node_of_rank: vec![0, 0, 1, 1] };
    let s = g.step(0, &m, 2);
    // Trailing order 1024 - 256 = 768: 2 x 768^2 x 256 FLOPs over 4 ranks at 1 GFLOP/s.
    assert!(close(s.update, 2.0 * 768.0 * 768.0 * 256.0 / 4e9), "{s:?}");
    // The panel's row broadcasts stay inside a node: no NIC time, no hop.
    assert_eq!(s.broadcast, 0.0);
    // Swaps: per column the U block is 256 x 768/2 doubles = 786,432 B; both hops of the
    // column's ring cross nodes, each carrying 2 x (P-1)/P = 1 block; two columns put 2 blocks
    // on each node's NIC (1,572,864 B at 1 GB/s) plus 2 x 2 hop latencies.
    assert!(close(s.swaps, 1_572_864.0 / 1e9 + 4.0 * 1e-5), "{s:?}");
    // Panel: 1024 x 256^2 FLOPs over P = 2 ranks, plus 256 pivot searches of one cross-node
    // round (there and back) each.
    assert!(close(s.panel, 1024.0 * 65536.0 / 2e9 + 256.0 * 2.0 * 1e-5), "{s:?}");
    assert!(close(s.total(), s.update + s.swaps + s.panel));

    // Columns on one node each (ranks interleaved): now the broadcast crosses, the swaps do not.
    let g = HplGrid { node_of_rank: vec![0, 1, 0, 1], ..g };
    let s = g.step(0, &m, 2);
    // Each process row sends its 512 x 256 doubles (1,048,576 B) once across; node 0 sends both.
    assert!(close(s.broadcast, 2.0 * 1_048_576.0 / 1e9 + 1e-5), "{s:?}");
    assert_eq!(s.swaps, 0.0);
    assert!(close(s.panel, 1024.0 * 65536.0 / 2e9), "{s:?}");
    // Look-ahead: the broadcast hides under the update.
    assert!(close(s.total(), s.update.max(s.broadcast) + s.panel));
}

#[test]
fn hpl_defaults_follow_the_top500_benchmark_convention() {
    // N ~ 0.9 sqrt(0.75 x RAM / 8 B), a multiple of NB = 256.
    let ram = 512.0 * (1u64 << 30) as f64;
    let n = default_n(ram, 256);
    assert_eq!(n % 256, 0);
    assert!((n as f64 - 0.9 * (0.75 * ram / 8.0).sqrt()).abs() < 256.0, "{n}");
    assert_eq!(default_grid(64), (8, 8));
    assert_eq!(default_grid(128), (8, 16));
    assert_eq!(default_grid(40), (5, 8));
    let c = supernode::catalog::catalog();
    let m3 = c.node("m3-ultra-80c-512gb").unwrap().clone();
    let g = grid(&[m3.clone(), m3], 0, 0, 0, 0);
    assert_eq!((g.p, g.q, g.nb, g.node_of_rank.len()), (8, 8, 256, 64));
    assert!(hpl_flops(1000) > 2.0 / 3.0 * 1e9);
}

fn hpl_scenario(dir: &std::path::Path, count: u32, fabric: &str, topology: &str) -> std::path::PathBuf {
    // No [model] and no [engine]: HPL needs neither.
    let link = if count > 1 { format!("fabric = \"{fabric}\"\ntopology = \"{topology}\"\n") } else { String::new() };
    let text = format!("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = {count}\n{link}\n[workload]\nkind = \"hpl\"\n");
    write_text(dir, &format!("hpl-{count}-{fabric}.toml"), &text)
}

#[test]
fn hpl_single_node_reproduces_its_inputs_and_slow_links_cost_rate_not_polling_power() {
    let dir = tempfile::tempdir().unwrap();
    let p = Profile::default_profile();
    let one = estimate(&load(&hpl_scenario(dir.path(), 1, "none", "none"), &[]).unwrap(), &p).unwrap();
    // The rank rate is set from the node's measured HPL, so one node gives it back, at its power.
    assert!((one.hpl_gflops.unwrap() - 1278.6).abs() < 0.01, "{:?}", one.hpl_gflops);
    assert!((one.cluster_power_w - 213.0).abs() < 0.01, "{}", one.cluster_power_w);
    let rate = |f: &str| {
        let e = estimate(&load(&hpl_scenario(dir.path(), 2, f, "switch"), &[]).unwrap(), &p).unwrap();
        (e.hpl_gflops.unwrap(), e.cluster_power_w)
    };
    let (slow, slow_w) = rate("eth-2.5g");
    let (fast, fast_w) = rate("eth-10g");
    assert!(slow < fast && fast < 2.0 * 1278.6, "{slow} {fast}");
    // Ranks busy-poll while they wait: power falls only by the FLOPs not done, never to idle.
    let cores_w = 2.0 * (9.2 + 32.0 * p.chip("m3-ultra").unwrap().cpu_core_w);
    assert!(slow_w < fast_w && slow_w > cores_w, "{slow_w} {fast_w} {cores_w}");
}

#[test]
fn hpl_scenario_without_a_model_runs_from_the_cli() {
    let o = bin().arg("run").arg(scenario("m3-ultra-hpl-2x.toml")).args(["--no-write", "--json"]).assert().success().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["hpl_problem"]["p"], 8);
    assert_eq!(v["hpl_problem"]["nb"], 256);
    assert!(v["hpl_gflops"].as_f64().unwrap() > 2000.0);
}

#[test]
fn power_phases_follow_work_rates() {
    let p = Profile::default_profile();
    let sc = load(&scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml"), &[]).unwrap();
    let e = estimate(&sc, &p).unwrap();
    // Energy per token comes from the decode average; the peak is the larger phase.
    assert!((e.energy_j_per_token - e.cluster_power_w / e.decode_tokens_per_s).abs() < 1e-4 * e.energy_j_per_token);
    assert_eq!(e.peak_power_w, e.prefill_power_w.max(e.cluster_power_w));
    assert_eq!(e.node_peak_power_w[0], e.node_prefill_power_w[0].max(e.node_power_w[0]));
    // The decode phase's power is idle + bytes x pJ/B + issued FLOPs x pJ/FLOP (llama.cpp's
    // host thread sleeps in the Metal wait: no busy core here).
    let plan = sc.plan(sc.workload.prompt_tokens + sc.workload.generate_tokens, &p).unwrap();
    let run = simulate_generate(&plan, sc.workload.prompt_tokens, sc.workload.generate_tokens, sc.seed);
    let chip = p.chip("m3-ultra").unwrap();
    let secs = run.decode_ns as f64 / 1e9;
    let w = run.decode_work[0];
    let want = 9.2 + chip.pj_per_byte * 1e-12 * w.bytes / secs + chip.pj_per_flop * 1e-12 * w.issued_flops / secs;
    assert!((e.node_power_w[0] - want).abs() < 1e-3, "{} vs {want}", e.node_power_w[0]);
    // Work counts: decode reads the active weights once per token (DeepSeek V3.1: 37B active
    // parameters at ~4.5 bits, ~21 GB).
    let per_token = w.bytes / sc.workload.generate_tokens as f64;
    assert!((1.5e10..3e10).contains(&per_token) && w.issued_flops >= w.flops, "{per_token}");
}

#[test]
fn tensor_parallel_decode_draws_less_per_node_than_one_node() {
    // Each node streams 1/N of the weights and its GPU waits on the collectives: fewer bytes per
    // second per node, so less power per node than the same model's decode on one node.
    let p = Profile::default_profile();
    let one = estimate(&load(&scenario("geerling-1x-m3-ultra-deepseek-v3.1-exo.toml"), &[]).unwrap(), &p).unwrap();
    let four = estimate(&load(&scenario("geerling-4x-m3-ultra-deepseek-v3.1-exo-rdma.toml"), &[]).unwrap(), &p).unwrap();
    assert!(four.node_power_w.iter().all(|w| *w < 0.7 * one.node_power_w[0]), "{:?} vs {:?}", four.node_power_w, one.node_power_w);
}

#[test]
fn validate_maps_power_phases_and_predicts_cluster_hpl_rows() {
    let dir = tempfile::tempdir().unwrap();
    let head = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n";
    let rows = "\
pp,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,4096,,prefill_tokens_per_s,156.67,tok/s,bench X (pp4096),
peak,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,,,node_power_w,260,W,bench X (power),peak
dec,mac-studio-m3-ultra,1,512gb,llama-3.3-70b,q4_k_m,llama-cpp,none,none,4096,,node_power_w_decode,243,W,other,decode average
hpl2,mac-studio-m3-ultra,2,512gb,,fp64,hpl,,eth-10g,,,hpl_gflops,2300,Gflops,made up,cluster HPL
hpl1,mac-studio-m3-ultra,1,512gb,,fp64,hpl,,none,,,hpl_gflops,1278.6,Gflops,made up,single node
";
    let csv = write_text(dir.path(), "rows.csv", &format!("{head}{rows}"));
    let o = bin().arg("validate").arg("--against").arg(&csv).arg("--json").assert().get_output().clone();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let get = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} not predicted: {v}"));
    // The peak row ran its benchmark's longest prompt; the decode row is the decode average.
    assert!(get("peak")["assumptions"].to_string().contains("prompt 4096"));
    assert!(get("peak")["predicted"].as_f64().unwrap() >= get("dec")["predicted"].as_f64().unwrap());
    assert!(get("hpl2")["predicted"].as_f64().unwrap() > 2000.0);
    // Single-node HPL stays an input.
    assert!(v["skipped"].to_string().contains("hpl1"));
}

#[test]
fn a_dense_decode_draws_less_than_its_prefill_on_every_chip() {
    // Every phase-labelled reading says so (FACTS-2026 section D: M4 Max llama.cpp GPU ~37 W in
    // decode vs 58-60 W in prefill; M1 Max 6.2-6.7 W vs 17.4-18.1 W): a memory-bound decode's
    // ALUs stall on DRAM, a compute-bound prefill keeps them issuing. It failed while the
    // per-byte energy came from benchmark peaks that the prompt phase sets (454 pJ/B: decode
    // 259 W vs prefill 245 W for Llama 3.3 70B on an M3 Ultra; the GB10 and AI Max+ per-byte
    // energies came from peaks the same way until they were set from phase-labelled readings).
    let p = Profile::default_profile();
    for node in ["m4-max-40c-128gb", "m3-ultra-80c-512gb", "m2-ultra-76c-192gb", "dgx-spark", "framework-desktop-ai-max-395"] {
        let set = [
            format!("cluster.nodes=[\"{node}\"]"),
            "model.quant=q4_k_m".to_string(),
            "engine.name=llama-cpp".to_string(),
            "workload.prompt_tokens=512".to_string(),
            "model.name=llama-3.3-70b".to_string(),
        ];
        let sc = load(&scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml"), &set).unwrap();
        let e = estimate(&sc, &p).unwrap();
        let (decode, prefill) = (e.node_power_w[0], e.node_prefill_power_w[0]);
        assert!(decode < prefill, "{node}: decode {decode} W vs prefill {prefill} W");
    }
}

/// FACTS-2026 section D: LLM inference on a DGX Spark draws 60-90 W at the wall, and its ~156 W
/// readings are benchmark peaks (prompt phase). A memory-bound decode lands in that range on
/// models large and small; the per-byte energy was set from the range's middle (75 W), so this
/// pins that the whole decode power (idle, cores, FLOPs, bytes) stays inside it, not the value.
#[test]
fn a_dgx_spark_decode_draws_within_the_published_inference_range() {
    let p = Profile::default_profile();
    for model in ["llama-3.3-70b", "llama-3.2-3b", "gpt-oss-120b"] {
        let quant = if model == "gpt-oss-120b" { "mxfp4" } else { "q4_k_m" };
        let set = [
            "cluster.nodes=[\"dgx-spark\"]".to_string(),
            format!("model.quant={quant}"),
            "engine.name=llama-cpp".to_string(),
            format!("model.name={model}"),
        ];
        let sc = load(&scenario("geerling-1x-m3-ultra-deepseek-v3.1-llama-cpp.toml"), &set).unwrap();
        let e = estimate(&sc, &p).unwrap();
        let w = e.node_power_w[0];
        assert!((60.0..=90.0).contains(&w), "{model}: decode {w:.1} W outside 60-90 W");
    }
}

#[test]
fn a_serving_run_reports_its_own_power_for_prefill_not_the_idle_draw() {
    // Prefill chunks interleave with decode steps in one serving run: there is no separate
    // prefill phase whose power could be the idle draw.
    let text = "[cluster]\nnode = \"dgx-spark\"\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4-hf\"\n[engine]\nname = \"vllm\"\n[workload]\nkind = \"serve\"\narrival = \"closed\"\nconcurrency = 8\nthink_s = 0\nprompt_tokens = 1024\ngenerate_tokens = 128\nrequests = 16\n".to_string();
    let sc =
        supernode::scenario::parse(supernode::scenario::Source { path: "a.toml".into(), dir: std::path::PathBuf::new(), text }).unwrap();
    let e = supernode::estimate::estimate(&sc, &supernode::profile::Profile::default_profile()).unwrap();
    assert!(e.serve.is_some());
    assert!(e.cluster_power_w > 31.5 + 10.0, "{}", e.cluster_power_w);
    assert_eq!(e.prefill_power_w, e.cluster_power_w);
    assert_eq!(e.peak_power_w, e.cluster_power_w);
    let text = supernode::report::run_table(&e);
    assert!(text.contains("prefill and decode interleave") && text.contains("W over the run"), "{text}");
}
