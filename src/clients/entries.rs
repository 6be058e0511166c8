//! The server entries of a config file, read with their byte spans: which are stdio
//! launches that can go behind `ctxopt-proxy`, which are already behind it, which is the
//! `ctxopt serve` entry, which are remote servers (Streamable HTTP or legacy SSE) that can go behind
//! `ctxopt-proxy --url`, and which are left alone (Zed extensions, env syntaxes the proxy does
//! not expand) and why.
//! JSON/JSONC through [`super::jsonc`], TOML through `toml_edit`'s spans (Codex's remote
//! entries in [`super::toml_remote`]).

use std::ops::Range;
use std::path::Path;

use super::edit::{line_ending, separator_before};
use super::json_edit::{append_slot, member_spans};
use super::jsonc::{self, Kind, Node};
use super::toml_remote;
use super::ConfigError;
use crate::upstream::http::config::{check_url, parse_header};

/// The command `wrap` puts in front of a server.
pub const PROXY: &str = "ctxopt-proxy";
/// The key of the entry that serves the context tools (`ctxopt serve`).
pub const SERVE_KEY: &str = "ctxopt";

/// Where a file keeps its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServersAt {
    /// A JSON object at this key path (`["mcpServers"]`, `["servers"]`,
    /// `["projects", "/abs/dir", "mcpServers"]`, `["context_servers"]`).
    Json(Vec<String>),
    /// TOML tables `[mcp_servers.NAME]` (Codex).
    Toml,
}

/// A decoded value and where its literal is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The literal's bytes in the text.
    pub span: Range<usize>,
    /// Its value (`None` for an array element that is not a string).
    pub value: T,
}

/// A launch: the command, its arguments, and where an `args` member would go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The command value.
    pub command: Located<String>,
    /// The `args` array, when there is one.
    pub args: Option<Args>,
    /// Where an `args` member is inserted when there is none: at `at`, the text
    /// `before` + the array + `after`.
    pub(crate) args_slot: Slot,
}

/// An `args` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The array's bytes, brackets included.
    pub span: Range<usize>,
    /// Its elements.
    pub(crate) elements: Vec<Located<Option<String>>>,
}

/// Where and how a member is inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The byte offset.
    pub at: usize,
    /// The text before the value.
    pub before: String,
    /// The text after the value.
    pub after: String,
}

/// A remote server (Streamable HTTP or the legacy HTTP+SSE transport) that
/// `ctxopt-proxy --url` can reach in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// The server's URL, as written.
    pub url: String,
    /// Its headers as `Name: value`, env references as written (`${VAR}`).
    pub headers: Vec<String>,
    /// Whether the entry says its transport is the legacy HTTP+SSE one (`type: "sse"`);
    /// otherwise the proxy detects it.
    pub sse: bool,
    /// The variables the headers reference that the client must pass to the proxy by name
    /// (Codex's `env_vars`: Codex starts a stdio server with a filtered environment). Empty
    /// for the JSON clients, which start a server with their own environment.
    pub env_vars: Vec<String>,
    /// How the entry's text becomes the launch.
    pub(crate) rewrite: Rewrite,
}

/// How a remote entry's text becomes a launch of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// The entry's object (JSON) or inline table (TOML), braces included, is replaced whole;
    /// its other members (`timeout`, `disabled`, …), key to value end, stay.
    Object {
        /// The object's bytes.
        value: Range<usize>,
        /// The members that stay.
        kept: Vec<Range<usize>>,
    },
    /// A `[mcp_servers.NAME]` table: the `url` line becomes the launch's lines, and the lines
    /// of the other remote keys go; every other line stays.
    Lines {
        /// The `url` line, from its start to its end (its line break excluded).
        url: Range<usize>,
        /// The `url` line's indentation, which the launch's lines take.
        indent: String,
        /// The lines that go, each with one line break.
        dropped: Vec<Range<usize>>,
    },
}

impl Remote {
    /// The `ctxopt-proxy` arguments that reach this server, named `key`.
    pub fn proxy_args(&self, key: &str) -> Vec<String> {
        let mut args: Vec<String> = ["--name", key, "--inject", "none", "--url", &self.url]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if self.sse {
            args.extend(["--transport".to_string(), "sse".to_string()]);
        }
        for header in &self.headers {
            args.extend(["--header".to_string(), header.clone()]);
        }
        args
    }
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// A stdio server that can be wrapped.
    Stdio(Launch),
    /// A remote server that can be wrapped.
    Remote(Remote),
    /// A server already behind `ctxopt-proxy`.
    Wrapped(Launch),
    /// The `ctxopt serve` entry.
    Serve,
    /// Left alone, with the reason.
    LeftAlone(String),
}

/// One server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's key (never changed: permissions and hook matchers use it).
    pub key: String,
    /// What it is.
    pub state: State,
    /// The entry's bytes: for JSON and a TOML inline table, from its key to its value's end;
    /// for a `[mcp_servers.NAME]` table, from its header to its last line that is not blank.
    /// `None` for a TOML entry written as dotted keys.
    pub member: Option<Range<usize>>,
}

impl Entry {
    /// The launch's command line (command and args), when it is one.
    pub fn command_line(&self) -> Option<Vec<String>> {
        let launch = match &self.state {
            State::Stdio(l) | State::Wrapped(l) => l,
            _ => return None,
        };
        let mut line = vec![launch.command.value.clone()];
        if let Some(args) = &launch.args {
            line.extend(args.elements.iter().filter_map(|e| e.value.clone()));
        }
        Some(line)
    }
}

/// The servers of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Servers {
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// Where a new entry is appended: at `at`, `before` + `"KEY": value` (JSON) or the table
    /// (TOML) + `after`. `None` when the file has no servers object to append to.
    pub append: Option<Slot>,
    /// For JSON: the separator a new member takes.
    pub json: bool,
    /// TOML servers written as one inline table (`mcp_servers = { a = { … } }`): a new
    /// entry goes inside it, as an inline table.
    pub inline: bool,
}

/// Reads the servers of `text`; `Ok(None)` when the file has no servers at that place.
pub fn read(text: &str, at: &ServersAt, path: &Path) -> Result<Option<Servers>, ConfigError> {
    let located = |e: ConfigError| e.in_file(path);
    match at {
        ServersAt::Json(keys) => {
            let root = jsonc::parse(text).map_err(located)?;
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let zed = keys == ["context_servers"];
            Ok(root
                .at(&keys)
                .and_then(|servers| read_json(text, servers, zed)))
        }
        ServersAt::Toml => read_toml(text).map_err(located),
    }
}

fn basename(command: &str) -> &str {
    command.rsplit(['/', '\\']).next().unwrap_or(command)
}

/// Decides what a launch is from its command and first argument.
fn classify(launch: Launch) -> State {
    let base = basename(&launch.command.value);
    if base == PROXY || base == "ctxopt-proxy.exe" {
        return State::Wrapped(launch);
    }
    let first = launch
        .args
        .as_ref()
        .and_then(|a| a.elements.first())
        .and_then(|e| e.value.as_deref());
    if (base == "ctxopt" || base == "ctxopt.exe") && first == Some("serve") {
        return State::Serve;
    }
    State::Stdio(launch)
}

const REMOTE_KEYS: [&str; 3] = ["url", "httpUrl", "serverUrl"];
const REMOTE_TYPES: [&str; 3] = ["http", "sse", "streamable-http"];

/// Members of a remote entry that `ctxopt-proxy` has no equivalent for.
const SIGN_IN_KEYS: [&str; 3] = ["oauth", "authProviderType", "auth"];

/// Why a Codex entry without `url` that looks remote (another client's URL key, a remote
/// `type`) is left alone: Codex reads a remote server's URL from `url` only.
fn remote_reason(has: &dyn Fn(&str) -> bool, kind: Option<&str>) -> Option<String> {
    if let Some(key) = REMOTE_KEYS.iter().find(|k| has(k)) {
        return Some(format!(
            "remote server (`{key}`), which Codex does not read (its remote servers have `url`)"
        ));
    }
    match kind {
        Some(t) if REMOTE_TYPES.contains(&t) => Some(format!(
            "remote server (type `{t}`) without `url`, which Codex does not read"
        )),
        _ => None,
    }
}

/// Whether `name` is a variable `ctxopt-proxy` expands as `${NAME}` (a letter or `_`, then
/// letters, digits and `_`).
pub(crate) fn is_variable_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Why `ctxopt-proxy` cannot send this header value as written, if it cannot: every `$`
/// must begin a `${NAME}` it expands (or the `$${` escape).
fn header_env_reason(name: &str, value: &str) -> Option<String> {
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix("$${") {
            rest = tail;
            continue;
        }
        let reference = after
            .strip_prefix("${")
            .and_then(|r| r.find('}').map(|end| (&r[..end], &r[end + 1..])));
        match reference {
            Some((variable, tail)) if is_variable_name(variable) => rest = tail,
            _ => {
                let shown: String = after.chars().take(24).collect();
                return Some(format!(
                    "header `{name}` references the environment as `{shown}`, which ctxopt-proxy does not expand (it expands `${{VAR}}`)"
                ));
            }
        }
    }
    None
}

/// A JSON entry with a URL or a remote type: what it is, or `None` for a launch.
fn json_remote(entry: &Node, kind: Option<&str>) -> Option<State> {
    let url_key = REMOTE_KEYS.iter().find(|k| entry.get(k).is_some());
    let typed = kind.is_some_and(|t| REMOTE_TYPES.contains(&t));
    if url_key.is_none() && !typed {
        return None;
    }
    let left = |why: String| Some(State::LeftAlone(why));
    let Some(url_key) = url_key else {
        return left(format!("remote server (type `{}`) without a URL", kind?));
    };
    let Some(url) = entry.get(url_key).and_then(Node::as_str) else {
        return left(format!("`{url_key}` is not a string"));
    };
    if url.contains('$') {
        return left(format!(
            "the URL references the environment (`{url_key}` holds `$`); ctxopt-proxy expands it in headers only"
        ));
    }
    if let Err(e) = check_url(url) {
        return left(e.to_string());
    }
    if let Some(key) = SIGN_IN_KEYS.iter().find(|k| entry.get(k).is_some()) {
        return left(format!(
            "`{key}`: ctxopt-proxy does not sign in to remote servers"
        ));
    }
    let mut headers = Vec::new();
    if let Some(node) = entry.get("headers") {
        let Some(members) = node.members() else {
            return left("`headers` is not an object".into());
        };
        for m in members {
            let Some(value) = m.value.as_str() else {
                return left(format!("header `{}` is not a string", m.key));
            };
            if let Some(why) = header_env_reason(&m.key, value) {
                return left(why);
            }
            let header = format!("{}: {value}", m.key);
            if let Err(e) = parse_header(&header, |_| Some(String::new())) {
                return left(e.to_string());
            }
            headers.push(header);
        }
    }
    let skip = |k: &str| k == "type" || k == "headers" || REMOTE_KEYS.contains(&k);
    let kept = entry
        .members()?
        .iter()
        .filter(|m| !skip(&m.key))
        .map(|m| m.key_span.start..m.value.span.end)
        .collect();
    // A transport the entry does not state (a bare `url`: the legacy one for Gemini CLI,
    // either for clients that probe, like Cursor) the proxy detects as those clients do.
    Some(State::Remote(Remote {
        url: url.to_string(),
        headers,
        sse: kind == Some("sse"),
        env_vars: Vec::new(),
        rewrite: Rewrite::Object {
            value: entry.span.clone(),
            kept,
        },
    }))
}

fn read_json(text: &str, servers: &Node, zed: bool) -> Option<Servers> {
    let members = servers.members()?;
    let entries = members
        .iter()
        .map(|m| Entry {
            key: m.key.clone(),
            state: json_state(text, &m.value, zed),
            member: Some(m.key_span.start..m.value.span.end),
        })
        .collect();
    let append = append_slot(text, servers.span.start, &member_spans(servers));
    Some(Servers {
        entries,
        append: Some(append),
        json: true,
        inline: false,
    })
}

fn json_state(text: &str, entry: &Node, zed: bool) -> State {
    if entry.members().is_none() {
        return State::LeftAlone("not an object".into());
    }
    let kind = entry.get("type").and_then(Node::as_str);
    if let Some(state) = json_remote(entry, kind) {
        return state;
    }
    let Some(command) = entry.member("command") else {
        return State::LeftAlone(if zed && entry.get("settings").is_some() {
            "Zed extension server (no command)".into()
        } else {
            "no command".into()
        });
    };
    // Zed's older form nests the launch: "command": {"path", "args", "env"}.
    let (container, command) = match &command.value.kind {
        Kind::Object(_) => match command.value.member("path") {
            Some(path) => (&command.value, path),
            None => return State::LeftAlone("command object without `path`".into()),
        },
        _ => (entry, command),
    };
    let Some(value) = command.value.as_str() else {
        return State::LeftAlone("command is not a string".into());
    };
    let args = match container.get("args") {
        None => None,
        Some(node) => match node.elements() {
            Some(elements) => Some(Args {
                span: node.span.clone(),
                elements: elements
                    .iter()
                    .map(|e| Located {
                        span: e.span.clone(),
                        value: e.as_str().map(str::to_string),
                    })
                    .collect(),
            }),
            None => return State::LeftAlone("args is not a list".into()),
        },
    };
    let sep = separator_before(text, command.key_span.start);
    classify(Launch {
        command: Located {
            span: command.value.span.clone(),
            value: value.to_string(),
        },
        args,
        args_slot: Slot {
            at: command.value.span.end,
            before: format!(",{sep}\"args\": "),
            after: String::new(),
        },
    })
}

fn read_toml(text: &str) -> Result<Option<Servers>, ConfigError> {
    use toml_edit::{Item, Value};
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let (line, column) = jsonc::line_column(text, at);
        ConfigError::Syntax {
            line,
            column,
            message: e.message().to_string(),
        }
    })?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(None);
    };
    let Some(table) = servers.as_table_like() else {
        return Ok(None);
    };
    let eol = line_ending(text);
    let headers = toml_remote::header_starts(doc.as_table());
    let mut entries = Vec::new();
    for (key, item) in table.iter() {
        let layout = toml_remote::layout(text, table, key, item, &headers);
        let state = match item.as_table_like() {
            None => State::LeftAlone("not a table".into()),
            Some(entry) => {
                let inline = matches!(item, Item::Value(Value::InlineTable(_)));
                toml_state(text, entry, inline, eol, layout.as_ref())
            }
        };
        entries.push(Entry {
            key: key.to_string(),
            state,
            member: layout.map(|l| l.member),
        });
    }
    // A new table goes after a blank line; it ends with a line break only when the file
    // does (a file without a final line break keeps none).
    let ends_line = text.is_empty() || text.ends_with('\n');
    let inline = matches!(servers, Item::Value(Value::InlineTable(_)));
    let append = match servers {
        Item::Table(_) => Some(Slot {
            at: text.len(),
            before: if ends_line {
                eol.to_string()
            } else {
                format!("{eol}{eol}")
            },
            after: if ends_line {
                eol.to_string()
            } else {
                String::new()
            },
        }),
        // Inside the braces, after the last entry: `, KEY = { … }`.
        Item::Value(Value::InlineTable(_)) => servers.span().map(|span| {
            let at = text[..span.end - 1].trim_end().len();
            let empty = text[..at].ends_with('{');
            Slot {
                at,
                before: if empty { " " } else { ", " }.to_string(),
                after: if empty { " " } else { "" }.to_string(),
            }
        }),
        _ => None,
    };
    Ok(Some(Servers {
        entries,
        append,
        json: false,
        inline,
    }))
}

fn toml_state(
    text: &str,
    entry: &dyn toml_edit::TableLike,
    inline: bool,
    eol: &str,
    layout: Option<&toml_remote::Layout>,
) -> State {
    if entry.contains_key("url") {
        return toml_remote::remote(text, entry, layout);
    }
    let kind = entry.get("type").and_then(|i| i.as_str());
    if let Some(reason) = remote_reason(&|k| entry.contains_key(k), kind) {
        return State::LeftAlone(reason);
    }
    let Some(command) = entry.get("command") else {
        return State::LeftAlone("no command".into());
    };
    let (Some(value), Some(span)) = (command.as_str(), command.span()) else {
        return State::LeftAlone("command is not a string".into());
    };
    let args = match entry.get("args") {
        None => None,
        Some(item) => match (item.as_array(), item.span()) {
            (Some(array), Some(span)) => Some(Args {
                span,
                elements: array
                    .iter()
                    .filter_map(|v| {
                        Some(Located {
                            span: v.span()?,
                            value: v.as_str().map(str::to_string),
                        })
                    })
                    .collect(),
            }),
            _ => return State::LeftAlone("args is not a list".into()),
        },
    };
    let args_slot = if inline {
        Slot {
            at: span.end,
            before: ", args = ".into(),
            after: String::new(),
        }
    } else {
        // A line of its own after the command's line, with the command's key spelled the
        // same way (`command = ` or `name.command = `).
        let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let lead = &text[line_start..span.start];
        let key = match lead.rfind("command") {
            Some(i) => format!("{}args{}", &lead[..i], &lead[i + "command".len()..]),
            None => "args = ".to_string(),
        };
        match text[span.end..].find('\n') {
            Some(i) => Slot {
                at: span.end + i + 1,
                before: key,
                after: eol.to_string(),
            },
            None => Slot {
                at: text.len(),
                before: format!("{eol}{key}"),
                after: String::new(),
            },
        }
    };
    classify(Launch {
        command: Located {
            span,
            value: value.to_string(),
        },
        args,
        args_slot,
    })
}
