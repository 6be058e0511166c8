//! The answer a hook prints: the context wrapped in the ctxopt marker, ended by a line that
//! says how the model can get more, and put into the client's JSON. Claude Code and Gemini
//! CLI both read `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}`
//! on stdout.

use serde_json::json;

use crate::import::INJECTED_MARKER;

/// The most characters of context a hook prints, the marker, its wrapper and the closing
/// line included. Claude Code shows hook output over 10,000 characters only as a 2 KB
/// preview (the rest in a file the model must read); Gemini CLI has no limit (it escapes `<`
/// and `>` and adds the text whole inside `<hook_context>`), so one cap serves both.
pub(crate) const MAX_CONTEXT_CHARS: usize = 10_000;

/// Where the model can get more context than the answer holds: the MCP server that serves
/// ctxopt's `build_context` tool in the client's configuration, when there is one.
pub(crate) fn more_line(tool_server: Option<&str>) -> String {
    match tool_server {
        Some(server) => format!(
            "More, on any task: call the `build_context` tool of the `{server}` MCP server \
             (ctxopt) with {{\"task\": \"what you need now\"}}."
        ),
        None => "More: the files named above are on disk; read them again for more than \
                 these excerpts."
            .to_string(),
    }
}

/// The opening of an answer: the marker and the line that says what follows.
fn head(event: &str, records: usize) -> String {
    format!(
        "{INJECTED_MARKER} event=\"{event}\" records=\"{records}\">\n\
         Facts ctxopt kept from this session (each tagged with the record it came from):\n"
    )
}

/// The end of an answer: the line that says how to get more, and the closing marker.
fn tail(more: &str) -> String {
    format!("\n{more}\n</ctxopt-context>")
}

/// The note that ends a context cut to fit.
fn cut_note() -> String {
    format!("\n[… cut at {MAX_CONTEXT_CHARS} characters]")
}

/// The most characters of context [`wrap`] keeps whole for `event`, with the closing line
/// `more` (whatever the number of records, up to 99,999): a build that fits in it is printed
/// whole.
pub(crate) fn room(event: &str, more: &str) -> usize {
    MAX_CONTEXT_CHARS.saturating_sub(
        head(event, 99_999).chars().count()
            + tail(more).chars().count()
            + cut_note().chars().count(),
    )
}

/// `context` inside the marker, then `more`; cut at a line end (with a note) so that the
/// whole stays within [`MAX_CONTEXT_CHARS`].
pub(crate) fn wrap(event: &str, records: usize, context: &str, more: &str) -> String {
    let head = head(event, records);
    let tail = tail(more);
    let note = cut_note();
    let room = MAX_CONTEXT_CHARS
        .saturating_sub(head.chars().count() + tail.chars().count() + note.chars().count());
    let body = if context.trim_end().chars().count() <= room {
        context.to_string()
    } else {
        format!("{}{note}", cut_at_line_end(context, room))
    };
    format!("{head}{}{tail}", body.trim_end())
}

/// The longest start of `text` within `max` characters that ends at a line end (or at
/// `max` characters when its first line is longer).
fn cut_at_line_end(text: &str, max: usize) -> &str {
    let cut = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    &text[..cut]
}

/// The most characters of instructions a `PreCompact` prints for the client's summarizer.
pub(crate) const MAX_INSTRUCTION_CHARS: usize = 3_000;

/// The most characters one section of those instructions takes (the files in play come
/// first and fit whole: at most 15 lines within 12 % of the budget).
const MAX_INSTRUCTION_SECTION_CHARS: usize = 1_200;

/// What the instructions ask of the summary.
const INSTRUCTIONS_HEAD: &str = "ctxopt, for the summary: the work goes on from this summary. \
     Keep in it these facts of the session, with their exact file paths, line ranges, commands \
     and error lines:";

/// The sections of a built `context` that the summary should keep, each with the line that
/// says what it is: the files in play, the plan, the open problems.
const INSTRUCTED_SECTIONS: [(&str, &str); 3] = [
    (
        "Files in play",
        "The files in play (latest first; what was done to each, and where):",
    ),
    ("Plan", "The plan as it stands:"),
    (
        "Open problems",
        "Open problems (commands whose latest run failed, and what they printed):",
    ),
];

/// Instructions for a client's summarizer (Claude Code gives a `PreCompact` hook's plain
/// output to the summary as extra instructions): keep the files in play, the plan and the
/// open problems of the built `context`, without their source tags, within
/// [`MAX_INSTRUCTION_CHARS`]; `None` when the context has none of them.
pub(crate) fn summary_instructions(context: &str) -> Option<String> {
    let headings: Vec<String> = crate::optimizer::section_titles()
        .map(|t| format!("## {t}"))
        .collect();
    let mut out = String::new();
    for (title, lead) in INSTRUCTED_SECTIONS {
        let heading = format!("## {title}");
        let Some(start) = context.lines().position(|l| l == heading) else {
            continue;
        };
        let mut body = String::new();
        let mut chars = 0;
        for line in context
            .lines()
            .skip(start + 1)
            .take_while(|l| !headings.iter().any(|h| h == l))
            .filter(|l| !l.starts_with("[source: ") && !l.trim().is_empty())
        {
            chars += line.chars().count() + 1;
            if chars > MAX_INSTRUCTION_SECTION_CHARS {
                body.push_str("[…]\n");
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        if !body.is_empty() {
            out.push_str(&format!("\n{lead}\n{body}"));
        }
    }
    if out.is_empty() {
        return None;
    }
    let text = format!("{INSTRUCTIONS_HEAD}\n{out}");
    let text = text.trim_end();
    Some(if text.chars().count() > MAX_INSTRUCTION_CHARS {
        // Room for the mark that says it was cut.
        format!("{}\n[…]", cut_at_line_end(text, MAX_INSTRUCTION_CHARS - 4))
    } else {
        text.to_string()
    })
}

/// The client JSON carrying `text` as additional context for `event`.
pub(crate) fn hook_output(event: &str, text: &str) -> String {
    json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_contexts_are_cut_under_the_limit_at_a_line_end() {
        let context: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let more = more_line(Some("ctxopt"));
        let text = wrap("UserPromptSubmit", 3, &context, &more);
        let chars = text.chars().count();
        assert!(
            chars <= MAX_CONTEXT_CHARS && chars > MAX_CONTEXT_CHARS - 20,
            "{chars}"
        );
        assert!(text.contains("line 0\n") && !text.contains("line 1999"));
        assert!(text.contains("[… cut at 10000 characters]"));
        assert!(text.starts_with(INJECTED_MARKER));
        assert!(text.ends_with(&format!("\n{more}\n</ctxopt-context>")));
        assert!(more.contains("`build_context` tool of the `ctxopt` MCP server"));
        let short = wrap("SessionStart", 1, "a fact", &more_line(None));
        assert!(short.contains("records=\"1\">") && short.contains("\na fact\nMore: "));
        assert!(!short.contains("build_context"));
        let out: serde_json::Value =
            serde_json::from_str(&hook_output("SessionStart", &short)).unwrap();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            short.as_str()
        );
    }
}
