//! Small helpers every layer may use: atomic file writes, bounded file reads, file-name slugs,
//! did-you-mean suggestions, stable rounding, dates. Nothing here knows about clusters or models.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Largest input file read (scenarios, sweeps, profiles, `config.json`, measurement CSV, harness
/// JSON, llama-bench output): 64 MiB, hundreds of times the largest real one.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a whole text input file, refusing what is not a regular file (a directory, a FIFO, a
/// device such as `/dev/zero`: checked before opening, so a FIFO cannot block) and files over
/// `max` bytes (checked while reading, so a growing file cannot exceed it). The error says why;
/// callers name the path.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind};
    let kind_of = |m: &std::fs::Metadata| -> Option<&'static str> {
        let t = m.file_type();
        if t.is_file() {
            return None;
        }
        if t.is_dir() {
            return Some("a directory");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return Some("a FIFO (named pipe)");
            }
            if t.is_char_device() || t.is_block_device() {
                return Some("a device");
            }
            if t.is_socket() {
                return Some("a socket");
            }
        }
        Some("not a regular file")
    };
    let refuse = |what: &str| Error::new(ErrorKind::InvalidInput, format!("{what}, not a regular file; give the path of a file"));
    let too_big = || Error::new(ErrorKind::InvalidData, format!("larger than the {} MiB an input file may have", max >> 20));
    if let Some(what) = kind_of(&std::fs::metadata(path)?) {
        return Err(refuse(what));
    }
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    if let Some(what) = kind_of(&meta) {
        return Err(refuse(what));
    }
    if meta.len() > max {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big());
    }
    String::from_utf8(bytes)
        .map_err(|e| Error::new(ErrorKind::InvalidData, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

/// A file written in full under a unique temporary name beside its destination, then moved into
/// place: readers see the old content or the new one, never a part. Concurrent writers of the
/// same path (threads or processes) each get their own temporary file; the last to commit wins.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    dir: PathBuf,
    w: BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    /// Creates the parent directories and a temporary file in the destination's directory.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        std::fs::create_dir_all(&dir)?;
        let name = path.file_name().map_or_else(|| "out".into(), |s| s.to_string_lossy());
        let prefix = format!(".{name}.");
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(".tmp");
        // The umask applies as to any new file (a bare temporary file would be owner-only).
        #[cfg(unix)]
        b.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = b.tempfile_in(&dir)?;
        Ok(AtomicFile { path: path.to_path_buf(), dir, w: BufWriter::with_capacity(1 << 16, tmp) })
    }

    /// Flushes and syncs the temporary file, renames it over the destination and syncs the
    /// directory, so the new name survives a crash. Dropped without `commit`, the temporary file
    /// is removed and the destination is untouched.
    pub fn commit(self) -> std::io::Result<()> {
        let tmp = self.w.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        sync_dir(&self.dir)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Makes a directory's entries (a rename into it) durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Writes `contents` to `path` atomically (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(contents)?;
    f.commit()
}

/// A file-name-safe slug.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// The closest candidate to `word` by Levenshtein distance, if reasonably close (ties go to the
/// alphabetically first candidate).
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let best = candidates.iter().map(|c| (strsim::levenshtein(word, c), *c)).min()?;
    (best.0 <= (word.len().max(3) / 2).max(3)).then_some(best.1)
}

/// Rounds to 3 decimals (stable JSON).
pub fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// Rounds to 6 decimals (stable JSON).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Rounds to `digits` decimals.
pub fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// z of the 95th percentile of a normal distribution: a 90% interval is +-Z90 sigma.
pub const Z90: f64 = 1.644_853_626_951_472_2;

/// Rounds to 6 significant digits (stable profile files).
pub fn sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let d = 5 - x.abs().log10().floor() as i32;
    round_to(x, d)
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

/// A serde/TOML message in the user's words, without Rust type names: `expected i64` becomes
/// `expected an integer`, `f64` a number, a sequence a list, a map a table, `struct Foo` a
/// table, and an integer too large for 64 bits (`as i128`) says its range.
pub fn user_words(msg: &str) -> String {
    if let (Some(start), Some(end)) = (msg.find("integer `"), msg.find("` as i128")) {
        if start < end {
            let n = &msg[start + "integer `".len()..end];
            return format!("integer `{n}` is out of range (whole numbers from -9223372036854775808 to 9223372036854775807)");
        }
    }
    const WORDS: [(&str, &str); 14] = [
        ("expected i64", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected u8", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("invalid type: sequence", "invalid type: list"),
        ("invalid type: map", "invalid type: table"),
        ("expected a map", "expected a table"),
        ("expected a boolean", "expected true or false"),
    ];
    let mut out = WORDS.iter().fold(msg.to_string(), |m, (raw, words)| m.replace(raw, words));
    // `struct Name` (a table's Rust type): the words "a table".
    while let Some(i) = out.find("struct ") {
        let rest = &out[i + "struct ".len()..];
        let end = rest.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(rest.len());
        out = format!("{}a table{}", &out[..i], &rest[end..]);
    }
    out
}

/// A TOML shape mistake in the user's words, with a fix: `[[workload]]` (an array of tables)
/// where one table or a value belongs, `[name]` (a table) where a value or a list of tables
/// belongs, a date where a number or a name belongs. `msg` is the parser's message (already in
/// [`user_words`]) for an error at `span` of `text`; None when the error is not one of these.
pub fn toml_shape(text: &str, span: std::ops::Range<usize>, msg: &str) -> Option<(String, String)> {
    if !msg.contains("invalid type") {
        return None;
    }
    let at = text.get(span.start.min(text.len())..).unwrap_or("").trim_start();
    let line = at.lines().next().unwrap_or("");
    let expected = msg.split("expected ").nth(1).map(str::trim).filter(|e| !e.is_empty());
    if let Some(name) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()).map(str::trim) {
        return Some((
            format!("`[[{name}]]` (double brackets) makes `{name}` an array of tables, which it is not"),
            format!("write `[{name}]` (single brackets) for a table, or `{name} = ...` for a value"),
        ));
    }
    if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()).map(str::trim) {
        let (key, place) = match name.rsplit_once('.') {
            Some((parent, key)) => (key, format!("under `[{parent}]`")),
            None => (name, "before the first table".to_string()),
        };
        let help = match expected {
            Some("a list") => format!("a list of tables repeats its header: write `[[{name}]]` before each item"),
            Some(e) => format!("write `{key} = ...` ({e}) {place} instead of a `[{name}]` header"),
            None => format!("write `{key} = ...` {place} instead of a `[{name}]` header"),
        };
        return Some((format!("`[{name}]` makes `{name}` a table, but it takes {}", expected.unwrap_or("a value")), help));
    }
    let b = line.as_bytes();
    let is_date = b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-';
    if is_date {
        let value = line.split([',', '#', '}', ']']).next().unwrap_or(line).trim();
        return Some((
            format!("`{value}` is a TOML date, not {}", expected.unwrap_or("a value here")),
            "write a number, or quote the text (\"...\") if it is a name or a version".to_string(),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_atomic_writes_leave_one_whole_file_and_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("out.json");
        let bodies: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 256 * 1024]).collect();
        for _ in 0..4 {
            std::thread::scope(|s| {
                for b in &bodies {
                    let path = &path;
                    s.spawn(move || write_atomic(path, b).unwrap());
                }
            });
            let got = std::fs::read(&path).unwrap();
            assert!(bodies.contains(&got), "a torn or mixed file of {} bytes", got.len());
        }
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["out.json"], "temporary files left behind");
    }

    #[test]
    fn a_dropped_atomic_file_leaves_the_destination_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keep.txt");
        write_atomic(&path, b"old").unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new, never committed").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_files_are_not_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.txt");
        write_atomic(&path, b"x").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask(), "{mode:o}");
    }

    /// The process umask, read from /proc (Linux) or assumed 022.
    #[cfg(unix)]
    fn umask() -> u32 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:").map(|v| u32::from_str_radix(v.trim(), 8).ok())).flatten())
            .unwrap_or(0o022)
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("expandd", &["absorbed", "expanded"]), Some("expanded"));
        assert_eq!(did_you_mean("zzzzzzzzzzzzzz", &["absorbed", "expanded"]), None);
        assert_eq!(did_you_mean("ab", &[]), None);
        // Ties go to the first in alphabetical order, whatever the candidates' order.
        assert_eq!(did_you_mean("ab", &["ad", "ac"]), Some("ac"));
    }

    #[test]
    fn today_is_an_iso_date() {
        let t = today();
        assert_eq!(t.len(), 10, "{t}");
        assert!(t.chars().enumerate().all(|(i, c)| if i == 4 || i == 7 { c == '-' } else { c.is_ascii_digit() }), "{t}");
        assert!(t.as_str() >= "2025-01-01", "{t}");
    }
}

/// A fast, deterministic hasher for small integer keys in hot loops (the serving run's step
/// shapes and graph sizes): FxHash's multiply-rotate over 64-bit words (the Firefox/rustc
/// hash). Not resistant to chosen collisions (the keys are the simulator's own shapes, not
/// input text); SipHash was a fifth of a serving run's CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct FastHasher(u64);

/// FxHash's multiplier (rustc-hash).
const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl std::hash::Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` keyed through [`FastHasher`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;
