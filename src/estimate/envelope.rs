//! Whether a prediction is inside the calibrated envelope of the profile.

use crate::llm::{QuantFamily, TensorClass};
use crate::profile::{CalibratedSetup, Profile};
use crate::scenario::{Arrival, Scenario, WorkloadKind};

use super::Envelope;

/// Concurrency of a serving run whose Poisson arrivals have no `max_batch`: no bound the
/// calibration rows could cover.
const UNBOUNDED: u64 = u64::MAX;

/// The sequences a scenario decodes together: 1 for a generate run, a batched-bench run's batch,
/// the users of a closed serving loop (one replica's share: the most any replica takes), a
/// Poisson run's `max_batch` (unbounded without one).
fn concurrency(s: &Scenario) -> u64 {
    match (&s.workload.kind, &s.workload.serve) {
        (WorkloadKind::Serve, Some(sv)) => match (&sv.arrival, sv.max_batch) {
            (_, Some(b)) => b,
            (Arrival::Closed { users, .. }, None) => users.div_ceil(s.replicas as u64),
            _ => UNBOUNDED,
        },
        (WorkloadKind::BatchedBench, _) => s.workload.batch,
        _ => 1,
    }
}

/// The setups of a scenario, one per distinct chip: chip, engine, parallelism, fabric (`-` for
/// one node), the file format the runtime loads, concurrency.
pub fn scenario_setups(s: &Scenario) -> Vec<CalibratedSetup> {
    let mut out: Vec<CalibratedSetup> = Vec::new();
    for chip in s.nodes.iter().map(|n| &n.chip) {
        if out.iter().any(|x| x.chip == *chip) {
            continue;
        }
        out.push(CalibratedSetup {
            chip: chip.clone(),
            engine: s.engine.kind.id().into(),
            parallelism: s.engine.parallelism.id().into(),
            fabric: if s.nodes.len() > 1 { s.fabric.id.clone() } else { "-".into() },
            // A file either runtime family loads (bf16, mxfp4) is the runtime's own format here:
            // gpt-oss MXFP4 under exo is an MLX file, under llama.cpp a GGUF one.
            quant_family: match s.quant.family {
                QuantFamily::Any => s.engine.kind.runtime().format().id().into(),
                family => family.id().into(),
            },
            max_concurrency: concurrency(s),
        });
    }
    out
}

/// One sentence per node whose port is slower than the fabric's line rate: its links run at
/// the port's rate ([`crate::hw::FabricSpec::link_gbs`]), a rate no calibration row of the
/// fabric ran at (the fabric's bandwidth is scaled by the port's share of its line rate).
pub fn slower_port_notes(s: &Scenario) -> Vec<String> {
    let f = &s.fabric;
    let mut out: Vec<String> = Vec::new();
    for node in &s.nodes {
        let Some(gbps) = f.slower_port_gbps(node) else { continue };
        let rates = format!("{:.3} of {:.3} GB/s", f.bandwidth_gbs * f.port_share(node), f.bandwidth_gbs);
        let note = if f.port == crate::hw::PortKind::Qsfp {
            format!("{}'s ConnectX-7 reaches {gbps} Gb/s: its links on {} run at that rate ({rates})", node.id, f.id)
        } else {
            format!("{} has a {gbps} GbE port: its links on {} ({} GbE) run at {gbps} Gb/s ({rates})", node.id, f.id, f.link_gbps)
        };
        if !out.contains(&note) {
            out.push(note);
        }
    }
    out
}

/// The sentence for a TCP-only runtime on an RDMA fabric: it runs the fabric's TCP sibling over
/// the same cables ([`Scenario::cabled_fabric`]), with the sibling's latency and bandwidth.
pub fn tcp_only_note(s: &Scenario) -> Option<String> {
    let named = s.cabled_fabric.as_deref()?;
    let f = &s.fabric;
    Some(format!(
        "{} speaks TCP only: on {named}'s cables it runs as {} ({} us one way, {} GB/s, plus the per-message TCP cost), not RDMA",
        s.engine.kind.behaviour().id(),
        f.id,
        f.latency_us,
        f.bandwidth_gbs
    ))
}

/// The weight kernels a scenario streams: each kernel family of its bulk weights (attention,
/// and the dense FFN or the routed experts, in the middle layer) with the library and the chip
/// of each node that runs them (`mxfp4 weights on llama-cpp, gb10`). A kernel rate fitted on one
/// family (an efficiency, a family's multiplier) says little of another's: vLLM's NVFP4 on a
/// GB10 is not calibrated by its MXFP4 rows.
pub fn scenario_kernels(s: &Scenario) -> Vec<String> {
    let shape = s.model.quant_shape();
    let bulk = if s.model.moe.is_some() { TensorClass::RoutedExpert } else { TensorClass::DenseMlp };
    let runtime = s.engine.kind.runtime().id();
    let mut out: Vec<String> = Vec::new();
    for chip in s.nodes.iter().map(|n| &n.chip) {
        for class in [TensorClass::Attention, bulk] {
            let entry = format!("{} weights on {runtime}, {chip}", s.quant.class_format(class, &shape).kernel.id());
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    out
}

/// A model mechanism as a profile records it calibrated: the mechanism and the kernel library
/// that ran it (`Gated DeltaNet recurrence on mlx`): each library implements a mechanism with
/// its own kernels (MLX's one sequential Metal kernel for the delta rule, llama.cpp's chunked
/// graph of ops), so a row of one does not calibrate another.
pub fn mechanism_on(mechanism: &str, runtime: crate::engine::Runtime) -> String {
    format!("{mechanism} on {}", runtime.id())
}

/// Whether two setups are the same but for their concurrency.
pub fn same_setup(a: &CalibratedSetup, b: &CalibratedSetup) -> bool {
    (&a.chip, &a.engine, &a.parallelism, &a.fabric, &a.quant_family) == (&b.chip, &b.engine, &b.parallelism, &b.fabric, &b.quant_family)
}

/// Whether `path` is a fitted parameter that applies to `chip` under `runtime` / `engine`: a
/// chip-wide one, or one of that runtime's or engine's.
fn applies(path: &str, chip: &str, runtime: &str, engine: Option<&str>) -> bool {
    let Some(rest) = path.strip_prefix(&format!("chips.{chip}.")) else { return false };
    match rest.split_once('.') {
        None => true,
        Some(("runtimes", r)) => r.starts_with(&format!("{runtime}.")),
        Some(("engines", e)) => engine.is_some_and(|k| e.starts_with(&format!("{k}."))),
        Some(_) => true,
    }
}

/// The envelope status of a scenario under a profile: node counts, chips and context length the
/// profile was calibrated on; chips whose parameters for this runtime are all priors; the setup
/// (runtime, parallelism, fabric, quantization family) and concurrency its rows covered; and an
/// engine's own host costs (vllm-mlx) where the chip has none; model mechanisms (a Mamba-2
/// scan, a sparse-attention indexer) no calibration row's model had. Its notes say what the run put
/// in place of what the scenario named ([`tcp_only_note`]): the run is calibrated as what it runs.
pub fn envelope(s: &Scenario, profile: &Profile) -> Envelope {
    let mut reasons = Vec::new();
    let mut push = |r: String| {
        if !reasons.contains(&r) {
            reasons.push(r);
        }
    };
    let meta = &profile.meta;
    let n = s.nodes.len() as u32;
    if !meta.calibrated_node_counts.is_empty() && !meta.calibrated_node_counts.contains(&n) {
        push(format!("{n} nodes: calibrated on {:?}", meta.calibrated_node_counts));
    }
    let runtime = s.engine.kind.runtime().id();
    let host_key = s.engine.host_key();
    let fitted: Vec<&str> = profile.fit.as_ref().map(|f| f.params.iter().map(|p| p.name.as_str()).collect()).unwrap_or_default();
    for node in &s.nodes {
        let params_chip = profile.params_chip(node);
        if params_chip != node.chip {
            let why = if node.calibrated_as.is_some() { "its calibrated_as" } else { "nearest profiled family" };
            push(format!("chip `{}` was never profiled: node `{}` uses the parameters of `{params_chip}` ({why})", node.chip, node.id));
        }
        if let Some(o) = crate::catalog::catalog().user.iter().find(|o| o.section == "node" && o.id == node.id) {
            if !o.assumed.is_empty() {
                push(format!("node `{}` ({}) gives figures without a source: {} (assumed)", node.id, o.file, o.assumed.join(", ")));
            }
        }
    }
    if s.nodes.len() > 1 {
        for note in slower_port_notes(s) {
            push(note);
        }
    }
    for chip in s.nodes.iter().map(|x| profile.params_chip(x)) {
        let chip = &chip;
        if !meta.calibrated_chips.is_empty() && !meta.calibrated_chips.contains(chip) {
            push(format!("chip `{chip}` was never profiled (parameters are assumed)"));
        } else if profile.fit.is_some()
            && s.workload.kind != WorkloadKind::Hpl
            && !fitted.iter().any(|p| applies(p, chip, runtime, host_key))
        {
            push(format!("chip `{chip}` extrapolated: none of its {runtime} parameters was fitted (all are priors)"));
        }
    }
    if let Some(key) = host_key {
        for chip in s.nodes.iter().map(|x| profile.params_chip(x)) {
            match profile.engine_host(&chip, key) {
                Some((from, _)) if from == chip => {}
                Some((from, _)) => push(format!("no {key} host costs for chip `{chip}`: those of `{from}` assumed (CPU work)")),
                None => push(format!("no {key} host costs for chip `{chip}`: the {runtime} runtime's assumed")),
            }
        }
    }
    // HPL runs on the CPUs from catalog figures: no LLM runtime setup to have calibrated.
    if !meta.calibrated_setups.is_empty() && s.workload.kind != WorkloadKind::Hpl {
        for setup in scenario_setups(s) {
            let what = format!(
                "{} {} over {} with {} weights on `{}`",
                setup.engine,
                setup.parallelism,
                if setup.fabric == "-" { "one node" } else { &setup.fabric },
                setup.quant_family,
                setup.chip
            );
            match meta.calibrated_setups.iter().find(|c| same_setup(c, &setup)) {
                None => push(format!("extrapolated: no calibration row ran {what}")),
                Some(c) if setup.max_concurrency > c.max_concurrency => push(format!(
                    "extrapolated: concurrency {} beyond the {} measured for {what}",
                    if setup.max_concurrency == UNBOUNDED {
                        "unbounded (Poisson arrivals, no max_batch)".to_string()
                    } else {
                        setup.max_concurrency.to_string()
                    },
                    c.max_concurrency
                )),
                Some(_) => {}
            }
        }
    }
    if !meta.calibrated_mechanisms.is_empty() && s.workload.kind != WorkloadKind::Hpl {
        let rt = s.engine.kind.runtime();
        for m in s.model.mechanisms() {
            // An entry without a runtime (profiles of 2026-12-05) covers every runtime.
            let on = mechanism_on(m, rt);
            if meta.calibrated_mechanisms.iter().any(|c| c == m || *c == on) {
                continue;
            }
            let prefix = format!("{m} on ");
            let elsewhere: Vec<&str> = meta.calibrated_mechanisms.iter().filter_map(|c| c.strip_prefix(&prefix)).collect();
            if elsewhere.is_empty() {
                push(format!("extrapolated: no calibration row's model has {m} ({})", s.model.arch));
            } else {
                push(format!(
                    "extrapolated: no calibration row ran {m} on {} ({}; measured on {})",
                    rt.id(),
                    s.model.arch,
                    elsewhere.join(", ")
                ));
            }
        }
    }
    if !meta.calibrated_kernels.is_empty() && s.workload.kind != WorkloadKind::Hpl {
        for k in scenario_kernels(s) {
            if !meta.calibrated_kernels.contains(&k) {
                push(format!("extrapolated: no calibration row ran {k}"));
            }
        }
    }
    let ctx = s.workload.context_tokens + s.workload.prompt_tokens + s.workload.generate_tokens;
    if meta.calibrated_max_context > 0 && ctx > meta.calibrated_max_context {
        push(format!("context {ctx} beyond the {} calibrated", meta.calibrated_max_context));
    }
    Envelope {
        profile: profile.meta.name.clone(),
        status: if reasons.is_empty() { "inside".into() } else { "extrapolation".into() },
        reasons,
        notes: tcp_only_note(s).into_iter().chain(replicas_note(s)).collect(),
    }
}

/// What a replicated run assumes of its load balancer, which the twin does not simulate.
pub fn replicas_note(s: &Scenario) -> Option<String> {
    (s.replicas > 1).then(|| {
        format!(
            "{} replicas of {} node(s), each its own server: the load balancer is assumed, not simulated (users split evenly, a Poisson stream thinned to 1/{} each, a trace dealt round-robin)",
            s.replicas,
            s.nodes.len(),
            s.replicas
        )
    })
}
