//! Calibration commands: `calibrate`, `import`.

use std::path::PathBuf;

use clap::Subcommand;

use super::{EXIT_FAILURE, EXIT_INPUT, EXIT_OK, load_profile};
use crate::calibrate::{self, Dataset, HarnessUse};
use crate::profile::Profile;

/// Calibration subcommands.
#[derive(Debug, Subcommand)]
pub enum CalibrationCommand {
    /// Fit the twin's parameters to measurements (harness JSON and/or measurement CSV) and write a profile.
    Calibrate {
        /// Measurement files: harness JSON (microbenchmarks) and/or CSV in the format of shared/data/measurements.csv.
        #[arg(required = true)]
        measurements: Vec<PathBuf>,
        /// Output profile (TOML).
        #[arg(short = 'o', long = "out")]
        out: PathBuf,
        /// Starting profile (default: the embedded profile).
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Parameters to fit, comma-separated dotted paths (default: those the data constrain).
        #[arg(long, value_delimiter = ',')]
        params: Option<Vec<String>>,
        /// Weight of the prior toward the starting profile's values, per unit of log / logit
        /// (0 = plain least squares). Default: 0.1 when the data include published rows (the
        /// starting values are sourced), 0 for harness files alone (theirs are only seeds).
        #[arg(long, value_parser = calibrate::parse_prior_weight)]
        prior_weight: Option<f64>,
        /// Print the fit report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Turn llama-bench output (-o md, json, jsonl or csv) into measurement CSV rows for `validate` and `calibrate`.
    Import {
        /// llama-bench output files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The catalog node the benchmarks ran on (default: matched from the GPU name llama-bench records, when unique).
        #[arg(long)]
        node: Option<String>,
        /// Write the rows here (CSV) instead of standard output.
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
    },
}

/// Runs a calibration command and returns the exit code.
pub fn dispatch(c: CalibrationCommand) -> i32 {
    match c {
        CalibrationCommand::Calibrate { measurements, out, profile, params, prior_weight, json } => {
            run_calibrate(&measurements, &out, profile, params, prior_weight, json)
        }
        CalibrationCommand::Import { files, node, out } => run_import(&files, node.as_deref(), out.as_deref()),
    }
}

fn run_import(files: &[PathBuf], node: Option<&str>, out: Option<&std::path::Path>) -> i32 {
    use crate::calibrate::llama_bench;
    let mut rows = Vec::new();
    let mut tests = 0;
    let mut stems: Vec<String> = Vec::new();
    for f in files {
        let records = match llama_bench::read(f) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        };
        tests += records.len();
        // Row ids start with the file's stem; two files of the same name get -2, -3, ...
        let base = f.file_stem().map_or_else(|| "bench".to_string(), |s| s.to_string_lossy().into_owned());
        let same = stems.iter().filter(|s| **s == base).count();
        stems.push(base.clone());
        let stem = if same == 0 { base } else { format!("{base}-{}", same + 1) };
        let (mut got, skipped) = match llama_bench::to_rows(&records, node, &stem, &f.display().to_string()) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {}: {e}", f.display());
                return EXIT_INPUT;
            }
        };
        for s in &skipped {
            eprintln!("skipped {}: {}", s.what, s.reason);
        }
        rows.append(&mut got);
    }
    if rows.is_empty() {
        eprintln!("error: none of the {tests} llama-bench tests became a measurement row (reasons above)");
        return EXIT_INPUT;
    }
    let text = llama_bench::rows_csv(&rows);
    match out {
        Some(path) => {
            if let Err(e) = crate::util::write_atomic(path, text.as_bytes()) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return EXIT_FAILURE;
            }
            eprintln!("import: {} rows from {tests} llama-bench tests written to {}", rows.len(), path.display());
        }
        None => {
            print!("{text}");
            eprintln!("import: {} rows from {tests} llama-bench tests", rows.len());
        }
    }
    EXIT_OK
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
            // llama-bench output is a measurement too, but it needs the node it ran on first.
            if crate::calibrate::llama_bench::read(f).is_ok() {
                return Err(format!(
                    "{} is llama-bench output: turn it into measurement rows first, e.g. `supernode import {} --node m3-ultra-80c-512gb -o rows.csv` (`supernode catalog nodes` lists the nodes)",
                    f.display(),
                    f.display()
                ));
            }
            return Err(e);
        }
    }
    Ok(d)
}

fn run_calibrate(
    files: &[PathBuf],
    out: &std::path::Path,
    profile: Option<PathBuf>,
    params: Option<Vec<String>>,
    prior_weight: Option<f64>,
    json: bool,
) -> i32 {
    let base = match load_profile(profile) {
        Ok(p) => calibrate::with_host_chip(&p),
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let data = match load_dataset(files, &base, HarnessUse::Fit) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    eprintln!("calibrate: {} measurements from {} file(s); fitting...", data.targets.len(), data.files.len());
    let prior_weight = prior_weight.unwrap_or_else(|| data.default_prior_weight());
    let (mut fitted, report, dropped) = match calibrate::calibrate(&data, &base, params, prior_weight) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let name = out.file_stem().map_or_else(|| "fitted".to_string(), |s| s.to_string_lossy().into_owned());
    let ctx = calibrate::provenance::FitContext { name, date: crate::util::today(), data: &data, prior_weight };
    calibrate::provenance::describe_fit(&mut fitted, &base, &report, &ctx);
    let text = calibrate::provenance::profile_text(&fitted, &dropped);
    if let Err(e) = crate::util::write_atomic(out, text.as_bytes()) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return EXIT_FAILURE;
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serializes"));
    } else {
        print!("{}", fit_table(&report, &dropped));
        println!("profile written to {}", out.display());
    }
    EXIT_OK
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
