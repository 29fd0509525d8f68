//! Plain MLX distributed: mlx-lm over several Macs under `mlx.launch` (tensor parallel by
//! `shard`, pipeline by `PipelineMixin`). The same kernels and collectives as exo without exo's
//! runner (FACTS.md, exo issue 2070: plain MLX tensor parallel ~98 tok/s against exo's ~48 on
//! one M4 Max + M5 Max pair).

use std::path::PathBuf;

use supernode::calibrate::validate::{parse_csv, validate};
use supernode::estimate::{Estimate, estimate};
use supernode::profile::Profile;
use supernode::scenario::{Scenario, Source, parse};

fn quiet() -> Profile {
    let mut p = Profile::default_profile();
    p.misc.jitter_cv = 0.0;
    p
}

fn sc(text: &str) -> Result<Scenario, String> {
    parse(Source { path: "mlx-distributed.toml".into(), dir: PathBuf::new(), text: text.into() }).map_err(|e| format!("{e:?}"))
}

/// DeepSeek V3.1 4-bit on `count` M3 Ultras 512 GB over `fabric` under `engine` with `parallelism`.
fn ultras(count: usize, engine: &str, parallelism: &str, fabric: &str) -> Scenario {
    let wiring = if count > 1 { format!("fabric = \"{fabric}\"\ntopology = \"full-mesh\"\n") } else { String::new() };
    sc(&format!(
        "[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = {count}\n{wiring}[model]\nname = \"deepseek-v3.1\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"{engine}\"\nparallelism = \"{parallelism}\"\n[workload]\nprompt_tokens = 128\ngenerate_tokens = 16\n"
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn run(s: &Scenario, p: &Profile) -> Estimate {
    estimate(s, p).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn plain_mlx_distributed_is_exo_without_its_runner() {
    let p = quiet();
    // exo's own host work per step (the runner loop, FACTS.md: PR 1777, ~3.3 ms) is all that
    // tells the two apart: without it both decode the same split to the nanosecond.
    let mut bare = p.clone();
    bare.chips.values_mut().for_each(|c| {
        c.engines.remove("exo");
    });
    for (parallelism, fabric) in [("tensor", "tb5-rdma"), ("tensor", "tb5-tcp"), ("pipeline", "tb5-rdma")] {
        let mlx = run(&ultras(2, "mlx-lm", parallelism, fabric), &bare);
        let exo = run(&ultras(2, "exo", parallelism, fabric), &bare);
        assert_eq!(mlx.decode_tokens_per_s, exo.decode_tokens_per_s, "{parallelism} over {fabric}");
        // With exo's runner, plain MLX is the faster.
        let exo_runner = run(&ultras(2, "exo", parallelism, fabric), &p);
        let mlx_runner = run(&ultras(2, "mlx-lm", parallelism, fabric), &p);
        assert!(mlx_runner.decode_tokens_per_s > exo_runner.decode_tokens_per_s, "{parallelism} over {fabric}");
    }
    // The cluster default is tensor parallel; a batch-1 pipeline never beats one node, and
    // two tensor-parallel nodes never beat twice one.
    let one = run(&ultras(1, "mlx-lm", "none", ""), &p).decode_tokens_per_s;
    let text = "[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 2\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"deepseek-v3.1\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"mlx-lm\"\n";
    let default = sc(text).unwrap();
    assert_eq!(default.engine.parallelism, supernode::engine::Parallelism::Tensor);
    let tensor = run(&ultras(2, "mlx-lm", "tensor", "tb5-rdma"), &p).decode_tokens_per_s;
    let pipeline = run(&ultras(2, "mlx-lm", "pipeline", "tb5-rdma"), &p).decode_tokens_per_s;
    assert!(pipeline <= one, "pipeline {pipeline} > one node {one}");
    assert!(tensor <= 2.0 * one, "tensor {tensor} > 2 x one node {one}");
}

#[test]
fn mlx_distributed_refuses_expert_parallel_and_mixes_only_macs() {
    let e = sc("[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 2\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"deepseek-v3.1\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"mlx-lm\"\nparallelism = \"expert\"\n").unwrap_err();
    assert!(e.contains("mlx-lm") && e.contains("expert"), "{e}");
    // An M4 Max with an M5 Max (exo issue 2070's pair) runs; a Mac with a Spark does not.
    let pair = "[cluster]\nnodes = [\"m4-max-40c-128gb\", \"macbook-pro-m5-max-40c-128gb\"]\nfabric = \"tb5-rdma\"\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4\"\n[engine]\nname = \"mlx-lm\"\n";
    let est = run(&sc(pair).unwrap(), &quiet());
    assert!(est.decode_tokens_per_s > 0.0);
    let mixed = "[cluster]\nnodes = [\"m4-max-40c-128gb\", \"dgx-spark\"]\nfabric = \"10gbe\"\n[model]\nname = \"gpt-oss-120b\"\nquant = \"mxfp4\"\n[engine]\nname = \"mlx-lm\"\n";
    assert!(sc(mixed).is_err());
}

#[test]
fn validate_reads_an_mlx_distributed_row_as_mlx_lm_over_its_nodes() {
    let csv = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
               t1,Mac Studio M3 Ultra,2,2x512gb,deepseek-v3.1,mlx-4bit,MLX distributed (jaccl),TP=2,TB5 RDMA,,1,decode_tokens_per_s,25,tok/s,test,\n";
    let rows = parse_csv(csv, "t.csv").unwrap();
    let report = validate(&rows, &quiet());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let direct = run(&ultras(2, "mlx-lm", "tensor", "tb5-rdma"), &quiet()).decode_tokens_per_s;
    let predicted = report.rows[0].predicted;
    assert!((predicted / direct - 1.0).abs() < 0.02, "{predicted} vs {direct}");
}

#[test]
fn an_mlx_lm_pipeline_splits_the_layers_evenly_where_exo_follows_memory() {
    let p = quiet();
    let pair = |engine: &str| {
        sc(&format!(
            "[cluster]\nnodes = [\"m3-ultra-80c-512gb\", \"m3-ultra-80c-256gb\"]\nfabric = \"tb5-rdma\"\n[model]\nname = \"qwen3-235b-a22b\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"{engine}\"\nparallelism = \"pipeline\"\n"
        ))
        .unwrap()
    };
    let ranges = |engine: &str| {
        let plan = pair(engine).plan(200, &p).unwrap_or_else(|e| panic!("{e}"));
        plan.shares.iter().map(|s| (s.first_layer, s.end_layer)).collect::<Vec<_>>()
    };
    // Qwen3-235B's 94 layers: 47 + 47 under mlx-lm (`PipelineMixin`), 63 + 31 under exo (2:1 memory).
    assert_eq!(ranges("mlx-lm"), vec![(0, 47), (47, 94)]);
    assert_eq!(ranges("exo"), vec![(0, 63), (63, 94)]);
}

#[test]
fn thunderbolt_without_a_backend_is_tcp_under_mlx_launch_and_rdma_under_exo() {
    // `mlx.launch` runs the TCP ring unless the hostfile names JACCL; exo runs JACCL where the
    // cables allow (mlx 0.32.4 `_distributed_utils/launch.py`; FACTS.md, exo).
    let csv = "id,system,nodes,node_mix,model,quant,engine,parallelism,fabric,prompt_tokens,concurrency,metric,value,unit,source,notes\n\
               m,Mac Studio M3 Ultra,2,2x512gb,deepseek-v3.1,mlx-4bit,mlx-lm,TP=2,Thunderbolt 5,,1,decode_tokens_per_s,25,tok/s,test,\n\
               e,Mac Studio M3 Ultra,2,2x512gb,deepseek-v3.1,mlx-4bit,exo,TP=2,Thunderbolt 5,,1,decode_tokens_per_s,25,tok/s,test,\n";
    let report = validate(&parse_csv(csv, "t.csv").unwrap(), &quiet());
    let said = |id: &str, what: &str| report.rows.iter().find(|r| r.id == id).unwrap().assumptions.iter().any(|a| a.contains(what));
    assert!(said("m", "tb5-tcp"), "{:?}", report.rows[0].assumptions);
    assert!(said("e", "tb5-rdma"), "{:?}", report.rows[1].assumptions);
}

#[test]
fn mlx_lm_splits_only_the_models_its_code_can_split() {
    // mlx-lm 0.32.2 `sharded_load`: a tensor group needs the model file's `shard`, a pipeline
    // group its `PipelineMixin`. Qwen3-Next pipelines only; gpt-oss shards only; Gemma 3 neither.
    let two = |model: &str, quant: &str, parallelism: &str| {
        sc(&format!(
            "[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 2\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"{model}\"\nquant = \"{quant}\"\n[engine]\nname = \"mlx-lm\"\nparallelism = \"{parallelism}\"\n"
        ))
    };
    let e = two("qwen3-coder-next", "mlx-4bit", "tensor").unwrap_err();
    assert!(e.contains("qwen3_next") && e.contains("pipelines but does not shard"), "{e}");
    assert!(two("qwen3-coder-next", "mlx-4bit", "pipeline").is_ok());
    let e = two("gpt-oss-120b", "mxfp4", "pipeline").unwrap_err();
    assert!(e.contains("shards but does not pipeline"), "{e}");
    assert!(two("gpt-oss-120b", "mxfp4", "tensor").is_ok());
    let e = two("gemma-3-27b", "mlx-4bit", "tensor").unwrap_err();
    assert!(e.contains("neither shards nor pipelines"), "{e}");
    // exo shards with its own code: not bound by mlx-lm's files.
    let exo = sc(
        "[cluster]\nnode = \"m3-ultra-80c-512gb\"\ncount = 2\nfabric = \"tb5-rdma\"\ntopology = \"full-mesh\"\n[model]\nname = \"gemma-3-27b\"\nquant = \"mlx-4bit\"\n[engine]\nname = \"exo\"\nparallelism = \"tensor\"\n",
    );
    assert!(exo.is_ok(), "{exo:?}");
}
