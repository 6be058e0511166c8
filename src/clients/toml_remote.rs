//! Codex's remote entries in `config.toml`, and where each entry's text is.
//!
//! A Streamable HTTP entry of Codex is `[mcp_servers.NAME]` with `url` and, optionally,
//! `bearer_token_env_var` (a variable whose value goes out as `Authorization: Bearer …`),
//! `http_headers` (static values) and `env_http_headers` (header name → variable name); Codex
//! refuses `command`, `args`, `env`, `env_vars`, `cwd` and `bearer_token` beside `url`, and
//! `url`, `bearer_token_env_var`, `http_headers` and `env_http_headers` beside `command`
//! (`RawMcpServerConfig` in Codex's `codex-rs/config/src/mcp_types.rs`). The launch of the
//! proxy takes the place of those four keys' lines (and of header tables of their own), and
//! every other line stays. Codex starts a stdio server with a filtered environment
//! (`HOME`, `PATH`, `USER`, `LANG`, … and the variables `env_vars` names:
//! `create_env_for_mcp_server` in `codex-rs/rmcp-client/src/utils.rs`), so the launch that
//! replaces a remote entry names in `env_vars` every variable its headers reference, and no
//! value is written anywhere.

use std::ops::Range;

use toml_edit::{Item, Table, TableLike, Value};

use super::entries::{is_variable_name, Remote, Rewrite, State};
use crate::upstream::http::config::{check_url, parse_header};

/// Where a TOML entry's text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The entry's bytes: `NAME = { … }` from its key to its closing brace, or a
    /// `[mcp_servers.NAME]` table from its header to its last line that is not blank, and the
    /// tables of its own that follow it directly (`[mcp_servers.NAME.tools.TOOL]`, …).
    pub(crate) member: Range<usize>,
    /// The inline table's bytes, braces included; `None` for a table with a header.
    inline: Option<Range<usize>>,
    /// The header tables (`[mcp_servers.NAME.http_headers]`, `[….env_http_headers]`) among the
    /// tables of its own that follow it: the key, and the table from its header to its last
    /// line that is not blank.
    header_tables: Vec<(&'static str, Range<usize>)>,
}

/// The keys of Codex's headers.
const HEADER_KEYS: [&str; 2] = ["http_headers", "env_http_headers"];

/// Where each table header (`[…]`, `[[…]]`) of the document begins, in order.
pub(crate) fn header_starts(root: &Table) -> Vec<usize> {
    fn walk(table: &Table, out: &mut Vec<usize>) {
        for (_, item) in table.iter() {
            match item {
                Item::Table(t) => {
                    if !t.is_implicit() && !t.is_dotted() {
                        out.extend(t.span().map(|s| s.start));
                    }
                    walk(t, out);
                }
                Item::ArrayOfTables(array) => {
                    for t in array.iter() {
                        out.extend(t.span().map(|s| s.start));
                        walk(t, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort_unstable();
    out
}

/// Where the entry `key` (`item`) of the servers table `servers` is; `None` for one written
/// as dotted keys (`mcp_servers.NAME.url = …`), which has no text of its own.
pub(crate) fn layout(
    text: &str,
    servers: &dyn TableLike,
    key: &str,
    item: &Item,
    headers: &[usize],
) -> Option<Layout> {
    match item {
        Item::Table(table) if !table.is_implicit() && !table.is_dotted() => {
            let mut member = section(text, table.span()?.start, headers);
            let mut own = Vec::new();
            let mut walk = vec![table];
            while let Some(t) = walk.pop() {
                for (_, item) in t.iter() {
                    if let Item::Table(sub) = item {
                        if !sub.is_implicit() && !sub.is_dotted() {
                            own.extend(sub.span().map(|s| s.start));
                        }
                        walk.push(sub);
                    }
                }
            }
            // Its own sub-tables that follow it directly, its header tables among them, are
            // part of its text (they stay where they are, and so does what follows them).
            let mut header_tables = Vec::new();
            while let Some(&next) = headers.iter().find(|&&h| h > member.end) {
                if !own.contains(&next) {
                    break;
                }
                member.end = section(text, next, headers).end;
                let key = HEADER_KEYS.iter().find(|k| {
                    matches!(table.get(k), Some(Item::Table(t)) if t.span().is_some_and(|s| s.start == next))
                });
                if let Some(&key) = key {
                    header_tables.push((key, next..member.end));
                }
            }
            Some(Layout {
                member,
                inline: None,
                header_tables,
            })
        }
        Item::Value(Value::InlineTable(table)) if !table.is_dotted() => {
            let value = table.span()?;
            let key = servers.key(key)?.span()?;
            Some(Layout {
                member: key.start..value.end,
                inline: Some(value),
                header_tables: Vec::new(),
            })
        }
        _ => None,
    }
}

/// The table whose header begins at `start`, up to its last line that is not blank (blank
/// lines and the line break before the next header are not its own).
fn section(text: &str, start: usize, headers: &[usize]) -> Range<usize> {
    let next = headers
        .iter()
        .find(|&&h| h > start)
        .map_or(text.len(), |&h| line_start(text, h));
    let last = text[start..next].trim_end().len();
    start..line_end(text, start + last)
}

/// The start of the line holding byte `at`.
fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

/// The end of the line holding byte `at`, before its line break (`\n` or `\r\n`).
fn line_end(text: &str, at: usize) -> usize {
    match text[at..].find('\n') {
        Some(i) if text[..at + i].ends_with('\r') => at + i - 1,
        Some(i) => at + i,
        None => text.len(),
    }
}

/// The line `line` (start to end, its line break excluded) with its line break.
fn with_line_break(text: &str, line: Range<usize>) -> Range<usize> {
    let rest = &text[line.end..];
    let eol = if rest.starts_with("\r\n") {
        2
    } else {
        usize::from(rest.starts_with('\n'))
    };
    line.start..line.end + eol
}

/// The length of the line break that ends `text[..at]` (0 when there is none).
fn break_before(text: &str, at: usize) -> usize {
    let before = &text[..at];
    if before.ends_with("\r\n") {
        2
    } else {
        usize::from(before.ends_with('\n'))
    }
}

/// Codex's keys of a Streamable HTTP entry: the launch of the proxy takes their place.
const REMOTE_KEYS: [&str; 4] = [
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
];

/// Keys Codex refuses beside `url` (the file does not load).
const REFUSED: [&str; 6] = ["command", "args", "env", "env_vars", "cwd", "bearer_token"];

/// Keys of Codex's own sign-in (OAuth).
const SIGN_IN: [&str; 3] = ["oauth", "oauth_resource", "scopes"];

/// What a Codex entry with `url` is: a remote server `ctxopt-proxy --url` can reach in its
/// place, or left alone and why.
pub(crate) fn remote(text: &str, entry: &dyn TableLike, layout: Option<&Layout>) -> State {
    match read_remote(text, entry, layout) {
        Ok(remote) => State::Remote(remote),
        Err(why) => State::LeftAlone(why),
    }
}

fn read_remote(
    text: &str,
    entry: &dyn TableLike,
    layout: Option<&Layout>,
) -> Result<Remote, String> {
    if let Some(key) = REFUSED.iter().find(|k| entry.contains_key(k)) {
        return Err(format!(
            "remote server with `{key}`, which Codex refuses beside `url`"
        ));
    }
    if let Some(key) = SIGN_IN.iter().find(|k| entry.contains_key(k)) {
        return Err(format!(
            "`{key}`: ctxopt-proxy does not sign in to remote servers"
        ));
    }
    if entry.contains_key("experimental_environment") {
        return Err(
            "`experimental_environment`: Codex would start ctxopt-proxy in another environment"
                .into(),
        );
    }
    let url = entry
        .get("url")
        .and_then(Item::as_str)
        .ok_or("`url` is not a string")?;
    check_url(url).map_err(|e| e.to_string())?;
    let own_tables: Vec<&str> = layout
        .map(|l| l.header_tables.iter().map(|(k, _)| *k).collect())
        .unwrap_or_default();
    let (headers, env_vars) = headers(entry, &own_tables)?;
    let layout = layout.ok_or(
        "written as dotted keys (`mcp_servers.NAME.url = …`); ctxopt wrap rewrites a `[mcp_servers.NAME]` table or an inline one",
    )?;
    let rewrite = match &layout.inline {
        Some(value) => {
            let mut kept = Vec::new();
            for (key, item) in entry.iter() {
                if REMOTE_KEYS.contains(&key) {
                    continue;
                }
                let dotted = item
                    .as_value()
                    .and_then(Value::as_inline_table)
                    .is_some_and(|t| t.is_dotted());
                let span = entry.key(key).and_then(|k| k.span()).zip(item.span());
                match span {
                    Some((k, v)) if !dotted => kept.push(k.start..v.end),
                    _ => {
                        return Err(format!(
                            "`{key}` is written as dotted keys in the inline table"
                        ))
                    }
                }
            }
            Rewrite::Object {
                value: value.clone(),
                kept,
            }
        }
        None => lines(text, entry, layout)?,
    };
    Ok(Remote {
        url: url.to_string(),
        headers,
        sse: false,
        env_vars,
        rewrite,
    })
}

/// The proxy's `--header` values for the entry's headers (the bearer token, the static
/// ones, those from variables, in that order), and the variables they reference.
/// `own_tables`: the header keys written as tables of their own that are part of the entry's
/// text.
fn headers(
    entry: &dyn TableLike,
    own_tables: &[&str],
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut headers = Vec::new();
    let mut variables: Vec<String> = Vec::new();
    let mut reference = |key: &str, name: &str| {
        if !is_variable_name(name) {
            return Err(format!(
                "`{key}` names the variable `{name}`, which ctxopt-proxy cannot reference as `${{{name}}}`"
            ));
        }
        if !variables.iter().any(|v| v == name) {
            variables.push(name.to_string());
        }
        Ok(format!("${{{name}}}"))
    };
    if let Some(item) = entry.get("bearer_token_env_var") {
        let name = item
            .as_str()
            .ok_or("`bearer_token_env_var` is not a string")?;
        let value = reference("bearer_token_env_var", name)?;
        headers.push(format!("Authorization: Bearer {value}"));
    }
    for (key, from_variable) in [("http_headers", false), ("env_http_headers", true)] {
        let Some(item) = entry.get(key) else {
            continue;
        };
        let pairs: Vec<(&str, Option<&str>)> = match item {
            Item::Value(Value::InlineTable(t)) => t.iter().map(|(k, v)| (k, v.as_str())).collect(),
            Item::Table(t) if own_tables.contains(&key) => {
                t.iter().map(|(k, v)| (k, v.as_str())).collect()
            }
            Item::Table(_) => {
                return Err(format!(
                    "`{key}` is a table of its own that does not follow the server's table; ctxopt wrap rewrites it inline (`{key} = {{ … }}`) or right after `[mcp_servers.NAME]`"
                ))
            }
            _ => return Err(format!("`{key}` is not a table")),
        };
        for (name, value) in pairs {
            let value = value.ok_or_else(|| format!("`{key}.{name}` is not a string"))?;
            let value = if from_variable {
                reference(key, value)?
            } else {
                // Codex sends the value as written: a `${` in it is no reference.
                value.replace("${", "$${")
            };
            let header = format!("{name}: {value}");
            parse_header(&header, |_| Some(String::new())).map_err(|e| e.to_string())?;
            headers.push(header);
        }
    }
    let mut names: Vec<String> = headers
        .iter()
        .map(|h| h.split(':').next().unwrap_or_default().to_ascii_lowercase())
        .collect();
    names.sort();
    if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("header `{}` is given twice", pair[0]));
    }
    Ok((headers, variables))
}

/// The rewrite of a `[mcp_servers.NAME]` table laid out as `layout` says: the `url` line and
/// the lines of the other remote keys, each a line of its own, and its header tables.
fn lines(text: &str, entry: &dyn TableLike, layout: &Layout) -> Result<Rewrite, String> {
    let end = layout.member.end;
    let mut url = None;
    let mut indent = String::new();
    let mut dropped: Vec<Range<usize>> = layout
        .header_tables
        .iter()
        .map(|(_, table)| {
            // With the blank lines before it.
            let mut start = line_start(text, table.start);
            while start > 0 {
                let before = line_start(text, start - 1);
                if !text[before..start].trim().is_empty() {
                    break;
                }
                start = before;
            }
            with_line_break(text, start..table.end)
        })
        .collect();
    for key in REMOTE_KEYS {
        let Some(item) = entry.get(key).filter(|i| !i.is_table()) else {
            continue;
        };
        let (k, v) = entry
            .key(key)
            .and_then(|k| k.span())
            .zip(item.span())
            .ok_or_else(|| format!("`{key}` has no place in the text"))?;
        let start = line_start(text, k.start);
        let lead = &text[start..k.start];
        if !lead.chars().all(|c| c == ' ' || c == '\t') {
            return Err(format!("`{key}` does not begin its line"));
        }
        let line = start..line_end(text, v.end);
        if key == "url" {
            indent = lead.to_string();
            url = Some(line);
        } else {
            dropped.push(with_line_break(text, line));
        }
    }
    // Neighbouring lines go as one run. The run that ends the table takes the blank lines
    // before it (the table then ends where its text now does, and what follows it is as it
    // was), and with them the runs they join it to; a run that ends the file without a final
    // line break takes the line break before it instead of one after it (the file keeps
    // ending without one).
    let mut runs = merge(dropped);
    while let Some(last) = runs.last_mut().filter(|r| r.end >= end) {
        let was = last.start;
        while last.start > 0 {
            let before = line_start(text, last.start - 1);
            if !text[before..last.start].trim().is_empty() {
                break;
            }
            last.start = before;
        }
        if last.start == was {
            break;
        }
        runs = merge(runs);
    }
    if let Some(last) = runs.last_mut() {
        if last.end == text.len() && break_before(text, last.end) == 0 {
            last.start -= break_before(text, last.start);
        }
    }
    Ok(Rewrite::Lines {
        url: url.ok_or("no `url`")?,
        indent,
        dropped: runs,
    })
}

/// `ranges` in order, those that overlap or touch joined.
fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}
