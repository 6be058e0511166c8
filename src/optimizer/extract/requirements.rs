//! Explicit requirements: sentences that say what must, must not, should, should not,
//! always or never happen, or tell the reader not to do something. Questions are not
//! requirements.

use std::sync::LazyLock;

use regex::Regex;

static MAY_HAVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)must|never|always|should|don.t|do\s+not").unwrap());

/// The requirement sentences in `text`, trimmed, in order.
pub fn requirements(text: &str) -> Vec<&str> {
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
pub fn is_requirement(sentence: &str) -> bool {
    if sentence.ends_with('?') {
        return false;
    }
    let lower = sentence.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, w)| match *w {
        "must" | "never" | "always" | "should" | "shouldn't" | "mustn't" => true,
        "don't" | "don’t" => true,
        "do" => words.get(i + 1) == Some(&"not"),
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
    fn contractions_count() {
        assert!(is_requirement("Don't change the schema"));
        assert!(is_requirement("don’t change the schema"));
    }
}
