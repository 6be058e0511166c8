//! Words for lexical overlap: lowercase alphanumeric runs of three characters or more
//! that are not common English stop words, lightly stemmed (`totals` → `total`,
//! `rounding` → `round`) so inflections still match.

use std::ops::ControlFlow;

/// Words too common to signal relevance.
const STOP_WORDS: &[&str] = &[
    "about", "after", "all", "also", "and", "any", "are", "because", "been", "but", "can", "could",
    "did", "does", "doing", "done", "for", "from", "get", "got", "had", "has", "have", "her",
    "here", "his", "how", "into", "its", "just", "let", "like", "make", "may", "more", "not",
    "now", "off", "one", "only", "our", "out", "please", "should", "some", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "too", "use", "using",
    "very", "was", "way", "were", "what", "when", "where", "which", "while", "who", "why", "will",
    "with", "would", "yes", "you", "your",
];

/// The longest stop word, in bytes: a longer word is none.
const LONGEST_STOP_WORD: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < STOP_WORDS.len() {
        if STOP_WORDS[i].len() > longest {
            longest = STOP_WORDS[i].len();
        }
        i += 1;
    }
    longest
};

/// Calls `f` with every term of `text` (lowercased, stop words removed), in order.
pub(crate) fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    let _ = try_for_each_term(text, |t| {
        f(t);
        ControlFlow::Continue(())
    });
}

/// Calls `f` with every term of `text`, in order, until it breaks (then returns its break).
pub(crate) fn try_for_each_term(
    text: &str,
    mut f: impl FnMut(&str) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut buf = String::new();
    let mut emit = |word: &str| -> ControlFlow<()> {
        if word.len() < 3 {
            return ControlFlow::Continue(());
        }
        buf.clear();
        if word.is_ascii() {
            buf.push_str(word);
            buf.make_ascii_lowercase();
        } else {
            buf.extend(word.chars().flat_map(char::to_lowercase));
            if buf.chars().count() < 3 {
                return ControlFlow::Continue(());
            }
        }
        if buf.len() > LONGEST_STOP_WORD || STOP_WORDS.binary_search(&buf.as_str()).is_err() {
            f(stem(&buf))?;
        }
        ControlFlow::Continue(())
    };
    for word in words(text) {
        emit(word)?;
        // `TestRenderManifest` also gives `test`, `render`, `manifest`.
        let b = word.as_bytes();
        if word.is_ascii()
            && b.windows(2)
                .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase())
        {
            let mut start = 0;
            for i in 1..b.len() {
                let hump = b[i].is_ascii_uppercase()
                    && (b[i - 1].is_ascii_lowercase()
                        || b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())
                            && b[i - 1].is_ascii_uppercase());
                if hump {
                    emit(&word[start..i])?;
                    start = i;
                }
            }
            emit(&word[start..])?;
        }
    }
    ControlFlow::Continue(())
}

/// The non-empty runs of alphanumeric characters of `text`, in order: `text.split(|c|
/// !c.is_alphanumeric())` without its empty parts, ASCII read byte by byte.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        let mut start = None;
        while at < bytes.len() {
            let (alphanumeric, len) = match bytes[at] {
                b if b.is_ascii() => (b.is_ascii_alphanumeric(), 1),
                _ => {
                    let c = text[at..].chars().next().expect("a character starts here");
                    (c.is_alphanumeric(), c.len_utf8())
                }
            };
            match (alphanumeric, start) {
                (true, None) => start = Some(at),
                (false, Some(s)) => {
                    at += len;
                    return Some(&text[s..at - len]);
                }
                _ => {}
            }
            at += len;
        }
        start.map(|s| &text[s..])
    })
}

/// Cuts one common English suffix (`ing`, `ed`, `es`, `s`) when at least three
/// characters stay.
pub(crate) fn stem(word: &str) -> &str {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            if stem.len() >= 3 && !stem.ends_with('s') {
                return stem;
            }
        }
    }
    word
}

/// The distinct terms of `text`, sorted.
pub(crate) fn term_set(text: &str) -> std::collections::BTreeSet<String> {
    let mut set = std::collections::BTreeSet::new();
    for_each_term(text, |t| {
        set.insert(t.to_string());
    });
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn camel_case_gives_its_parts_too() {
        let set = term_set("TestRenderManifest parseHTTPHeader");
        for t in [
            "testrendermanifest",
            "test",
            "render",
            "manifest",
            "parsehttpheader",
            "parse",
            "http",
            "header",
        ] {
            assert!(set.contains(t), "{t} in {set:?}");
        }
    }

    #[test]
    fn stems_match_inflections() {
        assert_eq!(stem("totals"), "total");
        assert_eq!(stem("rounding"), "round");
        assert_eq!(stem("failed"), "fail");
        assert_eq!(stem("fixes"), "fix");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("is"), "is");
    }

    #[test]
    fn terms_are_lowercase_and_filtered() {
        let set = term_set("Fix the Billing rounding in computeTotal, please. Ünïcode ok");
        let got: Vec<&str> = set.iter().map(String::as_str).collect();
        assert_eq!(
            got,
            vec![
                "bill",
                "compute",
                "computetotal",
                "fix",
                "round",
                "total",
                "ünïcode"
            ]
        );
        assert!(term_set("").is_empty());
    }

    #[test]
    fn words_are_the_alphanumeric_runs_split_gives() {
        for text in [
            "",
            "a",
            "Fix the Billing rounding, please.",
            "  -- x1 y_2 ÜnÏcode—naïve 東京 ٣٤ ok\n\tend",
            "trailing word",
            "½ⅷ²",
        ] {
            let by_split: Vec<&str> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            assert_eq!(words(text).collect::<Vec<_>>(), by_split, "{text:?}");
        }
    }

    #[test]
    fn a_break_stops_the_terms() {
        let mut seen = Vec::new();
        let flow = try_for_each_term("alpha beta gamma", |t| {
            seen.push(t.to_string());
            if t == "beta" {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(flow, ControlFlow::Break(()));
        assert_eq!(seen, ["alpha", "beta"]);
        assert_eq!(LONGEST_STOP_WORD, 7);
    }
}
