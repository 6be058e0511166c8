//! Okapi BM25, the standard lexical retriever, for the real-session baseline.
//!
//! Terms are the lowercase ASCII-alphanumeric runs (with `_`) of two or more characters.
//! For a query `q` and a document `d` among `N` documents of mean length `avgdl`:
//! `score(q, d) = Σ_t idf(t) · f(t,d)·(k1+1) / (f(t,d) + k1·(1 − b + b·|d|/avgdl))`, with
//! `idf(t) = ln((N − n(t) + 0.5)/(n(t) + 0.5) + 1)`, `k1 = 1.2`, `b = 0.75`; each distinct
//! query term counts once.

use std::collections::{BTreeMap, BTreeSet};

/// The term-frequency saturation.
pub const K1: f64 = 1.2;
/// The length normalization.
pub const B: f64 = 0.75;

/// The terms of `text`, in order.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 2)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// An index over documents.
#[derive(Debug)]
pub struct Index {
    docs: Vec<BTreeMap<String, usize>>,
    lengths: Vec<usize>,
    document_frequency: BTreeMap<String, usize>,
    average_length: f64,
}

impl Index {
    /// Indexes `documents`.
    pub fn new<S: AsRef<str>>(documents: &[S]) -> Index {
        let mut docs = Vec::with_capacity(documents.len());
        let mut lengths = Vec::with_capacity(documents.len());
        let mut document_frequency: BTreeMap<String, usize> = BTreeMap::new();
        for d in documents {
            let words = terms(d.as_ref());
            lengths.push(words.len());
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            for w in words {
                *counts.entry(w).or_default() += 1;
            }
            for t in counts.keys() {
                *document_frequency.entry(t.clone()).or_default() += 1;
            }
            docs.push(counts);
        }
        let total: usize = lengths.iter().sum();
        let average_length = if lengths.is_empty() {
            0.0
        } else {
            total as f64 / lengths.len() as f64
        };
        Index {
            docs,
            lengths,
            document_frequency,
            average_length,
        }
    }

    /// The BM25 score of every document for `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let query: BTreeSet<String> = terms(query).into_iter().collect();
        let n = self.docs.len() as f64;
        let idf: Vec<(&String, f64)> = query
            .iter()
            .map(|t| {
                let df = self.document_frequency.get(t).copied().unwrap_or(0) as f64;
                (t, ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
            })
            .collect();
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(counts, &len)| {
                let norm = if self.average_length > 0.0 {
                    K1 * (1.0 - B + B * len as f64 / self.average_length)
                } else {
                    K1
                };
                idf.iter()
                    .map(|(t, idf)| {
                        let f = counts.get(*t).copied().unwrap_or(0) as f64;
                        idf * f * (K1 + 1.0) / (f + norm)
                    })
                    .sum()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_match_a_hand_computed_example() {
        // Three documents of lengths 2, 4 and 3 (mean 3); query terms "parser" (in docs 0
        // and 1) and "panic" (in doc 1 only, twice).
        let index = Index::new(&[
            "parser error",
            "parser panic panic now",
            "unrelated words here",
        ]);
        let s = index.scores("Parser panic");
        // idf(parser) = ln((3-2+0.5)/(2+0.5)+1) = ln(1.6); idf(panic) = ln((3-1+0.5)/1.5+1) = ln(8/3).
        let idf_parser = 1.6f64.ln();
        let idf_panic = (8.0f64 / 3.0).ln();
        // doc 0: f=1, |d|=2: norm = 1.2·(0.25 + 0.75·2/3) = 0.9.
        let d0 = idf_parser * 2.2 / (1.0 + 0.9);
        // doc 1: |d|=4: norm = 1.2·(0.25 + 0.75·4/3) = 1.5.
        let d1 = idf_parser * 2.2 / (1.0 + 1.5) + idf_panic * 2.0 * 2.2 / (2.0 + 1.5);
        assert!((s[0] - d0).abs() < 1e-12, "{} vs {d0}", s[0]);
        assert!((s[1] - d1).abs() < 1e-12, "{} vs {d1}", s[1]);
        assert_eq!(s[2], 0.0);
    }

    #[test]
    fn terms_are_lowercase_words_of_two_or_more() {
        assert_eq!(terms("A visit_unknown, x Foo2!"), ["visit_unknown", "foo2"]);
    }
}
