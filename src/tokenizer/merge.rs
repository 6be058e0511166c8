//! Byte-pair merging of one pre-tokenized piece, counting the tokens it becomes.
//!
//! tiktoken's rule: repeatedly merge the adjacent pair whose joined bytes have the lowest rank,
//! the leftmost of equal ranks first, until no adjacent pair joins into a token. A piece
//! that is itself a token costs one lookup. Short pieces run that rule literally (tiktoken's
//! own scan). Long pieces, where the scan's cost grows with the square of the length (a 64 MB
//! frame of `"x"` is one piece), use the backtracking encoder of GitHub's `bpe` crate (MIT,
//! <https://github.com/github/rust-gems>): it appends the longest token that is a valid pair
//! with the previous one and backs off when none is, keeping one bit per byte of positions
//! known to be dead ends, so time is linear in the length and memory is a bit per byte plus
//! four bytes per token. That it finds tiktoken's result rests on the `bpe` crate's argument
//! that an encoding is the only sequence whose adjacent pairs are all valid (see
//! `valid_pair`); the tests check it against the scan on every piece of the real corpus and
//! against tiktoken-rs on long runs and generated long pieces.

use super::vocab::Vocab;

/// From this length on a piece is counted by backtracking instead of the quadratic scan.
pub(crate) const LONG_PIECE: usize = 128;

/// How many checked pairs the backtracking encoder remembers.
const CHECKED_PAIRS: usize = 256;

/// Counts the tokens of `piece`. `parts` is scratch space reused across calls.
pub(crate) fn count(vocab: &Vocab, piece: &[u8], parts: &mut Vec<(usize, u32)>) -> usize {
    match piece.len() {
        0 => 0,
        1 => 1,
        _ if vocab.rank(piece).is_some() => 1,
        len if len < LONG_PIECE => count_by_scan(vocab, piece, parts),
        _ => count_by_backtracking(vocab, piece),
    }
}

/// tiktoken's scan: `parts` holds each part's start and the rank of it joined with the next
/// part; each round merges the lowest-ranked pair and re-ranks its neighbours.
pub(crate) fn count_by_scan(vocab: &Vocab, piece: &[u8], parts: &mut Vec<(usize, u32)>) -> usize {
    let rank_of = |bytes: &[u8]| vocab.rank(bytes).unwrap_or(u32::MAX);
    parts.clear();
    parts.extend((0..piece.len() - 1).map(|i| (i, rank_of(&piece[i..i + 2]))));
    parts.push((piece.len() - 1, u32::MAX));
    parts.push((piece.len(), u32::MAX));
    // The rank of the part at `i` joined with the next, once the part at `i + 1` is gone.
    let joined = |parts: &[(usize, u32)], i: usize| {
        if i + 3 < parts.len() {
            rank_of(&piece[parts[i].0..parts[i + 3].0])
        } else {
            u32::MAX
        }
    };
    loop {
        let (rank, i) = parts[..parts.len() - 1]
            .iter()
            .enumerate()
            .map(|(i, &(_, rank))| (rank, i))
            .min()
            .expect("at least one part");
        if rank == u32::MAX {
            break;
        }
        if i > 0 {
            parts[i - 1].1 = joined(parts, i - 1);
        }
        parts[i].1 = joined(parts, i);
        parts.remove(i + 1);
    }
    parts.len() - 1
}

/// The backtracking encoder: linear in the piece's length.
pub(crate) fn count_by_backtracking(vocab: &Vocab, piece: &[u8]) -> usize {
    // Bit `p` is cleared once no valid encoding of the prefix can end at `p`.
    let mut open = vec![u64::MAX; piece.len() / 64 + 1];
    let is_open = |open: &[u64], p: usize| open[p / 64] & (1 << (p % 64)) != 0;
    let mut tokens: Vec<u32> = Vec::new();
    // Pairs already checked, with their verdicts (direct-mapped): long repetitive pieces
    // check the same few pairs over and over.
    let mut checked = vec![(u32::MAX, u32::MAX, false); CHECKED_PAIRS];
    let mut is_valid = |last: u32, token: u32| {
        let key = u64::from(last) << 32 | u64::from(token);
        let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % CHECKED_PAIRS;
        let entry = &mut checked[slot];
        if (entry.0, entry.1) != (last, token) {
            *entry = (last, token, vocab.is_valid_pair(last, token));
        }
        entry.2
    };
    let mut pos = 0;
    let mut next = Some(vocab.longest_prefix(piece));
    while let Some(mut token) = next {
        let last = tokens.last().copied();
        loop {
            let end = pos + vocab.token_len(token);
            if is_open(&open, end) && last.is_none_or(|last| is_valid(last, token)) {
                tokens.push(token);
                pos = end;
                next = (end < piece.len()).then(|| vocab.longest_prefix(&piece[end..]));
                break;
            } else if let Some(shorter) = vocab.shorter_prefix(token) {
                token = shorter;
            } else {
                open[pos / 64] &= !(1 << (pos % 64));
                tokens.pop();
                pos -= last.map_or(0, |last| vocab.token_len(last));
                next = last;
                break;
            }
        }
    }
    tokens.len()
}
