//! The proxy's options: its command line ([`ProxyArgs`]) and what they resolve to
//! ([`ProxyOptions`]: the log target, the server's name, the scope, the store, compaction,
//! the tool filter), tested without running a relay.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::compact;
use crate::injected::tool_filter::ToolFilter;
use crate::injected::tools::Selection;
use crate::relay::{server_name, LogTarget};
use crate::store::{self, Scope, StoreArgs};
use crate::tokenizer::Tokenizer;
use crate::upstream::http::config::{check_url, parse_header, Transport};
use crate::upstream::http::{ConfigError, HttpConfig};

/// The proxy's command line.
#[derive(Debug, Parser)]
#[command(
    name = "ctxopt-proxy",
    long_about = None,
    version,
    override_usage = "ctxopt-proxy [OPTIONS] -- <COMMAND> [ARGS]...\n       ctxopt-proxy [OPTIONS] --url <URL> [--header 'NAME: VALUE']...",
    about = "Relay an MCP stdio server (or a remote one, --url) byte for byte, log every frame with its token cost, store the \
             tool results and answer build_context and friends from them",
    after_help = "Logs go to $XDG_STATE_HOME/ctxopt/logs (default ~/.local/state/ctxopt/logs), \
                  one file per run, mode 0600. They hold raw frames: treat them as secrets. \
                  Tool results go to the session store ($XDG_STATE_HOME/ctxopt/store.sqlite3 \
                  by default, mode 0600). Secrets are redacted in both (not on the wire); see \
                  docs/security.md."
)]
pub struct ProxyArgs {
    /// Write the frame log to this file (appended to if it exists).
    #[arg(long, value_name = "PATH", conflicts_with = "no_log")]
    pub log: Option<PathBuf>,
    /// Do not write a frame log.
    #[arg(long)]
    pub no_log: bool,
    /// A short name for the server, used in the log file name and header.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Tokenizer for token counts: o200k_base, cl100k_base or chars/4.
    #[arg(long, default_value = "o200k_base")]
    pub tokenizer: Tokenizer,
    /// Seconds a server may take to exit after a forwarded signal before it is killed.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_seconds)]
    pub(crate) grace_period: Duration,
    /// Injected tools: none (a byte-exact relay), build_context, or all six.
    #[arg(long, value_name = "WHICH", default_value = "all")]
    pub inject: Selection,
    /// `--store` and `--workspace`.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Compact every tools/call result whose text counts more than TOKENS (o200k_base) to at
    /// most TOKENS; the whole result stays one get_result call away. Also
    /// CTXOPT_COMPACT_RESULTS. At least 200.
    #[arg(long, value_name = "TOKENS", value_parser = parse_limit)]
    pub(crate) compact_results: Option<usize>,
    /// With --compact-results: the largest result kept for get_result, in bytes; a larger
    /// one is relayed whole (with a line on stderr).
    #[arg(long, value_name = "BYTES", default_value_t = crate::store::results::MAX_KEPT_BYTES)]
    pub(crate) max_kept_bytes: usize,
    /// Take these server tools out of tools/list (comma-separated); calls to them get an
    /// error and never reach the server.
    #[arg(long, value_name = "NAME,…", conflicts_with = "only_tools")]
    pub hide_tools: Option<String>,
    /// Offer only these server tools (comma-separated); the injected tools stay.
    #[arg(long, value_name = "NAME,…")]
    pub only_tools: Option<String>,
    /// When a server's tool catalog changed since it was trusted, answer tools/list with the
    /// trusted definitions and refuse calls to changed or new tools until `ctxopt trust`
    /// accepts the change. Also CTXOPT_HOLD_CHANGED_TOOLS=1. Needs a store file.
    #[arg(long)]
    pub hold_changed_tools: bool,
    /// Keep raw copies in the frame log and the store: secrets are not redacted (they never
    /// are on the wire). Warns on stderr.
    #[arg(long)]
    pub no_redact: bool,
    /// Hold each injected tool's answer back this many milliseconds (for testing
    /// cancellation).
    #[arg(long, value_name = "MS", default_value = "0", hide = true)]
    pub(crate) answer_delay_ms: u64,
    /// Export every request/response pair as an OpenTelemetry span (and metrics) to this
    /// OTLP/HTTP collector, e.g. http://127.0.0.1:4318; the standard OTEL_* variables work
    /// too. Off unless configured.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// With export on: put tool arguments and results into spans (secret-named members
    /// masked). They can hold file contents and secrets.
    #[arg(long)]
    pub(crate) otlp_capture_content: bool,
    /// A remote server's MCP endpoint (Streamable HTTP), instead of a command: the client
    /// talks stdio to the proxy, the proxy talks HTTP to the server (docs/http.md).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// With --url: a header sent with every request, 'Name: value' (repeatable); ${VAR} in
    /// the value is the environment variable VAR. Values never reach the log.
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,
    /// With --url: seconds the server may take to begin answering a message, and may stay
    /// silent on a stream answering a request [default: 300].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub(crate) timeout: Option<Duration>,
    /// With --url: trust the certificate authorities in this PEM file instead of the
    /// built-in roots (a private CA).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// With --url: the transport; auto tries Streamable HTTP and falls back to the legacy
    /// HTTP+SSE transport (2024-11-05) when the server refuses the first POST with 400,
    /// 404 or 405.
    #[arg(long, value_enum, value_name = "TRANSPORT")]
    pub transport: Option<Transport>,
    /// The server's command and arguments (after `--`).
    #[arg(required_unless_present = "url", trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// Seconds (fractions allowed) between 0 and one day.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err("expected seconds between 0 and 86400".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A compaction limit: a whole number of tokens, at least [`compact::MIN_LIMIT`].
fn parse_limit(text: &str) -> Result<usize, String> {
    let tokens: usize = text
        .trim()
        .parse()
        .map_err(|e| format!("{e} (expected a number of tokens)"))?;
    if tokens < compact::MIN_LIMIT {
        return Err(format!(
            "expected at least {} tokens (the sentence naming get_result needs room)",
            compact::MIN_LIMIT
        ));
    }
    Ok(tokens)
}

/// The host of an `http(s)://` URL (checked before), for the server's name.
fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.to_string()
}

/// Why the options cannot be used: the proxy fails before it starts the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// `CTXOPT_COMPACT_RESULTS` holds no usable limit.
    #[error("CTXOPT_COMPACT_RESULTS={text:?}: {reason}")]
    CompactResultsEnv {
        /// The variable's value.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The workspace cannot be resolved.
    #[error("workspace: {0}")]
    Workspace(#[source] std::io::Error),
    /// `--url`, `--header` or `--ca-cert` cannot be used.
    #[error(transparent)]
    Http(#[from] ConfigError),
    /// An option of a remote server (`--header`, `--timeout`, `--ca-cert`, `--transport`)
    /// without `--url`.
    #[error("{0} is for a remote server: it needs --url")]
    NeedsUrl(&'static str),
    /// `CTXOPT_HOLD_CHANGED_TOOLS` is neither on nor off.
    #[error("CTXOPT_HOLD_CHANGED_TOOLS={0:?}: expected 1, true, yes, 0, false or no")]
    HoldEnv(String),
    /// `--hold-changed-tools` without a store file to keep the trusted catalogs beside.
    #[error("--hold-changed-tools needs a store file to keep the trusted tool catalogs beside (not --store :memory:)")]
    HoldWithoutStore,
}

/// Reads `CTXOPT_HOLD_CHANGED_TOOLS`: `1`, `true`, `yes` (on), `0`, `false`, `no` or empty
/// (off), any case.
pub fn hold_from_env(value: Option<&str>) -> Result<bool, OptionsError> {
    let Some(text) = value else {
        return Ok(false);
    };
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "" | "0" | "false" | "no" => Ok(false),
        _ => Err(OptionsError::HoldEnv(text.to_owned())),
    }
}

/// How long a remote server may take to begin answering, unless `--timeout` says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What the proxy runs with: its arguments resolved.
#[derive(Debug)]
pub struct ProxyOptions {
    /// The server's command and arguments (empty with `--url`).
    pub command: Vec<OsString>,
    /// The remote server (`--url` and its options), instead of a command.
    pub http: Option<HttpConfig>,
    /// The server's short name (`--name`, sanitized, or derived from the command).
    pub server_name: String,
    /// Where the frame log goes.
    pub log: LogTarget,
    /// The tokenizer for token counts.
    pub tokenizer: Tokenizer,
    /// How long a server may take to exit after a forwarded signal.
    pub grace: Duration,
    /// The injected tools offered.
    pub inject: Selection,
    /// `--store` as given (a file, `:memory:`, or the default).
    pub store: Option<String>,
    /// The store's file, when it has one (the redaction key lives beside it).
    pub(crate) store_file: Option<PathBuf>,
    /// Whose records the session's are.
    pub scope: Scope,
    /// Compaction of oversized results, when on.
    pub compaction: Option<compact::Limits>,
    /// The largest result kept for `get_result`, in bytes.
    pub(crate) max_kept_bytes: usize,
    /// The server tools the client sees.
    pub tool_filter: ToolFilter,
    /// Whether changed tools are held back (`--hold-changed-tools`).
    pub hold_changed_tools: bool,
    /// Whether the frame log and the store are redacted (not `--no-redact`).
    pub redact: bool,
    /// How long each injected tool's answer is held back.
    pub(crate) answer_delay: Duration,
    /// `--otlp-endpoint`.
    pub(crate) otlp_endpoint: Option<String>,
    /// `--otlp-capture-content`.
    pub(crate) otlp_capture_content: bool,
}

impl ProxyOptions {
    /// Resolves `args`, with `compact_env` the value of `CTXOPT_COMPACT_RESULTS` (used when
    /// `--compact-results` is not given; empty counts as unset).
    pub fn resolve(
        args: ProxyArgs,
        compact_env: Option<&str>,
    ) -> Result<ProxyOptions, OptionsError> {
        let compact_results = match args.compact_results {
            Some(tokens) => Some(tokens),
            None => match compact_env {
                Some(text) if !text.trim().is_empty() => Some(parse_limit(text).map_err(
                    |reason| OptionsError::CompactResultsEnv {
                        text: text.to_string(),
                        reason,
                    },
                )?),
                _ => None,
            },
        };
        let log = match (args.no_log, args.log) {
            (true, _) => LogTarget::Disabled,
            (false, Some(path)) => LogTarget::Path(path),
            (false, None) => LogTarget::Default,
        };
        let http = match args.url {
            None => {
                let stray = [
                    (!args.headers.is_empty(), "--header"),
                    (args.timeout.is_some(), "--timeout"),
                    (args.ca_cert.is_some(), "--ca-cert"),
                    (args.transport.is_some(), "--transport"),
                ];
                if let Some((_, option)) = stray.into_iter().find(|(given, _)| *given) {
                    return Err(OptionsError::NeedsUrl(option));
                }
                None
            }
            Some(url) => {
                check_url(&url)?;
                let headers = args
                    .headers
                    .iter()
                    .map(|h| parse_header(h, |name| std::env::var(name).ok()))
                    .collect::<Result<_, _>>()?;
                Some(HttpConfig {
                    url,
                    headers,
                    timeout: args.timeout.unwrap_or(DEFAULT_TIMEOUT),
                    ca_cert: args.ca_cert,
                    transport: args.transport.unwrap_or_default(),
                })
            }
        };
        let server_name = match (&args.name, &http) {
            (Some(name), _) => server_name::sanitize(name),
            (None, Some(http)) => server_name::sanitize(&url_host(&http.url)),
            (None, None) => server_name::derive(&args.command),
        };
        let scope = Scope::resolve(
            args.store.workspace.as_deref(),
            &server_name,
            store::new_session_id(),
        )
        .map_err(OptionsError::Workspace)?;
        let store_file = match args.store.store.as_deref() {
            Some(store::location::MEMORY) => None,
            Some(path) => Some(PathBuf::from(path)),
            None => store::StoreLocation::default_file().and_then(|l| match l {
                store::StoreLocation::File(path) => Some(path),
                store::StoreLocation::Memory => None,
            }),
        };
        let tool_filter =
            ToolFilter::from_options(args.hide_tools.as_deref(), args.only_tools.as_deref());
        if args.hold_changed_tools && store_file.is_none() {
            return Err(OptionsError::HoldWithoutStore);
        }
        Ok(ProxyOptions {
            command: args.command,
            http,
            server_name,
            log,
            tokenizer: args.tokenizer,
            grace: args.grace_period,
            inject: args.inject,
            store: args.store.store,
            store_file,
            scope,
            compaction: compact_results.map(|tokens| compact::Limits {
                tokens,
                tokenizer: args.tokenizer,
            }),
            max_kept_bytes: args.max_kept_bytes,
            tool_filter,
            hold_changed_tools: args.hold_changed_tools,
            redact: !args.no_redact,
            answer_delay: Duration::from_millis(args.answer_delay_ms),
            otlp_endpoint: args.otlp_endpoint,
            otlp_capture_content: args.otlp_capture_content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The options of `ctxopt-proxy ARGS -- server --stdio` in a fresh workspace, with
    /// `compact_env` as `CTXOPT_COMPACT_RESULTS`.
    fn resolve(args: &[&str], compact_env: Option<&str>) -> Result<ProxyOptions, OptionsError> {
        let workspace = tempfile::tempdir().unwrap();
        let dir = workspace.path().to_str().unwrap();
        let mut argv = vec!["ctxopt-proxy", "--workspace", dir];
        argv.extend(args);
        argv.extend(["--", "/opt/bin/server", "--stdio"]);
        ProxyOptions::resolve(ProxyArgs::try_parse_from(argv).unwrap(), compact_env)
    }

    #[test]
    fn the_log_goes_where_the_flags_say() {
        assert_eq!(resolve(&[], None).unwrap().log, LogTarget::Default);
        assert_eq!(
            resolve(&["--log", "/tmp/x.jsonl"], None).unwrap().log,
            LogTarget::Path(PathBuf::from("/tmp/x.jsonl"))
        );
        assert_eq!(
            resolve(&["--no-log"], None).unwrap().log,
            LogTarget::Disabled
        );
        assert!(ProxyArgs::try_parse_from(["p", "--no-log", "--log", "x", "--", "s"]).is_err());
    }

    #[test]
    fn the_server_is_named_by_the_flag_made_safe_or_by_its_command() {
        let named = resolve(&["--name", "my server/1"], None).unwrap();
        assert_eq!(named.server_name, "my-server-1");
        assert_eq!(named.scope.server, "my-server-1");
        let derived = resolve(&[], None).unwrap();
        assert_eq!(derived.server_name, "server");
        assert_eq!(derived.command, ["/opt/bin/server", "--stdio"]);
    }

    #[test]
    fn the_scope_is_the_canonical_workspace() {
        let workspace = tempfile::tempdir().unwrap();
        let argv = [
            "p",
            "--workspace",
            workspace.path().to_str().unwrap(),
            "--",
            "s",
        ];
        let options = ProxyOptions::resolve(ProxyArgs::try_parse_from(argv).unwrap(), None);
        let canonical = workspace.path().canonicalize().unwrap();
        assert_eq!(
            options.unwrap().scope.workspace,
            canonical.display().to_string()
        );
        let argv = ["p", "--workspace", "/no/such/workspace", "--", "s"];
        let missing = ProxyOptions::resolve(ProxyArgs::try_parse_from(argv).unwrap(), None);
        assert!(matches!(missing, Err(OptionsError::Workspace(_))));
    }

    #[test]
    fn compaction_comes_from_the_flag_then_the_environment() {
        let limit = |o: ProxyOptions| o.compaction.map(|l| l.tokens);
        assert_eq!(limit(resolve(&[], None).unwrap()), None);
        assert_eq!(limit(resolve(&[], Some(" ")).unwrap()), None);
        assert_eq!(limit(resolve(&[], Some("300")).unwrap()), Some(300));
        let flag = resolve(&["--compact-results", "500"], Some("300")).unwrap();
        assert_eq!(limit(flag), Some(500));
        for bad in ["12", "lots"] {
            let err = resolve(&[], Some(bad)).unwrap_err();
            assert!(
                matches!(&err, OptionsError::CompactResultsEnv { text, .. } if text == bad),
                "{err}"
            );
            assert!(
                err.to_string().starts_with("CTXOPT_COMPACT_RESULTS="),
                "{err}"
            );
        }
        assert!(ProxyArgs::try_parse_from(["p", "--compact-results", "12", "--", "s"]).is_err());
    }

    #[test]
    fn a_memory_store_has_no_file_and_a_path_is_one() {
        let memory = resolve(&["--store", ":memory:"], None).unwrap();
        assert_eq!(memory.store_file, None);
        assert_eq!(memory.store.as_deref(), Some(":memory:"));
        let file = resolve(&["--store", "/tmp/s.sqlite3"], None).unwrap();
        assert_eq!(file.store_file, Some(PathBuf::from("/tmp/s.sqlite3")));
    }

    #[test]
    fn a_url_makes_a_remote_server_named_by_its_host() {
        let workspace = tempfile::tempdir().unwrap();
        let dir = workspace.path().to_str().unwrap();
        let parse = |extra: &[&str]| {
            let mut argv = vec!["ctxopt-proxy", "--workspace", dir];
            argv.extend(extra);
            ProxyArgs::try_parse_from(argv)
        };
        let args = parse(&[
            "--url",
            "https://user:pw@mcp.example.com:8443/mcp?k=v",
            "--header",
            "X-Team: blue",
            "--timeout",
            "2.5",
        ])
        .unwrap();
        let options = ProxyOptions::resolve(args, None).unwrap();
        assert!(options.command.is_empty());
        assert_eq!(options.server_name, "mcp.example.com-8443");
        let http = options.http.unwrap();
        assert_eq!(http.headers, [("X-Team".to_string(), "blue".to_string())]);
        assert_eq!(http.timeout, Duration::from_millis(2500));
        assert_eq!(http.transport, Transport::Auto);
        let sse = parse(&["--url", "http://h/sse", "--transport", "sse"]).unwrap();
        let sse = ProxyOptions::resolve(sse, None).unwrap().http.unwrap();
        assert_eq!(sse.transport, Transport::Sse);
        assert!(parse(&["--url", "http://h/", "--transport", "websocket"]).is_err());
        // A command and a URL, neither: usage errors; a remote server's option without a URL.
        assert!(parse(&["--url", "http://h/", "--", "server"]).is_err());
        assert!(parse(&[]).is_err());
        for stray in [
            ["--header", "A: b"],
            ["--timeout", "3"],
            ["--ca-cert", "ca.pem"],
            ["--transport", "sse"],
        ] {
            let args = parse(&[stray[0], stray[1], "--", "server"]).unwrap();
            let err = ProxyOptions::resolve(args, None).unwrap_err();
            assert!(
                matches!(err, OptionsError::NeedsUrl(o) if o == stray[0]),
                "{err}"
            );
        }
        let bad = ProxyOptions::resolve(parse(&["--url", "ftp://h/"]).unwrap(), None);
        assert!(matches!(bad, Err(OptionsError::Http(_))));
    }

    #[test]
    fn holding_back_comes_from_the_flag_or_the_environment_and_needs_a_store_file() {
        assert!(!resolve(&[], None).unwrap().hold_changed_tools);
        let on = resolve(&["--hold-changed-tools", "--store", "/tmp/s.sqlite3"], None);
        assert!(on.unwrap().hold_changed_tools);
        let memory = resolve(&["--hold-changed-tools", "--store", ":memory:"], None);
        assert!(matches!(memory, Err(OptionsError::HoldWithoutStore)));
        for (text, on) in [
            ("1", true),
            ("TRUE", true),
            ("yes", true),
            ("", false),
            ("0", false),
            ("no", false),
        ] {
            assert_eq!(hold_from_env(Some(text)).unwrap(), on, "{text}");
        }
        assert!(!hold_from_env(None).unwrap());
        let err = hold_from_env(Some("sometimes")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("CTXOPT_HOLD_CHANGED_TOOLS=\"sometimes\""),
            "{err}"
        );
    }

    #[test]
    fn filters_redaction_and_delays_are_carried_over() {
        let plain = resolve(&[], None).unwrap();
        assert!(plain.redact);
        assert!(!plain.tool_filter.is_active());
        assert_eq!(plain.answer_delay, Duration::ZERO);
        let options = resolve(
            &[
                "--hide-tools",
                "a,b",
                "--no-redact",
                "--answer-delay-ms",
                "20",
            ],
            None,
        )
        .unwrap();
        assert!(!options.redact);
        assert!(options.tool_filter.is_active());
        assert!(!options.tool_filter.shows("a") && options.tool_filter.shows("c"));
        assert_eq!(options.answer_delay, Duration::from_millis(20));
        assert_eq!(options.grace, Duration::from_secs(5));
    }
}
