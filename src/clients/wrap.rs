//! `wrap` and `unwrap` as edits of a config file's text. Wrapping a stdio entry changes two
//! things and nothing else: the command becomes `ctxopt-proxy`, and
//! `"--name", KEY, "--inject", "none", "--", <original command>` go in front of the first
//! argument (or into a new `args` member right after the command). Unwrapping is the exact
//! inverse, so a file wrapped and unwrapped is byte for byte what it was; it needs nothing
//! but the file itself, so edits made in between stay.
//!
//! A remote entry (Streamable HTTP) becomes a launch of `ctxopt-proxy --name KEY --inject
//! none --url URL --header 'Name: value'…`, its other members kept; unwrapping puts back
//! the entry as the backup (the file before ctxopt's first change) has it, byte for byte,
//! when it is the entry that was wrapped.

use std::collections::BTreeMap;
use std::path::Path;

use super::edit::{apply, separator_before, Edit};
use super::entries::{
    self, Entry, Launch, Remote, Rewrite, Servers, ServersAt, State, PROXY, SERVE_KEY,
};
use super::json_edit::remove_item;
use super::ConfigError;

/// What happened to one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Put behind `ctxopt-proxy` now.
    Wrapped,
    /// A remote entry put behind `ctxopt-proxy --url` now; the member as it was (key to value
    /// end), for the wrap record: unwrap gives these bytes back.
    WrappedRemote(String),
    /// Was behind `ctxopt-proxy` already.
    AlreadyWrapped,
    /// Taken from behind `ctxopt-proxy` now.
    Unwrapped,
    /// A stdio or remote server not behind `ctxopt-proxy` (unwrap found nothing to do).
    NotWrapped,
    /// The `ctxopt serve` entry was added.
    ServeAdded,
    /// The `ctxopt serve` entry was there already.
    ServePresent,
    /// The `ctxopt serve` entry was removed.
    ServeRemoved,
    /// Not touched, and why.
    LeftAlone(String),
}

/// The result of planning a change to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The new text (equal to the old one when nothing changes).
    pub text: String,
    /// Per entry key, what happened (the serve entry under [`SERVE_KEY`]).
    pub outcomes: Vec<(String, Outcome)>,
}

/// Options of `wrap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrapOptions {
    /// Add the `ctxopt serve` entry (the context tools once, not per server).
    pub serve: bool,
    /// Give the serve entry `"type": "stdio"` (VS Code requires it).
    pub typed: bool,
}

/// A JSON string literal (also a valid TOML basic string).
fn literal(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Wraps every stdio entry of `text`; `Ok(None)` when the file has no servers there.
pub fn wrap(
    text: &str,
    at: &ServersAt,
    path: &Path,
    options: WrapOptions,
) -> Result<Option<Plan>, ConfigError> {
    let Some(servers) = entries::read(text, at, path)? else {
        return Ok(None);
    };
    let mut edits = Vec::new();
    let mut outcomes = Vec::new();
    let mut any_wrapped = false;
    let mut serve_present = false;
    for entry in &servers.entries {
        let outcome = match &entry.state {
            State::Stdio(launch) => {
                edits.extend(wrap_launch(text, &entry.key, launch));
                any_wrapped = true;
                Outcome::Wrapped
            }
            State::Remote(remote) => {
                edits.extend(wrap_remote(
                    text,
                    &entry.key,
                    remote,
                    options.typed,
                    servers.json,
                ));
                any_wrapped = true;
                match &entry.member {
                    Some(member) => Outcome::WrappedRemote(text[member.clone()].to_string()),
                    None => Outcome::Wrapped,
                }
            }
            State::Wrapped(_) => {
                any_wrapped = true;
                Outcome::AlreadyWrapped
            }
            State::Serve => {
                serve_present = true;
                Outcome::ServePresent
            }
            State::LeftAlone(why) => Outcome::LeftAlone(why.clone()),
        };
        outcomes.push((entry.key.clone(), outcome));
    }
    if options.serve && any_wrapped && !serve_present {
        if servers.entries.iter().any(|e| e.key == SERVE_KEY) {
            outcomes.push((
                SERVE_KEY.to_string(),
                Outcome::LeftAlone(format!(
                    "a server is already named `{SERVE_KEY}`; ctxopt serve not added"
                )),
            ));
        } else if let Some(slot) = &servers.append {
            edits.push(Edit::insert(
                slot.at,
                format!(
                    "{}{}{}",
                    slot.before,
                    serve_entry(text, &servers, options),
                    slot.after
                ),
            ));
            outcomes.push((SERVE_KEY.to_string(), Outcome::ServeAdded));
        } else {
            // Wrapped servers offer no context tools: without the serve entry they would be
            // gone, silently.
            return Err(ConfigError::refused(
                path,
                format!(
                    "ctxopt cannot add its `{SERVE_KEY}` server to the servers of this file, and the wrapped servers (--inject none) would offer no context tools without it; wrap with --no-serve to do without them"
                ),
            ));
        }
    }
    Ok(Some(Plan {
        text: apply(text, &edits),
        outcomes,
    }))
}

/// The `ctxopt serve` entry in the file's syntax.
fn serve_entry(text: &str, servers: &Servers, options: WrapOptions) -> String {
    if servers.json {
        let kind = if options.typed {
            "\"type\": \"stdio\", "
        } else {
            ""
        };
        format!("\"{SERVE_KEY}\": {{{kind}\"command\": \"ctxopt\", \"args\": [\"serve\"]}}")
    } else if servers.inline {
        TOML_INLINE_SERVE.to_string()
    } else {
        toml_serve_table(super::edit::line_ending(text))
    }
}

/// The `ctxopt serve` entry inside an inline `mcp_servers` table.
const TOML_INLINE_SERVE: &str = "ctxopt = { command = \"ctxopt\", args = [\"serve\"] }";

/// The `ctxopt serve` table of a TOML file, without its final line break (the slot it goes
/// into adds one when the file ends with one).
fn toml_serve_table(eol: &str) -> String {
    format!("[mcp_servers.{SERVE_KEY}]{eol}command = \"ctxopt\"{eol}args = [\"serve\"]")
}

/// The edits that put one launch behind the proxy.
fn wrap_launch(text: &str, key: &str, launch: &Launch) -> Vec<Edit> {
    let mut items: Vec<String> = ["--name", key, "--inject", "none", "--"]
        .iter()
        .map(|s| literal(s))
        .collect();
    items.push(text[launch.command.span.clone()].to_string());
    let mut edits = vec![Edit::replace(launch.command.span.clone(), literal(PROXY))];
    match &launch.args {
        Some(args) => match args.elements.first() {
            Some(first) => {
                let sep = separator_before(text, first.span.start);
                let joined = items.join(&format!(",{sep}"));
                edits.push(Edit::insert(first.span.start, format!("{joined},{sep}")));
            }
            None => edits.push(Edit::insert(args.span.start + 1, items.join(", "))),
        },
        None => {
            let slot = &launch.args_slot;
            edits.push(Edit::insert(
                slot.at,
                format!("{}[{}]{}", slot.before, items.join(", "), slot.after),
            ));
        }
    }
    edits
}

/// The edits that put a remote entry behind the proxy: the entry becomes a launch of
/// `ctxopt-proxy --url` (with `"type": "stdio"` when `typed`; in TOML, with `env_vars` naming
/// the variables its headers reference), and keeps its other members or lines.
fn wrap_remote(text: &str, key: &str, remote: &Remote, typed: bool, json: bool) -> Vec<Edit> {
    let list = |items: &[String]| {
        let items: Vec<String> = items.iter().map(|a| literal(a)).collect();
        format!("[{}]", items.join(", "))
    };
    let mut pairs = Vec::new();
    if typed {
        pairs.push(("type", literal("stdio")));
    }
    pairs.push(("command", literal(PROXY)));
    pairs.push(("args", list(&remote.proxy_args(key))));
    if !remote.env_vars.is_empty() {
        pairs.push(("env_vars", list(&remote.env_vars)));
    }
    match &remote.rewrite {
        Rewrite::Object { value, kept } => {
            let mut members: Vec<String> = pairs
                .iter()
                .map(|(k, v)| match json {
                    true => format!("\"{k}\": {v}"),
                    false => format!("{k} = {v}"),
                })
                .collect();
            members.extend(kept.iter().map(|m| text[m.clone()].to_string()));
            let object = match json {
                true => format!("{{{}}}", members.join(", ")),
                false => format!("{{ {} }}", members.join(", ")),
            };
            vec![Edit::replace(value.clone(), object)]
        }
        Rewrite::Lines {
            url,
            indent,
            dropped,
        } => {
            let lines: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{indent}{k} = {v}"))
                .collect();
            let mut edits = vec![Edit::replace(
                url.clone(),
                lines.join(super::edit::line_ending(text)),
            )];
            edits.extend(dropped.iter().map(|d| Edit::delete(d.clone())));
            edits
        }
    }
}

/// What `unwrap` knows of a file before wrap.
#[derive(Debug, Clone, Default)]
pub struct Originals<'a> {
    /// The remote entries wrap replaced, from the wrap record: key, and the member as it was.
    pub recorded: BTreeMap<String, String>,
    /// The file before ctxopt's first change (its backup), when there is one. It also tells
    /// an `args` member wrap added from an empty one the entry had.
    pub backup: Option<&'a str>,
}

/// The edit that gives a remote entry behind the proxy back as it was: the member the wrap
/// record holds, else the backup's; only one that wraps to the command line the entry has
/// now (an entry edited since would otherwise come back as it was before).
fn unwrap_remote(
    entry: &Entry,
    at: &ServersAt,
    originals: &Originals,
    before: &[Entry],
) -> Option<Edit> {
    // The recorded member in a file of its own: a JSON member in an object, a TOML inline
    // entry under `[mcp_servers]`, a TOML table as it is.
    let (recorded, recorded_at) = match (originals.recorded.get(&entry.key), at) {
        (None, _) => (None, at.clone()),
        (Some(member), ServersAt::Json(_)) => (
            Some(format!("{{\"s\": {{{member}}}}}")),
            ServersAt::Json(vec!["s".to_string()]),
        ),
        (Some(member), ServersAt::Toml) if member.starts_with('[') => {
            (Some(member.clone()), ServersAt::Toml)
        }
        (Some(member), ServersAt::Toml) => {
            (Some(format!("[mcp_servers]\n{member}")), ServersAt::Toml)
        }
    };
    let recorded = recorded.as_deref().and_then(|text| {
        let servers = entries::read(text, &recorded_at, Path::new("record")).ok()??;
        Some((text, servers.entries))
    });
    let restore = |text: &str, entries: &[Entry]| {
        let original = entries.iter().find(|e| e.key == entry.key)?;
        let State::Remote(remote) = &original.state else {
            return None;
        };
        let mut line = vec![PROXY.to_string()];
        line.extend(remote.proxy_args(&entry.key));
        if entry.command_line()? != line {
            return None;
        }
        let restored = text[original.member.clone()?].to_string();
        Some(Edit::replace(entry.member.clone()?, restored))
    };
    recorded
        .and_then(|(text, entries)| restore(text, &entries))
        .or_else(|| restore(originals.backup?, before))
}

/// Whether a launch of the proxy reaches a remote server (`--url`, no `-- <command>`).
fn reaches_url(launch: &Launch) -> bool {
    let values = || {
        launch
            .args
            .iter()
            .flat_map(|a| a.elements.iter())
            .filter_map(|e| e.value.as_deref())
    };
    values().any(|v| v == "--url") && !values().any(|v| v == "--")
}

/// Unwraps every wrapped entry of `text` and removes the `ctxopt serve` entry when
/// `serve_ours` (wrap added it: see [`super::wrap_record`]); `Ok(None)` when the file has no
/// servers there. `originals`: what is known of the file before wrap.
pub fn unwrap(
    text: &str,
    at: &ServersAt,
    path: &Path,
    originals: &Originals,
    serve_ours: bool,
) -> Result<Option<Plan>, ConfigError> {
    let Some(servers) = entries::read(text, at, path)? else {
        return Ok(None);
    };
    let before = originals
        .backup
        .and_then(|b| entries::read(b, at, path).ok().flatten())
        .map(|s| s.entries)
        .unwrap_or_default();
    let had_args = |key: &str| {
        before
            .iter()
            .any(|e| e.key == key && matches!(&e.state, State::Stdio(l) if l.args.is_some()))
    };
    let mut edits = Vec::new();
    let mut outcomes = Vec::new();
    let mut serve = None;
    for entry in &servers.entries {
        let outcome = match &entry.state {
            State::Wrapped(launch) if reaches_url(launch) => {
                match unwrap_remote(entry, at, originals, &before) {
                    Some(edit) => {
                        edits.push(edit);
                        Outcome::Unwrapped
                    }
                    None => Outcome::LeftAlone(format!(
                        "a remote server behind `{PROXY}` that neither the wrap record nor the backup holds as wrapped; left as it is"
                    )),
                }
            }
            State::Wrapped(launch) => match unwrap_launch(text, launch, had_args(&entry.key)) {
                Some(e) => {
                    edits.extend(e);
                    Outcome::Unwrapped
                }
                None => {
                    Outcome::LeftAlone(format!("`{PROXY}` without `-- <command>`; left as it is"))
                }
            },
            State::Serve if entry.key == SERVE_KEY && serve_ours && serve.is_none() => {
                serve = Some(outcomes.len());
                Outcome::ServeRemoved
            }
            State::Serve => {
                Outcome::LeftAlone("a ctxopt serve entry that ctxopt wrap did not add; left".into())
            }
            State::Stdio(_) | State::Remote(_) => Outcome::NotWrapped,
            State::LeftAlone(why) => Outcome::LeftAlone(why.clone()),
        };
        outcomes.push((entry.key.clone(), outcome));
    }
    // The serve entry goes last, from the text the edits before left: at the end of a TOML
    // file without a final line break, an `args` line wrap added and the serve table share
    // a line break.
    let mut text = apply(text, &edits);
    if let Some(k) = serve {
        let removal = entries::read(&text, at, path)?.and_then(|servers| {
            let index = servers
                .entries
                .iter()
                .position(|e| e.key == SERVE_KEY && matches!(e.state, State::Serve))?;
            remove_serve(&text, &servers, index)
        });
        match removal {
            Some(edit) => text = apply(&text, &[edit]),
            None => {
                outcomes[k].1 =
                    Outcome::LeftAlone("the ctxopt serve entry was edited; left".into());
            }
        }
    }
    Ok(Some(Plan { text, outcomes }))
}

/// The edits that take one launch from behind the proxy: the inverse of [`wrap_launch`].
/// `had_args`: the entry had an `args` member before it was wrapped.
fn unwrap_launch(text: &str, launch: &Launch, had_args: bool) -> Option<Vec<Edit>> {
    let args = launch.args.as_ref()?;
    let dashes = args
        .elements
        .iter()
        .position(|e| e.value.as_deref() == Some("--"))?;
    let command = args.elements.get(dashes + 1)?;
    let mut edits = vec![Edit::replace(
        launch.command.span.clone(),
        text[command.span.clone()].to_string(),
    )];
    let first = args.elements[0].span.start;
    match args.elements.get(dashes + 2) {
        Some(rest) => edits.push(Edit::delete(first..rest.span.start)),
        None => {
            // No arguments of its own: remove the args member if wrap added it (the entry
            // had none, and it sits in the slot in exactly the form wrap writes), else empty
            // the array.
            let slot = &launch.args_slot;
            let bare = format!("{}{}", slot.before, &text[args.span.clone()]);
            let added = format!("{bare}{}", slot.after);
            let tail = &text[slot.at..];
            let args_at = args.span.start - slot.before.len();
            // When the command's line was the file's last, without a line break, wrap
            // put the line break in front of the new line instead.
            let eol = if text[..slot.at].ends_with("\r\n") {
                2
            } else {
                1
            };
            let last_line = tail == bare && text[..slot.at].ends_with('\n');
            if !had_args && args_at == slot.at && tail.starts_with(&added) {
                edits.push(Edit::delete(slot.at..slot.at + added.len()));
            } else if !had_args && args_at == slot.at && last_line {
                edits.push(Edit::delete(slot.at - eol..text.len()));
            } else {
                edits.push(Edit::delete(first..command.span.end));
            }
        }
    }
    Some(edits)
}

/// The edit that removes the serve entry `servers.entries[index]`.
fn remove_serve(text: &str, servers: &Servers, index: usize) -> Option<Edit> {
    if servers.json {
        let spans: Vec<_> = servers
            .entries
            .iter()
            .map(|e| e.member.clone())
            .collect::<Option<_>>()?;
        return Some(remove_item(text, &spans, index));
    }
    if servers.inline {
        // Inside an inline table: the entry with the `, ` wrap put before it, or, alone,
        // with the spaces around it.
        let alone = format!(" {TOML_INLINE_SERVE} ");
        let (at, len) = match text.find(&format!(", {TOML_INLINE_SERVE}")) {
            Some(at) => (at, TOML_INLINE_SERVE.len() + 2),
            None => (text.find(&alone)?, alone.len()),
        };
        return Some(Edit::delete(at..at + len));
    }
    // TOML: the table wrap appended, wherever it now is, with the blank line before it; at
    // the very end of a file without a final line break, both line breaks before it were
    // wrap's.
    let eol = super::edit::line_ending(text);
    let table = toml_serve_table(eol);
    let at = text
        .find(&format!("{table}{eol}"))
        .or_else(|| text.ends_with(&table).then(|| text.len() - table.len()))?;
    let end = at + table.len();
    let blank = text[..at].ends_with(&format!("{eol}{eol}"));
    let (from, to) = match (text[end..].starts_with(eol), blank) {
        (true, true) => (at - eol.len(), end + eol.len()),
        (true, false) => (at, end + eol.len()),
        (false, true) => (at - 2 * eol.len(), end),
        (false, false) => (at, end),
    };
    Some(Edit::delete(from..to))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// `unwrap` of `text` with `original` as the backup and the serve entry ours: the plan.
    fn unwrapped(text: &str, servers: &ServersAt, original: &str) -> Plan {
        let originals = Originals {
            recorded: BTreeMap::new(),
            backup: Some(original),
        };
        unwrap(text, servers, Path::new("x"), &originals, true)
            .unwrap()
            .unwrap()
    }

    const OPTIONS: WrapOptions = WrapOptions {
        serve: true,
        typed: false,
    };

    fn at(keys: &[&str]) -> ServersAt {
        ServersAt::Json(keys.iter().map(|k| k.to_string()).collect())
    }

    fn command_lines(text: &str, at: &ServersAt) -> Vec<(String, Vec<String>)> {
        entries::read(text, at, Path::new("x"))
            .unwrap()
            .unwrap()
            .entries
            .iter()
            .filter_map(|e| Some((e.key.clone(), e.command_line()?)))
            .collect()
    }

    #[test]
    fn a_json_entry_goes_behind_the_proxy_and_comes_back() {
        let text = "{\n  // servers\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"${PKG:-server}\"],\n      \"env\": {\"K\": \"${env:K}\"}\n    },\n    \"bare\": {\"command\": \"srv\"},\n    \"web\": {\"type\": \"sse\", \"url\": \"https://x\"},\n  }\n}\n";
        let servers = at(&["mcpServers"]);
        let plan = wrap(text, &servers, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap();
        let lines = command_lines(&plan.text, &servers);
        let expect = |rest: &[&str], key: &str| {
            let mut v: Vec<String> = ["ctxopt-proxy", "--name", key, "--inject", "none", "--"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            v.extend(rest.iter().map(|s| s.to_string()));
            v
        };
        assert_eq!(
            lines[0],
            ("fs".into(), expect(&["npx", "-y", "${PKG:-server}"], "fs"))
        );
        assert_eq!(lines[1], ("bare".into(), expect(&["srv"], "bare")));
        assert_eq!(
            lines[2],
            (
                "web".into(),
                [
                    "ctxopt-proxy",
                    "--name",
                    "web",
                    "--inject",
                    "none",
                    "--url",
                    "https://x"
                ]
                .into_iter()
                .chain(["--transport", "sse"])
                .map(String::from)
                .collect()
            )
        );
        assert_eq!(lines.len(), 3, "serve is not a launch");
        assert_eq!(plan.outcomes[3], ("ctxopt".into(), Outcome::ServeAdded));
        assert!(plan
            .text
            .contains("\"ctxopt\": {\"command\": \"ctxopt\", \"args\": [\"serve\"]}"));
        assert!(plan.text.contains("\"env\": {\"K\": \"${env:K}\"}"));
        assert!(plan.text.contains("// servers"));
        assert!(
            matches!(&plan.outcomes[2].1, Outcome::WrappedRemote(m) if m.contains("\"sse\"")),
            "{:?}",
            plan.outcomes[2]
        );
        let again = wrap(&plan.text, &servers, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap();
        assert_eq!(again.text, plan.text, "wrapping twice is wrapping once");
        let back = unwrapped(&plan.text, &servers, text);
        assert_eq!(back.text, text);
    }

    #[test]
    fn a_toml_entry_goes_behind_the_proxy_and_comes_back() {
        let text = "model = \"o3\"\r\n\r\n[mcp_servers.fs]\r\ncommand = 'npx' # runner\r\nargs = [\r\n  \"-y\",\r\n  \"pkg\",\r\n]\r\nenv = { K = \"v\" }\r\n\r\n[mcp_servers.git]\r\ncommand = \"uvx\"\r\nstartup_timeout_sec = 10\r\n\r\n[mcp_servers.fs.tools.read]\r\napproval = \"never\"\r\n";
        let plan = wrap(text, &ServersAt::Toml, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap();
        let lines = command_lines(&plan.text, &ServersAt::Toml);
        assert_eq!(
            lines[0].1[..7],
            [
                "ctxopt-proxy",
                "--name",
                "fs",
                "--inject",
                "none",
                "--",
                "npx"
            ]
        );
        assert_eq!(lines[1].1[5..], ["--", "uvx"]);
        assert_eq!(
            lines.len(),
            2,
            "fs and git; serve is not a launch: {lines:?}"
        );
        assert!(plan.text.ends_with(
            "\r\n\r\n[mcp_servers.ctxopt]\r\ncommand = \"ctxopt\"\r\nargs = [\"serve\"]\r\n"
        ));
        assert!(
            plan.text.contains("\r\n  'npx',\r\n  \"-y\",\r\n"),
            "{}",
            plan.text
        );
        let again = wrap(&plan.text, &ServersAt::Toml, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap();
        assert_eq!(again.text, plan.text);
        let back = unwrapped(&plan.text, &ServersAt::Toml, text);
        assert_eq!(back.text, text);
    }

    #[test]
    fn a_toml_entry_at_the_end_of_a_file_without_a_final_newline_comes_back_byte_for_byte() {
        for text in [
            "[mcp_servers.fs]\ncommand = \"npx\"",
            "[mcp_servers.fs]\r\ncommand = \"npx\"",
            "[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]",
            "model = \"o3\"\n\n[mcp_servers.fs]\ncommand = \"npx\" # runner",
        ] {
            for serve in [true, false] {
                let options = WrapOptions {
                    serve,
                    typed: false,
                };
                let plan = wrap(text, &ServersAt::Toml, Path::new("x"), options)
                    .unwrap()
                    .unwrap();
                assert!(!plan.text.ends_with('\n'), "{:?}", plan.text);
                let lines = command_lines(&plan.text, &ServersAt::Toml);
                assert_eq!(lines[0].1[..2], ["ctxopt-proxy", "--name"], "{}", plan.text);
                let back = unwrapped(&plan.text, &ServersAt::Toml, text);
                assert_eq!(back.text, text, "via {:?}", plan.text);
                let removed = back
                    .outcomes
                    .iter()
                    .any(|(_, o)| *o == Outcome::ServeRemoved);
                assert_eq!(removed, serve, "{:?}", back.outcomes);
            }
        }
    }

    #[test]
    fn a_json_entry_at_the_end_of_a_file_without_a_final_newline_comes_back_byte_for_byte() {
        let servers = at(&["mcpServers"]);
        for text in [
            "{\"mcpServers\": {\"fs\": {\"command\": \"npx\"}}}",
            "{\n  \"mcpServers\": {\n    \"fs\": {\n      \"command\": \"npx\"\n    }\n  }\n}",
        ] {
            let plan = wrap(text, &servers, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            assert!(plan.text.ends_with('}'), "{:?}", plan.text);
            let back = unwrapped(&plan.text, &servers, text);
            assert_eq!(back.text, text, "via {:?}", plan.text);
        }
    }

    #[test]
    fn an_inline_codex_servers_table_gets_the_serve_entry_and_gives_it_back() {
        for text in [
            "mcp_servers = { a = { command = \"npx\" } }\n",
            "model = \"o3\"\nmcp_servers = { a = { command = \"npx\", args = [\"-y\"] }, web = { url = \"https://x\" } }",
        ] {
            let plan = wrap(text, &ServersAt::Toml, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            assert!(
                plan.outcomes
                    .contains(&(SERVE_KEY.to_string(), Outcome::ServeAdded)),
                "{:?}",
                plan.outcomes
            );
            let servers = entries::read(&plan.text, &ServersAt::Toml, Path::new("x"))
                .unwrap()
                .unwrap();
            assert!(
                servers
                    .entries
                    .iter()
                    .any(|e| e.key == SERVE_KEY && matches!(e.state, State::Serve)),
                "{}",
                plan.text
            );
            let back = unwrapped(&plan.text, &ServersAt::Toml, text);
            assert_eq!(back.text, text);
        }
    }

    #[test]
    fn a_serve_entry_that_cannot_be_added_is_a_refusal_naming_the_file() {
        // Servers as dotted keys of another table: nowhere to put a table of ours.
        let text = "[other]\nx = 1\n[mcp_servers.a]\ncommand = \"npx\"\n";
        assert!(wrap(text, &ServersAt::Toml, Path::new("c.toml"), OPTIONS).is_ok());
        let text = "mcp_servers.a.command = \"npx\"\n";
        match wrap(text, &ServersAt::Toml, Path::new("c.toml"), OPTIONS) {
            Ok(Some(plan)) => assert!(
                plan.outcomes
                    .contains(&(SERVE_KEY.to_string(), Outcome::ServeAdded)),
                "wrapped without ctxopt serve: {plan:?}"
            ),
            Ok(None) => panic!("no servers found"),
            Err(err) => assert!(
                err.to_string().starts_with("c.toml: cannot be changed"),
                "{err}"
            ),
        }
    }

    #[test]
    fn unwrap_keeps_edits_made_since_wrap() {
        let text = "{\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"args\": [\"a\"]}}}";
        let servers = at(&["mcpServers"]);
        let wrapped = wrap(text, &servers, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap()
            .text;
        let edited = wrapped.replace("\"args\"", "\"env\": {\"NEW\": \"1\"}, \"args\"");
        let back = unwrapped(&edited, &servers, text).text;
        assert_eq!(
            back,
            "{\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"env\": {\"NEW\": \"1\"}, \"args\": [\"a\"]}}}"
        );
    }

    type RemoteShape = (
        &'static str,
        ServersAt,
        String,
        &'static str,
        bool,
        Vec<&'static str>,
    );

    /// The remote entries of each client, as its docs write them: key, servers place,
    /// file, the URL, whether the entry says legacy SSE (`--transport sse`), and the
    /// `--header` values the wrapped command line must carry.
    fn remote_shapes() -> Vec<RemoteShape> {
        vec![
            (
                "sentry",
                at(&["mcpServers"]),
                "{\n  \"mcpServers\": {\n    \"sentry\": {\n      \"type\": \"http\",\n      \"url\": \"https://mcp.sentry.dev/mcp\",\n      \"headers\": {\"Authorization\": \"Bearer ${SENTRY_TOKEN}\"}\n    }\n  }\n}\n".into(),
                "https://mcp.sentry.dev/mcp",
                false,
                vec!["Authorization: Bearer ${SENTRY_TOKEN}"],
            ),
            (
                "api",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"api\": {\"httpUrl\": \"http://localhost:3000/mcp\", \"headers\": {\"X-Key\": \"${KEY}\", \"X-Team\": \"blue\"}, \"timeout\": 30000, // ms\n \"trust\": false,}}}".into(),
                "http://localhost:3000/mcp",
                false,
                vec!["X-Key: ${KEY}", "X-Team: blue"],
            ),
            (
                "docs",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"docs\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\", \"headers\": {\"X-Api-Key\": \"$${literal}\"}}}}".into(),
                "https://example.com/mcp",
                false,
                vec!["X-Api-Key: $${literal}"],
            ),
            (
                "github",
                at(&["servers"]),
                "{\r\n\t\"servers\": {\r\n\t\t\"github\": {\"type\": \"http\", \"url\": \"https://api.githubcopilot.com/mcp/\", \"headers\": {\"Authorization\": \"Bearer ${GH_TOKEN}\"}}\r\n\t}\r\n}".into(),
                "https://api.githubcopilot.com/mcp/",
                false,
                vec!["Authorization: Bearer ${GH_TOKEN}"],
            ),
            (
                "figma",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"figma\": {\"type\": \"http\", \"serverUrl\": \"https://mcp.figma.com/mcp\", \"disabled\": false}}}".into(),
                "https://mcp.figma.com/mcp",
                false,
                vec![],
            ),
            (
                "remote",
                at(&["context_servers"]),
                "{\n  \"context_servers\": {\n    \"remote\": {\"type\": \"http\", \"url\": \"https://mcp.example.com/mcp\", \"headers\": {}}\n  }\n}\n".into(),
                "https://mcp.example.com/mcp",
                false,
                vec![],
            ),
            (
                "linear",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"linear\": {\"type\": \"sse\", \"url\": \"https://mcp.linear.app/sse\", \"headers\": {\"Authorization\": \"Bearer ${LINEAR_TOKEN}\"}}}}".into(),
                "https://mcp.linear.app/sse",
                true,
                vec!["Authorization: Bearer ${LINEAR_TOKEN}"],
            ),
            (
                "gemini-sse",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"gemini-sse\": {\"url\": \"http://localhost:8080/sse\", \"timeout\": 30000}}}".into(),
                "http://localhost:8080/sse",
                false,
                vec![],
            ),
            (
                "windsurf",
                at(&["mcpServers"]),
                "{\"mcpServers\": {\"windsurf\": {\"serverUrl\": \"https://h.example/mcp\", \"headers\": {\"K\": \"${K}\"}}}}".into(),
                "https://h.example/mcp",
                false,
                vec!["K: ${K}"],
            ),
        ]
    }

    #[test]
    fn a_remote_entry_of_each_client_goes_behind_the_proxy_url_and_comes_back() {
        use clap::Parser;

        use crate::proxy::options::ProxyArgs;
        use crate::upstream::http::config::parse_header;

        for (key, servers, text, url, sse, headers) in remote_shapes() {
            let typed = matches!(&servers, ServersAt::Json(k) if k[0] == "servers");
            let options = WrapOptions { serve: true, typed };
            let plan = wrap(&text, &servers, Path::new("x"), options)
                .unwrap()
                .unwrap();
            let Outcome::WrappedRemote(member) = &plan.outcomes[0].1 else {
                panic!("{text}: {:?}", plan.outcomes);
            };
            assert!(member.starts_with(&format!("\"{key}\": {{")), "{member}");
            let lines = command_lines(&plan.text, &servers);
            let mut expect: Vec<String> = [
                "ctxopt-proxy",
                "--name",
                key,
                "--inject",
                "none",
                "--url",
                url,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if sse {
                expect.extend(["--transport".to_string(), "sse".to_string()]);
            }
            for h in &headers {
                expect.extend(["--header".to_string(), h.to_string()]);
            }
            assert_eq!(lines, [(key.to_string(), expect)], "{}", plan.text);
            assert_eq!(
                plan.text
                    .contains("\"type\": \"stdio\", \"command\": \"ctxopt-proxy\""),
                typed,
                "{}",
                plan.text
            );
            // The proxy's own parser takes the line: the URL and headers as written, `${VAR}`
            // left for the proxy to expand when it starts.
            let line = &lines[0].1;
            let args = ProxyArgs::try_parse_from(line).unwrap();
            assert_eq!(args.url.as_deref(), Some(url));
            let transport = sse.then_some(crate::upstream::http::Transport::Sse);
            assert_eq!(args.transport, transport);
            assert_eq!(args.headers, headers);
            for header in &args.headers {
                parse_header(header, |v| Some(format!("<{v}>"))).unwrap();
            }
            assert_eq!(args.name.as_deref(), Some(key));
            // Members other than type, URL and headers stay.
            for kept in [
                "\"timeout\": 30000",
                "\"trust\": false",
                "\"disabled\": false",
            ] {
                assert_eq!(plan.text.contains(kept), text.contains(kept), "{kept}");
            }
            let again = wrap(&plan.text, &servers, Path::new("x"), options)
                .unwrap()
                .unwrap();
            assert_eq!(again.text, plan.text, "wrapping twice is wrapping once");
            // From the backup alone, and from the wrap record alone (the backup gone).
            let back = unwrapped(&plan.text, &servers, &text);
            assert_eq!(back.outcomes[0], (key.to_string(), Outcome::Unwrapped));
            assert_eq!(back.text, text, "via {}", plan.text);
            let record = Originals {
                recorded: BTreeMap::from([(key.to_string(), member.clone())]),
                backup: None,
            };
            let back = unwrap(&plan.text, &servers, Path::new("x"), &record, true)
                .unwrap()
                .unwrap();
            assert_eq!(back.text, text, "via {} and the record", plan.text);
        }
    }

    #[test]
    fn a_wrapped_remote_entry_edited_since_or_without_its_original_is_left() {
        let servers = at(&["mcpServers"]);
        let text = "{\"mcpServers\": {\"a\": {\"type\": \"http\", \"url\": \"https://h/mcp\"}}}";
        let wrapped = wrap(text, &servers, Path::new("x"), OPTIONS)
            .unwrap()
            .unwrap()
            .text;
        let edited = wrapped.replace("https://h/mcp", "https://other/mcp");
        let member = "\"a\": {\"type\": \"http\", \"url\": \"https://h/mcp\"}".to_string();
        let both = Originals {
            recorded: BTreeMap::from([("a".to_string(), member)]),
            backup: Some(text),
        };
        for (now, originals) in [(&edited, both), (&wrapped, Originals::default())] {
            let back = unwrap(now, &servers, Path::new("x"), &originals, true)
                .unwrap()
                .unwrap();
            assert!(
                matches!(&back.outcomes[0].1, Outcome::LeftAlone(why) if why.contains("neither the wrap record")),
                "{:?}",
                back.outcomes
            );
            assert!(back.text.contains("\"--url\""), "{}", back.text);
        }
    }

    /// Codex's remote entries: a table with comments, a sub-table and a neighbour; one at the
    /// end of a CRLF file without a final line break; two remote lines at the very end; an
    /// inline one in an inline servers table; one without headers.
    fn codex_remote_shapes() -> Vec<(
        &'static str,
        &'static str,
        Vec<&'static str>,
        Vec<&'static str>,
    )> {
        vec![
            (
                "model = \"o3\"\n\n[mcp_servers.docs]\n# the docs server\nurl = \"https://docs.example/mcp\" # remote\nstartup_timeout_sec = 20\n  bearer_token_env_var = \"DOCS_TOKEN\"\nhttp_headers = { \"X-Team\" = \"blue\", \"X-Literal\" = \"a${b}\" }\nenv_http_headers = { \"X-Api-Key\" = \"DOCS_KEY\", \"X-Other\" = \"DOCS_TOKEN\" }\nenabled_tools = [\"search\"]\n\n# tools\n[mcp_servers.docs.tools.search]\napproval_mode = \"approve\"\n\n[mcp_servers.fs]\ncommand = \"npx\"\n",
                "docs",
                vec![
                    "Authorization: Bearer ${DOCS_TOKEN}",
                    "X-Team: blue",
                    "X-Literal: a$${b}",
                    "X-Api-Key: ${DOCS_KEY}",
                    "X-Other: ${DOCS_TOKEN}",
                ],
                vec!["DOCS_TOKEN", "DOCS_KEY"],
            ),
            (
                "[mcp_servers.gh]\nurl = \"https://api.githubcopilot.com/mcp/\"\n\n[mcp_servers.gh.http_headers]\n\"X-MCP-Toolsets\" = \"repos\"\n\n[mcp_servers.gh.tools.get_issue]\napproval_mode = \"approve\"\n\n[mcp_servers.gh.env_http_headers]\nAuthorization = \"GH_AUTH\" # \"Bearer …\"\n\n[mcp_servers.gh.tools.list_issues]\napproval_mode = \"prompt\"\n",
                "gh",
                vec!["X-MCP-Toolsets: repos", "Authorization: ${GH_AUTH}"],
                vec!["GH_AUTH"],
            ),
            (
                "[mcp_servers.a]\r\nurl = \"http://127.0.0.1:1/mcp\"\r\nbearer_token_env_var = \"T\"",
                "a",
                vec!["Authorization: Bearer ${T}"],
                vec!["T"],
            ),
            (
                "[mcp_servers.a]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"T\"\nenv_http_headers = { K = \"V\" }",
                "a",
                vec!["Authorization: Bearer ${T}", "K: ${V}"],
                vec!["T", "V"],
            ),
            (
                "mcp_servers = { a = { url = \"https://h/mcp\", env_http_headers = { K = \"KEY\" }, tool_timeout_sec = 5 } }\n",
                "a",
                vec!["K: ${KEY}"],
                vec!["KEY"],
            ),
            (
                "[mcp_servers]\nweb = { url = \"https://h/mcp\", enabled = false }\n",
                "web",
                vec![],
                vec![],
            ),
        ]
    }

    #[test]
    fn a_codex_remote_entry_goes_behind_the_proxy_with_its_variables_and_comes_back() {
        use clap::Parser;

        use crate::proxy::options::ProxyArgs;
        use crate::upstream::http::config::parse_header;

        for (text, key, headers, variables) in codex_remote_shapes() {
            let plan = wrap(text, &ServersAt::Toml, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            let Outcome::WrappedRemote(member) = &plan.outcomes[0].1 else {
                panic!("{text}: {:?}", plan.outcomes);
            };
            assert!(text.contains(member.as_str()), "{member}");
            let lines = command_lines(&plan.text, &ServersAt::Toml);
            let (_, line) = lines.iter().find(|(k, _)| k == key).unwrap();
            let args = ProxyArgs::try_parse_from(line).unwrap();
            assert_eq!(line[..3], ["ctxopt-proxy", "--name", key]);
            assert_eq!(args.url.as_deref(), Some(line[6].as_str()));
            assert_eq!(args.headers, headers, "{}", plan.text);
            assert_eq!(args.transport, None, "Streamable HTTP, detected");
            // Codex loads it as a stdio server: no key it refuses beside `command`, the
            // variables named in `env_vars`, every other key kept.
            let doc = toml_edit::Document::parse(plan.text.as_str()).unwrap();
            let servers = doc["mcp_servers"].as_table_like().unwrap();
            let entry = servers.get(key).unwrap().as_table_like().unwrap();
            for refused in [
                "url",
                "bearer_token_env_var",
                "http_headers",
                "env_http_headers",
            ] {
                assert!(!entry.contains_key(refused), "{refused}: {}", plan.text);
            }
            let named: Vec<&str> = entry
                .get("env_vars")
                .and_then(|e| e.as_array())
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            assert_eq!(named, variables, "{}", plan.text);
            for kept in [
                "startup_timeout_sec = 20",
                "enabled_tools = [\"search\"]",
                "tool_timeout_sec = 5",
                "enabled = false",
                "approval_mode = \"approve\"",
                "# the docs server",
            ] {
                assert_eq!(plan.text.contains(kept), text.contains(kept), "{kept}");
            }
            // Every `${VAR}` the proxy expands is a variable Codex passes it.
            for header in &args.headers {
                parse_header(header, |v| variables.contains(&v).then(|| format!("<{v}>"))).unwrap();
            }
            assert_eq!(
                parse_header("X-Literal: a$${b}", |_| None).unwrap().1,
                "a${b}",
                "a static value goes out as written"
            );
            let again = wrap(&plan.text, &ServersAt::Toml, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            assert_eq!(again.text, plan.text, "wrapping twice is wrapping once");
            let back = unwrapped(&plan.text, &ServersAt::Toml, text);
            assert_eq!(back.text, text, "via {:?} and the backup", plan.text);
            let record = Originals {
                recorded: BTreeMap::from([(key.to_string(), member.clone())]),
                backup: None,
            };
            let back = unwrap(&plan.text, &ServersAt::Toml, Path::new("x"), &record, true)
                .unwrap()
                .unwrap();
            assert_eq!(back.text, text, "via {:?} and the record", plan.text);
        }
    }

    #[test]
    fn codex_remote_entries_the_proxy_cannot_stand_in_for_are_listed_and_left() {
        let cases = [
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\n[mcp_servers.r.oauth]\nclient_id = \"x\"\n", "sign in"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nscopes = [\"read\"]\n", "sign in"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token = \"x\"\n", "Codex refuses"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nenv_vars = [\"A\"]\n", "Codex refuses"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\ncommand = \"npx\"\n", "Codex refuses"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\n[profiles.p]\nmodel = \"o3\"\n[mcp_servers.r.http_headers]\nK = \"v\"\n", "does not follow"),
            ("mcp_servers.r.url = \"https://h/mcp\"\n", "dotted keys"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"my-token\"\n", "`my-token`"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"T\"\nhttp_headers = { authorization = \"x\" }\n", "given twice"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nexperimental_environment = \"remote\"\n", "another environment"),
            ("[mcp_servers.r]\nurl = \"ftp://h/mcp\"\n", "http:// or https://"),
            ("[mcp_servers.r]\nurl = \"https://h/mcp\"\nhttp_headers = { \"Mcp-Session-Id\" = \"x\" }\n", "sets this header itself"),
            ("[mcp_servers.r]\nhttpUrl = \"https://h/mcp\"\n", "Codex does not read"),
        ];
        for (text, reason) in cases {
            let plan = wrap(text, &ServersAt::Toml, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            assert_eq!(plan.text, text, "left untouched");
            match &plan.outcomes[..] {
                [(key, Outcome::LeftAlone(why))] => {
                    assert_eq!(key, "r");
                    assert!(why.contains(reason), "{text}: {why}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn env_syntaxes_and_urls_the_proxy_lacks_are_listed_and_left() {
        let servers = at(&["mcpServers"]);
        let cases = [
            (
                "{\"type\": \"http\", \"url\": \"https://h/mcp\", \"headers\": {\"API_KEY\": \"${env:API_KEY}\"}}",
                "`${env:API_KEY}`",
            ),
            ("{\"httpUrl\": \"https://h/mcp\", \"headers\": {\"K\": \"$TOKEN\"}}", "`$TOKEN`"),
            (
                "{\"type\": \"http\", \"url\": \"https://h/mcp\", \"headers\": {\"K\": \"${T:-x}\"}}",
                "`${T:-x}`",
            ),
            ("{\"type\": \"http\", \"url\": \"https://${HOST}/mcp\"}", "URL references the environment"),
            ("{\"type\": \"http\", \"url\": \"https://h/mcp\", \"oauth\": {\"enabled\": true}}", "sign in"),
            ("{\"httpUrl\": \"https://h/mcp\", \"headers\": {\"Mcp-Session-Id\": \"x\"}}", "sets this header itself"),
            ("{\"type\": \"http\", \"url\": \"ftp://h/mcp\"}", "http:// or https://"),
            ("{\"type\": \"sse\", \"url\": \"https://h/sse\", \"headers\": {\"K\": \"${env:K}\"}}", "`${env:K}`"),
            ("{\"type\": \"http\"}", "without a URL"),
        ];
        for (entry, reason) in cases {
            let text = format!("{{\"mcpServers\": {{\"r\": {entry}}}}}");
            let plan = wrap(&text, &servers, Path::new("x"), OPTIONS)
                .unwrap()
                .unwrap();
            assert_eq!(
                plan.text, text,
                "left untouched, no serve entry for nothing wrapped"
            );
            match &plan.outcomes[..] {
                [(key, Outcome::LeftAlone(why))] => {
                    assert_eq!(key, "r");
                    assert!(why.contains(reason), "{entry}: {why}");
                }
                other => panic!("{entry}: {other:?}"),
            }
        }
    }

    /// A Codex file with one remote table `r`: its `url` line and some of the other remote
    /// keys, kept keys, a comment and blank lines in any order, indented or not, its headers
    /// inline or as tables of their own after it (a tool's table among them); then nothing,
    /// a sub-table of it, another server or an array of tables after blank lines; a final line
    /// break or none; LF or CRLF.
    fn codex_remote_file() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(any::<bool>(), 8),
            any::<bool>(),
            0..4usize,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_flat_map(|(with, indent, after, newline, crlf, tables)| {
                let pad = if indent { "  " } else { "" };
                let optional = [
                    "bearer_token_env_var = \"T\"",
                    "http_headers = { \"X-A\" = \"a${b}\" }",
                    "env_http_headers = { \"X-B\" = \"B\" } # from B",
                    "startup_timeout_sec = 5",
                    "# note",
                    "",
                    "enabled = true  ",
                    "   ",
                ];
                let mut lines = vec![format!("{pad}url = \"https://h/mcp\" # remote")];
                lines.extend(
                    optional
                        .iter()
                        .zip(&with)
                        .filter(|(_, w)| **w)
                        .map(|(l, _)| format!("{pad}{l}")),
                );
                // The headers as tables of their own, right after the server's table.
                let mut header_tables = String::new();
                if tables {
                    for (i, table) in ["http_headers", "env_http_headers"].iter().enumerate() {
                        if let Some(at) =
                            lines.iter().position(|l| l.trim_start().starts_with(table))
                        {
                            lines.remove(at);
                            let pair = ["\"X-A\" = \"a${b}\"", "\"X-B\" = \"B\" # from B"][i];
                            header_tables.push_str(&format!("\n\n[mcp_servers.r.{table}]\n{pair}"));
                            // A tool's table between or after them.
                            if i == 0 && indent {
                                header_tables.push_str(
                                    "\n[mcp_servers.r.tools.u]\napproval_mode = \"prompt\"",
                                );
                            }
                        }
                    }
                }
                (
                    Just(lines).prop_shuffle(),
                    Just((header_tables, after, newline, crlf)),
                )
            })
            .prop_map(|(lines, (header_tables, after, newline, crlf))| {
                let mut text = format!(
                    "model = \"o3\"\n\n[mcp_servers.r]\n{}{header_tables}",
                    lines.join("\n")
                );
                match after {
                    1 => text.push_str("\n\n[mcp_servers.r.tools.t]\napproval_mode = \"approve\""),
                    2 => text.push_str("\n[mcp_servers.other]\ncommand = \"x\""),
                    3 => text.push_str("\n\n \n[[profiles]]\nname = \"p\""),
                    _ => {}
                }
                if newline {
                    text.push('\n');
                }
                if crlf {
                    text = text.replace('\n', "\r\n");
                }
                text
            })
    }

    /// One server entry in one of several layouts.
    fn entry() -> impl Strategy<Value = String> {
        let word = "[a-z${}:/ \\\\\"é-]{0,8}";
        (
            word,
            prop::collection::vec(word, 0..4),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(command, args, with_args, multiline, with_env)| {
                let lit = |s: &str| serde_json::Value::String(s.into()).to_string();
                let mut members = vec![format!("\"command\": {}", lit(&command))];
                if with_args {
                    let items: Vec<String> = args.iter().map(|a| lit(a)).collect();
                    members.push(if multiline {
                        format!(
                            "\"args\": [\n        {}\n      ]",
                            items.join(",\n        ")
                        )
                    } else {
                        format!("\"args\": [{}]", items.join(", "))
                    });
                }
                if with_env {
                    members.push("\"env\": {\"A\": \"${A}\"} /* kept */".into());
                }
                if multiline {
                    format!("{{\n      {}\n    }}", members.join(",\n      "))
                } else {
                    format!("{{{}}}", members.join(", "))
                }
            })
    }

    proptest! {
        /// A Codex remote table wrapped loads as a stdio entry with one header per remote
        /// header key; unwrap from the backup alone and from the record alone gives every byte
        /// back; wrapping twice is wrapping once.
        #[test]
        fn a_codex_remote_table_wraps_and_unwraps_in_any_layout(text in codex_remote_file()) {
            let plan = wrap(&text, &ServersAt::Toml, Path::new("x"), OPTIONS).unwrap().unwrap();
            let Outcome::WrappedRemote(member) = &plan.outcomes[0].1 else {
                panic!("{text:?}: {:?}", plan.outcomes);
            };
            let doc = toml_edit::Document::parse(plan.text.as_str()).unwrap();
            let entry = doc["mcp_servers"]["r"].as_table_like().unwrap();
            for refused in ["url", "bearer_token_env_var", "http_headers", "env_http_headers"] {
                prop_assert!(!entry.contains_key(refused), "{}", plan.text);
            }
            let lines = command_lines(&plan.text, &ServersAt::Toml);
            let headers = lines[0].1.iter().filter(|a| *a == "--header").count();
            let expected = ["bearer_token_env_var", "X-A", "X-B"]
                .iter()
                .filter(|k| text.contains(*k))
                .count();
            prop_assert_eq!(headers, expected, "{}", plan.text);
            let again = wrap(&plan.text, &ServersAt::Toml, Path::new("x"), OPTIONS).unwrap().unwrap();
            prop_assert_eq!(&again.text, &plan.text);
            let back = unwrapped(&plan.text, &ServersAt::Toml, &text);
            prop_assert_eq!(&back.text, &text, "via {:?}", plan.text);
            let record = Originals {
                recorded: BTreeMap::from([("r".to_string(), member.clone())]),
                backup: None,
            };
            let back = unwrap(&plan.text, &ServersAt::Toml, Path::new("x"), &record, true)
                .unwrap()
                .unwrap();
            prop_assert_eq!(&back.text, &text, "via {:?} and the record", plan.text);
        }

        /// Wrap then unwrap is the identity; wrapping twice is wrapping once.
        #[test]
        fn wrap_then_unwrap_is_the_identity(
            entries in prop::collection::vec(entry(), 0..4),
            crlf in any::<bool>(),
            trailing in any::<bool>(),
        ) {
            let members: Vec<String> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| format!("\"s{i}\": {e}"))
                .collect();
            let comma = if trailing && !members.is_empty() { "," } else { "" };
            let mut text = format!(
                "{{\n  // mine\n  \"mcpServers\": {{\n    {}{comma}\n  }}\n}}\n",
                members.join(",\n    ")
            );
            if crlf {
                text = text.replace('\n', "\r\n");
            }
            let servers = at(&["mcpServers"]);
            let plan = wrap(&text, &servers, Path::new("x"), OPTIONS).unwrap().unwrap();
            crate::clients::jsonc::parse(&plan.text).unwrap();
            let again = wrap(&plan.text, &servers, Path::new("x"), OPTIONS).unwrap().unwrap();
            prop_assert_eq!(&again.text, &plan.text);
            let back = unwrapped(&plan.text, &servers, &text);
            prop_assert_eq!(back.text, text);
        }
    }
}
