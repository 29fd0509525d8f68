//! Bisection for the highest load that passes a test: bracket first (double from the start
//! until a load fails, or halve until one passes), then bisect the bracket. Monotone-safe: the
//! answer is always a load that passed and lies below every load that failed, whatever the
//! test does between probes.

/// Where a search starts and how far it may go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bracket {
    /// First load probed.
    pub start: f64,
    /// Highest load probed; a test still passing there reports `max` as a lower bound.
    pub max: f64,
    /// Lowest load probed while halving; a test failing there finds no capacity.
    pub min: f64,
    /// Stop when the bracket's width is at most this fraction of its upper end (rates).
    pub tolerance: f64,
    /// Loads are whole numbers (users): stop when the bracket is one wide.
    pub integer: bool,
    /// Most probes in all.
    pub max_probes: usize,
}

/// The highest passing load below every failing one, and the lowest failing load, of probes
/// in any order: the answer stays monotone-safe when probes beyond the search's are added.
pub fn summarize<P>(probes: &[(f64, P)], ok: impl Fn(&P) -> bool) -> (Option<f64>, Option<f64>) {
    let failed_at = probes.iter().filter(|(_, p)| !ok(p)).map(|(x, _)| *x).min_by(f64::total_cmp);
    let capacity = probes.iter().filter(|(x, p)| ok(p) && failed_at.is_none_or(|f| *x < f)).map(|(x, _)| *x).max_by(f64::total_cmp);
    (capacity, failed_at)
}

/// What a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found<P> {
    /// Every probe in the order it ran: (load, result).
    pub probes: Vec<(f64, P)>,
    /// The highest load that passed below every failing one (None: nothing passed).
    pub capacity: Option<f64>,
    /// The lowest load that failed (None: the test passed up to `max`).
    pub failed_at: Option<f64>,
}

impl Bracket {
    /// A load as the axis takes it: whole numbers of users, any rate.
    pub fn snap(&self, x: f64) -> f64 {
        if self.integer { x.floor().max(1.0) } else { x }
    }

    fn narrow_enough(&self, lo: f64, hi: f64) -> bool {
        if self.integer { hi - lo <= 1.0 } else { hi - lo <= self.tolerance * hi }
    }

    /// Runs the search: `probe(load)` runs one load, `ok(result)` says whether it passed.
    /// The first error a probe returns ends the search.
    pub fn search<P, E>(&self, mut probe: impl FnMut(f64) -> Result<P, E>, ok: impl Fn(&P) -> bool) -> Result<Found<P>, E> {
        let mut probes: Vec<(f64, P)> = Vec::new();
        let (mut lo, mut hi): (Option<f64>, Option<f64>) = (None, None);
        let mut x = self.snap(self.start.clamp(self.min, self.max));
        // Bracket: up from a pass, down from a fail.
        while probes.len() < self.max_probes {
            let p = probe(x)?;
            let pass = ok(&p);
            probes.push((x, p));
            let next = if pass {
                lo = Some(x);
                if hi.is_some() || x >= self.max {
                    break;
                }
                self.snap((x * 2.0).min(self.max))
            } else {
                hi = Some(x);
                if lo.is_some() || x <= self.min {
                    break;
                }
                self.snap((x / 2.0).max(self.min))
            };
            if next == x {
                break;
            }
            x = next;
        }
        // Bisect: lo passed, hi failed, lo < hi.
        while let (Some(l), Some(h)) = (lo, hi) {
            if self.narrow_enough(l, h) || probes.len() >= self.max_probes {
                break;
            }
            let m = self.snap((l + h) / 2.0);
            if m <= l || m >= h {
                break;
            }
            let p = probe(m)?;
            if ok(&p) {
                lo = Some(m);
            } else {
                hi = Some(m);
            }
            probes.push((m, p));
        }
        Ok(Found { probes, capacity: lo, failed_at: hi })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates() -> Bracket {
        Bracket { start: 1.0, max: 1024.0, min: 1.0 / 1024.0, tolerance: 0.01, integer: false, max_probes: 40 }
    }

    #[test]
    fn finds_a_threshold_from_either_side() {
        for threshold in [0.0123, 0.7, 1.0, 3.7, 300.0] {
            let f = rates().search(Ok::<_, ()>, |&x| x <= threshold).unwrap();
            let c = f.capacity.unwrap();
            assert!(c <= threshold && c >= threshold * 0.99, "{threshold}: {c}");
            assert!(f.failed_at.unwrap() > threshold);
        }
    }

    #[test]
    fn integers_stop_at_a_bracket_one_wide() {
        let b = Bracket { integer: true, start: 4.0, max: 256.0, min: 1.0, ..rates() };
        let f = b.search(Ok::<_, ()>, |&x| x <= 37.0).unwrap();
        assert_eq!((f.capacity, f.failed_at), (Some(37.0), Some(38.0)));
        assert!(f.probes.iter().all(|(x, _)| x.fract() == 0.0));
    }

    #[test]
    fn nothing_passes_or_everything_passes() {
        let f = rates().search(Ok::<_, ()>, |_| false).unwrap();
        assert_eq!(f.capacity, None);
        assert_eq!(f.probes.last().unwrap().0, 1.0 / 1024.0);
        let f = rates().search(Ok::<_, ()>, |_| true).unwrap();
        assert_eq!((f.capacity, f.failed_at), (Some(1024.0), None));
    }

    #[test]
    fn the_answer_is_below_every_failure_even_for_a_non_monotone_test() {
        // Passes on [0, 2] and again on [5, 6]: the search never reports the upper island.
        let f = rates().search(Ok::<_, ()>, |&x| x <= 2.0 || (5.0..=6.0).contains(&x)).unwrap();
        let c = f.capacity.unwrap();
        assert!(f.probes.iter().filter(|(x, _)| !(*x <= 2.0 || (5.0..=6.0).contains(x))).all(|(x, _)| *x > c));
        assert!(c <= 2.0);
    }

    #[test]
    fn summaries_stay_below_every_failure() {
        let probes = [(1.0, true), (4.0, false), (2.0, true), (0.5, false), (0.25, true)];
        assert_eq!(summarize(&probes, |&p| p), (Some(0.25), Some(0.5)));
        assert_eq!(summarize(&[(1.0, true)], |&p| p), (Some(1.0), None));
        assert_eq!(summarize(&[(1.0, false)], |&p| p), (None, Some(1.0)));
    }

    #[test]
    fn errors_end_the_search() {
        let r = rates().search(|x| if x > 3.0 { Err("boom") } else { Ok(x) }, |_| true);
        assert_eq!(r.unwrap_err(), "boom");
    }
}
