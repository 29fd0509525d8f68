//! Running (a shard of) a sweep: points predicted in parallel blocks, lines written in index
//! order (so the bytes do not depend on the thread count), resumable after a crash.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::profile::Profile;

use super::results::IndexOnly;
use super::{BLOCK, FORMAT, Manifest, RESULTS_JSONL, Shard, Sweep, SweepError, io_err, write_csv};

/// How to run a sweep.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Output directory.
    pub out: PathBuf,
    /// Worker threads (None: one per core).
    pub jobs: Option<usize>,
    /// Which slice.
    pub shard: Shard,
    /// Keep the points already in `results.jsonl`.
    pub resume: bool,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// Points in this shard.
    pub points: u64,
    /// Points found already done (`--resume`).
    pub resumed: u64,
    /// Points predicted now.
    pub computed: u64,
    /// Points that run.
    pub fits: u64,
    /// Wall time, s.
    pub seconds: f64,
    /// The manifest written.
    pub manifest: Manifest,
    /// Said when resuming dropped a torn last line of `results.jsonl` (the crash case).
    pub note: Option<String>,
}

/// Runs (a shard of) a sweep into `opts.out`: `results.jsonl` streamed block by block in index
/// order, the manifest, and `results.csv`.
pub fn run(sweep: &Sweep, profile: &Profile, opts: &RunOptions) -> Result<RunSummary, SweepError> {
    let t0 = Instant::now();
    let shard = opts.shard;
    let count = shard.points(sweep.total);
    let dir = &opts.out;
    std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
    let results = dir.join(RESULTS_JSONL);
    let mut manifest = Manifest {
        format: FORMAT.into(),
        name: sweep.name.clone(),
        scenario: sweep.path.clone(),
        sweep_hash: sweep.hash.clone(),
        axes: sweep.axes(),
        zip: sweep.zip_groups(),
        points_total: sweep.total,
        shard: shard.index,
        shards: shard.count,
        points_in_shard: count,
        points_done: 0,
        complete: false,
        profile: sweep.profile.clone(),
        supernode_version: env!("CARGO_PKG_VERSION").into(),
        merged_from: 0,
    };
    let (file, start, mut fits, note) = open_results(dir, &results, sweep, shard, count, opts.resume)?;
    manifest.points_done = start;
    manifest.complete = start == count;
    manifest.write(dir)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.unwrap_or(0))
        .build()
        .map_err(|e| SweepError::Io(format!("cannot start worker threads: {e}")))?;
    let pb = progress_bar(opts.progress, count, start);
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let mut j = start;
    while j < count {
        let end = (j + BLOCK as u64).min(count);
        let lines: Vec<(String, bool)> = pool.install(|| {
            (j as usize..end as usize)
                .into_par_iter()
                .map(|k| {
                    let r = sweep.point_line(shard.point(k as u64), profile);
                    pb.inc(1);
                    r
                })
                .collect()
        });
        for (line, fit) in &lines {
            w.write_all(line.as_bytes()).and_then(|_| w.write_all(b"\n")).map_err(|e| io_err("write", &results, e))?;
            fits += u64::from(*fit);
        }
        w.flush().map_err(|e| io_err("write", &results, e))?;
        j = end;
    }
    pb.finish_and_clear();
    let f = w.into_inner().map_err(|e| io_err("write", &results, e.into_error()))?;
    f.sync_all().map_err(|e| io_err("sync", &results, e))?;
    manifest.points_done = count;
    manifest.complete = true;
    manifest.write(dir)?;
    write_csv(dir, &manifest.axes)?;
    Ok(RunSummary { points: count, resumed: start, computed: count - start, fits, seconds: t0.elapsed().as_secs_f64(), manifest, note })
}

/// Reads the finished prefix of a shard's results: (points done, of which fit, byte length to
/// keep, a note when a torn last line was dropped). Only the last line may be bad (a run killed
/// mid-write leaves half a line): it is dropped and recomputed. A bad line with lines after it
/// is corruption, not a crash: it is refused with its line number, since dropping it would
/// silently drop every good line after it.
fn scan_done(path: &Path, shard: Shard, count: u64) -> Result<(u64, u64, u64, Option<String>), SweepError> {
    let f = File::open(path).map_err(|e| io_err("open", path, e))?;
    let mut r = BufReader::new(f);
    let (mut done, mut fits, mut keep) = (0u64, 0u64, 0u64);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    while done < count {
        buf.clear();
        let n = r.read_until(b'\n', &mut buf).map_err(|e| io_err("read", path, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let expected = shard.point(done);
        let problem = if buf.last() != Some(&b'\n') {
            Some("it ends without a newline".to_string())
        } else {
            match serde_json::from_slice::<IndexOnly>(&buf) {
                Ok(l) if l.index == expected => {
                    done += 1;
                    fits += u64::from(l.fits);
                    keep += n as u64;
                    None
                }
                Ok(l) => Some(format!("it holds point {} where point {expected} belongs", l.index)),
                Err(e) if e.is_data() => Some(format!("it is not a result line: {}", crate::util::user_words(&e.to_string()))),
                Err(_) => Some("it is not a JSON line".to_string()),
            }
        };
        let Some(problem) = problem else { continue };
        let at_end = r.fill_buf().map_err(|e| io_err("read", path, e))?.is_empty();
        if at_end {
            let note =
                format!("dropped the torn last line {line_no} of {} ({problem}); point {expected} is computed again", path.display());
            return Ok((done, fits, keep, Some(note)));
        }
        return Err(SweepError::Input(format!(
            "cannot resume: line {line_no} of {} is corrupt ({problem}) and good lines may follow it; \
             resuming would drop them. Fix or delete line {line_no} (or truncate the file before it), or run without --resume",
            path.display()
        )));
    }
    Ok((done, fits, keep, None))
}

/// Opens `results.jsonl` for writing: fresh, or (`--resume`) truncated after the finished prefix
/// of the same shard of the same sweep. Returns the file, the points done, how many fit and a
/// note when a torn last line was dropped.
fn open_results(
    dir: &Path,
    results: &Path,
    sweep: &Sweep,
    shard: Shard,
    count: u64,
    resume: bool,
) -> Result<(File, u64, u64, Option<String>), SweepError> {
    if !(resume && results.exists()) {
        let f = File::create(results).map_err(|e| io_err("create", results, e))?;
        return Ok((f, 0, 0, None));
    }
    let old = Manifest::read(dir)?;
    if old.sweep_hash != sweep.hash || old.shard != shard.index || old.shards != shard.count {
        return Err(SweepError::Input(format!(
            "cannot resume: {} holds shard {}/{} of sweep {} but this is shard {}/{} of sweep {} (the file, axes or profile changed); \
             use another --out or run without --resume",
            dir.display(),
            old.shard,
            old.shards,
            old.sweep_hash,
            shard.index,
            shard.count,
            sweep.hash
        )));
    }
    let (done, done_fits, keep, note) = scan_done(results, shard, count)?;
    let mut f = OpenOptions::new().read(true).write(true).open(results).map_err(|e| io_err("open", results, e))?;
    f.set_len(keep).map_err(|e| io_err("truncate", results, e))?;
    f.seek(SeekFrom::End(0)).map_err(|e| io_err("seek", results, e))?;
    Ok((f, done.min(count), done_fits, note))
}

/// A progress bar on stderr (hidden unless asked for).
fn progress_bar(show: bool, count: u64, start: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(count), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} points  {per_sec}  ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_position(start);
    pb
}
