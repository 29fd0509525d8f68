//! Sweep rows grouped into chart lines (one per combination of the non-x axes), the value drawn
//! at each point, and the notes under a chart.

use std::collections::BTreeMap;

use crate::capacity::sweep::PointInfo;
use crate::catalog::catalog;
use crate::scenario::ErrorKind;

use super::labels::*;
use super::{ChartRow, Metric};

/// One line of a chart: a label and its points (x -> best row).
pub(super) struct Line2 {
    pub(super) key: Vec<Option<String>>,
    /// x -> the rows at that x.
    pub(super) points: BTreeMap<u64, Vec<usize>>,
    /// Which key positions differ between the lines of the chart (the others are not shown).
    pub(super) shown: Vec<bool>,
}

impl Line2 {
    pub(super) fn label(&self) -> String {
        let parts: Vec<&str> =
            self.key.iter().zip(&self.shown).filter(|(_, s)| **s).filter_map(|(k, _)| k.as_deref()).filter(|s| !s.is_empty()).collect();
        if parts.is_empty() { "predicted".into() } else { parts.join(" · ") }
    }
}

/// The value drawn for the rows at one (line, x): rows that differ only in `seed` are replicates
/// and are averaged (in index order; [`read_chart_rows`] has already merged them); of other
/// variants (say two node mixes of one size) the fastest on average is drawn.
pub(super) fn point_value(rows: &[&ChartRow], at: &[usize], y: Metric) -> f64 {
    let mut variants: Vec<(String, Vec<usize>)> = Vec::new();
    for &i in at {
        let key: String = rows[i].overrides.iter().filter(|(k, _)| k.as_str() != "seed").map(|(k, v)| format!("{k}={v};")).collect();
        match variants.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => variants.push((key, vec![i])),
        }
    }
    let mean = |v: &[usize], m: Metric| {
        let mut sum = 0.0;
        for &i in v {
            sum += rows[i].mean(m);
        }
        sum / v.len().max(1) as f64
    };
    let mut best: Option<(&[usize], f64)> = None;
    for (_, v) in &variants {
        let speed = mean(v, Metric::DecodeTokensPerS);
        if best.is_none_or(|(_, b)| speed > b) {
            best = Some((v, speed));
        }
    }
    best.map_or(0.0, |(v, _)| mean(v, y))
}

/// Groups fitted rows into lines: the line of a row is its axis values except the x axes, the
/// model and the seed; single-node points (where fabric, topology and parallelism mean nothing)
/// join every line they agree with.
pub(super) fn lines(
    rows: &[&ChartRow],
    axes: &[String],
    x_keys: &[&str],
    x: impl Fn(&PointInfo) -> u64,
    single_wildcard: bool,
) -> Vec<Line2> {
    let key_of = |r: &ChartRow| -> Vec<Option<String>> {
        let n = r.info().map_or(0, |i| i.nodes.len());
        axes.iter()
            .filter(|k| !x_keys.contains(&k.as_str()) && !GROUP_KEYS.contains(&k.as_str()) && k.as_str() != "seed")
            .map(|k| {
                if single_wildcard && n == 1 && SINGLE_NODE_WILDCARDS.contains(&k.as_str()) {
                    None
                } else {
                    Some(r.overrides.get(k).map(|v| pretty_value(k, v)).unwrap_or_default())
                }
            })
            .collect()
    };
    let mut out: Vec<Line2> = Vec::new();
    let put = |line: &mut Line2, xv: u64, i: usize| line.points.entry(xv).or_default().push(i);
    // Row `i` at `xv` on the line of its key (a new line if there is none yet).
    let put_own = |out: &mut Vec<Line2>, key: &Vec<Option<String>>, xv: u64, i: usize| match out.iter_mut().find(|l| l.key == *key) {
        Some(l) => put(l, xv, i),
        None => {
            let mut l = Line2 { key: key.clone(), points: BTreeMap::new(), shown: vec![] };
            put(&mut l, xv, i);
            out.push(l);
        }
    };
    let keys: Vec<Vec<Option<String>>> = rows.iter().map(|r| key_of(r)).collect();
    for (i, r) in rows.iter().enumerate() {
        if !r.fits || keys[i].iter().any(Option::is_none) {
            continue;
        }
        let xv = x(r.info().expect("fitted rows have info"));
        put_own(&mut out, &keys[i], xv, i);
    }
    for (i, r) in rows.iter().enumerate() {
        if !r.fits || keys[i].iter().all(Option::is_some) {
            continue;
        }
        let xv = x(r.info().expect("fitted rows have info"));
        let agrees = |l: &Line2| l.key.len() == keys[i].len() && l.key.iter().zip(&keys[i]).all(|(a, b)| b.is_none() || a == b);
        let mut joined = false;
        for l in out.iter_mut().filter(|l| agrees(l) && l.key.iter().all(Option::is_some)) {
            put(l, xv, i);
            joined = true;
        }
        if !joined {
            put_own(&mut out, &keys[i], xv, i);
        }
    }
    // A position is worth showing when two lines differ there.
    let width = out.first().map_or(0, |l| l.key.len());
    let shown: Vec<bool> = (0..width)
        .map(|p| {
            let mut vals = out.iter().filter_map(|l| l.key[p].as_ref());
            let first = vals.next();
            vals.any(|v| Some(v) != first)
        })
        .collect();
    for l in &mut out {
        l.shown = shown.clone();
    }
    out
}

/// Rows of one model, in index order.
pub(super) fn by_model(rows: &[ChartRow]) -> Vec<(String, Vec<&ChartRow>)> {
    let mut groups: Vec<(String, Vec<&ChartRow>)> = Vec::new();
    let mut unknown: Vec<&ChartRow> = Vec::new();
    for r in rows {
        let Some(info) = r.info() else {
            unknown.push(r);
            continue;
        };
        match groups.iter_mut().find(|(m, _)| *m == info.model) {
            Some((_, v)) => v.push(r),
            None => groups.push((info.model.clone(), vec![r])),
        }
    }
    // Rows whose scenario did not parse (an illegal split, too few ports) belong to the model
    // they name, or to every model when the sweep does not vary it.
    for r in unknown {
        let named = r.overrides.get("model.name").and_then(|v| v.as_str());
        for (m, v) in groups.iter_mut() {
            if named.is_none_or(|n| n == m || catalog().model(n).is_some_and(|(p, _)| p.id == *m)) {
                v.push(r);
            }
        }
    }
    for (_, v) in groups.iter_mut() {
        v.sort_by_key(|r| r.index);
    }
    groups
}

/// Node count of a row, also for rows whose scenario did not parse.
pub(super) fn row_nodes(r: &ChartRow) -> Option<usize> {
    if let Some(i) = r.info() {
        return Some(i.nodes.len());
    }
    match (r.overrides.get("cluster.nodes"), r.overrides.get("cluster.count")) {
        (Some(serde_json::Value::Array(a)), _) => Some(a.len()),
        (_, Some(c)) => c.as_u64().map(|c| c as usize),
        _ => None,
    }
}

pub(super) fn workload_text(rows: &[&ChartRow]) -> String {
    let mut p: Vec<u64> = rows.iter().filter_map(|r| r.info()).map(|i| i.prompt_tokens).collect();
    let mut g: Vec<u64> = rows.iter().filter_map(|r| r.info()).map(|i| i.generate_tokens).collect();
    p.sort_unstable();
    p.dedup();
    g.sort_unstable();
    g.dedup();
    match (p.as_slice(), g.as_slice()) {
        ([p], [g]) => format!("{p} prompt + {g} generated tokens"),
        _ => "several prompt lengths".into(),
    }
}

pub(super) fn cluster_text(rows: &[&ChartRow]) -> String {
    let max = rows.iter().filter_map(|r| r.info()).map(|i| i.nodes.len()).max().unwrap_or(0);
    let mut lists: Vec<String> = Vec::new();
    for r in rows {
        if let Some(i) = r.info().filter(|i| i.nodes.len() == max) {
            let l = cluster_label(&i.nodes);
            if !lists.contains(&l) {
                lists.push(l);
            }
        }
    }
    match lists.len() {
        0 => String::new(),
        1 => format!("cluster: up to {}", lists[0]),
        _ => {
            let mut ids: Vec<String> = Vec::new();
            for r in rows {
                for n in r.info().map(|i| i.nodes.clone()).unwrap_or_default() {
                    if !ids.contains(&n) {
                        ids.push(n);
                    }
                }
            }
            format!("clusters of up to {max} of: {}", ids.join(", "))
        }
    }
}

pub(super) fn not_fit_note(rows: &[&ChartRow], axes: &[String], x_keys: &[&str]) -> Option<String> {
    let mut items: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| !r.fits) {
        let what: Vec<String> = axes
            .iter()
            .filter(|k| !GROUP_KEYS.contains(&k.as_str()) && !x_keys.contains(&k.as_str()) && k.as_str() != "seed")
            .filter_map(|k| r.overrides.get(k).map(|v| pretty_value(k, v)))
            .collect();
        let at = if x_keys == NODE_X_KEYS {
            let Some(n) = row_nodes(r) else { continue };
            format!("{n} node{}", if n == 1 { "" } else { "s" })
        } else {
            let prompt = r.info().map(|i| i.prompt_tokens).or_else(|| r.overrides.get("workload.prompt_tokens").and_then(|v| v.as_u64()));
            let Some(p) = prompt else { continue };
            format!("{p} prompt tokens")
        };
        let reason = match r.error_kind() {
            Some(ErrorKind::DoesNotFit) => "does not fit",
            Some(ErrorKind::ContextWindow) => "past the context window",
            Some(ErrorKind::IllegalSplit) => "illegal split",
            Some(ErrorKind::TooFewPorts) => "too few ports",
            _ => "cannot run",
        };
        let item = if what.is_empty() { format!("{at}: {reason}") } else { format!("{at}, {}: {reason}", what.join(" · ")) };
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        return None;
    }
    let more = items.len().saturating_sub(3);
    items.truncate(3);
    let tail = if more > 0 { format!("; and {more} more (see results.csv)") } else { String::new() };
    Some(format!("Not drawn: {}{tail}", items.join("; ")))
}
