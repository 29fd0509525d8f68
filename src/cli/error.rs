//! The CLI's one error type: what the user is told and which exit code the process returns.
//! Handlers return `Result<(), CliError>`; `main_with_args` prints it in one place.

use crate::capacity::sweep::SweepError;
use crate::report::charts::ChartError;
use crate::scenario::{ErrorKind, ScenarioError};

/// Exit code of a successful command.
pub const EXIT_OK: i32 = 0;

/// Why a command failed, as the process exit code (README lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// 1: an internal or I/O failure (a file cannot be written, a prediction failed).
    Failure = 1,
    /// 2: bad input (scenario, arguments, measurement files) or a scenario that cannot run.
    Input = 2,
    /// 3: `validate --max-mape`: the error is above the bound.
    OverBound = 3,
}

impl ExitKind {
    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// What stderr says about a failure.
#[derive(Debug)]
enum Message {
    /// `error: TEXT`.
    Error(String),
    /// A located diagnostic (file:line:column, the source line, the fix) rendered by miette;
    /// `summary` is its one-line form for `--json`, `detail` its parts.
    Diagnostic { report: miette::Report, summary: String, detail: Box<Detail> },
    /// A line printed as it is: the command's output already told the story.
    Note(String),
    /// Nothing: the command's output already says why.
    Silent,
    /// A command line clap refused (it prints the message itself): the JSON object's parts.
    Usage { message: String, help: String },
}

/// The parts of a located error, for the JSON error object.
#[derive(Debug)]
struct Detail {
    message: String,
    file: String,
    line: usize,
    column: usize,
    help: Option<String>,
}

/// How `--json` reports an error on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonStyle {
    /// `run --json` (DESIGN.md's contract): `{"fits": false, "error": "<one line>", "kind": ...,
    /// "detail": {kind, message, file, line, column, help}}`.
    Run,
    /// Every other command: `{"error": {kind, message, file, line, column, help}}`.
    Error,
}

/// A failed command: its exit code, its message, and whether stdout owes a JSON error object.
#[derive(Debug)]
pub struct CliError {
    kind: ExitKind,
    message: Message,
    json: Option<JsonStyle>,
    /// What kind of error, for the JSON object's `kind` (scenario errors know theirs).
    error_kind: Option<ErrorKind>,
}

impl CliError {
    /// A command line clap refused (exit 2), for its JSON error object: kind `usage`, the
    /// message and clap's tip as help; no file.
    pub fn usage(message: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(ExitKind::Input, Message::Usage { message: message.into(), help: help.into() })
    }

    /// Bad input (exit 2), printed as `error: MESSAGE`.
    pub fn input(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Input, Message::Error(message.into()))
    }

    /// An internal or I/O failure (exit 1), printed as `error: MESSAGE`.
    pub fn failure(message: impl Into<String>) -> Self {
        Self::new(ExitKind::Failure, Message::Error(message.into()))
    }

    /// A failure whose line is printed as it is, without `error:`.
    pub fn note(kind: ExitKind, line: impl Into<String>) -> Self {
        Self::new(kind, Message::Note(line.into()))
    }

    /// A failure the command's output already explained: only the exit code.
    pub fn silent(kind: ExitKind) -> Self {
        Self::new(kind, Message::Silent)
    }

    /// A scenario error located at file:line:column (exit 2), rendered with its source line.
    pub fn scenario(e: ScenarioError) -> Self {
        let summary = format!("{e}{}", e.help.as_ref().map(|h| format!(" (help: {h})")).unwrap_or_default());
        let error_kind = Some(e.kind);
        let detail =
            Box::new(Detail { message: e.message.clone(), file: e.path.clone(), line: e.line, column: e.col, help: e.help.clone() });
        CliError { error_kind, ..Self::new(ExitKind::Input, Message::Diagnostic { report: miette::Report::new(e), summary, detail }) }
    }

    /// With a style, the error is also printed on stdout as one JSON object (see [`JsonStyle`]).
    pub fn with_json(mut self, json: Option<JsonStyle>) -> Self {
        self.json = json;
        self
    }

    /// The JSON object `--json` prints for this error (`None` when the command's output
    /// already told the story: a note or nothing).
    pub fn json_object(&self, style: JsonStyle) -> Option<serde_json::Value> {
        use serde_json::json;
        let kind = match (self.error_kind, self.kind) {
            (Some(k), _) => json!(k),
            (None, _) if matches!(self.message, Message::Usage { .. }) => json!("usage"),
            (None, ExitKind::Input) => json!("input"),
            (None, ExitKind::Failure) => json!("failure"),
            (None, ExitKind::OverBound) => json!("over-bound"),
        };
        let detail = match &self.message {
            Message::Error(m) => json!({"kind": kind, "message": m, "file": null, "line": null, "column": null, "help": null}),
            Message::Diagnostic { detail: d, .. } => {
                json!({"kind": kind, "message": d.message, "file": d.file, "line": d.line, "column": d.column, "help": d.help})
            }
            Message::Usage { message, help } => {
                json!({"kind": kind, "message": message, "file": null, "line": null, "column": null, "help": help})
            }
            Message::Note(_) | Message::Silent => return None,
        };
        Some(match style {
            JsonStyle::Run => json!({"fits": false, "error": self.summary(), "kind": kind, "detail": detail}),
            JsonStyle::Error => json!({"error": detail}),
        })
    }

    /// The exit code's kind.
    pub fn kind(&self) -> ExitKind {
        self.kind
    }

    /// The one-line message (`None` when silent).
    pub fn summary(&self) -> Option<&str> {
        match &self.message {
            Message::Error(s) | Message::Note(s) | Message::Diagnostic { summary: s, .. } | Message::Usage { message: s, .. } => Some(s),
            Message::Silent => None,
        }
    }

    /// Prints the error (stderr; the JSON object on stdout when asked) and returns the exit code.
    pub fn report(self) -> i32 {
        if let Some(v) = self.json.and_then(|style| self.json_object(style)) {
            println!("{v}");
        }
        match self.message {
            Message::Error(s) => eprintln!("error: {s}"),
            Message::Diagnostic { report, .. } => eprintln!("{report:?}"),
            Message::Note(s) => eprintln!("{s}"),
            Message::Usage { message, help } => eprintln!("error: {message}\n  {help}"),
            Message::Silent => {}
        }
        self.kind.code()
    }

    fn new(kind: ExitKind, message: Message) -> Self {
        CliError { kind, message, json: None, error_kind: None }
    }
}

impl From<SweepError> for CliError {
    fn from(e: SweepError) -> Self {
        match e {
            SweepError::Scenario(e) => CliError::scenario(*e),
            SweepError::Input(m) => CliError::input(m),
            SweepError::Io(m) => CliError::failure(m),
        }
    }
}

impl From<ChartError> for CliError {
    fn from(e: ChartError) -> Self {
        match e {
            ChartError::Input(m) => CliError::input(m),
            ChartError::Draw(m) => CliError::failure(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_documented_ones() {
        assert_eq!(CliError::failure("x").kind().code(), 1);
        assert_eq!(CliError::input("x").kind().code(), 2);
        assert_eq!(CliError::note(ExitKind::OverBound, "x").kind().code(), 3);
        assert_eq!(CliError::from(SweepError::Io("disk full".into())).kind(), ExitKind::Failure);
        assert_eq!(CliError::from(ChartError::Input("no rows".into())).kind(), ExitKind::Input);
        assert_eq!(CliError::silent(ExitKind::Input).summary(), None);
    }
}
