//! Code symbols in free text: `camelCase`, `snake_case`, `PascalCase` with two humps or
//! more, `a::b` and `a.b.c` paths, and names called as `name(`.

/// The code symbols in `text`, in order of appearance (duplicates kept). A qualified name
/// (`billing.computeTotal`, `std::io::Error`) is given whole and then as its last part.
pub(crate) fn symbols(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident_start(bytes[i]) || (i > 0 && is_ident_byte(bytes[i - 1])) {
            i += 1;
            continue;
        }
        // Scan a qualified name: idents joined by `.` or `::`.
        let start = i;
        let mut end = i;
        let mut parts = 0;
        let mut last_start;
        loop {
            let part_start = end;
            while end < bytes.len() && is_ident_byte(bytes[end]) {
                end += 1;
            }
            parts += 1;
            last_start = part_start;
            let sep = if bytes[end..].starts_with(b"::") {
                2
            } else if bytes[end..].starts_with(b".") {
                1
            } else {
                0
            };
            if sep > 0 && end + sep < bytes.len() && is_ident_start(bytes[end + sep]) {
                end += sep;
            } else {
                break;
            }
        }
        let whole = &text[start..end];
        let last = &text[last_start..end];
        let called = bytes.get(end) == Some(&b'(');
        if parts > 1 && (whole.contains("::") || looks_like_code(last) || called) {
            out.push(whole);
            if looks_like_code(last) || called {
                out.push(last);
            }
        } else if looks_like_code(whole) || (called && whole.len() >= 3) {
            out.push(whole);
        }
        i = end.max(i + 1);
    }
    out
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Whether one identifier is shaped like code rather than a word.
pub(crate) fn looks_like_code(ident: &str) -> bool {
    if ident.len() < 3 || !ident.bytes().all(is_ident_byte) {
        return false;
    }
    let b = ident.as_bytes();
    let inner_underscore = ident.trim_matches('_').contains('_');
    let camel = b
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    let humps = b
        .windows(2)
        .filter(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_lowercase())
        .count();
    inner_underscore
        || camel
        || (b[0].is_ascii_uppercase() && humps >= 2)
        || ident.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_shapes_are_symbols_words_are_not() {
        assert_eq!(
            symbols("The computeTotal in invoice_line raised TypeError while Total was fine"),
            vec!["computeTotal", "invoice_line", "TypeError"]
        );
    }

    #[test]
    fn qualified_names_give_whole_and_last_part() {
        assert_eq!(
            symbols("billing.computeTotal failed; std::io::Error too"),
            vec!["billing.computeTotal", "computeTotal", "std::io::Error"]
        );
    }

    #[test]
    fn calls_count_even_when_plain() {
        assert_eq!(symbols("call render() now"), vec!["render"]);
    }

    #[test]
    fn sentences_and_unicode_are_not_symbols() {
        assert!(symbols("It ends. Then more — naïve café.").is_empty());
        assert!(symbols("").is_empty());
    }
}
