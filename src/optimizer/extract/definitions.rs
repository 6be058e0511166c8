//! Definitions in source text: the names a file defines, so that an identifier the task or
//! an error names can lead to the file that defines it.
//!
//! A line defines a name when, after indentation and any modifiers (`pub`, `pub(crate)`,
//! `export`, `default`, `public`, `private`, `protected`, `static`, `final`, `abstract`,
//! `async`, `unsafe`, `extern`, `override`, `sealed`), it starts with one of the keywords
//! `class`, `struct`, `enum`, `trait`, `interface`, `type`, `def`, `fn`, `function`,
//! `func` (Go methods too: `func (r *T) Name`), `const`, `static`, `let`, `var`,
//! `module`, `object`, `record`, `union`, `typedef`, followed by the name; or, at column 0,
//! when it assigns an upper-case constant (`MAX_SIZE = 10`). The names are given
//! lowercased, in order, without repeats. One pass over the text's lines.

const MODIFIERS: [&str; 15] = [
    "pub",
    "pub(crate)",
    "export",
    "default",
    "public",
    "private",
    "protected",
    "static",
    "final",
    "abstract",
    "async",
    "unsafe",
    "extern",
    "override",
    "sealed",
];

const KEYWORDS: [&str; 20] = [
    "class",
    "struct",
    "enum",
    "trait",
    "interface",
    "type",
    "def",
    "fn",
    "function",
    "func",
    "const",
    "static",
    "let",
    "var",
    "module",
    "object",
    "record",
    "union",
    "typedef",
    "impl",
];

/// The names `text` defines, lowercased, in order of first definition.
pub(crate) fn definitions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Some(name) = defined_name(line) {
            let name = name.to_lowercase();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The name one line defines, when it defines one.
fn defined_name(line: &str) -> Option<&str> {
    let at_column_zero = !line.starts_with([' ', '\t']);
    let mut rest = line.trim_start();
    loop {
        let word_end = rest.find(' ').unwrap_or(rest.len());
        let word = &rest[..word_end];
        if MODIFIERS.contains(&word) && word_end < rest.len() {
            rest = rest[word_end..].trim_start();
            continue;
        }
        if KEYWORDS.contains(&word) && word_end < rest.len() {
            let mut after = rest[word_end..].trim_start();
            // Go methods: `func (r *T) Name(`.
            if word == "func" && after.starts_with('(') {
                after = after[after.find(')')? + 1..].trim_start();
            }
            let name_end = after.find(|c: char| !is_ident(c)).unwrap_or(after.len());
            let name = &after[..name_end];
            return name
                .chars()
                .next()
                .filter(|c| c.is_alphabetic() || *c == '_')
                .map(|_| name);
        }
        break;
    }
    // An upper-case constant assigned at column 0: `MAX_SIZE = 10`, `DEFAULT: int = 3`.
    if at_column_zero {
        let name_end = line.find(|c: char| !is_ident(c)).unwrap_or(line.len());
        let name = &line[..name_end];
        let after = line[name_end..].trim_start();
        let assigns = (after.starts_with('=') && !after.starts_with("=="))
            || (after.starts_with(':') && after.contains('='));
        if name.len() >= 2
            && assigns
            && name.chars().any(|c| c.is_ascii_uppercase())
            && !name.chars().any(|c| c.is_ascii_lowercase())
        {
            return Some(name);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_in_common_languages() {
        let text = "\
class AsStringVisitor:
    def visit_unknown(self, node):
        pass
    async def fetch(self): ...
pub(crate) struct Parser<'a> {
pub enum Kind {
export default function renderManifest(x) {
export interface UserProps {
type Id = string;
func (s *Server) HandleConn(c net.Conn) {
public static final class Config {
const MAX_RETRIES: u32 = 3;
DEFAULT_TIMEOUT = 30
LEVELS: dict = {}
x = 3
if a == B:
    call(definitely_not)
";
        assert_eq!(
            definitions(text),
            [
                "asstringvisitor",
                "visit_unknown",
                "fetch",
                "parser",
                "kind",
                "rendermanifest",
                "userprops",
                "id",
                "handleconn",
                "config",
                "max_retries",
                "default_timeout",
                "levels",
            ]
        );
    }

    #[test]
    fn words_that_are_not_definitions() {
        assert_eq!(
            definitions("# def is a keyword\nreturn type(x)\nclass 2024\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            definitions("    CONSTANT = 1\nA == B\n"),
            Vec::<String>::new()
        );
    }
}
