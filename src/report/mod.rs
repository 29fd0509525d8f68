//! Rendering: the run table, JSON, atomic result files, the catalog listing.

use std::fmt::Write as _;

use crate::catalog::Catalog;
use crate::estimate::Estimate;
use crate::scenario::ErrorKind;

/// The short human table for `supernode run`.
pub fn run_table(e: &Estimate) -> String {
    run_table_with(e, &Intervals::new())
}

/// Prediction intervals by output key (see [`crate::calibrate::interval`]).
pub type Intervals = std::collections::BTreeMap<String, crate::calibrate::interval::Interval>;

/// ` (90%: p5-p95)` for output `key` when it has an interval, formatted like its value.
fn range(iv: &Intervals, key: &str, decimals: usize) -> String {
    iv.get(key).map_or_else(String::new, |i| format!("  (90%: {:.decimals$}-{:.decimals$})", i.p5, i.p95))
}

/// The table's second line: the nodes, the fabric and topology, then `what` ran on them.
fn cluster_line(s: &mut String, e: &Estimate, what: &str) {
    let replicas = if e.replicas > 1 { format!(" as {} replicas behind a load balancer", e.replicas) } else { String::new() };
    let _ = writeln!(s, "  {} node(s): {} over {} ({}){replicas}; {what}", e.nodes.len(), summarize_nodes(&e.nodes), e.fabric, e.topology);
}

/// [`run_table`] with each headline's 90% interval as a range beside it.
pub fn run_table_with(e: &Estimate, iv: &Intervals) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", e.name);
    if let (Some(g), Some(h)) = (e.hpl_gflops, e.hpl_problem) {
        cluster_line(&mut s, e, &format!("HPL N = {}, NB = {}, P x Q = {} x {} (one MPI rank per core)", h.n, h.nb, h.p, h.q));
        let per = e.node_power_w.iter().map(|p| format!("{p:.0}")).collect::<Vec<_>>().join(", ");
        row_to(&mut s, "fits", "yes".into());
        row_to(&mut s, "HPL", format!("{g:.1} Gflops{}", range(iv, "hpl_gflops", 1)));
        row_to(&mut s, "cluster power", format!("{:.1} W  (per node: {per}; ranks busy-poll)", e.cluster_power_w));
        row_to(&mut s, "hardware cost", format!("${:.0}", e.cost_usd));
        fault_rows(&mut s, e);
        return s;
    }
    cluster_line(&mut s, e, &format!("{} {} on {} ({})", e.model, e.quant, e.engine, e.parallelism));
    let row = row_to;
    // An estimate exists only for a scenario that fits (see `estimate::Fits`).
    row(&mut s, "fits", "yes".into());
    if let Some(sv) = &e.serve {
        serve_rows(&mut s, e, sv, iv);
    } else {
        row(&mut s, "decode", format!("{:.2} tok/s{}", e.decode_tokens_per_s, range(iv, "decode_tokens_per_s", 2)));
        row(
            &mut s,
            "prefill",
            format!(
                "{:.1} tok/s ({} prompt tokens{}){}",
                e.prefill_tokens_per_s,
                e.prompt_tokens,
                if e.context_tokens > 0 { format!(" after {} in context", e.context_tokens) } else { String::new() },
                range(iv, "prefill_tokens_per_s", 1)
            ),
        );
        row(&mut s, "time to first token", format!("{:.3} s{}", e.ttft_s, range(iv, "ttft_s", 3)));
        row(&mut s, "TPOT p50 / p99", format!("{:.2} / {:.2} ms", e.tpot_ms.p50, e.tpot_ms.p99));
    }
    if !e.decode_gpu_busy_percent.is_empty() {
        let per: Vec<String> = e.decode_gpu_busy_percent.iter().map(|p| format!("{p:.0}")).collect();
        // Replicas: the first replica's nodes' waits; a replica with no request is idle.
        let first = e.decode_gpu_busy_percent.len() / e.replicas.max(1);
        let waits = e.decode_gpu_busy_percent[..first].iter().any(|p| *p < 99.5);
        let idle = e.decode_gpu_busy_percent[first..].contains(&0.0);
        let note = match (waits, idle) {
            (true, false) => "  (the rest waits on the host, syncs, collectives and transfers)",
            (true, true) => "  (the rest waits on the host, syncs, collectives and transfers; 0: a replica with no request)",
            (false, true) => "  (0: a replica with no request)",
            (false, false) => "",
        };
        row(&mut s, "GPU busy in decode", format!("{}%{note}", per.join(", ")));
    }
    row(
        &mut s,
        "cluster power",
        format!(
            "{:.1} W {}  (per node: {}){}",
            e.cluster_power_w,
            if e.serve.is_some() { "over the run" } else { "in decode" },
            e.node_power_w.iter().map(|p| format!("{p:.0}")).collect::<Vec<_>>().join(", "),
            range(iv, "cluster_power_w", 1)
        ),
    );
    if e.serve.is_some() {
        // A serving run interleaves prefill chunks with decode steps: one power over the run.
        row(&mut s, "power by phase", "prefill and decode interleave: the cluster power above is over the whole run".to_string());
    } else {
        row(
            &mut s,
            "power by phase",
            format!("prefill {:.1} W, decode {:.1} W, peak {:.1} W", e.prefill_power_w, e.cluster_power_w, e.peak_power_w),
        );
    }
    row(&mut s, "energy", format!("{:.2} J/token{}", e.energy_j_per_token, range(iv, "energy_j_per_token", 2)));
    row(&mut s, "hardware cost", format!("${:.0}  ({} cables{})", e.cost_usd, e.cables, switch_note(e)));
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
        if let Some(cmd) = &m.raise_wired_limit {
            row(&mut s, "", format!("fits only with the wired limit raised above the macOS default: {cmd}"));
        }
    }
    let cal = if e.calibration.status == "inside" {
        format!("inside the calibrated envelope ({})", e.calibration.profile)
    } else {
        format!("EXTRAPOLATION ({}): {}", e.calibration.profile, e.calibration.reasons.join("; "))
    };
    row(&mut s, "calibration", cal);
    for note in &e.calibration.notes {
        row(&mut s, "note", note.clone());
    }
    fault_rows(&mut s, e);
    s
}

/// One `key value` row of the run table.
fn row_to(s: &mut String, k: &str, v: String) {
    let _ = writeln!(s, "  {k:<22} {v}");
}

/// The availability rows of a run with `[faults]`, and its first events.
fn fault_rows(s: &mut String, e: &Estimate) {
    let Some(f) = &e.faults else { return };
    let row = row_to;
    row(s, "faults over", format!("{} days", f.horizon_days));
    row(
        s,
        "availability",
        format!("{:.4} %  (serving at >= {:.0}% of the fault-free rate)", f.availability * 100.0, f.useful_rate_fraction * 100.0),
    );
    let degraded: Vec<String> = f.degraded_s.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
    row(s, "degraded (s)", if degraded.is_empty() { "none".into() } else { degraded.join(", ") });
    if let (Some(t), Some(free)) = (f.expected_tokens_per_day, f.fault_free_tokens_per_day) {
        row(s, "tokens per day", format!("{t:.0}  (fault-free {free:.0}; goodput {:.2} tok/s)", f.goodput_tokens_per_s.unwrap_or(0.0)));
    }
    if let Some(g) = f.hpl_goodput_gflops {
        row(s, "HPL goodput", format!("{g:.1} Gflops  (completed runs only)"));
    }
    row(s, "requests", format!("{} completed, {} retried, {} failed", f.requests_completed, f.requests_retried, f.requests_failed));
    let events: Vec<String> = f.events.iter().map(|(k, v)| format!("{k} {v}")).collect();
    row(s, "fault events", if events.is_empty() { "none".into() } else { events.join(", ") });
    let lost: Vec<String> = f.time_lost_s.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
    row(s, "time lost (s)", if lost.is_empty() { "none".into() } else { lost.join(", ") });
    for l in &f.log {
        let effect = if l.effect.is_empty() { String::new() } else { format!(": {}", l.effect) };
        let _ = writeln!(s, "    t={:>10.1} s  {}{effect}", l.t_s, l.event);
    }
}

/// The rows of a serving run: rates, latency percentiles, SLO, queue and KV.
/// The serving headlines' 90% intervals (`decode_tokens_per_s` is the aggregate rate, `ttft_s`
/// the mean TTFT) print beside them.
fn serve_rows(s: &mut String, e: &Estimate, sv: &crate::estimate::ServeMetrics, iv: &Intervals) {
    let row = row_to;
    row(
        s,
        "aggregate decode",
        format!(
            "{:.2} tok/s  (goodput {:.2}){}",
            sv.aggregate_decode_tokens_per_s,
            sv.goodput_tokens_per_s,
            range(iv, "decode_tokens_per_s", 2)
        ),
    );
    let none = sv.none_completed();
    let per_request = if none {
        "n/a (no request completed in the window)".to_string()
    } else {
        format!("{:.2} tok/s", sv.per_request_decode_tokens_per_s)
    };
    row(s, "per-request decode", per_request);
    row(s, "requests", format!("{} completed, {} rejected", sv.requests_completed, sv.requests_rejected));
    let q = |p: &crate::estimate::Quantiles, scale: f64, unit: &str| {
        if none { "n/a".to_string() } else { format!("{:.3} / {:.3} / {:.3} {unit}", p.p50 * scale, p.p90 * scale, p.p99 * scale) }
    };
    let ttft_mean = match iv.get("ttft_s") {
        Some(i) if !none => format!("  (mean {:.3} s, 90%: {:.3}-{:.3})", e.ttft_s, i.p5, i.p95),
        _ => String::new(),
    };
    row(s, "TTFT p50 / p90 / p99", format!("{}{ttft_mean}", q(&sv.ttft_percentiles_s, 1.0, "s")));
    let tpot = crate::estimate::Quantiles { p50: e.tpot_ms.p50, p90: e.tpot_ms.p90.unwrap_or(0.0), p99: e.tpot_ms.p99 };
    row(s, "TPOT p50 / p90 / p99", q(&tpot, 1.0, "ms"));
    row(s, "e2e p50 / p90 / p99", q(&sv.e2e_s, 1.0, "s"));
    if let (Some(a), Some(met)) = (sv.slo_attainment, sv.slo_met) {
        row(s, "SLO", format!("{:.1}% of requests meet it; p99 {}", a * 100.0, if met { "meets it" } else { "MISSES it" }));
    }
    row(s, "batch / queue", format!("mean batch {:.2}, mean queue {:.2} (peak {})", sv.mean_batch, sv.mean_queue, sv.peak_queue));
    row(s, "KV cache", format!("peak {:.1}% of what the wired limit leaves", sv.peak_kv_percent));
    row(s, "scheduler", sv.scheduler.clone());
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

/// [`to_json`] with each headline's interval as `<key>_interval: {"p5", "p50", "p95"}` after
/// the estimate's own keys (which stay as they are).
pub fn to_json_with(e: &Estimate, iv: &Intervals) -> String {
    #[derive(serde::Serialize)]
    struct With<'a> {
        #[serde(flatten)]
        estimate: &'a Estimate,
        #[serde(flatten)]
        intervals: std::collections::BTreeMap<String, &'a crate::calibrate::interval::Interval>,
    }
    let intervals = iv.iter().map(|(k, v)| (format!("{k}{}", crate::calibrate::interval::SUFFIX), v)).collect();
    serde_json::to_string_pretty(&With { estimate: e, intervals }).expect("estimate serializes")
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

/// What a trace holds and what its cap left out, for the trace's metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceTally {
    /// Decode steps asked for (`--trace-steps`, at most the generation).
    pub decode_steps: u64,
    /// Tasks written.
    pub written: u64,
    /// Tasks of the step that reached the cap, not written.
    pub not_written: u64,
    /// Prefill chunks and decode steps simulated while tracing.
    pub steps_simulated: u64,
    /// Prefill chunks and decode steps not simulated once the cap was reached.
    pub steps_not_simulated: u64,
}

/// A traced run in the Chrome trace-event format that Perfetto (ui.perfetto.dev) and
/// chrome://tracing open, written as the run goes (memory flat in the trace's length): one
/// process per node, one thread per resource (GPU stream, CPU, each link direction; named where
/// first used), one complete event per task, timestamps in microseconds.
#[derive(Debug)]
pub struct TraceWriter<W: std::io::Write> {
    w: W,
    threads: Vec<(u32, String)>,
    any_item: bool,
    error: Option<std::io::Error>,
    serve: Option<serde_json::Value>,
}

impl<W: std::io::Write> TraceWriter<W> {
    /// Starts the document: the process (node) names.
    pub fn begin(w: W, plan: &crate::engine::Plan) -> Self {
        use serde_json::json;
        let mut t = TraceWriter { w, threads: Vec::new(), any_item: false, error: None, serve: None };
        t.raw("{\"traceEvents\":[");
        for (i, node) in plan.nodes.iter().enumerate() {
            t.item(&json!({"ph": "M", "name": "process_name", "pid": i, "tid": 0, "args": {"name": format!("node{i} {}", node.id)}}));
            t.item(&json!({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0, "args": {"sort_index": i}}));
        }
        t
    }

    fn raw(&mut self, s: &str) {
        if self.error.is_none() {
            if let Err(e) = self.w.write_all(s.as_bytes()) {
                self.error = Some(e);
            }
        }
    }

    fn item(&mut self, v: &serde_json::Value) {
        if self.error.is_none() {
            // Every item but the first follows a comma.
            let r = if self.any_item { self.w.write_all(b",") } else { Ok(()) };
            if let Err(e) = r.and_then(|()| serde_json::to_writer(&mut self.w, v).map_err(std::io::Error::from)) {
                self.error = Some(e);
            }
        }
        self.any_item = true;
    }

    /// Writes one task (and its thread's name, the first time the thread is seen).
    pub fn event(&mut self, e: &crate::estimate::TraceEvent<'_>) {
        use serde_json::json;
        let tid = match self.threads.iter().position(|(n, r)| *n == e.node && r == e.resource) {
            Some(k) => k,
            None => {
                self.threads.push((e.node, e.resource.to_string()));
                let k = self.threads.len() - 1;
                self.item(&json!({"ph": "M", "name": "thread_name", "pid": e.node, "tid": k, "args": {"name": e.resource}}));
                k
            }
        };
        self.item(&json!({
            "ph": "X",
            "name": e.label,
            "cat": e.phase,
            "pid": e.node,
            "tid": tid,
            "ts": e.start as f64 / 1e3,
            "dur": (e.end - e.start) as f64 / 1e3,
            "args": match e.ops {
                Some(ops) => json!({"phase": e.phase, "step": e.step, "ops": ops}),
                None => json!({"phase": e.phase, "step": e.step}),
            },
        }));
    }

    /// Writes one track per request of a serving run, in a process `requests` after the nodes
    /// (`pid` = the node count): its phases `queued` (arrival to admission), `prefill` (to the
    /// first token) and `decode` (to the last), then an instant `done`; a turned-away request is
    /// one instant `rejected`. Each carries its id, prompt and output tokens and its TTFT.
    /// `window_ns` and `forwards` (traced forwards) go into the document's metadata.
    pub fn requests(&mut self, pid: u32, records: &[crate::estimate::serve::RequestRecord], window_ns: (u64, u64), forwards: u64) {
        use serde_json::json;
        self.item(&json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "requests"}}));
        self.item(&json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}));
        let us = |t: u64| t as f64 / 1e3;
        for r in records {
            let tid = r.id;
            self.item(&json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": format!("request {}", r.id)}}));
            let mut args = json!({"id": r.id, "prompt_tokens": r.prompt, "output_tokens": r.output});
            if r.rejected {
                self.item(&json!({"ph": "i", "s": "t", "name": "rejected", "cat": "request", "pid": pid, "tid": tid, "ts": us(r.done), "args": args}));
                continue;
            }
            args["ttft_s"] = json!((r.first_token - r.arrival) as f64 / 1e9);
            for (name, a, b) in
                [("queued", r.arrival, r.admitted), ("prefill", r.admitted, r.first_token), ("decode", r.first_token, r.done)]
            {
                self.item(&json!({"ph": "X", "name": name, "cat": "request", "pid": pid, "tid": tid, "ts": us(a), "dur": us(b) - us(a), "args": args}));
            }
            self.item(
                &json!({"ph": "i", "s": "t", "name": "done", "cat": "request", "pid": pid, "tid": tid, "ts": us(r.done), "args": args}),
            );
        }
        self.serve = Some(json!({
            "window_s": [window_ns.0 as f64 / 1e9, window_ns.1 as f64 / 1e9],
            "forwards_traced": forwards,
            "requests": records.len(),
        }));
    }

    /// Ends the document with its metadata (what was traced, and what the cap left out; for a
    /// serving run its window, forwards and requests) and returns the writer, or the first
    /// write error.
    pub fn finish(mut self, plan: &crate::engine::Plan, tally: &TraceTally) -> std::io::Result<W> {
        let meta = serde_json::json!({
            "tool": "supernode",
            "model": plan.model.id,
            "quant": plan.quant.id,
            "decode_steps_traced": tally.decode_steps,
            "tasks_written": tally.written,
            "tasks_not_written": tally.not_written,
            "steps_simulated": tally.steps_simulated,
            "steps_not_simulated": tally.steps_not_simulated,
        });
        let mut meta = meta;
        if let Some(sv) = self.serve.take() {
            meta["serve"] = sv;
        }
        self.raw(&format!("],\"displayTimeUnit\":\"ns\",\"metadata\":{meta}}}"));
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.w),
        }
    }
}

/// The catalog as a human listing.
pub fn catalog_table(c: &Catalog, section: Option<&str>) -> String {
    let mut s = String::new();
    let want = |x: &str| section.is_none_or(|w| w == x);
    // A user entry says which file defined it, what it extends and which figures are assumed.
    let origin = |s: &mut String, section: &str, id: &str| {
        if let Some(o) = c.user.iter().find(|o| o.section == section && o.id == id) {
            let like = o.like.as_ref().map(|l| format!(", like {l}")).unwrap_or_default();
            let assumed = if o.assumed.is_empty() { String::new() } else { format!("; assumed (no source): {}", o.assumed.join(", ")) };
            let _ = writeln!(s, "      user entry: {}{like}{assumed}", o.file);
        }
    };
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
            origin(&mut s, "node", &n.id);
            if let Some(chip) = &n.calibrated_as {
                let _ = writeln!(s, "      calibrated_as: {chip} (chip `{}` never profiled)", n.chip);
            }
            if let Some(t) = n.mlx_gemm_tflops {
                let _ = writeln!(s, "      MLX GEMM on the neural accelerators: {t} TFLOPS");
            }
            if let Some(t) = n.fp8_gemm_tflops {
                let _ = writeln!(s, "      FP8 GEMM on the tensor cores (vLLM, SGLang FP8 checkpoints): {t} TFLOPS");
            }
            if let Some(r) = n.read_ceiling_gbs {
                let _ = writeln!(s, "      measured sustained read: {r} GB/s (no stream runs faster)");
            }
            if !n.power_modes_w.is_empty() {
                let chosen =
                    n.power_mode_w.map_or(" (none chosen: cluster.power_mode_w picks one)".to_string(), |w| format!(", running at {w} W"));
                let _ = writeln!(s, "      power modes: {:?} W{chosen}", n.power_modes_w);
            }
            if !n.planner {
                let _ = writeln!(s, "      not in `plan`'s default search (name it with --nodes)");
            }
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
            origin(&mut s, "fabric", &f.id);
            if !f.planner {
                let _ = writeln!(s, "      not in `plan`'s default search (name it with --fabrics)");
            }
            for (k, v) in &f.sources {
                let _ = writeln!(s, "      {k}: {v}");
            }
        }
    }
    if want("models") {
        let _ = writeln!(s, "MODELS");
        // The id column as wide as the longest id (user catalogs add their own).
        let w = c.models.iter().map(|(p, _)| p.id.len()).max().unwrap_or(0).max(24);
        let _ = writeln!(
            s,
            "  {:<w$} {:>6} {:>7} {:>9} {:>9} {:>10} {:>11}  source",
            "id", "layers", "hidden", "total B", "active B", "KV KiB/tok", "default q"
        );
        for (p, m) in &c.models {
            let _ = writeln!(
                s,
                "  {:<w$} {:>6} {:>7} {:>9.1} {:>9.1} {:>10.1} {:>11}  {}",
                p.id,
                m.layers,
                m.hidden,
                m.total_params() as f64 / 1e9,
                m.active_params() as f64 / 1e9,
                m.kv_bytes(1) as f64 / 1024.0,
                p.default_quant,
                p.source
            );
            origin(&mut s, "model", &p.id);
        }
    }
    if want("quants") {
        let _ = writeln!(s, "QUANTIZATIONS");
        // Bits depend on the tensor (GGUF rules by layer and role): shown for a middle layer of
        // DeepSeek V3's shapes, attention projections and routed experts.
        let shape = c.model("deepseek-v3.1").map(|(_, m)| m.quant_shape());
        let _ = writeln!(s, "  {:<11} {:>6} {:>6} {:>7}  source", "id", "family", "attn", "experts");
        for q in &c.quants {
            let (attn, experts) = shape.as_ref().map_or((0.0, 0.0), |sh| {
                (
                    q.class_format(crate::llm::TensorClass::Attention, sh).bits,
                    q.class_format(crate::llm::TensorClass::RoutedExpert, sh).bits,
                )
            });
            let _ = writeln!(s, "  {:<11} {:>6} {:>6.2} {:>7.2}  {}", q.id, q.family.id(), attn, experts, q.source);
            origin(&mut s, "quant", &q.id);
        }
    }
    if want("engines") {
        engines_table(&mut s, c);
    }
    s
}

/// What the hardware cost counts for a switched cluster's switch: its catalog price, or that the
/// catalog has none for the fabric (the cost then leaves it out; a user catalog may set
/// `switch_usd`). Empty when the cluster has no switch.
fn switch_note(e: &Estimate) -> String {
    if e.topology != "switch" || e.nodes.len() < 2 {
        return String::new();
    }
    match crate::catalog::catalog().fabric(&e.fabric) {
        Some(f) if f.switch_usd > 0.0 => format!(", a ${:.0} switch", f.switch_usd),
        _ => format!(", and a switch: no `{}` switch price in the catalog, not counted", e.fabric),
    }
}

/// The `engines` section of [`catalog_table`]: every runtime module with its names, kernel
/// library, host-cost table, the splits it allows, the chips it runs on and how a measurement
/// row of it is read.
fn engines_table(s: &mut String, c: &Catalog) {
    let _ = writeln!(s, "ENGINES");
    let _ = writeln!(s, "  {:<14} {:<10} {:<16} {:<28} names", "id", "kernels", "host costs", "splits on a cluster");
    for r in crate::engine::RUNTIMES.iter().filter(|r| r.names().first() == Some(&r.id())) {
        use crate::engine::Parallelism;
        let splits: Vec<&str> = [
            Parallelism::Tensor,
            Parallelism::Pipeline,
            Parallelism::Expert,
            Parallelism::TensorPipeline { stages: Parallelism::DEFAULT_STAGES },
        ]
        .into_iter()
        .filter(|&p| r.check_split(r.id(), p).is_ok())
        .map(|p| p.id())
        .collect();
        let splits = if splits.is_empty() { "one node".to_string() } else { splits.join(", ") };
        let host = r.host_key().map_or("the runtime's".to_string(), |k| format!("engines.{k}"));
        let _ = writeln!(s, "  {:<14} {:<10} {:<16} {:<28} {}", r.id(), r.kernels().id(), host, splits, r.names().join(", "));
        let mut chips: Vec<&str> = c.nodes.iter().filter(|n| r.runs_on(n)).map(|n| n.chip.as_str()).collect();
        chips.sort_unstable();
        chips.dedup();
        let _ = writeln!(s, "      runs on chips: {}", if chips.is_empty() { "none in the catalog".to_string() } else { chips.join(", ") });
        if let Some(a) = r.measurement_assumption() {
            let _ = writeln!(s, "      a measurement row of it is read as: {a}");
        }
    }
    // Aliases with a module of their own (ollama runs llama.cpp's kernels under its name).
    for r in crate::engine::RUNTIMES.iter().filter(|r| r.names().first() != Some(&r.id())) {
        let _ = writeln!(s, "  {:<14} {:<10} runs {}'s kernels under its own name ({})", r.names()[0], r.kernels().id(), r.id(), r.label());
    }
}
pub mod charts;
pub mod html;
