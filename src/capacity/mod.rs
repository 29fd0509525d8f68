//! Capacity tools built on the one estimator: grid sweeps (run, resume, shard, merge) and the
//! cluster planner.

pub mod planner;
pub mod sweep;
