//! Scenarios assembled in code (the planner's candidates, a sweep's points): the builder fills
//! the same raw structs the file parser makes and runs the same validation ([`super::resolve`]),
//! so no rule is written twice and no TOML text is formatted or re-parsed per scenario. Errors
//! keep their message, help and kind; they name where the scenario came from (the builder's
//! origin, e.g. a sweep point's axis values) instead of a file location.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::fmt::Write as _;
use std::path::PathBuf;

use toml::Spanned;

use super::Scenario;
use super::raw::{RawCluster, RawCost, RawEngine, RawLength, RawModel, RawScenario, RawSlo, RawWorkload};
use super::resolve::resolve;
use super::source::{ErrorKind, ScenarioError, Source, toml_error};

/// The scenario keys [`ScenarioBuilder::set`] accepts, as dotted paths.
pub const KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "cluster.nodes",
    "cluster.node",
    "cluster.count",
    "cluster.fabric",
    "cluster.topology",
    "cluster.wired_limit_fraction",
    "cluster.gpu_memory_limit_gb",
    "cluster.power_mode_w",
    "model.name",
    "model.hf_config",
    "model.quant",
    "model.gguf_tensor_types",
    "model.size_gb",
    "engine.name",
    "engine.parallelism",
    "engine.pipeline_stages",
    "engine.tensor_ranks",
    "engine.replicas",
    "engine.macos",
    "engine.jaccl_frame_kib",
    "engine.allreduce",
    "engine.fast_sync",
    "engine.prefill_chunk",
    "engine.mla_prefill",
    "engine.mla_cache",
    "engine.backend",
    "engine.rocm_tiles",
    "engine.flash_attention",
    "engine.enforce_eager",
    "engine.kv_cache_dtype",
    "engine.max_num_batched_tokens",
    "engine.max_num_seqs",
    "engine.gpu_memory_utilization",
    "engine.continuous_batching",
    "workload.kind",
    "workload.prompt_tokens",
    "workload.generate_tokens",
    "workload.context_tokens",
    "workload.hpl_n",
    "workload.arrival",
    "workload.concurrency",
    "workload.think_s",
    "workload.think",
    "workload.trace",
    "workload.rate_per_s",
    "workload.duration_s",
    "workload.requests",
    "workload.warmup_s",
    "workload.max_batch",
    "workload.kv_full",
    "workload.batch",
    "workload.same_tokens",
    "slo.ttft_p99_s",
    "slo.tpot_p99_ms",
    "workload.hpl_nb",
    "workload.hpl_p",
    "workload.hpl_q",
    "cost.amortization_years",
    "cost.electricity_usd_per_kwh",
];

/// A scenario under construction: typed setters for the keys code usually sets, [`Self::set`]
/// for any dotted key, and [`Self::build`] to validate it into a [`Scenario`].
#[derive(Clone, Debug)]
pub struct ScenarioBuilder {
    origin: String,
    dir: PathBuf,
    raw: RawScenario,
    /// `engine.*` keys were set without `engine.name` (a file would say "missing field").
    engine_unnamed: bool,
}

fn sp<T>(v: T) -> Spanned<T> {
    Spanned::new(0..0, v)
}

fn empty_cluster() -> RawCluster {
    RawCluster {
        nodes: None,
        node: None,
        count: None,
        fabric: None,
        topology: None,
        wired_limit_fraction: None,
        gpu_memory_limit_gb: None,
        power_mode_w: None,
    }
}

fn empty_engine() -> RawEngine {
    RawEngine {
        name: sp(String::new()),
        parallelism: None,
        pipeline_stages: None,
        tensor_ranks: None,
        replicas: None,
        macos: None,
        jaccl_frame_kib: None,
        allreduce: None,
        fast_sync: None,
        prefill_chunk: None,
        mla_prefill: None,
        mla_cache: None,
        backend: None,
        rocm_tiles: None,
        flash_attention: None,
        enforce_eager: None,
        kv_cache_dtype: None,
        max_num_batched_tokens: None,
        max_num_seqs: None,
        gpu_memory_utilization: None,
        continuous_batching: None,
    }
}

impl ScenarioBuilder {
    /// An empty scenario; `origin` names it in errors (e.g. `plan candidate 3`).
    pub fn new(origin: impl Into<String>) -> Self {
        let raw = RawScenario {
            name: None,
            description: None,
            seed: None,
            cluster: sp(empty_cluster()),
            model: sp(RawModel { name: None, hf_config: None, quant: None, gguf_tensor_types: None, size_gb: None }),
            engine: None,
            workload: None,
            slo: None,
            cost: None,
            faults: None,
            sweep: None,
            catalog: None,
        };
        ScenarioBuilder { origin: origin.into(), dir: PathBuf::new(), raw, engine_unnamed: false }
    }

    /// The scenario of a source text (its `[sweep]` table dropped), to vary in code.
    pub fn from_source(source: &Source) -> Result<Self, ScenarioError> {
        let mut raw: RawScenario = toml::from_str(&source.text).map_err(|e| toml_error(source, &e))?;
        raw.sweep = None;
        Ok(ScenarioBuilder { origin: source.path.clone(), dir: source.dir.clone(), raw, engine_unnamed: false })
    }

    /// Where the scenario came from, as errors name it.
    pub fn origin(&mut self, origin: impl Into<String>) -> &mut Self {
        self.origin = origin.into();
        self
    }

    /// Directory relative paths (`model.hf_config`) resolve against.
    pub fn dir(&mut self, dir: PathBuf) -> &mut Self {
        self.dir = dir;
        self
    }

    /// Whether a name is set.
    pub fn has_name(&self) -> bool {
        self.raw.name.is_some()
    }

    /// `name`.
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.raw.name = Some(sp(name.into()));
        self
    }

    /// `seed`.
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.raw.seed = Some(sp(i64::try_from(seed).unwrap_or(i64::MAX)));
        self
    }

    /// `cluster.nodes` (replaces `node`/`count`).
    pub fn nodes(&mut self, nodes: &[String]) -> &mut Self {
        let c = self.raw.cluster.get_mut();
        c.nodes = Some(sp(nodes.iter().map(|n| sp(n.clone())).collect()));
        c.node = None;
        c.count = None;
        self
    }

    /// `cluster.fabric`.
    pub fn fabric(&mut self, fabric: &str) -> &mut Self {
        self.raw.cluster.get_mut().fabric = Some(sp(fabric.into()));
        self
    }

    /// `cluster.topology`.
    pub fn topology(&mut self, topology: &str) -> &mut Self {
        self.raw.cluster.get_mut().topology = Some(sp(topology.into()));
        self
    }

    /// `model.name` (replaces `hf_config`).
    pub fn model(&mut self, name: &str) -> &mut Self {
        let m = self.raw.model.get_mut();
        m.name = Some(sp(name.into()));
        m.hf_config = None;
        self
    }

    /// `model.quant`.
    pub fn quant(&mut self, quant: &str) -> &mut Self {
        self.raw.model.get_mut().quant = Some(sp(quant.into()));
        self
    }

    /// `engine.name`.
    pub fn engine(&mut self, name: &str) -> &mut Self {
        self.engine_mut().name = sp(name.into());
        self.engine_unnamed = false;
        self
    }

    /// `engine.parallelism`.
    pub fn parallelism(&mut self, parallelism: &str) -> &mut Self {
        self.engine_mut().parallelism = Some(sp(parallelism.into()));
        self
    }

    /// `workload.kind`.
    pub fn workload_kind(&mut self, kind: &str) -> &mut Self {
        self.workload_mut().kind = Some(sp(kind.into()));
        self
    }

    /// `workload.prompt_tokens` and `workload.generate_tokens`.
    pub fn tokens(&mut self, prompt: u64, generate: u64) -> &mut Self {
        let w = self.workload_mut();
        w.prompt_tokens = Some(sp(RawLength::Fixed(i64::try_from(prompt).unwrap_or(i64::MAX))));
        w.generate_tokens = Some(sp(RawLength::Fixed(i64::try_from(generate).unwrap_or(i64::MAX))));
        self
    }

    /// The `workload.prompt_tokens` and `workload.generate_tokens` as set (a fixed count; None
    /// when unset or drawn), before validation.
    pub fn fixed_tokens(&self) -> (Option<u64>, Option<u64>) {
        let fixed = |l: &Option<Spanned<RawLength>>| match l.as_ref().map(Spanned::get_ref) {
            Some(RawLength::Fixed(n)) => u64::try_from(*n).ok(),
            _ => None,
        };
        self.raw.workload.as_ref().map_or((None, None), |w| (fixed(&w.get_ref().prompt_tokens), fixed(&w.get_ref().generate_tokens)))
    }

    fn engine_mut(&mut self) -> &mut RawEngine {
        if self.raw.engine.is_none() {
            self.engine_unnamed = true;
        }
        self.raw.engine.get_or_insert_with(|| sp(empty_engine())).get_mut()
    }

    fn workload_mut(&mut self) -> &mut RawWorkload {
        self.raw.workload.get_or_insert_with(|| sp(RawWorkload::empty())).get_mut()
    }

    fn slo_mut(&mut self) -> &mut RawSlo {
        self.raw.slo.get_or_insert_with(|| sp(RawSlo { ttft_p99_s: None, tpot_p99_ms: None })).get_mut()
    }

    fn cost_mut(&mut self) -> &mut RawCost {
        self.raw.cost.get_or_insert_with(|| sp(RawCost { amortization_years: None, electricity_usd_per_kwh: None })).get_mut()
    }

    /// Sets a dotted scenario key (one of [`KEYS`]) to a value, as `--set` or a sweep axis
    /// would. `cluster.nodes` and `cluster.node`/`count` replace each other, as do `model.name`
    /// and `model.hf_config`. Errors: [`ErrorKind::UnknownKey`] naming the key, or
    /// [`ErrorKind::BadValue`] for a value of the wrong type.
    pub fn set(&mut self, key: &str, value: &toml::Value) -> Result<&mut Self, ScenarioError> {
        let v = Value { key, value, origin: &self.origin };
        match key {
            "name" => self.raw.name = Some(sp(v.string()?)),
            "description" => self.raw.description = Some(v.string()?),
            "seed" => self.raw.seed = Some(sp(v.int()?)),
            "cluster.nodes" => {
                let list = v.strings()?;
                self.nodes(&list);
            }
            "cluster.node" => {
                let node = v.string()?;
                let c = self.raw.cluster.get_mut();
                if let Some(list) = c.nodes.take() {
                    c.count.get_or_insert_with(|| sp(list.get_ref().len() as i64));
                }
                c.node = Some(sp(node));
            }
            "cluster.count" => {
                let count = v.int()?;
                let c = self.raw.cluster.get_mut();
                if let Some(list) = c.nodes.take() {
                    if c.node.is_none() {
                        c.node = list.into_inner().into_iter().next();
                    }
                }
                c.count = Some(sp(count));
            }
            "cluster.fabric" => self.raw.cluster.get_mut().fabric = Some(sp(v.string()?)),
            "cluster.topology" => self.raw.cluster.get_mut().topology = Some(sp(v.string()?)),
            "cluster.wired_limit_fraction" => self.raw.cluster.get_mut().wired_limit_fraction = Some(sp(v.float()?)),
            "cluster.gpu_memory_limit_gb" => self.raw.cluster.get_mut().gpu_memory_limit_gb = Some(sp(v.float()?)),
            "cluster.power_mode_w" => self.raw.cluster.get_mut().power_mode_w = Some(sp(v.float()?)),
            "model.name" => {
                let name = v.string()?;
                self.model(&name);
            }
            "model.hf_config" => {
                let m = self.raw.model.get_mut();
                m.hf_config = Some(sp(v.string()?));
                m.name = None;
            }
            "model.quant" => self.raw.model.get_mut().quant = Some(sp(v.string()?)),
            "model.gguf_tensor_types" => self.raw.model.get_mut().gguf_tensor_types = Some(sp(v.string()?)),
            "model.size_gb" => self.raw.model.get_mut().size_gb = Some(sp(v.float()?)),
            "engine.name" => {
                let name = v.string()?;
                self.engine(&name);
            }
            "engine.parallelism" => self.engine_mut().parallelism = Some(sp(v.string()?)),
            "engine.pipeline_stages" => self.engine_mut().pipeline_stages = Some(sp(v.int()?)),
            "engine.tensor_ranks" => self.engine_mut().tensor_ranks = Some(sp(v.int()?)),
            "engine.replicas" => self.engine_mut().replicas = Some(sp(v.int()?)),
            "engine.macos" => self.engine_mut().macos = Some(sp(v.string()?)),
            "engine.jaccl_frame_kib" => self.engine_mut().jaccl_frame_kib = Some(sp(v.int()?)),
            "engine.allreduce" => self.engine_mut().allreduce = Some(sp(v.string()?)),
            "engine.fast_sync" => self.engine_mut().fast_sync = Some(sp(v.bool()?)),
            "engine.prefill_chunk" => self.engine_mut().prefill_chunk = Some(sp(v.int()?)),
            "engine.mla_prefill" => self.engine_mut().mla_prefill = Some(sp(v.string()?)),
            "engine.mla_cache" => self.engine_mut().mla_cache = Some(sp(v.string()?)),
            "engine.backend" => self.engine_mut().backend = Some(sp(v.string()?)),
            "engine.rocm_tiles" => self.engine_mut().rocm_tiles = Some(sp(v.string()?)),
            "engine.flash_attention" => self.engine_mut().flash_attention = Some(sp(v.bool()?)),
            "engine.enforce_eager" => self.engine_mut().enforce_eager = Some(sp(v.bool()?)),
            "engine.kv_cache_dtype" => self.engine_mut().kv_cache_dtype = Some(sp(v.string()?)),
            "engine.max_num_batched_tokens" => self.engine_mut().max_num_batched_tokens = Some(sp(v.int()?)),
            "engine.max_num_seqs" => self.engine_mut().max_num_seqs = Some(sp(v.int()?)),
            "engine.gpu_memory_utilization" => self.engine_mut().gpu_memory_utilization = Some(sp(v.float()?)),
            "engine.continuous_batching" => self.engine_mut().continuous_batching = Some(sp(v.bool()?)),
            "workload.kind" => self.workload_mut().kind = Some(sp(v.string()?)),
            "workload.prompt_tokens" => self.workload_mut().prompt_tokens = Some(sp(RawLength::Fixed(v.int()?))),
            "workload.generate_tokens" => self.workload_mut().generate_tokens = Some(sp(RawLength::Fixed(v.int()?))),
            "workload.context_tokens" => self.workload_mut().context_tokens = Some(sp(v.int()?)),
            "workload.arrival" => self.workload_mut().arrival = Some(sp(v.string()?)),
            "workload.concurrency" => self.workload_mut().concurrency = Some(sp(v.int()?)),
            "workload.trace" => self.workload_mut().trace = Some(sp(v.string()?)),
            "workload.think_s" => self.workload_mut().think_s = Some(sp(v.float()?)),
            "workload.think" => self.workload_mut().think = Some(sp(v.string()?)),
            "workload.rate_per_s" => self.workload_mut().rate_per_s = Some(sp(v.float()?)),
            "workload.duration_s" => self.workload_mut().duration_s = Some(sp(v.float()?)),
            "workload.requests" => self.workload_mut().requests = Some(sp(v.int()?)),
            "workload.warmup_s" => self.workload_mut().warmup_s = Some(sp(v.float()?)),
            "workload.max_batch" => self.workload_mut().max_batch = Some(sp(v.int()?)),
            "workload.batch" => self.workload_mut().batch = Some(sp(v.int()?)),
            "workload.same_tokens" => self.workload_mut().same_tokens = Some(sp(v.bool()?)),
            "workload.kv_full" => self.workload_mut().kv_full = Some(sp(v.string()?)),
            "slo.ttft_p99_s" => self.slo_mut().ttft_p99_s = Some(sp(v.float()?)),
            "slo.tpot_p99_ms" => self.slo_mut().tpot_p99_ms = Some(sp(v.float()?)),
            "workload.hpl_n" => self.workload_mut().hpl_n = Some(sp(v.int()?)),
            "workload.hpl_nb" => self.workload_mut().hpl_nb = Some(sp(v.int()?)),
            "workload.hpl_p" => self.workload_mut().hpl_p = Some(sp(v.int()?)),
            "workload.hpl_q" => self.workload_mut().hpl_q = Some(sp(v.int()?)),
            "cost.amortization_years" => self.cost_mut().amortization_years = Some(sp(v.float()?)),
            "cost.electricity_usd_per_kwh" => self.cost_mut().electricity_usd_per_kwh = Some(sp(v.float()?)),
            _ => return Err(v.unknown_key()),
        }
        Ok(self)
    }

    /// Validates the scenario (the same rules as a file) into a [`Scenario`].
    pub fn build(&self) -> Result<Scenario, ScenarioError> {
        let source = Source { path: self.origin.clone(), dir: self.dir.clone(), text: String::new() };
        if self.engine_unnamed {
            return Err(source.error(0..0, "missing field `name` in `[engine]`", Some("add the missing key".into())));
        }
        resolve(self.raw.clone(), source)
    }

    /// The scenario as TOML a user can save and run: top-level keys, then one table per
    /// section, in the scenario's key order (only the keys that are set).
    pub fn to_toml(&self) -> String {
        let r = &self.raw;
        let mut t = String::new();
        let key = |t: &mut String, k: &str, v: Option<toml::Value>| {
            if let Some(v) = v {
                let _ = writeln!(t, "{k} = {}", value_text(&v));
            }
        };
        let s = |x: &Option<Spanned<String>>| x.as_ref().map(|x| toml::Value::String(x.get_ref().clone()));
        let i = |x: &Option<Spanned<i64>>| x.as_ref().map(|x| toml::Value::Integer(*x.get_ref()));
        let f = |x: &Option<Spanned<f64>>| x.as_ref().map(|x| toml::Value::Float(*x.get_ref()));
        key(&mut t, "name", s(&r.name));
        key(&mut t, "description", r.description.clone().map(toml::Value::String));
        key(&mut t, "seed", i(&r.seed));
        let c = r.cluster.get_ref();
        let _ = writeln!(t, "\n[cluster]");
        let nodes =
            c.nodes.as_ref().map(|l| toml::Value::Array(l.get_ref().iter().map(|n| toml::Value::String(n.get_ref().clone())).collect()));
        key(&mut t, "nodes", nodes);
        key(&mut t, "node", s(&c.node));
        key(&mut t, "count", i(&c.count));
        key(&mut t, "fabric", s(&c.fabric));
        key(&mut t, "topology", s(&c.topology));
        key(&mut t, "wired_limit_fraction", f(&c.wired_limit_fraction));
        key(&mut t, "gpu_memory_limit_gb", f(&c.gpu_memory_limit_gb));
        key(&mut t, "power_mode_w", f(&c.power_mode_w));
        let m = r.model.get_ref();
        if m.name.is_some() || m.hf_config.is_some() || m.quant.is_some() {
            let _ = writeln!(t, "\n[model]");
            key(&mut t, "name", s(&m.name));
            key(&mut t, "hf_config", s(&m.hf_config));
            key(&mut t, "quant", s(&m.quant));
        }
        if let Some(e) = &r.engine {
            let e = e.get_ref();
            let _ = writeln!(t, "\n[engine]");
            key(&mut t, "name", Some(toml::Value::String(e.name.get_ref().clone())));
            key(&mut t, "parallelism", s(&e.parallelism));
            key(&mut t, "pipeline_stages", i(&e.pipeline_stages));
            key(&mut t, "tensor_ranks", i(&e.tensor_ranks));
            key(&mut t, "replicas", i(&e.replicas));
            key(&mut t, "macos", s(&e.macos));
            key(&mut t, "jaccl_frame_kib", i(&e.jaccl_frame_kib));
            key(&mut t, "allreduce", s(&e.allreduce));
            key(&mut t, "fast_sync", e.fast_sync.as_ref().map(|b| toml::Value::Boolean(*b.get_ref())));
            key(&mut t, "prefill_chunk", i(&e.prefill_chunk));
            key(&mut t, "mla_prefill", s(&e.mla_prefill));
            key(&mut t, "mla_cache", s(&e.mla_cache));
            key(&mut t, "backend", s(&e.backend));
            key(&mut t, "rocm_tiles", s(&e.rocm_tiles));
            key(&mut t, "flash_attention", e.flash_attention.as_ref().map(|b| toml::Value::Boolean(*b.get_ref())));
            key(&mut t, "enforce_eager", e.enforce_eager.as_ref().map(|b| toml::Value::Boolean(*b.get_ref())));
            key(&mut t, "kv_cache_dtype", s(&e.kv_cache_dtype));
            key(&mut t, "max_num_batched_tokens", i(&e.max_num_batched_tokens));
            key(&mut t, "max_num_seqs", i(&e.max_num_seqs));
            key(&mut t, "gpu_memory_utilization", e.gpu_memory_utilization.as_ref().map(|x| toml::Value::Float(*x.get_ref())));
            key(&mut t, "continuous_batching", e.continuous_batching.as_ref().map(|b| toml::Value::Boolean(*b.get_ref())));
        }
        if let Some(w) = &r.workload {
            let w = w.get_ref();
            let _ = writeln!(t, "\n[workload]");
            key(&mut t, "kind", s(&w.kind));
            key(&mut t, "prompt_tokens", w.prompt_tokens.as_ref().map(|l| length_value(l.get_ref())));
            key(&mut t, "generate_tokens", w.generate_tokens.as_ref().map(|l| length_value(l.get_ref())));
            key(&mut t, "context_tokens", i(&w.context_tokens));
            key(&mut t, "hpl_n", i(&w.hpl_n));
            key(&mut t, "hpl_nb", i(&w.hpl_nb));
            key(&mut t, "hpl_p", i(&w.hpl_p));
            key(&mut t, "hpl_q", i(&w.hpl_q));
            key(&mut t, "arrival", s(&w.arrival));
            key(&mut t, "concurrency", i(&w.concurrency));
            key(&mut t, "think_s", f(&w.think_s));
            key(&mut t, "think", s(&w.think));
            key(&mut t, "rate_per_s", f(&w.rate_per_s));
            key(&mut t, "trace", s(&w.trace));
            key(&mut t, "duration_s", f(&w.duration_s));
            key(&mut t, "requests", i(&w.requests));
            key(&mut t, "warmup_s", f(&w.warmup_s));
            key(&mut t, "max_batch", i(&w.max_batch));
            key(&mut t, "batch", i(&w.batch));
            key(&mut t, "same_tokens", w.same_tokens.as_ref().map(|b| toml::Value::Boolean(*b.get_ref())));
            key(&mut t, "kv_full", s(&w.kv_full));
        }
        if let Some(slo) = &r.slo {
            let slo = slo.get_ref();
            let _ = writeln!(t, "\n[slo]");
            key(&mut t, "ttft_p99_s", f(&slo.ttft_p99_s));
            key(&mut t, "tpot_p99_ms", f(&slo.tpot_p99_ms));
        }
        if let Some(co) = &r.cost {
            let co = co.get_ref();
            let _ = writeln!(t, "\n[cost]");
            key(&mut t, "amortization_years", f(&co.amortization_years));
            key(&mut t, "electricity_usd_per_kwh", f(&co.electricity_usd_per_kwh));
        }
        t
    }
}

/// A token count as TOML: the integer, or the distribution as an inline table.
fn length_value(l: &RawLength) -> toml::Value {
    match l {
        RawLength::Fixed(x) => toml::Value::Integer(*x),
        RawLength::Dist(d) => {
            let mut t = toml::Table::new();
            t.insert("dist".into(), toml::Value::String(d.dist.clone()));
            for (k, v) in [("min", d.min), ("max", d.max)] {
                if let Some(v) = v {
                    t.insert(k.into(), toml::Value::Integer(v));
                }
            }
            for (k, v) in [("mean", d.mean), ("sigma", d.sigma)] {
                if let Some(v) = v {
                    t.insert(k.into(), toml::Value::Float(v));
                }
            }
            toml::Value::Table(t)
        }
    }
}

/// A value in TOML syntax; arrays as `[a, b]`.
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Array(items) => format!("[{}]", items.iter().map(value_text).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// A value for a key, read as the key's type.
struct Value<'a> {
    key: &'a str,
    value: &'a toml::Value,
    origin: &'a str,
}

impl Value<'_> {
    fn error(&self, kind: ErrorKind, message: String, help: &str) -> ScenarioError {
        let source = Source { path: self.origin.to_string(), dir: PathBuf::new(), text: String::new() };
        source.error(0..0, message, Some(help.to_string())).with_kind(kind)
    }

    fn wrong_type(&self, expected: &str) -> ScenarioError {
        self.error(
            ErrorKind::BadValue,
            format!("invalid type: {} `{}`, expected {expected} for `{}`", self.value.type_str(), self.value, self.key),
            "check the value's type: numbers unquoted, names in quotes",
        )
    }

    fn unknown_key(&self) -> ScenarioError {
        let suggestion = crate::util::did_you_mean(self.key, KEYS).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
        self.error(
            ErrorKind::UnknownKey,
            format!("`{}` is not a scenario key", self.key),
            &format!("{suggestion}scenario keys: {}", KEYS.join(", ")),
        )
    }

    fn string(&self) -> Result<String, ScenarioError> {
        self.value.as_str().map(str::to_string).ok_or_else(|| self.wrong_type("a string"))
    }

    fn strings(&self) -> Result<Vec<String>, ScenarioError> {
        let list = self.value.as_array().ok_or_else(|| self.wrong_type("a list of strings"))?;
        list.iter().map(|x| x.as_str().map(str::to_string).ok_or_else(|| self.wrong_type("a list of strings"))).collect()
    }

    fn int(&self) -> Result<i64, ScenarioError> {
        self.value.as_integer().ok_or_else(|| self.wrong_type("an integer"))
    }

    fn float(&self) -> Result<f64, ScenarioError> {
        match self.value {
            toml::Value::Float(x) => Ok(*x),
            toml::Value::Integer(x) => Ok(*x as f64),
            _ => Err(self.wrong_type("a number")),
        }
    }

    fn bool(&self) -> Result<bool, ScenarioError> {
        self.value.as_bool().ok_or_else(|| self.wrong_type("a boolean"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ScenarioBuilder {
        let mut b = ScenarioBuilder::new("test");
        b.name("t").nodes(&["m3-ultra-80c-512gb".to_string()]).model("llama-3.2-3b");
        b
    }

    #[test]
    fn builds_and_sets_dotted_keys() {
        let mut b = base();
        b.set("cluster.count", &toml::Value::Integer(2)).unwrap();
        b.set("cluster.fabric", &toml::Value::String("tb5-rdma".into())).unwrap();
        b.set("workload.prompt_tokens", &toml::Value::Integer(64)).unwrap();
        let s = b.build().unwrap();
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(s.workload.prompt_tokens, 64);
        assert_eq!(s.name, "t");
    }

    #[test]
    fn errors_have_kinds_and_name_the_origin() {
        let mut b = base();
        let e = b.set("cluster.colour", &toml::Value::Integer(2)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownKey);
        assert!(e.to_string().starts_with("test:"), "{e}");
        let e = b.set("cluster.count", &toml::Value::String("2".into())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadValue);
        b.set("cluster.fabric", &toml::Value::String("tb5-rmda".into())).unwrap();
        b.set("cluster.count", &toml::Value::Integer(2)).unwrap();
        let e = b.build().unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownPreset);
        assert!(e.help.unwrap().contains("did you mean `tb5-rdma`"));
        let mut b = base();
        b.set("engine.parallelism", &toml::Value::String("tensor".into())).unwrap();
        assert_eq!(b.build().unwrap_err().kind, ErrorKind::Invalid);
    }

    #[test]
    fn toml_text_round_trips() {
        let mut b = base();
        b.fabric("tb5-rdma").engine("exo").parallelism("tensor").tokens(8, 4).seed(3);
        let text = b.to_toml();
        let parsed = super::super::parse(Source { path: "x.toml".into(), dir: PathBuf::new(), text }).unwrap();
        let built = b.build().unwrap();
        assert_eq!((parsed.nodes.len(), parsed.seed, parsed.workload.clone()), (built.nodes.len(), built.seed, built.workload.clone()));
    }
}
