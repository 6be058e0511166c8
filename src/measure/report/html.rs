//! A self-contained HTML rendering of a [`Report`]: inline CSS and SVG charts (cost per
//! tool, envelope share, latency) and the same tables as the text report. No scripts,
//! no external resources.

use std::fmt::Write as _;

use super::text::{
    anomalies_table, claude_table, compaction_table, hook_injections_table, net_line,
    never_called_table, pins_table, sessions_table, tools_table, Table,
};
use super::{Report, ToolReport};
use crate::measure::claude_estimate;

const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;\
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}\
svg text{font:12px system-ui,sans-serif}.answer{fill:#4c78a8}.envelope{fill:#f58518}\
.share{fill:#e45756}.p50{fill:#54a24b}.p95{fill:#b279a2}.figure{margin:1em 0}";

/// Escapes text for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn table(t: &Table, out: &mut String) {
    out.push_str("<table><thead><tr>");
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in &t.rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
}

/// One horizontal bar: label, and segments of (class, value, title).
struct Bar {
    label: String,
    segments: Vec<(&'static str, f64, String)>,
}

/// A horizontal bar chart as inline SVG; `scale_max` is the value of a full-width bar.
fn bar_chart(id: &str, title: &str, bars: &[Bar], scale_max: f64, unit: &str) -> String {
    const LABEL_W: f64 = 260.0;
    const PLOT_W: f64 = 420.0;
    const ROW_H: f64 = 22.0;
    let height = ROW_H * bars.len() as f64 + 30.0;
    let mut svg = format!(
        "<figure class=\"figure\"><figcaption>{}</figcaption>\
         <svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" \
         role=\"img\" aria-label=\"{}\">",
        escape(title),
        LABEL_W + PLOT_W + 90.0,
        escape(title)
    );
    let scale = if scale_max > 0.0 {
        PLOT_W / scale_max
    } else {
        0.0
    };
    for (i, bar) in bars.iter().enumerate() {
        let y = 10.0 + ROW_H * i as f64;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LABEL_W - 6.0,
            y + 14.0,
            escape(&bar.label)
        );
        let mut x = LABEL_W;
        let mut total = 0.0;
        for (class, value, tip) in &bar.segments {
            let w = value * scale;
            let _ = write!(
                svg,
                "<rect class=\"bar {class}\" data-label=\"{}\" data-value=\"{value}\" x=\"{x:.1}\" \
                 y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}</title></rect>",
                escape(&bar.label),
                ROW_H - 6.0,
                escape(tip)
            );
            x += w;
            total += value;
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}{unit}</text>",
            x + 4.0,
            y + 14.0,
            trim_number(total)
        );
    }
    svg.push_str("</svg></figure>\n");
    svg
}

fn trim_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn label(server: &str, tool: &ToolReport) -> String {
    let proxy = if tool.origin == "proxy" {
        " (proxy)"
    } else {
        ""
    };
    format!("{server} / {}{proxy}", tool.tool)
}

/// Renders `report` as one self-contained HTML document.
pub fn render(report: &Report) -> String {
    let tools: Vec<(&str, &ToolReport)> = report
        .servers
        .iter()
        .flat_map(|s| s.tools.iter().map(move |t| (s.name.as_str(), t)))
        .collect();
    let cost: Vec<Bar> = tools
        .iter()
        .map(|(server, t)| {
            let stripped = t.stripped_tokens.total as f64;
            let envelope = t.envelope_tokens as f64;
            Bar {
                label: label(server, t),
                segments: vec![
                    (
                        "answer",
                        stripped,
                        format!("{stripped} tokens without _meta"),
                    ),
                    ("envelope", envelope, format!("{envelope} tokens of _meta")),
                ],
            }
        })
        .collect();
    let share: Vec<Bar> = tools
        .iter()
        .map(|(server, t)| {
            let pct = (t.envelope_share * 1000.0).round() / 10.0;
            Bar {
                label: label(server, t),
                segments: vec![("share", pct, format!("{pct}% of call tokens are _meta"))],
            }
        })
        .collect();
    let latency: Vec<Bar> = tools
        .iter()
        .map(|(server, t)| {
            let p50 = t.latency.p50_us as f64 / 1000.0;
            let p95 = t.latency.p95_us as f64 / 1000.0;
            Bar {
                label: label(server, t),
                segments: vec![
                    ("p50", p50, format!("p50 {p50} ms")),
                    ("p95", (p95 - p50).max(0.0), format!("p95 {p95} ms")),
                ],
            }
        })
        .collect();
    let max_cost = tools
        .iter()
        .map(|(_, t)| t.call_tokens.total as f64)
        .fold(0.0, f64::max);
    let max_latency = tools
        .iter()
        .map(|(_, t)| t.latency.p95_us as f64 / 1000.0)
        .fold(0.0, f64::max);

    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>MCP cost report</title><style>{CSS}</style></head><body>\n\
         <h1>MCP cost report</h1><p>Tokens counted with <code>{}</code>. \
         Call tokens are the request <code>params</code> plus the response \
         <code>result</code> or <code>error</code>.</p>\n",
        escape(&report.tokenizer)
    );
    out.push_str(&bar_chart(
        "chart-cost",
        "Call tokens per tool (blue: answer, orange: _meta envelope)",
        &cost,
        max_cost,
        " tokens",
    ));
    out.push_str(&bar_chart(
        "chart-envelope",
        "Envelope share per tool (% of call tokens that are _meta)",
        &share,
        100.0,
        "%",
    ));
    out.push_str(&bar_chart(
        "chart-latency",
        "Latency per tool (green: p50, purple: up to p95), milliseconds",
        &latency,
        max_latency,
        " ms",
    ));
    out.push_str("<h2>Sessions</h2>\n");
    table(&sessions_table(&report.sessions), &mut out);
    out.push_str("<h2>Pins</h2>\n");
    table(&pins_table(&report.sessions), &mut out);
    for change in &report.catalog_changes {
        let _ = writeln!(
            out,
            "<h2>Catalog change of {}</h2>\n<pre>{}</pre>",
            escape(&change.server_name),
            escape(&change.diff.lines().join("\n"))
        );
    }
    for server in &report.servers {
        let _ = writeln!(out, "<h2>Server {}</h2>", escape(&server.name));
        table(&tools_table(server), &mut out);
    }
    if !report.compaction.is_empty() {
        out.push_str("<h2>Compaction</h2>\n");
        table(&compaction_table(report), &mut out);
    }
    if !report.hook_injections.is_empty() {
        out.push_str("<h2>Hook injections</h2>\n");
        table(&hook_injections_table(report), &mut out);
        let _ = writeln!(out, "<p id=\"net\">{}</p>", escape(&net_line(report)));
    }
    if !report.never_called.is_empty() {
        out.push_str("<h2>Tools never called</h2>\n");
        table(&never_called_table(report), &mut out);
    }
    if let Some(t) = claude_table(report) {
        let _ = writeln!(
            out,
            "<h2>Claude context</h2>\n<p>{}</p>",
            escape(&claude_estimate::label())
        );
        table(&t, &mut out);
    }
    let a = &report.anomalies;
    let _ = writeln!(
        out,
        "<h2>Anomalies</h2><ul id=\"anomaly-counts\">\
         <li data-kind=\"unanswered_request\">unanswered requests: {}</li>\
         <li data-kind=\"unknown_id_response\">unknown-id responses: {}</li>\
         <li data-kind=\"unadvertised_tool_call\">calls to unadvertised tools: {}</li>\
         <li data-kind=\"cancellation\">cancellations: {}</li>\
         <li data-kind=\"unparseable_frame\">unparseable frames: {}</li></ul>",
        a.unanswered_requests,
        a.unknown_id_responses,
        a.unadvertised_tool_calls,
        a.cancellations,
        a.unparseable_frames
    );
    table(&anomalies_table(report), &mut out);
    out.push_str("</body></html>\n");
    out
}
