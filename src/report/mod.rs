//! Rendering: the run table, JSON, atomic result files, the catalog listing.

use std::fmt::Write as _;

use crate::catalog::Catalog;
use crate::estimate::Estimate;
use crate::scenario::ErrorKind;

/// The short human table for `supernode run`.
pub fn run_table(e: &Estimate) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", e.name);
    if let (Some(g), Some(h)) = (e.hpl_gflops, e.hpl_problem) {
        let _ = writeln!(
            s,
            "  {} node(s): {} over {} ({}); HPL N = {}, NB = {}, P x Q = {} x {} (one MPI rank per core)",
            e.nodes.len(),
            summarize_nodes(&e.nodes),
            e.fabric,
            e.topology,
            h.n,
            h.nb,
            h.p,
            h.q
        );
        let per = e.node_power_w.iter().map(|p| format!("{p:.0}")).collect::<Vec<_>>().join(", ");
        row_to(&mut s, "fits", "yes".into());
        row_to(&mut s, "HPL", format!("{g:.1} Gflops"));
        row_to(&mut s, "cluster power", format!("{:.1} W  (per node: {per}; ranks busy-poll)", e.cluster_power_w));
        row_to(&mut s, "hardware cost", format!("${:.0}", e.cost_usd));
        return s;
    }
    let _ = writeln!(
        s,
        "  {} node(s): {} over {} ({}); {} {} on {} ({})",
        e.nodes.len(),
        summarize_nodes(&e.nodes),
        e.fabric,
        e.topology,
        e.model,
        e.quant,
        e.engine,
        e.parallelism
    );
    let row = row_to;
    // An estimate exists only for a scenario that fits (see `estimate::Fits`).
    row(&mut s, "fits", "yes".into());
    row(&mut s, "decode", format!("{:.2} tok/s", e.decode_tokens_per_s));
    row(&mut s, "prefill", format!("{:.1} tok/s ({} prompt tokens)", e.prefill_tokens_per_s, e.prompt_tokens));
    row(&mut s, "time to first token", format!("{:.3} s", e.ttft_s));
    row(&mut s, "TPOT p50 / p99", format!("{:.2} / {:.2} ms", e.tpot_ms.p50, e.tpot_ms.p99));
    if !e.decode_gpu_busy_percent.is_empty() {
        let per: Vec<String> = e.decode_gpu_busy_percent.iter().map(|p| format!("{p:.0}")).collect();
        let waits = e.decode_gpu_busy_percent.iter().any(|p| *p < 99.5);
        let note = if waits { "  (the rest waits on syncs, collectives and transfers)" } else { "" };
        row(&mut s, "GPU busy in decode", format!("{}%{note}", per.join(", ")));
    }
    row(
        &mut s,
        "cluster power",
        format!(
            "{:.1} W in decode  (per node: {})",
            e.cluster_power_w,
            e.node_power_w.iter().map(|p| format!("{p:.0}")).collect::<Vec<_>>().join(", ")
        ),
    );
    row(
        &mut s,
        "power by phase",
        format!("prefill {:.1} W, decode {:.1} W, peak {:.1} W", e.prefill_power_w, e.cluster_power_w, e.peak_power_w),
    );
    row(&mut s, "energy", format!("{:.2} J/token", e.energy_j_per_token));
    row(&mut s, "hardware cost", format!("${:.0}  ({} cables)", e.cost_usd, e.cables));
    row(&mut s, "cost per Mtok", format!("${:.2}  (${:.0} per tok/s)", e.usd_per_mtok, e.usd_per_token_per_s));
    for (i, m) in e.memory.iter().enumerate() {
        row(
            &mut s,
            &format!("memory node {i}"),
            format!(
                "{:.1} / {:.1} GB  (weights {:.1}, KV {:.2}, runtime {:.1}; layers {}..{})",
                m.total_gb, m.limit_gb, m.weights_gb, m.kv_cache_gb, m.overhead_gb, m.layers[0], m.layers[1]
            ),
        );
    }
    let cal = if e.calibration.status == "inside" {
        format!("inside the calibrated envelope ({})", e.calibration.profile)
    } else {
        format!("EXTRAPOLATION ({}): {}", e.calibration.profile, e.calibration.reasons.join("; "))
    };
    row(&mut s, "calibration", cal);
    s
}

/// One `key value` row of the run table.
fn row_to(s: &mut String, k: &str, v: String) {
    let _ = writeln!(s, "  {k:<22} {v}");
}

fn summarize_nodes(nodes: &[String]) -> String {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in nodes {
        match out.iter_mut().find(|(id, _)| id == n) {
            Some((_, c)) => *c += 1,
            None => out.push((n.clone(), 1)),
        }
    }
    out.iter().map(|(id, c)| if *c > 1 { format!("{c}x {id}") } else { id.clone() }).collect::<Vec<_>>().join(" + ")
}

/// Pretty JSON of an estimate (deterministic key order, fixed rounding).
pub fn to_json(e: &Estimate) -> String {
    serde_json::to_string_pretty(e).expect("estimate serializes")
}

/// The JSON a scenario that cannot run prints (DESIGN.md "Contracts"): `fits` false, the
/// `error` text, and its `kind` when it is a scenario or estimate error.
pub fn error_json(kind: Option<ErrorKind>, message: &str) -> String {
    let mut v = serde_json::json!({"fits": false, "error": message});
    if let Some(k) = kind {
        v["kind"] = serde_json::json!(k);
    }
    v.to_string()
}

/// A traced run in the Chrome trace-event format that Perfetto (ui.perfetto.dev) and
/// chrome://tracing open: one process per node, one thread per resource (GPU stream, CPU, each
/// link direction), one complete event per task, timestamps in microseconds.
pub fn trace_json(plan: &crate::engine::Plan, trace: &crate::estimate::Trace) -> String {
    use serde_json::json;
    let mut threads: Vec<(u32, &str)> = Vec::new();
    for e in &trace.events {
        if !threads.iter().any(|(n, r)| *n == e.node && *r == e.resource) {
            threads.push((e.node, &e.resource));
        }
    }
    let tid = |node: u32, res: &str| threads.iter().position(|(n, r)| *n == node && *r == res).unwrap_or(0);
    let mut events = Vec::with_capacity(trace.events.len() + plan.n() + threads.len());
    for (i, node) in plan.nodes.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "process_name", "pid": i, "tid": 0, "args": {"name": format!("node{i} {}", node.id)}}));
        events.push(json!({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0, "args": {"sort_index": i}}));
    }
    for (k, (node, res)) in threads.iter().enumerate() {
        events.push(json!({"ph": "M", "name": "thread_name", "pid": node, "tid": k, "args": {"name": res}}));
    }
    for e in &trace.events {
        events.push(json!({
            "ph": "X",
            "name": e.label,
            "cat": e.phase,
            "pid": e.node,
            "tid": tid(e.node, &e.resource),
            "ts": e.start as f64 / 1e3,
            "dur": (e.end - e.start) as f64 / 1e3,
            "args": match &e.ops {
                Some(ops) => json!({"phase": e.phase, "step": e.step, "ops": ops}),
                None => json!({"phase": e.phase, "step": e.step}),
            },
        }));
    }
    let doc = json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "metadata": {
            "tool": "supernode",
            "model": plan.model.id,
            "quant": plan.quant.id,
            "decode_steps_traced": trace.max_decode_steps,
        },
    });
    serde_json::to_string(&doc).expect("trace serializes")
}

/// The catalog as a human listing.
pub fn catalog_table(c: &Catalog, section: Option<&str>) -> String {
    let mut s = String::new();
    let want = |x: &str| section.is_none_or(|w| w == x);
    if want("nodes") {
        let _ = writeln!(s, "NODES");
        let _ = writeln!(
            s,
            "  {:<30} {:>7} {:>8} {:>7} {:>9} {:>7} {:>5}  name",
            "id", "mem GB", "BW GB/s", "TFLOPS", "price $", "idle W", "RDMA"
        );
        for n in &c.nodes {
            let _ = writeln!(
                s,
                "  {:<30} {:>7} {:>8.1} {:>7.1} {:>9.0} {:>7.1} {:>5}  {}",
                n.id, n.memory_gb, n.mem_bw_gbs, n.fp16_tflops, n.price_usd, n.idle_w, n.rdma_ports, n.name
            );
            for (k, v) in &n.sources {
                let _ = writeln!(s, "      {k}: {v}");
            }
        }
    }
    if want("fabrics") {
        let _ = writeln!(s, "FABRICS");
        let _ = writeln!(s, "  {:<10} {:>6} {:>11} {:>8}  {:<22} name", "id", "kind", "latency us", "GB/s", "topologies");
        for f in &c.fabrics {
            let _ = writeln!(
                s,
                "  {:<10} {:>6} {:>11.2} {:>8.3}  {:<22} {}",
                f.id,
                format!("{:?}", f.transport).to_lowercase(),
                f.latency_us,
                f.bandwidth_gbs,
                f.topologies.iter().map(|t| t.id()).collect::<Vec<_>>().join(","),
                f.name
            );
            for (k, v) in &f.sources {
                let _ = writeln!(s, "      {k}: {v}");
            }
        }
    }
    if want("models") {
        let _ = writeln!(s, "MODELS");
        let _ = writeln!(
            s,
            "  {:<24} {:>6} {:>7} {:>9} {:>9} {:>10} {:>11}  source",
            "id", "layers", "hidden", "total B", "active B", "KV KiB/tok", "default q"
        );
        for (p, m) in &c.models {
            let _ = writeln!(
                s,
                "  {:<24} {:>6} {:>7} {:>9.1} {:>9.1} {:>10.1} {:>11}  {}",
                p.id,
                m.layers,
                m.hidden,
                m.total_params() as f64 / 1e9,
                m.active_params() as f64 / 1e9,
                m.kv_bytes(1) as f64 / 1024.0,
                p.default_quant,
                p.source
            );
        }
    }
    if want("quants") {
        let _ = writeln!(s, "QUANTIZATIONS");
        let _ = writeln!(s, "  {:<11} {:>6} {:>6} {:>7}  source", "id", "family", "bits", "experts");
        for q in &c.quants {
            let _ = writeln!(
                s,
                "  {:<11} {:>6} {:>6.2} {:>7}  {}",
                q.id,
                q.family.id(),
                q.bits,
                q.expert_bits.map_or("-".into(), |b| format!("{b:.2}")),
                q.source
            );
        }
    }
    s
}
pub mod charts;
