//! The layering the design promises, checked on the sources: the relay and the frame log
//! name nothing above them (the store, the optimizer, the injected tools, the proxy's
//! adapters, the importers, the hooks). They plug into the rest only through the relay's
//! traits (`FrameSink`, `FrameHandler`), so a relay change can never reach the store.

use std::path::{Path, PathBuf};

/// The crate modules the relay and the frame log may name: each other and what sits below
/// both (the envelope, redaction, token counting, the poison-ignoring lock).
const BELOW: &[&str] = &[
    "framelog",
    "relay",
    "protocol",
    "redact",
    "tokenizer",
    "sync",
];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The crate modules `text` names (`crate::store`, in code or in a doc link) that are not
/// in [`BELOW`], with their line numbers.
fn names_above(text: &str) -> Vec<(usize, String)> {
    let path = regex::Regex::new(r"\b(?:crate|ctxopt)::([a-z_]+)").unwrap();
    text.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            path.captures_iter(line)
                .map(move |c| (i + 1, c[1].to_string()))
                .collect::<Vec<_>>()
        })
        .filter(|(_, module)| !BELOW.contains(&module.as_str()))
        .collect()
}

#[test]
fn the_relay_and_the_frame_log_name_nothing_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("relay"), &mut files);
    rust_files(&src.join("framelog"), &mut files);
    assert!(files.len() >= 20, "the scan found the sources: {files:?}");
    let mut named_below = 0;
    let mut above = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        named_below += text.matches("crate::framelog").count();
        for (line, module) in names_above(&text) {
            above.push(format!("{}:{line}: crate::{module}", file.display()));
        }
    }
    // The scan sees the paths these files do use (they import the frame log's types).
    assert!(
        named_below > 10,
        "crate::framelog named {named_below} times"
    );
    assert!(
        above.is_empty(),
        "names above the relay:\n{}",
        above.join("\n")
    );
}

#[test]
fn the_layering_check_catches_each_layer_above() {
    for module in [
        "store",
        "optimizer",
        "injected",
        "proxy",
        "import",
        "hooks",
        "records",
        "upstream",
    ] {
        let text = format!("//! Docs.\n\nuse crate::{module}::Thing;\n");
        assert_eq!(names_above(&text), [(3, module.to_string())], "{module}");
        let link = format!("/// See [`Thing`](crate::{module}::Thing).\nfn f() {{}}\n");
        assert_eq!(
            names_above(&link),
            [(1, module.to_string())],
            "{module} in a doc link"
        );
    }
    assert!(
        names_above("use crate::framelog::Frame;\nuse crate::tokenizer::Tokenizer;\n").is_empty()
    );
}
