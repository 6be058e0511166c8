//! Stage 2, dedupe: exact duplicates (same kind, same sha256 of identifying fields and
//! text), repeated runs of the same tool (the latest kept in full, the earlier ones folded
//! into one history line) and conservative near-duplicates (word-trigram containment ≥
//! [`NEAR_DUPLICATE`], same kind only; files and diffs never; errors only with the same
//! signatures and frames). Every merge is explained.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::optimizer::extract::{failing_tests, signatures};
use crate::optimizer::fragment::{is_later, Dropped, Unit, UnitIx};
use crate::optimizer::normalize::one_line;
use crate::optimizer::output::DropReason;
use crate::optimizer::parallel::par_map;
use crate::records::Kind;

/// Containment at or above which the earlier record is a near-duplicate of the later.
pub(crate) const NEAR_DUPLICATE: f64 = 0.9;
/// Containment at or above which a record counts as partly redundant.
pub(crate) const PARTLY_REDUNDANT: f64 = 0.5;
/// Records with fewer word trigrams are compared exactly only.
pub(crate) const MIN_SHINGLES: usize = 8;
/// Only the first this-many words of a record are shingled.
const MAX_SHINGLE_WORDS: usize = 20_000;
/// How many of a record's smallest shingle hashes index it.
pub(crate) const SKETCH: usize = 4;
/// How many earlier records one index entry remembers.
pub(crate) const POSTING_CAP: usize = 16;
/// How many earlier runs a history line lists.
const HISTORY_CAP: usize = 10;

/// What dedupe decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Deduped {
    /// Per unit: why it was dropped, or `None` when it stays.
    pub(crate) dropped: Vec<Option<Dropped>>,
    /// Per unit: the history line of earlier runs folded into it.
    pub(crate) history: Vec<Option<String>>,
    /// Per unit: the highest containment in a later record of the same kind (0 when below
    /// [`PARTLY_REDUNDANT`]). Superseding raises it for a run partly shown again by an error
    /// record (see [`crate::optimizer::supersede`]): a score input, not a merge.
    pub(crate) redundancy: Vec<f64>,
    /// Every merge, explained.
    pub(crate) merges: Vec<String>,
    /// Per unit: its [`shingles`] when the near-duplicate pass compared it (empty when it has
    /// no bucket or fewer than [`MIN_SHINGLES`]), for superseding to reuse.
    pub(crate) shingles: Vec<Vec<u64>>,
}

/// Runs the three dedupe passes over `units`, shingling on `threads` threads (the result
/// never depends on it).
pub(crate) fn dedupe(units: &[Unit], threads: usize) -> Deduped {
    let mut out = Deduped {
        dropped: vec![None; units.len()],
        history: vec![None; units.len()],
        redundancy: vec![0.0; units.len()],
        merges: Vec::new(),
        shingles: Vec::new(),
    };
    exact(units, &mut out);
    repeated_task(units, &mut out);
    repeated_runs(units, &mut out);
    out.shingles = near(units, &mut out, threads);
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
    let mut groups: HashIndex<[u8; 32], Vec<usize>> = HashIndex::default();
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
                reason: DropReason::Duplicate,
                by: Some(UnitIx(keep)),
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

/// A user message that says exactly what the task says (the prompt an importer made the
/// task) is the task's duplicate: the task shows it once.
fn repeated_task(units: &[Unit], out: &mut Deduped) {
    let Some(task) = units.iter().position(|u| u.kind == Kind::Task) else {
        return;
    };
    let said = units[task].text.trim();
    let dropped: Vec<usize> = (0..units.len())
        .filter(|&i| {
            out.dropped[i].is_none()
                && units[i].kind == Kind::Message
                && units[i].role == Some(crate::records::Role::User)
                && units[i].text.trim() == said
        })
        .collect();
    if dropped.is_empty() {
        return;
    }
    for &i in &dropped {
        out.dropped[i] = Some(Dropped {
            reason: DropReason::Duplicate,
            by: Some(UnitIx(task)),
            detail: "exact duplicate of the task".to_string(),
        });
    }
    out.merges.push(format!(
        "duplicate: task kept; dropped {}",
        list(units, &dropped)
    ));
}

fn repeated_runs(units: &[Unit], out: &mut Deduped) {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        if let Some(key) = &u.tool_key {
            groups.entry(key.as_str()).or_default().push(i);
        }
    }
    let groups: Vec<Vec<usize>> = groups
        .into_values()
        .flat_map(|g| same_output_groups(units, g))
        .collect();
    for group in option_variants(units, groups) {
        if group.len() < 2 {
            continue;
        }
        let keep = group
            .iter()
            .copied()
            .reduce(|a, b| latest(units, a, b))
            .unwrap_or(0);
        let key = units[keep].tool_key.as_deref().unwrap_or("");
        let mut earlier: Vec<usize> = group.into_iter().filter(|&i| i != keep).collect();
        earlier.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
            Some(true) => std::cmp::Ordering::Greater,
            Some(false) => std::cmp::Ordering::Less,
            None => a.cmp(&b),
        });
        for &i in &earlier {
            let detail = match units[i].tool_key.as_deref() {
                Some(k) if k != key => format!(
                    "earlier run of `{k}`, the same command with other options and the same \
                     failure as `{key}`; latest run is {}",
                    units[keep].id
                ),
                _ => format!("earlier run of `{key}`; latest run is {}", units[keep].id),
            };
            out.dropped[i] = Some(Dropped {
                reason: DropReason::RepeatedRun,
                by: Some(UnitIx(keep)),
                detail,
            });
        }
        let shown = &earlier[earlier.len().saturating_sub(HISTORY_CAP)..];
        let bare = is_bare(&units[keep]);
        // The day once, when every run shown has a time on the same day.
        let mut days = shown
            .iter()
            .map(|&i| run_time(&units[i]).map(|t| t.date_naive()));
        let day = days
            .next()
            .flatten()
            .filter(|&d| days.all(|x| x == Some(d)));
        let runs: Vec<String> = shown
            .iter()
            .map(|&i| {
                let summary = run_summary(&units[i], key, day.is_some());
                match bare.then(|| lines_not_in(&units[i].text, &units[keep].text)) {
                    Some(lines) if !lines.is_empty() => format!("{summary} {lines}"),
                    _ => summary,
                }
            })
            .collect();
        let more = earlier.len() - shown.len();
        let more = if more > 0 {
            format!(" and {more} before")
        } else {
            String::new()
        };
        let on = day.map_or(String::new(), |d| format!(" on {}", d.format("%Y-%m-%d")));
        out.history[keep] = Some(format!(
            "earlier runs ({}){on}: {}{more}",
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

/// Splits the runs of a bare tool name — one word and no arguments (`bash`, `shell`) —
/// into groups of near-identical output: such a name does not say what ran, so only the
/// output is evidence that two runs are the same command: with digits masked, each run's
/// word trigrams at least [`NEAR_DUPLICATE`] contained in the group's first and the other way
/// round (below [`MIN_SHINGLES`] trigrams, the same text). Other groups stay whole.
fn same_output_groups(units: &[Unit], group: Vec<usize>) -> Vec<Vec<usize>> {
    if !group.first().is_some_and(|&i| is_bare(&units[i])) {
        return vec![group];
    }
    let masked = |t: &str| t.replace(|c: char| c.is_ascii_digit(), "0");
    let mut out: Vec<(Vec<u64>, String, Vec<usize>)> = Vec::new();
    for i in group {
        let text = masked(&units[i].text);
        let sh = shingles(&text);
        let same = |(first, first_text, _): &&mut (Vec<u64>, String, Vec<usize>)| {
            if sh.len() >= MIN_SHINGLES && first.len() >= MIN_SHINGLES {
                containment(&sh, first) >= NEAR_DUPLICATE
                    && containment(first, &sh) >= NEAR_DUPLICATE
            } else {
                *first_text == text
            }
        };
        match out.iter_mut().find(|g| same(g)) {
            Some(g) => g.2.push(i),
            None => out.push((sh, text, vec![i])),
        }
    }
    out.into_iter().map(|(_, _, g)| g).collect()
}

/// Whether a run's tool is a bare name — one word and no arguments (`bash`, `shell`) —,
/// which does not say what ran.
fn is_bare(u: &Unit) -> bool {
    u.tool.is_some()
        && u.tool == u.tool_key
        && !u
            .tool_key
            .as_deref()
            .unwrap_or("")
            .contains(char::is_whitespace)
}

/// How many lines of an earlier run of a bare tool its history entry quotes at most.
const DIFFERING_LINES: usize = 3;

/// The lines of an earlier run that the latest run does not print, as written (digits
/// included), for its history entry: a bare tool name does not say what ran, so runs that
/// differ only in a number may be two commands (`cat config.prod.toml`, then `cat
/// config.dev.toml`), and the value the earlier one printed must survive the folding.
/// Up to [`DIFFERING_LINES`] lines are quoted (each cut to 200 bytes); more are counted.
fn lines_not_in(earlier: &str, latest: &str) -> String {
    let latest: HashSet<&str> = latest.lines().map(str::trim).collect();
    let differ: Vec<&str> = earlier
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !latest.contains(l))
        .collect();
    match differ.len() {
        0 => String::new(),
        n if n > DIFFERING_LINES => format!("printing {n} lines the latest run does not"),
        _ => format!(
            "printing {}",
            differ
                .iter()
                .map(|l| format!("`{}`", one_line(l, 200)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Joins groups of runs of one command line (no structured arguments) that differ only in
/// options — words starting with `-`, such as `-count=5` or `-v` — when the latest run of
/// each exited with the same code and shows the same failure: the same error signatures
/// and failing tests, compared with digits masked, and at least one of them. Such runs
/// repeat one attempt (`go test -run TestX -count=1`, then `-count=5`), not new ones.
fn option_variants(units: &[Unit], groups: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let latest_of = |g: &[usize]| {
        g.iter()
            .copied()
            .reduce(|a, b| latest(units, a, b))
            .unwrap_or(0)
    };
    let mut by_command: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (gi, g) in groups.iter().enumerate() {
        let u = &units[latest_of(g)];
        if let (Some(tool), Some(key)) = (&u.tool, &u.tool_key) {
            if tool == key {
                by_command
                    .entry(without_options(tool))
                    .or_default()
                    .push(gi);
            }
        }
    }
    let mut joined: Vec<Option<Vec<usize>>> = groups.into_iter().map(Some).collect();
    for members in by_command.into_values().filter(|m| m.len() > 1) {
        let mut by_failure: BTreeMap<(Option<i64>, Vec<String>), usize> = BTreeMap::new();
        for gi in members {
            let Some(g) = joined[gi].as_ref() else {
                continue;
            };
            let u = &units[latest_of(g)];
            let failure = failure_evidence(&u.text);
            if failure.is_empty() {
                continue;
            }
            match by_failure.entry((u.exit_code, failure)) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(gi);
                }
                std::collections::btree_map::Entry::Occupied(e) => {
                    let moved = joined[gi].take().unwrap_or_default();
                    if let Some(first) = joined[*e.get()].as_mut() {
                        first.extend(moved);
                    }
                }
            }
        }
    }
    joined.into_iter().flatten().collect()
}

/// A command line without its options (words starting with `-`).
pub(crate) fn without_options(command: &str) -> String {
    command
        .split_whitespace()
        .filter(|w| !w.starts_with('-'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error signatures and failing tests a run shows, digits masked, sorted, distinct.
fn failure_evidence(text: &str) -> Vec<String> {
    let mask = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('0') {
                out.push('0');
            }
        }
        out
    };
    let mut evidence: Vec<String> = signatures::signatures(text)
        .iter()
        .map(|s| s.key())
        .chain(failing_tests::failing_tests(text).iter().map(|t| mask(t)))
        .collect();
    evidence.sort_unstable();
    evidence.dedup();
    evidence
}

/// `exit 1 at 2024-05-01T10:00:00Z` (or `exit ?` / `#3` without a code / time), led by the
/// run's command when it differs from `key`, the latest run's.
/// When a run ran (UTC), if its record has a time.
fn run_time(u: &Unit) -> Option<chrono::DateTime<chrono::Utc>> {
    u.time.and_then(chrono::DateTime::from_timestamp_millis)
}

/// One earlier run in a history line: its exit code (and its command when it differs from
/// `key`), and when it ran — the time of day alone when the line names the day once
/// (`time_only`).
fn run_summary(u: &Unit, key: &str, time_only: bool) -> String {
    let exit = u
        .exit_code
        .map_or("exit ?".to_string(), |c| format!("exit {c}"));
    let exit = match u.tool_key.as_deref() {
        Some(k) if k != key => format!("`{}` {exit}", one_line(k, 120)),
        _ => exit,
    };
    let format = if time_only {
        "%H:%M:%SZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    match run_time(u) {
        Some(t) => format!("{exit} at {}", t.format(format)),
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
pub(crate) fn shingles(text: &str) -> Vec<u64> {
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
pub(crate) fn containment(a: &[u64], b: &[u64]) -> f64 {
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
/// dropped when its containment in the later one reaches [`NEAR_DUPLICATE`]. Returns each
/// unit's shingles (empty when it has no bucket or too few).
fn near(units: &[Unit], out: &mut Deduped, threads: usize) -> Vec<Vec<u64>> {
    let mut order: Vec<usize> = (0..units.len())
        .filter(|&i| out.dropped[i].is_none())
        .collect();
    // Each live unit's bucket and shingles, worked out up front (they depend on the unit
    // alone); units without a bucket or with too few shingles take no part.
    let mut sets: Vec<Option<(u64, Vec<u64>)>> = vec![None; units.len()];
    let found = par_map(&order, threads, |&i| {
        let b = bucket(&units[i])?;
        let set = shingles(&units[i].text);
        (set.len() >= MIN_SHINGLES).then_some((b, set))
    });
    for (&i, set) in order.iter().zip(found) {
        sets[i] = set;
    }
    // Oldest first, so each unit is compared with the earlier ones it may absorb.
    order.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
        Some(true) => std::cmp::Ordering::Greater,
        Some(false) => std::cmp::Ordering::Less,
        None => a.cmp(&b),
    });
    let mut index: HashIndex<(u64, u64), Vec<usize>> = HashIndex::default();
    let mut done: Vec<Vec<u64>> = vec![Vec::new(); units.len()];
    for &i in &order {
        let Some((b, set)) = sets[i].take() else {
            continue;
        };
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
            let score = containment(&done[c], &set);
            if score >= NEAR_DUPLICATE {
                out.dropped[c] = Some(Dropped {
                    reason: DropReason::NearDuplicate,
                    by: Some(UnitIx(i)),
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
        done[i] = set;
    }
    done
}

/// A map keyed by values that are hashes already (shingle hashes, bucket hashes, sha256
/// digests): it mixes them with one multiplication a word instead of hashing them again.
pub(crate) type HashIndex<K, V> = HashMap<K, V, BuildHasherDefault<HashKeyHasher>>;

/// The hasher of a [`HashIndex`]: for keys made of `u64` hashes.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HashKeyHasher(u64);

impl Hasher for HashKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for word in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..word.len()].copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(26) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, ErrorRecord, Message, Records, Role, ToolOutput};

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
            cwd: None,
        }
    }

    fn msg(text: &str) -> Message {
        Message {
            common: Common::default(),
            role: Role::Assistant,
            text: text.into(),
        }
    }

    #[test]
    fn a_user_message_that_repeats_the_task_is_its_duplicate() {
        let user = |text: &str| Message {
            role: Role::User,
            ..msg(text)
        };
        let records = Records {
            task: Some("Implement the plan:\n\n1. parse\n2. lex".into()),
            messages: vec![
                user("Implement the plan:\n\n1. parse\n2. lex\n"),
                user("Implement the plan: 1. parse"),
                msg("Implement the plan:\n\n1. parse\n2. lex"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units, 1);
        let by = d.dropped[1]
            .as_ref()
            .expect("the repeated prompt is dropped");
        assert_eq!((by.reason, by.by), (DropReason::Duplicate, Some(UnitIx(0))));
        // Canaries: a prompt that says less, and the agent saying the same, stay.
        assert!(d.dropped[2].is_none() && d.dropped[3].is_none());
        assert!(d.dropped[0].is_none());
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
        let d = dedupe(&units, 1);
        let dropped = d.dropped[0].as_ref().unwrap();
        assert_eq!(
            (dropped.reason, dropped.by),
            (DropReason::Duplicate, Some(UnitIx(2)))
        );
        assert!(d.dropped[1].is_none() && d.dropped[2].is_none());
        assert_eq!(d.merges.len(), 1);
    }

    #[test]
    fn repeated_runs_fold_into_a_history_line() {
        let deduped = |tool_outputs| {
            let records = Records {
                tool_outputs,
                ..Records::default()
            };
            let (units, _) = normalize(&records, None).unwrap();
            dedupe(&units, 1)
        };
        let d = deduped(vec![
            run("npm test", "FAIL a", 1, "2024-05-01T10:02:00Z"),
            run("npm test", "FAIL b", 1, "2024-05-01T10:00:00Z"),
            run("npm run lint", "ok", 0, "2024-05-01T10:01:00Z"),
        ]);
        assert_eq!(
            d.dropped[1].as_ref().unwrap().reason,
            DropReason::RepeatedRun
        );
        assert!(d.dropped[0].is_none() && d.dropped[2].is_none());
        // The day once, then the times.
        assert_eq!(
            d.history[0].as_deref(),
            Some("earlier runs (1) on 2024-05-01: exit 1 at 10:00:00Z")
        );
        // Runs on two days keep each one's date.
        let d = deduped(vec![
            run("npm test", "FAIL a", 1, "2024-05-01T10:02:00Z"),
            run("npm test", "FAIL b", 1, "2024-05-01T10:00:00Z"),
            run("npm test", "FAIL c", 2, "2024-04-30T23:59:00Z"),
        ]);
        assert_eq!(
            d.history[0].as_deref(),
            Some(
                "earlier runs (2): exit 2 at 2024-04-30T23:59:00Z, exit 1 at 2024-05-01T10:00:00Z"
            )
        );
    }

    #[test]
    fn runs_of_a_bare_tool_name_repeat_only_with_near_identical_output() {
        let log = |n: usize| {
            (0..30)
                .map(|i| format!("collected item number {i} of the suite in {n} ms\n"))
                .collect::<String>()
        };
        let records = Records {
            tool_outputs: vec![
                run(
                    "bash",
                    "timeout_seconds = 30\nretries = 5",
                    0,
                    "2024-05-01T10:00:00Z",
                ),
                run("bash", &log(1), 0, "2024-05-01T10:01:00Z"),
                run("bash", "3 passed", 0, "2024-05-01T10:02:00Z"),
                run("bash", &log(2), 0, "2024-05-01T10:03:00Z"),
                run("bash", "7 passed", 0, "2024-05-01T10:04:00Z"),
                run("npm test", "1 failed", 1, "2024-05-01T10:05:00Z"),
                run("npm test", "2 passed", 0, "2024-05-01T10:06:00Z"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units, 1);
        let reasons: Vec<Option<DropReason>> = d
            .dropped
            .iter()
            .map(|x| x.as_ref().map(|x| x.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                None,
                Some(DropReason::RepeatedRun),
                Some(DropReason::RepeatedRun),
                None,
                None,
                // A command line repeats whatever it printed.
                Some(DropReason::RepeatedRun),
                None,
            ]
        );
        // A bare name repeats only with near-identical output (the long log, digits
        // aside) or the same short text with digits masked ("3 passed", "7 passed").
        assert_eq!(d.dropped[1].as_ref().unwrap().by, Some(UnitIx(3)));
        assert_eq!(d.dropped[2].as_ref().unwrap().by, Some(UnitIx(4)));
    }

    #[test]
    fn runs_differing_only_in_options_with_the_same_failure_are_repeats() {
        let fail = |ms: u32| {
            format!("=== RUN   TestRender\n    render_test.go:57: got \"b,a\"\n--- FAIL: TestRender (0.0{ms}s)\nFAIL")
        };
        let records = Records {
            tool_outputs: vec![
                run(
                    "go test ./pkg -run TestRender -count=1",
                    &fail(12),
                    1,
                    "2024-05-01T10:00:00Z",
                ),
                run(
                    "go test ./pkg -run TestRender -count=5",
                    &fail(31),
                    1,
                    "2024-05-01T10:05:00Z",
                ),
                // Another test selected: not a repeat.
                run(
                    "go test ./pkg -run TestParse -count=1",
                    &fail(12),
                    1,
                    "2024-05-01T10:06:00Z",
                ),
                // The same command with another failure: not a repeat.
                run(
                    "go test ./pkg -run TestRender -v",
                    "--- FAIL: TestOther (0.01s)",
                    1,
                    "2024-05-01T10:07:00Z",
                ),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let d = dedupe(&units, 1);
        let dropped = d.dropped[0].as_ref().unwrap();
        assert_eq!(
            (dropped.reason, dropped.by),
            (DropReason::RepeatedRun, Some(UnitIx(1)))
        );
        assert!(
            dropped.detail.contains("other options"),
            "{}",
            dropped.detail
        );
        assert!(d.dropped[1..].iter().all(Option::is_none));
        assert_eq!(
            d.history[1].as_deref(),
            Some("earlier runs (1) on 2024-05-01: `go test ./pkg -run TestRender -count=1` exit 1 at 10:00:00Z")
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
        let d = dedupe(&units, 1);
        assert_eq!(
            d.dropped[0].as_ref().unwrap().reason,
            DropReason::NearDuplicate
        );
        assert_eq!(d.dropped[0].as_ref().unwrap().by, Some(UnitIx(1)));
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
        let d = dedupe(&units, 1);
        assert!(d.dropped.iter().all(Option::is_none));
    }

    #[test]
    fn containment_is_asymmetric() {
        assert_eq!(containment(&[1, 2], &[1, 2, 3, 4]), 1.0);
        assert_eq!(containment(&[1, 2, 3, 4], &[1, 2]), 0.5);
        assert_eq!(containment(&[], &[1]), 0.0);
    }
}
