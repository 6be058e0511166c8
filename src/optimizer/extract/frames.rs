//! Stack frames: Node (`at fn (file:line:col)`), Python (`File "x", line N, in fn`), Rust
//! panics and backtraces, Go panics (`main.f(...)` then `\t/x/main.go:12 +0x1d`) and JVM
//! (`at a.b.C.m(C.java:42)`).

use std::sync::LazyLock;

use regex::Regex;

/// One frame of a stack trace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Frame {
    /// The trace's language family (`node`, `python`, `rust`, `go`, `jvm`).
    pub(crate) lang: &'static str,
    /// The function, when the frame names one.
    pub function: Option<String>,
    /// The file, when the frame names one.
    pub file: Option<String>,
    /// The line, when the frame names one.
    pub line: Option<u32>,
}

static NODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*at (?:(?:async )?([^\s()]+(?: \[as [^\]]+\])?) \()?([^()\s]+?):(\d+):(\d+)\)?\s*$",
    )
    .unwrap()
});
static PYTHON: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*File "([^"]+)", line (\d+)(?:, in (\S+))?"#).unwrap());
static RUST_PANIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^thread '([^']*)' panicked at (?:'.*', )?([^\s:]+):(\d+):(\d+)").unwrap()
});
static RUST_FN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\d+: (?:0x[0-9a-f]+ - )?(\S+)\s*$").unwrap());
static RUST_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*at ([^\s()]+):(\d+):(\d+)\s*$").unwrap());
static GO_AT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?\s*$").unwrap());
static JVM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*at ([\w$.<>/]+)\.([\w$<>]+)\(([^():]+)(?::(\d+))?\)\s*$").unwrap()
});

static MAY_HAVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?m)^\s*at |File "|thread '|\.go:\d"#).unwrap());

/// The stack frames in `text`, in order.
pub(crate) fn frames(text: &str) -> Vec<Frame> {
    let mut out = Vec::new();
    if !MAY_HAVE.is_match(text) {
        return out;
    }
    let mut prev: &str = "";
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("at ") {
            if let Some(c) = JVM.captures(line) {
                out.push(Frame {
                    lang: "jvm",
                    function: Some(format!("{}.{}", &c[1], &c[2])),
                    file: Some(c[3].to_string()),
                    line: c.get(4).and_then(|m| m.as_str().parse().ok()),
                });
            } else if let (Some(f), Some(c)) = (RUST_FN.captures(prev), RUST_AT.captures(line)) {
                out.push(Frame {
                    lang: "rust",
                    function: Some(f[1].to_string()),
                    file: Some(c[1].to_string()),
                    line: c[2].parse().ok(),
                });
            } else if let Some(c) = NODE.captures(line) {
                out.push(Frame {
                    lang: "node",
                    function: c.get(1).map(|m| m.as_str().to_string()),
                    file: Some(c[2].to_string()),
                    line: c[3].parse().ok(),
                });
            }
        } else if trimmed.starts_with("File \"") {
            if let Some(c) = PYTHON.captures(line) {
                out.push(Frame {
                    lang: "python",
                    function: c.get(3).map(|m| m.as_str().to_string()),
                    file: Some(c[1].to_string()),
                    line: c[2].parse().ok(),
                });
            }
        } else if line.starts_with("thread '") {
            if let Some(c) = RUST_PANIC.captures(line) {
                out.push(Frame {
                    lang: "rust",
                    function: None,
                    file: Some(c[2].to_string()),
                    line: c[3].parse().ok(),
                });
            }
        } else if line.contains(".go:") {
            if let Some(c) = GO_AT.captures(line) {
                let function = prev
                    .trim()
                    .split_once('(')
                    .map(|(f, _)| f)
                    .filter(|f| !f.is_empty() && !f.contains(' '))
                    .map(|f| f.to_string());
                out.push(Frame {
                    lang: "go",
                    function,
                    file: Some(c[1].to_string()),
                    line: c[2].parse().ok(),
                });
            }
        }
        prev = line;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(text: &str) -> Vec<(String, String, String)> {
        frames(text)
            .into_iter()
            .map(|f| {
                (
                    f.lang.to_string(),
                    f.function.unwrap_or_default(),
                    format!("{}:{}", f.file.unwrap_or_default(), f.line.unwrap_or(0)),
                )
            })
            .collect()
    }

    fn t(lang: &str, f: &str, at: &str) -> (String, String, String) {
        (lang.into(), f.into(), at.into())
    }

    #[test]
    fn node_frames() {
        let text = "TypeError: x\n    at computeTotal (src/billing.ts:42:7)\n    at async Object.<anonymous> (/app/index.js:3:1)\n    at node:internal/main:1:2";
        assert_eq!(
            short(text),
            vec![
                t("node", "computeTotal", "src/billing.ts:42"),
                t("node", "Object.<anonymous>", "/app/index.js:3"),
                t("node", "", "node:internal/main:1"),
            ]
        );
    }

    #[test]
    fn python_frames() {
        let text = "Traceback (most recent call last):\n  File \"/app/pkg/mod.py\", line 12, in run\n    x()\nValueError: bad";
        assert_eq!(short(text), vec![t("python", "run", "/app/pkg/mod.py:12")]);
    }

    #[test]
    fn rust_panic_and_backtrace() {
        let text = "thread 'main' panicked at src/main.rs:10:5:\nboom\nstack backtrace:\n   0: app::parse\n             at ./src/parse.rs:7:9";
        assert_eq!(
            short(text),
            vec![
                t("rust", "", "src/main.rs:10"),
                t("rust", "app::parse", "./src/parse.rs:7")
            ]
        );
    }

    #[test]
    fn go_panic() {
        let text = "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.parse(...)\n\t/home/u/app/main.go:12 +0x1d";
        assert_eq!(
            short(text),
            vec![t("go", "main.parse", "/home/u/app/main.go:12")]
        );
    }

    #[test]
    fn jvm_frames() {
        let text = "java.lang.NullPointerException: x\n\tat com.acme.Billing.total(Billing.java:42)\n\tat java.base/java.lang.Thread.run(Native Method)";
        assert_eq!(
            short(text),
            vec![
                t("jvm", "com.acme.Billing.total", "Billing.java:42"),
                t("jvm", "java.base/java.lang.Thread.run", "Native Method:0"),
            ]
        );
    }

    #[test]
    fn prose_has_no_frames() {
        assert!(frames("we met at noon (room 4)\nFile a bug").is_empty());
    }
}
