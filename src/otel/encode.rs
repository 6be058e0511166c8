//! Spans and metrics as OTLP export requests (the official generated protobuf types of
//! `opentelemetry-proto`), and the attribute helpers the span and metric builders share.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{Metric, ResourceMetrics, ScopeMetrics};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

/// The semantic-conventions schema the attribute names follow.
pub(crate) const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.39.0";

/// A string attribute.
pub(crate) fn string(key: &str, value: impl Into<String>) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.into()))
}

/// An integer attribute (counts above `i64::MAX` are clamped).
pub(crate) fn int(key: &str, value: u64) -> KeyValue {
    attribute(
        key,
        any_value::Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

/// A signed integer attribute.
pub(crate) fn signed(key: &str, value: i64) -> KeyValue {
    attribute(key, any_value::Value::IntValue(value))
}

/// A boolean attribute.
pub(crate) fn boolean(key: &str, value: bool) -> KeyValue {
    attribute(key, any_value::Value::BoolValue(value))
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

/// The resource every request carries.
pub(crate) fn resource(attributes: &[(String, String)]) -> Resource {
    Resource {
        attributes: attributes
            .iter()
            .map(|(k, v)| string(k, v.clone()))
            .collect(),
        ..Default::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "ctxopt".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    }
}

/// The protobuf body of a `/v1/traces` request holding `spans`.
pub(crate) fn traces_body(resource: &Resource, spans: Vec<Span>) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope()),
                spans,
                schema_url: SCHEMA_URL.into(),
            }],
            schema_url: SCHEMA_URL.into(),
        }],
    }
    .encode_to_vec()
}

/// The protobuf body of a `/v1/metrics` request holding `metrics`.
pub(crate) fn metrics_body(resource: &Resource, metrics: Vec<Metric>) -> Vec<u8> {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope()),
                metrics,
                schema_url: SCHEMA_URL.into(),
            }],
            schema_url: SCHEMA_URL.into(),
        }],
    }
    .encode_to_vec()
}
