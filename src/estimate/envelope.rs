//! Whether a prediction is inside the calibrated envelope of the profile.

use crate::profile::Profile;
use crate::scenario::Scenario;

use super::Envelope;

/// The envelope status of a scenario under a profile: node counts, chips and context length the
/// profile was calibrated on, and an engine's own host costs (vllm-mlx) where the chip has none.
pub fn envelope(s: &Scenario, profile: &Profile) -> Envelope {
    let mut reasons = Vec::new();
    let n = s.nodes.len() as u32;
    if !profile.meta.calibrated_node_counts.is_empty() && !profile.meta.calibrated_node_counts.contains(&n) {
        reasons.push(format!("{n} nodes: calibrated on {:?}", profile.meta.calibrated_node_counts));
    }
    for chip in s.nodes.iter().map(|x| &x.chip) {
        if !profile.meta.calibrated_chips.is_empty() && !profile.meta.calibrated_chips.contains(chip) {
            let r = format!("chip `{chip}` was never profiled (parameters are assumed)");
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
    }
    if let Some(key) = s.engine.kind.host_key() {
        for chip in s.nodes.iter().map(|x| &x.chip) {
            let own = profile.chip(chip).is_some_and(|c| c.engines.contains_key(key));
            let r = format!("no {key} host costs for chip `{chip}`: the {} runtime's assumed", s.engine.kind.runtime().id());
            if !own && !reasons.contains(&r) {
                reasons.push(r);
            }
        }
    }
    let ctx = s.workload.prompt_tokens + s.workload.generate_tokens;
    if profile.meta.calibrated_max_context > 0 && ctx > profile.meta.calibrated_max_context {
        reasons.push(format!("context {ctx} beyond the {} calibrated", profile.meta.calibrated_max_context));
    }
    Envelope {
        profile: profile.meta.name.clone(),
        status: if reasons.is_empty() { "inside".into() } else { "extrapolation".into() },
        reasons,
    }
}
