//! The files in play: an index of the files the session read, changed or ran a command on,
//! the most recently touched first, one line each with what was done to it and where.
//!
//! After a compaction the model has lost *where* it was working: which files, which lines.
//! The optimizer's fragments show the content of a few of them; the index names all the
//! recent ones for a few tokens each, so the model can go back to them (read the file again,
//! ask `build_context` about it) instead of searching anew. It is built from every record of
//! the session, kept or not (a superseded read still says the file was read), and rendered
//! as its own section right after what the session is doing now and its plan (see
//! `docs/scoring.md`, "Files in play"). A build asks for it with
//! [`BuildConfig::files_in_play`](crate::optimizer::BuildConfig::files_in_play); the hook's
//! restore after a compaction does. When the model already has text that names some of them
//! ([`BuildConfig::in_window`](crate::optimizer::BuildConfig::in_window): the client's own
//! summary), the files it does not name come first and those it names after, so a short index
//! spends its lines on what the model lacks. Files of dependencies (`node_modules/`,
//! `site-packages/`, …) come after the project's own.

use std::collections::BTreeMap;

use crate::optimizer::condense;
use crate::optimizer::extract::paths;
use crate::optimizer::fragment::Unit;
use crate::records::{Kind, Role};
use crate::tokenizer::Tokenizer;

/// How many files the index names at most.
pub(crate) const MAX_FILES: usize = 15;

/// The share of the budget the index may take at most.
pub(crate) const BUDGET_SHARE: f64 = 0.12;

/// The section's title (its heading is `## {TITLE}`).
pub(crate) const TITLE: &str = "Files in play";

/// What the session did to one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Touches {
    /// The path as the session last wrote it.
    path: String,
    /// Reads of it (file records).
    reads: usize,
    /// Changes to it (diff records).
    changes: usize,
    /// Commands that named it (tool outputs whose command line holds its path).
    commands: usize,
    /// The user's messages that named it (`@path` mentions, paths in a prompt).
    mentions: usize,
    /// The lines its latest change covers (new side), when its diff has hunk headers.
    changed_lines: Option<(usize, usize)>,
    /// The time of its latest touch (Unix ms), when the records have times.
    last_time: Option<i64>,
    /// The latest touching unit (for ties without times: its kind-local index).
    last_unit: usize,
}

/// The index of the files in play among `units`, rendered as its section (heading, source
/// tag and one line per file), within [`BUDGET_SHARE`] of `budget`; `None` when the session
/// touched no file. The files `in_window` names (text the model already has) come after the
/// others.
pub(crate) fn index(
    units: &[Unit],
    budget: usize,
    tokenizer: Tokenizer,
    in_window: Option<&str>,
) -> Option<String> {
    let mut files = touched(units);
    if files.is_empty() {
        return None;
    }
    // Stable: each group stays latest first. A dependency's file (under `node_modules/`,
    // `site-packages/`, …) is looked up, seldom edited: the project's files come first.
    let library = |t: &Touches| condense::is_library(&t.path);
    files.sort_by_key(library);
    let libraries = files.iter().filter(|t| library(t)).count();
    let known = in_window.map_or(0, |text| {
        files.sort_by_key(|t| (library(t), names(text, &t.path)));
        files.iter().filter(|t| names(text, &t.path)).count()
    });
    let cap = (BUDGET_SHARE * budget as f64) as usize;
    let count = match (files.len(), known) {
        (1, 0) => "1 file".to_string(),
        (n, 0) => format!("{n} files, latest first"),
        (n, k) if k == n => format!("{n} files, latest first, all named in your context already"),
        (n, k) => format!(
            "{n} files, latest first: the {} your context does not name, then the {k} it names",
            n - k
        ),
    };
    let last = match libraries {
        0 => "",
        n if n == files.len() => "",
        _ => ", dependencies' files last",
    };
    let mut out = format!(
        "## {TITLE}\n[source: the session's reads, changes, commands and prompts | {count}{last}]\n"
    );
    let mut used = tokenizer.count(&out);
    let files = &files[..files.len().min(MAX_FILES)];
    // The latest file gets its line; each next one while the names of the files after it
    // still fit in one line of names: the older files are named, if not described.
    let mut named = 0;
    for (i, t) in files.iter().enumerate() {
        let line = line(t);
        let tokens = tokenizer.count(&line);
        let rest = match i {
            0 => 0,
            _ => names_line(&files[i + 1..]).map_or(0, |l| tokenizer.count(&l)),
        };
        if used + tokens + rest > cap {
            break;
        }
        used += tokens;
        out.push_str(&line);
        named += 1;
    }
    // The rest by name, as many as fit.
    let mut rest = &files[named..];
    while let Some(names) = names_line(rest) {
        if used + tokenizer.count(&names) <= cap {
            out.push_str(&names);
            named += rest.len();
            break;
        }
        rest = &rest[..rest.len() - 1];
    }
    (named > 0).then_some(out)
}

/// The line naming `files` without saying what was done to them: `- also: a.ts, b.ts`;
/// `None` for none.
fn names_line(files: &[Touches]) -> Option<String> {
    (!files.is_empty()).then(|| {
        let names: Vec<&str> = files.iter().map(|t| t.path.as_str()).collect();
        format!("- also: {}\n", names.join(", "))
    })
}

/// One file's line: `- path: changed 2× (lines 12–40), read 3×, in 1 command`.
fn line(t: &Touches) -> String {
    let mut parts = Vec::new();
    if t.changes > 0 {
        let mut part = times("changed", t.changes);
        if let Some((from, to)) = t.changed_lines {
            part.push_str(&if from == to {
                format!(" (line {from})")
            } else {
                format!(" (lines {from}–{to})")
            });
        }
        parts.push(part);
    }
    if t.reads > 0 {
        parts.push(times("read", t.reads));
    }
    if t.commands > 0 {
        parts.push(if t.commands == 1 {
            "in 1 command".to_string()
        } else {
            format!("in {} commands", t.commands)
        });
    }
    if t.mentions > 0 {
        parts.push(times("named by the user", t.mentions));
    }
    format!("- {}: {}\n", t.path, parts.join(", "))
}

fn times(what: &str, n: usize) -> String {
    if n == 1 {
        what.to_string()
    } else {
        format!("{what} {n}×")
    }
}

/// Every file touched, the most recently touched first (then the most touched, then by path).
fn touched(units: &[Unit]) -> Vec<Touches> {
    let mut by_key: BTreeMap<String, Touches> = BTreeMap::new();
    let mut note = |path: &str, unit: usize, what: &dyn Fn(&mut Touches)| {
        let path = paths::normalize_path(path);
        let t = by_key.entry(path.to_lowercase()).or_default();
        let u = &units[unit];
        let later = match (u.time, t.last_time) {
            (Some(a), Some(b)) => a >= b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => t.path.is_empty() || u.index >= units[t.last_unit].index,
        };
        if later || t.path.is_empty() {
            t.last_time = u.time.or(t.last_time);
            t.last_unit = unit;
            t.path = path.into_owned();
        }
        what(t);
    };
    let mut mentions: Vec<(String, usize)> = Vec::new();
    for (i, u) in units.iter().enumerate() {
        match (u.kind, &u.path) {
            (Kind::File, Some(path)) => note(path, i, &|t| t.reads += 1),
            (Kind::Diff, Some(path)) => {
                let lines = changed_lines(&u.text);
                let time = u.time;
                note(path, i, &|t| {
                    t.changes += 1;
                    if lines.is_some() && (t.last_time == time || t.changed_lines.is_none()) {
                        t.changed_lines = lines;
                    }
                })
            }
            (Kind::ToolOutput, _) => {
                // What the call names: its command line, or its one-word arguments (a
                // description, a subagent's prompt or a plan's items name no file it touched);
                // a record without arguments, its tool.
                let Some(key) = u.invocation.as_deref().or(u.tool.as_deref()) else {
                    continue;
                };
                let mut named: Vec<String> = paths::paths(key)
                    .into_iter()
                    .filter(|p| is_file_like(p))
                    .map(|p| p.into_owned())
                    .collect();
                named.sort_unstable();
                named.dedup();
                for path in named {
                    note(&path, i, &|t| t.commands += 1);
                }
            }
            (Kind::Message, _) if u.role == Some(Role::User) => {
                mentions.extend(mentioned(&u.text).into_iter().map(|p| (p, i)));
            }
            _ => {}
        }
    }
    // A file only the user named joins the index (after the files the session touched); a
    // file the session touched is listed for what it did to it.
    for (path, unit) in mentions {
        let path = paths::normalize_path(&path).into_owned();
        let t = by_key.entry(path.to_lowercase()).or_default();
        if t.reads + t.changes + t.commands > 0 {
            continue;
        }
        t.path = path;
        t.mentions += 1;
        t.last_time = units[unit].time.max(t.last_time);
        t.last_unit = unit;
    }
    merge_absolute(&mut by_key);
    let mut files: Vec<Touches> = by_key.into_values().collect();
    // The files the session touched come first; those only the user named after them.
    let only_named = |t: &Touches| t.reads + t.changes + t.commands == 0;
    files.sort_by(|a, b| {
        only_named(a)
            .cmp(&only_named(b))
            .then_with(|| b.last_time.cmp(&a.last_time))
            .then_with(|| {
                let all = |t: &Touches| t.reads + t.changes + t.commands + t.mentions;
                all(b).cmp(&all(a))
            })
            .then_with(|| a.path.cmp(&b.path))
    });
    files
}

/// The files a user's message names, each once: its `@path` mentions (Claude Code, Gemini
/// CLI and Codex CLI attach a file named so in a prompt), the `@` dropped, and its paths with
/// a folder, when they have a file's extension. A bare name is left out: in a prompt,
/// `Next.js` or `Node.js` is more often a product than a file.
fn mentioned(text: &str) -> Vec<String> {
    let mut named: Vec<String> = paths::marked_paths(text)
        .filter(|(p, mention)| *mention || p.contains('/'))
        .map(|(p, _)| p.into_owned())
        .filter(|p| is_file_like(p))
        .collect();
    named.sort_unstable();
    named.dedup();
    named
}

/// Whether `text` names the file at `path`: the path itself, or a tail of it that keeps a
/// folder (`src/a.rs` of `/w/repo/src/a.rs`), not followed by more of a name (`src/a.rs` does
/// not name `src/a.rsx`).
fn names(text: &str, path: &str) -> bool {
    let tails = std::iter::once(path).chain(
        path.match_indices('/')
            .map(|(i, _)| &path[i + 1..])
            .filter(|tail| tail.contains('/')),
    );
    for tail in tails.filter(|t| !t.is_empty()) {
        let mut from = 0;
        while let Some(at) = text[from..].find(tail) {
            let end = from + at + tail.len();
            let next = text[end..].chars().next();
            if !next.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                return true;
            }
            from = end;
        }
    }
    false
}

/// Whether a path a command names is a file worth listing: its last segment has an
/// extension (`src/a.rs`, `.env.local`), which leaves out directories (`app/api`, a
/// `workdir`) and devices (`/dev/null`).
fn is_file_like(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    !path.starts_with("/dev/") && name.trim_start_matches('.').contains('.')
}

/// Merges each absolute path into the one relative path it ends with (on a `/`), when only
/// one does: a session names the same file both ways (`/w/repo/src/a.rs`, `src/a.rs`). The
/// line keeps the relative name, the one the project's own tools use (and shorter), whichever
/// was written last.
fn merge_absolute(by_key: &mut BTreeMap<String, Touches>) {
    let absolute: Vec<String> = by_key
        .keys()
        .filter(|k| k.starts_with('/'))
        .cloned()
        .collect();
    for abs in absolute {
        let mut relative = by_key
            .keys()
            .filter(|r| !r.starts_with('/') && abs.ends_with(&format!("/{r}")));
        let (Some(rel), None) = (relative.next().cloned(), relative.next()) else {
            continue;
        };
        let Some(a) = by_key.remove(&abs) else {
            continue;
        };
        let Some(r) = by_key.get_mut(&rel) else {
            continue;
        };
        let a_later = match (a.last_time, r.last_time) {
            (Some(x), Some(y)) => x > y,
            (Some(_), None) => true,
            _ => false,
        };
        if a_later {
            r.last_time = a.last_time;
            r.last_unit = a.last_unit;
            r.changed_lines = a.changed_lines.or(r.changed_lines);
        }
        r.reads += a.reads;
        r.changes += a.changes;
        r.commands += a.commands;
    }
}

/// The lines a unified diff's hunks cover on the new side: from the first hunk's start to the
/// last hunk's end.
fn changed_lines(diff: &str) -> Option<(usize, usize)> {
    let mut range: Option<(usize, usize)> = None;
    for header in diff.lines().filter(|l| l.starts_with("@@ ")) {
        let Some(new) = header.split(' ').find(|p| p.starts_with('+')) else {
            continue;
        };
        let mut parts = new[1..].splitn(2, ',');
        let Some(start) = parts.next().and_then(|s| s.parse::<usize>().ok()) else {
            continue;
        };
        let len = parts
            .next()
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(1);
        // No lines, or more than a file can hold (a hostile header): no range.
        let Some(end) = (len > 0).then(|| start.checked_add(len - 1)).flatten() else {
            continue;
        };
        range = Some(match range {
            Some((a, b)) => (a.min(start), b.max(end)),
            None => (start, end),
        });
    }
    range
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::records::Records;

    fn units(json: &str) -> Vec<Unit> {
        let records: Records = serde_json::from_str(json).unwrap();
        normalize(&records, None).unwrap().0
    }

    const SESSION: &str = r#"{
        "task": "fix the parser",
        "files": [
            {"id": "r1", "timestamp": "2026-01-01T10:00:00Z", "path": "src/parse.rs", "content": "fn parse() {}\n"},
            {"id": "r2", "timestamp": "2026-01-01T10:05:00Z", "path": "src/lex.rs", "content": "fn lex() {}\n"},
            {"id": "r3", "timestamp": "2026-01-01T10:07:00Z", "path": "./src/parse.rs", "content": "fn parse() { todo!() }\n"}
        ],
        "diffs": [
            {"id": "d1", "timestamp": "2026-01-01T10:08:00Z", "path": "src/parse.rs",
             "diff": "--- a/src/parse.rs\n+++ b/src/parse.rs\n@@ -1,1 +1,3 @@\n-fn parse() {}\n+fn parse() {\n+    lex();\n+}\n@@ -20,2 +22,4 @@\n x\n"}
        ],
        "toolOutputs": [
            {"id": "t1", "timestamp": "2026-01-01T10:09:00Z", "tool": "bash", "args": {"command": "cargo test --test parse_tests tests/parse_tests.rs"}, "output": "ok"},
            {"id": "t2", "timestamp": "2026-01-01T10:01:00Z", "tool": "bash", "args": {"command": "ls"}, "output": "src"}
        ]
    }"#;

    #[test]
    fn files_come_latest_first_with_what_was_done_and_where() {
        let index = index(&units(SESSION), 4000, Tokenizer::default(), None).unwrap();
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 3 files, latest first]
        - tests/parse_tests.rs: in 1 command
        - src/parse.rs: changed (lines 1–25), read 2×
        - src/lex.rs: read
        ");
    }

    #[test]
    fn the_files_a_line_each_leaves_no_room_for_are_named_after_them() {
        let mut files = Vec::new();
        for n in 0..12 {
            files.push(format!(
                r#"{{"id": "f{n}", "timestamp": "2026-01-01T10:{n:02}:00Z", "path": "src/m{n}.rs", "content": "x"}}"#
            ));
        }
        let json = format!(r#"{{"task": "t", "files": [{}]}}"#, files.join(","));
        let index = index(&units(&json), 900, Tokenizer::default(), None).unwrap();
        // Before, the index stopped at the sixth file.
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 12 files, latest first]
        - src/m11.rs: read
        - src/m10.rs: read
        - src/m9.rs: read
        - src/m8.rs: read
        - src/m7.rs: read
        - src/m6.rs: read
        - also: src/m5.rs, src/m4.rs, src/m3.rs, src/m2.rs, src/m1.rs, src/m0.rs
        ");
    }

    #[test]
    fn the_index_stays_within_its_share_of_the_budget() {
        let mut files = Vec::new();
        for n in 0..40 {
            files.push(format!(
                r#"{{"id": "f{n}", "timestamp": "2026-01-01T10:{n:02}:00Z", "path": "src/module_{n}/file_{n}.rs", "content": "x"}}"#
            ));
        }
        let json = format!(r#"{{"task": "t", "files": [{}]}}"#, files.join(","));
        let units = units(&json);
        for budget in [300, 1000, 2500, 8000] {
            let tokenizer = Tokenizer::default();
            let Some(index) = index(&units, budget, tokenizer, None) else {
                assert!(budget < 400, "a budget of {budget} names no file");
                continue;
            };
            assert!(tokenizer.count(&index) as f64 <= BUDGET_SHARE * budget as f64);
            let lines = index.lines().filter(|l| l.starts_with("- ")).count();
            assert!((1..=MAX_FILES).contains(&lines), "{budget}: {lines}");
            let files = index.matches("src/module_").count();
            assert!((lines..=MAX_FILES).contains(&files), "{budget}: {files}");
            // The latest file is named first.
            assert!(
                index.contains("- src/module_39/file_39.rs: read\n"),
                "{index}"
            );
        }
    }

    #[test]
    fn directories_devices_and_a_file_named_two_ways_are_one_line_each_or_none_by_its_relative_name(
    ) {
        let units = units(
            r#"{"task": "t",
            "files": [{"id": "r1", "timestamp": "2026-01-01T10:00:00Z", "path": "docs/design.md", "content": "x"}],
            "toolOutputs": [
                {"id": "t1", "timestamp": "2026-01-01T10:01:00Z", "tool": "bash", "args": {"command": "wc -l /w/repo/docs/design.md > /dev/null", "workdir": "/w/repo/app"}, "output": "1"},
                {"id": "t2", "timestamp": "2026-01-01T10:02:00Z", "tool": "bash", "args": {"command": "ls app/api"}, "output": "x"}
            ]}"#,
        );
        let index = index(&units, 4000, Tokenizer::default(), None).unwrap();
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 1 file]
        - docs/design.md: read, in 1 command
        ");
    }

    #[test]
    fn files_the_window_already_names_come_after_those_it_does_not() {
        // The client's summary names src/parse.rs (as a tail of no other path) and the test
        // file by a tail of its path; src/lex.rs only as part of a longer name.
        let summary = "Files: `src/parse.rs` was fixed; ran parse_tests/../tests/parse_tests.rs; \
                       see src/lex.rsx";
        let after = index(&units(SESSION), 4000, Tokenizer::default(), Some(summary)).unwrap();
        insta::assert_snapshot!(after, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 3 files, latest first: the 1 your context does not name, then the 2 it names]
        - src/lex.rs: read
        - tests/parse_tests.rs: in 1 command
        - src/parse.rs: changed (lines 1–25), read 2×
        ");
        // Canary: without the window the order is by recency alone.
        let plain = index(&units(SESSION), 4000, Tokenizer::default(), None).unwrap();
        assert!(plain.find("tests/parse_tests.rs") < plain.find("src/lex.rs"));
        assert!(names("/w/repo/src/a.rs", "src/a.rs"));
        assert!(names("in repo/src/a.rs:12", "/w/repo/src/a.rs"));
        assert!(!names("src/a.rsx and a.rs", "/w/repo/src/a.rs"));
    }

    #[test]
    fn a_dependencys_files_come_after_the_projects() {
        let units = units(
            r#"{"task": "t", "files": [
                {"id": "r1", "timestamp": "2026-01-01T10:00:00Z", "path": "src/tree.tsx", "content": "x"},
                {"id": "r2", "timestamp": "2026-01-01T10:01:00Z", "path": "node_modules/@ark-ui/react/tree-view.d.ts", "content": "y"},
                {"id": "r3", "timestamp": "2026-01-01T10:02:00Z", "path": "src/app.tsx", "content": "z"}
            ]}"#,
        );
        let index = index(&units, 4000, Tokenizer::default(), None).unwrap();
        // r2 was read after r1: only its place in a dependency puts it last.
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 3 files, latest first, dependencies' files last]
        - src/app.tsx: read
        - src/tree.tsx: read
        - node_modules/@ark-ui/react/tree-view.d.ts: read
        ");
    }

    #[test]
    fn a_file_only_the_user_names_is_in_play_after_those_touched_and_one_the_agent_names_is_not() {
        let units = units(
            r#"{"task": "t",
            "messages": [
                {"role": "user", "timestamp": "2026-01-01T10:00:00Z", "text": "@docs/PLAN.md and @AGENTS.md: review them against src/sync.ts and src/sync.ts in Next.js, log in as qa@site.cc"},
                {"role": "assistant", "timestamp": "2026-01-01T10:01:00Z", "text": "I will also look at src/other.ts"}
            ],
            "files": [{"id": "r1", "timestamp": "2026-01-01T10:02:00Z", "path": "src/sync.ts", "content": "x"}]}"#,
        );
        let index = index(&units, 4000, Tokenizer::default(), None).unwrap();
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 3 files, latest first]
        - src/sync.ts: read
        - AGENTS.md: named by the user
        - docs/PLAN.md: named by the user
        ");
    }

    #[test]
    fn a_call_names_the_files_of_its_command_line_or_one_word_arguments_not_of_its_free_text() {
        let units = units(
            r#"{"task": "t", "toolOutputs": [
                {"id": "t1", "timestamp": "2026-01-01T10:00:00Z", "tool": "Bash",
                 "args": {"command": "npm run dev", "description": "Start the Next.js server"}, "output": "ready"},
                {"id": "t2", "timestamp": "2026-01-01T10:01:00Z", "tool": "Bash",
                 "args": {"command": "cat src/app.ts", "description": "Show app.ts"}, "output": "x"},
                {"id": "t3", "timestamp": "2026-01-01T10:02:00Z", "tool": "shell",
                 "args": {"command": ["bash", "-lc", "wc -l README.md"]}, "output": "3"},
                {"id": "t4", "timestamp": "2026-01-01T10:03:00Z", "tool": "Grep",
                 "args": {"pattern": "x", "path": "src/lib.ts"}, "output": "1:x"},
                {"id": "t5", "timestamp": "2026-01-01T10:04:00Z", "tool": "TodoWrite",
                 "args": {"todos": [{"content": "Set up the Next.js app", "status": "pending"}]}, "output": "ok"}
            ]}"#,
        );
        let index = index(&units, 4000, Tokenizer::default(), None).unwrap();
        insta::assert_snapshot!(index, @r"
        ## Files in play
        [source: the session's reads, changes, commands and prompts | 3 files, latest first]
        - src/lib.ts: in 1 command
        - README.md: in 1 command
        - src/app.ts: in 1 command
        ");
    }

    #[test]
    fn a_session_without_files_has_no_index() {
        let units = units(r#"{"task": "t", "messages": [{"role": "user", "text": "hi"}]}"#);
        assert_eq!(index(&units, 4000, Tokenizer::default(), None), None);
    }

    #[test]
    fn hunk_headers_give_the_changed_lines() {
        assert_eq!(changed_lines("@@ -1,3 +4,2 @@\n"), Some((4, 5)));
        assert_eq!(
            changed_lines("@@ -1 +7 @@\n@@ -9,0 +12,3 @@\n"),
            Some((7, 14))
        );
        assert_eq!(changed_lines("@@ -1,3 +0,0 @@\n"), None);
        assert_eq!(changed_lines("no hunks"), None);
        assert_eq!(changed_lines("@@ -1 +18446744073709551615,2 @@\n"), None);
    }
}
