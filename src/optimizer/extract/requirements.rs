//! Explicit requirements: sentences that say what must, must not, should or should not
//! happen, or is required or not allowed; imperatives that open with *always*, *never*,
//! *remember*, *ensure* or *make sure*; and *do not* / *don't* (unless said of oneself, "I
//! don't …"). Questions are not requirements.

use std::sync::LazyLock;

use regex::Regex;

static MAY_HAVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)must|never|always|should|don.t|do\s+not|required|allowed|remember|ensure|make\s+sure",
    )
    .unwrap()
});

/// The requirement sentences in `text`, trimmed, in order.
pub(crate) fn requirements(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    if !MAY_HAVE.is_match(text) {
        return out;
    }
    for line in text.lines() {
        for sentence in sentences(line) {
            if is_requirement(sentence) {
                out.push(sentence);
            }
        }
    }
    out
}

/// Splits a line at sentence ends (`. `, `! `, `? `, `; `), keeping the punctuation.
fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start();
        if trimmed.is_empty() {
            return None;
        }
        let bytes = trimmed.as_bytes();
        let mut end = trimmed.len();
        for i in 0..bytes.len().saturating_sub(1) {
            if matches!(bytes[i], b'.' | b'!' | b'?' | b';') && bytes[i + 1] == b' ' {
                end = i + 1;
                break;
            }
        }
        rest = &trimmed[end..];
        Some(trimmed[..end].trim())
    })
}

/// Whether a sentence states a requirement.
pub(crate) fn is_requirement(sentence: &str) -> bool {
    if sentence.ends_with('?') {
        return false;
    }
    let lower = sentence.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .collect();
    // Words that open an imperative sentence (`Never log tokens`, `Remember: …`).
    let lead = words
        .iter()
        .position(|w| !matches!(*w, "and" | "but" | "so" | "please" | "also" | "then"))
        .unwrap_or(0);
    words.iter().enumerate().any(|(i, w)| match *w {
        "must" | "should" | "shouldn't" | "mustn't" | "required" => true,
        "never" | "always" | "remember" | "ensure" => i == lead,
        "make" => i == lead && words.get(i + 1) == Some(&"sure"),
        "allowed" => i > 0 && words[i - 1] == "not",
        "don't" | "don’t" => i == 0 || words[i - 1] != "i",
        "do" => words.get(i + 1) == Some(&"not") && (i == 0 || words[i - 1] != "i"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modal_sentences_are_requirements() {
        assert_eq!(
            requirements("Fix the bug. Totals must be integer cents. Do not touch the API! Never log tokens; the rest is fine."),
            vec!["Totals must be integer cents.", "Do not touch the API!", "Never log tokens;"]
        );
        assert_eq!(
            requirements("You should keep the old name\nalways run lint"),
            vec!["You should keep the old name", "always run lint"]
        );
    }

    #[test]
    fn questions_and_plain_text_are_not() {
        assert!(requirements("Should I use floats? It works now. I do nothing.").is_empty());
        assert!(requirements("").is_empty());
    }

    #[test]
    fn descriptions_are_not_requirements() {
        assert!(!is_requirement("lol yes, that CI runner is always slow"));
        assert!(!is_requirement("I don't know why"));
        assert!(is_requirement(
            "Remember: the order is part of the contract"
        ));
        assert!(is_requirement("Please never push to main"));
        assert!(is_requirement("dateutil is not allowed"));
    }

    #[test]
    fn contractions_count() {
        assert!(is_requirement("Don't change the schema"));
        assert!(is_requirement("don’t change the schema"));
    }
}
