//! exo 1.0 (MLX; tensor or pipeline parallel over JACCL or the TCP ring).

use crate::hw::{Backend, NodeSpec, Os};
use crate::sim::TaskId;

use super::super::lower::lower_segments;
use super::super::lowered::Lowered;
use super::super::network::Builder;
use super::super::options::{EngineKind, EngineOptions, Parallelism, Runtime};
use super::super::plan::Plan;
use super::super::split::SplitError;
use super::{CableLoss, EngineRuntime, MLX_DEFAULTS, RuntimeFault, ServingLoop, VersionDefaults};

/// exo's most active requests by default (`EXO_MAX_CONCURRENT_REQUESTS`, exo >= 1.0.69).
pub const EXO_MAX_CONCURRENT_REQUESTS: u64 = 8;

/// exo: an MLX instance over one or more Macs.
pub struct Exo;

impl EngineRuntime for Exo {
    fn kind(&self) -> EngineKind {
        EngineKind::Exo
    }

    fn names(&self) -> &'static [&'static str] {
        &["exo"]
    }

    fn id(&self) -> &'static str {
        "exo"
    }

    fn label(&self) -> &'static str {
        "exo"
    }

    /// `EXO_MAX_CONCURRENT_REQUESTS=N`, 8 by default ([`EXO_MAX_CONCURRENT_REQUESTS`]).
    fn concurrency_flags(&self) -> (&'static [&'static str], Option<u64>) {
        (&["EXO_MAX_CONCURRENT_REQUESTS"], Some(EXO_MAX_CONCURRENT_REQUESTS))
    }

    fn kernels(&self) -> Runtime {
        Runtime::Mlx
    }

    /// Its own per-step host work beside MLX's kernels (the runner's task-id all_gather with
    /// `.tolist()`, cancellation checks, detokenising in Python; FACTS.md: PR 1777 logs ~3.3 ms
    /// per step): `[chips.<chip>.engines.exo]`.
    fn host_key(&self) -> Option<&'static str> {
        Some("exo")
    }

    fn version_defaults(&self) -> VersionDefaults {
        MLX_DEFAULTS
    }

    /// Tensor parallel on a cluster, as exo's instance placement picks by default.
    fn default_parallelism(&self, nodes: usize) -> Parallelism {
        if nodes > 1 { Parallelism::Tensor } else { Parallelism::None }
    }

    /// Tensor or pipeline; no expert parallelism (FACTS.md: each rank holds 1/N of every
    /// expert).
    fn check_split(&self, engine: &str, parallelism: Parallelism) -> Result<(), SplitError> {
        match parallelism {
            Parallelism::Expert => Err(SplitError::NoExpertParallel { engine: engine.to_string() }),
            Parallelism::TensorPipeline { .. } => Err(SplitError::NoTensorPipeline { engine: engine.to_string() }),
            Parallelism::Data { .. } | Parallelism::DataExpert { .. } => Err(SplitError::NoDataAttention { engine: engine.to_string() }),
            Parallelism::Tensor | Parallelism::Pipeline | Parallelism::None => Ok(()),
        }
    }

    /// exo (MLX) mixes chips only when every node is a Mac (Metal; e.g. an M3 Ultra with an M4
    /// Max, exo issue 2070's M4 Max + M5 Max pair).
    fn mixes_chips(&self, nodes: &[&NodeSpec]) -> bool {
        nodes.iter().all(|n| n.os == Os::Macos)
    }

    fn lower(&self, plan: &Plan, tokens: u64) -> Lowered {
        match plan.options.parallelism {
            Parallelism::None | Parallelism::Tensor | Parallelism::Expert => lower_segments(plan, tokens),
            Parallelism::Pipeline => lower_pipeline(plan, tokens),
            Parallelism::TensorPipeline { .. } | Parallelism::Data { .. } | Parallelism::DataExpert { .. } => {
                unreachable!("exo refuses tensor+pipeline and data-parallel attention (check_split)")
            }
        }
    }

    /// exo >= 1.0.69 (snapshot b5375f8c, continuous batching since PR 1642): up to
    /// `EXO_MAX_CONCURRENT_REQUESTS` = 8 active requests.
    fn serving_loop(&self, max_batch: Option<u64>, _options: &EngineOptions) -> ServingLoop {
        ServingLoop::Exo { max_batch: max_batch.unwrap_or(EXO_MAX_CONCURRENT_REQUESTS) }
    }

    /// exo tensor parallel reloads every node; a pipeline only the crashed node's layers.
    fn crash_reloads_every_node(&self, parallelism: Parallelism, _node: usize) -> bool {
        parallelism == Parallelism::Tensor
    }

    fn crash_reaction(&self, parallelism: Parallelism, _node: usize) -> &'static str {
        match parallelism {
            Parallelism::Tensor
            | Parallelism::Expert
            | Parallelism::TensorPipeline { .. }
            | Parallelism::Data { .. }
            | Parallelism::DataExpert { .. } => "exo stops the instance and reloads every node",
            Parallelism::Pipeline | Parallelism::None => "the pipeline stalls until the node has reloaded its layers",
        }
    }

    /// Tensor parallel: the collective fails and exo's placement (exo 1.0 `place_instance`:
    /// instances go on nodes connected to each other) puts the instance on the nodes still
    /// cabled to each other, reloading every shard. A pipeline is placed over the LAN instead:
    /// exo issue 2295 (FACTS.md, fabrics): a 4-node pipeline "fell back to Wi-Fi", 8.7 tok/s
    /// against 25.4 over JACCL.
    fn cable_loss(&self, parallelism: Parallelism) -> CableLoss {
        match parallelism {
            Parallelism::Pipeline => CableLoss::FallBack("exo places the pipeline again over the LAN (exo issue 2295)"),
            Parallelism::Tensor
            | Parallelism::Expert
            | Parallelism::TensorPipeline { .. }
            | Parallelism::Data { .. }
            | Parallelism::DataExpert { .. }
            | Parallelism::None => {
                CableLoss::Replace("exo's collective fails; exo places the instance again on the nodes still cabled to each other")
            }
        }
    }

    /// FACTS.md reports exo model loads that fail until a reboot, and tensor parallel output
    /// corrupted past a prompt length on JACCL (exo issue 2270).
    fn accepts_runtime_fault(&self, fault: RuntimeFault, parallelism: Parallelism, backend: Backend) -> bool {
        match fault {
            RuntimeFault::LoadFailure => true,
            RuntimeFault::TensorParallelCorruption => parallelism == Parallelism::Tensor && backend == Backend::Jaccl,
        }
    }

    fn planner_splits(&self, nodes: usize) -> &'static [Parallelism] {
        if nodes == 1 { &[Parallelism::None] } else { &[Parallelism::Tensor, Parallelism::Pipeline] }
    }

    fn planner_prefill_chunks(&self) -> [i64; 2] {
        [2048, 4096]
    }

    /// exo's pipeline ranks are MLX processes whose stage hand-off is an asynchronous
    /// `send`/`recv` inside MLX's lazy graph: the first rank posts chunk k's activations and
    /// evaluates chunk k+1 while the next rank computes chunk k. The published trace requires it
    /// (FACTS.md, exo PR 1929: Qwen3.5-397B-A17B 4-bit on 2x M4 Max over TB5 RDMA, a 16,010-token
    /// prefill at 467 tok/s): ~36 GFLOP per token (2 x 16.3B active + attention) is 17 TFLOP/s,
    /// more than one M4 Max's 13 TFLOPS peak (catalog), so the two stages cannot have taken turns.
    fn pipelines_prefill_chunks(&self) -> bool {
        true
    }

    /// Over JACCL the macOS version (26.2: 4 KiB RDMA frames, 26.3: 512 KiB) and (tensor) the
    /// all-reduce algorithm (Dec 2025 fully connected, or mlx PR 3901's rs-ag); over either
    /// backend `MLX_METAL_FAST_SYNCH` on or off.
    fn planner_option_axes(&self, parallelism: Parallelism, jaccl: bool, nodes: usize) -> Vec<(&'static str, Vec<toml::Value>)> {
        let s = |x: &str| toml::Value::String(x.into());
        let mut axes: Vec<(&'static str, Vec<toml::Value>)> = Vec::new();
        if nodes > 1 {
            if jaccl {
                axes.push(("engine.macos", vec![s("26.2"), s("26.3")]));
                if parallelism == Parallelism::Tensor {
                    axes.push(("engine.allreduce", vec![s("fully-connected"), s("rs-ag")]));
                }
            }
            axes.push(("engine.fast_sync", vec![toml::Value::Boolean(true), toml::Value::Boolean(false)]));
        }
        axes
    }
}

/// An MLX pipeline (exo's, and mlx-lm's `PipelineMixin` under `mlx.launch`): stage r computes
/// its layers, hands the hidden state to r+1; the last stage's output is all-gathered so every
/// rank has it.
pub(super) fn lower_pipeline(plan: &Plan, tokens: u64) -> Lowered {
    let mut b = Builder::new(plan);
    let n = plan.n();
    let logits_all = plan.options.prefill_logits_all;
    let act_bytes = tokens * plan.model.hidden * plan.options.activation_bytes;
    let mut prev: Option<TaskId> = None;
    let mut outputs = Vec::with_capacity(n);
    for i in 0..n {
        let deps: Vec<TaskId> = prev.into_iter().collect();
        let gpu = b.gpu(i, plan.stage_ops(i), logits_all, &deps);
        // The stage's own host and sync cost (graph build, eval, wake-up), serial with it.
        let stage = plan.cost(i).stage_ns();
        let done = if stage > 0 { b.cpu(i, stage, "stage", &[gpu]) } else { gpu };
        outputs.push(done);
        if i + 1 < n {
            let s = b.cpu(i, plan.cost(i).sync_ns(), "gpu->cpu", &[done]);
            let x = b.send(i, i + 1, act_bytes, &[s]);
            prev = Some(b.g.compute(b.net.gpu[i + 1], plan.cost(i + 1).sync_ns(), "cpu->gpu", &[x]));
        }
    }
    let last = *outputs.last().expect("at least one stage");
    let ready: Vec<TaskId> = (0..n).map(|i| if i + 1 == n { last } else { b.g.join(&[outputs[i], last]) }).collect();
    let gathered = b.all_gather(&ready, act_bytes);
    for (i, g) in gathered.into_iter().enumerate() {
        b.host(i, &[g]);
    }
    b.finish(tokens)
}
