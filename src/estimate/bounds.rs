//! What a search over many scenarios needs besides [`super::estimate`]: cheap optimistic bounds
//! on a scenario's figures before simulating it ([`nominal_bounds`]), and a memo of generate
//! runs shared by scenarios that plan to the same step ([`RunMemo`]).
//!
//! Both are exact in what they promise: the memo returns the very run the scenario would
//! simulate (the run is a function of the plan, the tokens and the seed; the memo's key is the
//! plan with only the nodes' and fabric's names, prices and sources blanked), and the bounds
//! come from the same lowered step on the event core without jitter, widened by a margin that
//! the planner's tests check against the simulated figures.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::engine::{Plan, lower_step};
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::sim::{Jitter, ResourceKind, execute};

use super::faults::{decode_link_utilisation, load_fault_availability};
use super::power::{PhaseLoad, phase_power_w};
use super::{Estimate, EstimateError, GenerateRun, generate_plan, simulate_generate_at};

/// Relative margin on the nominal bounds: the decode rate is at most (1 + margin) times the
/// rate of a jitter-free step at the smallest context, cluster power at least (1 - margin)
/// times the smaller of the jitter-free powers at the first and last context. Jitter (a 2%
/// coefficient of variation per task in the shipped profiles) moves a run's mean step by far
/// less; the planner's tests check every simulated candidate against its bounds.
pub const BOUND_MARGIN: f64 = 0.05;

/// Optimistic bounds on a generate scenario's figures, from jitter-free steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Upper bound on decode tokens/s.
    pub tokens_per_s_max: f64,
    /// Lower bound on cluster power during decode, W.
    pub power_w_min: f64,
    /// Upper bound on the steady availability under the profile's load-dependent faults
    /// ([`load_fault_availability`] at a lower bound on the link utilisation).
    pub availability_max: f64,
}

/// Bounds of scenario `s` planned as `plan`: one jitter-free decode step at the first and at
/// the last context of the generation (attention grows with the context, so the first step is
/// the fastest).
pub fn nominal_bounds(s: &Scenario, plan: &Plan, profile: &Profile) -> Bounds {
    // A filled cache (`context_tokens`) comes before the prompt: the first step's context.
    let (prompt, generate) = (s.workload.context_tokens + s.workload.prompt_tokens, s.workload.generate_tokens.max(1));
    let mut low = lower_step(plan, 1);
    let mut step = |context: u64| {
        low.retime(plan, context);
        let tl = execute(&low.graph, 0, &mut Jitter::none());
        let t = tl.makespan().max(1) as f64;
        let work = low.work(plan, context);
        let mut power = 0.0;
        for (i, w) in work.into_iter().enumerate() {
            let cpu_busy = low
                .graph
                .resources()
                .iter()
                .zip(tl.busy_by_resource())
                .filter(|(r, _)| r.kind() == ResourceKind::Cpu && r.node() as usize == i)
                .map(|(_, b)| *b)
                .sum();
            power += phase_power_w(plan, i, &PhaseLoad { ns: tl.makespan().max(1), cpu_busy, work: w });
        }
        (t, power, low.bytes_sent as f64)
    };
    let (first, p_first, _) = step(prompt);
    let (last, p_last, bytes) = step(prompt + generate - 1);
    let util_min = decode_link_utilisation(plan, last * (1.0 + BOUND_MARGIN), bytes);
    Bounds {
        tokens_per_s_max: 1e9 / first * (1.0 + BOUND_MARGIN),
        power_w_min: p_first.min(p_last) * (1.0 - BOUND_MARGIN),
        availability_max: load_fault_availability(s, plan, util_min, low.cables_crossed.len(), &profile.faults),
    }
}

/// Generate runs already simulated, by a 128-bit digest of what determines them (the plan with
/// the nodes' and fabric's names, prices and sources blanked, the tokens and the seed). Shared
/// across threads; two threads asking for the same run at once both simulate it and get the
/// same result, so results never depend on timing.
#[derive(Debug, Default)]
pub struct RunMemo {
    runs: Mutex<HashMap<(u64, u64), Arc<GenerateRun>>>,
    hits: std::sync::atomic::AtomicU64,
}

impl RunMemo {
    /// Runs answered from the memo.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The run of `plan` (simulated once per distinct key).
    pub fn run(&self, plan: &Plan, depth: u64, prompt: u64, generate: u64, seed: u64) -> Arc<GenerateRun> {
        let key = digest(plan, depth, prompt, generate, seed);
        if let Some(r) = self.runs.lock().expect("memo lock").get(&key) {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return r.clone();
        }
        let run = Arc::new(simulate_generate_at(plan, depth, prompt, generate, seed));
        self.runs.lock().expect("memo lock").entry(key).or_insert(run).clone()
    }
}

/// The memo key: two SipHash digests of the plan's text with identity fields blanked.
pub(super) fn digest(plan: &Plan, depth: u64, prompt: u64, generate: u64, seed: u64) -> (u64, u64) {
    let p = without_identity(plan);
    let text = format!("{p:?}|{depth}|{prompt}|{generate}|{seed}");
    let h = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        text.hash(&mut h);
        h.finish()
    };
    (h(1), h(2))
}

/// `plan` with what only names or prices it blanked (node and fabric ids, names, prices,
/// sources): two plans equal after this simulate alike.
pub(super) fn without_identity(plan: &Plan) -> Plan {
    let mut p = plan.clone();
    for n in &mut p.nodes {
        n.id.clear();
        n.name.clear();
        n.price_usd = 0.0;
        n.sources.clear();
    }
    let f = &mut p.fabric;
    f.id.clear();
    f.name.clear();
    f.cable_usd = 0.0;
    f.switch_usd = 0.0;
    f.sources.clear();
    p
}

/// A generate estimate for a search: [`super::estimate`] with the run taken from `memo`, and the
/// steady availability under the profile's load-dependent faults
/// ([`load_fault_availability`]). Serve and HPL workloads go through [`super::estimate`]
/// (availability 1).
pub fn estimate_memo(s: &Scenario, profile: &Profile, memo: &RunMemo) -> Result<(Estimate, f64), EstimateError> {
    if s.workload.kind != crate::scenario::WorkloadKind::Generate || s.workload.serve.is_some() {
        return super::estimate(s, profile).map(|e| (e, 1.0));
    }
    let plan = generate_plan(s, profile)?;
    let w = &s.workload;
    let run = memo.run(&plan, w.context_tokens, w.prompt_tokens, w.generate_tokens, s.seed);
    let util = decode_link_utilisation(&plan, run.decode_ns as f64, run.decode_bytes_sent as f64);
    let cables_needed = lower_step(&plan, 1).cables_crossed.len();
    let availability = load_fault_availability(s, &plan, util, cables_needed, &profile.faults);
    Ok((super::generate_estimate(s, &plan, &run, profile), availability))
}
