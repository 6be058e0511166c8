//! Error signatures: the line that names an error (`TypeError: …`, `error[E0308]: …`,
//! `panic: …`, `Exception in thread "main" java.lang.X: …`, `npm ERR! …`), reduced to a
//! comparable key: the error type and its message with numbers and hex masked.

use std::sync::LazyLock;

use regex::Regex;

static TYPED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:Uncaught |Unhandled |Exception in thread \S+ |E\s+)?([A-Za-z_][\w.$]*(?:Error|Exception|Panic|Failure|Fault))(?::\s*(.*))?$").unwrap()
});
static RUST: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^error(\[E\d+\])?: (.+)$").unwrap());
static GO: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(panic|fatal error): (.+)$").unwrap());
static GENERIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:npm ERR!|ERROR|FATAL|Fatal|fatal)[:!]?\s+(.+)$").unwrap());

static LOG_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s\[|])(ERROR|FATAL|CRITICAL|SEVERE)(?:\]|:)?\s+(.+)$").unwrap()
});

/// A JSON-lines log record at an error level: `"level":"error"` (or `severity`, `lvl`;
/// `error`, `fatal`, `critical`, `panic`, any case).
static JSON_LEVEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(?:level|severity|lvl)"\s*:\s*"(?i)(error|fatal|critical|panic)""#).unwrap()
});

/// The message of a JSON-lines log record: `"msg"`, `"message"` or `"error"`.
static JSON_MESSAGE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""(?:msg|message|error)"\s*:\s*"((?:[^"\\]|\\.)*)""#).unwrap());

/// An error named in text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Signature {
    /// The error's type (`TypeError`, `error[E0308]`, `panic`, `ERROR`).
    pub kind: String,
    /// The message as written.
    pub message: String,
}

impl Signature {
    /// The comparable key: `kind: message` with digit runs as `0` and hex as `0x0`.
    pub(crate) fn key(&self) -> String {
        let mut key = String::with_capacity(self.kind.len() + self.message.len() + 2);
        key.push_str(&self.kind);
        key.push_str(": ");
        let mut prev_digit = false;
        for c in self.message.trim().chars() {
            if c.is_ascii_digit() {
                if !prev_digit {
                    key.push('0');
                }
                prev_digit = true;
            } else {
                prev_digit = false;
                key.push(c);
            }
        }
        key
    }
}

static MAY_HAVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"rror|xception|anic|ault|ailure|ERR|FATAL|atal").unwrap());

/// The error signatures in `text`, one per matching line, in order.
pub(crate) fn signatures(text: &str) -> Vec<Signature> {
    if !MAY_HAVE.is_match(text) {
        return Vec::new();
    }
    text.lines().filter_map(signature).collect()
}

/// The signature a single line names, if any.
pub(crate) fn signature(line: &str) -> Option<Signature> {
    let line = line.trim();
    if line.len() < 4 || line.len() > 2000 {
        return None;
    }
    let sig = |kind: &str, message: &str| Signature {
        kind: kind.to_string(),
        message: message.trim().to_string(),
    };
    if line.starts_with("error") {
        if let Some(c) = RUST.captures(line) {
            let kind = format!("error{}", c.get(1).map_or("", |m| m.as_str()));
            return Some(sig(&kind, &c[2]));
        }
    }
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") {
        let c = GO.captures(line)?;
        return Some(sig(&c[1], &c[2]));
    }
    let lead = line.as_bytes()[0];
    if matches!(lead, b'n' | b'E' | b'F' | b'f') {
        if let Some(c) = GENERIC.captures(line) {
            let kind = line.split([' ', ':', '!']).next().unwrap_or("ERROR");
            return Some(sig(kind, &c[1]));
        }
    }
    if line.contains("ERROR")
        || line.contains("FATAL")
        || line.contains("CRITICAL")
        || line.contains("SEVERE")
    {
        if let Some(c) = LOG_LEVEL.captures(line) {
            return Some(sig(&c[1], &c[2]));
        }
    }
    if lead == b'{' {
        if let Some(c) = JSON_LEVEL.captures(line) {
            let message = JSON_MESSAGE
                .captures(line)
                .map_or("", |m| m.get(1).map_or("", |m| m.as_str()));
            return Some(sig(&c[1].to_ascii_uppercase(), message));
        }
    }
    if line.contains("Error")
        || line.contains("Exception")
        || line.contains("Panic")
        || line.contains("Fault")
        || line.contains("Failure")
    {
        if let Some(c) = TYPED.captures(line) {
            return Some(sig(&c[1], c.get(2).map_or("", |m| m.as_str())));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        signatures(text).iter().map(Signature::key).collect()
    }

    #[test]
    fn typed_errors_in_several_languages() {
        assert_eq!(
            keys("TypeError: Cannot read properties of undefined (reading 'id')\nValueError: bad value 42\nException in thread \"main\" java.lang.IllegalStateException: closed"),
            vec![
                "TypeError: Cannot read properties of undefined (reading 'id')",
                "ValueError: bad value 0",
                "java.lang.IllegalStateException: closed",
            ]
        );
    }

    #[test]
    fn rust_go_and_tool_errors() {
        assert_eq!(
            keys("error[E0308]: mismatched types\npanic: runtime error: index out of range [3] with length 3\nnpm ERR! code ELIFECYCLE"),
            vec![
                "error[E0308]: mismatched types",
                "panic: runtime error: index out of range [0] with length 0",
                "npm: code ELIFECYCLE",
            ]
        );
    }

    #[test]
    fn log_lines_at_error_level_are_signatures() {
        assert_eq!(
            keys("2026-03-12 06:59:01.123 ERROR [worker-3] c.a.Job - Settlement failed for batch 7781"),
            vec!["ERROR: [worker-0] c.a.Job - Settlement failed for batch 0"]
        );
        assert!(keys("2026-03-12 INFO all fine, no ERRORS").is_empty());
    }

    #[test]
    fn json_lines_at_error_level_are_signatures() {
        assert_eq!(
            keys(
                r#"{"ts":"2026-03-12T06:59:01Z","level":"error","msg":"ledger write failed for batch 7781","svc":"pay"}"#
            ),
            vec!["ERROR: ledger write failed for batch 0"]
        );
        assert!(keys(r#"{"level":"info","msg":"error budget fine"}"#).is_empty());
    }

    #[test]
    fn bare_exception_name_is_a_signature() {
        assert_eq!(keys("AssertionError"), vec!["AssertionError: "]);
    }

    #[test]
    fn prose_is_not_an_error() {
        assert!(
            keys("There was no error here.\nErrors are handled.\nerror handling is fine")
                .is_empty()
        );
    }
}
