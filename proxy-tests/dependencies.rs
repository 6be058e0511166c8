//! No unused dependency: every crate `Cargo.toml` declares (per kind) is named in the
//! sources that kind serves, read from `cargo metadata` (offline) and the files themselves.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n == "node_modules" || n == ".venv")
            {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The declared dependencies of `kind` (`None` for normal ones) as the names code uses.
fn declared(metadata: &Value, kind: Option<&str>) -> Vec<String> {
    metadata["packages"][0]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].as_str() == kind)
        .map(|d| {
            d["rename"]
                .as_str()
                .unwrap_or_else(|| d["name"].as_str().unwrap())
                .replace('-', "_")
        })
        .collect()
}

/// The names in `crates` that no text in `sources` uses (`name::`, `use name`, `name!`).
fn unused(crates: &[String], sources: &[String]) -> Vec<String> {
    crates
        .iter()
        .filter(|name| {
            let used = regex::Regex::new(&format!(
                r"(^|[^A-Za-z0-9_:]){name}(::|!|\s*;|\s+as\b)|\buse\s+{name}\b|extern\s+crate\s+{name}\b"
            ))
            .unwrap();
            !sources.iter().any(|text| used.is_match(text))
        })
        .cloned()
        .collect()
}

fn read_all(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[test]
fn every_declared_dependency_is_used() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();

    let mut library = Vec::new();
    rust_files(&repo().join("src"), &mut library);
    let mut tests = library.clone();
    rust_files(&repo().join("benches"), &mut tests);
    rust_files(&repo().join("proxy-tests"), &mut tests);
    let build = vec![repo().join("build.rs")];

    for (kind, files) in [
        (None, &library),
        (Some("dev"), &tests),
        (Some("build"), &build),
    ] {
        let crates = declared(&metadata, kind);
        assert!(!crates.is_empty() || kind == Some("build"), "{kind:?}");
        let missing = unused(&crates, &read_all(files));
        assert!(
            missing.is_empty(),
            "declared as {} dependencies but not used: {missing:?}",
            kind.unwrap_or("normal")
        );
    }
}

#[test]
fn the_check_finds_an_unused_dependency() {
    let sources = vec!["use serde_json::Value;\nfn f() { anyhow::bail!(\"x\") }".to_string()];
    let crates = ["serde_json", "anyhow", "tokio", "serde"].map(String::from);
    assert_eq!(unused(&crates, &sources), ["tokio", "serde"]);
}
