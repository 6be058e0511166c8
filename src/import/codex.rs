//! The importer for Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): one
//! JSON entry a line, `{timestamp, type, payload}`, `type` one of `session_meta`,
//! `turn_context`, `response_item` (payload `type` `message`, `reasoning`, `function_call`,
//! `function_call_output`, `custom_tool_call`, `custom_tool_call_output`, `ghost_snapshot`,
//! …) and `event_msg` (UI events that repeat what the response items say).
//!
//! What becomes what (documented in `docs/import.md`): a `message` → a message of its role
//! (`input_text`/`output_text` parts; the first user text that is not an
//! `<environment_context>` block or the project's instructions — `# AGENTS.md instructions
//! for DIR`, `<user_instructions>`, which the client sends again with every new context, so
//! they are skipped and counted — is the task); a call and its output (matched by `call_id`):
//! `shell` → a tool output with the command (`bash -lc X` shown as `X`) and the exit code
//! from the output's `metadata.exit_code` (`shell_command`/`exec_command`: the command string
//! and the output's `Exit code: N` header, or unified exec's `Process exited with code N`; a
//! process still running — `Process running with session ID N` — gathers the output of the
//! `write_stdin` polls of its session up to its exit, as one run of its command), an error
//! record when the code is not 0, and a
//! test result per test its output names; a command that reads a file
//! ([`file_reads`]) → a file record with every line seen so far of it; a `compacted` item →
//! a boundary in [`ImportSummary::boundaries`] and its message a `summary-…` system message; `apply_patch` (a shell command or a custom tool call) →
//! one diff per `*** Update|Add|Delete File:` section and, when it applied, the file's current
//! view (an added file whole; an update's hunks applied to the lines seen); `update_plan` → the
//! session's plan, a tool output `plan-…` listing the steps with their status; any other call → a tool output. Ids
//! carry the line: `out-L12`. Reasoning, `event_msg`, `turn_context`, `session_meta` and
//! unknown types are skipped and counted; a line that is not JSON is an error naming the
//! line.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

mod format;

use super::file_reads::seek::{Order, UnplacedHunk};
use super::file_reads::shell::{file_reads, FileViews};
use super::plans::listed_plan;
use super::test_runs::{run_records, Run};
use super::typed;
use super::{call_output, first_line, gather, parts, rfc3339, ImportSummary, INJECTED_MARKER};
use crate::records::SessionRecord;
use crate::records::{Common, DiffRecord, ErrorRecord, FileRecord, Message, Records, Role};
use format::{Call, Compacted, Line, ResponseItem, READ_ITEMS};

/// Converts the text of a rollout file into records.
pub(crate) fn import_rollout(text: &str) -> (Records, ImportSummary) {
    let mut summary = ImportSummary::default();
    let mut out: Vec<SessionRecord> = Vec::new();
    let mut calls: BTreeMap<String, (String, Value)> = BTreeMap::new();
    let mut task: Option<String> = None;
    let mut views = FileViews::default();
    let mut running: BTreeMap<String, Running> = BTreeMap::new();
    // The directory the session works in, as its latest `session_meta`/`turn_context` says.
    let mut cwd: Option<String> = None;
    for (i, text) in text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        summary.lines += 1;
        let n = i + 1;
        let line: Line = match serde_json::from_str::<Value>(text) {
            Err(e) => {
                summary.error(n, format!("not JSON: {e}"));
                continue;
            }
            Ok(value) => match typed::from_value(value) {
                Ok(line) => line,
                Err(_) => {
                    summary.error(n, "expected an object with type and payload");
                    continue;
                }
            },
        };
        let ptype = line
            .payload
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string();
        let timestamp = rfc3339(line.timestamp.as_ref());
        if line.kind == "compacted" {
            summary.boundaries.push(n);
            match typed::from_value::<Compacted>(line.payload) {
                Ok(compacted) if !compacted.message.trim().is_empty() => {
                    let mut common = parts(n, None, timestamp);
                    out.push(SessionRecord::Message(Message {
                        common: common("summary"),
                        role: Role::System,
                        text: compacted.message,
                    }));
                }
                Ok(_) => {}
                Err(e) => summary.error(n, e.to_string()),
            }
            continue;
        }
        if line.kind != "response_item" {
            if let Some(dir) = session_dir(&line.kind, &line.payload) {
                views.note_cwd(dir);
                cwd = Some(dir.to_string());
            }
            summary.skip(format!("{}:{ptype}", line.kind));
            continue;
        }
        if !READ_ITEMS.contains(&ptype.as_str()) {
            summary.skip(format!("response_item:{ptype}"));
            continue;
        }
        let item: ResponseItem = match typed::from_value(line.payload) {
            Ok(item) => item,
            Err(e) => {
                summary.error(n, e.to_string());
                continue;
            }
        };
        let mut common = parts(n, None, timestamp.clone());
        match item {
            ResponseItem::Message { role, content } => {
                let role = match role.as_str() {
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    "system" | "developer" => Role::System,
                    other => {
                        summary.skip(format!("role:{other}"));
                        continue;
                    }
                };
                for part in &content {
                    let Some(t) = part.get("text").and_then(Value::as_str) else {
                        summary.skip("content part without text");
                        continue;
                    };
                    if t.contains(INJECTED_MARKER) {
                        summary.skip("ctxopt-context");
                    } else if t.trim_start().starts_with("<environment_context>") {
                        summary.skip("environment_context");
                    } else if is_project_instructions(t) {
                        // The client sends the project's instructions again with every new
                        // context (after a compaction too): never the task, nothing to restore.
                        summary.skip("project_instructions");
                    } else if !t.trim().is_empty() {
                        if role == Role::User {
                            task.get_or_insert_with(|| t.trim().to_string());
                        }
                        out.push(SessionRecord::Message(Message {
                            common: common("msg"),
                            role,
                            text: t.to_string(),
                        }));
                    }
                }
            }
            ResponseItem::FunctionCall(call) | ResponseItem::CustomToolCall(call) => {
                let args = call.args();
                calls.insert(call.call_id, (call.name, args));
            }
            ResponseItem::FunctionCallOutput(output)
            | ResponseItem::CustomToolCallOutput(output) => {
                let (name, args) = calls
                    .remove(&output.call_id)
                    .unwrap_or_else(|| ("tool".to_string(), Value::Null));
                let result = CallOutput::of(output.output.as_ref());
                // A poll of a process still running (`write_stdin` to its session) continues
                // the output of the command that started it.
                let polled = (name == WRITE_STDIN)
                    .then(|| session_of(&args))
                    .flatten()
                    .and_then(|id| running.remove_entry(&id));
                let (key, run) = match polled {
                    Some((key, mut run)) => {
                        run.output.push_str(&result.output);
                        run.exit_code = result.exit_code;
                        run.line = (n, timestamp);
                        (Some(key), run)
                    }
                    None => (
                        None,
                        Running {
                            dir: call_dir(&args).or(cwd.as_deref()).map(str::to_string),
                            name,
                            args,
                            output: result.output,
                            exit_code: result.exit_code,
                            line: (n, timestamp),
                        },
                    ),
                };
                match result.session.or(key) {
                    Some(id) if result.exit_code.is_none() => {
                        running.insert(id, run);
                    }
                    _ => run.records(&mut views, &mut out),
                }
            }
        }
    }
    // Processes the rollout ends on while they still run: what they printed so far.
    let mut unfinished: Vec<Running> = running.into_values().collect();
    unfinished.sort_by_key(|r| r.line.0);
    for run in unfinished {
        run.records(&mut views, &mut out);
    }
    let records = gather(task, out, &mut summary);
    (records, summary)
}

/// The tool that polls a running process of Codex's unified exec (`exec_command` answered
/// `Process running with session ID N`): its `session_id` names the process.
const WRITE_STDIN: &str = "write_stdin";

/// The session id a `write_stdin` call names.
fn session_of(args: &Value) -> Option<String> {
    match args.get("session_id")? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The directory a `session_meta` or `turn_context` line says the session works in.
fn session_dir<'a>(kind: &str, payload: &'a Value) -> Option<&'a str> {
    matches!(kind, "session_meta" | "turn_context")
        .then(|| payload.get("cwd").and_then(Value::as_str))
        .flatten()
        .filter(|d| !d.trim().is_empty())
}

/// The directory a call runs its command in when it names one (`workdir`, an argument of
/// `shell`, `shell_command` and `exec_command`).
fn call_dir(args: &Value) -> Option<&str> {
    args.get("workdir")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
}

/// A call whose output is (being) gathered: its tool and arguments, the directory it ran
/// in, its output so far, the exit code once known, and the line and time of its latest
/// output.
struct Running {
    name: String,
    args: Value,
    dir: Option<String>,
    output: String,
    exit_code: Option<i64>,
    line: (usize, Option<String>),
}

impl Running {
    /// The records this call and its output make.
    fn records(self, views: &mut FileViews, out: &mut Vec<SessionRecord>) {
        let (n, timestamp) = self.line.clone();
        let mut common = parts(n, None, timestamp);
        call_records(self, &mut common, views, out);
    }
}

/// A call's output as the rollout gives it: the text without its header, the exit code the
/// result states, and, when the process is still running, its session id.
#[derive(Debug, PartialEq)]
struct CallOutput {
    output: String,
    exit_code: Option<i64>,
    session: Option<String>,
}

impl CallOutput {
    /// The output is a string, often JSON `{"output": …, "metadata": {"exit_code": N}}`, or
    /// (`shell_command`, `exec_command`) text under a header: `Exit code: N` … `Output:`, or
    /// unified exec's `Chunk ID: …` … `Process exited with code N` (or `Process running with
    /// session ID N`) … `Output:`.
    fn of(raw: Option<&Value>) -> CallOutput {
        let raw_text = match raw {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        let parsed: Option<Value> = serde_json::from_str(&raw_text).ok();
        let output = parsed
            .as_ref()
            .and_then(|p| p.get("output"))
            .and_then(Value::as_str)
            .map_or_else(|| raw_text.clone(), str::to_string);
        let exit_code = parsed
            .as_ref()
            .and_then(|p| p.pointer("/metadata/exit_code"))
            .and_then(Value::as_i64);
        let headed = headed_output(output);
        CallOutput {
            exit_code: exit_code.or(headed.exit_code),
            ..headed
        }
    }
}

/// The records a call and its output make.
fn call_records(
    run: Running,
    common: &mut impl FnMut(&str) -> Common,
    views: &mut FileViews,
    out: &mut Vec<SessionRecord>,
) {
    let Running {
        name,
        args,
        dir,
        output,
        exit_code,
        ..
    } = run;
    let (name, args, dir) = (name.as_str(), &args, dir.as_deref());
    // `{"explanation"?, "plan": [{"step", "status"}, …]}`
    let plan = (name == "update_plan").then(|| listed_plan(name, args, "plan", "step"));
    if let Some(plan) = plan.flatten() {
        out.push(call_output(common("plan"), name, args, plan));
        return;
    }
    let argv = argv_of(args);
    let tool = match script_of(args) {
        Some(script) => script.to_string(),
        None => command_line(name, &argv),
    };
    let mut reads = file_reads(&tool, &output, exit_code);
    if let Some(dir) = dir {
        reads.iter_mut().for_each(|r| r.ran_in(dir));
    }
    if !reads.is_empty() {
        for read in &reads {
            let (path, content) = views.add(read);
            out.push(SessionRecord::File(FileRecord {
                common: common("file"),
                path,
                content,
            }));
        }
        return;
    }
    let patch = patch_in(name, &argv, args, &tool);
    // A refused patch changed no file: its views stay, and it is an error.
    let refused = patch.is_some() && exit_code.is_none() && patch_refused(&output);
    match patch {
        // A patch writes only its own files: each gets its current view, or is forgotten.
        Some(patch) => {
            let applied = exit_code.is_none_or(|c| c == 0) && !refused;
            for (path, diff) in patch_sections(patch) {
                // A relative path is the call's directory's, as `apply_patch` resolves it.
                let path = views.name_in(&path, dir);
                let view = match added_lines(&diff) {
                    _ if !applied => None,
                    Some(lines) => Some(views.write(&path, &lines)),
                    None => views.apply(&path, &patch_hunks(&diff), Order::Patch),
                };
                out.push(SessionRecord::Diff(DiffRecord {
                    common: common("diff"),
                    path,
                    diff,
                }));
                if let Some((path, content)) = view {
                    out.push(SessionRecord::File(FileRecord {
                        common: common("file"),
                        path,
                        content,
                    }));
                }
            }
        }
        None => views.forget_written(&tool),
    }
    let tool = match argv.as_slice() {
        [first, ..] if PATCH_PROGRAMS.contains(first) => "apply_patch".to_string(),
        _ => tool,
    };
    let failure = match exit_code {
        Some(code) if code != 0 => Some(format!("exit code {code}: ")),
        None if refused => Some(String::new()),
        _ => None,
    };
    if let Some(failure) = failure {
        out.push(SessionRecord::Error(ErrorRecord {
            common: common("err"),
            message: format!(
                "{}: {failure}{}",
                first_line(&tool, 120),
                first_line(&output, 300)
            ),
            stack: None,
        }));
    }
    let args = (!args.is_null()).then(|| args.clone());
    let run = Run {
        tool,
        args,
        output,
        exit_code,
    };
    run_records(run, common, out);
}

/// The script of a `shell_command` or `exec_command` call: its `command` (or `cmd`) when that
/// is one string rather than an argument list.
fn script_of(args: &Value) -> Option<&str> {
    ["command", "cmd"]
        .iter()
        .find_map(|k| args.get(k).and_then(Value::as_str))
}

/// The output of a `shell_command`/`exec_command` result without its header (`Exit code:
/// N`, `Wall time: …`, … up to `Output:`; unified exec: `Chunk ID: …`, `Wall time: …`,
/// `Process exited with code N` or `Process running with session ID N`, `Original token
/// count: …`, `Output:`), the exit code and the running session it states; the text as it is
/// when it has no such header.
fn headed_output(text: String) -> CallOutput {
    let unheaded = |text: String| CallOutput {
        output: text,
        exit_code: None,
        session: None,
    };
    if !(text.starts_with("Exit code: ") || text.starts_with("Chunk ID: ")) {
        return unheaded(text);
    }
    let (header, output) = match text.split_once("\nOutput:\n") {
        Some((header, output)) => (header, output),
        None => match text.strip_suffix("\nOutput:") {
            Some(header) => (header, ""),
            None => return unheaded(text),
        },
    };
    let mut exit_code = None;
    let mut session = None;
    for line in header.lines() {
        let number = |prefix: &str| line.strip_prefix(prefix).map(|n| n.trim().to_string());
        if let Some(code) = number("Exit code: ").or_else(|| number("Process exited with code ")) {
            exit_code = code.parse::<i64>().ok();
        } else if let Some(id) = number("Process running with session ID ") {
            session = Some(id);
        } else if !line.contains(": ") {
            return unheaded(text);
        }
    }
    if exit_code.is_none() && session.is_none() {
        return unheaded(text);
    }
    CallOutput {
        output: output.to_string(),
        exit_code,
        session,
    }
}

/// The arguments of a `function_call` (its `arguments`, a JSON string, parsed) or a
/// `custom_tool_call` (its `input`); null for a payload that is not a call.
pub(crate) fn call_args(payload: &Value) -> Value {
    Call::deserialize(payload).map_or(Value::Null, |call| call.args())
}

/// The command of a call's arguments (`{"command": ["bash", "-lc", …]}`), empty when none.
fn argv_of(args: &Value) -> Vec<&str> {
    args.get("command")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// What a call ran: the script of `bash -lc SCRIPT` (or `-c`), the command joined, or the
/// tool's name.
fn command_line(name: &str, argv: &[&str]) -> String {
    match argv {
        [] => name.to_string(),
        ["bash", "-lc", script] | ["bash", "-c", script] | ["sh", "-c", script] => {
            script.to_string()
        }
        other => other.join(" "),
    }
}

/// The patch a call applies: the custom tool's input, `apply_patch PATCH`, or a script
/// `apply_patch <<EOF` (or `applypatch …`).
fn patch_in<'a>(name: &str, argv: &[&'a str], args: &'a Value, tool: &'a str) -> Option<&'a str> {
    let script = tool.trim_start();
    match (name, argv, args) {
        ("apply_patch", _, Value::String(p)) => Some(p.as_str()),
        (_, [first, p, ..], _) if PATCH_PROGRAMS.contains(first) => Some(*p),
        _ if PATCH_PROGRAMS.iter().any(|p| script.starts_with(p)) => Some(tool),
        _ => None,
    }
}

/// The names Codex CLI runs its patch tool under in a shell (`applypatch` is an alias of
/// `apply_patch`, seen on Windows).
const PATCH_PROGRAMS: [&str; 2] = ["apply_patch", "applypatch"];

/// How `apply_patch` answers when it changes nothing, with no exit code stated: its check of
/// the patch against the files failed (`apply_patch verification failed: …`, or the older
/// `error: Failed to find expected lines …`), or the sandbox stopped it.
const PATCH_REFUSALS: [&str; 3] = [
    "apply_patch verification failed",
    "error: ",
    "failed in sandbox",
];

/// Whether a patch call's output is one of [`PATCH_REFUSALS`].
fn patch_refused(output: &str) -> bool {
    let output = output.trim_start();
    PATCH_REFUSALS.iter().any(|r| output.starts_with(r))
}

/// The patch the call `name` with `args` applies, when it applies one.
pub(crate) fn patch_of_call(name: &str, args: &Value) -> Option<String> {
    let argv = argv_of(args);
    let tool = command_line(name, &argv);
    patch_in(name, &argv, args, &tool).map(str::to_string)
}

/// Splits a Codex patch (`*** Begin Patch` … `*** End Patch`) into (path, section) per
/// `*** Update File:`, `*** Add File:` or `*** Delete File:` line.
pub(crate) fn patch_sections(patch: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in patch.split_inclusive('\n') {
        let header = ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
            .iter()
            .find_map(|h| line.strip_prefix(h));
        if let Some(path) = header {
            sections.push((path.trim().to_string(), String::new()));
        }
        if line.starts_with("*** End Patch") {
            break;
        }
        if let Some((_, section)) = sections.last_mut() {
            section.push_str(line);
        }
    }
    sections
}

/// Whether a user message's text is the project instructions Codex CLI puts before the
/// first prompt (`# AGENTS.md instructions for DIR` with an `<INSTRUCTIONS>` block; before
/// 2026, a `<user_instructions>` block).
pub(crate) fn is_project_instructions(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with("<user_instructions>")
        || (text.starts_with("# AGENTS.md instructions for ") && text.contains("<INSTRUCTIONS>"))
}

/// The lines of a file a patch's section adds whole (`*** Add File:`, every line after it
/// starting with `+`), without their `+`; `None` for any other section.
fn added_lines(section: &str) -> Option<Vec<&str>> {
    let mut lines = section.lines();
    lines.next()?.strip_prefix("*** Add File: ")?;
    lines.map(|l| l.strip_prefix('+')).collect()
}

/// The hunks of one file's section of an `apply_patch` patch (or of a unified diff), each
/// with its context: the lines after each `@@` that start with a space or `-` are its old
/// lines, with a space or `+` its new ones; a Codex header's text (`@@ def f():`) is the
/// line the hunk comes after. The first hunk may have no `@@` line (`apply_patch` allows
/// that). A section with no changed lines (an added or deleted file's header) has none.
pub(crate) fn patch_hunks(section: &str) -> Vec<UnplacedHunk<'_>> {
    let mut hunks: Vec<UnplacedHunk> = Vec::new();
    for line in section.lines() {
        if let Some(header) = line.strip_prefix("@@") {
            // A unified diff's `@@ -1,2 +1,3 @@ fn f` (or `@@ @@`) names no line to find.
            let anchor =
                Some(header.trim()).filter(|h| !h.is_empty() && !h.starts_with(['-', '@']));
            hunks.push(UnplacedHunk {
                anchor,
                ..UnplacedHunk::default()
            });
            continue;
        }
        let diff_line = matches!(line.as_bytes().first(), None | Some(b' ' | b'-' | b'+'));
        if hunks.is_empty() && diff_line && !line.starts_with("---") && !line.starts_with("+++") {
            hunks.push(UnplacedHunk::default());
        }
        let Some(hunk) = hunks.last_mut() else {
            continue;
        };
        match line.split_at_checked(1) {
            Some((" ", text)) => {
                hunk.old.push(text);
                hunk.new.push(text);
            }
            Some(("-", text)) => hunk.old.push(text),
            Some(("+", text)) => hunk.new.push(text),
            // An empty context line whose space was stripped.
            None => {
                hunk.old.push("");
                hunk.new.push("");
            }
            _ => {}
        }
    }
    hunks.retain(|h| !h.old.is_empty() || !h.new.is_empty());
    hunks
}

#[cfg(test)]
mod tests;
