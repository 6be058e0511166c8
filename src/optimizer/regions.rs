//! Where in its files the session is looking: the lines its searches hit and the lines the
//! agent quotes. A file read whole is cut into many chunks; which of them matters next is
//! told less by likeness to the task than by where the session was looking — the line a
//! `grep -n` / `rg -n` printed, the code the agent copied into its own reasoning.
//!
//! A chunk of a file *was searched* when it shows, trimmed, one of those lines (at least
//! [`MIN_LINE_CHARS`] characters, so `}` or `return;` does not count): a search hit
//! `path:line:text` (or `line:text` from a command that names one file) of a live output, of
//! the same file; or a line of a live message of the agent (the code it is reasoning about,
//! quoted — of any file that shows it). The working set and the files in play rank a file's chunks by this first, then by
//! score (see `docs/scoring.md`, "Where the session is looking"). The lines its changes
//! touched are not counted: the change itself is shown (the current change leads), and the
//! region it changed is done — on the interactive benchmark's tuning half, counting them
//! kept the code edited next no more often, and less often on the held-out half.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::extract::paths;
use crate::optimizer::fragment::{Fragment, Unit};
use crate::records::{Kind, Role};

/// The least length of a line (trimmed) that places a search hit or a change in a chunk.
pub(crate) const MIN_LINE_CHARS: usize = 12;

/// Per fragment: how many of the lines the session's searches hit in its file, or its agent
/// quoted, it shows (0 for fragments that are not of a file).
pub(crate) fn searched(
    units: &[Unit],
    fragments: &[Fragment],
    analyses: &[UnitAnalysis],
) -> Vec<usize> {
    let files: Vec<(usize, String)> = units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == Kind::File)
        .filter_map(|(i, u)| Some((i, key(u.path.as_deref()?))))
        .collect();
    let mut out = vec![0; fragments.len()];
    if files.is_empty() {
        return out;
    }
    // The lines of each file path the session's searches hit.
    let mut lines: HashMap<&str, HashSet<&str>> = HashMap::new();
    let known: Vec<&str> = files.iter().map(|(_, k)| k.as_str()).collect();
    for (i, u) in units.iter().enumerate() {
        if !analyses[i].is_live() || u.kind != Kind::ToolOutput {
            continue;
        }
        let single = u.tool_key.as_deref().and_then(|k| only_path(&known, k));
        for (path, line) in u.text.lines().filter_map(search_hit) {
            let file = match path {
                Some(p) => same_file(&known, &key(p)),
                None => single,
            };
            if let (Some(file), Some(line)) = (file, place_line(line)) {
                lines.entry(file).or_default().insert(line);
            }
        }
    }
    // The lines the agent quoted in its own messages: the code it is reasoning about.
    let quoted: HashSet<&str> = units
        .iter()
        .enumerate()
        .filter(|(i, u)| analyses[*i].is_live() && u.role == Some(Role::Assistant))
        .flat_map(|(_, u)| u.text.lines().filter_map(place_line))
        .collect();
    if lines.is_empty() && quoted.is_empty() {
        return out;
    }
    let none = HashSet::new();
    for (i, k) in &files {
        let wanted = lines.get(k.as_str()).unwrap_or(&none);
        for fi in units[*i].fragments.clone() {
            let text = fragments[fi].text(units);
            out[fi] = text
                .lines()
                .filter_map(place_line)
                .collect::<HashSet<&str>>()
                .iter()
                .filter(|l| wanted.contains(*l) || quoted.contains(*l))
                .count();
        }
    }
    out
}

/// Where in its files the session was looking, per fragment: what ranks a file's chunks
/// before their scores do.
pub(crate) struct Places {
    /// Lines the session's searches hit or its agent quoted, shown ([`searched`]).
    pub(crate) searched: Vec<usize>,
    /// Lines the file's latest change wrote, shown ([`written`]).
    pub(crate) written: Vec<usize>,
}

impl Places {
    /// The places of every fragment.
    pub(crate) fn of(units: &[Unit], fragments: &[Fragment], analyses: &[UnitAnalysis]) -> Places {
        Places {
            searched: searched(units, fragments, analyses),
            written: written(units, fragments, analyses),
        }
    }

    /// How a file's chunk ranks by place (higher first): the more searched lines it shows,
    /// then one showing none of what the latest change wrote (the change shows that region).
    pub(crate) fn rank(&self, fi: usize) -> (usize, bool) {
        (self.searched[fi], self.written[fi] == 0)
    }
}

/// Per fragment of a file: how many of the lines the file's latest live change wrote (its
/// added lines) it shows — a region the session has just finished, which the change
/// itself shows (0 for fragments that are not of a file).
pub(crate) fn written(
    units: &[Unit],
    fragments: &[Fragment],
    analyses: &[UnitAnalysis],
) -> Vec<usize> {
    let mut out = vec![0; fragments.len()];
    let mut latest: BTreeMap<String, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        if let (Kind::Diff, Some(path), true) = (u.kind, &u.path, analyses[i].is_live()) {
            latest.insert(key(path), i);
        }
    }
    if latest.is_empty() {
        return out;
    }
    let added: BTreeMap<&str, HashSet<&str>> = latest
        .iter()
        .map(|(k, &i)| {
            let lines = units[i]
                .text
                .lines()
                .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
                .filter_map(|l| place_line(&l[1..]))
                .collect();
            (k.as_str(), lines)
        })
        .collect();
    let known: Vec<&str> = added.keys().copied().collect();
    for u in units {
        let (Kind::File, Some(path)) = (u.kind, &u.path) else {
            continue;
        };
        let Some(lines) = same_file(&known, &key(path)).and_then(|k| added.get(k)) else {
            continue;
        };
        for fi in u.fragments.clone() {
            out[fi] = fragments[fi]
                .text(units)
                .lines()
                .filter_map(place_line)
                .filter(|l| lines.contains(l))
                .count();
        }
    }
    out
}

/// A path as compared: normalized, lowercase.
fn key(path: &str) -> String {
    paths::normalize_path(path).to_lowercase()
}

/// The text after a line number and a colon (`42:text`).
fn numbered(s: &str) -> Option<&str> {
    let (n, text) = s.split_once(':')?;
    (!n.is_empty() && n.len() <= 7 && n.bytes().all(|b| b.is_ascii_digit())).then_some(text)
}

/// The path of `known` that `path` names: the same, else the first (in `known`'s order, which
/// callers keep deterministic) where one ends on the other at a `/`.
fn same_file<'a>(known: &[&'a str], path: &str) -> Option<&'a str> {
    known.iter().copied().find(|k| *k == path).or_else(|| {
        known
            .iter()
            .copied()
            .find(|k| ends_on_segment(k, path) || ends_on_segment(path, k))
    })
}

/// The one known file a command line names, when it names exactly one.
fn only_path<'a>(known: &[&'a str], command: &str) -> Option<&'a str> {
    let mut named = paths::paths(command)
        .into_iter()
        .filter_map(|p| same_file(known, &key(&p)));
    let first = named.next()?;
    named.all(|p| p == first).then_some(first)
}

/// Whether `long` ends with `short` and a `/` comes right before it.
pub(crate) fn ends_on_segment(long: &str, short: &str) -> bool {
    long.len() > short.len()
        && long.ends_with(short)
        && long.as_bytes()[long.len() - short.len() - 1] == b'/'
}

/// A line as it places a region: trimmed, long enough to be telling.
fn place_line(line: &str) -> Option<&str> {
    let line = line.trim();
    (line.chars().count() >= MIN_LINE_CHARS).then_some(line)
}

/// A search hit line: `path:N:text` (`grep -n`, `rg -n` over several files), or `N:text`
/// (over one file); the path when it has one, and the text.
fn search_hit(line: &str) -> Option<(Option<&str>, &str)> {
    if let Some(text) = numbered(line) {
        return Some((None, text));
    }
    // The path ends at the first `:N:`.
    let mut from = 0;
    while let Some(at) = line[from..].find(':') {
        let at = from + at;
        if at > 0 {
            if let Some(text) = numbered(&line[at + 1..]) {
                let path = &line[..at];
                return (!path.contains(char::is_whitespace)).then_some((Some(path), text));
            }
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::optimizer::{analysis, dedupe, extract, normalize, supersede};
    use crate::records::{Common, Records};

    /// A record's common fields: its id, and a time `s` seconds into the session.
    fn at(id: &str, s: u32) -> Common {
        Common {
            id: Some(id.into()),
            timestamp: Some(format!("2026-02-03T05:00:{s:02}Z")),
            ..Common::default()
        }
    }

    /// A function of `lines` lines, with a blank line after it.
    pub(crate) fn block(name: &str, lines: usize) -> String {
        std::iter::once(format!("fn {name}() {{\n"))
            .chain((0..lines).map(|i| format!("    let step_{i} = {name}_part({i});\n")))
            .chain(std::iter::once("}\n\n".to_string()))
            .collect()
    }

    /// Three functions (`block`s), as the file stands after the change to gamma's step 7
    /// (the view shows the line written), with that change.
    pub(crate) fn gamma_changed(at_second: u32) -> (String, crate::records::DiffRecord) {
        let view = ["alpha", "beta", "gamma"]
            .map(|n| block(n, 20))
            .concat()
            .replace("gamma_part(7)", "gamma_part(8)");
        let diff = crate::records::DiffRecord {
            common: at("d1", at_second),
            path: "src/lib.rs".into(),
            diff: "@@ -50,1 +50,1 @@\n-    let step_7 = gamma_part(7);\n+    let step_7 = gamma_part(8);\n".into(),
        };
        (view, diff)
    }

    /// `records` normalized and analysed: units, fragments and their analyses.
    fn analysed(records: &Records) -> (Vec<Unit>, Vec<Fragment>, Vec<UnitAnalysis>) {
        let (units, fragments) = normalize::normalize(records, None).unwrap();
        let mut deduped = dedupe::dedupe(&units, 1);
        let outcomes = extract::outcomes(&units, 1);
        supersede::supersede(&units, &outcomes, &mut deduped);
        let analyses = analysis::analyse(&units, deduped, &outcomes);
        (units, fragments, analyses)
    }

    /// The file chunk that shows `line`.
    fn chunk_showing(units: &[Unit], fragments: &[Fragment], line: &str) -> usize {
        fragments
            .iter()
            .position(|f| units[f.unit].kind == Kind::File && f.text(units).contains(line))
            .unwrap()
    }

    #[test]
    fn a_path_names_the_same_file_before_one_it_ends_on() {
        let path = "packages/cli/src/index.ts";
        for known in [[path, "src/index.ts"], ["src/index.ts", path]] {
            assert_eq!(same_file(&known, path), Some(path));
        }
        assert_eq!(same_file(&["src/index.ts"], path), Some("src/index.ts"));
        assert_eq!(same_file(&["lib/index.ts"], path), None);
    }

    #[test]
    fn search_hits_are_split_into_path_and_text() {
        assert_eq!(
            search_hit("src/chat/index.ts:130:  // Ollama API: https://x"),
            Some((Some("src/chat/index.ts"), "  // Ollama API: https://x"))
        );
        assert_eq!(search_hit("42:fn main() {"), Some((None, "fn main() {")));
        assert_eq!(
            search_hit("C:/x.rs:7:let a = 1;"),
            Some((Some("C:/x.rs"), "let a = 1;"))
        );
        assert_eq!(search_hit("error: expected `;`, found `}`"), None);
        assert_eq!(search_hit("at 10:30:00 it failed"), None);
    }

    #[test]
    fn the_chunk_a_search_hit_shows_was_searched_and_others_not() {
        use crate::records::{DiffRecord, FileRecord, ToolOutput};
        // A file of three far-apart functions, read whole.
        let content = ["alpha", "beta", "gamma"].map(|n| block(n, 20)).concat();
        let records = Records {
            task: Some("Tidy up.".into()),
            files: vec![FileRecord {
                common: at("f1", 0),
                path: "/repo/src/lib.rs".into(),
                content,
            }],
            tool_outputs: vec![ToolOutput {
                common: at("o1", 5),
                tool: "rg -n beta_part src".into(),
                args: None,
                output: "src/lib.rs:25:    let step_3 = beta_part(3);\n".into(),
                exit_code: Some(0),
                cwd: None,
            }],
            diffs: vec![DiffRecord {
                common: at("d1", 9),
                path: "src/lib.rs".into(),
                diff: "@@ -50,1 +50,1 @@\n-    let step_7 = gamma_part(7);\n+    let step_7 = gamma_part(8);\n".into(),
            }],
            ..Records::default()
        };
        let (units, fragments, analyses) = analysed(&records);
        let worked = searched(&units, &fragments, &analyses);
        // The file chunk showing `line`, and its count.
        let of = |line: &str| {
            let fi = chunk_showing(&units, &fragments, line);
            (fi, worked[fi])
        };
        let (alpha, beta, gamma) = (of("alpha_part(3)"), of("beta_part(3)"), of("gamma_part(7)"));
        assert!(alpha.0 != beta.0 && beta.0 != gamma.0, "three chunks");
        // The change to gamma does not count: the diff itself shows it.
        assert_eq!((alpha.1, beta.1, gamma.1), (0, 1, 0));
    }

    #[test]
    fn the_chunk_showing_what_the_latest_change_wrote_is_counted() {
        use crate::records::FileRecord;
        // The file as it stands after the change to gamma (its view shows the new line).
        let (content, diff) = gamma_changed(5);
        let records = Records {
            task: Some("Tidy up.".into()),
            diffs: vec![diff],
            files: vec![FileRecord {
                common: at("f1", 9),
                path: "/repo/src/lib.rs".into(),
                content,
            }],
            ..Records::default()
        };
        let (units, fragments, analyses) = analysed(&records);
        let done = written(&units, &fragments, &analyses);
        let of = |line: &str| done[chunk_showing(&units, &fragments, line)];
        assert_eq!((of("alpha_part(3)"), of("gamma_part(8)")), (0, 1));
        // The diff's own fragments are not a file's.
        let diff_counts: Vec<usize> = fragments
            .iter()
            .enumerate()
            .filter(|(_, f)| units[f.unit].kind == Kind::Diff)
            .map(|(fi, _)| done[fi])
            .collect();
        assert!(diff_counts.iter().all(|&n| n == 0), "{diff_counts:?}");
    }

    /// Builds, at 500 tokens with the files in play, a session that read a file of four
    /// functions whole, plus `more`; the context.
    fn context_with(more: crate::records::Records) -> String {
        use crate::optimizer::{build, BuildConfig};
        use crate::records::{FileRecord, Records};
        let records = Records {
            task: Some("Tidy up.".into()),
            files: vec![FileRecord {
                common: at("f1", 0),
                path: "src/lib.rs".into(),
                content: ["alpha", "beta", "gamma", "delta"]
                    .map(|n| block(n, 30))
                    .concat(),
            }],
            ..more
        };
        let config = BuildConfig {
            budget: 500,
            files_in_play: true,
            ..BuildConfig::default()
        };
        build(&records, &config).unwrap().context
    }

    /// The chunk around gamma's 21st step, which neither the task nor the score prefers.
    const GAMMA_20: &str = "step_20 = gamma_part(20)";

    #[test]
    fn the_searched_chunk_of_the_file_in_play_is_the_one_the_context_shows() {
        use crate::records::{Records, ToolOutput};
        let search = |hit: &str| Records {
            tool_outputs: vec![ToolOutput {
                common: at("o1", 5),
                tool: "rg -n part src".into(),
                args: None,
                output: format!("src/lib.rs:40:{hit}\n"),
                exit_code: Some(0),
                cwd: None,
            }],
            ..Records::default()
        };
        let with = context_with(search("    let step_21 = gamma_part(21);"));
        assert!(with.contains(GAMMA_20), "{with}");
        // The canary: without the search, another chunk is the file's best.
        let without = context_with(Records::default());
        assert!(!without.contains(GAMMA_20), "{without}");
    }

    #[test]
    fn the_chunk_whose_code_the_agent_quotes_is_the_one_the_context_shows() {
        use crate::records::{Message, Records};
        let saying = |quote: &str| Records {
            messages: vec![Message {
                common: at("m1", 5),
                role: Role::Assistant,
                text: format!(
                    "In src/lib.rs the loop goes wrong here:\n\n{quote}\n\nI will change that step."
                ),
            }],
            ..Records::default()
        };
        let with = context_with(saying("    let step_21 = gamma_part(21);"));
        assert!(with.contains(GAMMA_20), "{with}");
        // The canary: a message quoting no line of the file leaves another chunk the best.
        let without = context_with(saying("    step twenty-one"));
        assert!(!without.contains(GAMMA_20), "{without}");
    }
}
