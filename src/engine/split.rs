//! Which splits a runtime can run: the errors, the checks every runtime shares (a cluster needs
//! a split; one chip family always runs) around each runtime's own rules (its module under
//! [`super::runtimes`]), and the divisibility rules of a tensor-parallel split (exo shards heads
//! and hidden across ranks).

use crate::hw::NodeSpec;
use crate::llm::ModelSpec;

use super::options::{EngineKind, Parallelism};

/// What an engine asks of a node it refuses to run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceNeed {
    /// An NVIDIA GPU (vLLM, SGLang, TensorRT-LLM: CUDA).
    NvidiaGpu,
    /// A Mac (vllm-mlx, oMLX: MLX's Metal backend on Apple Silicon).
    Mac,
}

impl std::fmt::Display for DeviceNeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::NvidiaGpu => "an NVIDIA GPU (CUDA)",
            Self::Mac => "a Mac (Apple Silicon, macOS)",
        })
    }
}

/// Why a runtime cannot split a model as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// A single-node engine asked for tensor or pipeline parallelism.
    #[error("engine `{engine}` runs on one node and has no {} parallelism", parallelism.id())]
    SingleNodeEngine {
        /// Engine name as written.
        engine: String,
        /// The split asked for.
        parallelism: Parallelism,
    },
    /// llama.cpp RPC asked for a tensor split.
    #[error("llama.cpp RPC splits layers (pipeline), not tensors")]
    RpcSplitsLayers,
    /// No split on a cluster of several nodes.
    #[error("engine `{engine}` with parallelism none runs on one node, but the cluster has {nodes}")]
    NoSplitOnCluster {
        /// Engine name as written.
        engine: String,
        /// Nodes in the cluster.
        nodes: usize,
    },
    /// The node count does not divide the heads, KV heads and hidden size.
    #[error(
        "tensor parallel over {nodes} nodes is illegal for `{model}`: {nodes} must divide the {kv_heads} KV heads, the {heads} heads and hidden {hidden}"
    )]
    IllegalTensorSplit {
        /// Model id.
        model: String,
        /// Nodes in the cluster.
        nodes: usize,
        /// KV heads.
        kv_heads: u64,
        /// Attention heads.
        heads: u64,
        /// Hidden size.
        hidden: u64,
        /// Node counts up to 16 that would be legal.
        legal: Vec<u64>,
    },
    /// vLLM's tensor-parallel size does not fit the model's heads.
    #[error(
        "vLLM tensor parallel over {nodes} nodes is illegal for `{model}`: vLLM requires the tensor-parallel size to divide the {heads} attention heads, and to divide the {kv_heads} KV heads or be a multiple of them"
    )]
    IllegalVllmTensorSplit {
        /// Model id.
        model: String,
        /// Nodes in the cluster (the tensor-parallel size).
        nodes: usize,
        /// KV heads.
        kv_heads: u64,
        /// Attention heads.
        heads: u64,
        /// Node counts up to 16 that would be legal.
        legal: Vec<u64>,
    },
    /// A runtime asked to span chip families it cannot mix.
    #[error(
        "engine `{engine}` cannot mix chip families {chips}: exo (MLX) mixes only Macs (Metal); across Mac, GB10 and Ryzen nodes only llama.cpp RPC runs"
    )]
    MixedFleet {
        /// Engine name as written.
        engine: String,
        /// The chips of the cluster, comma-separated.
        chips: String,
    },
    /// A CUDA engine asked for a pipeline split.
    #[error("engine `{engine}` is modelled with tensor parallelism only (pipeline parallel is not modelled for it)")]
    NoPipeline {
        /// Engine name as written.
        engine: String,
    },
    /// An engine without expert parallelism asked for it (exo and llama.cpp shard or place
    /// whole layers; SGLang's expert parallel is not modelled).
    #[error("engine `{engine}` has no expert parallelism in the model (vLLM has: `--enable-expert-parallel`)")]
    NoExpertParallel {
        /// Engine name as written.
        engine: String,
    },
    /// An engine without data-parallel attention asked for it.
    #[error(
        "engine `{engine}` has no data-parallel attention in the model (vLLM has: `--data-parallel-size N`; SGLang: `--enable-dp-attention`)"
    )]
    NoDataAttention {
        /// Engine name as written.
        engine: String,
    },
    /// Data-parallel attention asked of a model without MoE layers: its ranks would share
    /// nothing, which is separate servers.
    #[error(
        "`{model}` has no MoE layers: data parallel of a dense model is separate servers, which share no layer (parallelism `{}` needs an MoE model)", parallelism.id()
    )]
    DataAttentionNeedsMoe {
        /// Model id.
        model: String,
        /// The split asked for.
        parallelism: Parallelism,
    },
    /// An engine without a tensor-parallel pipeline asked for one.
    #[error(
        "engine `{engine}` has no tensor+pipeline parallelism in the model (vLLM has: `--tensor-parallel-size T --pipeline-parallel-size P`)"
    )]
    NoTensorPipeline {
        /// Engine name as written.
        engine: String,
    },
    /// A runtime whose model code offers no such split for this architecture (mlx-lm: a model
    /// file without `shard` or `PipelineMixin`).
    #[error("engine `{engine}` cannot run `{model_type}` with {} parallelism: {why}", parallelism.id())]
    ModelHasNoSplit {
        /// Engine name as written.
        engine: String,
        /// The model's architecture (Hugging Face `model_type`).
        model_type: String,
        /// The split asked for.
        parallelism: Parallelism,
        /// What the runtime's code offers instead.
        why: String,
    },
    /// A tensor+pipeline split whose stage count does not cut the nodes into equal tensor groups.
    #[error(
        "tensor+pipeline with {stages} stages over {nodes} nodes: the stages must split the nodes into equal tensor-parallel groups of at least 2 (vLLM runs T x P ranks)"
    )]
    IllegalStages {
        /// Nodes in the cluster.
        nodes: usize,
        /// Pipeline stages asked for.
        stages: u32,
    },
    /// An engine that does not run on a node (vLLM/SGLang need CUDA, the MLX servers a Mac).
    #[error("engine `{engine}` needs {needs} and does not run on node `{node}` ({chip}); engines that run there: {engines}")]
    WrongDevice {
        /// Engine name as written.
        engine: String,
        /// What it needs ([`super::runtimes::EngineRuntime::needs`]).
        needs: DeviceNeed,
        /// The node id.
        node: String,
        /// Its chip.
        chip: String,
        /// Engines that run on it, comma-separated.
        engines: String,
    },
}

impl SplitError {
    /// How to fix it.
    pub fn fix(&self) -> String {
        match self {
            Self::SingleNodeEngine { .. } => "use engine exo or mlx-lm (tensor/pipeline), or llama-cpp-rpc (pipeline)".into(),
            Self::RpcSplitsLayers => "use parallelism = \"pipeline\" or engine exo".into(),
            Self::NoSplitOnCluster { .. } => "use count = 1, or engine exo / mlx-lm / llama-cpp-rpc".into(),
            Self::MixedFleet { .. } => {
                "use engine = \"llama-cpp-rpc\" (pipeline), or nodes of one chip family (exo and mlx-lm mix Macs of any size)".into()
            }
            Self::NoPipeline { .. } => "use parallelism = \"tensor\" (or count = 1)".into(),
            Self::NoExpertParallel { .. } => "use parallelism = \"tensor\", or engine = \"vllm\" on GB10 nodes".into(),
            Self::NoDataAttention { .. } => {
                "use parallelism = \"tensor\", separate servers (`[engine] replicas = N`), or engine = \"vllm\" on GB10 nodes".into()
            }
            Self::DataAttentionNeedsMoe { .. } => {
                "use `[engine] replicas = N` (one server per group of nodes) or parallelism = \"tensor\"".into()
            }
            Self::NoTensorPipeline { .. } => "use parallelism = \"tensor\" or \"pipeline\", or engine = \"vllm\" on GB10 nodes".into(),
            Self::ModelHasNoSplit { .. } => {
                "use the split it offers, or engine = \"exo\" (its own sharding) or \"llama-cpp-rpc\" (pipeline)".into()
            }
            Self::IllegalStages { nodes, .. } => {
                let ok: Vec<String> = legal_stages(*nodes).iter().map(u32::to_string).collect();
                if ok.is_empty() {
                    format!("{nodes} nodes have no tensor+pipeline split: use parallelism = \"tensor\" or \"pipeline\"")
                } else {
                    format!("set `[engine] pipeline_stages` to one of {{{}}}", ok.join(", "))
                }
            }
            Self::WrongDevice { engines, needs: DeviceNeed::NvidiaGpu, .. } => {
                format!("use a GB10 node (dgx-spark, dell-pro-max-gb10), or one of: {engines}")
            }
            Self::WrongDevice { engines, needs: DeviceNeed::Mac, .. } => format!("use a Mac node, or one of: {engines}"),
            Self::IllegalTensorSplit { legal, .. } | Self::IllegalVllmTensorSplit { legal, .. } => {
                let ok: Vec<String> = legal.iter().map(u64::to_string).collect();
                format!("use a node count in {{{}}}, or parallelism = \"pipeline\"", ok.join(", "))
            }
        }
    }
}

/// The split an engine uses on `nodes` nodes when the scenario names none.
pub fn default_parallelism(kind: EngineKind, nodes: usize) -> Parallelism {
    kind.behaviour().default_parallelism(nodes)
}

/// Checks that engine `kind` (named `engine` in the file) can run `parallelism` on `nodes` nodes.
pub fn check_split(engine: &str, kind: EngineKind, parallelism: Parallelism, nodes: usize) -> Result<(), SplitError> {
    kind.behaviour().check_split(engine, parallelism)?;
    if nodes > 1 && parallelism == Parallelism::None {
        return Err(SplitError::NoSplitOnCluster { engine: engine.to_string(), nodes });
    }
    if let Parallelism::TensorPipeline { stages } = parallelism
        && !legal_stages(nodes).contains(&stages)
    {
        return Err(SplitError::IllegalStages { nodes, stages });
    }
    Ok(())
}

/// Checks that data-parallel attention has MoE layers to share: a dense model's data parallel
/// is separate servers ([`SplitError::DataAttentionNeedsMoe`]).
pub fn check_data_attention(model: &crate::llm::ModelSpec, parallelism: Parallelism) -> Result<(), SplitError> {
    if parallelism.data_attention() && model.moe.is_none() {
        return Err(SplitError::DataAttentionNeedsMoe { model: model.id.clone(), parallelism });
    }
    Ok(())
}

/// Stage counts a tensor+pipeline split of `nodes` nodes may have: at least two stages, each
/// a tensor-parallel group of at least two nodes, all groups the same size.
pub fn legal_stages(nodes: usize) -> Vec<u32> {
    (2..=nodes / 2).filter(|&p| nodes % p == 0).map(|p| p as u32).collect()
}

/// Whether engine `kind` can run one cluster on `nodes` (the runtimes' fleet rules): one chip
/// family is always allowed; a mix only where the runtime can mix chips
/// ([`super::runtimes::EngineRuntime::mixes_chips`]).
pub fn fleet_is_legal(kind: EngineKind, nodes: &[&NodeSpec]) -> bool {
    let one_chip = nodes.windows(2).all(|w| w[0].chip == w[1].chip);
    nodes.iter().all(|n| kind.behaviour().runs_on(n)) && (one_chip || kind.behaviour().mixes_chips(nodes))
}

/// Checks [`fleet_is_legal`], naming the chips when it is not.
pub fn check_fleet(engine: &str, kind: EngineKind, nodes: &[NodeSpec]) -> Result<(), SplitError> {
    let refs: Vec<&NodeSpec> = nodes.iter().collect();
    if let Some(n) = nodes.iter().find(|n| !kind.behaviour().runs_on(n)) {
        return Err(SplitError::WrongDevice {
            engine: engine.to_string(),
            needs: kind.behaviour().needs(),
            node: n.id.clone(),
            chip: n.chip.clone(),
            engines: EngineKind::names_on(n).join(", "),
        });
    }
    if fleet_is_legal(kind, &refs) {
        return Ok(());
    }
    let mut chips: Vec<&str> = nodes.iter().map(|n| n.chip.as_str()).collect();
    chips.dedup();
    Err(SplitError::MixedFleet { engine: engine.to_string(), chips: chips.join(", ") })
}

/// How a runtime shards a layer's tensors over its ranks, and so which rank counts it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorSplitRule {
    /// exo/MLX: the count divides the hidden size, the heads and the KV heads (unless one
    /// shared KV head, as MLA's latent), FACTS.md "exo 1.0 tensor parallel".
    HeadsKvHeadsHidden,
    /// vLLM (v0.11, `ModelConfig.verify_with_parallel_config`): "Total number of attention
    /// heads must be divisible by tensor parallel size"; KV heads are split when the size
    /// divides them and replicated when it is a multiple of them (`QKVParallelLinear`:
    /// `divide(tp_size, total_num_kv_heads)` once tp_size >= the KV heads, else
    /// `divide(total_num_kv_heads, tp_size)`; `divide` asserts an exact division).
    Vllm,
}

impl TensorSplitRule {
    /// Whether `ranks` ranks can shard `model` under this rule.
    pub fn is_legal(self, model: &ModelSpec, ranks: u64) -> bool {
        match self {
            Self::HeadsKvHeadsHidden => tensor_split_is_legal(model, ranks),
            Self::Vllm => {
                let kvh = model.kv_heads().max(1);
                model.heads() % ranks == 0 && (kvh % ranks == 0 || ranks % kvh == 0)
            }
        }
    }
}

/// Whether `nodes` ranks can shard `model` tensor-parallel: the count must divide the hidden
/// size, the heads and the KV heads (unless there is one shared KV head, as in MLA's latent).
pub fn tensor_split_is_legal(model: &ModelSpec, nodes: u64) -> bool {
    let kvh = model.kv_heads();
    model.hidden % nodes == 0 && model.heads() % nodes == 0 && (kvh == 1 || kvh % nodes == 0)
}

/// Checks a split that shards every layer (tensor or expert parallel) of `model` over `nodes`
/// nodes under the runtime's rule, with the node counts up to 16 that would be legal.
pub fn check_tensor_split(rule: TensorSplitRule, model: &ModelSpec, nodes: usize) -> Result<(), SplitError> {
    if nodes <= 1 || rule.is_legal(model, nodes as u64) {
        return Ok(());
    }
    let legal = (1..=16u64).filter(|k| rule.is_legal(model, *k)).collect();
    let (model_id, kv_heads, heads) = (model.id.clone(), model.kv_heads(), model.heads());
    Err(match rule {
        TensorSplitRule::HeadsKvHeadsHidden => {
            SplitError::IllegalTensorSplit { model: model_id, nodes, kv_heads, heads, hidden: model.hidden, legal }
        }
        TensorSplitRule::Vllm => SplitError::IllegalVllmTensorSplit { model: model_id, nodes, kv_heads, heads, legal },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> ModelSpec {
        crate::catalog::catalog().model(id).unwrap_or_else(|| panic!("model {id}")).1.clone()
    }

    #[test]
    fn vllm_replicates_kv_heads_where_exo_must_divide_them() {
        // Qwen3-235B-A22B: 64 heads, 4 KV heads, hidden 4096.
        let m = model("qwen3-235b-a22b");
        assert_eq!((m.heads(), m.kv_heads()), (64, 4));
        let legal = |rule: TensorSplitRule| (1..=16u64).filter(|k| rule.is_legal(&m, *k)).collect::<Vec<_>>();
        // exo divides the KV heads; vLLM replicates them over 8 or 16 ranks (2 or 4 per KV head).
        assert_eq!(legal(TensorSplitRule::HeadsKvHeadsHidden), [1, 2, 4]);
        assert_eq!(legal(TensorSplitRule::Vllm), [1, 2, 4, 8, 16]);
        let e = check_tensor_split(TensorSplitRule::Vllm, &m, 3).unwrap_err();
        assert!(e.to_string().contains("divide the 64 attention heads"), "{e}");
        assert_eq!(e.fix(), "use a node count in {1, 2, 4, 8, 16}, or parallelism = \"pipeline\"");
    }
}
