//! When and where to export: `--otlp-endpoint` and the standard `OTEL_*` variables, read the
//! way the OpenTelemetry specification defines them (HTTP/protobuf only).
//!
//! Export is on only when an endpoint is given: `--otlp-endpoint URL` (a base URL like
//! `OTEL_EXPORTER_OTLP_ENDPOINT`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (used as they are) or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` and `/v1/metrics` appended). Unlike an SDK, there is no default endpoint:
//! nothing leaves the machine unless someone asked for it.

use std::time::Duration;

use super::OtelError;

/// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` gives one.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "ctxopt-proxy";

/// `OTEL_EXPORTER_OTLP_TIMEOUT`'s default: 10 seconds per request.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// `OTEL_BSP_MAX_QUEUE_SIZE`'s default: spans waiting for the exporter thread.
const DEFAULT_QUEUE: usize = 2048;

/// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`'s default: spans per request.
const DEFAULT_BATCH: usize = 512;

/// Where one signal (traces or metrics) goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The full URL the protobuf body is POSTed to.
    pub url: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS` and the signal's own).
    pub headers: Vec<(String, String)>,
    /// How long one request may take.
    pub timeout: Duration,
}

/// A resolved export configuration; its existence means export is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// Where spans go (`None`: `OTEL_TRACES_EXPORTER=none`).
    pub traces: Option<Target>,
    /// Where metrics go (`None`: `OTEL_METRICS_EXPORTER=none`).
    pub metrics: Option<Target>,
    /// Resource attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
    /// Spans that may wait for the exporter before new ones are dropped.
    pub(crate) queue_capacity: usize,
    /// Spans per export request.
    pub(crate) batch_size: usize,
    /// Whether tool arguments and results go into spans (after redaction).
    pub capture_content: bool,
}

/// The signals and their variable and path names.
#[derive(Clone, Copy)]
enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    fn upper(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Signal::Traces => "v1/traces",
            Signal::Metrics => "v1/metrics",
        }
    }
}

fn invalid(name: &str, reason: impl Into<String>) -> OtelError {
    OtelError::Config {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// Reads one variable: unset and empty are the same (as the specification says).
fn var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

/// A boolean variable: only `true` (any case) is true.
fn flag(env: &dyn Fn(&str) -> Option<String>, name: &str) -> bool {
    var(env, name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

impl ExportConfig {
    /// Resolves the configuration from `endpoint` (`--otlp-endpoint`, a base URL),
    /// `capture_content` (the command line's opt-in) and the variables `env` looks up.
    /// `Ok(None)`: export is off. `Err`: something was configured that cannot work.
    pub fn resolve(
        endpoint: Option<&str>,
        capture_content: bool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ExportConfig>, OtelError> {
        if flag(env, "OTEL_SDK_DISABLED") {
            return Ok(None);
        }
        let traces = target(Signal::Traces, endpoint, env)?;
        let metrics = target(Signal::Metrics, endpoint, env)?;
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        Ok(Some(ExportConfig {
            traces,
            metrics,
            resource: resource(env)?,
            queue_capacity: count(env, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_QUEUE)?,
            batch_size: count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DEFAULT_BATCH)?,
            capture_content: capture_content
                || flag(env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        }))
    }

    /// The configuration from the process environment.
    pub fn from_env(
        endpoint: Option<&str>,
        capture_content: bool,
    ) -> Result<Option<ExportConfig>, OtelError> {
        ExportConfig::resolve(endpoint, capture_content, &|name| std::env::var(name).ok())
    }
}

/// The target of one signal, or `None` when no endpoint names it or its exporter is `none`.
fn target(
    signal: Signal,
    endpoint: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Target>, OtelError> {
    let s = signal.upper();
    let exporter_var = format!("OTEL_{s}_EXPORTER");
    match var(env, &exporter_var).map(|v| v.trim().to_ascii_lowercase()) {
        Some(v) if v == "none" => return Ok(None),
        Some(v) if v != "otlp" => {
            return Err(invalid(
                &exporter_var,
                format!("`{v}` is not supported (otlp or none)"),
            ))
        }
        _ => {}
    }
    let signal_endpoint = format!("OTEL_EXPORTER_OTLP_{s}_ENDPOINT");
    // The URL, and the option or variable it came from (for error messages).
    let (url, source) = match (endpoint, var(env, &signal_endpoint)) {
        (Some(base), _) => (join(base, signal.path()), "--otlp-endpoint".to_string()),
        (None, Some(url)) => (url.trim().to_string(), signal_endpoint),
        (None, None) => match var(env, "OTEL_EXPORTER_OTLP_ENDPOINT") {
            Some(base) => (
                join(base.trim(), signal.path()),
                "OTEL_EXPORTER_OTLP_ENDPOINT".to_string(),
            ),
            None => return Ok(None),
        },
    };
    check_url(&url, &source)?;
    for name in [
        "OTEL_EXPORTER_OTLP_PROTOCOL".to_string(),
        format!("OTEL_EXPORTER_OTLP_{s}_PROTOCOL"),
    ] {
        if let Some(protocol) = var(env, &name) {
            if protocol.trim() != "http/protobuf" {
                return Err(invalid(
                    &name,
                    format!(
                        "`{}` is not supported; ctxopt exports http/protobuf",
                        protocol.trim()
                    ),
                ));
            }
        }
    }
    let mut headers = pairs(env, "OTEL_EXPORTER_OTLP_HEADERS")?;
    for (key, value) in pairs(env, &format!("OTEL_EXPORTER_OTLP_{s}_HEADERS"))? {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
        headers.push((key, value));
    }
    let timeout = match var(env, &format!("OTEL_EXPORTER_OTLP_{s}_TIMEOUT")) {
        Some(_) => millis(env, &format!("OTEL_EXPORTER_OTLP_{s}_TIMEOUT"))?,
        None => millis(env, "OTEL_EXPORTER_OTLP_TIMEOUT")?,
    };
    Ok(Some(Target {
        url,
        headers,
        timeout,
    }))
}

/// A base endpoint with the signal's path appended (one `/` between them).
fn join(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// Only `http://` URLs: this build has no TLS (see docs/otel.md for HTTPS collectors).
fn check_url(url: &str, name: &str) -> Result<(), OtelError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| {
            if url.starts_with("https://") {
                invalid(
                    name,
                    format!("{url}: https is not supported (no TLS in this build); send to a local collector over http://"),
                )
            } else {
                invalid(name, format!("{url}: not an http:// URL"))
            }
        })?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(invalid(name, format!("{url}: no host")));
    }
    Ok(())
}

/// A millisecond timeout variable (default [`DEFAULT_TIMEOUT`]).
fn millis(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Duration, OtelError> {
    Ok(positive(env, name, "a positive number of milliseconds")?
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis))
}

/// A positive count variable.
fn count(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: usize,
) -> Result<usize, OtelError> {
    Ok(positive(env, name, "a positive count")?.unwrap_or(default))
}

/// A variable holding a positive integer (`what` says what it should be); `None` when unset.
fn positive<T: std::str::FromStr + PartialOrd + Default>(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    what: &str,
) -> Result<Option<T>, OtelError> {
    let Some(v) = var(env, name) else {
        return Ok(None);
    };
    v.trim()
        .parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .map(Some)
        .ok_or_else(|| invalid(name, format!("`{v}` is not {what}")))
}

/// `key1=value1,key2=value2`, values percent-decoded (the W3C Baggage syntax the
/// specification uses for headers and resource attributes).
fn pairs(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Vec<(String, String)>, OtelError> {
    let Some(text) = var(env, name) else {
        return Ok(Vec::new());
    };
    text.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| invalid(name, format!("`{}` is not key=value", item.trim())))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(invalid(name, format!("`{}` has no key", item.trim())));
            }
            let value = percent_decode(value.trim())
                .ok_or_else(|| invalid(name, format!("`{}`: bad percent-encoding", item.trim())))?;
            Ok((key.to_string(), value))
        })
        .collect()
}

/// `%XX` sequences decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `service.name` first (`OTEL_SERVICE_NAME`, else the one in `OTEL_RESOURCE_ATTRIBUTES`,
/// else [`DEFAULT_SERVICE_NAME`]), then the other resource attributes in their order, then
/// the `telemetry.sdk.*` attributes.
fn resource(env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, OtelError> {
    let mut attributes = pairs(env, "OTEL_RESOURCE_ATTRIBUTES")?;
    let from_attributes = attributes
        .iter()
        .position(|(k, _)| k == "service.name")
        .map(|i| attributes.remove(i).1);
    let service = var(env, "OTEL_SERVICE_NAME")
        .map(|s| s.trim().to_string())
        .or(from_attributes)
        .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
    let mut resource = vec![("service.name".to_string(), service)];
    resource.append(&mut attributes);
    resource.extend([
        ("telemetry.sdk.name".to_string(), "ctxopt".to_string()),
        ("telemetry.sdk.language".to_string(), "rust".to_string()),
        (
            "telemetry.sdk.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
    ]);
    Ok(resource)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn resolve(
        endpoint: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<Option<ExportConfig>, OtelError> {
        ExportConfig::resolve(endpoint, false, &env(vars))
    }

    #[test]
    fn nothing_configured_is_off() {
        assert_eq!(resolve(None, &[]).unwrap(), None);
        assert_eq!(
            resolve(
                None,
                &[
                    ("OTEL_SERVICE_NAME", "x"),
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", " ")
                ]
            )
            .unwrap(),
            None
        );
        let disabled = [
            ("OTEL_SDK_DISABLED", "TRUE"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ];
        assert_eq!(resolve(Some("http://c:4318"), &disabled).unwrap(), None);
    }

    #[test]
    fn endpoints_follow_the_specification() {
        let base = resolve(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(base.traces.unwrap().url, "http://c:4318/v1/traces");
        assert_eq!(base.metrics.unwrap().url, "http://c:4318/v1/metrics");
        let own = resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/custom"),
                ("OTEL_METRICS_EXPORTER", "none"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(own.traces.unwrap().url, "http://t:9/custom");
        assert_eq!(own.metrics, None);
        let flag = resolve(
            Some("http://f:1"),
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:9/x")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(flag.traces.unwrap().url, "http://f:1/v1/traces");
    }

    #[test]
    fn headers_resource_and_limits() {
        let config = resolve(
            Some("http://c:4318"),
            &[
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X=2"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=ignored,deployment.environment.name=ci",
                ),
                ("OTEL_SERVICE_NAME", "agents"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "7"),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ],
        )
        .unwrap()
        .unwrap();
        let traces = config.traces.unwrap();
        assert_eq!(
            traces.headers,
            [("api-key".into(), "a b".into()), ("X".into(), "2".into())]
        );
        assert_eq!(traces.timeout, Duration::from_millis(250));
        assert_eq!(config.metrics.unwrap().headers.len(), 2);
        assert_eq!(config.resource[0], ("service.name".into(), "agents".into()));
        assert_eq!(
            config.resource[1],
            ("deployment.environment.name".into(), "ci".into())
        );
        assert_eq!(
            (config.queue_capacity, config.batch_size),
            (7, DEFAULT_BATCH)
        );
        assert!(config.capture_content);
    }

    #[test]
    fn what_cannot_work_is_a_clear_error() {
        let cases: [(&[(&str, &str)], &str); 6] = [
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318")],
                "OTEL_EXPORTER_OTLP_ENDPOINT: https://c:4318/v1/traces: https is not supported",
            ),
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")],
                "not an http:// URL",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ],
                "`grpc` is not supported",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
                ],
                "not key=value",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
                ],
                "milliseconds",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_TRACES_EXPORTER", "zipkin"),
                ],
                "otlp or none",
            ),
        ];
        for (vars, expected) in cases {
            let err = resolve(None, vars).unwrap_err().to_string();
            assert!(err.contains(expected), "{vars:?}: {err}");
        }
    }
}
