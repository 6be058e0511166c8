//! What a restore (`SessionStart` with `compact` or `resume`) knows the model already has,
//! so that it spends its budget on the rest (`docs/hooks.md`, "At a restore").
//!
//! - **After a compaction** the model has the client's summary. Claude Code runs the
//!   `SessionStart` hooks *before* it writes the compaction's boundary and summary to the
//!   transcript (its `compactConversation`; in the real transcripts the `SessionStart:compact`
//!   hook lines are timed before the boundary they follow), so there the restore cannot read
//!   it. A client that writes them first leaves them at the end of the transcript: a boundary
//!   imported by this very run, followed by nothing but its summary. Then the summary is the
//!   window.
//! - **On a resumed session** the client reloads the transcript from its last compaction
//!   boundary on (the whole of it when it was never compacted): that is the window.
//!
//! The window is left out of the build by the prompt-time mechanism ([`Exclusions::window`]),
//! and the files in play its summaries name are listed after those they do not name
//! ([`summaries`]).
//!
//! [`Exclusions::window`]: super::context::Exclusions::window

use super::context::Window;
use crate::records::SessionRecord;
use crate::store::StoredRecord;

/// What the model still has of the transcript logged as `log` when a `SessionStart` with
/// `source` runs: `boundary` is the transcript's last known compaction boundary, `fresh` the
/// last one this run imported, `stored` the records loaded. `None`: nothing of it (a
/// compaction whose summary the client has not written yet).
pub(crate) fn window(
    source: Option<&str>,
    log: String,
    boundary: Option<usize>,
    fresh: Option<usize>,
    stored: &[StoredRecord],
) -> Option<Window> {
    match source {
        Some("compact") => {
            let window = Window {
                log,
                from_line: fresh?,
            };
            // Only this compaction's own boundary: one followed by its summary alone. After an
            // older one, the records that follow were compacted away with the rest.
            stored
                .iter()
                .filter(|s| window.holds(s))
                .all(|s| is_summary(&s.record))
                .then_some(window)
        }
        Some("resume") => Some(Window {
            log,
            from_line: boundary.unwrap_or(0),
        }),
        _ => None,
    }
}

/// Whether a record is a client's summary of a compacted conversation (imported with an id
/// `summary-…`).
fn is_summary(record: &SessionRecord) -> bool {
    matches!(record, SessionRecord::Message(_))
        && record
            .common()
            .id
            .as_deref()
            .is_some_and(|id| id.starts_with("summary-"))
}

/// The text of the client's summaries among `records` (those in the window), or `None`.
pub(crate) fn summaries<'a>(records: impl Iterator<Item = &'a StoredRecord>) -> Option<String> {
    let texts: Vec<String> = records
        .filter(|s| is_summary(&s.record))
        .map(|s| s.record.search_text())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::tests::{cited, context_of, real, setup, stored_of, Setup};
    use super::super::{context, ingest, run, HookClient};

    /// A real session of the tuning half compacted once: its `compact_boundary` at line 158,
    /// the client's summary (`isCompactSummary`) right after it.
    const COMPACTED: &str = "claude-code/codemie-ai__codemie-code__session-624a4a58.jsonl";
    const BOUNDARY: usize = 158;

    /// The transcript's first `n` lines.
    fn head(n: usize) -> String {
        let text = std::fs::read_to_string(real(COMPACTED)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[BOUNDARY - 1].contains("\"compact_boundary\""));
        assert!(lines[BOUNDARY].contains("\"isCompactSummary\":true"));
        lines[..n].iter().map(|l| format!("{l}\n")).collect()
    }

    /// A Claude Code payload for `event` on the setup's transcript.
    fn payload(s: &Setup, event: &str, source: Option<&str>) -> Vec<u8> {
        let mut p = serde_json::json!({
            "hook_event_name": event, "session_id": "s1",
            "transcript_path": s.transcript, "cwd": s.workspace,
        });
        match source {
            Some(source) => p["source"] = source.into(),
            None => p["trigger"] = "auto".into(),
        }
        p.to_string().into_bytes()
    }

    /// The fact lines of the client's summary, as the store holds it.
    fn summary_lines(s: &Setup) -> HashSet<String> {
        context::window_lines(stored_of(s).iter().filter(|r| {
            r.record
                .common()
                .id
                .as_deref()
                .is_some_and(|id| id.starts_with("summary-"))
        }))
    }

    /// The restore's answer after a compaction at the tuning session's boundary: `told`, the
    /// boundary and the summary are written before `SessionStart` (a client that does so);
    /// else Claude Code's order (after it). The setup stays to read the store.
    fn restore_after_compaction(told: bool) -> (Setup, String) {
        let s = setup(COMPACTED);
        std::fs::write(&s.transcript, head(BOUNDARY - 1)).unwrap();
        let pre = payload(&s, "PreCompact", None);
        run(HookClient::ClaudeCode, &pre, &s.config).unwrap();
        std::fs::write(&s.transcript, head(BOUNDARY + usize::from(told))).unwrap();
        let start = payload(&s, "SessionStart", Some("compact"));
        let answer = run(HookClient::ClaudeCode, &start, &s.config).unwrap();
        let context = context_of(&answer, "SessionStart");
        (s, context)
    }

    /// The paths of the files in play section, in order.
    fn files_in_play(context: &str) -> Vec<String> {
        let at = context
            .find("## Files in play\n")
            .expect("a files in play section");
        context[at..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("- "))
            .map(|l| l[2..].split(": ").next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_summary_the_client_wrote_before_the_restore_is_not_repeated_and_its_files_come_last() {
        let (told, context) = restore_after_compaction(true);
        let summary = summary_lines(&told);
        assert!(summary.len() > 20, "{summary:?}");
        assert_eq!(context::repeated_lines(&context, &summary), 0, "{context}");
        let text: Vec<String> = summary.into_iter().collect();
        let text = text.join("\n");
        let files = files_in_play(&context);
        let named: Vec<bool> = files.iter().map(|f| text.contains(f.as_str())).collect();
        // The files the summary does not name first, then those it names.
        assert!(!named[0] && named.iter().any(|n| *n), "{files:?}");
        assert!(named.windows(2).all(|w| w[0] <= w[1]), "{files:?}");
        assert!(context.contains("then the 5 it names]"), "{context}");
        // The task stays: the summary does not hold its line.
        assert!(context.contains("## Task\n"), "{context}");

        // The canary, Claude Code's order: the restore cannot read the summary, repeats
        // lines of it and lists a file it names first.
        let (blind, context) = restore_after_compaction(false);
        assert!(summary_lines(&blind).is_empty());
        let repeated = context::repeated_lines(&context, &summary_lines(&told));
        assert!(repeated > 0, "{context}");
        assert!(text.contains(files_in_play(&context)[0].as_str()));
    }

    /// The compacted transcript up to 40 lines after its boundary, then `SessionStart` with
    /// `source`: the setup, the context, and the transcript lines it cites.
    fn start_after_40_lines(source: Option<&str>) -> (Setup, String, Vec<usize>) {
        let s = setup(COMPACTED);
        std::fs::write(&s.transcript, head(BOUNDARY + 40)).unwrap();
        let start = payload(&s, "SessionStart", source);
        let answer = run(HookClient::ClaudeCode, &start, &s.config).unwrap();
        let context = context_of(&answer, "SessionStart");
        let lines = cited(&context)
            .iter()
            .filter_map(|id| ingest::id_line(id))
            .collect();
        (s, context, lines)
    }

    #[test]
    fn a_restore_after_an_older_compaction_keeps_what_followed_it() {
        // No PreCompact ran; the transcript's one boundary is followed by 40 lines of work,
        // which this compaction (whose summary is not written yet) took from the model.
        let (_, _, lines) = start_after_40_lines(Some("compact"));
        assert!(lines.iter().any(|l| *l > BOUNDARY), "{lines:?}");
    }

    #[test]
    fn a_resumed_session_gets_only_what_it_no_longer_has() {
        // The client reloads the transcript from its last boundary on: the summary and the
        // 40 lines after it.
        let (s, context, lines) = start_after_40_lines(Some("resume"));
        assert!(!lines.is_empty(), "{context}");
        assert!(lines.iter().all(|l| *l < BOUNDARY), "{lines:?}");
        let stored = stored_of(&s);
        let in_window = |r: &&crate::store::StoredRecord| {
            r.record
                .common()
                .id
                .as_deref()
                .and_then(ingest::id_line)
                .is_some_and(|l| l >= BOUNDARY)
        };
        let window = context::window_lines(stored.iter().filter(in_window));
        assert_eq!(context::repeated_lines(&context, &window), 0, "{context}");
        // The canary: a restore that leaves nothing out repeats lines the model has.
        let all = context::Exclusions {
            restore: true,
            ..context::Exclusions::default()
        };
        let built = context::build(
            stored,
            "go on",
            &all,
            context::Shape {
                files_in_play: true,
                ..context::Shape::budget(2500)
            },
        )
        .unwrap()
        .unwrap();
        assert!(context::repeated_lines(&built.context, &window) > 0);
    }
}
