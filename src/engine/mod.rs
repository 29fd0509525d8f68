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
//! - [`lower`]: single-node, exo tensor and exo pipeline lowering; microbenchmark shapes.
//! - [`llama_rpc`]: llama.cpp RPC lowering.
//! - [`split`]: which splits each runtime can run on how many nodes.

pub mod cost;
pub mod llama_rpc;
pub mod lower;
pub mod lowered;
pub mod network;
pub mod options;
pub mod plan;
pub mod split;

pub use cost::{COST_PARAMETERS, CostParameter, MlaOptions, NetCost, NodeCost, ParamSection, Work};
pub use lower::{lower_all_sum, lower_segment_chain, lower_step};
pub use lowered::{Lowered, Segment};
pub use options::{AllReduceAlgo, EngineKind, EngineOptions, Parallelism, Runtime};
pub use plan::{MemoryBreakdown, Plan, PlanError, PlanInput, Share};
pub use split::SplitError;
