//! Condensing stack traces: runs of library frames (runtime, standard library, installed
//! packages, test harnesses) inside errors and tool output become one line,
//! `[ctxopt: N library frames collapsed]`. The frames of the project's own code, the
//! message and everything else stay as written. Never applied to files or diffs.

/// Path or name parts that mark a frame as library code.
const LIBRARY_MARKERS: &[&str] = &[
    "node_modules/",
    "node:internal",
    // Node's built-in modules by their `node:` scheme (`node:events`, `node:async_hooks`).
    "(node:",
    "at node:",
    "(internal/",
    "site-packages/",
    "dist-packages/",
    "/lib/python",
    "<frozen ",
    "java.base/",
    "jdk.internal.",
    "sun.reflect.",
    "org.junit.",
    "junit.framework.",
    "org.apache.maven.",
    "org.gradle.",
    "kotlinx.coroutines.",
    "/rustc/",
    "/.cargo/registry/",
    "/cargo/registry/",
    "/usr/local/go/src/",
    "/usr/lib/go/src/",
];

/// The least number of library frames in a row that is collapsed.
const MIN_RUN: usize = 2;

/// Text with library frame runs collapsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condensed {
    /// The condensed text.
    pub(crate) text: String,
    /// The removed lines, each followed by a newline.
    pub(crate) removed: String,
    /// How many frames were collapsed.
    pub(crate) frames: usize,
}

/// Collapses every run of at least two library frames in `text`.
pub(crate) fn condense_frames(text: &str) -> Condensed {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut removed = String::new();
    let mut collapsed = 0;
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        let mut frames = 0;
        while let Some(len) = library_frame_at(&lines, j) {
            j += len;
            frames += 1;
        }
        if frames >= MIN_RUN {
            let indent: String = lines[i].chars().take_while(|c| c.is_whitespace()).collect();
            out.push(format!(
                "{indent}[ctxopt: {frames} library frames collapsed]"
            ));
            for line in &lines[i..j] {
                removed.push_str(line);
                removed.push('\n');
            }
            collapsed += frames;
            i = j;
        } else {
            out.push(lines[i].to_string());
            i += 1;
        }
    }
    Condensed {
        text: if collapsed == 0 {
            text.to_string()
        } else {
            out.join("\n")
        },
        removed,
        frames: collapsed,
    }
}

/// Whether a frame line or file path belongs to library code (runtime, standard library,
/// installed packages, test harness): it holds one of the library markers.
pub(crate) fn is_library(s: &str) -> bool {
    LIBRARY_MARKERS.iter().any(|m| s.contains(m))
}

/// How many lines the library frame starting at line `i` spans (`None` when it is not one).
fn library_frame_at(lines: &[&str], i: usize) -> Option<usize> {
    let line = *lines.get(i)?;
    let t = line.trim_start();
    if t.starts_with("at ") {
        return is_library(t).then_some(1);
    }
    if t.starts_with("File \"") {
        // Python: the frame line, then its source line (indented deeper), if any.
        if !is_library(t) {
            return None;
        }
        let indent = line.len() - t.len();
        let next = lines.get(i + 1).copied().unwrap_or("");
        let next_t = next.trim_start();
        let source = !next_t.is_empty()
            && next.len() - next_t.len() > indent
            && !next_t.starts_with("File \"");
        return Some(if source { 2 } else { 1 });
    }
    // Rust backtrace: `  3: path::to::fn` and then `      at /rustc/…:12:5`.
    let numbered = t
        .split_once(": ")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if numbered {
        let next = lines.get(i + 1).map_or("", |l| l.trim_start());
        if next.starts_with("at ") {
            return is_library(next).then_some(2);
        }
    }
    // Go: `runtime.gopark(...)` and then `\t/usr/local/go/src/runtime/proc.go:398 +0x…`.
    if let Some(next) = lines.get(i + 1) {
        if next.starts_with('\t') && next.contains(".go:") && t.ends_with(')') {
            return is_library(next).then_some(2);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jvm_harness_frames_collapse_project_frames_stay() {
        let text = "java.lang.NullPointerException: x\n\tat com.acme.A.f(A.java:1)\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)\n\tat org.junit.platform.X.y(X.java:2)\n\tat org.junit.jupiter.Z.w(Z.java:3)";
        let c = condense_frames(text);
        assert_eq!(c.text, "java.lang.NullPointerException: x\n\tat com.acme.A.f(A.java:1)\n\t[ctxopt: 3 library frames collapsed]");
        assert_eq!(c.frames, 3);
        assert_eq!(c.removed.lines().count(), 3);
    }

    #[test]
    fn python_frames_take_their_source_line() {
        let text = "Traceback (most recent call last):\n  File \"/app/x.py\", line 1, in f\n    g()\n  File \"/v/lib/python3.12/site-packages/a.py\", line 2, in g\n    h()\n  File \"/v/lib/python3.12/site-packages/b.py\", line 3, in h\n    raise E\nE: boom";
        let c = condense_frames(text);
        assert_eq!(c.text, "Traceback (most recent call last):\n  File \"/app/x.py\", line 1, in f\n    g()\n  [ctxopt: 2 library frames collapsed]\nE: boom");
    }

    #[test]
    fn rust_backtrace_pairs_collapse() {
        let text = "panicked\n   0: rust_begin_unwind\n             at /rustc/abc/library/std/src/panicking.rs:645:5\n   1: core::panicking::panic_fmt\n             at /rustc/abc/library/core/src/panicking.rs:72:14\n   4: ledger::apply\n             at ./src/apply.rs:88:14";
        let c = condense_frames(text);
        assert_eq!(c.text, "panicked\n   [ctxopt: 2 library frames collapsed]\n   4: ledger::apply\n             at ./src/apply.rs:88:14");
    }

    #[test]
    fn frames_in_nodes_built_in_modules_collapse_with_the_packages_around_them() {
        let text = "TypeError: x\n    at getOwner (/app/src/order.ts:42:18)\n    at next (/app/node_modules/express/lib/router/route.js:149:13)\n    at AsyncResource.runInAsyncScope (node:async_hooks:206:9)\n    at done (/app/node_modules/raw-body/index.js:227:7)\n    at IncomingMessage.emit (node:events:519:28)\n    at node:events:531:35";
        let c = condense_frames(text);
        assert_eq!(
            c.text,
            "TypeError: x\n    at getOwner (/app/src/order.ts:42:18)\n    [ctxopt: 5 library frames collapsed]"
        );
        // The canary: a process warning's `(node:1)` is no frame.
        let warning =
            "(node:1) [DEP0005] DeprecationWarning: Buffer() is deprecated\n(node:1) again";
        assert_eq!(condense_frames(warning).text, warning);
    }

    #[test]
    fn a_single_library_frame_and_plain_text_stay() {
        let text = "Error: x\n    at f (node_modules/a/b.js:1:1)\n    at g (src/c.js:2:2)";
        assert_eq!(condense_frames(text).text, text);
        assert_eq!(condense_frames("").text, "");
    }
}
