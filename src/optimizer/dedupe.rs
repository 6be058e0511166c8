//! Stage 2, dedupe: exact duplicates (same kind, same sha256 of identifying fields and
//! text), repeated runs of the same tool (the latest kept in full, the earlier ones folded
//! into one history line) and conservative near-duplicates (word-trigram containment ≥
//! [`NEAR_DUPLICATE`], same kind only; files and diffs only for the same path; errors only
//! with the same signatures and frames). Every merge is explained.

use std::collections::{BTreeMap, HashMap};

use crate::optimizer::extract::signatures;
use crate::optimizer::fragment::{is_later, Dropped, Kind, Unit};

/// Containment at or above which the earlier record is a near-duplicate of the later.
pub const NEAR_DUPLICATE: f64 = 0.9;
/// Containment at or above which a record counts as partly redundant.
pub const PARTLY_REDUNDANT: f64 = 0.5;
/// Records with fewer word trigrams are compared exactly only.
pub const MIN_SHINGLES: usize = 8;
/// Only the first this-many words of a record are shingled.
const MAX_SHINGLE_WORDS: usize = 20_000;
/// How many of a record's smallest shingle hashes index it.
const SKETCH: usize = 4;
/// How many earlier records one index entry remembers.
const POSTING_CAP: usize = 16;
/// How many earlier runs a history line lists.
const HISTORY_CAP: usize = 10;

/// What dedupe decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Deduped {
    /// Per unit: why it was dropped, or `None` when it stays.
    pub dropped: Vec<Option<Dropped>>,
    /// Per unit: the history line of earlier runs folded into it.
    pub history: Vec<Option<String>>,
    /// Per unit: the highest containment in a later record of the same kind (0 when below
    /// [`PARTLY_REDUNDANT`]).
    pub redundancy: Vec<f64>,
    /// Every merge, explained.
    pub merges: Vec<String>,
}

/// Runs the three dedupe passes over `units`.
pub fn dedupe(units: &[Unit]) -> Deduped {
    let mut out = Deduped {
        dropped: vec![None; units.len()],
        history: vec![None; units.len()],
        redundancy: vec![0.0; units.len()],
        merges: Vec::new(),
    };
    exact(units, &mut out);
    repeated_runs(units, &mut out);
    near(units, &mut out);
    out
}

/// The later of two units (by [`is_later`], else the one further down the input).
fn latest(units: &[Unit], a: usize, b: usize) -> usize {
    match is_later(&units[a], &units[b]) {
        Some(true) => a,
        Some(false) => b,
        None => a.max(b),
    }
}

fn exact(units: &[Unit], out: &mut Deduped) {
    let mut groups: HashMap<[u8; 32], Vec<usize>> = HashMap::new();
    for (i, u) in units.iter().enumerate() {
        if u.kind != Kind::ToolOutput && u.kind != Kind::Task {
            groups.entry(u.hash).or_default().push(i);
        }
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    groups.sort_unstable();
    for group in groups {
        let keep = group
            .iter()
            .copied()
            .reduce(|a, b| latest(units, a, b))
            .unwrap_or(0);
        let dropped: Vec<usize> = group.into_iter().filter(|&i| i != keep).collect();
        for &i in &dropped {
            out.dropped[i] = Some(Dropped {
                reason: "duplicate",
                by: Some(keep),
                detail: format!(
                    "exact duplicate of {} ({})",
                    units[keep].id,
                    units[keep].place()
                ),
            });
        }
        out.merges.push(format!(
            "duplicate: {} kept {} ({}); dropped {}",
            units[keep].kind.name(),
            units[keep].id,
            units[keep].place(),
            list(units, &dropped)
        ));
    }
}

fn repeated_runs(units: &[Unit], out: &mut Deduped) {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        if let Some(key) = &u.tool_key {
            groups.entry(key.as_str()).or_default().push(i);
        }
    }
    for (key, group) in groups {
        if group.len() < 2 {
            continue;
        }
        let keep = group
            .iter()
            .copied()
            .reduce(|a, b| latest(units, a, b))
            .unwrap_or(0);
        let mut earlier: Vec<usize> = group.into_iter().filter(|&i| i != keep).collect();
        earlier.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
            Some(true) => std::cmp::Ordering::Greater,
            Some(false) => std::cmp::Ordering::Less,
            None => a.cmp(&b),
        });
        for &i in &earlier {
            out.dropped[i] = Some(Dropped {
                reason: "repeated_run",
                by: Some(keep),
                detail: format!("earlier run of `{key}`; latest run is {}", units[keep].id),
            });
        }
        let shown = &earlier[earlier.len().saturating_sub(HISTORY_CAP)..];
        let runs: Vec<String> = shown.iter().map(|&i| run_summary(&units[i])).collect();
        let more = earlier.len() - shown.len();
        let more = if more > 0 {
            format!(" and {more} before")
        } else {
            String::new()
        };
        out.history[keep] = Some(format!(
            "earlier runs ({}): {}{more}",
            earlier.len(),
            runs.join(", ")
        ));
        out.merges.push(format!(
            "repeated_run: `{key}` kept latest {} ({}); folded {} into one history line",
            units[keep].id,
            units[keep].place(),
            list(units, &earlier)
        ));
    }
}

/// `exit 1 at 2024-05-01T10:00:00Z` (or `exit ?` / `#3` without a code / time).
fn run_summary(u: &Unit) -> String {
    let exit = u
        .exit_code
        .map_or("exit ?".to_string(), |c| format!("exit {c}"));
    match u.time.and_then(chrono::DateTime::from_timestamp_millis) {
        Some(t) => format!("{exit} at {}", t.format("%Y-%m-%dT%H:%M:%SZ")),
        None => format!("{exit} (#{})", u.index),
    }
}

fn list(units: &[Unit], ids: &[usize]) -> String {
    const SHOWN: usize = 20;
    let mut s: Vec<String> = ids
        .iter()
        .take(SHOWN)
        .map(|&i| format!("{} ({})", units[i].id, units[i].place()))
        .collect();
    if ids.len() > SHOWN {
        s.push(format!("and {} more", ids.len() - SHOWN));
    }
    s.join(", ")
}

/// The bucket a unit's near-duplicates must share, as a hash, or `None` when it never
/// merges.
fn bucket(u: &Unit) -> Option<u64> {
    bucket_key(u).map(|k| fnv(k.as_bytes()))
}

fn bucket_key(u: &Unit) -> Option<String> {
    match u.kind {
        Kind::Message => Some(format!("m\0{:?}", u.role)),
        Kind::ToolOutput => Some("t".into()),
        // Older file snapshots are superseded instead; a diff and its revert look alike.
        Kind::File | Kind::Diff => None,
        Kind::Error => {
            // Same signature and the very same stack: never the error type alone.
            let (first, stack) = u.text.split_once('\n').unwrap_or((&u.text, ""));
            let sig = signatures::signature(first).map(|s| s.key())?;
            Some(format!("e\0{sig}\0{stack}"))
        }
        Kind::Decision => Some(format!("d\0{:?}", u.decision_status)),
        Kind::Task | Kind::TestResult => None,
    }
}

/// The sorted, distinct hashes of a text's word trigrams.
pub fn shingles(text: &str) -> Vec<u64> {
    let words: Vec<u64> = text
        .split_whitespace()
        .take(MAX_SHINGLE_WORDS)
        .map(|w| fnv(w.as_bytes()))
        .collect();
    let mut out: Vec<u64> = words
        .windows(3)
        .map(|w| w[0].rotate_left(21) ^ w[1].rotate_left(42) ^ w[2])
        .map(|h| h.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// |a ∩ b| / |a| for sorted sets.
pub fn containment(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common as f64 / a.len() as f64
}

/// Near-duplicates: each unit is indexed by its [`SKETCH`] smallest shingle hashes within
/// its bucket; a later unit sharing one of them is a candidate, and the earlier unit is
/// dropped when its containment in the later one reaches [`NEAR_DUPLICATE`].
fn near(units: &[Unit], out: &mut Deduped) {
    let mut order: Vec<usize> = (0..units.len())
        .filter(|&i| out.dropped[i].is_none())
        .collect();
    // Oldest first, so each unit is compared with the earlier ones it may absorb.
    order.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
        Some(true) => std::cmp::Ordering::Greater,
        Some(false) => std::cmp::Ordering::Less,
        None => a.cmp(&b),
    });
    let mut index: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    let mut sets: Vec<Vec<u64>> = vec![Vec::new(); units.len()];
    for &i in &order {
        let Some(b) = bucket(&units[i]) else { continue };
        let set = shingles(&units[i].text);
        if set.len() < MIN_SHINGLES {
            continue;
        }
        let mut candidates: Vec<usize> = set
            .iter()
            .take(SKETCH)
            .filter_map(|h| index.get(&(b, *h)))
            .flatten()
            .copied()
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for c in candidates {
            if out.dropped[c].is_some() {
                continue;
            }
            let score = containment(&sets[c], &set);
            if score >= NEAR_DUPLICATE {
                out.dropped[c] = Some(Dropped {
                    reason: "near_duplicate",
                    by: Some(i),
                    detail: format!(
                        "{:.0}% of its word trigrams recur in the later {} ({})",
                        score * 100.0,
                        units[i].id,
                        units[i].place()
                    ),
                });
                out.merges.push(format!(
                    "near_duplicate: {} {} ({}) is {:.0}% contained in later {} ({}); kept the later",
                    units[c].kind.name(),
                    units[c].id,
                    units[c].place(),
                    score * 100.0,
                    units[i].id,
                    units[i].place()
                ));
            } else if score >= PARTLY_REDUNDANT && score > out.redundancy[c] {
                out.redundancy[c] = score;
            }
        }
        for h in set.iter().take(SKETCH) {
            let posting = index.entry((b, *h)).or_default();
            if posting.len() == POSTING_CAP {
                posting.remove(0);
            }
            posting.push(i);
        }
        sets[i] = set;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::optimizer::records::{Common, ErrorRecord, Message, Records, Role, ToolOutput};

    fn run(tool: &str, out: &str, exit: i64, ts: &str) -> ToolOutput {
        ToolOutput {
            common: Common {
                timestamp: Some(ts.into()),
                ..Common::default()
            },
            tool: tool.into(),
            args: None,
            output: out.into(),
            exit_code: Some(exit),
        }
    }

    fn msg(text: &str) -> Message {
        Message {
            common: Common::default(),
            role: Role::Assistant,
            text: text.into(),
        }
    }

    fn error(message: &str, stack: &str) -> ErrorRecord {
        ErrorRecord {
            common: Common::default(),
            message: message.into(),
            stack: Some(stack.into()),
        }
    }

    #[test]
    fn exact_duplicates_keep_the_latest() {
        let records = Records {
            messages: vec![msg("same words"), msg("other"), msg("same words")],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units);
        let dropped = d.dropped[0].as_ref().unwrap();
        assert_eq!((dropped.reason, dropped.by), ("duplicate", Some(2)));
        assert!(d.dropped[1].is_none() && d.dropped[2].is_none());
        assert_eq!(d.merges.len(), 1);
    }

    #[test]
    fn repeated_runs_fold_into_a_history_line() {
        let records = Records {
            tool_outputs: vec![
                run("npm test", "FAIL a", 1, "2024-05-01T10:02:00Z"),
                run("npm test", "FAIL b", 1, "2024-05-01T10:00:00Z"),
                run("npm run lint", "ok", 0, "2024-05-01T10:01:00Z"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units);
        assert_eq!(d.dropped[1].as_ref().unwrap().reason, "repeated_run");
        assert!(d.dropped[0].is_none() && d.dropped[2].is_none());
        assert_eq!(
            d.history[0].as_deref(),
            Some("earlier runs (1): exit 1 at 2024-05-01T10:00:00Z")
        );
    }

    #[test]
    fn near_duplicates_merge_conservatively() {
        let base = "the invoice total is computed from the line items and then rounded to cents before tax is applied to it";
        let records = Records {
            messages: vec![
                msg(base),
                msg(&format!("{base} again")),
                msg("something else entirely that is long enough to shingle here"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units);
        assert_eq!(d.dropped[0].as_ref().unwrap().reason, "near_duplicate");
        assert_eq!(d.dropped[0].as_ref().unwrap().by, Some(1));
        assert!(d.dropped[2].is_none());
    }

    #[test]
    fn errors_of_the_same_type_elsewhere_do_not_merge() {
        let msg_text = "TypeError: Cannot read properties of undefined (reading 'id') while rendering the invoice page for a customer";
        let records = Records {
            errors: vec![
                error(msg_text, "    at render (src/a.ts:1:1)"),
                error(msg_text, "    at render (src/b.ts:9:1)"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units);
        assert!(d.dropped.iter().all(Option::is_none));
    }

    #[test]
    fn containment_is_asymmetric() {
        assert_eq!(containment(&[1, 2], &[1, 2, 3, 4]), 1.0);
        assert_eq!(containment(&[1, 2, 3, 4], &[1, 2]), 0.5);
        assert_eq!(containment(&[], &[1]), 0.0);
    }
}
