//! Where requests come from: a closed loop of users, a Poisson stream, or a trace; request
//! lengths drawn from the run's workload stream (a ChaCha stream of its own, so the jitter stream
//! of the forwards is the same as `generate`'s).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chacha20::ChaCha8Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, LogNormal, Uniform};

use crate::scenario::{Arrival, Length, Serve, Stop, Think, serve::MAX_TOKENS};
use crate::sim::Time;

/// Mixed into the scenario seed for the workload stream (the jitter stream uses the seed as is).
const WORKLOAD_STREAM: u64 = 0x5e12_7e00_a441_7a15;
/// Mixed into the scenario seed for closed-loop think times: a stream of their own, so request
/// lengths are the same draws whatever the think-time law.
const THINK_STREAM: u64 = 0x7b1a_c0de_3e5f_0d21;

/// A request as it arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRequest {
    /// Arrival, ns.
    pub at: Time,
    /// The closed-loop user who sent it (`u32::MAX` for open arrivals).
    pub user: u32,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens.
    pub output: u64,
}

/// The arrival process of a run.
pub struct Arrivals<'a> {
    serve: &'a Serve,
    rng: ChaCha8Rng,
    think_rng: ChaCha8Rng,
    /// Pending arrivals: (time, sequence, user).
    pending: BinaryHeap<Reverse<(Time, u64, u32)>>,
    seq: u64,
    created: u64,
    /// Next trace row.
    trace_next: usize,
}

/// Seconds to integer ns.
pub fn s_to_ns(s: f64) -> Time {
    (s * 1e9).round().clamp(0.0, 1e18) as Time
}

impl<'a> Arrivals<'a> {
    /// The process of a serving workload, seeded from the scenario seed.
    pub fn new(serve: &'a Serve, seed: u64) -> Self {
        let mut a = Arrivals {
            serve,
            rng: ChaCha8Rng::seed_from_u64(seed ^ WORKLOAD_STREAM),
            think_rng: ChaCha8Rng::seed_from_u64(seed ^ THINK_STREAM),
            pending: BinaryHeap::new(),
            seq: 0,
            created: 0,
            trace_next: 0,
        };
        match &serve.arrival {
            Arrival::Closed { users, .. } => {
                for u in 0..*users {
                    a.push(0, u as u32);
                }
            }
            Arrival::Poisson { .. } => a.push_next_open(0),
            Arrival::Trace(_) => a.push_next_open(0),
        }
        a
    }

    fn push(&mut self, at: Time, user: u32) {
        self.pending.push(Reverse((at, self.seq, user)));
        self.seq += 1;
    }

    /// Schedules the next open arrival after one at `after`.
    fn push_next_open(&mut self, after: Time) {
        match &self.serve.arrival {
            Arrival::Poisson { rate_per_s } => {
                let gap = Exp::new(*rate_per_s).map_or(0.0, |e| e.sample(&mut self.rng));
                self.push(after + s_to_ns(gap), u32::MAX);
            }
            Arrival::Trace(rows) => {
                if let Some(r) = rows.get(self.trace_next) {
                    self.push(s_to_ns(r.arrival_s), u32::MAX);
                }
            }
            Arrival::Closed { .. } => {}
        }
    }

    /// Whether the run may still create requests arriving at `at`.
    fn allowed(&self, at: Time) -> bool {
        match self.serve.stop {
            Stop::Requests(n) => self.created < n,
            Stop::Duration(d) => at < s_to_ns(d),
        }
    }

    /// When the next request arrives, if one will.
    pub fn next_time(&self) -> Option<Time> {
        self.pending.peek().map(|r| r.0.0).filter(|&t| self.allowed(t))
    }

    /// The next request if it has arrived by `now`.
    pub fn pop_until(&mut self, now: Time) -> Option<NewRequest> {
        let t = self.next_time()?;
        if t > now {
            return None;
        }
        let Reverse((at, _, user)) = self.pending.pop()?;
        self.created += 1;
        let (prompt, output) = match &self.serve.arrival {
            Arrival::Trace(rows) => {
                let r = &rows[self.trace_next];
                self.trace_next += 1;
                (r.prompt_tokens, r.output_tokens)
            }
            _ => (draw(&self.serve.prompt, &mut self.rng), draw(&self.serve.generate, &mut self.rng)),
        };
        if user == u32::MAX {
            self.push_next_open(at);
        }
        Some(NewRequest { at, user, prompt, output })
    }

    /// A closed-loop user got its answer (or was turned away) at `now`: it thinks, then sends
    /// the next request.
    pub fn user_done(&mut self, user: u32, now: Time) {
        if let Arrival::Closed { think_s, think, .. } = self.serve.arrival {
            let wait = match think {
                Think::Fixed => think_s,
                Think::Exponential if think_s > 0.0 => Exp::new(1.0 / think_s).map_or(think_s, |e| e.sample(&mut self.think_rng)),
                Think::Exponential => 0.0,
            };
            self.push(now + s_to_ns(wait), user);
        }
    }

    /// Requests created so far.
    pub fn created(&self) -> u64 {
        self.created
    }
}

/// Draws a request length.
pub fn draw(len: &Length, rng: &mut ChaCha8Rng) -> u64 {
    match *len {
        Length::Fixed(x) => x,
        Length::Uniform { min, max } => Uniform::new_inclusive(min, max).map_or(min, |u| u.sample(rng)),
        Length::LogNormal { mean, sigma } => {
            // The log-space mean that gives this mean: mu = ln(mean) - sigma^2 / 2.
            let mu = mean.ln() - sigma * sigma / 2.0;
            let x = LogNormal::new(mu, sigma).map_or(mean, |d| d.sample(rng));
            (x.round() as u64).clamp(1, MAX_TOKENS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::KvFull;

    fn closed(think: Think) -> Serve {
        Serve {
            arrival: Arrival::Closed { users: 1, think_s: 2.0, think },
            prompt: Length::Fixed(8),
            generate: Length::Fixed(4),
            stop: Stop::Duration(1e9),
            warmup_s: 0.0,
            max_batch: None,
            kv_full: KvFull::Queue,
        }
    }

    /// The gap between a user's answer and its next request, for `n` answers.
    fn gaps(serve: &Serve, n: usize) -> Vec<f64> {
        let mut a = Arrivals::new(serve, 7);
        let first = a.pop_until(0).expect("the user's first request at 0");
        let mut now = first.at;
        (0..n)
            .map(|_| {
                a.user_done(0, now);
                let next = a.next_time().expect("a next request");
                let gap = (next - now) as f64 / 1e9;
                now = a.pop_until(next).expect("due").at;
                gap
            })
            .collect()
    }

    #[test]
    fn fixed_think_waits_exactly_and_exponential_think_has_its_mean() {
        assert!(gaps(&closed(Think::Fixed), 50).iter().all(|&g| g == 2.0));
        let g = gaps(&closed(Think::Exponential), 20_000);
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        // Standard error of the mean of 20,000 exponential draws: 2 / sqrt(20,000) = 0.014 s.
        assert!((mean - 2.0).abs() < 0.06, "mean think {mean:.3} s");
        let short = g.iter().filter(|&&x| x < 2.0 * std::f64::consts::LN_2).count() as f64 / g.len() as f64;
        assert!((short - 0.5).abs() < 0.02, "median of an exponential is mean x ln 2: {short:.3} below it");
    }
}
