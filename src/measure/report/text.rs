//! Plain-text and Markdown renderings of a [`Report`]: the same tables, two syntaxes.

use std::fmt::Write as _;

use super::{Report, Session};
use crate::measure::claude_estimate::{self, ClaudeEstimate};

/// Plain text (aligned columns) or Markdown (pipe tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Aligned columns for a terminal.
    Plain,
    /// GitHub-flavoured Markdown.
    Markdown,
}

/// How a column's cells line up in plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left (figures).
    Right,
}

/// A table: a header row and data rows. Every table `ctxopt` prints (report, audit, gap)
/// goes through it: plain text aligned in columns two spaces apart (the first column to the
/// left, the others to the right unless set otherwise), or a Markdown pipe table.
#[derive(Debug, Clone)]
pub struct Table {
    /// Column titles.
    pub head: Vec<String>,
    /// Rows, each as long as `head`.
    pub rows: Vec<Vec<String>>,
    align: Vec<Align>,
    min_width: Vec<usize>,
}

impl Table {
    /// A table of `rows` under `head`.
    pub fn new<S: Into<String>>(head: impl IntoIterator<Item = S>, rows: Vec<Vec<String>>) -> Self {
        let head: Vec<String> = head.into_iter().map(Into::into).collect();
        let align = (0..head.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        let min_width = vec![0; head.len()];
        Table {
            head,
            rows,
            align,
            min_width,
        }
    }

    /// The same table with `column` aligned as `align` in plain text.
    pub(crate) fn align(mut self, column: usize, align: Align) -> Self {
        self.align[column] = align;
        self
    }

    /// The same table with each column at least as wide as given (in characters), in
    /// plain text.
    pub(crate) fn min_widths(mut self, widths: &[usize]) -> Self {
        for (min, &w) in self.min_width.iter_mut().zip(widths) {
            *min = w;
        }
        self
    }

    /// Appends the table in `style` to `out`.
    pub fn render(&self, style: Style, out: &mut String) {
        debug_assert!(
            self.rows.iter().all(|r| r.len() == self.head.len()),
            "every row has one cell per column"
        );
        match style {
            Style::Markdown => {
                let line = |cells: &[String]| {
                    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
                    format!("| {} |\n", cells.join(" | "))
                };
                out.push_str(&line(&self.head));
                out.push_str(&line(&vec!["---".to_owned(); self.head.len()]));
                for row in &self.rows {
                    out.push_str(&line(row));
                }
            }
            Style::Plain => {
                let widths: Vec<usize> = (0..self.head.len())
                    .map(|i| {
                        std::iter::once(&self.head)
                            .chain(&self.rows)
                            .map(|r| r[i].chars().count())
                            .chain([self.min_width[i]])
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                for row in std::iter::once(&self.head).chain(&self.rows) {
                    let cells: Vec<String> = row
                        .iter()
                        .zip(&widths)
                        .zip(&self.align)
                        .map(|((cell, w), align)| match align {
                            Align::Left => format!("{cell:<w$}"),
                            Align::Right => format!("{cell:>w$}"),
                        })
                        .collect();
                    out.push_str(cells.join("  ").trim_end());
                    out.push('\n');
                }
            }
        }
    }
}

fn ms(us: u64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

fn who(identity: &Option<super::Identity>) -> String {
    identity.as_ref().map_or_else(
        || "-".to_owned(),
        |i| {
            format!("{} {}", i.name, i.version.as_deref().unwrap_or(""))
                .trim()
                .to_owned()
        },
    )
}

/// The per-session table.
pub(crate) fn sessions_table(sessions: &[Session]) -> Table {
    let head = [
        "log",
        "server",
        "server identity",
        "client",
        "protocol",
        "frames c2s/s2c",
        "bytes c2s/s2c",
        "tokens c2s/s2c",
        "_meta tokens",
        "calls",
        "call tokens",
        "rpc errors",
        "complete",
    ];
    Table::new(
        head,
        sessions
            .iter()
            .map(|s| {
                vec![
                    s.log.clone(),
                    s.server_name.clone(),
                    who(&s.server),
                    who(&s.client),
                    if s.protocols.is_empty() {
                        "-".into()
                    } else {
                        s.protocols.join(", ")
                    },
                    format!("{}/{}", s.frames.c2s, s.frames.s2c),
                    format!("{}/{}", s.bytes.c2s, s.bytes.s2c),
                    format!("{}/{}", s.tokens.c2s, s.tokens.s2c),
                    (s.meta_tokens.c2s + s.meta_tokens.s2c).to_string(),
                    s.calls.to_string(),
                    s.call_tokens.to_string(),
                    s.jsonrpc_errors.to_string(),
                    if s.complete {
                        "yes".into()
                    } else {
                        "NO (no trailer)".into()
                    },
                ]
            })
            .collect(),
    )
}

/// The per-tool table of one server.
pub(crate) fn tools_table(server: &super::ServerReport) -> Table {
    let head = [
        "tool",
        "origin",
        "calls",
        "answered",
        "tokens median",
        "min",
        "max",
        "total",
        "stripped median",
        "envelope share",
        "bytes total",
        "p50 ms",
        "p95 ms",
        "max ms",
        "rpc errors",
        "isError",
    ];
    Table::new(
        head,
        server
            .tools
            .iter()
            .map(|t| {
                vec![
                    t.tool.clone(),
                    t.origin.clone(),
                    t.calls.to_string(),
                    t.answered.to_string(),
                    t.call_tokens.median.to_string(),
                    t.call_tokens.min.to_string(),
                    t.call_tokens.max.to_string(),
                    t.call_tokens.total.to_string(),
                    t.stripped_tokens.median.to_string(),
                    format!("{:.1}%", t.envelope_share * 100.0),
                    t.bytes.total.to_string(),
                    ms(t.latency.p50_us),
                    ms(t.latency.p95_us),
                    ms(t.latency.max_us),
                    t.jsonrpc_errors.to_string(),
                    t.is_error_results.to_string(),
                ]
            })
            .collect(),
    )
}

/// The saving ledger: per session and tool, what the server sent and what the client got.
pub fn compaction_table(report: &Report) -> Table {
    Table::new(
        [
            "log",
            "server",
            "tool",
            "compacted",
            "left whole",
            "server tokens",
            "client tokens",
            "saved",
        ],
        report
            .compaction
            .iter()
            .map(|c| {
                vec![
                    c.log.clone(),
                    c.server_name.clone(),
                    c.tool.clone(),
                    c.results.to_string(),
                    c.left_whole.to_string(),
                    c.server_tokens.to_string(),
                    c.client_tokens.to_string(),
                    c.saved_tokens.to_string(),
                ]
            })
            .collect(),
    )
}

/// The hook ledger: per session and event, what the hooks added to the model's context.
pub fn hook_injections_table(report: &Report) -> Table {
    Table::new(
        [
            "client",
            "session",
            "event",
            "answers",
            "records",
            "characters",
            "tokens",
        ],
        report
            .hook_injections
            .iter()
            .map(|i| {
                vec![
                    i.client.clone(),
                    i.session.clone(),
                    i.event.clone(),
                    i.answers.to_string(),
                    i.records.to_string(),
                    i.characters.to_string(),
                    i.tokens.to_string(),
                ]
            })
            .collect(),
    )
    .align(0, Align::Left)
    .align(1, Align::Left)
    .align(2, Align::Left)
}

/// One line: what the hooks added and what wire compaction saved, counted, and the net.
pub fn net_line(report: &Report) -> String {
    let added = report.injected_tokens();
    let saved = report.saved_tokens();
    let sessions: std::collections::BTreeSet<&str> = report
        .hook_injections
        .iter()
        .map(|i| i.session.as_str())
        .collect();
    format!(
        "hooks added {added} tokens to {} sessions' context; wire compaction saved {saved} tokens; net {} tokens",
        sessions.len(),
        saved as i64 - added as i64
    )
}

/// The server tools offered and never called: the evidence for `--hide-tools`.
pub(crate) fn never_called_table(report: &Report) -> Table {
    Table::new(
        ["server", "tool", "sessions", "tokens/session", "tokens"],
        report
            .never_called
            .iter()
            .map(|n| {
                vec![
                    n.server_name.clone(),
                    n.tool.clone(),
                    n.sessions.to_string(),
                    n.tokens_per_session.to_string(),
                    n.total_tokens.to_string(),
                ]
            })
            .collect(),
    )
    .align(1, Align::Left)
}

/// What each session ran with: the pins a figure is re-derived against.
pub fn pins_table(sessions: &[Session]) -> Table {
    Table::new(
        ["log", "ctxopt", "catalog digests", "changed mid-run"],
        sessions
            .iter()
            .map(|s| {
                let digests: Vec<&str> = s
                    .catalog_digests
                    .iter()
                    .map(|d| &d[..12.min(d.len())])
                    .collect();
                vec![
                    s.log.clone(),
                    s.ctxopt_version.clone(),
                    if digests.is_empty() {
                        "-".into()
                    } else {
                        digests.join(" ")
                    },
                    if s.changed_mid_run.is_empty() {
                        "-".into()
                    } else {
                        s.changed_mid_run.join(", ")
                    },
                ]
            })
            .collect(),
    )
    .align(2, Align::Left)
    .align(3, Align::Left)
}

/// Claude estimates beside the o200k counts they come from: each session's tool list (as
/// the native tools parameter) and each tool's calls (as JSON text); `None` when there are
/// none.
pub(crate) fn claude_table(report: &Report) -> Option<Table> {
    let row = |what: &str, place: &str, tool: &str, e: &ClaudeEstimate| {
        vec![
            what.to_owned(),
            place.to_owned(),
            tool.to_owned(),
            e.o200k_tokens.to_string(),
            format!("~{}", e.estimated_tokens),
        ]
    };
    let lists = report.sessions.iter().filter_map(|s| {
        let e = s.claude_tool_list.as_ref()?;
        Some(row("tool list (native tools)", &s.log, "-", e))
    });
    let calls = report.servers.iter().flat_map(|server| {
        server.tools.iter().filter_map(move |t| {
            let e = t.claude_estimate.as_ref()?;
            Some(row("calls (JSON text)", &server.name, &t.tool, e))
        })
    });
    let rows: Vec<Vec<String>> = lists.chain(calls).collect();
    (!rows.is_empty()).then(|| {
        Table::new(["what", "log / server", "tool", "o200k", "~Claude"], rows)
            .align(1, Align::Left)
            .align(2, Align::Left)
    })
}

/// The anomaly list.
pub(crate) fn anomalies_table(report: &Report) -> Table {
    Table::new(
        ["kind", "log", "seq", "dir", "detail"],
        report
            .anomalies
            .listed
            .iter()
            .map(|a| {
                vec![
                    a.kind.clone(),
                    a.log.clone(),
                    a.seq.to_string(),
                    a.dir.clone(),
                    a.detail.clone(),
                ]
            })
            .collect(),
    )
}

/// Renders the whole report as plain text or Markdown.
pub fn render(report: &Report, style: Style) -> String {
    let mut out = String::new();
    let heading = |out: &mut String, text: &str| match style {
        Style::Markdown => {
            let _ = write!(out, "\n## {text}\n\n");
        }
        Style::Plain => {
            let _ = write!(out, "\n{text}\n");
        }
    };
    match style {
        Style::Markdown => {
            let _ = writeln!(out, "# MCP cost report\n\nTokens: {}.", report.tokenizer);
        }
        Style::Plain => {
            let _ = writeln!(out, "MCP cost report (tokens: {})", report.tokenizer);
        }
    }
    heading(&mut out, "Sessions");
    sessions_table(&report.sessions).render(style, &mut out);
    heading(
        &mut out,
        "Pins (tool catalog digests: sorted canonical definitions, SHA-256)",
    );
    pins_table(&report.sessions).render(style, &mut out);
    for change in &report.catalog_changes {
        heading(
            &mut out,
            &format!(
                "Catalog change of {} ({} -> {})",
                change.server_name, change.log_then, change.log_now
            ),
        );
        if style == Style::Markdown {
            out.push_str("```text\n");
        }
        for line in change.diff.lines() {
            let _ = writeln!(out, "{line}");
        }
        if style == Style::Markdown {
            out.push_str("```\n");
        }
    }
    for server in &report.servers {
        heading(&mut out, &format!("Server {}", server.name));
        tools_table(server).render(style, &mut out);
    }
    if !report.compaction.is_empty() {
        heading(
            &mut out,
            "Compaction (server tokens: sent by the server; client tokens: what the client got)",
        );
        compaction_table(report).render(style, &mut out);
    }
    if !report.hook_injections.is_empty() {
        heading(
            &mut out,
            "Hook injections (what ctxopt added to sessions' context)",
        );
        hook_injections_table(report).render(style, &mut out);
        if style == Style::Markdown {
            out.push('\n');
        }
        let _ = writeln!(out, "{}", net_line(report));
    }
    if !report.never_called.is_empty() {
        heading(
            &mut out,
            "Tools never called (offered in these sessions, called in none; tokens: their definitions)",
        );
        never_called_table(report).render(style, &mut out);
    }
    if let Some(table) = claude_table(report) {
        heading(
            &mut out,
            &format!("Claude context ({})", claude_estimate::label()),
        );
        table.render(style, &mut out);
    }
    let a = &report.anomalies;
    heading(&mut out, "Anomalies");
    let _ = writeln!(
        out,
        "unanswered requests {}, unknown-id responses {}, calls to unadvertised tools {}, \
         cancellations {}, unparseable frames {}",
        a.unanswered_requests,
        a.unknown_id_responses,
        a.unadvertised_tool_calls,
        a.cancellations,
        a.unparseable_frames
    );
    if !a.listed.is_empty() {
        if style == Style::Markdown {
            out.push('\n');
        }
        anomalies_table(report).render(style, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_columns_align_as_set_and_keep_their_minimum_width() {
        let rows = vec![
            vec!["a".into(), "12".into(), "x".into()],
            vec!["long name".into(), "3".into(), "yz".into()],
        ];
        let mut out = String::new();
        Table::new(["n", "v", "d"], rows.clone())
            .align(2, Align::Left)
            .min_widths(&[0, 4])
            .render(Style::Plain, &mut out);
        assert_eq!(
            out,
            "n             v  d\na            12  x\nlong name     3  yz\n"
        );
        let mut md = String::new();
        Table::new(["n", "v", "d"], rows).render(Style::Markdown, &mut md);
        assert_eq!(
            md.lines().nth(2),
            Some("| a | 12 | x |"),
            "alignment is plain text's only"
        );
    }
}
