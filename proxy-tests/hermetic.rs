//! The repository holds everything its tests need. `.ci/run` proves it by running the whole
//! suite in a fresh clone with nothing beside it; this test is the quick guard that names the
//! offending file when a test, benchmark or script reaches for a folder next to the checkout.

use std::path::{Path, PathBuf};

fn tracked_files() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo)
        .output()
        .expect("git is installed");
    assert!(out.status.success(), "git ls-files failed");
    out.stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| repo.join(String::from_utf8_lossy(p).as_ref()))
        .collect()
}

#[test]
fn no_file_reads_a_folder_beside_the_repository() {
    // Spelled in two halves so that this file does not match itself.
    let sibling = format!("../{}", "shared");
    let mut offenders = Vec::new();
    let mut scanned = 0;
    for path in tracked_files() {
        let name = path.to_string_lossy();
        let code = [".rs", ".sh", ".py", ".mjs", ".js", ".toml"]
            .iter()
            .any(|ext| name.ends_with(ext))
            || name.ends_with("/run-all")
            || name.ends_with("/demo")
            || name.ends_with(".ci/run");
        if !code || name.contains("/fixtures/real-world/") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        scanned += 1;
        if text.contains(&sibling) {
            offenders.push(name.into_owned());
        }
    }
    assert!(
        scanned > 50,
        "only {scanned} files scanned: the walk is broken"
    );
    assert!(
        offenders.is_empty(),
        "these files read outside the repository: {offenders:?}"
    );
}
