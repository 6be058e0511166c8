//! Stage 1, normalize: validate the records, give every record and fragment a
//! deterministic id, normalize line endings, collapse pathological runs of repeated log
//! lines inside tool output and runs of library stack frames inside errors and tool output
//! (see [`crate::optimizer::condense`]), and cut the text into fragments.
//!
//! The input records are never changed: units hold normalized copies. Ids are content
//! hashes (sha256): a record keeps the caller's id or gets `rec_` + 12 hex digits of the
//! hash of its kind, identifying fields and text (with `-2`, `-3`, … on collisions); a
//! fragment gets `fr_` + 12 hex digits of sha256(record id, chunk number, text).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use crate::optimizer::chunk::{chunks, diff_chunks, WHOLE_BYTES};
use crate::optimizer::condense::condense_frames;
use crate::optimizer::excerpt::excerpt;
use crate::optimizer::fragment::{hex_prefix, Fragment, Unit, UnitIx};
use crate::optimizer::parallel::par_map;
use crate::optimizer::OptimizerError;
use crate::records::Kind;
use crate::records::{Common, DecisionStatus, Records, Role, TestStatus};

/// The shortest run of same-shaped lines that collapsing shortens.
pub(crate) const MIN_COLLAPSE_RUN: usize = 4;

/// Normalizes `records` (with `task` overriding the records' task when given) into units
/// and their fragments, on one thread (see [`normalize_on`]); the tests' shorthand.
#[cfg(test)]
pub(crate) fn normalize(
    records: &Records,
    task: Option<&str>,
) -> Result<(Vec<Unit>, Vec<Fragment>), OptimizerError> {
    normalize_on(records, task, &|_| false, 1)
}

/// Normalizes `records` (with `task` overriding the records' task when given) into units
/// and their fragments, on `threads` threads (the result never depends on it). Fragment
/// token counts are left at 0 for the caller to fill. The task is one fragment unless
/// `cut_task` says it is too long for that: then it is cut into parts like a message.
pub(crate) fn normalize_on(
    records: &Records,
    task: Option<&str>,
    cut_task: &dyn Fn(&str) -> bool,
    threads: usize,
) -> Result<(Vec<Unit>, Vec<Fragment>), OptimizerError> {
    let mut drafts = Vec::with_capacity(
        1 + records.messages.len()
            + records.tool_outputs.len()
            + records.errors.len()
            + records.files.len()
            + records.diffs.len()
            + records.test_results.len()
            + records.decisions.len(),
    );
    let task = task.or(records.task.as_deref()).map(str::trim);
    let mut task_in_parts = false;
    if let Some(task) = task.filter(|t| !t.is_empty()) {
        let text = normalize_newlines(task);
        task_in_parts = cut_task(&text);
        drafts.push(Draft::new(Kind::Task, 0, &Common::default(), text)?);
    }
    for (i, m) in records.messages.iter().enumerate() {
        let mut d = Draft::new(Kind::Message, i, &m.common, normalize_newlines(&m.text))?;
        d.unit.role = Some(m.role);
        d.unit.header = Some(format!("{}:", role_name(m.role)));
        d.key = role_name(m.role).to_string();
        drafts.push(d);
    }
    // A run's text depends on its output alone: worked out on every thread first.
    let outputs = par_map(&records.tool_outputs, threads, |t| {
        let output = normalize_newlines(&t.output);
        let excerpt = excerpt(output.lines()).unwrap_or_default();
        let condensed = condense_frames(&output);
        let mut collapsed = collapse_repeats(&condensed.text);
        collapsed.removed.push_str(&condensed.removed);
        (collapsed, excerpt)
    });
    for (i, (t, (collapsed, excerpt))) in records.tool_outputs.iter().zip(outputs).enumerate() {
        let mut d = Draft::new(Kind::ToolOutput, i, &t.common, collapsed.text.into())?;
        let args = match &t.args {
            Some(v) if !v.is_null() => Some(canonical_json(v)),
            _ => None,
        };
        let key = command_line(&t.tool, args.as_deref());
        let exit = t
            .exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        let unshown = t
            .args
            .as_ref()
            .and_then(|a| unshown_args(a, &t.tool, &t.output));
        let shown = command_line(&t.tool, unshown.as_deref());
        d.unit.header = Some(format!("$ {}{exit}", one_line(&shown, 300)));
        d.key = format!("{key}\0{:?}", t.exit_code);
        if !excerpt.is_empty() {
            // Two outputs that collapse alike may differ in their exceptional lines.
            d.key.push('\0');
            d.key.push_str(&excerpt);
        }
        d.unit.tool = Some(t.tool.trim().to_string());
        d.unit.tool_key = Some(key);
        d.unit.invocation = t.args.as_ref().and_then(invocation);
        d.unit.exit_code = t.exit_code;
        d.unit.collapsed = collapsed.removed;
        d.unit.collapsed_lines = collapsed.removed_lines;
        d.unit.excerpt = excerpt;
        drafts.push(d);
    }
    for (i, e) in records.errors.iter().enumerate() {
        let mut text = normalize_newlines(e.message.trim_end()).into_owned();
        let mut repeated = String::new();
        if let Some(stack) = e.stack.as_deref().map(str::trim_end) {
            let stack = normalize_newlines(stack);
            // Many stacks open with the message again: show it once.
            let (first, rest) = stack.split_once('\n').unwrap_or((&stack, ""));
            let rest = if first.trim() == text.trim() {
                repeated = format!("{first}\n");
                rest
            } else {
                &stack
            };
            if !rest.is_empty() {
                text.push('\n');
                text.push_str(rest);
            }
        }
        let condensed = condense_frames(&text);
        let mut d = Draft::new(Kind::Error, i, &e.common, condensed.text.into())?;
        d.unit.collapsed = repeated + &condensed.removed;
        drafts.push(d);
    }
    for (i, f) in records.files.iter().enumerate() {
        let mut d = Draft::new(Kind::File, i, &f.common, normalize_newlines(&f.content))?;
        d.unit.path = Some(checked_path(&f.path, Kind::File, i)?);
        d.key = f.path.clone();
        drafts.push(d);
    }
    for (i, f) in records.diffs.iter().enumerate() {
        let mut d = Draft::new(Kind::Diff, i, &f.common, normalize_newlines(&f.diff))?;
        d.unit.path = Some(checked_path(&f.path, Kind::Diff, i)?);
        d.key = f.path.clone();
        drafts.push(d);
    }
    for (i, t) in records.test_results.iter().enumerate() {
        let mut text = format!("{}: {}", t.name.trim(), status_name(t.status));
        if let Some(out) = t.output.as_deref().map(str::trim_end) {
            if !out.is_empty() {
                text.push('\n');
                text.push_str(&normalize_newlines(out));
            }
        }
        let mut d = Draft::new(Kind::TestResult, i, &t.common, text.into())?;
        d.unit.test_name = Some(t.name.trim().to_string());
        d.unit.test_status = Some(t.status);
        drafts.push(d);
    }
    for (i, dec) in records.decisions.iter().enumerate() {
        let text = format!(
            "{}: {}",
            decision_name(dec.status),
            normalize_newlines(dec.text.trim())
        );
        let mut d = Draft::new(Kind::Decision, i, &dec.common, text.into())?;
        d.unit.decision_status = Some(dec.status);
        drafts.push(d);
    }
    assign_ids(&mut drafts, threads)?;
    Ok(finish(drafts, task_in_parts, threads))
}

/// A unit on its way: everything but the final id and fragments.
struct Draft {
    unit: Unit,
    id: Option<String>,
    key: String,
}

impl Draft {
    fn new(
        kind: Kind,
        index: usize,
        common: &Common,
        text: Cow<'_, str>,
    ) -> Result<Draft, OptimizerError> {
        let place = |field: &str| format!("{}[{index}].{field}", kind.list());
        let time = match &common.timestamp {
            Some(ts) => Some(parse_timestamp(ts).ok_or_else(|| {
                OptimizerError::Invalid(format!(
                    "{}: not RFC 3339 (got {ts:?})",
                    place("timestamp")
                ))
            })?),
            None => None,
        };
        let priority = common.priority.unwrap_or(0.5);
        if !(0.0..=1.0).contains(&priority) {
            return Err(OptimizerError::Invalid(format!(
                "{}: must be between 0 and 1 (got {priority})",
                place("priority")
            )));
        }
        if common.id.as_deref().is_some_and(|id| id.trim().is_empty()) {
            return Err(OptimizerError::Invalid(format!(
                "{}: empty id",
                place("id")
            )));
        }
        Ok(Draft {
            unit: Unit {
                id: String::new(),
                kind,
                order: 0,
                index,
                time,
                priority,
                path: None,
                role: None,
                tool: None,
                tool_key: None,
                invocation: None,
                exit_code: None,
                test_name: None,
                test_status: None,
                decision_status: None,
                header: None,
                text: text.into_owned(),
                collapsed: String::new(),
                collapsed_lines: 0,
                excerpt: String::new(),
                hash: [0; 32],
                fragments: 0..0,
            },
            id: common.id.clone(),
            key: String::new(),
        })
    }
}

/// Hashes every draft and gives it its id: the caller's (which must be unique) or
/// `rec_<hash12>`, made unique with a `-N` suffix.
fn assign_ids(drafts: &mut [Draft], threads: usize) -> Result<(), OptimizerError> {
    let mut taken: HashMap<String, usize> = HashMap::with_capacity(drafts.len());
    for (i, d) in drafts.iter().enumerate() {
        if let Some(id) = &d.id {
            if let Some(first) = taken.insert(id.clone(), i) {
                return Err(OptimizerError::Invalid(format!(
                    "{}.id: duplicate id {id:?} (also used by {}.id)",
                    d.unit.place(),
                    drafts[first].unit.place()
                )));
            }
        }
    }
    let hashes = par_map(drafts, threads, |d| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(d.unit.kind.name().as_bytes());
        h.update([0]);
        h.update(d.key.as_bytes());
        h.update([0]);
        h.update(d.unit.text.as_bytes());
        h.finalize().into()
    });
    for (i, (d, hash)) in drafts.iter_mut().zip(hashes).enumerate() {
        d.unit.hash = hash;
        if d.id.is_none() {
            let base = match d.unit.kind {
                Kind::Task => "task".to_string(),
                _ => format!("rec_{}", hex_prefix(&d.unit.hash, 12)),
            };
            let mut id = base.clone();
            let mut n = 1;
            while taken.contains_key(&id) {
                n += 1;
                id = format!("{base}-{n}");
            }
            taken.insert(id.clone(), i);
            d.id = Some(id);
        }
    }
    Ok(())
}

/// Turns drafts into units and cuts their fragments (cut and hashed on `threads` threads).
/// Cuts every draft into fragments (the task too when `task_in_parts`) and numbers them.
fn finish(drafts: Vec<Draft>, task_in_parts: bool, threads: usize) -> (Vec<Unit>, Vec<Fragment>) {
    let cut = par_map(&drafts, threads, |d| {
        let u = &d.unit;
        let id = d.id.as_deref().unwrap_or_default();
        let spans: Vec<std::ops::Range<usize>> = if u.kind == Kind::Diff {
            diff_chunks(&u.text)
        } else if matches!(u.kind, Kind::Error | Kind::TestResult)
            && u.text.trim_end().len() > WHOLE_BYTES
        {
            chunks(&u.text, true)
        } else if u.kind.is_structured() && !(u.kind == Kind::Task && task_in_parts) {
            std::iter::once(0..u.text.trim_end().len()).collect()
        } else {
            chunks(&u.text, matches!(u.kind, Kind::ToolOutput | Kind::File))
        };
        let excerpt = (!u.excerpt.is_empty()).then_some((0..u.excerpt.len(), true));
        let all = spans.into_iter().map(|s| (s, false)).chain(excerpt);
        all.enumerate()
            .map(|(chunk, (span, excerpt))| {
                let text = if excerpt { &u.excerpt } else { &u.text };
                let mut h = Sha256::new();
                h.update(id.as_bytes());
                h.update([0]);
                h.update(chunk.to_le_bytes());
                h.update([0]);
                h.update(text[span.clone()].as_bytes());
                let hash: [u8; 32] = h.finalize().into();
                Fragment {
                    id: format!("fr_{}", hex_prefix(&hash, 12)),
                    unit: UnitIx(0),
                    chunk,
                    span,
                    tokens: 0,
                    excerpt,
                }
            })
            .collect::<Vec<Fragment>>()
    });
    let mut units = Vec::with_capacity(drafts.len());
    let mut fragments = Vec::with_capacity(drafts.len());
    for (order, (d, cut)) in drafts.into_iter().zip(cut).enumerate() {
        let mut u = d.unit;
        u.id = d.id.unwrap_or_default();
        u.order = order;
        let start = fragments.len();
        fragments.extend(cut.into_iter().map(|f| Fragment {
            unit: UnitIx(order),
            ..f
        }));
        u.fragments = start..fragments.len();
        units.push(u);
    }
    (units, fragments)
}

/// Parses an RFC 3339 timestamp into Unix milliseconds.
pub(crate) fn parse_timestamp(ts: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(ts.trim())
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Turns CRLF and lone CR into LF.
pub(crate) fn normalize_newlines(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Text with runs of repeated log lines collapsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Collapsed {
    /// The text with every long run shortened to its first and last line and a marker.
    pub(crate) text: String,
    /// The removed lines, joined with newlines.
    pub(crate) removed: String,
    /// How many lines were removed.
    pub(crate) removed_lines: usize,
}

/// Collapses every run of at least [`MIN_COLLAPSE_RUN`] consecutive lines of the same
/// shape (equal after each digit run becomes `0`) to its first line, a marker
/// `[ctxopt: N similar lines collapsed]`, and its last line.
pub(crate) fn collapse_repeats(text: &str) -> Collapsed {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut removed = String::new();
    let mut removed_lines = 0;
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        if !lines[i].trim().is_empty() {
            while j < lines.len() && same_shape(lines[i], lines[j]) {
                j += 1;
            }
        }
        if i > 0 {
            out.push('\n');
        }
        if j - i >= MIN_COLLAPSE_RUN {
            let n = j - i - 2;
            out.push_str(lines[i]);
            out.push_str(&format!("\n[ctxopt: {n} similar lines collapsed]\n"));
            out.push_str(lines[j - 1]);
            for line in &lines[i + 1..j - 1] {
                removed.push_str(line);
                removed.push('\n');
            }
            removed_lines += n;
        } else {
            for (k, line) in lines[i..j].iter().enumerate() {
                if k > 0 {
                    out.push('\n');
                }
                out.push_str(line);
            }
        }
        i = j;
    }
    Collapsed {
        text: out,
        removed,
        removed_lines,
    }
}

/// Whether two lines are equal once every run of ASCII digits is read as one `0`.
fn same_shape(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (da, db) = (a[i].is_ascii_digit(), b[j].is_ascii_digit());
        if da && db {
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        } else if a[i] == b[j] && !da {
            i += 1;
            j += 1;
        } else {
            return false;
        }
    }
    i == a.len() && j == b.len()
}

/// JSON with object keys sorted, so equal arguments give equal keys.
pub(crate) fn canonical_json(value: &serde_json::Value) -> String {
    fn sort(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let sorted: BTreeMap<&String, serde_json::Value> =
                    map.iter().map(|(k, v)| (k, sort(v))).collect();
                serde_json::Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sort).collect())
            }
            other => other.clone(),
        }
    }
    sort(value).to_string()
}

/// A run's command line: its tool, then its arguments (as JSON) when it has any.
fn command_line(tool: &str, args: Option<&str>) -> String {
    match args {
        Some(a) => format!("{} {a}", tool.trim()),
        None => tool.trim().to_string(),
    }
}

/// How long an argument's text must be for the output holding it to count as showing it
/// (a short one, a search pattern or a folder, is often in the output by coincidence).
const SHOWN_IN_OUTPUT_CHARS: usize = 40;

/// The arguments of a run as its header shows them (canonical JSON), without what the
/// record already shows: of an object, the fields whose longest text the command line
/// (`tool`) holds, or the `output` when that text is long ([`SHOWN_IN_OUTPUT_CHARS`]): a
/// shell tool's `command`, a plan tool's items; of any other value, the value when they
/// hold it. `None` when nothing is left.
pub(crate) fn unshown_args(args: &serde_json::Value, tool: &str, output: &str) -> Option<String> {
    let shown = |v: &serde_json::Value| {
        longest_text(v).is_some_and(|t| {
            tool.contains(t) || (t.chars().count() >= SHOWN_IN_OUTPUT_CHARS && output.contains(t))
        })
    };
    match args {
        serde_json::Value::Null => None,
        serde_json::Value::Object(map) => {
            let rest: serde_json::Map<String, serde_json::Value> = map
                .iter()
                .filter(|(_, v)| !shown(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (!rest.is_empty()).then(|| canonical_json(&serde_json::Value::Object(rest)))
        }
        other => (!shown(other)).then(|| canonical_json(other)),
    }
}

/// The longest non-blank string in `value` (trimmed), if it has one.
fn longest_text(value: &serde_json::Value) -> Option<&str> {
    match value {
        serde_json::Value::String(s) => Some(s.trim()).filter(|s| !s.is_empty()),
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(longest_text)
            .max_by_key(|s| s.len()),
        serde_json::Value::Object(map) => map
            .values()
            .filter_map(longest_text)
            .max_by_key(|s| s.len()),
        _ => None,
    }
}

/// The first line of `s`, at most `max` characters.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn checked_path(path: &str, kind: Kind, index: usize) -> Result<String, OptimizerError> {
    let path = path.trim();
    if path.is_empty() {
        return Err(OptimizerError::Invalid(format!(
            "{}[{index}].path: empty",
            kind.list()
        )));
    }
    Ok(path.to_string())
}

/// The lowercase name of a role.
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
    }
}

fn status_name(status: TestStatus) -> &'static str {
    match status {
        TestStatus::Passed => "passed",
        TestStatus::Failed => "failed",
        TestStatus::Skipped => "skipped",
    }
}

fn decision_name(status: DecisionStatus) -> &'static str {
    match status {
        DecisionStatus::Accepted => "accepted",
        DecisionStatus::Proposed => "proposed",
        DecisionStatus::Rejected => "rejected",
        DecisionStatus::Superseded => "superseded",
    }
}

/// What a call's arguments name ([`Unit::invocation`]): `command` or `cmd` (a string, or
/// a list of words joined by spaces), else the string values without whitespace, in the
/// arguments' order, joined by spaces; `None` when there are none.
fn invocation(args: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match args.get("command").or_else(|| args.get("cmd")) {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(Value::Array(words)) => {
            if let Some(words) = words.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
                return Some(words.join(" "));
            }
        }
        _ => {}
    }
    fn words<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| words(i, out)),
            Value::Object(map) => map.values().for_each(|i| words(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    words(args, &mut out);
    (!out.is_empty()).then(|| out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{ErrorRecord, FileRecord, Message, ToolOutput};

    fn msg(text: &str) -> Message {
        Message {
            common: Common::default(),
            role: Role::User,
            text: text.into(),
        }
    }

    fn tool(out: &str) -> ToolOutput {
        ToolOutput {
            common: Common::default(),
            tool: "npm test".into(),
            args: None,
            output: out.into(),
            exit_code: Some(1),
            cwd: None,
        }
    }

    #[test]
    fn empty_records_give_no_units() {
        let (units, frags) = normalize(&Records::default(), None).unwrap();
        assert!(units.is_empty() && frags.is_empty());
    }

    #[test]
    fn task_override_wins_and_gets_id_task() {
        let records = Records {
            task: Some("old".into()),
            ..Records::default()
        };
        let (units, frags) = normalize(&records, Some("new task")).unwrap();
        assert_eq!(units[0].id, "task");
        assert_eq!(frags[0].text(&units), "new task");
    }

    #[test]
    fn a_record_called_task_does_not_clash_with_the_task() {
        let mut m = msg("x");
        m.common.id = Some("task".into());
        let records = Records {
            task: Some("t".into()),
            messages: vec![m],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        assert_eq!(
            (units[0].id.as_str(), units[1].id.as_str()),
            ("task-2", "task")
        );
    }

    #[test]
    fn bad_timestamp_names_the_place() {
        let mut t = tool("x");
        t.common.timestamp = Some("yesterday".into());
        let records = Records {
            tool_outputs: vec![tool("a"), tool("b"), t],
            ..Records::default()
        };
        let err = normalize(&records, None).unwrap_err().to_string();
        assert!(
            err.starts_with("toolOutputs[2].timestamp: not RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn priority_out_of_range_names_the_place() {
        let mut m = msg("x");
        m.common.priority = Some(1.5);
        let records = Records {
            messages: vec![m],
            ..Records::default()
        };
        let err = normalize(&records, None).unwrap_err().to_string();
        assert!(err.starts_with("messages[0].priority:"), "{err}");
    }

    #[test]
    fn duplicate_given_ids_are_rejected() {
        let mut a = msg("a");
        a.common.id = Some("x".into());
        let e = ErrorRecord {
            common: Common {
                id: Some("x".into()),
                ..Common::default()
            },
            message: "boom".into(),
            stack: None,
        };
        let records = Records {
            messages: vec![a],
            errors: vec![e],
            ..Records::default()
        };
        let err = normalize(&records, None).unwrap_err().to_string();
        assert!(err.contains("errors[0].id: duplicate id"), "{err}");
    }

    #[test]
    fn ids_are_content_hashes_and_unique() {
        let records = Records {
            messages: vec![msg("same"), msg("same"), msg("other")],
            ..Records::default()
        };
        let (units, frags) = normalize(&records, None).unwrap();
        assert!(units[0].id.starts_with("rec_") && units[0].id.len() == 16);
        assert_eq!(units[1].id, format!("{}-2", units[0].id));
        assert_ne!(units[0].id, units[2].id);
        assert_ne!(frags[0].id, frags[1].id);
        let (again, _) = normalize(&records, None).unwrap();
        assert_eq!(units, again);
    }

    #[test]
    fn a_stack_repeating_the_message_shows_it_once() {
        let records = Records {
            errors: vec![ErrorRecord {
                common: Common::default(),
                message: "ValueError: bad".into(),
                stack: Some("ValueError: bad\n  File \"a.py\", line 1".into()),
            }],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        assert_eq!(units[0].text, "ValueError: bad\n  File \"a.py\", line 1");
        assert_eq!(units[0].collapsed, "ValueError: bad\n");
    }

    #[test]
    fn crlf_becomes_lf() {
        assert_eq!(normalize_newlines("a\r\nb\rc"), "a\nb\nc");
        assert!(matches!(normalize_newlines("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn repeated_log_lines_collapse_in_tool_output_only() {
        let log: String = (0..100).map(|i| format!("retry {i} failed\n")).collect();
        let records = Records {
            tool_outputs: vec![tool(&log)],
            files: vec![FileRecord {
                common: Common::default(),
                path: "a.log".into(),
                content: log.clone(),
            }],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        assert_eq!(
            units[0].text,
            "retry 0 failed\n[ctxopt: 98 similar lines collapsed]\nretry 99 failed\n"
        );
        assert_eq!(units[0].collapsed_lines, 98);
        assert_eq!(units[1].text, log);
    }

    #[test]
    fn shapes_ignore_digit_runs_only() {
        assert!(same_shape("retry 1 of 10", "retry 12 of 3"));
        assert!(!same_shape("retry 1", "retry x"));
        assert!(!same_shape("retry 1", "retry 1 more"));
        assert!(same_shape("", ""));
    }

    #[test]
    fn short_runs_and_blank_lines_stay() {
        let text = "a1\na2\na3\n\n\n\n\nb";
        assert_eq!(collapse_repeats(text).text, text);
    }

    #[test]
    fn unicode_and_empty_text_survive() {
        let records = Records {
            messages: vec![msg(""), msg("héllo — 世界")],
            ..Records::default()
        };
        let (units, frags) = normalize(&records, None).unwrap();
        assert!(units[0].fragments.is_empty());
        assert_eq!(frags[0].text(&units), "héllo — 世界");
    }

    #[test]
    fn a_runs_header_leaves_out_the_arguments_the_record_already_shows() {
        use serde_json::json;
        // A shell tool named by its command line: the command is not said twice, its
        // description stays.
        let bash = json!({"command": "cargo test -p core", "description": "Run the tests"});
        assert_eq!(
            unshown_args(&bash, "cargo test -p core", "ok").as_deref(),
            Some(r#"{"description":"Run the tests"}"#)
        );
        // A Codex call: the script is the command line, the folder is news.
        let codex = json!({"command": ["bash", "-lc", "cat app.py"], "workdir": "/repo"});
        assert_eq!(
            unshown_args(&codex, "cat app.py", "x = 1").as_deref(),
            Some(r#"{"workdir":"/repo"}"#)
        );
        // A plan whose items the output lists: nothing is left.
        let plan = json!({"todos": [{"content": "Make the retry budget a setting of the client", "status": "pending"}]});
        let listed = "Plan (TodoWrite):\n- [pending] Make the retry budget a setting of the client";
        assert_eq!(unshown_args(&plan, "TodoWrite", listed), None);
        // The canaries: short values the output holds by coincidence stay, and so does a
        // command a tool name does not show.
        let grep = json!({"path": "src", "pattern": "retry"});
        assert_eq!(
            unshown_args(&grep, "Grep", "src/client.rs:12: retry").as_deref(),
            Some(r#"{"path":"src","pattern":"retry"}"#)
        );
        let bare = json!({"command": "journalctl -u media-sync"});
        assert_eq!(
            unshown_args(&bare, "bash", "").as_deref(),
            Some(r#"{"command":"journalctl -u media-sync"}"#)
        );
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let v: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"d":2,"c":3}}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":{"c":3,"d":2},"b":1}"#);
    }
}
