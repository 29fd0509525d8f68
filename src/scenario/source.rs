//! Where a scenario came from and how its errors point at file:line:column with a fix.

// Errors carry the source text for rendering; they are the cold path, so their size is fine.
#![allow(clippy::result_large_err)]

use std::ops::Range;
use std::path::PathBuf;

use miette::{NamedSource, SourceSpan};
use toml::Spanned;

use crate::engine::PlanError;
use crate::engine::split::SplitError;
use crate::hw::cabling::CablingError;
use crate::util::did_you_mean;

/// What kind of problem stops a scenario, for grouping and for machines (run's JSON `kind`,
/// sweep rows, the planner's failure groups). Derived from the typed errors where they arise,
/// never from message text, so rewording a message regroups nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The model and its KV cache do not fit in the nodes' memory.
    DoesNotFit,
    /// The prompt plus the generated tokens are longer than the model's context window.
    ContextWindow,
    /// The profile has no parameters for a chip and runtime.
    Uncalibrated,
    /// The engine cannot split the model that way over these nodes.
    IllegalSplit,
    /// The topology needs more ports per node (or peers) than the nodes have.
    TooFewPorts,
    /// A node lacks the fabric's kind of port (Thunderbolt generation, QSFP, RDMA).
    MissingPorts,
    /// The fabric cannot be cabled in the topology asked for.
    Topology,
    /// The quantization is in a format the engine cannot load.
    QuantFormat,
    /// A name that is not a preset or option (node, fabric, model, quant, engine, ...).
    UnknownPreset,
    /// A key that is not a scenario key.
    UnknownKey,
    /// A value of the wrong type, out of range or malformed.
    BadValue,
    /// Any other inconsistency in the scenario (conflicting or missing keys, ...).
    #[serde(alias = "invalid")]
    Invalid,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::DoesNotFit,
        ErrorKind::ContextWindow,
        ErrorKind::Uncalibrated,
        ErrorKind::IllegalSplit,
        ErrorKind::TooFewPorts,
        ErrorKind::MissingPorts,
        ErrorKind::Topology,
        ErrorKind::QuantFormat,
        ErrorKind::UnknownPreset,
        ErrorKind::UnknownKey,
        ErrorKind::BadValue,
        ErrorKind::Invalid,
    ];

    /// Whether the kind is about one value on its own (an unknown name or key, a bad value),
    /// not about how the values combine.
    pub fn is_value_error(self) -> bool {
        matches!(self, ErrorKind::UnknownPreset | ErrorKind::UnknownKey | ErrorKind::BadValue)
    }
}

impl From<&PlanError> for ErrorKind {
    fn from(e: &PlanError) -> Self {
        match e {
            PlanError::DoesNotFit { .. } => ErrorKind::DoesNotFit,
            PlanError::Uncalibrated { .. } => ErrorKind::Uncalibrated,
            PlanError::TooManyStages { .. } => ErrorKind::IllegalSplit,
        }
    }
}

impl From<&SplitError> for ErrorKind {
    fn from(_: &SplitError) -> Self {
        ErrorKind::IllegalSplit
    }
}

impl From<&CablingError> for ErrorKind {
    fn from(e: &CablingError) -> Self {
        match e {
            CablingError::TooFewPorts { .. } | CablingError::MeshTooLarge { .. } | CablingError::NcclNeedsSwitch { .. } => {
                ErrorKind::TooFewPorts
            }
            CablingError::ThunderboltGeneration { .. }
            | CablingError::NoQsfpPorts { .. }
            | CablingError::NoEthernetPort { .. }
            | CablingError::NoRdmaPorts { .. } => ErrorKind::MissingPorts,
        }
    }
}

/// A scenario error located in the source text.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{path}:{line}:{col}: {message}")]
pub struct ScenarioError {
    /// What kind of problem it is.
    pub kind: ErrorKind,
    /// File name as given.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    #[help]
    pub help: Option<String>,
    #[source_code]
    src: NamedSource<String>,
    #[label("here")]
    span: SourceSpan,
}

/// The text of a scenario and where it came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// Path as given on the command line (or a label).
    pub path: String,
    /// Directory relative paths in the file resolve against.
    pub dir: PathBuf,
    /// The TOML text (after `--set` overrides, if any).
    pub text: String,
}

impl Source {
    /// Builds an error at a byte range of this source.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>, help: Option<String>) -> ScenarioError {
        let start = span.start.min(self.text.len());
        let (line, col) = line_col(&self.text, start);
        ScenarioError {
            kind: ErrorKind::Invalid,
            path: self.path.clone(),
            line,
            col,
            message: message.into(),
            help,
            src: NamedSource::new(self.path.clone(), self.text.clone()),
            span: (start, span.end.saturating_sub(start).max(1).min(self.text.len().saturating_sub(start).max(1))).into(),
        }
    }
}

impl ScenarioError {
    /// The same error, of `kind`.
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// The byte range of the source the error points at.
    pub fn span(&self) -> Range<usize> {
        self.span.offset()..self.span.offset() + self.span.len()
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// A TOML syntax or shape error, located, with a hint for the common kinds.
pub(super) fn toml_error(source: &Source, e: &toml::de::Error) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    let msg = user_words(e.message().trim());
    if let Some((msg, help)) = crate::util::toml_shape(&source.text, span.clone(), &msg) {
        return source.error(span, msg, Some(help)).with_kind(ErrorKind::BadValue);
    }
    // The toml crate reports its errors as text only; this is where they get their kind.
    let (kind, help) = if msg.contains("unknown field") {
        (ErrorKind::UnknownKey, Some("remove the key or fix its spelling; see DESIGN.md \"Contracts\" for the scenario keys".to_string()))
    } else if msg.contains("invalid type") {
        (ErrorKind::BadValue, Some("check the value's type: numbers unquoted, names in quotes".to_string()))
    } else if msg.contains("missing field") {
        (ErrorKind::Invalid, Some("add the missing key".to_string()))
    } else {
        (ErrorKind::Invalid, None)
    };
    source.error(span, msg, help).with_kind(kind)
}

/// A serde message in the user's words: the raw structs' type names (`RawCluster`) become the
/// table the user wrote (`a [cluster] table`).
fn user_words(msg: &str) -> String {
    const TABLES: [(&str, &str); 6] = [
        ("struct RawScenario", "a scenario (TOML tables)"),
        ("struct RawCluster", "a [cluster] table"),
        ("struct RawModel", "a [model] table"),
        ("struct RawEngine", "an [engine] table"),
        ("struct RawWorkload", "a [workload] table"),
        ("struct RawCost", "a [cost] table"),
    ];
    crate::util::user_words(&TABLES.iter().fold(msg.to_string(), |m, (raw, words)| m.replace(raw, words)))
}

/// "did you mean" plus the known names.
pub(super) fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    match did_you_mean(word, candidates) {
        Some(s) => format!("did you mean `{s}`? known {what}: {}", candidates.join(", ")),
        None => format!("known {what}: {}", candidates.join(", ")),
    }
}

/// The value a string key names among `choices`; else an error at the key with the known
/// names (`what` = singular and plural) and a did-you-mean.
pub(super) fn one_of<T: Copy>(
    src: &Source,
    v: &Spanned<String>,
    choices: &[(&str, T)],
    what: (&str, &str),
    hint: &str,
) -> Result<T, ScenarioError> {
    let word = v.get_ref().as_str();
    match choices.iter().find(|(name, _)| *name == word) {
        Some((_, x)) => Ok(*x),
        None => {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            Err(src
                .error(v.span(), format!("unknown {} `{word}`", what.0), Some(suggest(word, &names, what.1) + hint))
                .with_kind(ErrorKind::UnknownPreset))
        }
    }
}

/// An integer key in 1..=max.
pub(super) fn positive(src: &Source, v: &Spanned<i64>, key: &str, max: i64) -> Result<u64, ScenarioError> {
    let x = *v.get_ref();
    if x < 1 || x > max {
        return Err(src
            .error(v.span(), format!("`{key}` = {x} is out of range"), Some(format!("use a value from 1 to {max}")))
            .with_kind(ErrorKind::BadValue));
    }
    Ok(x as u64)
}
