//! Calibration commands: `calibrate`, `import`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::CliError;
use super::args::{JsonArg, ProfileArg};
use crate::calibrate::{self, Dataset, HarnessUse, exo_bench, llama_bench};
use crate::profile::Profile;

/// Calibration subcommands.
#[derive(Debug, Subcommand)]
pub enum CalibrationCommand {
    /// Fit the twin's parameters to measurements (harness JSON and/or measurement CSV) and write a profile.
    Calibrate(CalibrateArgs),
    /// Turn llama-bench output (-o md, json, jsonl or csv), llama-batched-bench output, exo-bench JSON, mlx_lm.benchmark output or serving benchmark results (vllm bench serve, SGLang bench_serving, llama-benchy) into measurement CSV rows for `validate` and `calibrate`.
    ///
    /// llama-benchy output (its markdown table or `--format json`) becomes, per run of C
    /// requests sent at once, its prompt rate, generation rate, per-request generation rate
    /// (C > 1) and time to first token, which `validate` reads as the tool computes them; the
    /// output names no hardware or server (`--node`, `--engine`), the model is the one it
    /// printed (or `--model`), the format its suffix or native release (or `--quant`); runs after
    /// a filled context (`@ dD`) are skipped.
    ///
    /// llama-batched-bench output (its table or `--output-format jsonl`) becomes an S_PP
    /// (`prefill_tokens_per_s`) and an S_TG (`aggregate_decode_tokens_per_s`) row per test, at
    /// concurrency B with its `-ub`; the model is the GGUF file its log loaded (or `--model`, the
    /// format from the file name's label or `--quant`), the node the log's GPU (or `--node`), the
    /// engine `llama-cpp` (or `--engine llama-cpp-rocm`, ...); shared-prompt (`-pps`) tests are
    /// skipped.
    ///
    /// Serving results (`vllm bench serve --save-result` JSON, SGLang `bench_serving` JSON lines)
    /// become one row per metric a run reports: request and output throughput, mean, median and
    /// P99 TTFT and TPOT, at the run's `max_concurrency` with its mean prompt and output; a run
    /// paced by a request rate is skipped (`validate` replays closed loops). The model is vLLM's
    /// `model_id` (SGLang's results name none: `--model`), the format its suffix or the model's
    /// native release (`--quant`), the engine the run's `backend` (`--engine`).
    ///
    /// Models are found by the names people write, through the same resolver as scenarios,
    /// `validate` and `plan --model`: exo-bench's `model_id` as a Hugging Face repo id
    /// (`mlx-community/Qwen3-Next-80B-A3B-Instruct-4bit`: organisation, release and format
    /// suffixes dropped; the quant from its suffix: -4bit, -6bit, -8bit, -bf16, -MXFP4-Q8);
    /// llama-bench's `model_filename` (json, jsonl, csv) as a GGUF file name
    /// (`gpt-oss-120b-mxfp4-00001-of-00003.gguf`, `GLM-4.5-Air-Q4_K_M.gguf`: shard suffix and quant
    /// label dropped), else its `model_type` by architecture and parameter count (`llama 70B
    /// Q4_K - Medium`; the markdown table has no file name). The quant is the `model_type`'s file
    /// type, or the file name's label where that is absent or generic (F16, guessed). Each row's
    /// notes say which decided; an unknown or ambiguous name is skipped with what was tried.
    /// `supernode catalog models` lists the models.
    Import(ImportArgs),
}

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Measurement files: harness JSON (microbenchmarks) and/or CSV in the format of shared/data/measurements.csv.
    #[arg(required = true)]
    pub measurements: Vec<PathBuf>,
    /// Output profile (TOML).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// `--profile` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub profile: ProfileArg,
    /// Parameters to fit, comma-separated dotted paths (default: those the data constrain); a
    /// tied name, `chips.{m3-ultra,m2-ultra}.bw_eff_dense`, is one parameter for every member.
    #[arg(long)]
    pub params: Option<String>,
    /// Weight of the prior toward the starting profile's values, per unit of log / logit
    /// (0 = plain least squares). Default: 0.1 when the data include published rows (the
    /// starting values are sourced), 0 for harness files alone (theirs are only seeds).
    #[arg(long, value_parser = calibrate::parse_prior_weight)]
    pub prior_weight: Option<f64>,
    /// `--json` (clap reads the help from the flattened type).
    #[command(flatten)]
    pub json: JsonArg,
    /// Keep the values of the --profile's own fit and only compute its `[uncertainty]` (for
    /// prediction intervals) and the rows that move each fitted parameter, on these
    /// measurements: for a profile fitted before `calibrate` wrote them.
    #[arg(long, conflicts_with = "params")]
    pub uncertainty_only: bool,
}

/// Arguments of `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// llama-bench output files (md, json, jsonl, csv), llama-batched-bench output (table or
    /// jsonl), llama-benchy output (md or json), exo-bench JSON, serving benchmark results (`vllm bench serve --save-result` JSON, SGLang `bench_serving` JSON lines), or
    /// `mlx_lm.benchmark` output or `mlx_lm.generate --verbose`'s timing footer (their printed
    /// text), told apart by content.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Serving results, mlx-lm and llama-batched-bench output: the model (a repo id, catalog
    /// name or GGUF file name; default: vLLM's `model_id`, the GGUF file a llama-batched-bench
    /// log loaded; SGLang's results and mlx_lm.benchmark name none).
    #[arg(long)]
    pub model: Option<String>,
    /// Serving results, mlx-lm and llama-batched-bench output: the quantization (default: the
    /// model id's format suffix, -FP8, -NVFP4, -AWQ, -4bit, -8bit, a GGUF file's label, or the
    /// model's native release).
    #[arg(long)]
    pub quant: Option<String>,
    /// Serving results: the engine served (default: from the run's `backend`: vllm, openai,
    /// openai-chat are vLLM; sglang* SGLang; trt, tensorrt-llm TensorRT-LLM);
    /// llama-batched-bench: its build (default `llama-cpp`; `llama-cpp-rocm`, `llama-cpp-vulkan`).
    #[arg(long)]
    pub engine: Option<String>,
    /// Serving results and mlx-lm output: the nodes the run spanned (the files record
    /// none; mlx_lm.benchmark under `mlx.launch` prints rank 0 only).
    #[arg(long, default_value_t = 1)]
    pub nodes: u64,
    /// Serving results and mlx-lm output: how the model was split over --nodes
    /// (`TP=2`, `tensor`, `pipeline`, `expert`, `TP2 PP2`, as `validate` reads the column;
    /// mlx_lm.benchmark: tensor unless it ran with `--pipeline`).
    #[arg(long)]
    pub parallelism: Option<String>,
    /// exo-bench and serving results: the fabric of multi-node runs (default: exo's tb5-rdma for
    /// JACCL, tb5-tcp for the ring; a server's, the machines' own link, e.g. the Sparks' ConnectX-7).
    #[arg(long)]
    pub fabric: Option<String>,
    /// The catalog node the benchmarks ran on (default: matched from the GPU name llama-bench or a llama-batched-bench log records, when unique).
    #[arg(long)]
    pub node: Option<String>,
    /// Write the rows here (CSV) instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Take --node even when it contradicts the GPU name in the file (relabel the run).
    #[arg(long, requires = "node")]
    pub force: bool,
}

/// Runs a calibration command.
pub fn dispatch(c: CalibrationCommand) -> Result<(), CliError> {
    match c {
        CalibrationCommand::Calibrate(a) => run_calibrate(&a),
        CalibrationCommand::Import(a) => run_import(&a),
    }
}

fn run_import(a: &ImportArgs) -> Result<(), CliError> {
    let mut rows = Vec::new();
    let mut tests = 0;
    let mut what = "llama-bench tests";
    let mut stems: Vec<String> = Vec::new();
    for f in &a.files {
        // Row ids start with the file's stem; two files of the same name get -2, -3, ...
        let base = f.file_stem().map_or_else(|| "bench".to_string(), |s| s.to_string_lossy().into_owned());
        let same = stems.iter().filter(|s| **s == base).count();
        stems.push(base.clone());
        let stem = if same == 0 { base } else { format!("{base}-{}", same + 1) };
        let text = crate::util::read_bounded(f, crate::util::MAX_INPUT_BYTES)
            .map_err(|e| CliError::input(format!("cannot read {}: {e}", f.display())))?;
        if let Some(got) = import_serving(a, f, &text, &stem)? {
            tests += got.1;
            what = "benchmark runs";
            rows.extend(got.0);
            continue;
        }
        if let Some(got) = import_benchy(a, f, &text, &stem)? {
            tests += got.1;
            what = "benchmark runs";
            rows.extend(got.0);
            continue;
        }
        if let Some(got) = import_batched_bench(a, f, &text, &stem)? {
            tests += got.1;
            what = "benchmark tests";
            rows.extend(got.0);
            continue;
        }
        if let Some(got) = import_mlx_bench(a, f, &text, &stem)? {
            tests += got.1;
            what = "benchmark runs";
            rows.extend(got.0);
            continue;
        }
        if let Some(got) = import_exo(a, f, &text, &stem)? {
            tests += got.1;
            what = "benchmark tests";
            rows.extend(got.0);
            continue;
        }
        let records = llama_bench::read(f).map_err(|e| CliError::input(e.to_string()))?;
        tests += records.len();
        if let (Some(node), false) = (a.node.as_deref(), a.force) {
            llama_bench::check_node(&records, node, crate::catalog::catalog())
                .map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
        }
        let (mut got, skipped) = llama_bench::to_rows(&records, a.node.as_deref(), &stem, &f.display().to_string())
            .map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
        for s in &skipped {
            eprintln!("skipped {}: {}", s.what, s.reason);
        }
        rows.append(&mut got);
    }
    if rows.is_empty() {
        return Err(CliError::input(format!("none of the {tests} {what} became a measurement row (reasons above)")));
    }
    let text = llama_bench::rows_csv(&rows);
    match &a.out {
        Some(path) => {
            write_file(path, text.as_bytes())?;
            super::note!("import: {} rows from {tests} {what} written to {}", rows.len(), path.display());
        }
        None => {
            print!("{text}");
            super::note!("import: {} rows from {tests} {what}", rows.len());
        }
    }
    Ok(())
}

/// The `--node` a file that records no hardware needs, or the error asking for it.
fn required_node<'a>(a: &'a ImportArgs, f: &Path, what: &str, example: &str) -> Result<&'a str, CliError> {
    a.node.as_deref().ok_or_else(|| {
        CliError::input(format!(
            "{}: {what} record no hardware: pass --node (e.g. --node {example}; `supernode catalog nodes` lists them)",
            f.display()
        ))
    })
}

/// Prints what an import skipped, with why.
fn report_skipped(skipped: &[(String, String)]) {
    for (what, why) in skipped {
        eprintln!("skipped {what}: {why}");
    }
}

/// The labels of a serving benchmark's runs (`vllm bench serve`, SGLang `bench_serving`,
/// llama-benchy) from the import flags.
fn serving_labels<'a>(a: &'a ImportArgs, node: &'a str) -> calibrate::serve_bench::Labels<'a> {
    calibrate::serve_bench::Labels {
        node,
        model: a.model.as_deref(),
        quant: a.quant.as_deref(),
        engine: a.engine.as_deref(),
        nodes: a.nodes,
        parallelism: a.parallelism.as_deref(),
        fabric: a.fabric.as_deref(),
    }
}

/// A serving benchmark result file's rows and run count, or `None` when the file is not one.
fn import_serving(
    a: &ImportArgs,
    f: &Path,
    text: &str,
    stem: &str,
) -> Result<Option<(Vec<calibrate::validate::MeasurementRow>, usize)>, CliError> {
    use calibrate::serve_bench;
    if !serve_bench::looks_like(text) {
        return Ok(None);
    }
    let runs = serve_bench::parse(text).map_err(|e| CliError::input(format!("{}: serving benchmark results: {e}", f.display())))?;
    let labels = serving_labels(a, required_node(a, f, "serving benchmark results", "dgx-spark")?);
    let (rows, skipped) = serve_bench::to_rows(&runs, &labels, stem, &f.display().to_string())
        .map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
    report_skipped(&skipped);
    Ok(Some((rows, runs.len())))
}

/// An `mlx_lm.benchmark` output's (or `mlx_lm.generate --verbose` footers') rows and run count,
/// or `None` when the file is neither.
fn import_mlx_bench(
    a: &ImportArgs,
    f: &Path,
    text: &str,
    stem: &str,
) -> Result<Option<(Vec<calibrate::validate::MeasurementRow>, usize)>, CliError> {
    use calibrate::mlx_bench;
    if !mlx_bench::looks_like(text) {
        return Ok(None);
    }
    let runs =
        mlx_bench::parse(text).map_err(|e| CliError::input(format!("{}: mlx_lm.benchmark / mlx_lm.generate output: {e}", f.display())))?;
    let node = required_node(a, f, "mlx_lm.benchmark and mlx_lm.generate runs", "m4-max-40c-128gb")?;
    let model = a.model.as_deref().ok_or_else(|| {
        CliError::input(format!("{}: mlx_lm.benchmark / mlx_lm.generate output names no model: pass --model (the repo it ran, e.g. --model mlx-community/Qwen3-4B-Instruct-2507-4bit)", f.display()))
    })?;
    let labels = mlx_bench::Labels {
        node,
        model,
        quant: a.quant.as_deref(),
        nodes: a.nodes,
        parallelism: a.parallelism.as_deref(),
        fabric: a.fabric.as_deref(),
    };
    let (rows, skipped) =
        mlx_bench::to_rows(&runs, &labels, stem, &f.display().to_string()).map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
    report_skipped(&skipped);
    Ok(Some((rows, runs.len())))
}

/// A llama-benchy output's rows and run count, or `None` when the file is not one.
fn import_benchy(
    a: &ImportArgs,
    f: &Path,
    text: &str,
    stem: &str,
) -> Result<Option<(Vec<calibrate::validate::MeasurementRow>, usize)>, CliError> {
    use calibrate::benchy;
    if !benchy::looks_like(text) {
        return Ok(None);
    }
    let file = benchy::parse(text).map_err(|e| CliError::input(format!("{}: llama-benchy output: {e}", f.display())))?;
    let labels = serving_labels(a, required_node(a, f, "llama-benchy runs", "dgx-spark")?);
    let (rows, skipped) =
        benchy::to_rows(&file, &labels, stem, &f.display().to_string()).map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
    report_skipped(&skipped);
    Ok(Some((rows, file.runs.len())))
}

/// A llama-batched-bench output's rows and test count, or `None` when the file is not one.
fn import_batched_bench(
    a: &ImportArgs,
    f: &Path,
    text: &str,
    stem: &str,
) -> Result<Option<(Vec<calibrate::validate::MeasurementRow>, usize)>, CliError> {
    use calibrate::batched_bench;
    if !batched_bench::looks_like(text) {
        return Ok(None);
    }
    let (tests, log) =
        batched_bench::parse(text).map_err(|e| CliError::input(format!("{}: llama-batched-bench output: {e}", f.display())))?;
    let labels = batched_bench::Labels {
        node: a.node.as_deref(),
        model: a.model.as_deref(),
        quant: a.quant.as_deref(),
        engine: a.engine.as_deref(),
    };
    let (rows, skipped) = batched_bench::to_rows(&tests, &log, &labels, crate::catalog::catalog(), stem, &f.display().to_string())
        .map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
    report_skipped(&skipped);
    Ok(Some((rows, tests.len())))
}

/// An exo-bench file's rows and run count, or `None` when the file is not exo-bench JSON.
fn import_exo(
    a: &ImportArgs,
    f: &Path,
    text: &str,
    stem: &str,
) -> Result<Option<(Vec<calibrate::validate::MeasurementRow>, usize)>, CliError> {
    if !exo_bench::looks_like(text) {
        return Ok(None);
    }
    let runs = exo_bench::parse(text).map_err(|e| CliError::input(format!("{}: exo-bench output: {e}", f.display())))?;
    let node = required_node(a, f, "exo-bench runs", "m3-ultra-80c-512gb")?;
    let (rows, skipped) = exo_bench::to_rows(&runs, node, a.fabric.as_deref(), stem, &f.display().to_string())
        .map_err(|e| CliError::input(format!("{}: {e}", f.display())))?;
    report_skipped(&skipped);
    Ok(Some((rows, runs.len())))
}

/// Writes a file atomically; failing is an I/O error naming it.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    crate::util::write_atomic(path, bytes).map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))
}

/// Loads measurement files into a data set: `.json` as harness output, anything else as CSV.
pub(crate) fn load_dataset(files: &[PathBuf], profile: &Profile, harness_use: HarnessUse) -> Result<Dataset, String> {
    let mut d = Dataset::default();
    for f in files {
        let is_json = f.extension().is_some_and(|e| e == "json");
        let added = if is_json {
            d.add_harness(f, harness_use).map_err(|e| e.to_string())
        } else {
            d.add_csv(f, profile).map_err(|e| e.to_string())
        };
        if let Err(e) = added {
            // Serving benchmark results and llama-bench output are measurements too, but they
            // need the node they ran on first.
            let text = crate::util::read_bounded(f, crate::util::MAX_INPUT_BYTES).unwrap_or_default();
            if calibrate::benchy::looks_like(&text) {
                return Err(format!(
                    "{} is llama-benchy output: turn it into measurement rows first, e.g. `supernode import {} --node dgx-spark --engine vllm -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            if calibrate::batched_bench::looks_like(&text) {
                return Err(format!(
                    "{} is llama-batched-bench output: turn it into measurement rows first, e.g. `supernode import {} --node dgx-spark --model gpt-oss-120b-mxfp4.gguf -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            if calibrate::mlx_bench::looks_like(&text) {
                return Err(format!(
                    "{} is mlx_lm.benchmark or mlx_lm.generate output: turn it into measurement rows first, e.g. `supernode import {} --node m4-max-40c-128gb --model mlx-community/Qwen3-4B-Instruct-2507-4bit -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            if calibrate::serve_bench::looks_like(&text) {
                return Err(format!(
                    "{} is a serving benchmark result (vllm bench serve / SGLang bench_serving): turn it into measurement rows first, e.g. `supernode import {} --node dgx-spark -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            if llama_bench::read(f).is_ok() {
                return Err(format!(
                    "{} is llama-bench output: turn it into measurement rows first, e.g. `supernode import {} --node m3-ultra-80c-512gb -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            return Err(e);
        }
        // A measured rate or power of 0 or below has no relative error (MAPE would be inf).
        if let Some(t) = d.targets.iter().find(|t| !(t.measured.is_finite() && t.measured > 0.0)) {
            return Err(format!(
                "{}: row `{}` has measured value {}; a measurement must be a positive number",
                f.display(),
                t.id,
                t.measured
            ));
        }
    }
    if d.targets.is_empty() {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        if d.skipped.is_empty() {
            return Err(format!(
                "no measurements in {}: no rows at all (an empty file?); give a measurement CSV (the format of shared/data/measurements.csv, a header and one row per measurement) or a harness JSON",
                names.join(", ")
            ));
        }
        // Why each row was set aside: the user's next step (a label, an engine, a column).
        const SHOWN: usize = 10;
        let mut why: Vec<String> = d.skipped.iter().take(SHOWN).map(|(id, reason)| format!("\n  {id}: {reason}")).collect();
        if d.skipped.len() > SHOWN {
            why.push(format!("\n  ... and {} more", d.skipped.len() - SHOWN));
        }
        return Err(format!("no measurements in {}: {} rows, none predictable:{}", names.join(", "), d.skipped.len(), why.concat()));
    }
    Ok(d)
}

fn run_calibrate(a: &CalibrateArgs) -> Result<(), CliError> {
    let base = calibrate::with_host_chip(&a.profile.load()?);
    // Rows predicted with a later build's kernels than they measured are not fitted; said on
    // stderr whatever --quiet says (the fit is of the other rows).
    let all = load_dataset(&a.measurements, &base, HarnessUse::Fit).map_err(CliError::input)?;
    let data = all.fitted_only();
    // `fitted_only` appends the rows it leaves out after those the loader set aside.
    for (id, why) in &data.skipped[all.skipped.len()..] {
        eprintln!("calibrate: {id} left out of the fit: {why}");
    }
    super::note!("calibrate: {} measurements from {} file(s); fitting...", data.targets.len(), data.files.len());
    let prior_weight = a.prior_weight.unwrap_or_else(|| data.default_prior_weight());
    if a.uncertainty_only {
        return uncertainty_only(a, base, &data, prior_weight);
    }
    let fit =
        with_evaluation_counter(|| calibrate::calibrate(&data, &base, a.params.as_deref().map(calibrate::split_param_list), prior_weight));
    let (mut fitted, report, dropped) = fit.map_err(|e| CliError::input(e.to_string()))?;
    let name = a.out.file_stem().map_or_else(|| "fitted".to_string(), |s| s.to_string_lossy().into_owned());
    let ctx = calibrate::provenance::FitContext { name, date: crate::util::today(), data: &data, prior_weight };
    calibrate::provenance::describe_fit(&mut fitted, &base, &report, &ctx);
    attach_uncertainty(&data, &mut fitted, prior_weight);
    let text = calibrate::provenance::profile_text(&fitted, &dropped);
    write_file(&a.out, text.as_bytes())?;
    if a.json.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        print!("{}", fit_table(&report, &dropped));
        println!("profile written to {}", a.out.display());
    }
    Ok(())
}

/// Writes the fit's uncertainty and, per fitted parameter, the rows that move it into `fitted`
/// (a warning, and no intervals, when the linearisation fails).
fn attach_uncertainty(data: &Dataset, fitted: &mut Profile, prior_weight: f64) {
    let Some(report) = fitted.fit.clone() else { return };
    match calibrate::fit_uncertainty(data, fitted, &report, prior_weight) {
        Ok((u, rows)) => {
            fitted.uncertainty = Some(u);
            if let Some(f) = fitted.fit.as_mut() {
                f.params.iter_mut().zip(rows).for_each(|(p, (ids, runtimes))| {
                    p.rows = ids;
                    p.runtimes = runtimes;
                });
            }
        }
        Err(e) => eprintln!("warning: no prediction intervals in the profile: {e}"),
    }
}

/// `calibrate --uncertainty-only`: the --profile as it is, with its fit's uncertainty.
fn uncertainty_only(a: &CalibrateArgs, base: Profile, data: &Dataset, prior_weight: f64) -> Result<(), CliError> {
    if base.fit.is_none() {
        return Err(CliError::input("--uncertainty-only needs a fitted --profile (one with a [fit] table, written by `calibrate`)"));
    }
    let mut out = base;
    attach_uncertainty(data, &mut out, prior_weight);
    let fitted: Vec<&str> = out.fit.iter().flat_map(|f| f.params.iter().map(|p| p.name.as_str())).collect();
    let dropped: Vec<String> = calibrate::default_params(data).into_iter().filter(|p| !fitted.contains(&p.as_str())).collect();
    write_file(&a.out, calibrate::provenance::profile_text(&out, &dropped).as_bytes())?;
    println!("profile written to {} (values kept; uncertainty of its fit added)", a.out.display());
    Ok(())
}

/// Runs `f` (a fit) with a spinner on stderr counting the predictions evaluated so far and the
/// time spent: a fit's number of steps is not known in advance, so there is no honest ETA.
/// Hidden under `--quiet` and when stderr is not a terminal.
fn with_evaluation_counter<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    use std::io::IsTerminal as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    if super::quiet() || !std::io::stderr().is_terminal() {
        return f();
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} fitting: {pos} predictions evaluated")
            .expect("valid template"),
    );
    let start = calibrate::fit::EVALUATIONS.load(Ordering::Relaxed);
    let finished = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !finished.load(Ordering::Relaxed) {
                pb.set_position(calibrate::fit::EVALUATIONS.load(Ordering::Relaxed) - start);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        let out = f();
        finished.store(true, Ordering::Relaxed);
        out
    });
    pb.finish_and_clear();
    out
}

/// The fit report as text.
pub fn fit_table(r: &crate::profile::FitReport, dropped: &[String]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "{:<55} {:>12} {:>12} {:>12}", "parameter", "initial", "fitted", "std error");
    for p in &r.params {
        let se = p.std_error.map_or_else(|| "n/a".to_string(), |e| format!("{e:.4}"));
        let _ = writeln!(s, "{:<55} {:>12.4} {:>12.4} {:>12}", p.name, p.initial, p.value, se);
    }
    if !dropped.is_empty() {
        let _ = writeln!(s, "not constrained or not separable by the data (kept as is): {}", dropped.join(", "));
    }
    let _ = writeln!(s, "\n{:<40} {:>10}", "measurement", "residual");
    for x in &r.residuals {
        let _ = writeln!(s, "{:<40} {:>9.2}%", x.id, x.error_percent);
    }
    let _ = writeln!(
        s,
        "\nRMS {:.2}%, MAPE {:.2}%, {} degrees of freedom, {} evaluations, {}",
        r.rms_percent, r.mape_percent, r.dof, r.evaluations, r.termination
    );
    s
}
