//! Counting tokens once per fragment, on several threads; exact duplicates are counted
//! once. The counts never depend on the thread count.

use crate::optimizer::dedupe::HashIndex;
use crate::optimizer::fragment::{Fragment, Unit};
use crate::optimizer::parallel::par_map;
use crate::tokenizer::Tokenizer;

/// Token figures of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Tokens of every record's text as the optimizer reads it: fragments (excerpts
    /// aside), run and message headers, and lines that collapsing removed.
    pub(crate) input_tokens: usize,
}

/// Fills every fragment's `tokens` and returns the input's token figures.
pub(crate) fn count(
    units: &[Unit],
    fragments: &mut [Fragment],
    tokenizer: Tokenizer,
    threads: usize,
) -> Counts {
    // The first unit with each hash does the counting; copies reuse its figures.
    let mut first: HashIndex<[u8; 32], usize> = HashIndex::default();
    let mut source: Vec<usize> = Vec::with_capacity(units.len());
    for (i, u) in units.iter().enumerate() {
        source.push(*first.entry(u.hash).or_insert(i));
    }
    // Jobs: (unit, Some(fragment)) bodies, (unit, None) header and collapsed lines.
    let mut jobs: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, u) in units.iter().enumerate().filter(|(i, _)| source[*i] == *i) {
        jobs.push((i, None));
        jobs.extend(u.fragments.clone().map(|f| (i, Some(f))));
    }
    let text_of = |&(u, f): &(usize, Option<usize>)| -> usize {
        match f {
            Some(f) => tokenizer.count(fragments[f].text(units)),
            None => {
                let unit = &units[u];
                let meta = [
                    unit.header.as_deref(),
                    unit.path.as_deref(),
                    Some(unit.collapsed.as_str()),
                ];
                meta.into_iter()
                    .flatten()
                    .filter(|s| !s.is_empty())
                    .map(|s| tokenizer.count(s))
                    .sum()
            }
        }
    };
    let results: Vec<usize> = par_map(&jobs, threads, text_of);
    let mut per_unit = vec![0usize; units.len()];
    for (&(u, f), n) in jobs.iter().zip(results) {
        match f {
            Some(f) => {
                fragments[f].tokens = n;
                // An excerpt repeats lines of its output: no input of its own.
                if !fragments[f].excerpt {
                    per_unit[u] += n;
                }
            }
            None => per_unit[u] += n,
        }
    }
    for (i, u) in units.iter().enumerate() {
        let s = source[i];
        if s != i {
            per_unit[i] = per_unit[s];
            let originals: Vec<usize> = units[s]
                .fragments
                .clone()
                .map(|f| fragments[f].tokens)
                .collect();
            for (f, n) in u.fragments.clone().zip(originals) {
                fragments[f].tokens = n;
            }
        }
    }
    Counts {
        input_tokens: per_unit.iter().sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, Message, Records, Role};

    #[test]
    fn counts_do_not_depend_on_threads_and_copies_count_too() {
        let records = Records {
            messages: (0..200)
                .map(|i| Message {
                    common: Common::default(),
                    role: Role::User,
                    text: format!("message {} says hello", i % 50),
                })
                .collect(),
            ..Records::default()
        };
        let (units, frags) = normalize(&records, None).unwrap();
        let mut a = frags.clone();
        let mut b = frags.clone();
        let ca = count(&units, &mut a, Tokenizer::O200kBase, 1);
        let cb = count(&units, &mut b, Tokenizer::O200kBase, 4);
        assert_eq!(ca, cb);
        assert_eq!(a, b);
        let direct: usize = units
            .iter()
            .map(|u| {
                Tokenizer::O200kBase.count(&u.text)
                    + Tokenizer::O200kBase.count(u.header.as_deref().unwrap_or(""))
            })
            .sum();
        assert_eq!(ca.input_tokens, direct);
    }
}
