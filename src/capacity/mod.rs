//! Capacity tools built on the one estimator: grid sweeps (run, resume, shard, merge), the
//! cluster planner, and the serving-capacity search under an SLO (`plan --slo`).

pub mod planner;
pub mod slo;
pub mod sweep;
