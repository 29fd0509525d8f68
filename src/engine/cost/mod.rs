//! The cost model: what an operation or a message costs in time on this cluster. Bytes and FLOPs
//! of `llm` ops on a chip under a runtime ([`NodeCost`]: dense and expert GEMV/GEMM, attention at
//! depth, elementwise traffic, kernel launches, GPU<->CPU crossings, host work per step and per
//! sequence, a pipeline stage), and messages on the fabric ([`NetCost`]: one hop over RDMA or
//! TCP, collective posts and CPU reductions, llama.cpp RPC calls and graphs; NCCL collectives
//! over ConnectX-7 and the tensor-, expert- and pipeline-parallel traffic built from them). Every term is
//! written once here; lowering asks for durations and never computes one. The calibrated
//! parameters the terms read are listed, with what each one times, in [`COST_PARAMETERS`].
//!
//! A cost model is a borrowed view of a [`super::Plan`]'s parameters ([`super::Plan::cost`],
//! [`super::Plan::net_cost`]), built per query: plans stay the one owner of the parameters, and
//! a caller that edits a plan's profile values sees them in the next query.

mod kernel;
mod nccl;
mod net;
mod params;

pub use kernel::{ExpertRowTile, LaunchCost, MlaOptions, NodeCost, SparseGather, Work, busiest_rank_experts, recurrence_alu_fraction};
pub use nccl::{NcclAlgorithm, NcclChoice, NcclProtocol};
pub use net::NetCost;
pub use params::{COST_PARAMETERS, CostParameter, ParamSection};

use crate::sim::Time;

/// Microseconds (a profile value) to integer nanoseconds, never negative.
pub fn us_to_ns(us: f64) -> Time {
    (us * 1e3).round().max(0.0) as Time
}
