//! Metrics of a session: the MCP conventions' `mcp.client.operation.duration` histogram
//! (seconds, per method, tool and error type) and ctxopt's `ctxopt.tool.tokens` counter
//! (tokens per tool and direction), cumulative from the session's start.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Histogram, HistogramDataPoint, Metric,
    NumberDataPoint, Sum,
};

use super::encode;

/// The histogram's bucket boundaries in seconds (the ones the MCP conventions recommend).
pub(crate) const DURATION_BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Attribute values identifying one histogram or counter series, in key order.
type Series = Vec<(&'static str, String)>;

#[derive(Debug, Default)]
struct Distribution {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    buckets: [u64; DURATION_BOUNDS.len() + 1],
}

impl Distribution {
    fn record(&mut self, seconds: f64) {
        if self.count == 0 {
            (self.min, self.max) = (seconds, seconds);
        }
        self.count += 1;
        self.sum += seconds;
        self.min = self.min.min(seconds);
        self.max = self.max.max(seconds);
        let bucket = DURATION_BOUNDS.partition_point(|&bound| bound < seconds);
        self.buckets[bucket] += 1;
    }
}

/// The metrics of one session, as they accumulate.
#[derive(Debug)]
pub(crate) struct Metrics {
    started_ns: u64,
    durations: BTreeMap<Series, Distribution>,
    tokens: BTreeMap<Series, u64>,
}

fn attributes(series: &Series) -> Vec<KeyValue> {
    series
        .iter()
        .map(|(k, v)| encode::string(k, v.clone()))
        .collect()
}

impl Metrics {
    /// Metrics of a session that started at `started_ns` (Unix nanoseconds).
    pub(crate) fn new(started_ns: u64) -> Metrics {
        Metrics {
            started_ns,
            durations: BTreeMap::new(),
            tokens: BTreeMap::new(),
        }
    }

    /// One answered request the client sent: its method, tool, error type and duration.
    pub(crate) fn operation(
        &mut self,
        method: &str,
        tool: Option<&str>,
        error_type: Option<&str>,
        seconds: f64,
    ) {
        let mut series: Series = vec![("mcp.method.name", method.to_string())];
        if let Some(tool) = tool {
            series.push(("gen_ai.tool.name", tool.to_string()));
        }
        if let Some(error) = error_type {
            series.push(("error.type", error.to_string()));
        }
        series.push(("network.transport", "pipe".to_string()));
        series.sort();
        self.durations.entry(series).or_default().record(seconds);
    }

    /// The tokens of one answered tool call: its request's and its response's.
    pub(crate) fn tool_tokens(&mut self, tool: &str, request: u64, response: u64) {
        for (direction, tokens) in [("request", request), ("response", response)] {
            let series: Series = vec![
                ("ctxopt.token.direction", direction.to_string()),
                ("gen_ai.tool.name", tool.to_string()),
            ];
            *self.tokens.entry(series).or_default() += tokens;
        }
    }

    /// The metrics as of `now_ns`; empty when nothing was observed.
    pub(crate) fn export(&self, now_ns: u64) -> Vec<Metric> {
        let mut metrics = Vec::new();
        if !self.durations.is_empty() {
            let data_points = self
                .durations
                .iter()
                .map(|(series, d)| HistogramDataPoint {
                    attributes: attributes(series),
                    start_time_unix_nano: self.started_ns,
                    time_unix_nano: now_ns,
                    count: d.count,
                    sum: Some(d.sum),
                    bucket_counts: d.buckets.to_vec(),
                    explicit_bounds: DURATION_BOUNDS.to_vec(),
                    min: Some(d.min),
                    max: Some(d.max),
                    ..Default::default()
                })
                .collect();
            metrics.push(Metric {
                name: "mcp.client.operation.duration".into(),
                description:
                    "Duration of MCP requests the client sent, request relayed to response relayed"
                        .into(),
                unit: "s".into(),
                data: Some(metric::Data::Histogram(Histogram {
                    data_points,
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                })),
                ..Default::default()
            });
        }
        if !self.tokens.is_empty() {
            let data_points = self
                .tokens
                .iter()
                .map(|(series, &tokens)| NumberDataPoint {
                    attributes: attributes(series),
                    start_time_unix_nano: self.started_ns,
                    time_unix_nano: now_ns,
                    value: Some(number_data_point::Value::AsInt(
                        i64::try_from(tokens).unwrap_or(i64::MAX),
                    )),
                    ..Default::default()
                })
                .collect();
            metrics.push(Metric {
                name: "ctxopt.tool.tokens".into(),
                description: "Tokens of tools/call requests and responses, by the log's tokenizer"
                    .into(),
                unit: "{token}".into(),
                data: Some(metric::Data::Sum(Sum {
                    data_points,
                    aggregation_temporality: AggregationTemporality::Cumulative as i32,
                    is_monotonic: true,
                })),
                ..Default::default()
            });
        }
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_fall_in_their_buckets_and_tokens_add_up() {
        let mut m = Metrics::new(5);
        m.operation("tools/call", Some("read"), None, 0.004);
        m.operation("tools/call", Some("read"), None, 0.01);
        m.operation("tools/call", Some("read"), None, 0.5001);
        m.operation("tools/call", Some("read"), Some("tool_error"), 400.0);
        m.tool_tokens("read", 10, 100);
        m.tool_tokens("read", 1, 7);
        let metrics = m.export(9);
        let Some(metric::Data::Histogram(h)) = &metrics[0].data else {
            panic!("histogram")
        };
        assert_eq!(
            h.data_points.len(),
            2,
            "one series per error type (sorted: error.type first)"
        );
        let ok = &h.data_points[1];
        assert_eq!(ok.count, 3);
        assert_eq!(ok.bucket_counts.iter().sum::<u64>(), 3);
        assert_eq!(
            (ok.bucket_counts[0], ok.bucket_counts[6]),
            (2, 1),
            "bounds are inclusive upper limits"
        );
        assert_eq!(
            *h.data_points[0].bucket_counts.last().unwrap(),
            1,
            "beyond the last bound"
        );
        assert_eq!((ok.start_time_unix_nano, ok.time_unix_nano), (5, 9));
        let Some(metric::Data::Sum(s)) = &metrics[1].data else {
            panic!("sum")
        };
        let values: Vec<_> = s.data_points.iter().map(|p| p.value).collect();
        assert_eq!(
            values,
            [
                Some(number_data_point::Value::AsInt(11)),
                Some(number_data_point::Value::AsInt(107))
            ]
        );
        assert!(Metrics::new(0).export(1).is_empty());
    }
}
