//! Reading a frame log and checking it against `docs/frame-log.schema.json` and the rules
//! of `docs/frame-log.md` that a schema cannot express.

use std::path::Path;
use std::sync::OnceLock;

use ctxopt::framelog::{Frame, Header, LogLine, Trailer};

/// One proxy run's log: header, frames, trailer.
#[derive(Debug)]
pub(crate) struct Log {
    /// The first line.
    pub header: Header,
    /// The frame lines in order.
    pub frames: Vec<Frame>,
    /// The last line.
    pub trailer: Trailer,
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/frame-log.schema.json");
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read schema"))
                .expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    })
}

/// Where a log line (as JSON) breaks the schema: empty when it conforms.
pub(crate) fn schema_errors(value: &serde_json::Value) -> Vec<String> {
    validator()
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Validates one log line against the schema and parses it; panics with the line and the
/// schema errors when it does not conform.
pub(crate) fn parse_line(line: &str) -> LogLine {
    let value: serde_json::Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line:.300}"));
    let errors = schema_errors(&value);
    assert!(
        errors.is_empty(),
        "log line does not match the schema: {errors:?}\n{line:.300}"
    );
    serde_json::from_str(line).unwrap_or_else(|e| panic!("log line does not parse ({e})"))
}

/// Splits a log file's text into runs (a file appended to by several runs holds several).
pub(crate) fn parse_runs(text: &str) -> Vec<Log> {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a log ends with a newline"
    );
    let mut runs = Vec::new();
    let mut current: Option<(Header, Vec<Frame>)> = None;
    for line in text.lines() {
        match parse_line(line) {
            LogLine::Header(h) => {
                assert!(current.is_none(), "header inside a run");
                current = Some((h, Vec::new()));
            }
            LogLine::Frame(f) => {
                let (_, frames) = current.as_mut().expect("frame before header");
                if let Some(prev) = frames.last() {
                    assert!(
                        f.seq > prev.seq,
                        "seq must increase: {} then {}",
                        prev.seq,
                        f.seq
                    );
                }
                frames.push(*f);
            }
            LogLine::Trailer(trailer) => {
                let (header, frames) = current.take().expect("trailer before header");
                assert_eq!(trailer.frames_logged, frames.len() as u64, "frames_logged");
                runs.push(Log {
                    header,
                    frames,
                    trailer,
                });
            }
        }
    }
    assert!(current.is_none(), "run without trailer");
    runs
}

/// Reads a log file written by exactly one run, validating every line.
pub(crate) fn read_log(path: &Path) -> Log {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read log {}: {e}", path.display()));
    let mut runs = parse_runs(&text);
    assert_eq!(runs.len(), 1, "one run in {}", path.display());
    runs.remove(0)
}

impl Log {
    /// The frames in one direction.
    pub(crate) fn dir(&self, dir: ctxopt::framelog::Direction) -> Vec<&Frame> {
        self.frames.iter().filter(|f| f.dir == dir).collect()
    }
}

/// The wire bytes a logged frame stands for (raw or raw_b64, plus its line ending).
pub(crate) fn wire_bytes(frame: &Frame) -> Vec<u8> {
    use base64::Engine as _;
    let mut bytes = match (&frame.raw, &frame.raw_b64) {
        (Some(raw), _) => raw.as_bytes().to_vec(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("raw_b64 decodes"),
        (None, None) => panic!("frame {} has neither raw nor raw_b64", frame.seq),
    };
    bytes.extend_from_slice(match frame.line_ending {
        ctxopt::framelog::LineEnding::Lf => b"\n",
        ctxopt::framelog::LineEnding::Crlf => b"\r\n",
        ctxopt::framelog::LineEnding::None => b"",
    });
    assert_eq!(
        bytes.len() as u64,
        frame.bytes,
        "bytes of frame {}",
        frame.seq
    );
    bytes
}
