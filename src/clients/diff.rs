//! The unified diff of a planned change, as `--dry-run` prints it.

use std::path::Path;

use similar::TextDiff;

/// A unified diff (3 lines of context) from `old` to `new`, headed with `path`; empty when
/// they are equal.
pub(crate) fn unified(path: &Path, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let name = path.display().to_string();
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_only_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified(Path::new("x.json"), old, new);
        assert!(
            diff.starts_with("--- x.json\n+++ x.json\n@@ -2,7 +2,7 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("\n-e\n+E\n"));
        assert_eq!(unified(Path::new("x"), old, old), "");
    }
}
