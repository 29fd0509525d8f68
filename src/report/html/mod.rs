//! `supernode report PATH`: one self-contained HTML page for a sweep output directory, a plan
//! (`plan --out FILE`) or a run's JSON (`run` writes one under `output/`): the question, the
//! answer, the charts as inline SVG (drawn by [`super::charts`]), the table of candidates with
//! why each lost, the cabling of the answer as a picture, the prediction ranges the twin has
//! (TPOT p50-p99; min-max over seeds in a sweep) and which numbers are extrapolations. No
//! network, no external file; readable with JavaScript off (a small inline script only makes
//! tables sortable).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub mod cabling;
mod plan;
mod run;
mod slo;
mod sweep;

pub use cabling::cabling_svg;

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The input is not something a report can be made of.
    #[error("{0}")]
    Input(String),
    /// Drawing or writing failed.
    #[error("{0}")]
    Io(String),
}

impl From<super::charts::ChartError> for ReportError {
    fn from(e: super::charts::ChartError) -> Self {
        match e {
            super::charts::ChartError::Input(m) => ReportError::Input(m),
            super::charts::ChartError::Draw(m) => ReportError::Io(m),
        }
    }
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The file `plan --slo` writes in its output directory.
const SLO_JSON: &str = "slo.json";

/// What a path holds.
#[derive(Debug)]
enum Input {
    Sweep(PathBuf),
    Plan(serde_json::Value),
    Slo(Box<crate::capacity::slo::SloPlan>),
    Run(Box<crate::estimate::Estimate>),
}

fn classify(path: &Path) -> Result<Input, ReportError> {
    if path.is_dir() {
        if path.join(crate::capacity::sweep::MANIFEST).exists() {
            return Ok(Input::Sweep(path.to_path_buf()));
        }
        if path.join(SLO_JSON).exists() {
            return classify(&path.join(SLO_JSON));
        }
        return Err(ReportError::Input(format!(
            "{} is a directory without {} or {SLO_JSON}: give a sweep output directory, an SLO plan's directory, a plan JSON (`plan --out FILE`) or a run's JSON",
            path.display(),
            crate::capacity::sweep::MANIFEST
        )));
    }
    let text =
        crate::util::read_bounded(path, 512 << 20).map_err(|e| ReportError::Input(format!("cannot read {}: {e}", path.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ReportError::Input(format!("{}: not JSON ({e}); give a sweep directory, a plan JSON or a run JSON", path.display()))
    })?;
    if v.get("format").and_then(|f| f.as_str()) == Some(crate::capacity::planner::report::PLAN_FORMAT) {
        return Ok(Input::Plan(v));
    }
    if v.get("format").and_then(|f| f.as_str()) == Some(crate::capacity::slo::SLO_FORMAT) {
        let plan = serde_json::from_value(v)
            .map_err(|e| ReportError::Input(format!("{}: an SLO plan that does not read back: {e}", path.display())))?;
        return Ok(Input::Slo(Box::new(plan)));
    }
    if v.get("decode_tokens_per_s").is_some() {
        let e = serde_json::from_value(v)
            .map_err(|e| ReportError::Input(format!("{}: a run JSON that does not read back: {e}", path.display())))?;
        return Ok(Input::Run(Box::new(e)));
    }
    Err(ReportError::Input(format!(
        "{}: neither a plan (`format` = \"{}\", from `plan --out FILE`), an SLO plan (`format` = \"{}\", `plan --slo`'s slo.json) nor a run's JSON (`decode_tokens_per_s`)",
        path.display(),
        crate::capacity::planner::report::PLAN_FORMAT,
        crate::capacity::slo::SLO_FORMAT
    )))
}

/// The report page of `path` (a sweep directory, a plan JSON or a run JSON).
pub fn render(path: &Path) -> Result<String, ReportError> {
    match classify(path)? {
        Input::Sweep(dir) => sweep::page(&dir),
        Input::Plan(v) => plan::page(&v),
        Input::Slo(p) => slo::page(&p),
        Input::Run(e) => Ok(run::page(&e)),
    }
}

/// Where the page goes by default: `DIR/report.html` for a sweep, `FILE.html` beside a JSON.
pub fn default_out(path: &Path) -> PathBuf {
    if path.is_dir() { path.join("report.html") } else { path.with_extension("html") }
}

/// Renders `path` and writes the page atomically to `out`. Returns the page's size in bytes.
pub fn write(path: &Path, out: &Path) -> Result<usize, ReportError> {
    let html = render(path)?;
    crate::util::write_atomic(out, html.as_bytes()).map_err(|e| ReportError::Io(format!("cannot write {}: {e}", out.display())))?;
    Ok(html.len())
}

/// A page under construction.
pub(crate) struct Page {
    body: String,
}

const CSS: &str = "body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:24px auto;max-width:1240px;padding:0 16px;color:#1b1f24;line-height:1.45}\
h1{font-size:26px;margin:0 0 6px}h2{font-size:20px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}\
.answer{background:#eef6ee;border:2px solid #2f7d32;border-radius:8px;padding:12px 16px;font-size:18px}\
.none{background:#fbeeee;border-color:#b3261e}.kv{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:8px 0}\
.kv dt{color:#555}.kv dd{margin:0;font-weight:bold}.extra{color:#8a4b00;font-weight:bold}.muted{color:#666;font-size:13px}\
svg{max-width:100%;height:auto;display:block;margin:6px 0}table{border-collapse:collapse;font-size:13px;width:100%}\
th,td{border-bottom:1px solid #e3e3e3;padding:3px 6px;text-align:left;vertical-align:top}th{background:#f4f6f8;position:sticky;top:0}\
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.win{background:#eef6ee}.scroll{max-height:640px;overflow:auto;border:1px solid #e3e3e3}";

const SCRIPT: &str = "document.querySelectorAll('table.sortable th').forEach(function(th,i){th.title='click to sort';th.style.cursor='pointer';\
th.addEventListener('click',function(){var b=th.closest('table').tBodies[0],r=Array.prototype.slice.call(b.rows),up=th.dataset.dir!=='up';\
th.dataset.dir=up?'up':'down';r.sort(function(x,y){var a=x.cells[i].dataset.v||x.cells[i].textContent,c=y.cells[i].dataset.v||y.cells[i].textContent,\
p=parseFloat(a),q=parseFloat(c),d=(!isNaN(p)&&!isNaN(q))?p-q:a.localeCompare(c);return up?d:-d;});r.forEach(function(t){b.appendChild(t);});});});";

impl Page {
    /// A page titled `title` (the question).
    pub(crate) fn new(title: &str, kind: &str) -> Page {
        let mut body = String::new();
        let _ = write!(
            body,
            "<h1>{}</h1><p class=\"muted\">supernode {} report · supernode {} · predicted by the digital twin, not measured</p>",
            esc(title),
            esc(kind),
            env!("CARGO_PKG_VERSION")
        );
        Page { body }
    }

    /// Appends raw HTML.
    pub(crate) fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// A section heading.
    pub(crate) fn h2(&mut self, id: &str, text: &str) {
        let _ = write!(self.body, "<h2 id=\"{id}\">{}</h2>", esc(text));
    }

    /// A paragraph of plain text.
    pub(crate) fn p(&mut self, text: &str) {
        let _ = write!(self.body, "<p>{}</p>", esc(text));
    }

    /// A list of (label, value) pairs.
    pub(crate) fn kv(&mut self, pairs: &[(&str, String)]) {
        self.body.push_str("<dl class=\"kv\">");
        for (k, v) in pairs {
            let _ = write!(self.body, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
        }
        self.body.push_str("</dl>");
    }

    /// An inline SVG chart, or a line saying why there is none.
    pub(crate) fn chart(&mut self, svg: Option<String>, missing: &str) {
        match svg {
            Some(s) => self.body.push_str(&s),
            None => {
                let _ = write!(self.body, "<p class=\"muted\">{}</p>", esc(missing));
            }
        }
    }

    /// A sortable table: header cells and rows of (cell HTML, optional sort value); `class` per row.
    pub(crate) fn table(&mut self, header: &[&str], rows: &[(String, Vec<Cell>)]) {
        self.body.push_str("<div class=\"scroll\"><table class=\"sortable\"><thead><tr>");
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", esc(h));
        }
        self.body.push_str("</tr></thead><tbody>");
        for (class, cells) in rows {
            let _ = write!(self.body, "<tr class=\"{class}\">");
            for c in cells {
                match c {
                    Cell::Text(t) => {
                        let _ = write!(self.body, "<td>{}</td>", esc(t));
                    }
                    Cell::Num(v, t) => {
                        let _ = write!(self.body, "<td class=\"n\" data-v=\"{v}\">{}</td>", esc(t));
                    }
                }
            }
            self.body.push_str("</tr>");
        }
        self.body.push_str("</tbody></table></div>");
    }

    /// The whole document.
    pub(crate) fn finish(self, title: &str) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{}</title><style>{CSS}</style></head><body>{}<script>{SCRIPT}</script></body></html>\n",
            esc(title),
            self.body
        )
    }
}

/// A table cell: text, or a number (sorted by value) with its text.
pub(crate) enum Cell {
    /// Text.
    Text(String),
    /// A number and how it is shown.
    Num(f64, String),
}

/// A number cell shown with `fmt_num`-like precision.
pub(crate) fn num(v: f64, decimals: usize) -> Cell {
    Cell::Num(v, if v.is_finite() { format!("{v:.decimals$}") } else { "–".into() })
}

/// Dollars with thousands separators.
pub(crate) fn usd(v: f64) -> Cell {
    Cell::Num(v, format!("${}", crate::capacity::planner::report::money_text(v)))
}

/// The extrapolation mark of an envelope: empty inside, the reasons outside.
pub(crate) fn envelope_text(status: &str, reasons: &[String]) -> String {
    if status == "inside" { "inside".into() } else { format!("EXTRAPOLATION: {}", reasons.join("; ")) }
}
