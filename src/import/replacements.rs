//! A string replacement applied to a file's current view, as the clients' edit tools make
//! it (Claude Code's `Edit`, Gemini CLI's `replace`): the old text must be found as often as
//! the call says, else the view is not the file any more.

/// How many times a replacement's old text must be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Times {
    /// Exactly once (Claude Code's `Edit`).
    Once,
    /// At least once, every one replaced (`replace_all`).
    All,
    /// Exactly this many, every one replaced (Gemini CLI's `expected_replacements`).
    Exactly(usize),
}

/// `content` with every `old` replaced by `new`, when `old` is found as `times` says;
/// `None` otherwise, and for an empty `old`.
pub(crate) fn replaced(content: &str, old: &str, new: &str, times: Times) -> Option<String> {
    if old.is_empty() {
        return None;
    }
    let found = content.matches(old).count();
    let fits = match times {
        Times::Once => found == 1,
        Times::All => found >= 1,
        Times::Exactly(n) => found == n,
    };
    fits.then(|| content.replace(old, new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_text_is_found_as_often_as_the_call_says_or_nothing_is_replaced() {
        assert_eq!(
            replaced("a b a", "b", "c", Times::Once).as_deref(),
            Some("a c a")
        );
        assert_eq!(replaced("a b a", "a", "c", Times::Once), None);
        assert_eq!(
            replaced("a b a", "a", "c", Times::All).as_deref(),
            Some("c b c")
        );
        assert_eq!(
            replaced("a b a", "a", "c", Times::Exactly(2)).as_deref(),
            Some("c b c")
        );
        assert_eq!(replaced("a b a", "a", "c", Times::Exactly(1)), None);
        assert_eq!(replaced("a b a", "x", "c", Times::All), None);
        assert_eq!(replaced("a", "", "c", Times::All), None);
    }
}
