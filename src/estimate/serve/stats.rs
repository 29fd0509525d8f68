//! Streaming statistics of a serving run: fixed-size log histograms for latency percentiles and
//! running sums, so memory stays flat however long the run.

use super::RequestRecord;
use crate::sim::Time;

/// Relative width of a histogram bucket (0.1%).
const STEP: f64 = 1.001;
/// Smallest value the histogram resolves; smaller ones land in the first bucket.
const LOW: f64 = 1e-7;
/// Buckets: LOW .. LOW * STEP^BUCKETS covers 1e-7 .. ~1e7.
const BUCKETS: usize = 32_300;

/// A histogram of positive values in buckets 0.1% wide on a log scale, with the exact minimum
/// and maximum; quantiles are bucket centres clamped to them (exact when all values are equal).
#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u32>,
    n: u64,
    min: f64,
    max: f64,
    /// The last value recorded and its bucket: a serving run records the same step times over
    /// and over, and the logarithm is the costly part of a record.
    last: (f64, usize),
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LogHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LogHistogram { counts: vec![0; BUCKETS], n: 0, min: f64::INFINITY, max: f64::NEG_INFINITY, last: (f64::NAN, 0) }
    }

    /// Records one value.
    pub fn record(&mut self, x: f64) {
        self.record_n(x, 1);
    }

    /// Records `n` equal values.
    pub fn record_n(&mut self, x: f64, n: u32) {
        if n == 0 {
            return;
        }
        let i = if x == self.last.0 {
            self.last.1
        } else {
            let i = if x <= LOW { 0 } else { ((x / LOW).ln() / STEP.ln()) as usize };
            let i = i.min(BUCKETS - 1);
            self.last = (x, i);
            i
        };
        self.counts[i] = self.counts[i].saturating_add(n);
        self.n += n as u64;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// Adds every value `other` recorded.
    pub fn merge(&mut self, other: &LogHistogram) {
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c = c.saturating_add(*o);
        }
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `p` quantile (0..=1) by nearest rank on the sorted values (the rank `generate`'s
    /// step percentiles use); 0 when empty.
    pub fn quantile(&self, p: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = (p * (self.n - 1) as f64).round() as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen > rank {
                let centre = LOW * STEP.powf(i as f64 + 0.5);
                return centre.clamp(self.min, self.max);
            }
        }
        self.max
    }
}

/// What a serving run measured, after warm-up.
#[derive(Clone, Debug, Default)]
pub struct ServeStats {
    /// Time to first token (queueing included), s.
    pub ttft_s: LogHistogram,
    /// Time per output token of each request (its decode time / its output tokens), ms.
    pub tpot_ms: LogHistogram,
    /// Arrival to last token, s.
    pub e2e_s: LogHistogram,
    /// Gaps between a request's consecutive tokens after its first, ms (inside the window).
    pub itl_ms: LogHistogram,
    /// Sum of measured requests' TTFT, ns.
    pub ttft_sum_ns: u128,
    /// Sum of measured requests' times from arrival to last token, ns.
    pub e2e_sum_ns: u128,
    /// Sum of measured requests' times from arrival to their first streamed text, ns.
    pub ttft_text_sum_ns: u128,
    /// Sum of measured requests' decode times, ns.
    pub decode_sum_ns: u128,
    /// Sum of measured requests' output tokens.
    pub output_tokens: u64,
    /// Sum of measured requests' decode rates (tokens/s), for the mean per-request rate.
    pub per_request_rate_sum: f64,
    /// Prompt tokens of measured requests.
    pub prompt_tokens: u64,
    /// Their prefill time (admission to first token), ns.
    pub prefill_ns: u128,
    /// Requests completed after warm-up.
    pub completed: u64,
    /// Requests turned away after warm-up.
    pub rejected: u64,
    /// Of the completed, those meeting every SLO target.
    pub slo_met: u64,
    /// Decode tokens produced inside the measurement window.
    pub window_tokens: u64,
    /// Sum over forwards of (sequences in the forward x its duration), ns, for the mean batch.
    pub batch_ns: u128,
    /// Sum over forwards of (requests waiting x its duration), ns, for the mean queue.
    pub queue_ns: u128,
    /// Time covered by forwards and idle gaps, ns.
    pub covered_ns: u128,
    /// Highest KV occupancy of any node, fraction of what its wired limit leaves for KV.
    pub peak_kv: f64,
    /// Running requests preempted to free KV blocks (vLLM V1, recompute).
    pub preempted: u64,
    /// Most requests waiting at once.
    pub peak_queue: u64,
    /// Earliest first text a chat client sees of a measured request, ns (none before one
    /// completes; [`RequestRecord::first_text`]).
    pub first_text_min: Option<crate::sim::Time>,
    /// Tokens after each measured request's first text, summed.
    pub text_tokens: u64,
    /// Latest last token of a measured request, ns.
    pub last_token_max: crate::sim::Time,
    /// Earliest arrival of a measured request, ns (none before one completes).
    pub arrival_min: Option<crate::sim::Time>,
    /// Latest first text of a measured request, ns.
    pub first_text_max: crate::sim::Time,
}

impl ServeStats {
    /// Adds what another server measured over the same window (a replica's): counts, sums and
    /// histograms add, peaks take the larger, the llama-benchy spans the wider.
    pub fn absorb(&mut self, o: &ServeStats) {
        for (h, x) in
            [(&mut self.ttft_s, &o.ttft_s), (&mut self.tpot_ms, &o.tpot_ms), (&mut self.e2e_s, &o.e2e_s), (&mut self.itl_ms, &o.itl_ms)]
        {
            h.merge(x);
        }
        self.ttft_sum_ns += o.ttft_sum_ns;
        self.e2e_sum_ns += o.e2e_sum_ns;
        self.ttft_text_sum_ns += o.ttft_text_sum_ns;
        self.decode_sum_ns += o.decode_sum_ns;
        self.output_tokens += o.output_tokens;
        self.per_request_rate_sum += o.per_request_rate_sum;
        self.prompt_tokens += o.prompt_tokens;
        self.prefill_ns += o.prefill_ns;
        self.completed += o.completed;
        self.rejected += o.rejected;
        self.slo_met += o.slo_met;
        self.window_tokens += o.window_tokens;
        self.batch_ns += o.batch_ns;
        self.queue_ns += o.queue_ns;
        self.covered_ns += o.covered_ns;
        self.peak_kv = self.peak_kv.max(o.peak_kv);
        self.preempted += o.preempted;
        self.peak_queue = self.peak_queue.max(o.peak_queue);
        let earliest = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.first_text_min = earliest(self.first_text_min, o.first_text_min);
        self.text_tokens += o.text_tokens;
        self.last_token_max = self.last_token_max.max(o.last_token_max);
        self.arrival_min = earliest(self.arrival_min, o.arrival_min);
        self.first_text_max = self.first_text_max.max(o.first_text_max);
    }

    /// Records a completed request; `met` = it meets every SLO target.
    pub fn complete(&mut self, r: &RequestRecord, met: bool) {
        let ttft = r.first_token - r.arrival;
        let decode = r.done - r.first_token;
        self.ttft_s.record(ttft as f64 / 1e9);
        self.tpot_ms.record(decode as f64 / r.output as f64 / 1e6);
        self.e2e_s.record((r.done - r.arrival) as f64 / 1e9);
        self.ttft_sum_ns += ttft as u128;
        self.e2e_sum_ns += (r.done - r.arrival) as u128;
        self.ttft_text_sum_ns += (r.first_text - r.arrival) as u128;
        self.decode_sum_ns += decode as u128;
        self.output_tokens += r.output;
        self.per_request_rate_sum += r.output as f64 / (decode as f64 / 1e9);
        self.prompt_tokens += r.prompt;
        self.prefill_ns += (r.first_token - r.admitted) as u128;
        self.completed += 1;
        self.slo_met += met as u64;
        self.first_text_min = Some(self.first_text_min.map_or(r.first_text, |t| t.min(r.first_text)));
        self.text_tokens += r.text_tokens;
        self.last_token_max = self.last_token_max.max(r.done);
        self.arrival_min = Some(self.arrival_min.map_or(r.arrival, |t| t.min(r.arrival)));
        self.first_text_max = self.first_text_max.max(r.first_text);
    }

    /// Generation rate as llama-benchy defines its concurrent `t/s (total)`: every completed
    /// request's tokens after its first, over the span from the earliest first token to the
    /// latest last token (llama-benchy 0.3.5 `results.py` `_process_batch`:
    /// `(batch_gen_tokens - len(valid_results)) / (max(last_token_times) - min(first_token_times))`).
    /// The twin's first token comes at the end of the prefill and each of a request's `output`
    /// decode steps after it is one of the tokens after the first. The benchmark counts
    /// streamed text (`content` or `reasoning_content` deltas, llama-benchy `client.py`), so a
    /// model's chat header ([`crate::llm::ModelSpec::chat_header_tokens`]) moves each
    /// request's first token to its first text. 0 before a request completes.
    pub fn tokens_after_first_per_s(&self) -> f64 {
        match self.first_text_min {
            Some(first) if self.last_token_max > first => self.text_tokens as f64 / ((self.last_token_max - first) as f64 / 1e9),
            _ => 0.0,
        }
    }

    /// Prompt rate as llama-benchy defines its concurrent `pp t/s (total)`: every completed
    /// request's prompt tokens over the span from the earliest request sent to the latest first
    /// text (llama-benchy 0.3.5 `results.py` `_process_batch`: `batch_prompt_tokens /
    /// (max(first_token_times) - min(start_times))`, a first token being the first streamed
    /// text). 0 before a request completes.
    pub fn prompt_tokens_to_last_first_text_per_s(&self) -> f64 {
        match self.arrival_min {
            Some(start) if self.first_text_max > start => self.prompt_tokens as f64 / ((self.first_text_max - start) as f64 / 1e9),
            _ => 0.0,
        }
    }
    /// Accounts a span of `ns` with `batch` sequences running and `queue` waiting.
    pub fn span(&mut self, ns: Time, batch: usize, queue: usize) {
        self.batch_ns += batch as u128 * ns as u128;
        self.queue_ns += queue as u128 * ns as u128;
        self.covered_ns += ns as u128;
        self.peak_queue = self.peak_queue.max(queue as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_a_bucket_and_exact_for_one_value() {
        let mut h = LogHistogram::new();
        h.record(0.0123);
        assert_eq!(h.quantile(0.99), 0.0123);
        for i in 1..=1000 {
            h.record(i as f64);
        }
        let p50 = h.quantile(0.5);
        assert!((p50 / 500.0 - 1.0).abs() < 0.002, "{p50}");
        assert_eq!(h.quantile(1.0), 1000.0);
    }
}
