//! Whether two adjacent tokens can both survive byte-pair merging, shared by the build
//! script (which derives each token's split from it) and [`super::merge`] (which uses it to
//! count long pieces).
//!
//! The rule is the one of GitHub's `bpe` crate (MIT, <https://github.com/github/rust-gems>):
//! undo the merges that built the two tokens, newest first, and check at each step that byte-pair
//! encoding would not have merged across the boundary earlier. A pair passes if no such merge
//! exists. With tiktoken's tie rule (the leftmost of equal ranks merges first) a merge across
//! the boundary into rank `r` beats the left token if `r < left` and the right token if
//! `r <= right`.

/// Whether `left` followed by `right` is a valid encoding of their bytes, given `merge(a, b)`
/// (the token that the merge of `a` and `b` makes, if that merge exists) and `split(t)` (the
/// two tokens whose merge makes `t`, or `(t, t)` for a token no merge makes).
pub(crate) fn is_valid_pair(
    merge: impl Fn(u32, u32) -> Option<u32>,
    split: impl Fn(u32) -> (u32, u32),
    mut left: u32,
    mut right: u32,
) -> bool {
    // Ranks below `limit` could still have merged across the boundary.
    let mut limit = u32::MAX;
    loop {
        if merge(left, right).is_some_and(|combined| combined < limit) {
            return false;
        }
        if left > right {
            limit = left;
            left = split(left).1;
            if left == limit {
                limit = right + 1;
                right = split(right).0;
                if right + 1 == limit {
                    return true;
                }
            }
        } else {
            limit = right + 1;
            right = split(right).0;
            if right + 1 == limit {
                limit = left;
                left = split(left).1;
                if left == limit {
                    return true;
                }
            }
        }
    }
}
