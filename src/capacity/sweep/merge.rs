//! Joining the outputs of all shards of one sweep into one directory, byte-identical to the
//! unsharded run.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::results::IndexOnly;
use super::table::AtomicWriter;
use super::{Manifest, RESULTS_JSONL, SweepError, io_err, write_csv};

/// What a merge did.
#[derive(Clone, Debug)]
pub struct MergeSummary {
    /// Points merged.
    pub points: u64,
    /// Points that run.
    pub fits: u64,
    /// The merged manifest.
    pub manifest: Manifest,
}

/// Joins the outputs of all shards of one sweep into `out` (sorted by point index), refusing
/// shards of different sweeps, overlapping or missing shards, and incomplete shards.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeSummary, SweepError> {
    let shards = check_shards(dirs, out)?;
    let n = shards[0].1.shards;
    let total = shards[0].1.points_total;
    let mut readers = Vec::with_capacity(shards.len());
    for (d, _) in &shards {
        let p = d.join(RESULTS_JSONL);
        let f = File::open(&p).map_err(|e| SweepError::Input(format!("cannot open {}: {e}", p.display())))?;
        readers.push((p, BufReader::new(f)));
    }
    std::fs::create_dir_all(out).map_err(|e| io_err("create", out, e))?;
    let mut w = AtomicWriter::create(&out.join(RESULTS_JSONL))?;
    let mut fits = 0;
    let mut buf = Vec::new();
    for k in 0..total {
        let (p, r) = &mut readers[(k % n) as usize];
        buf.clear();
        let got = r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", p, e))?;
        if got == 0 || buf.last() != Some(&b'\n') {
            return Err(SweepError::Input(format!(
                "{} ends before point {k} (torn or truncated); rerun that shard with --resume",
                p.display()
            )));
        }
        match serde_json::from_slice::<IndexOnly>(&buf) {
            Ok(l) if l.index == k => fits += u64::from(l.fits),
            Ok(l) => {
                return Err(SweepError::Input(format!(
                    "{}: expected point {k}, found point {} (not a shard of this sweep)",
                    p.display(),
                    l.index
                )));
            }
            Err(e) => return Err(SweepError::Input(format!("{}: point {k} is not a result line: {e}", p.display()))),
        }
        w.write(&buf)?;
    }
    for (p, r) in &mut readers {
        buf.clear();
        if r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", p, e))? > 0 {
            return Err(SweepError::Input(format!("{} has more lines than its shard's points", p.display())));
        }
    }
    w.commit()?;
    let m0 = &shards[0].1;
    let manifest =
        Manifest { shard: 0, shards: 1, points_in_shard: total, points_done: total, complete: true, merged_from: n, ..m0.clone() };
    manifest.write(out)?;
    write_csv(out, &manifest.axes)?;
    Ok(MergeSummary { points: total, fits, manifest })
}

/// The shards' manifests, sorted by shard: one sweep, one shard count, every shard once and
/// complete, none of them the output directory.
fn check_shards(dirs: &[PathBuf], out: &Path) -> Result<Vec<(PathBuf, Manifest)>, SweepError> {
    if dirs.is_empty() {
        return Err(SweepError::Input("merge needs at least one shard directory".into()));
    }
    let mut shards: Vec<(PathBuf, Manifest)> = Vec::new();
    for d in dirs {
        let m = Manifest::read(d)?;
        if let Some((d0, m0)) = shards.first() {
            if m.sweep_hash != m0.sweep_hash {
                return Err(SweepError::Input(format!(
                    "shards are from different sweeps: {} has sweep hash {} ({}), {} has {} ({})",
                    d0.display(),
                    m0.sweep_hash,
                    m0.scenario,
                    d.display(),
                    m.sweep_hash,
                    m.scenario
                )));
            }
            if m.shards != m0.shards {
                return Err(SweepError::Input(format!(
                    "shards disagree on the shard count: {} is shard {}/{}, {} is shard {}/{}",
                    d0.display(),
                    m0.shard,
                    m0.shards,
                    d.display(),
                    m.shard,
                    m.shards
                )));
            }
        }
        if let Some((dp, _)) = shards.iter().find(|(_, x)| x.shard == m.shard) {
            return Err(SweepError::Input(format!(
                "{} and {} are both shard {}/{} (overlapping points)",
                dp.display(),
                d.display(),
                m.shard,
                m.shards
            )));
        }
        if !m.complete || m.points_done != m.points_in_shard {
            return Err(SweepError::Input(format!(
                "shard {}/{} in {} is incomplete ({} of {} points); rerun it with --resume",
                m.shard,
                m.shards,
                d.display(),
                m.points_done,
                m.points_in_shard
            )));
        }
        if std::fs::canonicalize(d).ok() == std::fs::canonicalize(out).ok() && out.exists() {
            return Err(SweepError::Input(format!("--out {} is one of the inputs; merge into another directory", out.display())));
        }
        shards.push((d.clone(), m));
    }
    let n = shards[0].1.shards;
    let missing: Vec<String> = (0..n).filter(|i| !shards.iter().any(|(_, m)| m.shard == *i)).map(|i| format!("{i}/{n}")).collect();
    if !missing.is_empty() {
        return Err(SweepError::Input(format!(
            "missing shard(s) {} of sweep {}: pass all {n} shard directories",
            missing.join(", "),
            shards[0].1.sweep_hash
        )));
    }
    shards.sort_by_key(|(_, m)| m.shard);
    Ok(shards)
}
