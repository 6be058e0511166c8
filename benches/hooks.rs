//! The hook benchmark: `ctxopt hook` run as a client runs it (a child process, the payload on
//! stdin), per event, on every Claude Code and Gemini CLI session of the corpus and on a
//! 10 MB transcript. Codex CLI has no hooks.
//!
//! `cargo bench --bench hooks`:
//!
//! - **The corpus** (`fixtures/real-world/agent-transcripts`): each Claude Code transcript is
//!   replayed as it grew. Before each of its prompts (up to [`MAX_PROMPTS`], spread over the
//!   session) the transcript holds the lines before that prompt and the hook answers
//!   `UserPromptSubmit` with it; at 30, 50 and 70 % of its lines the client's compaction
//!   sequence runs, `PreCompact` then `SessionStart` with `source: compact`. A Gemini CLI chat
//!   is one document: `BeforeAgent`, `PreCompress` and `SessionStart` (`resume`) on the
//!   whole chat. One store per session, as one workspace.
//! - **A 10 MB transcript** built from a real one (repeated): one priming run imports it,
//!   then `CTXOPT_BENCH_HOOK_RUNS` runs per event (default 100), each after appending one
//!   more turn (the real transcript's first six lines).
//!
//! `CTXOPT_BENCH_BIN=PATH` runs another `ctxopt` binary than the one built with it;
//! `CTXOPT_BENCH_BASELINE=PATH` runs a second binary side by side (each with its own store,
//! state and copy of the transcript, the two alternated run by run, so that both meet the same
//! load), its rows marked `(baseline)`. It prints, as Markdown, the wall-clock latency per
//! event (p50, p99, max), the CPU time of a run (p50, max: the `cpu` its log line gives;
//! wall-clock time beyond it is time the run waited) and the peak resident memory of a hook
//! run (the `peak` its log line gives: its `VmHWM`, Linux only); the corpus per session too;
//! with a baseline, how many runs printed byte for byte what the baseline's run printed.
//! `docs/benchmarks.md` records a run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "common/hook_run.rs"]
mod hook_run;

/// The binaries compared: the `ctxopt` built with this benchmark, unless `CTXOPT_BENCH_BIN`
/// names another (for instance a release build run by a harness built in the test profile),
/// and the one `CTXOPT_BENCH_BASELINE` names, if any.
fn binaries() -> Vec<Binary> {
    let this = std::env::var("CTXOPT_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_ctxopt").to_string());
    let mut all = vec![Binary {
        path: this,
        label: "",
    }];
    if let Ok(path) = std::env::var("CTXOPT_BENCH_BASELINE") {
        all.push(Binary {
            path,
            label: " (baseline)",
        });
    }
    all
}

/// A `ctxopt` binary and what its rows are marked with.
struct Binary {
    path: String,
    label: &'static str,
}

/// The most prompts of one session replayed.
const MAX_PROMPTS: usize = 12;

/// The target: the hook's p99 per event.
const TARGET_MS: f64 = 150.0;

/// One hook run.
struct Run {
    binary: &'static str,
    event: &'static str,
    time: Duration,
    /// What the run printed.
    answer: Vec<u8>,
    answered: bool,
    /// The run's CPU time, from its log line (none: the binary does not log it).
    cpu: Option<Duration>,
    peak_kib: u64,
}

/// The number after `key` on a log line, up to `unit`.
fn logged(line: &str, key: &str, unit: &str) -> Option<u64> {
    let (_, rest) = line.rsplit_once(key)?;
    rest.split(unit).next()?.trim().parse().ok()
}

/// Runs the hook of `client` on `payload` with `binary`, its store and state in `dir`.
fn run_hook(binary: &Binary, client: &str, dir: &Path, event: &'static str, payload: &[u8]) -> Run {
    let started = Instant::now();
    let (child, writer) = hook_run::spawn(&binary.path, &[client], dir, payload);
    let out = child.wait_with_output().expect("wait for the hook");
    let time = started.elapsed();
    writer.join().expect("the payload writer");
    assert!(out.status.success());
    let log = std::fs::read_to_string(dir.join("state/hook.log")).unwrap_or_default();
    let last = log.lines().last().unwrap_or_default();
    Run {
        binary: binary.label,
        event,
        time,
        answered: !out.stdout.is_empty(),
        answer: out.stdout,
        cpu: logged(last, "; cpu ", " ms").map(Duration::from_millis),
        peak_kib: logged(last, "; peak ", " KiB").unwrap_or(0),
    }
}

fn payload(event: &str, transcript: &Path, cwd: &Path, extra: Value) -> Vec<u8> {
    let mut p = json!({"session_id": "bench", "hook_event_name": event,
        "transcript_path": transcript, "cwd": cwd});
    if let (Some(p), Value::Object(extra)) = (p.as_object_mut(), extra) {
        p.extend(extra);
    }
    p.to_string().into_bytes()
}

/// The prompt a Claude Code transcript line holds, when it is a user's prompt.
fn prompt_of(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    let real = v["type"] == "user"
        && v.get("isMeta").is_none()
        && v.get("isCompactSummary").is_none()
        && v.get("toolUseResult").is_none();
    let text = v.pointer("/message/content")?.as_str()?;
    (real && !text.starts_with('<') && !text.trim().is_empty()).then(|| text.to_string())
}

/// Replays a Claude Code transcript as it grew (see the module's doc).
fn claude_session(path: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let prompts: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| prompt_of(l).map(|p| (i, p)))
        .collect();
    let step = prompts.len().div_ceil(MAX_PROMPTS).max(1);
    let mut points: Vec<(usize, Option<String>)> = prompts
        .into_iter()
        .step_by(step)
        .map(|(i, p)| (i, Some(p)))
        .collect();
    for share in [0.3, 0.5, 0.7] {
        points.push(((lines.len() as f64 * share) as usize, None));
    }
    points.sort_by_key(|(i, _)| *i);
    let replicas: Vec<Replica> = binaries()
        .into_iter()
        .map(|b| Replica::new(b, "session.jsonl".as_ref()))
        .collect();
    let mut written = 0;
    let mut runs = Vec::new();
    for (at, prompt) in points {
        let more = &lines[written..at.max(written)];
        written = at.max(written);
        let events = match prompt {
            Some(prompt) => vec![("UserPromptSubmit", json!({ "prompt": prompt }))],
            None => vec![
                ("PreCompact", json!({"trigger": "auto"})),
                ("SessionStart", json!({"source": "compact"})),
            ],
        };
        for replica in &replicas {
            replica.append(
                more.iter()
                    .map(|l| format!("{l}\n"))
                    .collect::<String>()
                    .as_bytes(),
            );
        }
        for (event, extra) in events {
            for replica in &replicas {
                runs.push(replica.run("claude-code", event, extra.clone()));
            }
            note_different(path, at, &runs[runs.len() - replicas.len()..]);
        }
    }
    runs
}

/// Prints on stderr which run answered otherwise than the baseline's (`runs`: one run per
/// binary of the same event on the same input).
fn note_different(path: &Path, line: usize, runs: &[Run]) {
    if let [this, baseline] = runs {
        if this.answer != baseline.answer {
            eprintln!(
                "{} {} at line {line}: the answer differs from the baseline's",
                path.file_name().unwrap_or_default().to_string_lossy(),
                this.event,
            );
        }
    }
}

/// One binary's copy of a session: its folder (store, state, home) and its transcript.
struct Replica {
    binary: Binary,
    dir: tempfile::TempDir,
    transcript: PathBuf,
}

impl Replica {
    /// An empty transcript named `name` in a fresh folder, whose store has the redaction key
    /// every replica has (so that the binaries' answers compare byte for byte: a redacted
    /// secret's placeholder, and the id of a fragment holding one, hash it with the key).
    fn new(binary: Binary, name: &std::ffi::OsStr) -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("redact.key");
        std::fs::write(&key, format!("{}\n", "5a".repeat(32))).unwrap();
        let private = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        std::fs::set_permissions(&key, private).unwrap();
        let transcript = dir.path().join(name);
        std::fs::File::create(&transcript).unwrap();
        Replica {
            binary,
            dir,
            transcript,
        }
    }

    /// Appends `bytes` to the transcript, as the client writes it.
    fn append(&self, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        file.write_all(bytes).unwrap();
        file.flush().unwrap();
    }

    /// Runs the hook of `client` for `event` (the payload's `extra` fields added).
    fn run(&self, client: &str, event: &'static str, extra: Value) -> Run {
        let p = payload(event, &self.transcript, self.dir.path(), extra);
        self.run_payload(client, event, &p)
    }

    /// Runs the hook of `client` for `event` on `payload`.
    fn run_payload(&self, client: &str, event: &'static str, payload: &[u8]) -> Run {
        run_hook(&self.binary, client, self.dir.path(), event, payload)
    }
}

/// The three events on a whole Gemini CLI chat.
fn gemini_session(path: &Path) -> Vec<Run> {
    let chat = std::fs::read(path).unwrap();
    let replicas: Vec<Replica> = binaries()
        .into_iter()
        .map(|b| Replica::new(b, path.file_name().unwrap()))
        .collect();
    let prompt = json!({"prompt": "what was the last change and does it pass its tests?"});
    let mut runs = Vec::new();
    for replica in &replicas {
        replica.append(&chat);
    }
    for (event, extra) in [
        ("BeforeAgent", prompt),
        ("PreCompress", json!({"trigger": "auto"})),
        ("SessionStart", json!({"source": "resume"})),
    ] {
        for replica in &replicas {
            runs.push(replica.run("gemini-cli", event, extra.clone()));
        }
    }
    runs
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `q` quantile of `times` (nearest rank).
fn quantile(times: &[Duration], q: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// One table row per binary and event of `runs`: runs, answered, p50, p99, max, CPU p50 and
/// max, peak MiB.
fn event_rows(label: &str, runs: &[Run]) -> Vec<String> {
    let mut groups: Vec<(&str, &str)> = runs.iter().map(|r| (r.event, r.binary)).collect();
    groups.sort_unstable();
    groups.dedup();
    groups
        .into_iter()
        .map(|(event, binary)| {
            let mine: Vec<&Run> = runs
                .iter()
                .filter(|r| r.event == event && r.binary == binary)
                .collect();
            let times: Vec<Duration> = mine.iter().map(|r| r.time).collect();
            let cpu: Option<Vec<Duration>> = mine.iter().map(|r| r.cpu).collect();
            let cpu = cpu.map_or("– | –".to_string(), |c| {
                let max = c.iter().max().copied().unwrap_or_default();
                format!("{:.0} | {:.0}", ms(quantile(&c, 0.5)), ms(max))
            });
            let p99 = ms(quantile(&times, 0.99));
            format!(
                "| {label}{binary} | {event} | {} | {} | {:.1} | {p99:.1}{} | {:.1} | {cpu} | {:.1} |",
                mine.len(),
                mine.iter().filter(|r| r.answered).count(),
                ms(quantile(&times, 0.5)),
                if p99 > TARGET_MS { " **over**" } else { "" },
                ms(*times.iter().max().unwrap()),
                mine.iter().map(|r| r.peak_kib).max().unwrap_or(0) as f64 / 1024.0,
            )
        })
        .collect()
}

/// With a baseline: how many of the runs of `runs` the baseline ran too (the two binaries'
/// runs alternate, on the same input), and of those, how many printed the same bytes.
fn same_answers(runs: &[Run]) -> Option<(usize, usize)> {
    let pairs: Vec<&[Run]> = runs
        .chunks(2)
        .filter(|p| p.len() == 2 && p[0].binary != p[1].binary && p[0].event == p[1].event)
        .collect();
    (!pairs.is_empty()).then(|| {
        let same = pairs.iter().filter(|p| p[0].answer == p[1].answer).count();
        (pairs.len(), same)
    })
}

fn session_files(dir: &Path, ext: &[&str]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| ext.iter().any(|x| e == *x)))
        .collect();
    files.sort();
    files
}

fn main() {
    let runs: usize = std::env::var("CTXOPT_BENCH_HOOK_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world/agent-transcripts");
    let head = "| session | event | runs | answered | p50 ms | p99 ms | max ms | cpu p50 ms | cpu max ms | peak MiB |\n\
                |---|---|---|---|---|---|---|---|---|---|";
    println!("{head}");
    let mut all = Vec::new();
    let mut over = Vec::new();
    let sessions = session_files(&corpus.join("claude-code"), &["jsonl"])
        .into_iter()
        .map(|p| (p.clone(), claude_session as fn(&Path) -> Vec<Run>))
        .chain(
            session_files(&corpus.join("gemini-cli"), &["json", "jsonl"])
                .into_iter()
                .map(|p| (p, gemini_session as fn(&Path) -> Vec<Run>)),
        );
    for (path, replay) in sessions {
        let mine = replay(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for row in event_rows(&name, &mine) {
            if row.contains("**over**") {
                over.push(row.clone());
            }
            println!("{row}");
        }
        all.extend(mine);
    }
    println!("\nThe corpus, all runs:\n\n{head}");
    for row in event_rows("all sessions", &all) {
        println!("{row}");
    }
    println!(
        "\nSessions × events over {TARGET_MS} ms at p99: {}",
        over.len()
    );
    if let Some((pairs, same)) = same_answers(&all) {
        println!("Runs whose answer is byte for byte the baseline's: {same} of {pairs}");
    }

    // The 10 MB transcript.
    let real = std::fs::read(hook_run::real_transcript()).unwrap();
    let turn: Vec<u8> = real
        .split_inclusive(|b| *b == b'\n')
        .take(6)
        .flatten()
        .copied()
        .collect();
    let mut replicas = Vec::new();
    let mut size = 0;
    let mut firsts = Vec::new();
    for binary in binaries() {
        let replica = Replica::new(binary, "session.jsonl".as_ref());
        (_, size) = hook_run::repeated_transcript(&replica.transcript, 10 * 1024 * 1024);
        let prompt = hook_run::prompt_payload(&replica.transcript, replica.dir.path());
        firsts.push(replica.run_payload("claude-code", "UserPromptSubmit", &prompt));
        replicas.push(replica);
    }
    let mut large = Vec::new();
    for event in ["UserPromptSubmit", "PreCompact", "SessionStart"] {
        for _ in 0..runs {
            for replica in &replicas {
                replica.append(&turn);
                let p = hook_run::event_payload(event, &replica.transcript, replica.dir.path());
                large.push(replica.run_payload("claude-code", event, &p));
            }
        }
    }
    let firsts: Vec<String> = firsts
        .iter()
        .map(|f| {
            format!(
                "{:.0} ms, peak {:.1} MiB{}",
                ms(f.time),
                f.peak_kib as f64 / 1024.0,
                f.binary
            )
        })
        .collect();
    println!(
        "\nA {:.1} MB transcript (first run, the import: {}):\n\n{head}",
        size as f64 / 1_048_576.0,
        firsts.join("; "),
    );
    for row in event_rows("10 MB", &large) {
        println!("{row}");
    }
    if let Some((pairs, same)) = same_answers(&large) {
        println!("\nRuns whose answer is byte for byte the baseline's: {same} of {pairs}");
    }
}
