//! The `batched-bench` workload: `llama-batched-bench` as it defines itself (B sequences in one
//! batch: random token ids since late September 2025, identical sequences of token id 0 before;
//! FACTS.md "How published benchmarks measure").

use assert_cmd::Command;
use supernode::catalog::catalog;
use supernode::engine::{EngineKind, EngineOptions, Parallelism, Plan, PlanInput, lower_step};
use supernode::estimate::estimate;
use supernode::hw::Topology;
use supernode::llm::{ModelSpec, OpClass};
use supernode::profile::Profile;
use supernode::scenario::ScenarioBuilder;

fn quiet_profile() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

/// One layer, 8 experts of which 2 per token: hand-sized MoE.
fn tiny_moe() -> ModelSpec {
    let cfg = serde_json::json!({"model_type":"qwen3_moe","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,
        "num_key_value_heads":2,"intermediate_size":128,"moe_intermediate_size":32,"num_experts":8,"num_experts_per_tok":2,
        "vocab_size":256});
    ModelSpec::from_hf_config("tiny-moe", "tiny-moe", &cfg).unwrap()
}

fn plan(model: &ModelSpec, profile: &Profile) -> Plan {
    let c = catalog();
    Plan::new(PlanInput {
        nodes: &[c.node("dgx-spark").unwrap().clone()],
        fabric: c.fabric("none").unwrap(),
        topology: Topology::None,
        model,
        quant: c.quant("bf16").unwrap(),
        options: &EngineOptions::december_2025(EngineKind::LlamaCpp, Parallelism::None),
        wired_limit_fraction: None,
        context: 4096,
        profile,
    })
    .unwrap()
}

#[test]
fn identical_sequences_read_the_experts_of_one_token_and_the_attention_of_every_sequence() {
    let mut p = quiet_profile();
    // Independent sequences under uniform routing (no popularity skew): the hand formula below.
    p.moe.expert_popularity_sigma = 0.0;
    let model = tiny_moe();
    let plan = plan(&model, &p);
    let cost = plan.cost(0);
    let layer = model.layer_ops(0);
    let experts = layer.iter().find(|o| o.class == OpClass::Expert).unwrap();
    let attention = layer.iter().find(|o| o.class == OpClass::Attention).unwrap();
    // The expert op: 8 sequences of one token, all routed as one, read what batch 1 reads (2
    // experts), and do 8x its FLOPs; routed on their own they touch 8 (1 - (6/8)^8) = 7.2.
    let one = cost.op_work(experts, 1, 0);
    let same = cost.op_work_routed(experts, 8, 0, 1);
    let independent = cost.op_work(experts, 8, 0);
    assert_eq!(same.bytes, one.bytes);
    assert_eq!(same.flops, 8.0 * one.flops);
    let per_expert = one.bytes / 2.0;
    assert!((independent.bytes / per_expert - 8.0 * (1.0 - 0.75f64.powi(8))).abs() < 1e-9);
    // A whole decode step of 8 sequences at context 100: with identical routing, the step's bytes
    // are batch 1's plus 7 more sequences' attention over their own cache and 7 more tokens'
    // elementwise traffic; independent routing adds the 5.2 extra experts on top.
    let rows = vec![(1u64, 100u64); 8];
    let mut low1 = lower_step(&plan, 1);
    let b1 = low1.work_rows(&plan, &[(1, 100)], 1)[0].bytes;
    let mut low = lower_step(&plan, 8);
    let indep = low.work_rows(&plan, &rows, 8)[0].bytes;
    low.set_routed_tokens(Some(1));
    let same_step = low.work_rows(&plan, &rows, 8)[0].bytes;
    let attn = cost.op_work(attention, 1, 100).bytes;
    let elementwise: f64 =
        layer.iter().chain(model.head_ops().iter()).filter(|o| o.class == OpClass::Elementwise).map(|o| cost.op_work(o, 1, 0).bytes).sum();
    assert!((same_step - (b1 + 7.0 * (attn + elementwise))).abs() <= 1e-6 * b1, "{same_step} vs {b1} + 7 x ({attn} + {elementwise})");
    assert!((indep - same_step - (independent.bytes - one.bytes)).abs() <= 1e-6 * b1);
}

fn bench(model: &str, quant: &str, batch: i64, same: bool) -> ScenarioBuilder {
    let mut b = ScenarioBuilder::new(format!("{model} batched-bench B={batch}"));
    b.nodes(&["dgx-spark".to_string()]).model(model).quant(quant).engine("llama-cpp").seed(1).tokens(512, 32);
    b.workload_kind("batched-bench");
    b.set("workload.batch", &batch.into()).unwrap();
    b.set("workload.same_tokens", &same.into()).unwrap();
    b
}

#[test]
fn a_dense_model_gives_the_same_answer_with_identical_or_independent_sequences() {
    let p = quiet_profile();
    let same = estimate(&bench("llama-3.2-3b", "q4_k_m", 8, true).build().unwrap(), &p).unwrap();
    let indep = estimate(&bench("llama-3.2-3b", "q4_k_m", 8, false).build().unwrap(), &p).unwrap();
    assert_eq!(same.decode_tokens_per_s, indep.decode_tokens_per_s);
    assert_eq!(same.prefill_tokens_per_s, indep.prefill_tokens_per_s);
    // A MoE model: identical sequences read fewer experts, so they decode faster.
    let same = estimate(&bench("gpt-oss-120b", "mxfp4", 8, true).build().unwrap(), &p).unwrap();
    let indep = estimate(&bench("gpt-oss-120b", "mxfp4", 8, false).build().unwrap(), &p).unwrap();
    assert!(same.decode_tokens_per_s > 1.5 * indep.decode_tokens_per_s, "{} vs {}", same.decode_tokens_per_s, indep.decode_tokens_per_s);
}

#[test]
fn batch_one_is_a_generate_run_and_batching_raises_the_aggregate() {
    let p = quiet_profile();
    let one = estimate(&bench("gpt-oss-120b", "mxfp4", 1, true).build().unwrap(), &p).unwrap();
    let mut g = ScenarioBuilder::new("generate");
    g.nodes(&["dgx-spark".to_string()]).model("gpt-oss-120b").quant("mxfp4").engine("llama-cpp").seed(1).tokens(512, 32);
    let gen_est = estimate(&g.build().unwrap(), &p).unwrap();
    assert_eq!(one.decode_tokens_per_s, gen_est.decode_tokens_per_s);
    assert_eq!(one.prefill_tokens_per_s, gen_est.prefill_tokens_per_s);
    let mut last = one.decode_tokens_per_s;
    for b in [2, 8, 32] {
        let e = estimate(&bench("gpt-oss-120b", "mxfp4", b, true).build().unwrap(), &p).unwrap();
        assert!(e.decode_tokens_per_s > last, "B={b}: {} <= {last}", e.decode_tokens_per_s);
        assert!(e.tpot_ms.mean >= one.tpot_ms.mean, "a sequence never steps faster in a batch");
        last = e.decode_tokens_per_s;
    }
}

#[test]
fn the_cli_runs_a_batched_bench_scenario_and_refuses_batch_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bb.toml");
    std::fs::write(
        &file,
        "name = \"bb\"\n[cluster]\nnode = \"dgx-spark\"\ncount = 1\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4\"\n[engine]\nname = \"llama-cpp\"\nprefill_chunk = 2048\n[workload]\nkind = \"batched-bench\"\nbatch = 8\nprompt_tokens = 512\ngenerate_tokens = 32\n",
    )
    .unwrap();
    let out = Command::cargo_bin("supernode").unwrap().args(["-q", "run", "--json", "--no-write"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["workload"], "batched-bench");
    assert!(v["decode_tokens_per_s"].as_f64().unwrap() > 0.0);
    let text = std::fs::read_to_string(&file).unwrap().replace("kind = \"batched-bench\"\n", "");
    std::fs::write(&file, text).unwrap();
    let out = Command::cargo_bin("supernode").unwrap().args(["-q", "run", "--no-write"]).arg(&file).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`workload.batch` applies to kind = \"batched-bench\" only"), "{err}");
}

/// `validate` reads a `llama-batched-bench` row by the tool's version: random token ids from
/// late September 2025 (`get_token_rand`; xllamacpp 0.2.2 of 2025-09-29 vendors it, 0.2.1 of
/// 2025-09-13 does not), so a row dated after reads independent sequences and is predicted on
/// CUDA too (the GB10 rows of build 6918, 2025-11-02); a row dated before reads identical
/// sequences of id 0; an undated row is read as the tool is now, and says so.
#[test]
fn batched_bench_rows_are_read_by_the_date_of_the_tool_that_measured_them() {
    use supernode::calibrate::Dataset;
    use supernode::calibrate::validate::{read_csv, row_scenario};
    let text = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
         new,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,8,aggregate_decode_tokens_per_s,146,tok/s,a bench file (system info dated 2025-11-02),llama-batched-bench -ub 2048 -npp 512 -ntg 32 -npl 8\n\
         old,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,8,aggregate_decode_tokens_per_s,146,tok/s,a bench file (2025-08-01),llama-batched-bench -ub 2048 -npp 512 -ntg 32 -npl 8\n\
         undated,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,8,aggregate_decode_tokens_per_s,146,tok/s,a bench file,llama-batched-bench -ub 2048 -npp 512 -ntg 32 -npl 8\n";
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "bb.csv", text);
    let rows = read_csv(&path).unwrap();
    for (id, reading) in [("new", "from late September 2025"), ("old", "before 2025-09-13"), ("undated", "of unstated date")] {
        let row = rows.iter().find(|r| r.id == id).unwrap();
        let (_, assumptions) = row_scenario(row, &rows).unwrap();
        assert!(assumptions.iter().any(|a| a.starts_with(&format!("llama-batched-bench {reading}"))), "{id}: {assumptions:?}");
    }
    let p = quiet_profile();
    let mut data = Dataset::default();
    data.add_csv(&path, &p).unwrap();
    let predicted = data.predict(&p).unwrap();
    let run = |same: bool| {
        let mut b = bench("gpt-oss-120b", "mxfp4", 8, same);
        b.set("engine.prefill_chunk", &2048i64.into()).unwrap();
        estimate(&b.build().unwrap(), &p).unwrap().decode_tokens_per_s
    };
    let (independent, identical) = (run(false), run(true));
    assert_eq!(predicted, vec![independent, identical, independent]);
    assert!(identical > 1.5 * independent, "{identical} vs {independent}");
    // A scenario that does not say is the tool as it is now: independent sequences.
    let mut b = bench("gpt-oss-120b", "mxfp4", 8, false);
    b.set("engine.prefill_chunk", &2048i64.into()).unwrap();
    let text = b.to_toml().replace("same_tokens = false\n", "");
    assert!(!text.contains("same_tokens"), "{text}");
    let source = supernode::scenario::Source { path: "bb.toml".into(), dir: std::path::PathBuf::new(), text };
    let sc = supernode::scenario::parse(source).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(estimate(&sc, &p).unwrap().decode_tokens_per_s, independent);
}

/// `validate` reads every column `llama-batched-bench` prints for a batch: S_PP (B x PP / T_PP,
/// the B prompts prefilled together in `-ub` micro-batches) and S_TG written as a decode rate, as
/// the batched run predicts them, not as one sequence's prefill (which would not grow with B).
#[test]
fn batched_bench_prompt_and_decode_columns_are_read_as_the_batch_ran() {
    use supernode::calibrate::Dataset;
    let text = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
         pp1,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,1,prefill_tokens_per_s,700,tok/s,a bench file (2025-11-02),llama-batched-bench -ub 2048 -npp 512 -ntg 32 S_PP\n\
         pp4,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,4,prefill_tokens_per_s,1900,tok/s,a bench file (2025-11-02),llama-batched-bench -ub 2048 -npp 512 -ntg 32 S_PP\n\
         tg4,dgx-spark,1,128gb,gpt-oss-120b,mxfp4,llama-cpp,none,none,512,4,decode_tokens_per_s,110,tok/s,a bench file (2025-11-02),llama-batched-bench -ub 2048 -npp 512 S_TG\n";
    let dir = tempfile::tempdir().unwrap();
    let path = crate::write_text(dir.path(), "bb.csv", text);
    let p = quiet_profile();
    let mut data = Dataset::default();
    data.add_csv(&path, &p).unwrap();
    let predicted = data.predict(&p).unwrap();
    let run = |batch: i64| {
        let mut b = bench("gpt-oss-120b", "mxfp4", batch, false);
        b.set("engine.prefill_chunk", &2048i64.into()).unwrap();
        estimate(&b.build().unwrap(), &p).unwrap()
    };
    let (one, four) = (run(1), run(4));
    assert_eq!(predicted, vec![one.prefill_tokens_per_s, four.prefill_tokens_per_s, four.decode_tokens_per_s]);
    // A shared prompt (-pps) is another workload: refused, with why.
    let shared = text.replace("S_PP\n", "S_PP -pps\n");
    let row = supernode::calibrate::validate::parse_csv(&shared, "pps.csv").unwrap();
    let err = supernode::calibrate::validate::row_scenario(&row[1], &row).unwrap_err();
    assert!(err.contains("shared prompt"), "{err}");
    // Four 512-token prompts share one 2048-token micro-batch: each expert's MMQ tile is fuller.
    assert!(four.prefill_tokens_per_s > 1.5 * one.prefill_tokens_per_s, "{} vs {}", four.prefill_tokens_per_s, one.prefill_tokens_per_s);
}
