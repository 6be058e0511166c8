//! The file-read rule: which tool results are file snapshots, and of which paths
//! (documented in `docs/injected-tools.md`, "What is ingested").
//!
//! A successful `tools/call` result is read as file snapshots when all of these hold:
//! 1. the tool's name, lower-cased, is one of [`FILE_READ_TOOLS`];
//! 2. its arguments name the file: a string `path`, `file_path` or `filePath`; or a string
//!    array `paths` (several files in one result); GitHub's `owner` + `repo` + `path` name
//!    `owner/repo/path`;
//! 3. it is a whole-file read: no `head` or `tail` argument (a partial read is kept as a
//!    plain tool output);
//! 4. it carries text: the text of embedded text resources if any (GitHub returns the file
//!    that way), else the joined text blocks. A result with no text (an image) is no
//!    snapshot.
//!
//! A `paths` read must follow server-filesystem's `read_multiple_files` layout — each file
//! as `<path>:\n<content>\n` or `<path>: Error - <message>`, joined by `\n---\n`, in
//! argument order — else the whole result stays a tool output. A file that failed to read
//! becomes an error, not a snapshot.

use serde_json::{Map, Value};

use crate::import::mcp::content;

/// The tools whose results are file contents (matched case-insensitively).
pub(crate) const FILE_READ_TOOLS: &[&str] = &[
    "read_file",
    "read_text_file",
    "read_multiple_files",
    "get_file_contents",
    "view_file",
    "open_file",
];

/// One file in a read result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileOutcome {
    /// The file's path and content.
    Snapshot {
        /// The path, as the arguments name it.
        path: String,
        /// The file's text.
        content: String,
    },
    /// The file could not be read.
    Failed {
        /// The path.
        path: String,
        /// The server's message.
        message: String,
    },
}

/// The files a successful call's result holds, or `None` when the rule does not apply.
pub(crate) fn file_reads(
    tool: &str,
    arguments: &Value,
    blocks: &[Value],
) -> Option<Vec<FileOutcome>> {
    let tool = tool.to_ascii_lowercase();
    if !FILE_READ_TOOLS.contains(&tool.as_str()) {
        return None;
    }
    let args = arguments.as_object()?;
    if args.contains_key("head") || args.contains_key("tail") {
        return None;
    }
    let text = whole_text(blocks)?;
    if let Some(paths) = args.get("paths") {
        let paths: Vec<&str> = paths
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()?;
        return split_multiple(&paths, &text);
    }
    let path = single_path(args)?;
    Some(vec![FileOutcome::Snapshot {
        path,
        content: text,
    }])
}

fn whole_text(blocks: &[Value]) -> Option<String> {
    let resources = content::text_resources(blocks);
    if resources.is_empty() {
        content::text_blocks(blocks)
    } else {
        Some(
            resources
                .into_iter()
                .map(|(_, text)| text)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

fn single_path(args: &Map<String, Value>) -> Option<String> {
    let str_arg = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let path = ["path", "file_path", "filePath"]
        .into_iter()
        .find_map(str_arg)?;
    match (str_arg("owner"), str_arg("repo")) {
        (Some(owner), Some(repo)) => {
            Some(format!("{owner}/{repo}/{}", path.trim_start_matches('/')))
        }
        _ => Some(path.to_string()),
    }
}

/// Splits a `read_multiple_files` result by its known paths.
fn split_multiple(paths: &[&str], text: &str) -> Option<Vec<FileOutcome>> {
    let mut out = Vec::with_capacity(paths.len());
    let mut rest = text;
    for (i, path) in paths.iter().enumerate() {
        let segment = match paths.get(i + 1) {
            Some(next) => {
                let boundary = format!("\n---\n{next}:");
                let end = rest.find(&boundary)?;
                let segment = &rest[..end];
                rest = &rest[end + "\n---\n".len()..];
                segment
            }
            None => rest,
        };
        let after = segment.strip_prefix(path)?;
        if let Some(content) = after.strip_prefix(":\n") {
            let content = content.strip_suffix('\n').unwrap_or(content);
            out.push(FileOutcome::Snapshot {
                path: path.to_string(),
                content: content.to_string(),
            });
        } else {
            let message = after.strip_prefix(": Error - ")?;
            out.push(FileOutcome::Failed {
                path: path.to_string(),
                message: message.to_string(),
            });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(t: &str) -> Vec<Value> {
        vec![json!({"type": "text", "text": t})]
    }

    fn snapshot(path: &str, content: &str) -> FileOutcome {
        FileOutcome::Snapshot {
            path: path.into(),
            content: content.into(),
        }
    }

    #[test]
    fn filesystem_single_reads_are_snapshots() {
        for tool in ["read_text_file", "read_file", "READ_FILE"] {
            assert_eq!(
                file_reads(tool, &json!({"path": "/p/a.rs"}), &text("fn a() {}")),
                Some(vec![snapshot("/p/a.rs", "fn a() {}")]),
                "{tool}"
            );
        }
    }

    #[test]
    fn partial_reads_other_tools_and_pathless_calls_are_not() {
        let t = text("x");
        assert_eq!(
            file_reads("read_text_file", &json!({"path": "a", "head": 3}), &t),
            None
        );
        assert_eq!(
            file_reads("write_file", &json!({"path": "a", "content": "x"}), &t),
            None
        );
        assert_eq!(
            file_reads("list_directory", &json!({"path": "a"}), &t),
            None
        );
        assert_eq!(file_reads("read_file", &json!({"query": "a"}), &t), None);
        let image = vec![json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})];
        assert_eq!(
            file_reads("read_file", &json!({"path": "a.png"}), &image),
            None
        );
    }

    #[test]
    fn read_multiple_files_is_split_by_path() {
        // The layout server-filesystem writes (results joined by "\n---\n").
        let out = "/p/a.txt:\nalpha\n---\nbeta\n\n---\n/p/missing.txt: Error - ENOENT: no such file or directory, open '/p/missing.txt'\n---\n/p/b.txt:\nbravo\n";
        let reads = file_reads(
            "read_multiple_files",
            &json!({"paths": ["/p/a.txt", "/p/missing.txt", "/p/b.txt"]}),
            &text(out),
        )
        .unwrap();
        assert_eq!(
            reads,
            vec![
                snapshot("/p/a.txt", "alpha\n---\nbeta"),
                FileOutcome::Failed {
                    path: "/p/missing.txt".into(),
                    message: "ENOENT: no such file or directory, open '/p/missing.txt'".into()
                },
                snapshot("/p/b.txt", "bravo"),
            ]
        );
        // A result in another layout is no snapshot at all.
        assert_eq!(
            file_reads(
                "read_multiple_files",
                &json!({"paths": ["a", "b"]}),
                &text("whatever")
            ),
            None
        );
    }

    #[test]
    fn github_get_file_contents_uses_the_resource_text_and_repo_path() {
        let blocks = vec![
            json!({"type": "text", "text": "successfully downloaded text file (SHA: abc)"}),
            json!({"type": "resource", "resource": {"uri": "repo://o/r/contents/src/lib.rs", "mimeType": "text/plain", "text": "pub fn f() {}"}}),
        ];
        assert_eq!(
            file_reads(
                "get_file_contents",
                &json!({"owner": "o", "repo": "r", "path": "/src/lib.rs"}),
                &blocks
            ),
            Some(vec![snapshot("o/r/src/lib.rs", "pub fn f() {}")])
        );
    }
}
