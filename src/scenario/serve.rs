//! The `serve` workload's keys: arrivals (closed loop, Poisson, a trace file), request lengths
//! (fixed or drawn), when the run ends, the runtime scheduler's knobs, and `[slo]`. Raw keys are
//! validated here into typed values once; errors point at the key with a fix.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use toml::Spanned;

use super::raw::{RawDist, RawLength, RawSlo, RawWorkload};
use super::source::{ErrorKind, ScenarioError, Source, one_of, positive};

/// Most requests or users a serving run may ask for.
const MAX_REQUESTS: i64 = 100_000_000;
/// Longest simulated serving run, s (a year).
const MAX_DURATION_S: f64 = 3.2e7;
/// Longest drawn request, tokens.
pub const MAX_TOKENS: u64 = 1 << 20;

/// How requests arrive.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    /// A closed loop: `users` each send a request, wait for its last token, think for a time of
    /// mean `think_s`, and send the next.
    Closed {
        /// Concurrent users.
        users: u64,
        /// Mean think time between a response and the next request, s.
        think_s: f64,
        /// How think times are drawn.
        think: Think,
    },
    /// An open Poisson stream (exponential gaps from the scenario's seeded stream).
    Poisson {
        /// Mean arrivals per second.
        rate_per_s: f64,
    },
    /// Requests read from a CSV file (`arrival_s,prompt_tokens,output_tokens`).
    Trace(Vec<TraceRequest>),
}

/// How a closed-loop user's think times are drawn (`workload.think`).
///
/// Exponential by default: the interactive-terminal model of closed queueing systems, where a
/// user's think time is memoryless. A fixed think time with identical requests and all users
/// starting together keeps the users in lock-step waves for the whole run (every user returns in
/// the same instant), so p99 latency then depends on how the wave happens to align with the batch
/// limit and is not monotone in the number of users; `fixed` keeps that behaviour for a benchmark
/// that really sleeps a constant time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Think {
    /// Exponential with mean `think_s`.
    Exponential,
    /// Exactly `think_s`.
    Fixed,
}

/// One request of a trace file.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRequest {
    /// Arrival time from the start of the run, s.
    pub arrival_s: f64,
    /// Prompt length, tokens.
    pub prompt_tokens: u64,
    /// Tokens to generate.
    pub output_tokens: u64,
}

/// A request length: fixed, or drawn per request from the scenario's seeded stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Length {
    /// Always this many tokens.
    Fixed(u64),
    /// Uniform integer in `min..=max`.
    Uniform {
        /// Smallest.
        min: u64,
        /// Largest.
        max: u64,
    },
    /// Log-normal with this mean (not the mean of the log) and log-space sigma, rounded and
    /// clamped to `1..=MAX_TOKENS`.
    LogNormal {
        /// Mean, tokens.
        mean: f64,
        /// Standard deviation of ln(length).
        sigma: f64,
    },
}

impl Length {
    /// The mean length, tokens (what the plan sizes its one-request KV check for).
    pub fn mean(&self) -> u64 {
        match *self {
            Length::Fixed(x) => x,
            Length::Uniform { min, max } => (min + max) / 2,
            Length::LogNormal { mean, .. } => (mean.round() as u64).clamp(1, MAX_TOKENS),
        }
    }
}

/// When a serving run ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// After this much simulated time, s; requests still running are not counted.
    Duration(f64),
    /// After this many requests have arrived and finished (or been rejected).
    Requests(u64),
}

/// What happens to a request whose KV cache does not fit now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvFull {
    /// It waits at the head of the queue (first come, first served) until enough KV is freed.
    Queue,
    /// It is turned away.
    Reject,
}

/// A `serve` workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Serve {
    /// Arrivals.
    pub arrival: Arrival,
    /// Prompt lengths (ignored for trace arrivals, which carry their own).
    pub prompt: Length,
    /// Output lengths (ignored for trace arrivals).
    pub generate: Length,
    /// End of the run.
    pub stop: Stop,
    /// Requests arriving before this time are excluded from the statistics, s.
    pub warmup_s: f64,
    /// Most requests batched at once; `None` = the runtime's default (exo's
    /// `EXO_MAX_CONCURRENT_REQUESTS` = 8, mlx-lm's `--decode-concurrency` = 32, llama.cpp's 4
    /// slots).
    pub max_batch: Option<u64>,
    /// What a request whose KV does not fit does.
    pub kv_full: KvFull,
}

/// Latency targets (`[slo]`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slo {
    /// 99th-percentile time to first token, s.
    pub ttft_p99_s: Option<f64>,
    /// 99th-percentile time per output token, ms.
    pub tpot_p99_ms: Option<f64>,
}

impl Slo {
    /// Whether a request with this TTFT (s) and TPOT (ms) meets every target.
    pub fn met(&self, ttft_s: f64, tpot_ms: f64) -> bool {
        self.ttft_p99_s.is_none_or(|t| ttft_s <= t) && self.tpot_p99_ms.is_none_or(|t| tpot_ms <= t)
    }

    /// Whether any target is set.
    pub fn any(&self) -> bool {
        self.ttft_p99_s.is_some() || self.tpot_p99_ms.is_some()
    }
}

/// A float key in `(0, max]` (or `[0, max]` when `zero_ok`).
fn float_in(src: &Source, v: &Spanned<f64>, key: &str, zero_ok: bool, max: f64) -> Result<f64, ScenarioError> {
    let x = *v.get_ref();
    let low_ok = if zero_ok { x >= 0.0 } else { x > 0.0 };
    if !(low_ok && x <= max) {
        let from = if zero_ok { "0" } else { "above 0" };
        return Err(src
            .error(v.span(), format!("`{key}` = {x} is out of range"), Some(format!("use a value from {from} to {max}")))
            .with_kind(ErrorKind::BadValue));
    }
    Ok(x)
}

/// A token count: fixed, or a distribution table.
pub(super) fn length(src: &Source, v: &Spanned<RawLength>, key: &str, serve: bool) -> Result<Length, ScenarioError> {
    let bad = |msg: String, help: &str| src.error(v.span(), msg, Some(help.into())).with_kind(ErrorKind::BadValue);
    match v.get_ref() {
        RawLength::Fixed(x) => Ok(Length::Fixed(positive(src, &Spanned::new(v.span(), *x), key, MAX_TOKENS as i64)?)),
        RawLength::Dist(_) if !serve => {
            Err(bad(format!("`{key}` may be drawn from a distribution only when kind = \"serve\""), "write a token count"))
        }
        RawLength::Dist(d) => dist(d, key).map_err(|(m, h)| bad(m, h)),
    }
}

/// A `{ dist = ... }` table.
fn dist(d: &RawDist, key: &str) -> Result<Length, (String, &'static str)> {
    let max = MAX_TOKENS as i64;
    match (d.dist.as_str(), d.min, d.max, d.mean, d.sigma) {
        ("uniform", Some(lo), Some(hi), None, None) if 1 <= lo && lo <= hi && hi <= max => {
            Ok(Length::Uniform { min: lo as u64, max: hi as u64 })
        }
        ("uniform", ..) => Err((
            format!("`{key}`: a uniform length needs integers 1 <= min <= max <= {max}, and no mean or sigma"),
            "write e.g. { dist = \"uniform\", min = 64, max = 512 }",
        )),
        ("lognormal", None, None, Some(mean), Some(sigma)) if mean >= 1.0 && mean <= max as f64 && (0.0..=4.0).contains(&sigma) => {
            Ok(Length::LogNormal { mean, sigma })
        }
        ("lognormal", ..) => Err((
            format!("`{key}`: a lognormal length needs mean in 1..={max} tokens and sigma in 0..=4, and no min or max"),
            "write e.g. { dist = \"lognormal\", mean = 1000, sigma = 0.8 }",
        )),
        (other, ..) => Err((format!("`{key}`: unknown dist `{other}`"), "known dists: uniform, lognormal")),
    }
}

/// The serve-only keys of `[workload]`, present where `kind` is not `serve`: the first one, for
/// an error.
pub(super) fn stray_serve_key(w: &RawWorkload) -> Option<(std::ops::Range<usize>, &'static str)> {
    let s = |x: &Option<Spanned<String>>| x.as_ref().map(|v| v.span());
    let i = |x: &Option<Spanned<i64>>| x.as_ref().map(|v| v.span());
    let f = |x: &Option<Spanned<f64>>| x.as_ref().map(|v| v.span());
    [
        (s(&w.arrival), "arrival"),
        (i(&w.concurrency), "concurrency"),
        (f(&w.think_s), "think_s"),
        (s(&w.think), "think"),
        (f(&w.rate_per_s), "rate_per_s"),
        (s(&w.trace), "trace"),
        (f(&w.duration_s), "duration_s"),
        (i(&w.requests), "requests"),
        (f(&w.warmup_s), "warmup_s"),
        (i(&w.max_batch), "max_batch"),
        (s(&w.kv_full), "kv_full"),
    ]
    .into_iter()
    .find_map(|(span, k)| span.map(|sp| (sp, k)))
}

/// The `serve` keys of `[workload]`, validated; `whole` is the table's span.
pub(super) fn serve(src: &Source, w: &RawWorkload, whole: std::ops::Range<usize>) -> Result<Serve, ScenarioError> {
    let arrival_name = match &w.arrival {
        Some(a) => one_of(src, a, &[("closed", 0), ("poisson", 1), ("trace", 2)], ("arrival", "arrivals"), "")?,
        None => 0,
    };
    // Keys that belong to another arrival process are refused, not ignored.
    let misplaced: [(bool, Option<std::ops::Range<usize>>, &str, &str); 5] = [
        (arrival_name != 0, w.concurrency.as_ref().map(|v| v.span()), "concurrency", "closed"),
        (arrival_name != 0, w.think_s.as_ref().map(|v| v.span()), "think_s", "closed"),
        (arrival_name != 0, w.think.as_ref().map(|v| v.span()), "think", "closed"),
        (arrival_name != 1, w.rate_per_s.as_ref().map(|v| v.span()), "rate_per_s", "poisson"),
        (arrival_name != 2, w.trace.as_ref().map(|v| v.span()), "trace", "trace"),
    ];
    for (wrong, span, key, needs) in misplaced {
        if let (true, Some(span)) = (wrong, span) {
            return Err(src
                .error(
                    span,
                    format!("`workload.{key}` applies to arrival = \"{needs}\" only"),
                    Some(format!("set arrival = \"{needs}\" or remove the key")),
                )
                .with_kind(ErrorKind::BadValue));
        }
    }
    let arrival = match arrival_name {
        0 => Arrival::Closed {
            users: w.concurrency.as_ref().map(|c| positive(src, c, "workload.concurrency", 100_000)).transpose()?.unwrap_or(1),
            think_s: w.think_s.as_ref().map(|t| float_in(src, t, "workload.think_s", true, 86_400.0)).transpose()?.unwrap_or(0.0),
            think: match &w.think {
                Some(t) => one_of(src, t, &[("exponential", Think::Exponential), ("fixed", Think::Fixed)], ("think", "think times"), "")?,
                None => Think::Exponential,
            },
        },
        1 => match &w.rate_per_s {
            Some(r) => Arrival::Poisson { rate_per_s: float_in(src, r, "workload.rate_per_s", false, 1e6)? },
            None => {
                return Err(src
                    .error(
                        w.arrival.as_ref().map_or(whole.clone(), |a| a.span()),
                        "Poisson arrivals need `workload.rate_per_s`",
                        Some("add e.g. rate_per_s = 2.0".into()),
                    )
                    .with_kind(ErrorKind::BadValue));
            }
        },
        _ => match &w.trace {
            Some(t) => Arrival::Trace(read_trace(src, t)?),
            None => {
                return Err(src
                    .error(
                        w.arrival.as_ref().map_or(whole.clone(), |a| a.span()),
                        "trace arrivals need `workload.trace`",
                        Some("add trace = \"requests.csv\" (arrival_s,prompt_tokens,output_tokens)".into()),
                    )
                    .with_kind(ErrorKind::BadValue));
            }
        },
    };
    let stop = match (&w.duration_s, &w.requests) {
        (Some(d), None) => Stop::Duration(float_in(src, d, "workload.duration_s", false, MAX_DURATION_S)?),
        (None, Some(r)) => Stop::Requests(positive(src, r, "workload.requests", MAX_REQUESTS)?),
        (Some(_), Some(r)) => {
            return Err(src
                .error(r.span(), "set `workload.duration_s` or `workload.requests`, not both", Some("remove one of them".into()))
                .with_kind(ErrorKind::BadValue));
        }
        (None, None) => match &arrival {
            Arrival::Trace(rows) => Stop::Requests(rows.len() as u64),
            _ => {
                return Err(src
                    .error(
                        whole,
                        "a serving run needs an end: `workload.duration_s` or `workload.requests`",
                        Some("add e.g. duration_s = 600".into()),
                    )
                    .with_kind(ErrorKind::BadValue));
            }
        },
    };
    let warmup_s = w.warmup_s.as_ref().map(|v| float_in(src, v, "workload.warmup_s", true, MAX_DURATION_S)).transpose()?.unwrap_or(0.0);
    if let (Stop::Duration(d), Some(v)) = (stop, &w.warmup_s)
        && warmup_s >= d
    {
        return Err(src
            .error(
                v.span(),
                format!("`workload.warmup_s` = {warmup_s} leaves nothing of duration_s = {d}"),
                Some("use a warm-up shorter than the run".into()),
            )
            .with_kind(ErrorKind::BadValue));
    }
    let kv_full = match &w.kv_full {
        Some(k) => one_of(src, k, &[("queue", KvFull::Queue), ("reject", KvFull::Reject)], ("kv_full policy", "policies"), "")?,
        None => KvFull::Queue,
    };
    Ok(Serve {
        arrival,
        prompt: w.prompt_tokens.as_ref().map(|p| length(src, p, "workload.prompt_tokens", true)).transpose()?.unwrap_or(Length::Fixed(128)),
        generate: w
            .generate_tokens
            .as_ref()
            .map(|p| length(src, p, "workload.generate_tokens", true))
            .transpose()?
            .unwrap_or(Length::Fixed(128)),
        stop,
        warmup_s,
        max_batch: w.max_batch.as_ref().map(|m| positive(src, m, "workload.max_batch", 4096)).transpose()?,
        kv_full,
    })
}

/// Reads a trace CSV (header `arrival_s,prompt_tokens,output_tokens`) through the bounded
/// reader; errors name the file and line.
fn read_trace(src: &Source, t: &Spanned<String>) -> Result<Vec<TraceRequest>, ScenarioError> {
    let path = src.dir.join(t.get_ref());
    let err = |msg: String, help: &str| src.error(t.span(), msg, Some(help.into())).with_kind(ErrorKind::BadValue);
    let text = crate::util::read_bounded(&path, crate::util::MAX_INPUT_BYTES)
        .map_err(|e| err(format!("cannot read trace `{}`: {e}", path.display()), "check the path (relative to the scenario file)"))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().map(|(_, l)| l.split(',').map(str::trim).collect()).unwrap_or_default();
    if header != ["arrival_s", "prompt_tokens", "output_tokens"] {
        return Err(err(
            format!("{}:1: the header must be `arrival_s,prompt_tokens,output_tokens`", path.display()),
            "write that header line first",
        ));
    }
    let mut rows = Vec::new();
    let mut last = 0.0;
    for (i, line) in lines {
        let at = || format!("{}:{}", path.display(), i + 1);
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed = match f.as_slice() {
            [a, p, o] => a.parse::<f64>().ok().zip(p.parse::<u64>().ok()).zip(o.parse::<u64>().ok()).map(|((a, p), o)| (a, p, o)),
            _ => None,
        };
        let Some((a, p, o)) = parsed else {
            return Err(err(
                format!("{}: expected three numbers (arrival_s,prompt_tokens,output_tokens), got `{line}`", at()),
                "fix the row",
            ));
        };
        let valid = a.is_finite() && a >= last && a <= MAX_DURATION_S && (1..=MAX_TOKENS).contains(&p) && (1..=MAX_TOKENS).contains(&o);
        if !valid {
            return Err(err(
                format!(
                    "{}: arrival_s must be non-decreasing in 0..={MAX_DURATION_S} and token counts in 1..={MAX_TOKENS}, got `{line}`",
                    at()
                ),
                "sort the rows by arrival and fix the counts",
            ));
        }
        last = a;
        rows.push(TraceRequest { arrival_s: a, prompt_tokens: p, output_tokens: o });
    }
    if rows.is_empty() {
        return Err(err(format!("{}: no requests after the header", path.display()), "add rows"));
    }
    Ok(rows)
}

/// The `[slo]` table.
pub(super) fn slo(src: &Source, s: &RawSlo) -> Result<Slo, ScenarioError> {
    Ok(Slo {
        ttft_p99_s: s.ttft_p99_s.as_ref().map(|v| float_in(src, v, "slo.ttft_p99_s", false, 86_400.0)).transpose()?,
        tpot_p99_ms: s.tpot_p99_ms.as_ref().map(|v| float_in(src, v, "slo.tpot_p99_ms", false, 1e6)).transpose()?,
    })
}
