//! Command-line interface: clap commands, exit codes, terminal policy. No physics here.
//!
//! Every handler returns `Result<(), CliError>`; [`main_with_args`] prints the error in one place
//! and maps it to the exit code.

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::catalog::catalog;
use crate::report;

mod args;
pub mod calibration;
pub mod capacity;
mod error;
mod gantt;
mod run;
mod validate;

pub use args::{JobsArg, JsonArg, ProfileArg, SweepOutArgs};
pub use error::{CliError, EXIT_OK, ExitKind, JsonStyle};
pub use run::RunArgs;
pub use validate::ValidateArgs;

/// supernode: predict throughput, latency, power and cost of LLM inference on desktop AI
/// clusters (Mac Studio over Thunderbolt 5 RDMA, DGX Spark, Ryzen AI Max+).
///
/// Debug output: -v (or RUST_LOG, e.g. RUST_LOG=supernode=debug). Progress bars go to stderr,
/// only on a terminal; --quiet hides them. With --json, an error is also one JSON object on
/// stdout: {"error": {kind, message, file, line, column, help}} (run: {"fits": false, "error":
/// "...", "kind", "detail": {...}}).
#[derive(Debug, Parser)]
#[command(
    name = "supernode",
    version,
    about,
    long_about,
    after_help = "Exit codes: 0 ok, 1 internal or I/O failure, 2 bad input or a scenario that cannot run, 3 `validate --max-mape` exceeded."
)]
pub struct Cli {
    /// Debug output on stderr (-v debug, -vv trace); RUST_LOG, when set, chooses instead.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    pub verbose: u8,
    /// No progress bars or progress notes on stderr (errors and warnings still print).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// A user catalog file (`[[node]]`, `[[fabric]]`, `[[quant]]`, `[[model]]`; repeatable), added to
    /// the built-ins for this command; `$SUPERNODE_CATALOG` names more (':'-separated).
    #[arg(long = "catalog", global = true, value_name = "FILE")]
    pub catalogs: Vec<std::path::PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario file and print its predictions.
    Run(RunArgs),
    /// Draw one decode step (or a window of a serving run) per node and resource: a Gantt chart, PNG and SVG.
    Gantt(gantt::GanttArgs),
    /// Predict every row of a measurement CSV (or a harness file's end-to-end runs) and report the error of each.
    Validate(ValidateArgs),
    /// Capacity planning: sweep, merge, plot, plan, report.
    #[command(flatten)]
    Capacity(capacity::CapacityCommand),
    /// Calibration: calibrate, import.
    #[command(flatten)]
    Calibration(calibration::CalibrationCommand),
    /// List the built-in nodes, fabrics, models and quantizations with their sources.
    Catalog(CatalogArgs),
    /// Print a shell completion script: `supernode completions bash > /etc/bash_completion.d/supernode`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `supernode man > supernode.1`.
    Man,
}

/// Arguments of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

impl Command {
    /// How the command reports an error on stdout when it was given `--json`.
    fn json_style(&self) -> Option<JsonStyle> {
        let json = match self {
            Command::Run(a) => return a.json.json.then_some(JsonStyle::Run),
            Command::Validate(a) => a.json.json,
            Command::Gantt(a) => a.json.json,
            Command::Capacity(capacity::CapacityCommand::Plan(a)) => a.json.json,
            Command::Calibration(calibration::CalibrationCommand::Calibrate(a)) => a.json.json,
            _ => false,
        };
        json.then_some(JsonStyle::Error)
    }
}

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `--quiet` was given: no progress bars or notes.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A progress bar on stderr with an ETA: hidden under `--quiet` and when stderr is not a
/// terminal. `what` names the unit counted (points, candidates, ...).
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal as _;
    if quiet() || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    pb.set_style(
        indicatif::ProgressStyle::with_template(&format!("{{elapsed_precise}} [{{wide_bar}}] {{pos}}/{{len}} {what}  ETA {{eta}}"))
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb
}

/// A note about progress on stderr, unless `--quiet`.
macro_rules! note {
    ($($arg:tt)*) => {{
        if !$crate::cli::quiet() {
            eprintln!($($arg)*);
        }
    }};
}
pub(crate) use note;

/// Arguments of `catalog`.
#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Only one section: nodes, fabrics, models, quants or engines.
    pub section: Option<String>,
}

/// Runs the CLI and returns the process exit code.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    // Long lines stay whole so that file:line:column and messages are greppable in logs; colour
    // and unicode only on a terminal (miette checks the stream itself).
    let _ = miette::set_hook(Box::new(|_| Box::new(miette::MietteHandlerOpts::new().wrap_lines(false).build())));
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => return usage_error(&e, &args),
    };
    init_tracing(cli.verbose);
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    let json = cli.command.json_style();
    if let Err(e) = install_user_catalogs(&cli.catalogs) {
        return e.with_json(json).report();
    }
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Gantt(a) => gantt::gantt_command(a),
        Command::Validate(a) => validate::validate(a),
        Command::Capacity(c) => capacity::dispatch(c),
        Command::Calibration(c) => calibration::dispatch(c),
        Command::Catalog(a) => catalog_command(&a),
        Command::Completions(a) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(a.shell, &mut cmd, "supernode", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => man_page(),
    };
    match result {
        Ok(()) => EXIT_OK,
        Err(e) => e.with_json(json).report(),
    }
}

/// A command line clap refused (unknown flag, missing argument, bad value; exit 2), or a help or
/// version request (exit 0). With `--json` among the arguments a refusal is also printed on
/// stdout as the JSON error object of the command (`run`: `{"fits": false, ...}`, others:
/// `{"error": {kind: "usage", message, file, line, column, help}}`), as for any other error.
fn usage_error(e: &clap::Error, args: &[std::ffi::OsString]) -> i32 {
    if !e.use_stderr() {
        let _ = e.print();
        return EXIT_OK;
    }
    // Arguments before a `--` terminator; the first one is the program.
    let words: Vec<String> = args.iter().skip(1).map(|a| a.to_string_lossy().into_owned()).take_while(|a| a != "--").collect();
    if words.iter().any(|w| w == "--json") {
        let style = if words.iter().find(|w| !w.starts_with('-')).is_some_and(|w| w == "run") { JsonStyle::Run } else { JsonStyle::Error };
        let text = e.render().to_string();
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let message = lines.next().unwrap_or("invalid command line").trim_start_matches("error: ").to_string();
        let tips: Vec<&str> = lines.filter(|l| l.starts_with("tip:") || l.starts_with("Usage:")).collect();
        let sub = words.iter().find(|w| !w.starts_with('-')).map_or(String::new(), |w| format!("{w} "));
        let help = if tips.is_empty() { format!("see `supernode {sub}--help`") } else { tips.join("; ") };
        if let Some(v) = CliError::usage(message, help).json_object(style) {
            println!("{v}");
        }
    }
    let _ = e.print();
    ExitKind::Input.code()
}

/// Sends `tracing` events to stderr when asked: `RUST_LOG` when set (e.g.
/// `RUST_LOG=supernode::calibrate=debug`), else `supernode=debug` for `-v` and `supernode=trace`
/// for `-vv`. Without either no subscriber is installed and every event is a disabled no-op.
fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => None,
        1 => Some("supernode=debug"),
        _ => Some("supernode=trace"),
    };
    let filter = match (EnvFilter::try_from_default_env(), default) {
        (Ok(f), _) => f,
        (Err(_), Some(d)) => EnvFilter::new(d),
        (Err(_), None) => return,
    };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// Prints the man page of the whole CLI.
fn man_page() -> Result<(), CliError> {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).map_err(|e| CliError::failure(format!("cannot render the man page: {e}")))?;
    use std::io::Write as _;
    std::io::stdout().lock().write_all(&out).map_err(|_| CliError::silent(ExitKind::Failure))
}

/// Installs the user catalogs of `$SUPERNODE_CATALOG` and `--catalog`, in that order.
fn install_user_catalogs(flags: &[std::path::PathBuf]) -> Result<(), CliError> {
    let mut paths: Vec<std::path::PathBuf> = std::env::var_os("SUPERNODE_CATALOG")
        .map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    paths.extend(flags.iter().cloned());
    for path in paths {
        let shown = path.display().to_string();
        let text = crate::util::read_bounded(&path, crate::util::MAX_INPUT_BYTES)
            .map_err(|e| CliError::input(format!("cannot read catalog file {shown}: {e}")))?;
        let user = crate::catalog::user::parse_catalog_file(&shown, &text).map_err(|e| CliError::input(e.to_string()))?;
        crate::catalog::install(user).map_err(|m| CliError::input(format!("{shown}: {m}")))?;
    }
    Ok(())
}

fn catalog_command(a: &CatalogArgs) -> Result<(), CliError> {
    if let Some(s) = &a.section {
        if !["nodes", "fabrics", "models", "quants", "engines"].contains(&s.as_str()) {
            return Err(CliError::input(format!("unknown catalog section `{s}` (use nodes, fabrics, models, quants or engines)")));
        }
    }
    print!("{}", report::catalog_table(catalog(), a.section.as_deref()));
    Ok(())
}
