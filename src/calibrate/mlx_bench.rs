//! `mlx_lm.benchmark` output as measurement rows, so MLX users calibrate from what they already
//! run.
//!
//! The tool (mlx-lm 0.32.2 `mlx_lm/benchmark.py`, as `mlx_lm.benchmark --model M -p P -g G`)
//! prints, on rank 0 only:
//!
//! ```text
//! Timing with prompt_tokens=2048, generation_tokens=128, batch_size=1.
//! Trial 1:  prompt_tps=1622.270, generation_tps=134.520, peak_memory=3.350, total_time=2.345
//! Averages: prompt_tps=1620.000, generation_tps=134.000, peak_memory=3.350
//! ```
//!
//! With batch size 1 it times `stream_generate` (`generate.py`): `prompt_tps` is the prompt over
//! the time to the first token, `generation_tps` the G generated tokens over the time after the
//! first (G-1 decode steps: G/(G-1) above the step rate, under 1% from 128 tokens). The output
//! names neither the model, its format, the machine nor the cluster (`--model`, `--quant` or the
//! repo's bit suffix, `--node`, `--nodes` and `--parallelism`: `mlx.launch` runs tensor parallel
//! unless `--pipeline`). Each run becomes a `prefill_tokens_per_s` row at P prompt tokens and a
//! `decode_tokens_per_s` row after P (G generated tokens, which `validate` decodes). A batch of
//! B (`batch_generate`): its prompt rate (all prompt tokens over the prefill time) and its
//! generation rate (the decode steps' tokens over their time, `BatchGenerator`'s counters) as
//! `prefill_tokens_per_s` and `aggregate_decode_tokens_per_s` rows at concurrency B.

//!
//! `mlx_lm.generate --verbose` (and the footer `mlx_lm.chat` shares) prints the same two rates
//! of one `stream_generate` (`generate.py`): `Prompt: N tokens, X tokens-per-sec` and
//! `Generation: M tokens, Y tokens-per-sec`; each such pair is a run of batch 1, one trial.

use crate::calibrate::serve_bench::{Skipped, cluster_columns};
use crate::calibrate::validate::MeasurementRow;

/// Which mlx-lm tool printed a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlxTool {
    /// `mlx_lm.benchmark`: the run's shape and its trials' averages.
    Benchmark,
    /// `mlx_lm.generate --verbose` (and `mlx_lm.chat`'s footer): one generation's `Prompt:` and
    /// `Generation:` lines.
    Generate,
}

impl MlxTool {
    /// The tool's command, as rows name it (what `validate` reads them by).
    pub fn command(self) -> &'static str {
        match self {
            Self::Benchmark => "mlx_lm.benchmark",
            Self::Generate => "mlx_lm.generate",
        }
    }
}

/// One timed mlx-lm run: its shape and its rates (a benchmark's mean over its trials).
#[derive(Clone, Debug, PartialEq)]
pub struct MlxBenchRun {
    /// The tool that printed it.
    pub tool: MlxTool,
    /// Prompt tokens (`-p`).
    pub prompt_tokens: u64,
    /// Generated tokens (`-g`).
    pub generation_tokens: u64,
    /// Sequences at once (`-b`).
    pub batch_size: u64,
    /// Trials the rates average.
    pub trials: usize,
    /// Prompt tokens per second (the prompt over the time to the first token).
    pub prompt_tps: f64,
    /// Generated tokens per second after the first.
    pub generation_tps: f64,
}

/// Whether `text` is `mlx_lm.benchmark` output, or the timing footer `mlx_lm.generate
/// --verbose` prints (`Prompt: N tokens, X tokens-per-sec`, then `Generation: ...`).
pub fn looks_like(text: &str) -> bool {
    let has = |head: &str| text.lines().any(|l| l.trim_start().starts_with(head) && l.contains("tokens-per-sec"));
    text.lines().any(|l| l.trim_start().starts_with("Timing with prompt_tokens=")) || (has("Prompt:") && has("Generation:"))
}

/// `N tokens, X tokens-per-sec` (the rest of a `Prompt:` or `Generation:` line).
fn count_and_rate(rest: &str, line: usize) -> Result<(u64, f64), String> {
    let bad = || format!("line {line}: `{}` is not `N tokens, X tokens-per-sec`", rest.trim());
    let (count, rate) = rest.split_once(',').ok_or_else(bad)?;
    let count = count.trim().strip_suffix("tokens").ok_or_else(bad)?.trim().parse().map_err(|_| bad())?;
    let rate = rate.trim().strip_suffix("tokens-per-sec").ok_or_else(bad)?.trim().parse().map_err(|_| bad())?;
    Ok((count, rate))
}

/// The generations of `mlx_lm.generate --verbose` output: each `Prompt:` line with the
/// `Generation:` line after it (`stream_generate`'s rates: the prompt over the time to the
/// first token, the generated tokens over the time after it).
fn parse_generate(text: &str) -> Result<Vec<MlxBenchRun>, String> {
    let mut runs = Vec::new();
    let mut prompt: Option<(u64, f64)> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Prompt:").filter(|r| r.contains("tokens-per-sec")) {
            prompt = Some(count_and_rate(rest, i + 1)?);
        } else if let Some(rest) = line.strip_prefix("Generation:").filter(|r| r.contains("tokens-per-sec")) {
            let (p, p_tps) = prompt.take().ok_or(format!("line {}: a `Generation:` line without its `Prompt:` line", i + 1))?;
            let (g, g_tps) = count_and_rate(rest, i + 1)?;
            runs.push(MlxBenchRun {
                tool: MlxTool::Generate,
                prompt_tokens: p,
                generation_tokens: g,
                batch_size: 1,
                trials: 1,
                prompt_tps: p_tps,
                generation_tps: g_tps,
            });
        }
    }
    if runs.is_empty() {
        return Err("no `Prompt:` / `Generation:` pair".into());
    }
    Ok(runs)
}

/// `key=value` pairs of a line (`prompt_tps=1622.270, generation_tps=...`, a trailing `.`
/// dropped).
fn pairs(line: &str) -> Vec<(&str, &str)> {
    line.split([',', ' ']).filter_map(|w| w.split_once('=')).map(|(k, v)| (k.trim(), v.trim().trim_end_matches('.'))).collect()
}

fn number<T: std::str::FromStr>(pairs: &[(&str, &str)], key: &str, line: usize) -> Result<T, String> {
    let raw = pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).ok_or(format!("line {line}: no `{key}=`"))?;
    raw.parse().map_err(|_| format!("line {line}: `{key}={raw}` is not a number"))
}

/// The runs of a file (one per `Timing with` line; several outputs may be concatenated), each
/// with its trials' mean rates: the tool's `Averages:` line where it printed one, else the mean
/// of the trials it printed. Errors: a run without a trial, or an unreadable number.
pub fn parse(text: &str) -> Result<Vec<MlxBenchRun>, String> {
    let benchmark = |l: &str| ["Timing with", "Trial ", "Averages:"].iter().any(|h| l.trim_start().starts_with(h));
    if !text.lines().any(benchmark) {
        return parse_generate(text);
    }
    let mut runs: Vec<(MlxBenchRun, Option<(f64, f64)>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (n, line) = (i + 1, line.trim());
        if let Some(rest) = line.strip_prefix("Timing with") {
            let p = pairs(rest);
            let run = MlxBenchRun {
                tool: MlxTool::Benchmark,
                prompt_tokens: number(&p, "prompt_tokens", n)?,
                generation_tokens: number(&p, "generation_tokens", n)?,
                batch_size: number(&p, "batch_size", n)?,
                trials: 0,
                prompt_tps: 0.0,
                generation_tps: 0.0,
            };
            runs.push((run, None));
        } else if line.starts_with("Trial ") || line.starts_with("Averages:") {
            let (run, averages) = runs.last_mut().ok_or(format!("line {n}: results before any `Timing with` line"))?;
            let rest = line.split_once(':').map_or("", |(_, r)| r);
            let p = pairs(rest);
            let rates = (number::<f64>(&p, "prompt_tps", n)?, number::<f64>(&p, "generation_tps", n)?);
            if line.starts_with("Averages:") {
                *averages = Some(rates);
            } else {
                run.trials += 1;
                run.prompt_tps += rates.0;
                run.generation_tps += rates.1;
            }
        }
    }
    if runs.is_empty() {
        return Err("no `Timing with prompt_tokens=...` line".into());
    }
    runs.into_iter()
        .enumerate()
        .map(|(k, (mut run, averages))| {
            if run.trials == 0 {
                return Err(format!("run {} printed no trial", k + 1));
            }
            let (p, g) = averages.unwrap_or((run.prompt_tps / run.trials as f64, run.generation_tps / run.trials as f64));
            (run.prompt_tps, run.generation_tps) = (p, g);
            Ok(run)
        })
        .collect()
}

/// What the runs are about: the output names none of it.
pub struct Labels<'a> {
    /// The catalog node it ran on.
    pub node: &'a str,
    /// The model (`--model`: a preset id or a repo name).
    pub model: &'a str,
    /// The format (`--quant`), else the repo name's bit suffix (`-4bit`, `-8bit`, `-bf16`).
    pub quant: Option<&'a str>,
    /// Nodes under `mlx.launch` (1 unless given).
    pub nodes: u64,
    /// Their split (`TP=2`, `pipeline`); required on several nodes.
    pub parallelism: Option<&'a str>,
    /// Their link (default: the machines' own).
    pub fabric: Option<&'a str>,
}

/// The format an MLX repo name's last `-` word says (`Qwen3-4B-Instruct-2507-4bit` -> `4bit`,
/// which `validate` reads as mlx-lm's 4-bit), if it names one.
fn repo_quant(model: &str) -> Option<String> {
    let last = model.rsplit('/').next()?.rsplit('-').next()?.to_ascii_lowercase();
    let bits = last.strip_suffix("bit").is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    (bits || matches!(last.as_str(), "bf16" | "fp16" | "mxfp4" | "mxfp8" | "nvfp4")).then_some(last)
}

/// Turns runs into rows (`{stem}-{n}-prefill` and `{stem}-{n}-decode`: at batch size 1 the
/// decode rate, above it the batch's aggregate rate at that concurrency); a run generating fewer
/// than 2 tokens is returned as (what, why).
pub fn to_rows(runs: &[MlxBenchRun], labels: &Labels<'_>, stem: &str, source: &str) -> Result<(Vec<MeasurementRow>, Vec<Skipped>), String> {
    let quant = match labels.quant {
        Some(q) => q.to_string(),
        None => repo_quant(labels.model)
            .ok_or_else(|| format!("model `{}` names no format (a -4bit, -8bit or -bf16 repo): pass --quant", labels.model))?,
    };
    let (split, link) = cluster_columns(labels.node, labels.nodes, labels.parallelism, labels.fabric)?;
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    for (n, r) in runs.iter().enumerate() {
        let what = format!("run {} ({} -p {} -g {} -b {})", n + 1, r.tool.command(), r.prompt_tokens, r.generation_tokens, r.batch_size);
        if r.generation_tokens < 2 {
            skipped.push((what, "fewer than 2 generated tokens: no decode rate".into()));
            continue;
        }
        let notes = format!(
            "{} -p {} -g {} -b {}, {} trials (mean): {} generated tokens; {}",
            r.tool.command(),
            r.prompt_tokens,
            r.generation_tokens,
            r.batch_size,
            r.trials,
            r.generation_tokens,
            if r.batch_size == 1 {
                "generation_tps counts them over the steps after the first"
            } else {
                "batch_generate: rates over the whole batch, generation over the decode steps"
            }
        );
        // One sequence: its decode rate; several (`batch_generate`): the batch's.
        let decode = if r.batch_size == 1 { "decode_tokens_per_s" } else { "aggregate_decode_tokens_per_s" };
        for (metric, value) in [("prefill_tokens_per_s", r.prompt_tps), (decode, r.generation_tps)] {
            let short = if metric.starts_with("prefill") { "prefill" } else { "decode" };
            rows.push(MeasurementRow {
                id: format!("{stem}-{}-{short}", n + 1),
                system: labels.node.to_string(),
                nodes: labels.nodes.to_string(),
                node_mix: String::new(),
                model: labels.model.to_string(),
                quant: quant.clone(),
                engine: "mlx-lm".into(),
                parallelism: split.clone(),
                fabric: link.clone(),
                prompt_tokens: r.prompt_tokens.to_string(),
                concurrency: r.batch_size.to_string(),
                metric: metric.into(),
                value: crate::util::sig(value),
                unit: "tok/s".into(),
                source: format!("{} {source}", r.tool.command()),
                notes: notes.clone(),
                metric_read_as: None,
            });
        }
    }
    Ok((rows, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "Running warmup..\n\
        Timing with prompt_tokens=2048, generation_tokens=128, batch_size=1.\n\
        Trial 1:  prompt_tps=1600.000, generation_tps=130.000, peak_memory=3.350, total_time=2.300\n\
        Trial 2:  prompt_tps=1620.000, generation_tps=134.000, peak_memory=3.350, total_time=2.290\n\
        Averages: prompt_tps=1610.000, generation_tps=132.000, peak_memory=3.350\n";

    #[test]
    fn a_run_reads_its_shape_and_the_tools_averages() {
        assert!(looks_like(OUTPUT));
        let runs = parse(OUTPUT).unwrap();
        assert_eq!(
            runs,
            vec![MlxBenchRun {
                tool: MlxTool::Benchmark,
                prompt_tokens: 2048,
                generation_tokens: 128,
                batch_size: 1,
                trials: 2,
                prompt_tps: 1610.0,
                generation_tps: 132.0
            }]
        );
        // Without the averages line (output cut short): the trials' mean.
        let cut: String = OUTPUT.lines().filter(|l| !l.starts_with("Averages")).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse(&cut).unwrap()[0].generation_tps, 132.0);
        assert!(parse("Timing with prompt_tokens=512, generation_tokens=1024, batch_size=1.\n").unwrap_err().contains("no trial"));
        assert!(parse("Trial 1:  prompt_tps=1.0, generation_tps=2.0\n").unwrap_err().contains("before any `Timing with`"));
        assert!(parse("Timing with prompt_tokens=x, generation_tokens=1, batch_size=1.\n").unwrap_err().contains("not a number"));
    }

    /// `mlx_lm.generate --verbose`'s footer: one run per `Prompt:`/`Generation:` pair.
    #[test]
    fn a_generate_footer_reads_as_one_run() {
        let text = "Hello there\n==========\nPrompt: 1024 tokens, 1545.302 tokens-per-sec\nGeneration: 256 tokens, 98.118 tokens-per-sec\nPeak memory: 17.223 GB\n";
        assert!(looks_like(text));
        let runs = parse(text).unwrap();
        assert_eq!(
            runs,
            vec![MlxBenchRun {
                tool: MlxTool::Generate,
                prompt_tokens: 1024,
                generation_tokens: 256,
                batch_size: 1,
                trials: 1,
                prompt_tps: 1545.302,
                generation_tps: 98.118
            }]
        );
        assert!(!looks_like("Prompt: write me a poem\n"));
        assert!(parse("Generation: 12 tokens, 3.0 tokens-per-sec\n").unwrap_err().contains("without its `Prompt:`"));
        assert!(
            parse("Prompt: many tokens, 3 tokens-per-sec\nGeneration: 1 tokens, 2 tokens-per-sec\n").unwrap_err().contains("not `N tokens")
        );
    }

    #[test]
    fn repo_names_give_their_format() {
        assert_eq!(repo_quant("mlx-community/Qwen3-4B-Instruct-2507-4bit").as_deref(), Some("4bit"));
        assert_eq!(repo_quant("mlx-community/Qwen3-30B-A3B-Instruct-2507-8bit").as_deref(), Some("8bit"));
        assert_eq!(repo_quant("Qwen/Qwen3-4B-Instruct-2507"), None);
    }

    #[test]
    fn each_run_becomes_a_prefill_and_a_decode_row_a_batch_its_aggregate() {
        let mut runs = parse(OUTPUT).unwrap();
        runs.push(MlxBenchRun { batch_size: 4, ..runs[0].clone() });
        assert_eq!(runs[0].tool, MlxTool::Benchmark);
        let labels = Labels {
            node: "m4-max-40c-128gb",
            model: "mlx-community/Qwen3-4B-Instruct-2507-4bit",
            quant: None,
            nodes: 1,
            parallelism: None,
            fabric: None,
        };
        let (rows, skipped) = to_rows(&runs, &labels, "mb", "out.txt").unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[0].metric.as_str(), rows[0].value), ("prefill_tokens_per_s", 1610.0));
        assert_eq!((rows[1].metric.as_str(), rows[1].prompt_tokens.as_str()), ("decode_tokens_per_s", "2048"));
        assert_eq!((rows[1].quant.as_str(), rows[1].engine.as_str(), rows[1].parallelism.as_str()), ("4bit", "mlx-lm", "none"));
        assert!(rows[1].notes.contains("128 generated tokens"));
        assert_eq!((rows[3].metric.as_str(), rows[3].concurrency.as_str()), ("aggregate_decode_tokens_per_s", "4"));
        assert!(skipped.is_empty());
        // Several nodes need their split.
        let two = Labels { nodes: 2, ..labels };
        assert!(to_rows(&runs, &two, "mb", "out.txt").unwrap_err().contains("--parallelism"));
    }
}
