//! The properties the fuzz targets check (`fuzz/`, run with `cargo fuzz run <target>
//! --sanitizer none`), as plain functions: each takes arbitrary bytes and panics when a
//! property fails. The fuzz targets call them; a test replays the committed corpus
//! (`fuzz/corpus/<target>/`) through them under plain `cargo test`.

use std::io::Read;

use serde_json::Value;

use crate::framelog::classify::{classify, Message, Shape};
use crate::framelog::json_scan::{is_valid, root};
use crate::framelog::meta_strip::strip_meta;
use crate::import::swe_agent::{import_trajectory, ImportError};
use crate::import::{import_text, ImportError as SessionImportError, ImportOptions, SourceFormat};
use crate::optimizer::parse::{parse_records, RecordsError};
use crate::redact::{matcher, Key, Redactor};
use crate::relay::line_reader::LineReader;

/// A property check: panics when `data` breaks it.
#[cfg(test)]
pub(crate) type Check = fn(&[u8]);

/// The fuzz targets, by name, with their checks.
#[cfg(test)]
pub(crate) const TARGETS: &[(&str, Check)] = &[
    ("line_split", line_split),
    ("id_extraction", id_extraction),
    ("meta_strip", meta_strip),
    ("records", records),
    ("swe_import", swe_import),
    ("session_import", session_import),
    ("redact", redact),
];

/// A reader that hands out `data` in reads of `step` bytes (the relay's reads are cut
/// wherever the pipe was).
struct Steps<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Steps<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The line splitter and frame classifier: read in steps of any size (the first byte
/// picks it), the frames rejoin to the input byte for byte, each but the last ends with
/// its only `\n`, and classifying each frame is total (no panic, spans inside the frame).
pub fn line_split(data: &[u8]) {
    let step = usize::from(data.first().copied().unwrap_or(0)) + 1;
    let mut reader = LineReader::new(Steps { data, step });
    let mut frames: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(piece) = reader.next_piece().expect("reading memory cannot fail") {
        frames.last_mut().unwrap().extend_from_slice(piece.bytes);
        if piece.ends_frame {
            frames.push(Vec::new());
        }
    }
    if frames.last().is_some_and(Vec::is_empty) {
        frames.pop();
    }
    assert_eq!(frames.concat(), data, "frames do not rejoin to the input");
    for (i, frame) in frames.iter().enumerate() {
        let newlines = memchr::memchr_iter(b'\n', frame).count();
        let last = i + 1 == frames.len();
        assert!(
            newlines == usize::from(!last || frame.ends_with(b"\n")),
            "frame {i} has {newlines} line endings"
        );
        assert!(!frame.is_empty(), "frame {i} is empty");
        let body = frame.strip_suffix(b"\n").unwrap_or(frame);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if let Ok(text) = std::str::from_utf8(body) {
            for m in messages(text) {
                assert!(m.span.end <= text.len(), "message span outside the frame");
            }
        }
    }
}

fn messages(text: &str) -> Vec<Message> {
    match classify(text) {
        Shape::Unparseable => Vec::new(),
        Shape::Single(m) => vec![m],
        Shape::Batch(ms) => ms,
    }
}

/// Id extraction: every id is an exact substring of its message's text, and is itself one
/// JSON value (a number, string or `null`, however large).
pub fn id_extraction(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for m in messages(text) {
        let Some(id) = m.id else { continue };
        assert!(
            text[m.span.clone()].contains(&id),
            "id {id:?} is not in the message text"
        );
        let value: Value = serde_json::from_str(&id).expect("the id is one JSON value");
        assert!(
            value.is_number() || value.is_string() || value.is_null(),
            "id {id:?} is not a number, string or null"
        );
    }
}

/// Whether `value` has a `_meta` member at any depth (iterative: the input may be deep).
fn has_meta(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.contains_key("_meta") {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// `_meta` stripping: the output is valid JSON with no `_meta` at any depth, stripping it
/// again changes nothing, and it is never longer than the input.
pub fn meta_strip(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !is_valid(text) {
        return;
    }
    let Some(stripped) = strip_meta(text, root(text)) else {
        return;
    };
    assert!(stripped.len() < text.len(), "stripping grew the text");
    let value: Value = serde_json::from_str(&stripped)
        .unwrap_or_else(|e| panic!("stripped text is not JSON ({e}): {stripped}"));
    assert!(!has_meta(&value), "a _meta member is left: {stripped}");
    assert_eq!(
        strip_meta(&stripped, root(&stripped)),
        None,
        "stripping is not idempotent"
    );
}

/// The records parser: no panic; an error names its place (a line and column, or a
/// path); what parses survives serialize → parse unchanged.
pub fn records(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_records(text) {
        Ok(records) => {
            let again = serde_json::to_string(&records).expect("records serialize");
            let reparsed = parse_records(&again)
                .unwrap_or_else(|e| panic!("serialized records do not parse: {e}: {again}"));
            assert_eq!(reparsed, records, "parse → serialize → parse changed them");
        }
        Err(RecordsError::Syntax { line, column, .. }) => {
            assert!(
                line >= 1 && column <= text.len() + 1,
                "bad position {line}:{column}"
            )
        }
        Err(RecordsError::Invalid { path, .. }) => assert!(!path.is_empty(), "no path"),
    }
}

/// The mini-swe-agent importer: no panic; an error names its place.
pub fn swe_import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import_trajectory(text) {
        Ok(_) => {}
        Err(ImportError::Json(e)) => assert!(e.line() >= 1, "a JSON error without a line"),
        Err(ImportError::Format { path, .. }) => assert!(!path.is_empty(), "no path"),
        Err(ImportError::Cut(cut)) => panic!("no cut was asked for, yet: {cut}"),
    }
}

/// The transcript importers (Claude Code, Gemini CLI, Codex; the first byte picks one):
/// no panic; a line that could not be read is named by a line number inside the file (or
/// its end);
/// a whole-file error names its place; what they make is valid records (they serialize and
/// parse back unchanged).
pub fn session_import(data: &[u8]) {
    const FORMATS: [SourceFormat; 3] = [
        SourceFormat::ClaudeCode,
        SourceFormat::GeminiCli,
        SourceFormat::Codex,
    ];
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = FORMATS[usize::from(pick) % FORMATS.len()];
    match import_text(format, text, &ImportOptions::default()) {
        Ok((records, summary)) => {
            // A line of the file, or the end just past its last line break (where an
            // unexpected end of the file is found).
            let lines = text.lines().count() + 1;
            for error in &summary.errors {
                assert!(
                    (1..=lines).contains(&error.line),
                    "{format}: line {} of {lines}: {}",
                    error.line,
                    error.message
                );
            }
            let json = serde_json::to_string(&records).expect("records serialize");
            let reparsed = parse_records(&json)
                .unwrap_or_else(|e| panic!("{format}: imported records do not parse: {e}: {json}"));
            assert_eq!(
                reparsed, records,
                "{format}: serialize → parse changed them"
            );
        }
        Err(SessionImportError::Json(e)) => assert!(e.line() >= 1, "a JSON error without a line"),
        Err(SessionImportError::Format { path, .. }) => assert!(!path.is_empty(), "no path"),
        Err(other) => panic!("{format}: an error of another importer: {other}"),
    }
}

/// The redactor: finds what a search of the whole text finds; idempotent; no rule finds a
/// secret in its output; valid UTF-8 stays valid UTF-8 and valid JSON stays valid JSON;
/// nothing found means nothing changed.
pub fn redact(data: &[u8]) {
    assert_eq!(
        matcher().find(data),
        matcher().find_by_whole_text_search(data),
        "the search at keyword hits missed or added a finding"
    );
    let redactor = Redactor::with_key(Key::from_bytes([0x5a; 32]));
    let (once, count) = redactor.redact(data);
    assert_eq!(
        count == 0,
        once.as_ref() == data,
        "the count ({count}) disagrees with the change"
    );
    let left = matcher().find(&once);
    assert!(left.is_empty(), "a rule still finds {left:?}");
    let (twice, again) = redactor.redact(&once);
    assert_eq!(again, 0, "a second pass redacted more");
    assert_eq!(twice.as_ref(), once.as_ref(), "not idempotent");
    if let Ok(text) = std::str::from_utf8(data) {
        let out = std::str::from_utf8(&once).expect("valid UTF-8 stays valid UTF-8");
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(out) {
                panic!("valid JSON became invalid ({e}): {out}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every file of `fuzz/corpus/<target>/` through its check.
    #[test]
    fn the_committed_fuzz_corpus_replays_clean() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        for (target, check) in TARGETS {
            let dir = corpus.join(target);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            assert!(!files.is_empty(), "no corpus for {target}");
            for file in files {
                let data = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| check(&data));
                assert!(outcome.is_ok(), "{target}: {} fails", file.display());
            }
        }
    }
}
