//! The layout of a vocabulary's hash tables (token bytes → rank, and pair of ranks → the rank
//! their merge makes), shared by the build script that writes them and by [`super::vocab`],
//! which reads them.
//!
//! The table is open addressing with linear probing over `u32` entries, a power of two long
//! and at most half full. An entry holds the rank in its low [`RANK_BITS`] bits and a tag
//! (more bits of the key's hash) in the rest, so most probes that miss are rejected without
//! touching the token bytes. [`EMPTY`] marks a free slot.

/// How many low bits of an entry hold the rank (o200k_base has 199,998 ordinary tokens).
pub(crate) const RANK_BITS: u32 = 18;

/// The mask of an entry's rank bits.
pub(crate) const RANK_MASK: u32 = (1 << RANK_BITS) - 1;

/// A free slot. Its rank bits are all ones, which no rank may be.
pub(crate) const EMPTY: u32 = u32::MAX;

/// The hash of a token's bytes: 8-byte words folded by multiplication, then mixed (the
/// finalizer of MurmurHash3) so that every bit depends on every input bit.
#[inline]
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h
}

/// The key of a pair of ranks in a merge table: both ranks, little-endian.
#[inline]
pub(crate) fn pair_key(left: u32, right: u32) -> [u8; 8] {
    (u64::from(left) | u64::from(right) << 32).to_le_bytes()
}

/// The first slot probed for a key with hash `h` in a table of `mask + 1` slots.
#[inline]
pub(crate) fn home(h: u64, mask: usize) -> usize {
    h as usize & mask
}

/// The tag bits of an entry whose key has hash `h` (the entry's bits above [`RANK_BITS`]).
#[inline]
pub(crate) fn tag(h: u64) -> u32 {
    ((h >> 32) as u32) & !RANK_MASK
}
