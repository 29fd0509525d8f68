//! How each runtime lowers a model onto a cluster: which bytes each node reads, which
//! collectives run over which links, which hops a token takes. The output is a task graph per
//! forward step for the discrete-event core; this module never runs the event queue itself and
//! knows nothing of scenario files.
//!
//! - [`options`]: runtime, split and version-dependent options (a leaf).
//! - [`plan`]: the resolved plan (memory, layer shares, per-chip parameters).
//! - [`cost`]: the cost model: what an op, a launch, a crossing, host work or a message costs.
//! - [`lowered`]: a step's task graph, re-timed per context.
//! - [`network`]: cluster resources, routes, sends and collectives.
//! - [`lower`]: the step entry point, the shared single-node / tensor lowering; microbenchmark
//!   shapes.
//! - [`runtimes`]: one module per runtime (exo, mlx-lm, vllm-mlx, llama.cpp, llama.cpp RPC,
//!   ollama) behind [`EngineRuntime`]: names, kernels, defaults, splits, lowering, serving
//!   loop, fault reactions, planner enumeration.
//! - [`split`]: the split errors and the checks shared by every runtime.

pub mod cost;
pub mod lower;
pub mod lowered;
pub mod network;
pub mod options;
pub mod plan;
pub mod runtimes;
pub mod split;

pub use cost::{
    COST_PARAMETERS, CostParameter, MlaOptions, NetCost, NodeCost, ParamSection, Work, busiest_rank_experts, recurrence_alu_fraction,
};
pub use lower::{lower_all_sum, lower_segment_chain, lower_step};
pub use lowered::{Lowered, Segment};
pub use options::{AllReduceAlgo, CollectiveLowering, EngineKind, EngineOptions, LlamaBackend, Parallelism, RocmTiles, Runtime};
pub use plan::{MemoryBreakdown, Plan, PlanError, PlanInput, RAISED_WIRED_FRACTION_MACOS, Share, wired_limit_command};
pub use runtimes::{EngineRuntime, RUNTIMES};
pub use split::SplitError;
