//! Writes the compact vocabularies of `src/tokenizer/vocab.rs` into `OUT_DIR`.
//!
//! The token bytes come from the `tiktoken-rs` crate (OpenAI's tiktoken vocabularies, MIT
//! licence): rank by rank, `CoreBPE::decode_bytes(&[rank])` until the first rank that is not
//! an ordinary token. For each vocabulary five little-endian files are written:
//! - `NAME.bytes`: every token's bytes, concatenated in rank order;
//! - `NAME.offsets`: `u32` start of each token in `.bytes`, plus the total length;
//! - `NAME.table`: the hash table bytes → rank (layout in `src/tokenizer/table.rs`);
//! - `NAME.prefix`: `u32` per token, the longest shorter token that is its prefix (or `u32::MAX`);
//! - `NAME.split`: two `u32` per token, the pair whose merge makes it (itself twice if none);
//! - `NAME.merges`: the hash table pair → the token their merge makes (same layout, keyed by
//!   the pair's two ranks as eight little-endian bytes);
//! - `NAME.longest`: one byte per first two bytes (`256 * first + second`), the length of the
//!   longest token starting with them (0 if none).

use std::collections::HashMap;
use std::path::Path;

#[path = "src/tokenizer/table.rs"]
mod table;
#[path = "src/tokenizer/valid_pair.rs"]
mod valid_pair;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/tokenizer/table.rs");
    println!("cargo:rerun-if-changed=src/tokenizer/valid_pair.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let out = Path::new(&out);
    let o200k = tiktoken_rs::o200k_base().expect("tiktoken-rs loads o200k_base");
    write_vocab(out, "o200k_base", &ordinary_tokens(&o200k));
    let cl100k = tiktoken_rs::cl100k_base().expect("tiktoken-rs loads cl100k_base");
    write_vocab(out, "cl100k_base", &ordinary_tokens(&cl100k));
}

/// Every ordinary token's bytes, in rank order (ranks are contiguous from 0).
fn ordinary_tokens(bpe: &tiktoken_rs::CoreBPE) -> Vec<Vec<u8>> {
    (0..)
        .map_while(|rank| bpe.decode_bytes(&[rank]).ok())
        .collect()
}

fn write_vocab(out: &Path, name: &str, tokens: &[Vec<u8>]) {
    let count = u32::try_from(tokens.len()).expect("fewer than 2^32 tokens");
    assert!(
        count < table::RANK_MASK,
        "{name}: ranks must fit in the table's rank bits"
    );
    let ranks: HashMap<&[u8], u32> = tokens.iter().zip(0..).map(|(t, r)| (&t[..], r)).collect();
    assert_eq!(ranks.len(), tokens.len(), "{name}: duplicate token bytes");

    let mut bytes = Vec::new();
    let mut offsets = Vec::with_capacity(tokens.len() + 1);
    let mut longest = vec![0u8; 1 << 16];
    for token in tokens {
        offsets.push(u32::try_from(bytes.len()).expect("vocabulary under 4 GB"));
        bytes.extend_from_slice(token);
        let len = u8::try_from(token.len()).expect("tokens shorter than 256 bytes");
        if let [first, second, ..] = token[..] {
            let at = usize::from(first) << 8 | usize::from(second);
            longest[at] = longest[at].max(len);
        }
    }
    offsets.push(u32::try_from(bytes.len()).expect("vocabulary under 4 GB"));

    let mut slots_table = vec![table::EMPTY; (tokens.len() * 2).next_power_of_two()];
    let mask = mask_of(&slots_table);
    for (token, rank) in tokens.iter().zip(0..) {
        let h = table::hash(token);
        let mut slot = table::home(h, mask);
        while slots_table[slot] != table::EMPTY {
            slot = (slot + 1) & mask;
        }
        slots_table[slot] = rank | table::tag(h);
    }

    let prefix: Vec<u32> = tokens
        .iter()
        .map(|t| {
            (1..t.len())
                .rev()
                .find_map(|len| ranks.get(&t[..len]).copied())
                .unwrap_or(u32::MAX)
        })
        .collect();

    // Each token's split, as GitHub's `bpe` crate derives it: the longest prefix token whose
    // rest is a token, both older than it, that form a valid pair.
    let mut split: Vec<(u32, u32)> = Vec::with_capacity(tokens.len());
    let mut merges: HashMap<(u32, u32), u32> = HashMap::new();
    for (token, id) in tokens.iter().zip(0u32..) {
        let mut left = prefix[id as usize];
        let mut found = (id, id);
        while left != u32::MAX {
            let rest = &token[tokens[left as usize].len()..];
            if let Some(&right) = ranks.get(rest) {
                if left < id
                    && right < id
                    && valid_pair::is_valid_pair(
                        |a, b| merges.get(&(a, b)).copied(),
                        |t| split[t as usize],
                        left,
                        right,
                    )
                {
                    merges.insert((left, right), id);
                    found = (left, right);
                    break;
                }
            }
            left = prefix[left as usize];
        }
        split.push(found);
    }

    let mut merges_table = vec![table::EMPTY; (tokens.len() * 2).next_power_of_two()];
    for (id, &(left, right)) in (0u32..).zip(&split) {
        if (left, right) != (id, id) {
            let h = table::hash(&table::pair_key(left, right));
            let mut slot = table::home(h, mask_of(&merges_table));
            while merges_table[slot] != table::EMPTY {
                slot = (slot + 1) & mask_of(&merges_table);
            }
            merges_table[slot] = id | table::tag(h);
        }
    }

    let words = |values: &mut dyn Iterator<Item = u32>| -> Vec<u8> {
        values.flat_map(u32::to_le_bytes).collect()
    };
    let write = |ext: &str, data: &[u8]| {
        std::fs::write(out.join(format!("{name}.{ext}")), data).expect("write to OUT_DIR");
    };
    write("bytes", &bytes);
    write("offsets", &words(&mut offsets.into_iter()));
    write("table", &words(&mut slots_table.into_iter()));
    write("prefix", &words(&mut prefix.into_iter()));
    write(
        "split",
        &words(&mut split.into_iter().flat_map(|(a, b)| [a, b])),
    );
    write("merges", &words(&mut merges_table.into_iter()));
    write("longest", &longest);
}

/// The index mask of a table whose length is a power of two.
fn mask_of(table: &[u32]) -> usize {
    table.len() - 1
}
