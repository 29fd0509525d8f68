//! Physical invariants over the whole catalog (ARCHITECTURE.md, "Physical invariants"; 18 nodes
//! with the issue-21 boxes, every model): a
//! prediction that breaks one is a bug, whatever it fits. Each test walks a grid of catalog
//! nodes x models x quantizations x runtimes x node counts x contexts (jitter off, so two
//! scenarios compare exactly), collects every violation with the scenario that shows it, and
//! fails listing them all.

use std::sync::OnceLock;

use supernode::catalog::catalog;
use supernode::engine::{NetCost, lower_step};
use supernode::estimate::{Estimate, estimate, trace_plan};
use supernode::hw::{Backend, Os};
use supernode::profile::Profile;
use supernode::scenario::{Scenario, ScenarioBuilder};

/// Slack for rounding (the rates are printed to 4-6 significant digits): 0.5%.
const TOL: f64 = 1.005;

/// The default profile without jitter: two scenarios differ only in what the test varies.
fn profile() -> &'static Profile {
    static P: OnceLock<Profile> = OnceLock::new();
    P.get_or_init(|| {
        let mut p = Profile::default_profile();
        p.misc.jitter_cv = 0.0;
        p
    })
}

/// One scenario of the grid, described as a user would write it.
#[derive(Clone, Debug)]
struct Case {
    node: &'static str,
    count: usize,
    fabric: &'static str,
    model: &'static str,
    quant: &'static str,
    engine: &'static str,
    parallelism: &'static str,
    prompt: u64,
    generate: u64,
    /// Nodes per data-parallel rank (`engine.tensor_ranks`), when set.
    tensor_ranks: Option<i64>,
}

impl Case {
    fn one(node: &'static str, model: &'static str, quant: &'static str, engine: &'static str) -> Case {
        Case { node, count: 1, fabric: "none", model, quant, engine, parallelism: "none", prompt: 128, generate: 8, tensor_ranks: None }
    }

    fn split(mut self, count: usize, fabric: &'static str, engine: &'static str, parallelism: &'static str) -> Case {
        self.count = count;
        self.fabric = fabric;
        self.engine = engine;
        self.parallelism = parallelism;
        self
    }

    fn prompt(mut self, prompt: u64) -> Case {
        self.prompt = prompt;
        self
    }

    fn quant(mut self, quant: &'static str) -> Case {
        self.quant = quant;
        self
    }

    fn tensor_ranks(mut self, ranks: i64) -> Case {
        self.tensor_ranks = Some(ranks);
        self
    }

    fn name(&self) -> String {
        let ranks = self.tensor_ranks.map_or(String::new(), |t| format!(" (tensor_ranks {t})"));
        format!(
            "{}x {} over {}, {} {}, {} {}{ranks}, prompt {}",
            self.count, self.node, self.fabric, self.model, self.quant, self.engine, self.parallelism, self.prompt
        )
    }

    fn scenario(&self) -> Option<Scenario> {
        let mut b = ScenarioBuilder::new(self.name());
        b.nodes(&vec![self.node.to_string(); self.count]).model(self.model).quant(self.quant).engine(self.engine);
        b.parallelism(self.parallelism).tokens(self.prompt, self.generate).seed(1);
        if let Some(t) = self.tensor_ranks {
            b.set("engine.tensor_ranks", &toml::Value::Integer(t)).ok()?;
        }
        if self.count > 1 {
            b.fabric(self.fabric);
            let ring_only = catalog().fabric(self.fabric).is_some_and(|f| f.topologies.iter().all(|t| t.id() != "full-mesh"));
            if ring_only {
                b.topology("switch");
            }
        }
        // Nodes with too few ports for a full mesh (four Sparks, two QSFP each) join through a
        // switch, as people cable them.
        b.build().ok().or_else(|| (self.count > 2).then(|| b.topology("switch").build().ok()).flatten())
    }

    /// The estimate, or `None` when the scenario cannot run (does not fit, illegal split, ...).
    fn run(&self) -> Option<Estimate> {
        estimate(&self.scenario()?, profile()).ok()
    }
}

/// Catalog nodes by the fabrics that join two of them (the fast one first, then its TCP twin).
fn fabrics_of(node: &str) -> (&'static str, &'static str) {
    let n = catalog().node(node).expect("catalog node");
    match (n.os, n.rdma_ports) {
        (Os::Macos, p) if p >= 3 => ("tb5-rdma", "tb5-tcp"),
        (Os::Macos, _) => ("tb4-tcp", "tb4-tcp"),
        _ if n.qsfp_ports > 0 => ("cx7-roce", "cx7-tcp"),
        _ => ("usb4-tcp", "eth-5g"),
    }
}

fn nodes() -> Vec<&'static str> {
    catalog().node_ids()
}

/// Every model preset once (its aliases are the same model).
fn models() -> Vec<&'static str> {
    catalog().models.iter().map(|(p, _)| p.id.as_str()).collect()
}

fn is_mac(node: &str) -> bool {
    catalog().node(node).is_some_and(|n| n.os == Os::Macos)
}

/// Nodes the CUDA engines (vllm, sglang) run on.
fn is_cuda(node: &str) -> bool {
    catalog().node(node).is_some_and(|n| supernode::engine::Runtime::Cuda.runs_on_chip(&n.chip))
}

/// Quantizations per runtime family, fewest bits first.
const MLX_QUANTS: [&str; 3] = ["mlx-4bit", "mlx-8bit", "bf16"];
/// In increasing bits per weight (the i-quants: llama.cpp's IQ2_XXS and IQ4_XS mixes).
const GGUF_QUANTS: [&str; 5] = ["iq2_xxs", "iq4_xs", "q4_k_m", "q8_0", "bf16"];
const HF_QUANTS: [&str; 4] = ["gptq-int4", "nvfp4", "fp8", "bf16"];
/// gpt-oss's MXFP4 experts with the rest at 8.5 bits (ggml-org's file), at 16 bits (the file
/// llama-bench types F16), and all 16-bit: no class loses bits along the chain.
const MXFP4_QUANTS: [&str; 3] = ["mxfp4", "mxfp4-f16", "bf16"];

/// Fails listing every violation (and how many checks ran), if any.
fn verdict(what: &str, checked: usize, bad: Vec<String>) {
    assert!(checked > 0, "{what}: no case of the grid could run");
    assert!(bad.is_empty(), "{what}: {} of {checked} checks broken:\n{}", bad.len(), bad.join("\n"));
    eprintln!("{what}: {checked} checks hold");
}

#[test]
fn rdma_never_loses_to_tcp_on_the_same_cables() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes().into_iter().filter(|n| fabrics_of(n).0 == "tb5-rdma") {
        for model in models() {
            for quant in ["mlx-4bit", "bf16"] {
                for (count, par, prompt) in [(2, "tensor", 128), (2, "tensor", 4096), (4, "tensor", 4096), (2, "pipeline", 4096)] {
                    let base = Case::one(node, model, quant, "exo").prompt(prompt);
                    let rdma = base.clone().split(count, "tb5-rdma", "exo", par);
                    let (Some(a), Some(b)) = (rdma.run(), base.split(count, "tb5-tcp", "exo", par).run()) else { continue };
                    for (key, x, y) in [
                        ("decode", a.decode_tokens_per_s, b.decode_tokens_per_s),
                        ("prefill", a.prefill_tokens_per_s, b.prefill_tokens_per_s),
                    ] {
                        checked += 1;
                        if x * TOL < y {
                            bad.push(format!("{}: {key} {x:.2} tok/s over RDMA < {y:.2} over TCP", rdma.name()));
                        }
                    }
                }
            }
        }
    }
    // vLLM over NCCL: RoCE against TCP on the same ConnectX-7 cables, every split.
    for node in nodes().into_iter().filter(|n| is_cuda(n)) {
        for model in models() {
            for (count, prompt, par) in
                [(2, 128, "tensor"), (2, 4096, "tensor"), (4, 4096, "tensor"), (2, 4096, "expert"), (2, 4096, "pipeline")]
            {
                let base = Case::one(node, model, "fp8", "vllm").prompt(prompt);
                let rdma = base.clone().split(count, "cx7-roce", "vllm", par);
                let (Some(a), Some(b)) = (rdma.run(), base.split(count, "cx7-tcp", "vllm", par).run()) else { continue };
                for (key, x, y) in
                    [("decode", a.decode_tokens_per_s, b.decode_tokens_per_s), ("prefill", a.prefill_tokens_per_s, b.prefill_tokens_per_s)]
                {
                    checked += 1;
                    if x * TOL < y {
                        bad.push(format!("{}: {key} {x:.2} tok/s over RDMA < {y:.2} over TCP", rdma.name()));
                    }
                }
            }
        }
    }
    verdict("RDMA >= TCP", checked, bad);
}

#[test]
fn a_split_never_beats_its_nodes_and_a_batch_one_pipeline_never_beats_one_node() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        // llama.cpp RPC runs over TCP sockets; exo and plain MLX distributed (mlx-lm) over the
        // fastest fabric.
        let (fast, tcp) = fabrics_of(node);
        for model in models() {
            let mut runs: Vec<(&str, &str, &str, &str)> = vec![("llama-cpp", "llama-cpp-rpc", "q4_k_m", tcp)];
            if is_mac(node) {
                runs.push(("exo", "exo", "mlx-4bit", fast));
                runs.push(("mlx-lm", "mlx-lm", "mlx-4bit", fast));
            }
            if is_cuda(node) {
                runs.push(("vllm", "vllm", "fp8", fast));
            }
            for (single, multi, quant, fabric) in runs {
                let one_case = Case::one(node, model, quant, single);
                let Some(one) = one_case.run() else { continue };
                for count in [2, 4] {
                    // vLLM runs every split: pipeline, tensor, expert parallel and data-parallel
                    // attention (the last three on MoE models).
                    let mut splits = vec!["pipeline"];
                    if matches!(multi, "exo" | "mlx-lm" | "vllm") {
                        splits.push("tensor");
                    }
                    if multi == "vllm" {
                        splits.extend(["expert", "data", "data+expert"]);
                    }
                    // Two stages of tensor-parallel pairs: at batch 1 no faster than one pair.
                    if multi == "vllm" && count == 4 {
                        splits.push("tensor+pipeline");
                    }
                    // Data-parallel ranks of tensor-parallel pairs on four.
                    let pairs = multi == "vllm" && count == 4;
                    let cases = splits
                        .into_iter()
                        .map(|par| one_case.clone().split(count, fabric, multi, par))
                        .chain(pairs.then(|| one_case.clone().split(count, fabric, multi, "data").tensor_ranks(2)));
                    for c in cases {
                        let par = c.parallelism;
                        let Some(e) = c.run() else { continue };
                        checked += 1;
                        let (x, y) = (e.decode_tokens_per_s, one.decode_tokens_per_s);
                        match par {
                            "pipeline" if x > y * TOL => {
                                bad.push(format!("{}: batch-1 pipeline decodes {x:.2} tok/s > one node's {y:.2}", c.name()))
                            }
                            "tensor" | "expert" | "data" | "data+expert" if x > count as f64 * y * TOL => {
                                bad.push(format!("{}: {x:.2} tok/s > {count} x one node's {y:.2}", c.name()))
                            }
                            "tensor+pipeline" if x > (count / 2) as f64 * y * TOL => {
                                bad.push(format!("{}: {x:.2} tok/s > {} x one node's {y:.2}", c.name(), count / 2))
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    verdict("split <= N x one node; pipeline <= one node", checked, bad);
}

/// Decode bytes and prefill FLOPs per node and step, from the lowered graph the estimate times.
fn work_per_node(s: &Scenario, tokens: u64, context: u64) -> Option<Vec<(f64, f64)>> {
    let plan = trace_plan(s, profile()).ok()?;
    let mut lowered = lower_step(&plan, tokens);
    let work = lowered.work(&plan, context);
    Some(work.iter().map(|w| (w.bytes, w.flops)).collect())
}

#[test]
fn decode_and_prefill_stay_under_their_rooflines() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        let spec = catalog().node(node).expect("node");
        let bw = spec.mem_bw_gbs * 1e9;
        // The FLOP/s the runtime can issue: MLX's GEMM peak on a chip with neural
        // accelerators (M5), else fp16_tflops; a power mode's cap (none by default).
        let pj = profile().chip(&profile().params_chip(spec)).map_or(0.0, |c| c.pj_per_flop);
        let (fast, tcp) = fabrics_of(node);
        for model in models() {
            let mut cases = vec![
                Case::one(node, model, "q4_k_m", "llama-cpp"),
                Case::one(node, model, "q4_k_m", "llama-cpp").split(2, tcp, "llama-cpp-rpc", "pipeline"),
            ];
            if is_mac(node) {
                cases.push(Case::one(node, model, "mlx-4bit", "mlx-lm"));
                cases.push(Case::one(node, model, "mlx-4bit", "exo").split(2, fast, "exo", "tensor"));
            }
            if is_cuda(node) {
                cases.push(Case::one(node, model, "fp8", "vllm"));
                cases.push(Case::one(node, model, "fp8", "sglang"));
                cases.push(Case::one(node, model, "fp8", "vllm").split(2, fast, "vllm", "tensor"));
            }
            for c in cases {
                let Some(s) = c.scenario() else { continue };
                let Ok(e) = estimate(&s, profile()) else { continue };
                // Every node streams its own decode bytes within each step: the step is at least
                // the slowest node's bytes over its bandwidth.
                let Some(decode) = work_per_node(&s, 1, c.prompt) else { continue };
                let floor_s = decode.iter().map(|(bytes, _)| bytes / bw).fold(0.0, f64::max);
                checked += 1;
                if e.decode_tokens_per_s * floor_s > TOL {
                    bad.push(format!(
                        "{}: decode {:.2} tok/s above the bandwidth roofline {:.2}",
                        c.name(),
                        e.decode_tokens_per_s,
                        1.0 / floor_s
                    ));
                }
                // Every prompt token's FLOPs run on some node's ALUs: prefill is at most the
                // cluster's peak over the FLOPs per token.
                // The prefill's largest step: mlx-lm runs the last prompt token alone (a 128-token
                // prompt is a 127-token step and a 1-token one), and a kernel may change with the
                // step's rows (MLX sorts experts into 16-row tiles from 4 rows an expert).
                let timed = if s.engine.prefill_last_token_alone { c.prompt - 1 } else { c.prompt };
                let chunk = s.engine.prefill_chunk.min(timed).max(1);
                let Some(prefill) = work_per_node(&s, chunk, 0) else { continue };
                let flops_per_token = prefill.iter().map(|(_, f)| f).sum::<f64>() / chunk as f64;
                // An FP8 checkpoint under a CUDA engine issues its GEMMs on the FP8 tensor cores.
                let fp8 = c.quant == "fp8" && matches!(c.engine, "vllm" | "sglang");
                let peak = match spec.fp8_issued_flops(pj) {
                    Some(f) if fp8 => f,
                    _ => spec.issued_flops(matches!(c.engine, "mlx-lm" | "exo"), pj),
                };
                let ceiling = c.count as f64 * peak / flops_per_token;
                checked += 1;
                if e.prefill_tokens_per_s > ceiling * TOL {
                    bad.push(format!("{}: prefill {:.1} tok/s above the compute roofline {ceiling:.1}", c.name(), e.prefill_tokens_per_s));
                }
            }
        }
    }
    verdict("rooflines", checked, bad);
}

#[test]
fn decode_never_speeds_up_with_context_or_with_more_bits_per_weight() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        for model in models() {
            let mut families = vec![("llama-cpp", GGUF_QUANTS.as_slice()), ("llama-cpp", MXFP4_QUANTS.as_slice())];
            if is_mac(node) {
                families.push(("mlx-lm", MLX_QUANTS.as_slice()));
            }
            if is_cuda(node) {
                families.push(("vllm", HF_QUANTS.as_slice()));
                families.push(("sglang", HF_QUANTS.as_slice()));
            }
            for (engine, quants) in families {
                // Longer context: more KV to read per token.
                let base = Case::one(node, model, quants[0], engine);
                let runs: Vec<(u64, f64)> =
                    [128, 4096, 32768].iter().filter_map(|&p| base.clone().prompt(p).run().map(|e| (p, e.decode_tokens_per_s))).collect();
                for w in runs.windows(2) {
                    checked += 1;
                    if w[1].1 > w[0].1 * TOL {
                        bad.push(format!("{}: decode at prompt {} ({:.2}) > at {} ({:.2})", base.name(), w[1].0, w[1].1, w[0].0, w[0].1));
                    }
                }
                // More bits per weight: more bytes per token.
                let runs: Vec<(&str, f64)> =
                    quants.iter().filter_map(|&q| base.clone().quant(q).run().map(|e| (q, e.decode_tokens_per_s))).collect();
                for w in runs.windows(2) {
                    checked += 1;
                    if w[1].1 > w[0].1 * TOL {
                        bad.push(format!("{}: decode in {} ({:.2}) > in {} ({:.2})", base.name(), w[1].0, w[1].1, w[0].0, w[0].1));
                    }
                }
            }
        }
    }
    verdict("decode monotonic in context and bits", checked, bad);
}

#[test]
fn node_power_stays_between_idle_and_maximum_and_energy_per_token_is_positive() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        let spec = catalog().node(node).expect("node").clone();
        let (fast, slow) = fabrics_of(node);
        for model in models() {
            let mut cases = vec![
                Case::one(node, model, "q4_k_m", "llama-cpp").prompt(4096),
                Case::one(node, model, "q4_k_m", "llama-cpp").split(2, slow, "llama-cpp-rpc", "pipeline"),
            ];
            if is_mac(node) {
                cases.push(Case::one(node, model, "mlx-4bit", "mlx-lm").prompt(4096));
                cases.push(Case::one(node, model, "mlx-4bit", "exo").split(2, fast, "exo", "tensor").prompt(4096));
                cases.push(Case::one(node, model, "bf16", "exo").split(4, fast, "exo", "tensor"));
            }
            if is_cuda(node) {
                cases.push(Case::one(node, model, "fp8", "vllm").prompt(4096));
                cases.push(Case::one(node, model, "fp8", "sglang").prompt(4096));
                cases.push(Case::one(node, model, "fp8", "vllm").split(2, fast, "vllm", "tensor").prompt(4096));
            }
            for c in cases {
                let Some(e) = c.run() else { continue };
                let phases = [("decode", &e.node_power_w), ("prefill", &e.node_prefill_power_w), ("peak", &e.node_peak_power_w)];
                for (phase, watts) in phases {
                    for (i, w) in watts.iter().enumerate() {
                        checked += 1;
                        if !(spec.idle_w * (2.0 - TOL)..=spec.max_w * TOL).contains(w) {
                            bad.push(format!(
                                "{}: node {i} draws {w:.1} W in {phase}, outside [{}, {}]",
                                c.name(),
                                spec.idle_w,
                                spec.max_w
                            ));
                        }
                    }
                }
                checked += 1;
                if !(e.energy_j_per_token > 0.0 && e.energy_j_per_token.is_finite()) {
                    bad.push(format!("{}: energy per token {}", c.name(), e.energy_j_per_token));
                }
            }
        }
    }
    verdict("power within [idle, max]", checked, bad);
}

#[test]
fn batching_raises_the_aggregate_rate_and_lowers_each_users() {
    let (mut checked, mut bad) = (0, Vec::new());
    let cases = [
        ("m3-ultra-80c-512gb", 1, "none", "llama-3.3-70b", "mlx-4bit", "mlx-lm", "none"),
        ("m3-ultra-80c-512gb", 1, "none", "qwen3-235b-a22b", "mlx-4bit", "mlx-lm", "none"),
        ("m3-ultra-80c-512gb", 2, "tb5-rdma", "deepseek-v3.1", "mlx-4bit", "exo", "tensor"),
        ("dgx-spark", 1, "none", "gpt-oss-120b", "mxfp4", "llama-cpp", "none"),
        ("dgx-spark", 1, "none", "gpt-oss-120b", "mxfp4", "vllm", "none"),
        ("dgx-spark", 1, "none", "llama-3.1-8b", "fp8", "sglang", "none"),
        ("dgx-spark", 2, "cx7-roce", "llama-3.3-70b", "fp8", "vllm", "tensor"),
        ("framework-desktop-ai-max-395", 1, "none", "llama-3.2-3b", "q4_k_m", "llama-cpp", "none"),
    ];
    for (node, count, fabric, model, quant, engine, par) in cases {
        let mut last: Option<(u64, f64, f64)> = None;
        for users in [1u64, 2, 4, 8] {
            let mut b = ScenarioBuilder::new(format!("{count}x {node} {model} {quant} {engine} {par}, {users} users"));
            b.nodes(&vec![node.to_string(); count]).model(model).quant(quant).engine(engine).parallelism(par).seed(1);
            if count > 1 {
                b.fabric(fabric);
            }
            b.workload_kind("serve");
            for (k, v) in [("workload.arrival", toml::Value::from("closed")), ("workload.concurrency", (users as i64).into())] {
                b.set(k, &v).unwrap();
            }
            for (k, v) in
                [("workload.prompt_tokens", 128), ("workload.generate_tokens", 64), ("workload.duration_s", 60), ("workload.warmup_s", 5)]
            {
                b.set(k, &toml::Value::from(v)).unwrap();
            }
            b.set("workload.think_s", &toml::Value::from(0.0)).unwrap();
            let s = b.build().unwrap_or_else(|e| panic!("{e}"));
            let e = estimate(&s, profile()).unwrap_or_else(|e| panic!("{e}"));
            let serve = e.serve.expect("a serving run");
            let (agg, per) = (serve.aggregate_decode_tokens_per_s, serve.per_request_decode_tokens_per_s);
            if let Some((u, a0, p0)) = last {
                checked += 2;
                if agg * TOL < a0 {
                    bad.push(format!("{node} {model} {engine}: aggregate {agg:.2} tok/s at {users} users < {a0:.2} at {u}"));
                }
                if per > p0 * TOL {
                    bad.push(format!("{node} {model} {engine}: per user {per:.2} tok/s at {users} users > {p0:.2} at {u}"));
                }
            }
            last = Some((users, agg, per));
        }
    }
    verdict("batching", checked, bad);
}

/// NCCL on ConnectX-7 (`engine::cost::nccl`): RoCE never slower than TCP on the same port at
/// any size and rank count; every collective monotone in bytes and in ranks, on every NCCL
/// fabric of the catalog.
#[test]
fn nccl_collectives_are_monotone_and_roce_never_loses_to_tcp() {
    let (mut checked, mut bad) = (0, Vec::new());
    let comm = &profile().comm;
    let nccl: Vec<_> = catalog().fabrics.iter().filter(|f| f.backend == Backend::Nccl).collect();
    assert!(nccl.len() >= 3, "cx7-roce and its half-link variants");
    for f in nccl {
        let net = NetCost::new(f, comm);
        let tcp = f.degrade_to.as_deref().and_then(|t| catalog().fabric(t));
        for ranks in 2..=8usize {
            let mut last = (0, 0, 0);
            for shift in 0..=34 {
                for bytes in [(1u64 << shift).saturating_sub(1), 1 << shift, (1 << shift) + (1 << shift) / 2] {
                    let now =
                        (net.nccl_all_reduce_ns(bytes, ranks), net.nccl_all_gather_ns(bytes, ranks), net.nccl_all_to_all_ns(bytes, ranks));
                    let fewer = (
                        net.nccl_all_reduce_ns(bytes, ranks - 1),
                        net.nccl_all_gather_ns(bytes, ranks - 1),
                        net.nccl_all_to_all_ns(bytes, ranks - 1),
                    );
                    checked += 2;
                    if now.0 < last.0 || now.1 < last.1 || now.2 < last.2 {
                        bad.push(format!("{} {ranks} ranks: {bytes} B faster than fewer bytes: {now:?} < {last:?}", f.id));
                    }
                    if now.0 < fewer.0 || now.1 < fewer.1 || now.2 < fewer.2 {
                        bad.push(format!("{} {bytes} B: {ranks} ranks faster than {}: {now:?} < {fewer:?}", f.id, ranks - 1));
                    }
                    last = now;
                    if let Some(t) = tcp {
                        let t = NetCost::new(t, comm);
                        checked += 1;
                        let (r, s) = (now.0, t.nccl_all_reduce_ns(bytes, ranks));
                        if r > s || net.nccl_send_ns(bytes) > t.nccl_send_ns(bytes) {
                            bad.push(format!("{} slower than {} at {bytes} B on {ranks} ranks: {r} > {s} ns", f.id, t.fabric.id));
                        }
                    }
                }
            }
        }
    }
    verdict("NCCL collectives", checked, bad);
}

/// A user's node `like` a built-in (read through the user-catalog path: `like` merged, checked)
/// with more memory bandwidth never decodes slower, and with more memory fits every model the
/// built-in fits. Grid: every catalog node (the issue-21 boxes included) x every model x
/// {llama.cpp q4_k_m, mlx-lm mlx-4bit} on one node, three runs each (built-in, 1.5x bandwidth,
/// 2x memory): about 20 x 30 x 2 cases, the ones that run are counted.
#[test]
fn a_user_node_with_more_bandwidth_is_never_slower_and_with_more_memory_fits_as_much() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        let base = catalog().node(node).expect("catalog node");
        let text = format!(
            "[[node]]\nid = \"{node}-faster\"\nlike = \"{node}\"\nname = \"faster\"\nmem_bw_gbs = {}\n\
             [[node]]\nid = \"{node}-bigger\"\nlike = \"{node}\"\nname = \"bigger\"\nmemory_gb = {}\n",
            base.mem_bw_gbs * 1.5,
            base.memory_gb * 2.0
        );
        let user = supernode::catalog::user::parse_catalog_file("physics.toml", &text).expect("user nodes parse");
        let (faster, bigger) = (&user.nodes[0], &user.nodes[1]);
        for model in models() {
            for (engine, quant) in [("llama-cpp", "q4_k_m"), ("mlx-lm", "mlx-4bit")] {
                let case = Case::one(node, model, quant, engine);
                let Some(mut s) = case.scenario() else { continue };
                let one = estimate(&s, profile()).ok();
                s.nodes[0] = bigger.clone();
                let big = estimate(&s, profile()).ok();
                if one.is_some() && big.is_none() {
                    bad.push(format!("{}: fits, but not with twice the memory", case.name()));
                }
                let Some(one) = one else { continue };
                s.nodes[0] = faster.clone();
                let Ok(fast) = estimate(&s, profile()) else {
                    bad.push(format!("{}: runs, but not with more bandwidth", case.name()));
                    continue;
                };
                checked += 1;
                if fast.decode_tokens_per_s * TOL < one.decode_tokens_per_s {
                    bad.push(format!(
                        "{}: 1.5x bandwidth decodes {:.2} tok/s < {:.2}",
                        case.name(),
                        fast.decode_tokens_per_s,
                        one.decode_tokens_per_s
                    ));
                }
            }
        }
    }
    verdict("user node: more bandwidth never slower, more memory fits as much", checked, bad);
}

/// Expert coverage (`llm::expert_coverage`) over every catalog MoE model and a range of
/// popularity skews: exactly the `k` experts of one token at batch 1, never below it nor above
/// uniform routing's coverage (the skew only concentrates), never more than the experts there
/// are, and non-decreasing in the batch.
#[test]
fn expert_coverage_stays_between_one_token_and_uniform_routing_and_grows_with_the_batch() {
    use supernode::llm::{OpClass, expert_coverage};
    let (mut checked, mut bad) = (0, Vec::new());
    for id in models() {
        let (_, spec) = catalog().model(id).expect("catalog model");
        let Some(op) = (0..spec.layers).flat_map(|l| spec.layer_ops(l)).find(|o| o.class == OpClass::Expert) else { continue };
        let (e, k) = op.experts.expect("an expert op has experts");
        for skew in [0.0, 0.25, 0.5, 1.0, 1.5, 3.0] {
            let mut last = 0.0;
            for b in [1u64, 2, 3, 4, 8, 16, 32, 64, 256, 1024, 8192] {
                let c = expert_coverage(e, k, b, skew);
                let uniform = expert_coverage(e, k, b, 0.0);
                checked += 1;
                if b == 1 && (c - k as f64).abs() > 1e-9 {
                    bad.push(format!("{id} skew {skew}: batch 1 touches {c} experts, not k = {k}"));
                }
                if c < k as f64 - 1e-9 || c > uniform + 1e-9 || c > e as f64 + 1e-9 || c + 1e-12 < last {
                    bad.push(format!("{id} skew {skew}: batch {b} touches {c} (k {k}, uniform {uniform}, previous {last}, E {e})"));
                }
                last = c;
            }
        }
    }
    verdict("expert coverage", checked, bad);
}

/// llama.cpp RPC is the same on an RDMA fabric as on its TCP sibling: `rpc-server` speaks TCP
/// sockets only, so on RDMA cables it runs the TCP fabric of the same cables (`tcp_fabric`).
/// Every output (rates, latencies, power, energy, cost, memory) is equal; only the note that
/// says so differs. Over every catalog node that can be cabled with an RDMA fabric.
#[test]
fn llama_cpp_rpc_is_the_same_on_an_rdma_fabric_as_on_its_tcp_sibling() {
    let (mut checked, mut bad) = (0, Vec::new());
    let rdma: Vec<_> = catalog().fabrics.iter().filter(|f| f.transport == supernode::hw::Transport::Rdma).collect();
    for node in nodes() {
        for f in &rdma {
            let tcp = f.tcp_fabric.as_deref().expect("every built-in RDMA fabric names its TCP sibling");
            for model in ["llama-3.3-70b", "qwen3-30b-a3b"] {
                for (count, prompt) in [(2, 128), (3, 4096)] {
                    let base = Case::one(node, model, "q4_k_m", "llama-cpp-rpc").prompt(prompt);
                    let on_rdma = base.clone().split(count, f.id.as_str(), "llama-cpp-rpc", "pipeline");
                    let Some(a) = on_rdma.run() else { continue };
                    let Some(b) = base.split(count, tcp, "llama-cpp-rpc", "pipeline").run() else {
                        bad.push(format!("{}: runs on RDMA but not on {tcp}", on_rdma.name()));
                        continue;
                    };
                    checked += 1;
                    if !a.calibration.notes.iter().any(|n| n.contains("speaks TCP only") && n.contains(tcp)) {
                        bad.push(format!("{}: no note that it runs as {tcp}", on_rdma.name()));
                    }
                    let mut a_json = serde_json::to_value(&a).unwrap();
                    let mut b_json = serde_json::to_value(&b).unwrap();
                    a_json["calibration"]["notes"] = serde_json::Value::Null;
                    b_json["calibration"]["notes"] = serde_json::Value::Null;
                    // The scenario's name is the test's own (it names the fabric asked for).
                    a_json["name"] = serde_json::Value::Null;
                    b_json["name"] = serde_json::Value::Null;
                    let (a_map, b_map) = (a_json.as_object().unwrap(), b_json.as_object().unwrap());
                    let differ: Vec<&String> = a_map.keys().filter(|k| a_map.get(*k) != b_map.get(*k)).collect();
                    if !differ.is_empty() {
                        bad.push(format!("{}: {differ:?} differ from {tcp}'s", on_rdma.name()));
                    }
                }
            }
        }
    }
    verdict("llama.cpp RPC on RDMA == on its TCP sibling", checked, bad);
}

/// The profile without jitter, with MLX's host graph build at `us` per kernel on every chip.
fn with_graph_build(us: f64) -> Profile {
    let mut p = profile().clone();
    for rt in p.chips.values_mut().filter_map(|c| c.runtimes.get_mut("mlx")) {
        rt.host_per_kernel_us = us;
    }
    p
}

/// MLX builds the next step's lazy graph on the host while the GPU runs this one (`async_eval`
/// keeps one step ahead, FACTS.md): a decode step takes the longer of the two, never their sum.
/// Hand-checked on one M4 Max: at 100 us a kernel the step is the build alone (Qwen3-30B-A3B's
/// 1112 kernels: 111.2 ms), twice as long at 200 us; without a build it is the GPU's; Llama 3.2 3B's 424-kernel build at
/// the profile's 7.26 us (3.1 ms) stays under its GPU work and changes nothing, while
/// Qwen3-30B-A3B's (8.07 ms) exceeds its ~5.5 ms and sets the step: the 123.9 tok/s FACTS.md
/// gives for vllm-mlx's simple mode, whose figure the per-kernel cost was derived from.
#[test]
fn an_mlx_step_takes_the_longer_of_the_gpu_work_and_the_hosts_graph_build() {
    let rate = |model: &'static str, p: &Profile| {
        let s = Case::one("m4-max-40c-128gb", model, "mlx-4bit", "mlx-lm").scenario().expect("scenario");
        estimate(&s, p).expect("runs").decode_tokens_per_s
    };
    let slow = rate("qwen3-30b-a3b", &with_graph_build(100.0));
    assert!((1.0 / slow / 0.1112 - 1.0).abs() < 0.01, "{} s a step", 1.0 / slow);
    let slower = rate("qwen3-30b-a3b", &with_graph_build(200.0));
    assert!((slow / slower - 2.0).abs() < 1e-3, "a host-bound step is the build alone: {slow} vs {slower}");
    let gpu = rate("qwen3-30b-a3b", &with_graph_build(0.0));
    let shipped = profile().chips["m4-max"].runtimes["mlx"].host_per_kernel_us;
    assert_eq!(shipped, 7.26, "the FACTS-derived prior, not fitted");
    let built = rate("qwen3-30b-a3b", profile());
    assert!(gpu > built && (slow / built - shipped / 100.0).abs() < 1e-3, "GPU-bound {gpu}, host-bound {built}");
    assert!((built / 123.9 - 1.0).abs() < 0.005, "{built} vs FACTS' 123.9");
    // A build under the GPU's work costs nothing.
    let dense = rate("llama-3.2-3b", profile());
    assert_eq!(dense, rate("llama-3.2-3b", &with_graph_build(0.0)));
    assert!((dense / 200.1 - 1.0).abs() < 0.05, "{dense} vs FACTS' 200.1");
}

/// A larger llama.cpp micro-batch (`-ub`) never slows a prefill where the kernels pick their
/// MoE tile from the step, and on a MoE it speeds it up by filling the tiled expert GEMMs (issue
/// 20, prefill by batch shape): llama.cpp's CUDA MMQ and Metal `mul_mm_id` compute each expert's
/// rows in whole tiles (128 and 32 rows), so at `-ub 512` gpt-oss-120b's ~16 rows an expert fill
/// an eighth of a CUDA tile and at `-ub 2048` half; a dense model's GEMMs are full either way.
/// Checked on every llama.cpp GPU backend: CUDA on the GB10, Metal on the M3 Ultra, Vulkan
/// (64-row tiles on AMD) and ROCm on the AI Max+, in both of its tile choices: per step (MMQ up
/// to 128, builds to September 2026) and per expert (`ncols_opt`, builds since), where the width
/// follows the mean rows an expert holds and under skewed routing the cold experts a larger step
/// touches each pay a wider tile: no law forbids a few percent lost there, so that build is held
/// to "the widest micro-batch within 10% of the best".
#[test]
fn a_larger_llama_cpp_micro_batch_never_slows_prefill_and_fills_moe_tiles() {
    let prefill = |node: &str, model: &str, quant: &str, backend: Option<(&str, &str)>, ub: i64| {
        let mut b = ScenarioBuilder::new(format!("{node} {model} ub {ub}"));
        b.nodes(&[node.to_string()]).model(model).quant(quant).engine("llama-cpp").tokens(2048, 8).seed(1);
        b.set("engine.prefill_chunk", &toml::Value::Integer(ub)).expect("a known key");
        if let Some((backend, tiles)) = backend {
            b.set("engine.backend", &toml::Value::String(backend.into())).expect("a known key");
            if backend == "rocm" {
                b.set("engine.rocm_tiles", &toml::Value::String(tiles.into())).expect("a known key");
            }
        }
        let s = b.build().unwrap_or_else(|e| panic!("{node} {model}: {e}"));
        estimate(&s, profile()).unwrap_or_else(|e| panic!("{node} {model}: {e}")).prefill_tokens_per_s
    };
    let fw = "framework-desktop-ai-max-395";
    let (vulkan, rocm_step, rocm_expert) = (Some(("vulkan", "")), Some(("rocm", "per-step")), Some(("rocm", "per-expert")));
    let cases = [
        ("dgx-spark", "gpt-oss-120b", "mxfp4", None),
        ("dgx-spark", "qwen3-30b-a3b", "q4_k_m", None),
        ("dgx-spark", "llama-3.3-70b", "q4_k_m", None),
        ("m3-ultra-80c-512gb", "deepseek-v3.1", "q4_k_m", None),
        ("m3-ultra-80c-512gb", "gpt-oss-120b", "mxfp4", None),
        (fw, "gpt-oss-120b", "mxfp4", vulkan),
        (fw, "gpt-oss-120b", "mxfp4", rocm_step),
        (fw, "qwen3-30b-a3b", "q4_k_m", vulkan),
        (fw, "qwen3-30b-a3b", "q4_k_m", rocm_step),
        (fw, "gpt-oss-120b", "mxfp4", rocm_expert),
        (fw, "qwen3-30b-a3b", "q4_k_m", rocm_expert),
        (fw, "llama-3.3-70b", "q4_k_m", rocm_expert),
    ];
    let mut ratios = Vec::new();
    for (node, model, quant, backend) in cases {
        let rates: Vec<f64> = [256, 512, 1024, 2048].iter().map(|&ub| prefill(node, model, quant, backend, ub)).collect();
        if backend == rocm_expert {
            let best = rates.iter().cloned().fold(0.0, f64::max);
            assert!(rates[3] >= 0.9 * best, "{node} {model} {backend:?}: {rates:?}");
        } else {
            assert!(rates.windows(2).all(|w| w[1] >= w[0] * (1.0 - 1e-9)), "{node} {model} {backend:?}: {rates:?}");
        }
        ratios.push(rates[1] / rates[3]);
    }
    // gpt-oss-120b on the GB10: 8x against 2x padding of its expert FLOPs, well under half the
    // rate at -ub 512; the dense Llama 3.3 70B barely moves.
    assert!(ratios[0] < 0.5, "gpt-oss-120b on a GB10, ub 512 / ub 2048: {}", ratios[0]);
    assert!(ratios[2] > 0.9, "Llama 3.3 70B on a GB10, ub 512 / ub 2048: {}", ratios[2]);
    // On an AMD GPU, ROCm's per-step MMQ tiles grow to 128 rows with the step while Vulkan's
    // stop at 64 on AMD: at -ub 512 (16 rows an expert) ROCm pays twice Vulkan's padding, at
    // -ub 2048 (64 rows) neither pays much, so ROCm gained more from the larger micro-batch.
    assert!(ratios[6] < ratios[5], "gpt-oss-120b on an AI Max+, ub 512 / 2048: rocm {} vs vulkan {}", ratios[6], ratios[5]);
    // Picking the width per expert, ROCm fits -ub 512's 16 rows an expert already: the larger
    // micro-batch gains least there.
    assert!(ratios[9] > ratios[6] && ratios[9] > ratios[5], "gpt-oss-120b, ub 512 / 2048: {ratios:?}");
}

/// MLX's quantized mat-vec on Metal unpacks every weight again for each row of a step (FACTS.md:
/// an M3 Max 4-bit matmul at 1 / 4 / 8 rows takes 0.129 / 0.165 / 0.323 ms), so an 8-row
/// decode step's dense weights cost more than one row's on a Mac. MLX's CPU and CUDA backends,
/// llama.cpp's multi-row GEMV and 16-bit weights charge no unpacking: a 4-row step stays at the
/// weight stream's time.
#[test]
fn an_mlx_step_of_eight_rows_pays_its_rows_on_metal_only() {
    use supernode::engine::EngineKind;
    use supernode::llm::OpClass;
    let c = catalog();
    let (_, model) = c.model("llama-3.2-3b").unwrap();
    let ratio = |node: &str, kind: EngineKind, quant: &str, rows: u64| {
        let plan = one_node_plan(c.node(node).unwrap(), model, quant, kind).unwrap();
        let cost = plan.cost(0);
        let ops = plan.layer_ops(0);
        let mlp = ops.iter().filter(|o| o.class == OpClass::Dense).max_by_key(|o| o.params).unwrap();
        let t = |rows: u64| cost.op_ns(mlp, rows, 0) - cost.launch_ns(mlp, rows);
        t(rows) / t(1)
    };
    let metal = ratio("m4-max-40c-128gb", EngineKind::MlxLm, "mlx-4bit", 8);
    assert!(metal > 1.5, "MLX on an M4 Max: 8 rows cost {metal:.2}x one row");
    assert!(ratio("m4-max-40c-128gb", EngineKind::MlxLm, "mlx-4bit", 4) > 1.0);
    for (node, kind, quant) in [
        ("dgx-spark", EngineKind::MlxLm, "mlx-4bit"),
        ("m4-max-40c-128gb", EngineKind::LlamaCpp, "q4_0"),
        ("m4-max-40c-128gb", EngineKind::MlxLm, "bf16"),
    ] {
        let r = ratio(node, kind, quant, 4);
        assert!((r - 1.0).abs() < 1e-9, "{node} {kind:?} {quant}: 4 rows cost {r:.3}x one row");
    }
}

/// No stream runs faster than its node's measured DRAM read (catalog `read_ceiling_gbs`): a
/// saturating-read kernel reaches 231-234 GB/s of the GB10's 273 GB/s spec (FACTS-2026 B2,
/// antirez/ds4 issue 773), 692 GB/s of the M3 Ultra's 819 (FACTS.md, jundot/omlx issue 2238),
/// ~212 GB/s of the AI Max+ 395's 256 (FACTS-2026 A3). Over every catalog node, every runtime
/// that runs there and a format of each kernel family it loads, each weight op of a dense and a
/// MoE model at one row takes at least its bytes over the ceiling, whatever the fitted
/// efficiencies and multipliers say (fitted, vLLM's MXFP4 multiplier once streamed the GB10's
/// experts at 255 GB/s and MLX's 8-bit one the M3 Ultra's weights at 720).
#[test]
fn no_stream_beats_its_nodes_measured_read_ceiling() {
    use supernode::engine::EngineKind;
    let c = catalog();
    for (chip, gbs) in [("gb10", 234.0), ("m3-ultra", 692.0), ("ryzen-ai-max-395", 212.0)] {
        let nodes: Vec<_> = c.nodes.iter().filter(|n| n.chip == chip).collect();
        assert!(!nodes.is_empty() && nodes.iter().all(|n| n.read_ceiling_gbs == Some(gbs)), "{chip}: every box carries {gbs} GB/s");
    }
    let mut checked = 0;
    for node in c.nodes.iter().filter(|n| n.read_ceiling_gbs.is_some()) {
        for (kind, quants) in [
            (EngineKind::MlxLm, &["mlx-4bit", "mlx-8bit", "bf16", "mxfp4"][..]),
            (EngineKind::LlamaCpp, &["q4_k_m", "q8_0", "bf16", "mxfp4"][..]),
            (EngineKind::Vllm, &["fp8", "bf16", "awq-int4", "mxfp4"][..]),
        ] {
            if !kind.behaviour().runs_on(node) {
                continue;
            }
            for (model_id, quant) in quants.iter().flat_map(|q| [("llama-3.2-3b", *q), ("gpt-oss-120b", *q)]) {
                if model_id == "llama-3.2-3b" && quant == "mxfp4" {
                    continue;
                }
                let (_, model) = c.model(model_id).unwrap();
                let plan = match one_node_plan(node, model, quant, kind) {
                    Ok(plan) => plan,
                    Err(e) if e.to_string().contains("does not fit") => continue,
                    Err(e) => panic!("{} {kind:?} {model_id} {quant}: {e}", node.id),
                };
                let cost = plan.cost(0);
                let ceiling = node.read_ceiling_gbs.unwrap() * 1e9;
                for op in plan.layer_ops(0).iter().filter(|o| o.params > 0) {
                    let t = (cost.op_ns(op, 1, 0) - cost.launch_ns(op, 1)) / 1e9;
                    let bytes = cost.op_work(op, 1, 0).bytes;
                    assert!(
                        bytes / t <= ceiling * (1.0 + 1e-9),
                        "{} {kind:?} ({:?}) {model_id} {quant}: {op:?} streams {:.0} GB/s, above the measured {:.0}",
                        node.id,
                        kind.runtime(),
                        bytes / t / 1e9,
                        ceiling / 1e9
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 300, "{checked} ops checked");
}

/// The plan of `model` in `quant` on one `node` under `kind` (December 2025 defaults, a 4,096-token
/// context, the shipped profile): what the per-op checks above read their cost model from.
fn one_node_plan(
    node: &supernode::hw::NodeSpec,
    model: &supernode::llm::ModelSpec,
    quant: &str,
    kind: supernode::engine::EngineKind,
) -> Result<supernode::engine::Plan, supernode::engine::PlanError> {
    use supernode::engine::{EngineOptions, Parallelism, Plan, PlanInput};
    let c = catalog();
    Plan::new(PlanInput {
        nodes: std::slice::from_ref(node),
        fabric: c.fabric("none").unwrap(),
        topology: supernode::hw::Topology::None,
        model,
        quant: c.quant(quant).unwrap(),
        options: &EngineOptions::december_2025(kind, Parallelism::None),
        wired_limit_fraction: None,
        context: 4096,
        profile: profile(),
    })
}

/// Apple GPUs stream 8- and 16-bit weights at one fitted multiple of their ~4-bit rate, on
/// every Apple chip and both runtimes (`calibrate::APPLE_WIDE_STREAM`, tied): the M2 Ultra's
/// f16 and bf16 Llama 3 70B decode against its Q4_K_M one, and the M3 Ultra's MLX 8-bit exo
/// rows against its 4-bit ones, say the same. Every Mac reading those chips' parameters (an
/// M1 Max calibrated as the M2 Ultra, an M3 Max as the M3 Ultra) therefore decodes a
/// half-precision model faster per byte than a 4-bit one, by that multiple less the kernels'
/// fixed launch costs.
#[test]
fn apple_chips_stream_wide_weights_at_one_multiple_of_their_4bit_rate() {
    use supernode::calibrate::{APPLE_DENSE_STREAM, APPLE_WIDE_STREAM};
    use supernode::profile::tied_paths;
    let p = profile();
    let values = |tied: &str| tied_paths(tied).iter().map(|m| p.param(m).expect("member").0).collect::<Vec<f64>>();
    let wide = values(APPLE_WIDE_STREAM);
    assert!(wide.iter().all(|&w| w == wide[0]) && wide[0] > 1.05, "{wide:?}");
    let dense = values(APPLE_DENSE_STREAM);
    assert!(dense.iter().all(|&d| d == dense[0]), "{dense:?}");
    let (mut checked, mut bad) = (0, Vec::new());
    for node in ["mac-studio-m2-ultra", "macbook-pro-m1-max-32c-64gb", "macbook-pro-m3-max-40c-128gb", "mac-studio-m3-ultra"] {
        for (engine, narrow, wide_quant) in
            [("llama-cpp", "q4_k_m", "f16"), ("mlx-lm", "mlx-4bit", "bf16"), ("mlx-lm", "mlx-4bit", "mlx-8bit")]
        {
            let a = Case::one(node, "llama-3.1-8b", narrow, engine);
            let (Some(x), Some(y)) = (a.run(), a.clone().quant(wide_quant).run()) else { continue };
            let per_byte = |e: &Estimate| e.decode_tokens_per_s * e.memory[0].weights_gb;
            let ratio = per_byte(&y) / per_byte(&x);
            // No stream passes the node's measured read ceiling (the M3 Ultra's 692 GB/s).
            let ceiling = catalog().node(node).expect("catalog node").read_ceiling();
            let multiple = wide[0].min(ceiling / dense[0]);
            checked += 1;
            // Launch costs are fixed per token, so the wider file's longer stream hides more of
            // them: at least the multiple (less 3% for the embedding table, counted in the file
            // but not streamed), at most half as much again.
            if ratio < 0.97 * multiple || ratio > 1.5 * multiple {
                bad.push(format!("{} -> {wide_quant}: {ratio:.3}x the bytes per second (multiple {multiple:.3})", a.name()));
            }
        }
    }
    verdict("wide weights at the fitted multiple", checked, bad);
}

/// Replicas are the one-group physics added up: over every catalog node and model one node
/// holds, on each runtime family the node runs, one request on two replicas decodes and
/// prefills exactly as on one node, the second node draws its idle power, and the two cost
/// twice one.
#[test]
fn a_request_on_replicas_runs_as_on_one_node_while_the_others_idle() {
    let (mut checked, mut bad) = (0, Vec::new());
    for node in nodes() {
        let spec = catalog().node(node).expect("node").clone();
        for model in models() {
            let mut cases = vec![Case::one(node, model, "q4_k_m", "llama-cpp")];
            if is_mac(node) {
                cases.push(Case::one(node, model, "mlx-4bit", "mlx-lm"));
            }
            if is_cuda(node) {
                cases.push(Case::one(node, model, "fp8", "vllm"));
            }
            for c in cases {
                let Some(one) = c.run() else { continue };
                let mut b = ScenarioBuilder::new(format!("{} x 2 replicas", c.name()));
                b.nodes(&[node.to_string(), node.to_string()]).model(c.model).quant(c.quant).engine(c.engine);
                b.parallelism("none").tokens(c.prompt, c.generate).seed(1);
                b.set("engine.replicas", &toml::Value::Integer(2)).unwrap();
                let two = estimate(&b.build().unwrap(), profile()).unwrap();
                checked += 1;
                let same = (two.decode_tokens_per_s, two.prefill_tokens_per_s) == (one.decode_tokens_per_s, one.prefill_tokens_per_s);
                let idle = two.node_power_w.get(1) == Some(&spec.idle_w) && two.node_power_w[0] == one.node_power_w[0];
                if !(same && idle && two.cost_usd == 2.0 * one.cost_usd) {
                    bad.push(format!(
                        "{}: 2 replicas decode {} / prefill {} tok/s, W {:?}, ${} vs one node {} / {}, W {:?}, ${}",
                        c.name(),
                        two.decode_tokens_per_s,
                        two.prefill_tokens_per_s,
                        two.node_power_w,
                        two.cost_usd,
                        one.decode_tokens_per_s,
                        one.prefill_tokens_per_s,
                        one.node_power_w,
                        one.cost_usd
                    ));
                }
            }
        }
    }
    verdict("replicas are one node's physics", checked, bad);
}
