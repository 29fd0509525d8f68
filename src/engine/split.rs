//! Which splits a runtime can run: the errors, the checks every runtime shares (a cluster needs
//! a split; one chip family always runs) around each runtime's own rules (its module under
//! [`super::runtimes`]), and the divisibility rules of a tensor-parallel split (exo shards heads
//! and hidden across ranks).

use crate::hw::NodeSpec;
use crate::llm::ModelSpec;

use super::options::{EngineKind, Parallelism};

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
    /// An engine whose kernels do not run on a node's chip (vLLM/SGLang need CUDA).
    #[error("engine `{engine}` needs an NVIDIA GPU (CUDA) and does not run on node `{node}` ({chip}); engines that run there: {engines}")]
    WrongDevice {
        /// Engine name as written.
        engine: String,
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
            Self::SingleNodeEngine { .. } => "use engine exo (tensor/pipeline) or llama-cpp-rpc (pipeline)".into(),
            Self::RpcSplitsLayers => "use parallelism = \"pipeline\" or engine exo".into(),
            Self::NoSplitOnCluster { .. } => "use count = 1, or engine exo / llama-cpp-rpc".into(),
            Self::MixedFleet { .. } => {
                "use engine = \"llama-cpp-rpc\" (pipeline), or nodes of one chip family (exo mixes Macs of any size)".into()
            }
            Self::NoPipeline { .. } => "use parallelism = \"tensor\" (or count = 1)".into(),
            Self::WrongDevice { engines, .. } => format!("use a GB10 node (dgx-spark, dell-pro-max-gb10), or one of: {engines}"),
            Self::IllegalTensorSplit { legal, .. } => {
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
    Ok(())
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

/// Whether `nodes` ranks can shard `model` tensor-parallel: the count must divide the hidden
/// size, the heads and the KV heads (unless there is one shared KV head, as in MLA's latent).
pub fn tensor_split_is_legal(model: &ModelSpec, nodes: u64) -> bool {
    let kvh = model.kv_heads();
    model.hidden % nodes == 0 && model.heads() % nodes == 0 && (kvh == 1 || kvh % nodes == 0)
}

/// Checks a tensor-parallel split of `model` over `nodes` nodes.
pub fn check_tensor_split(model: &ModelSpec, nodes: usize) -> Result<(), SplitError> {
    if nodes <= 1 || tensor_split_is_legal(model, nodes as u64) {
        return Ok(());
    }
    Err(SplitError::IllegalTensorSplit {
        model: model.id.clone(),
        nodes,
        kv_heads: model.kv_heads(),
        heads: model.heads(),
        hidden: model.hidden,
        legal: (1..=16u64).filter(|k| tensor_split_is_legal(model, *k)).collect(),
    })
}
