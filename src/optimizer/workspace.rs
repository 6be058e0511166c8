//! The workspace root: the deepest folder that (nearly) every absolute path of a session lies
//! in. Where the workspace lives (`/tmp/.tmpAbC123/proj`, `/home/u/proj`) says nothing about
//! what a fragment is about, so the scorer's focus leaves out the identifiers that only name
//! the root (the root, its ancestors and its components), and lexical overlap does not read
//! the places where a text names it (see `docs/scoring.md`).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::optimizer::condense;
use crate::optimizer::extract::paths::is_absolute;

/// Share of a session's absolute paths (library paths left out) a folder must hold to be
/// the workspace root. Above one half, so the folders that qualify are the ancestors of one
/// another and the deepest is the root.
pub(crate) const ROOT_SHARE: f64 = 0.9;

/// A session's workspace root and the identifiers that only name it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkspaceRoot {
    /// The root (lowercase, forward slashes), when the session's absolute paths have one.
    pub(crate) root: Option<String>,
    /// The root, its ancestors, its components, and the words of those components.
    names: HashSet<String>,
}

impl WorkspaceRoot {
    /// Finds the root of `paths` (normalized, lowercase identifiers; those that are not
    /// absolute, and library paths, are skipped): the deepest folder holding at least
    /// [`ROOT_SHARE`] of the distinct absolute paths. A folder qualifies only when some path
    /// lies under it, so a lone file's root is its folder, never the file.
    pub(crate) fn of<'a>(paths: impl IntoIterator<Item = &'a str>) -> WorkspaceRoot {
        let distinct: BTreeSet<&str> = paths
            .into_iter()
            .map(|p| p.trim_end_matches('/'))
            .filter(|p| is_absolute(p) && !condense::is_library(p))
            .collect();
        let need = (ROOT_SHARE * distinct.len() as f64).ceil() as usize;
        // How many paths lie in (or are) each folder, and which folders hold another path.
        let mut held: BTreeMap<&str, usize> = BTreeMap::new();
        let mut folders: BTreeSet<&str> = BTreeSet::new();
        for &path in &distinct {
            for folder in folders_of(path) {
                *held.entry(folder).or_default() += 1;
                folders.insert(folder);
            }
        }
        // A path that is itself a folder another path lies in.
        for &path in distinct.iter().filter(|p| folders.contains(*p)) {
            *held.entry(path).or_default() += 1;
        }
        let root = folders
            .into_iter()
            .filter(|f| need > 0 && held.get(f).copied().unwrap_or(0) >= need)
            .max_by_key(|f| f.len());
        let Some(root) = root else {
            return WorkspaceRoot::default();
        };
        let mut names: HashSet<String> =
            folders_of(root).chain([root]).map(str::to_string).collect();
        for component in root.split('/').filter(|c| !c.is_empty()) {
            names.insert(component.to_string());
            names.extend(
                component
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
        WorkspaceRoot {
            root: Some(root.to_string()),
            names,
        }
    }

    /// Whether `identifier` (lowercase) only names where the workspace lives: the root, one
    /// of its ancestors, one of its components, or a word of one (`tmpabc123` of
    /// `.tmpAbC123`, the symbol a camel-cased folder name reads as).
    pub(crate) fn names_the_root(&self, identifier: &str) -> bool {
        self.names.contains(identifier.trim_end_matches('/'))
    }

    /// Calls `f` with the parts of `text` around the places where it names the root
    /// (`/tmp/.tmpAbC123/proj` of `/tmp/.tmpAbC123/proj/notes.txt`: in any ASCII case, with
    /// `\` for `/`, followed by no more of a folder name), in order; with no root, with the
    /// whole text.
    pub(crate) fn for_each_part_outside<'t>(&self, text: &'t str, mut f: impl FnMut(&'t str)) {
        let Some(root) = self.root.as_deref() else {
            f(text);
            return;
        };
        // Found by its first `/`, or by a drive's colon.
        let anchor = usize::from(!root.starts_with('/'));
        let anchor_byte = root.as_bytes()[anchor];
        let mut start = 0;
        for at in memchr::memchr_iter(anchor_byte, text.as_bytes()) {
            let Some(at) = at.checked_sub(anchor) else {
                continue;
            };
            if at >= start && names_root_at(text, at, root) {
                f(&text[start..at]);
                start = at + root.len();
            }
        }
        f(&text[start..]);
    }
}

/// Whether `text` names the folder `root` (lowercase) at byte `at`.
fn names_root_at(text: &str, at: usize, root: &str) -> bool {
    let end = at + root.len();
    let Some(found) = text.get(at..end) else {
        return false;
    };
    let same = found
        .bytes()
        .zip(root.bytes())
        .all(|(t, r)| t.eq_ignore_ascii_case(&r) || (t == b'\\' && r == b'/'));
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b"._-".contains(&b);
    let ends = !text.as_bytes().get(end).copied().is_some_and(name_byte);
    // Not the tail of a longer path (`/a/proj` for `/proj`) or a relative one (`./proj`).
    let starts = at == 0 || !name_byte(text.as_bytes()[at - 1]);
    same && ends && starts
}

/// The folders a path lies in, outermost first (`/a`, `/a/b` for `/a/b/c.rs`; `c:/src` for
/// `c:/src/x.cs`; a drive or `/` alone is no folder).
fn folders_of(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(i, _)| &path[..i])
        .filter(|f| f.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(paths: &[&str]) -> Option<String> {
        WorkspaceRoot::of(paths.iter().copied()).root
    }

    #[test]
    fn the_root_is_the_deepest_folder_every_path_shares() {
        let paths = [
            "/tmp/.tmpabc123/proj/src/parser/lexer.rs",
            "/tmp/.tmpabc123/proj/src/parser/ast.rs",
            "/tmp/.tmpabc123/proj/readme.md",
            "src/parser/lexer.rs",
            "computetotal",
        ];
        assert_eq!(root(&paths).as_deref(), Some("/tmp/.tmpabc123/proj"));
    }

    #[test]
    fn a_lone_file_has_its_folder_for_root_and_a_named_folder_can_be_the_root() {
        assert_eq!(root(&["/srv/app/parse.py"]).as_deref(), Some("/srv/app"));
        assert_eq!(
            root(&["/srv/app", "/srv/app/parse.py"]).as_deref(),
            Some("/srv/app")
        );
        assert_eq!(
            root(&[r"c:/src/app/billing.cs", "c:/src/app/other.cs"]).as_deref(),
            Some("c:/src/app")
        );
    }

    #[test]
    fn a_stray_path_or_a_library_does_not_move_the_root() {
        let mut paths: Vec<String> = (0..9).map(|i| format!("/home/u/proj/f{i}.rs")).collect();
        paths.push("/etc/hosts".into());
        paths.push("/usr/lib/python3.12/json/decoder.py".into());
        let root = WorkspaceRoot::of(paths.iter().map(String::as_str)).root;
        assert_eq!(root.as_deref(), Some("/home/u/proj"));
        // Two strays in ten: no folder holds nine tenths of the paths but `/`.
        paths.push("/opt/x.rs".into());
        let root = WorkspaceRoot::of(paths.iter().map(String::as_str)).root;
        assert_eq!(root, None);
    }

    #[test]
    fn no_absolute_paths_no_root() {
        assert_eq!(root(&["src/a.rs", "b.ts"]), None);
        assert_eq!(root(&[]), None);
        assert_eq!(root(&["/x.rs", "/y.rs"]), None, "`/` is no folder");
    }

    #[test]
    fn the_root_its_ancestors_and_components_name_the_root() {
        let w = WorkspaceRoot::of([
            "/tmp/.tmpabc123/my-proj/a.rs",
            "/tmp/.tmpabc123/my-proj/b.rs",
        ]);
        for name in [
            "/tmp",
            "/tmp/.tmpabc123",
            "/tmp/.tmpabc123/my-proj",
            "/tmp/.tmpabc123/my-proj/",
            "tmp",
            ".tmpabc123",
            "tmpabc123",
            "my-proj",
            "proj",
        ] {
            assert!(w.names_the_root(name), "{name}");
        }
        for other in [
            "/tmp/.tmpabc123/my-proj/a.rs",
            "a.rs",
            "/tmp/.tmpabc123/my-proj/src",
        ] {
            assert!(!w.names_the_root(other), "{other}");
        }
        assert!(!WorkspaceRoot::default().names_the_root("tmp"));
    }

    fn parts_outside(w: &WorkspaceRoot, text: &str) -> Vec<String> {
        let mut parts = Vec::new();
        w.for_each_part_outside(text, |p| parts.push(p.to_string()));
        parts
    }

    #[test]
    fn the_text_around_the_root_is_what_is_left_of_it() {
        let w = WorkspaceRoot::of(["/tmp/.tmpabfix/proj/a.rs", "/tmp/.tmpabfix/proj/b.rs"]);
        assert_eq!(
            parts_outside(
                &w,
                "wrote /tmp/.tmpAbFix/proj/notes.txt and /TMP/.tmpabfix/proj"
            ),
            ["wrote ", "/notes.txt and ", ""]
        );
        assert_eq!(
            parts_outside(&w, "/tmp/.tmpabfix/project/x.rs"),
            ["/tmp/.tmpabfix/project/x.rs"],
            "another folder that starts alike"
        );
        assert_eq!(parts_outside(&WorkspaceRoot::default(), "/a/b"), ["/a/b"]);
        let short = WorkspaceRoot::of(["/proj/a.rs", "/proj/b.rs"]);
        assert_eq!(
            parts_outside(&short, "/a/proj/x.rs ./proj/y.rs \"/proj/z.rs\""),
            ["/a/proj/x.rs ./proj/y.rs \"", "/z.rs\""]
        );
        let windows = WorkspaceRoot::of(["c:/src/app/billing.cs", "c:/src/app/other.cs"]);
        assert_eq!(
            parts_outside(
                &windows,
                r"at C:\Src\App\Billing.cs:line 3, not xc:/src/app"
            ),
            ["at ", r"\Billing.cs:line 3, not xc:/src/app"]
        );
    }
}
