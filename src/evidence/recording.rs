//! A frame log read as a recorded session: every JSON-RPC message either side sent, in log
//! order, each answer with the request it answers. Reading refuses what cannot be replayed
//! faithfully, naming the line and the reason: a file that is not a frame log, a damaged
//! line, a log cut mid-line or without its trailer, a frame whose raw copy was dropped, a
//! format newer than this reader. The file is only ever opened for reading.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use base64::Engine as _;
use serde_json::Value;

use super::EvidenceError;
use crate::framelog::json_scan;
use crate::framelog::pairing::Outstanding;
use crate::framelog::reader::{LogItem, LogReader};
use crate::framelog::{Direction, Frame, FrameKind, Header, LogLine, FORMAT_VERSION};

/// How to read a log.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Which run of a log holding several (1-based); required when there are several.
    pub run: Option<usize>,
    /// Accept a run without a trailer (the proxy was killed), dropping a partial last line.
    pub allow_incomplete: bool,
    /// Serve what the client received (the proxy's compacted results and rewritten lists)
    /// instead of what the server sent.
    pub as_delivered: bool,
}

/// Which peer sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client (`c2s`, and `c2p` frames the proxy consumed).
    Client,
    /// The server (`s2c`), or the proxy answering in its place (`p2c`).
    Server,
}

/// One recorded JSON-RPC message (a frame, or one element of a batch frame).
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The frame's `seq`.
    pub seq: u64,
    /// The log line it is on (1-based).
    pub line: u64,
    /// Who sent it.
    pub side: Side,
    /// Which way the frame went (`c2p`/`p2c`: the proxy answered in the server's place).
    pub dir: Direction,
    /// Its JSON-RPC kind.
    pub kind: FrameKind,
    /// Its method (for an answer: the method of its request).
    pub method: Option<String>,
    /// Its id as JSON text, when it has one.
    pub id: Option<String>,
    /// Its bytes (no line ending): the text to send when replaying it.
    pub bytes: Vec<u8>,
    /// The bytes parsed as JSON, when they are.
    pub value: Option<Value>,
    /// For an answer: the index of the request it answers.
    pub answers: Option<usize>,
}

impl Recorded {
    /// The bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// A recorded session (one run of a frame log).
#[derive(Debug, Clone)]
pub struct Recording {
    /// The run's header.
    pub header: Header,
    /// Its messages, in log order.
    pub messages: Vec<Recorded>,
    /// Frames whose raw copies had secrets replaced by placeholders.
    pub redacted_frames: u64,
    /// What the reader noticed and the user should know (gaps, unanswered requests).
    pub notes: Vec<String>,
}

/// One frame kept while reading, with its line.
struct Kept {
    frame: Frame,
    line: u64,
}

/// Reads the run of the log at `path` that `options` selects.
pub fn load(path: &Path, options: &LoadOptions) -> Result<Recording, EvidenceError> {
    let shown = path.display().to_string();
    let refuse = |line: u64, reason: String| EvidenceError::Log {
        path: shown.clone(),
        line,
        reason,
    };
    let mut file = File::open(path).map_err(|e| EvidenceError::Io(format!("{shown}: {e}")))?;
    let ends_in_newline = last_byte(&mut file)? == Some(b'\n');
    let mut reader = LogReader::new(BufReader::with_capacity(1 << 16, file));

    let mut runs: Vec<(Header, u64, Vec<Kept>, bool)> = Vec::new();
    let mut last_line = 0;
    let mut partial: Option<(u64, String)> = None;
    while let Some(item) = reader.next() {
        let item = item.map_err(|e| EvidenceError::Io(e.to_string()))?;
        let line = reader.line();
        last_line = line;
        if let Some((bad, error)) = partial.take() {
            return Err(refuse(bad, format!("not a frame-log record ({error})")));
        }
        match item {
            LogItem::Bad { line, error } if line == 1 => {
                return Err(refuse(
                    line,
                    format!("not a frame log: the first line is not its header ({error})"),
                ));
            }
            LogItem::Bad { line, error } => partial = Some((line, error)),
            LogItem::Line(LogLine::Header(header)) => {
                if header.format_version > FORMAT_VERSION || header.format_version == 0 {
                    return Err(refuse(
                        line,
                        format!(
                            "frame-log format version {} (this ctxopt reads versions 1 to {FORMAT_VERSION})",
                            header.format_version
                        ),
                    ));
                }
                if let Some(run) = runs.last() {
                    if !run.3 {
                        return Err(refuse(line, format!("a new run starts before the run of line {} ended (it has no trailer)", run.1)));
                    }
                }
                runs.push((header, line, Vec::new(), false));
            }
            LogItem::Line(LogLine::Frame(frame)) => {
                let Some(run) = runs.last_mut().filter(|r| !r.3) else {
                    return Err(refuse(
                        line,
                        if runs.is_empty() {
                            "not a frame log: a frame before any header".into()
                        } else {
                            "a frame after its run's trailer".into()
                        },
                    ));
                };
                run.2.push(Kept {
                    frame: *frame,
                    line,
                });
            }
            LogItem::Line(LogLine::Trailer(_)) => match runs.last_mut() {
                Some(run) if !run.3 => run.3 = true,
                _ => return Err(refuse(line, "a trailer without a header".into())),
            },
        }
    }
    if let Some((bad, error)) = partial {
        if ends_in_newline {
            return Err(refuse(bad, format!("not a frame-log record ({error})")));
        }
        if !options.allow_incomplete {
            return Err(refuse(bad, "the log ends in a partial line: the proxy stopped while writing it (pass --allow-incomplete to replay what was recorded before)".into()));
        }
    }
    if runs.is_empty() {
        return Err(refuse(
            last_line.max(1),
            "not a frame log: no header".into(),
        ));
    }
    let count = runs.len();
    let index = match options.run {
        Some(n) if n >= 1 && n <= count => n - 1,
        Some(n) => {
            return Err(EvidenceError::Usage(format!(
                "{shown} holds {count} run(s); there is no run {n}"
            )))
        }
        None if count == 1 => 0,
        None => {
            let lines: Vec<String> = runs.iter().map(|r| format!("line {}", r.1)).collect();
            return Err(EvidenceError::Usage(format!(
                "{shown} holds {count} runs (headers on {}); choose one with --run N",
                lines.join(", ")
            )));
        }
    };
    let (header, header_line, frames, complete) = runs.swap_remove(index);
    if !complete && !options.allow_incomplete {
        return Err(refuse(
            frames.last().map_or(header_line, |k| k.line),
            format!("the run of line {header_line} has no trailer: the proxy did not finish (pass --allow-incomplete to replay what was recorded)"),
        ));
    }
    build(header, frames, options, &refuse)
}

fn last_byte(file: &mut File) -> Result<Option<u8>, EvidenceError> {
    let io = |e: std::io::Error| EvidenceError::Io(e.to_string());
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
    let mut byte = [0u8];
    file.read_exact(&mut byte).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    Ok(Some(byte[0]))
}

fn build(
    header: Header,
    frames: Vec<Kept>,
    options: &LoadOptions,
    refuse: &dyn Fn(u64, String) -> EvidenceError,
) -> Result<Recording, EvidenceError> {
    let compacted: HashSet<u64> = frames.iter().filter_map(|k| k.frame.compacts).collect();
    let mut recording = Recording {
        header,
        messages: Vec::new(),
        redacted_frames: 0,
        notes: Vec::new(),
    };
    let mut waiting: Outstanding<usize> = Outstanding::default();
    // The request each compacted server answer paired with, for the frame sent in its place.
    let mut compacted_request: Vec<(u64, Option<usize>)> = Vec::new();
    let mut expected_seq = frames.first().map_or(0, |k| k.frame.seq);
    for Kept { frame, line } in frames {
        if frame.seq != expected_seq {
            recording.notes.push(format!(
                "line {line}: frames {expected_seq} to {} were relayed but not logged: what they carried cannot be replayed",
                frame.seq.saturating_sub(1)
            ));
        }
        expected_seq = frame.seq + 1;
        if frame.redactions.is_some() {
            recording.redacted_frames += 1;
        }
        let side = match frame.dir {
            Direction::C2s | Direction::C2p => Side::Client,
            Direction::S2c | Direction::P2c => Side::Server,
        };
        let served = match frame.dir {
            Direction::S2c if options.as_delivered => !compacted.contains(&frame.seq),
            Direction::P2c if frame.compacts.is_some() => options.as_delivered,
            _ => true,
        };
        let bytes = frame_bytes(&frame, options.as_delivered)
            .ok_or_else(|| refuse(line, format!("frame {} has no raw copy (dropped to share the log?): there is nothing to replay", frame.seq)))?
            .map_err(|e| refuse(line, format!("frame {}: raw_b64 is not base64 ({e})", frame.seq)))?;
        let parts = split(&frame, bytes)
            .map_err(|reason| refuse(line, format!("frame {}: {reason}", frame.seq)))?;
        for (kind, id, method, bytes) in parts {
            let value = serde_json::from_slice::<Value>(&bytes).ok();
            if value.is_none() && kind != FrameKind::Unparseable {
                return Err(refuse(
                    line,
                    format!(
                        "frame {} is logged as a {kind:?} but its raw copy is not JSON",
                        frame.seq
                    ),
                ));
            }
            let index = recording.messages.len();
            let mut answers = None;
            match (kind, &id) {
                (FrameKind::Request, Some(id)) => waiting.request(frame.dir, id, index),
                (FrameKind::Response | FrameKind::Error, id) => {
                    let id = id.as_deref().unwrap_or("null");
                    answers = match frame.compacts {
                        Some(of) => compacted_request
                            .iter()
                            .find(|(s, _)| *s == of)
                            .and_then(|(_, r)| *r),
                        None => waiting.answer(frame.dir, id),
                    };
                    if compacted.contains(&frame.seq) {
                        compacted_request.push((frame.seq, answers));
                    }
                }
                _ => {}
            }
            if !served {
                continue;
            }
            recording.messages.push(Recorded {
                seq: frame.seq,
                line,
                side,
                dir: frame.dir,
                kind,
                method: method
                    .or_else(|| answers.and_then(|r: usize| recording.messages[r].method.clone())),
                id,
                bytes,
                value,
                answers,
            });
        }
    }
    for (_, index) in waiting.drain() {
        let m = &recording.messages[index];
        if m.side == Side::Client {
            recording.notes.push(format!(
                "line {}: the recorded {} (id {}) was never answered; replaying it answers nothing either",
                m.line,
                m.method.as_deref().unwrap_or("request"),
                m.id.as_deref().unwrap_or("?")
            ));
        }
    }
    recording.notes.sort();
    Ok(recording)
}

/// The frame's bytes as the replay serves them: the server's own text where the proxy
/// rewrote it, unless what the client received is asked for.
fn frame_bytes(frame: &Frame, as_delivered: bool) -> Option<Result<Vec<u8>, base64::DecodeError>> {
    if !as_delivered {
        if let Some(original) = &frame.server_raw {
            return Some(Ok(original.clone().into_bytes()));
        }
    }
    if let Some(raw) = &frame.raw {
        return Some(Ok(raw.clone().into_bytes()));
    }
    frame
        .raw_b64
        .as_ref()
        .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
}

type Part = (FrameKind, Option<String>, Option<String>, Vec<u8>);

/// The frame's messages: itself, or each element of a batch.
fn split(frame: &Frame, bytes: Vec<u8>) -> Result<Vec<Part>, String> {
    if frame.kind != FrameKind::Batch {
        return Ok(vec![(
            frame.kind,
            frame.id.clone(),
            frame.method.clone(),
            bytes,
        )]);
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| "a batch that is not UTF-8".to_string())?;
    if !json_scan::is_valid(text) {
        return Err("a batch whose raw copy is not JSON".into());
    }
    let elements = json_scan::elements(text, json_scan::root(text));
    let items = frame.items.as_deref().unwrap_or_default();
    if items.len() != elements.len() {
        return Err(format!(
            "a batch of {} elements logged with {} items",
            elements.len(),
            items.len()
        ));
    }
    Ok(items
        .iter()
        .zip(elements)
        .map(|(item, span)| {
            (
                item.kind,
                item.id.clone(),
                item.method.clone(),
                text[span].as_bytes().to_vec(),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn header(version: u32) -> String {
        format!(
            r#"{{"type":"header","format_version":{version},"proxy_version":"0","tokenizer":"o200k_base","started":"t","server_name":"s","server_argv":["s"],"cwd":"/","server_pid":1,"proxy_pid":2}}"#
        )
    }

    fn frame(seq: u64, dir: &str, kind: &str, id: Option<&str>, raw: &str) -> String {
        let mut f = serde_json::json!({"type":"frame","seq":seq,"ts":"t","dir":dir,"bytes":1,
            "line_ending":"lf","kind":kind,"tokens":1,"meta_tokens":0,"raw":raw});
        if let Some(id) = id {
            f["id"] = id.into();
        }
        f.to_string()
    }

    const TRAILER: &str = r#"{"type":"trailer","ts":"t","exit":{"code":0},"frames_relayed":{"c2s":1,"s2c":1},"frames_logged":2,"frames_unlogged":0,"bytes":{"c2s":1,"s2c":1},"errors":[]}"#;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn session() -> Vec<String> {
        vec![
            header(3),
            frame(
                0,
                "c2s",
                "request",
                Some("1"),
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            ),
            frame(
                1,
                "s2c",
                "response",
                Some("1"),
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            ),
            TRAILER.into(),
        ]
    }

    fn error_of(text: &str, options: &LoadOptions) -> String {
        load(write(text).path(), options).unwrap_err().to_string()
    }

    #[test]
    fn a_session_pairs_its_answer_with_its_request() {
        let f = write(&(session().join("\n") + "\n"));
        let r = load(f.path(), &LoadOptions::default()).unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[1].answers, Some(0));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn foreign_corrupt_cut_and_future_logs_are_refused_with_line_and_reason() {
        let o = LoadOptions::default();
        let e = error_of("{\"role\":\"user\"}\n", &o);
        assert!(e.contains("line 1: not a frame log"), "{e}");
        let mut lines = session();
        lines.insert(2, "{\"type\":\"frame\",\"seq\":".into());
        let e = error_of(&(lines.join("\n") + "\n"), &o);
        assert!(e.contains("line 3: not a frame-log record"), "{e}");
        let cut = session()[..3].join("\n") + "\n{\"type\":\"fra";
        let e = error_of(&cut, &o);
        assert!(e.contains("line 4: the log ends in a partial line"), "{e}");
        let r = load(
            write(&cut).path(),
            &LoadOptions {
                allow_incomplete: true,
                ..o.clone()
            },
        )
        .unwrap();
        assert_eq!(r.messages.len(), 2);
        let e = error_of(&(session()[..3].join("\n") + "\n"), &o);
        assert!(
            e.contains("line 3: the run of line 1 has no trailer"),
            "{e}"
        );
        let mut future = session();
        future[0] = header(FORMAT_VERSION + 1);
        let e = error_of(&future.join("\n"), &o);
        let refused = format!("line 1: frame-log format version {}", FORMAT_VERSION + 1);
        assert!(e.contains(&refused), "{e}");
        let shared = session().join("\n").replace(
            r#","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}""#,
            "",
        );
        let e = error_of(&shared, &o);
        assert!(e.contains("line 3: frame 1 has no raw copy"), "{e}");
    }

    #[test]
    fn several_runs_need_a_choice() {
        let two = [session(), session()].concat().join("\n");
        let e = error_of(&two, &LoadOptions::default());
        assert!(
            e.contains("holds 2 runs (headers on line 1, line 5); choose one with --run N"),
            "{e}"
        );
        let r = load(
            write(&two).path(),
            &LoadOptions {
                run: Some(2),
                ..LoadOptions::default()
            },
        )
        .unwrap();
        assert_eq!(r.messages[0].line, 6);
    }
}
