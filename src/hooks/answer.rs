//! The answer a hook prints: the context wrapped in the ctxopt marker and put into the
//! client's JSON. Claude Code and Gemini CLI both read
//! `{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}` on stdout.

use serde_json::json;

use crate::import::INJECTED_MARKER;

/// The most characters of context a hook prints (Claude Code shows hook output over
/// 10,000 characters only as a preview).
pub(crate) const MAX_CONTEXT_CHARS: usize = 9_000;

/// `context` inside the marker, cut to [`MAX_CONTEXT_CHARS`] at a line end with a note.
pub(crate) fn wrap(event: &str, records: usize, context: &str) -> String {
    let head = format!(
        "{INJECTED_MARKER} event=\"{event}\" records=\"{records}\">\n\
         Facts ctxopt kept from this session (each tagged with the record it came from):\n"
    );
    let tail = "\n</ctxopt-context>";
    let room = MAX_CONTEXT_CHARS.saturating_sub(head.chars().count() + tail.chars().count() + 60);
    let body = if context.chars().count() <= room {
        context.to_string()
    } else {
        let cut = context
            .char_indices()
            .nth(room)
            .map_or(context.len(), |(i, _)| i);
        let cut = context[..cut].rfind('\n').unwrap_or(cut);
        format!(
            "{}\n[… cut at {MAX_CONTEXT_CHARS} characters]",
            &context[..cut]
        )
    };
    format!("{head}{}{tail}", body.trim_end())
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
        let text = wrap("UserPromptSubmit", 3, &context);
        assert!(text.chars().count() <= MAX_CONTEXT_CHARS, "{}", text.len());
        assert!(text.contains("line 0\n") && !text.contains("line 1999"));
        assert!(text.contains("[… cut at 9000 characters]"));
        assert!(text.starts_with(INJECTED_MARKER) && text.ends_with("</ctxopt-context>"));
        let short = wrap("SessionStart", 1, "a fact");
        assert!(short.contains("records=\"1\">") && short.contains("\na fact\n"));
        let out: serde_json::Value =
            serde_json::from_str(&hook_output("SessionStart", &short)).unwrap();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "SessionStart");
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            short.as_str()
        );
    }
}
