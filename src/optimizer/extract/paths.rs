//! File paths in free text: unix (`src/a.ts`, `/usr/lib/x.py`, `./b.rs:10:5`) and windows
//! (`C:\src\app.cs`, `src\lib\util.ts`), plus bare file names with a known source extension.
//! A client's file mention (`@src/a.ts`, `@AGENTS.md`) names the file after the `@`; an
//! address or a package at a version (`test@site.cc`, `pkg@1.2.3`) is not a file name.

use std::borrow::Cow;

/// Extensions that make a bare name (`billing.ts`) a file name.
const KNOWN_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cs", "css", "go", "h", "hpp", "html", "java", "js", "json", "jsx", "kt",
    "lock", "md", "mjs", "cjs", "php", "py", "rb", "rs", "scala", "sh", "sql", "swift", "toml",
    "ts", "tsx", "txt", "vue", "xml", "yaml", "yml",
];

/// The paths in `text`, in order of appearance, normalized by [`normalize_path`]
/// (duplicates kept; the caller dedupes).
pub(crate) fn paths(text: &str) -> Vec<Cow<'_, str>> {
    marked_paths(text).map(|(path, _)| path).collect()
}

/// Each path of `text` as [`paths`] gives it, and whether it was written as a mention
/// (`@AGENTS.md`, `@src/a.ts`: a client attaches a file named so in a prompt).
pub(crate) fn marked_paths(text: &str) -> impl Iterator<Item = (Cow<'_, str>, bool)> {
    text.split(is_separator)
        .filter_map(path_in_token)
        .map(|(path, mention)| (normalize_path(path), mention))
}

/// The characters that end a token: whitespace and `"'`()[]{}<>,;|=` (ASCII by a match, the
/// rest by [`char::is_whitespace`]).
fn is_separator(c: char) -> bool {
    match c {
        '\t'..='\r'
        | ' '
        | '"'
        | '\''
        | '`'
        | '('
        | ')'
        | '['
        | ']'
        | '{'
        | '}'
        | '<'
        | '>'
        | ','
        | ';'
        | '|'
        | '=' => true,
        c if c.is_ascii() => false,
        c => c.is_whitespace(),
    }
}

/// The path in one whitespace-free token, with `:line:col` and trailing punctuation cut, and
/// whether the token mentions it (`@path`).
fn path_in_token(token: &str) -> Option<(&str, bool)> {
    if token.len() < 3 || !token.contains(['/', '\\', '.']) || token.contains("://") {
        return None;
    }
    let mut t = token.trim_end_matches(['.', ':', '!', '?']);
    // Cut `:line` and `:line:col` (a windows drive colon is at index 1 and stays).
    while let Some(colon) = t.rfind(':') {
        if colon > 1 && t[colon + 1..].bytes().all(|b| b.is_ascii_digit()) {
            t = &t[..colon];
        } else {
            break;
        }
    }
    let t = t.trim_end_matches(['.', ':']);
    // A mention (`@path`, as Claude Code and Gemini CLI prompts write it) names the path after it.
    let (mention, t) = match t.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    if !t
        .chars()
        .all(|c| c.is_alphanumeric() || "/\\._-@+~:$".contains(c))
    {
        return None;
    }
    let drive = t.len() > 3
        && t.as_bytes()[0].is_ascii_alphabetic()
        && t.as_bytes().get(1..3) == Some(b":\\".as_slice());
    let skip = usize::from(drive) * 2;
    let t = match t[skip..].find(':') {
        Some(colon) => &t[..skip + colon],
        None => t,
    };
    let last = t.rsplit(['/', '\\']).next().unwrap_or("");
    let ext = last.rsplit_once('.');
    let has_ext = matches!(ext, Some((stem, ext)) if !stem.is_empty()
        && (1..=8).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
        && !ext.bytes().all(|b| b.is_ascii_digit()));
    let has_sep = t.contains('/') || t.contains('\\');
    if has_sep {
        let rooted = t.starts_with('/') || t.starts_with("./") || t.starts_with("../") || drive;
        let segments_ok =
            t.split(['/', '\\']).filter(|s| !s.is_empty()).count() >= if rooted { 1 } else { 2 };
        // A relative directory (`internal/manifest`) needs word-like segments.
        // A scope (`@scope/package`) is not a directory.
        let dir_like = !rooted
            && !mention
            && t.split(['/', '\\']).all(|s| {
                s.len() >= 3
                    && s.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b)
                    })
                    && s.bytes().any(|b| b.is_ascii_lowercase())
            });
        (segments_ok && (has_ext || dir_like || (rooted && t.len() > 3))).then_some((t, mention))
    } else {
        // `@` inside a bare name makes it an address or a package at a version.
        let known = ext.is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && !stem.contains('@')
                && stem.chars().any(|c| c.is_alphabetic())
                && KNOWN_EXTENSIONS.contains(&ext)
        });
        known.then_some((t, mention))
    }
}

/// Whether a path names its directory from the root: `/…`, `\\…` or a drive (`C:\\…`,
/// `c:/…`).
pub(crate) fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with(['/', '\\'])
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\'))
}

/// A path with forward slashes and without a leading `./`.
pub(crate) fn normalize_path(path: &str) -> Cow<'_, str> {
    let path = path.strip_prefix("./").unwrap_or(path);
    if path.contains('\\') {
        Cow::Owned(path.replace('\\', "/"))
    } else {
        Cow::Borrowed(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_are_whitespace_and_the_listed_punctuation() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let expected = c.is_whitespace() || "\"'`()[]{}<>,;|=".contains(c);
            assert_eq!(is_separator(c), expected, "{c:?}");
        }
    }

    fn found(text: &str) -> Vec<String> {
        paths(text).into_iter().map(Cow::into_owned).collect()
    }

    #[test]
    fn unix_paths_with_line_numbers() {
        assert_eq!(
            found("at total (src/billing/invoice.ts:42:7) and ./lib/x.py:3."),
            vec!["src/billing/invoice.ts", "lib/x.py"]
        );
        assert_eq!(
            found("see /usr/lib/python3.11/json/decoder.py"),
            vec!["/usr/lib/python3.11/json/decoder.py"]
        );
    }

    #[test]
    fn windows_paths_become_forward_slashes() {
        assert_eq!(
            found(r"at C:\work\app\Program.cs:line 12 in src\lib\util.ts"),
            vec!["C:/work/app/Program.cs", "src/lib/util.ts"]
        );
    }

    #[test]
    fn bare_names_need_a_known_extension() {
        assert_eq!(
            found("edit billing.ts, not e.g. or v1.2 or and/or"),
            vec!["billing.ts"]
        );
    }

    #[test]
    fn relative_directories_are_paths() {
        assert_eq!(
            found("in internal/manifest today"),
            vec!["internal/manifest"]
        );
        assert!(found("and/or either/or 2024/05/01").is_empty());
    }

    #[test]
    fn a_mention_names_the_path_after_its_at_sign() {
        assert_eq!(
            found("see @AGENTS.md and @./plugins/x/SKILL.md, then @/Users/me/app/a.txt"),
            vec!["AGENTS.md", "plugins/x/SKILL.md", "/Users/me/app/a.txt"]
        );
        assert_eq!(found("@src/lib/util.ts:12"), vec!["src/lib/util.ts"]);
        let mentions: Vec<_> = marked_paths("read @AGENTS.md and src/b.ts, then @./c/d.md")
            .filter(|&(_, mention)| mention)
            .map(|(path, _)| path)
            .collect();
        assert_eq!(mentions, vec!["AGENTS.md", "c/d.md"]);
    }

    #[test]
    fn addresses_packages_and_scopes_are_not_paths() {
        assert!(found("log in as test@cipherbox.cc with helpers@0.5.15").is_empty());
        assert!(found("npx -y @modelcontextprotocol/server-filesystem").is_empty());
        assert_eq!(
            found("in node_modules/@types/node/index.d.ts"),
            vec!["node_modules/@types/node/index.d.ts"]
        );
    }

    #[test]
    fn words_with_letters_beyond_ascii_are_read_without_a_panic() {
        // `später.` passes the first filter (a `.`), and its third byte is inside `ä`.
        assert!(found("Das machen wir später. Größe: ñandú.").is_empty());
        assert_eq!(
            found("C:\\Users\\jürgen\\app.cs"),
            vec!["C:/Users/jürgen/app.cs"]
        );
    }

    proptest::proptest! {
        #[test]
        fn no_text_makes_the_reader_panic(text in "\\PC{0,40}") {
            let _ = paths(&text);
            let _ = marked_paths(&text).count();
        }
    }

    #[test]
    fn urls_and_prose_are_not_paths() {
        assert!(found("https://example.com/a/b.html in/out the end.").is_empty());
        assert!(found("").is_empty());
    }

    #[test]
    fn python_quoted_paths() {
        assert_eq!(
            found(r#"File "/app/pkg/mod.py", line 3, in run"#),
            vec!["/app/pkg/mod.py"]
        );
    }
}
