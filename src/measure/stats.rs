//! Order statistics over small integer samples (nearest-rank percentiles).

use serde::Serialize;

/// n, median, min, max and the raw values of a sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Sum of the values.
    pub total: u64,
    /// The nearest-rank median (the value at rank ⌈n/2⌉ of the sorted sample).
    pub median: u64,
    /// The smallest value.
    pub min: u64,
    /// The largest value.
    pub max: u64,
    /// Every value, in the order observed.
    pub values: Vec<u64>,
}

impl Summary {
    /// Summarizes `values` (kept in their order).
    pub fn of(values: Vec<u64>) -> Self {
        let mut sorted = values.clone();
        sorted.sort_unstable();
        Summary {
            n: values.len(),
            total: values.iter().sum(),
            median: percentile(&sorted, 50.0),
            min: sorted.first().copied().unwrap_or(0),
            max: sorted.last().copied().unwrap_or(0),
            values,
        }
    }
}

/// Latency percentiles, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Answers with a latency.
    pub n: usize,
    /// Nearest-rank 50th percentile.
    pub p50_us: u64,
    /// Nearest-rank 95th percentile.
    pub p95_us: u64,
    /// The slowest answer.
    pub max_us: u64,
}

impl Latency {
    /// Summarizes latencies in microseconds.
    pub fn of(mut values: Vec<u64>) -> Self {
        values.sort_unstable();
        Latency {
            n: values.len(),
            p50_us: percentile(&values, 50.0),
            p95_us: percentile(&values, 95.0),
            max_us: values.last().copied().unwrap_or(0),
        }
    }
}

/// The nearest-rank percentile `p` (0–100] of an ascending sample; 0 when empty.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&s, 50.0), 10);
        assert_eq!(percentile(&s, 95.0), 19);
        assert_eq!(percentile(&[7], 95.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn summary_keeps_order_of_values() {
        let s = Summary::of(vec![5, 1, 3]);
        assert_eq!((s.n, s.total, s.median, s.min, s.max), (3, 9, 3, 1, 5));
        assert_eq!(s.values, [5, 1, 3]);
    }
}
