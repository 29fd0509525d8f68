//! A serving estimate re-run under a nudged profile at the cost of its scheduler, not of its
//! simulation (issue 23 item 3, for prediction intervals): the base run keeps every forward
//! shape's timing ([`StepTable`]); the nudged run replays the same workload, taking a shape the
//! base run timed from the table with its span scaled by that forward size's step-time ratio
//! (nudged plan over base plan, both without jitter, at the size's representative shape: the
//! per-step sensitivity). Only shapes the base run never timed are simulated again.
//!
//! What it approximates: a full re-run times every shape on the nudged plan; the replay scales
//! each shape by the ratio of its size's representative, so two shapes of one size (same tokens,
//! other contexts) share one sensitivity. Jitter is the base run's draw for every reused shape
//! (common random numbers), where a full re-run draws afresh in another order: the replay's
//! finite differences carry less noise. `tests/integration/serve_speed.rs` bounds the difference
//! on the interval.

use std::collections::BTreeMap;

use super::serve::{StepFactors, StepTable};
use super::{Estimate, EstimateError, ServeRun, ServeSim, generate_plan, node_memory, serve_metrics, skeleton};
use crate::engine::{Plan, Work, lower_step};
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::sim::{Jitter, ResourceKind, Time, execute};

/// A serving estimate's plan, run and step timings, kept for replays under nudged profiles.
pub struct ServeBase {
    plan: Plan,
    run: ServeRun,
    table: StepTable,
    /// Per forward size: the representative shape's timing on the base plan without jitter.
    quiet: BTreeMap<u64, QuietStep>,
}

/// `estimate` of a serving scenario, with its [`ServeBase`] for [`estimate_nudged`]; `None` when
/// the scenario does not serve, or serves on replicas or with data-parallel attention.
pub fn estimate_serve_base(s: &Scenario, profile: &Profile) -> Result<Option<(Estimate, ServeBase)>, EstimateError> {
    let Some(sv) = &s.workload.serve else { return Ok(None) };
    if s.replicas > 1 || s.engine.parallelism.data_attention() {
        // Replicas run several shares, and data-parallel attention deals a step's rows to its
        // ranks, so one forward size's steps do not share one sensitivity (which rank takes
        // a prefill chunk decides the step): their intervals re-run the whole estimate.
        return Ok(None);
    }
    let plan = generate_plan(s, profile)?;
    let (run, table) = ServeSim::new(&plan, sv, &s.slo, s.seed).run_keeping_steps();
    let mut out = skeleton(s, node_memory(s, &plan), profile);
    serve_metrics(s, &plan, &run, &mut out);
    let quiet = table.representatives().iter().map(|(&tokens, (rows, head))| (tokens, quiet_step(&plan, tokens, rows, *head))).collect();
    Ok(Some((out, ServeBase { plan, run, table, quiet })))
}

/// The estimate of `s` under `profile` (the base's profile with some parameters nudged), by
/// replaying the base run with per-size step-time ratios (the span and each node's GPU and CPU
/// busy time scale by their own ratio: a link parameter moves the span, not the GPU's work; a
/// compute efficiency moves the issued FLOPs power charges, by their ratio). A nudge that moves no step time and
/// no KV capacity (a power parameter, a parameter of another runtime or link) reuses the base
/// run itself: power is recomputed from its busy times and work on the nudged plan.
pub fn estimate_nudged(s: &Scenario, base: &ServeBase, profile: &Profile) -> Result<Estimate, EstimateError> {
    let sv = s.workload.serve.as_ref().expect("a serve base comes from a serving scenario");
    let plan = generate_plan(s, profile)?;
    let factors: BTreeMap<u64, StepFactors> = base
        .table
        .representatives()
        .iter()
        .map(|(&tokens, (rows, head))| (tokens, quiet_step(&plan, tokens, rows, *head).over(&base.quiet[&tokens])))
        .collect();
    let same_kv = (0..plan.n()).all(|i| plan.kv_capacity_bytes(i) == base.plan.kv_capacity_bytes(i));
    let mut out = skeleton(s, node_memory(s, &plan), profile);
    if same_kv && factors.values().all(StepFactors::is_identity) {
        serve_metrics(s, &plan, &base.run, &mut out);
    } else {
        let run = ServeSim::new(&plan, sv, &s.slo, s.seed).with_base_steps(&base.table, &factors).run();
        serve_metrics(s, &plan, &run, &mut out);
    }
    Ok(out)
}

/// One forward's span and busy times per node, without jitter.
struct QuietStep {
    span: Time,
    gpu: Vec<Time>,
    cpu: Vec<Time>,
    /// Work per node: bytes (the experts a batch touches follow the profile's expert
    /// popularity), FLOPs and issued FLOPs (FLOPs over the kernels' compute efficiency).
    work: Vec<Work>,
}

impl QuietStep {
    /// The ratios of this step's times to `base`'s (1 where the base is 0).
    fn over(&self, base: &QuietStep) -> StepFactors {
        let r = |a: Time, b: Time| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        StepFactors {
            span: r(self.span, base.span),
            gpu: self.gpu.iter().zip(&base.gpu).map(|(&a, &b)| r(a, b)).collect(),
            cpu: self.cpu.iter().zip(&base.cpu).map(|(&a, &b)| r(a, b)).collect(),
            work: self.work.iter().zip(&base.work).map(|(a, b)| a.ratio_to(*b)).collect(),
        }
    }
}

/// One forward of `rows` on `plan`, without jitter.
fn quiet_step(plan: &Plan, tokens: u64, rows: &[(u64, u64)], head_rows: u64) -> QuietStep {
    let mut low = lower_step(plan, tokens);
    low.retime_rows(plan, rows, head_rows);
    let tl = execute(&low.graph, 0, &mut Jitter::none());
    let n = plan.n();
    let work = low.work_rows(plan, rows, head_rows);
    let mut q = QuietStep { span: tl.makespan(), gpu: vec![0; n], cpu: vec![0; n], work };
    for (res, &busy) in low.graph.resources().iter().zip(tl.busy_by_resource()) {
        match res.kind() {
            ResourceKind::Gpu => q.gpu[res.node() as usize] += busy,
            ResourceKind::Cpu => q.cpu[res.node() as usize] += busy,
            ResourceKind::Link | ResourceKind::Virtual => {}
        }
    }
    q
}
