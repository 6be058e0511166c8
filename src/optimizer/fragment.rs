//! The optimizer's working types: a normalized record ([`Unit`]) and the fragments cut
//! from it ([`Fragment`]).
//!
//! A unit is one input record after validation and normalization; its `text` is what the
//! context may show. Structured records (errors, files, diffs, test results, decisions, the
//! task) give exactly one fragment; messages and tool outputs are cut into paragraph chunks
//! (see [`crate::optimizer::chunk`]).

use std::ops::Range;

use crate::optimizer::output::DropReason;
use crate::records::{DecisionStatus, Kind, Role, TestStatus};

/// A unit's position in the build's list of units (task first, then the records in list
/// order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct UnitIx(pub usize);

/// A fragment's position in the build's list of fragments (units in order, each unit's
/// chunks in order, its excerpt last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FragmentIx(pub usize);

/// One input record, validated and normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The record id: the caller's, or `rec_` + a content hash prefix.
    pub(crate) id: String,
    /// The record's kind.
    pub(crate) kind: Kind,
    /// Position among all records (task, messages, toolOutputs, errors, files, diffs,
    /// testResults, decisions — in that order).
    pub(crate) order: usize,
    /// Position within its own list.
    pub(crate) index: usize,
    /// The record's time in Unix milliseconds, when it has one.
    pub(crate) time: Option<i64>,
    /// Caller priority in 0..=1.
    pub(crate) priority: f64,
    /// The file path of a file or diff.
    pub(crate) path: Option<String>,
    /// The role of a message.
    pub(crate) role: Option<Role>,
    /// The tool of a tool output.
    pub(crate) tool: Option<String>,
    /// The tool and its canonical arguments: runs with equal keys are repeats.
    pub(crate) tool_key: Option<String>,
    /// What a tool output's call names: its command line when its arguments give one
    /// (`command` or `cmd`, a string or a list of words), else its arguments' one-word
    /// string values (a `path`, a `pattern`), never their free text (a description, a
    /// prompt, a plan's items).
    pub(crate) invocation: Option<String>,
    /// The exit code of a tool output.
    pub(crate) exit_code: Option<i64>,
    /// The name of a test result.
    pub(crate) test_name: Option<String>,
    /// The status of a test result.
    pub(crate) test_status: Option<TestStatus>,
    /// The status of a decision.
    pub(crate) decision_status: Option<DecisionStatus>,
    /// A line shown once before the unit's first fragment in a section (`$ npm test (exit 1)`).
    pub(crate) header: Option<String>,
    /// The normalized text the fragments are cut from.
    pub(crate) text: String,
    /// Lines removed by collapsing repeated log lines (for input token accounting).
    pub(crate) collapsed: String,
    /// How many lines collapsing removed.
    pub(crate) collapsed_lines: usize,
    /// The exceptional lines of a big tool output (see [`crate::optimizer::excerpt`]),
    /// empty when it has none; its fragment is the unit's last.
    pub(crate) excerpt: String,
    /// sha256 of the kind, the identifying fields and the normalized text.
    pub(crate) hash: [u8; 32],
    /// The unit's fragments, as a range into the fragment list.
    pub(crate) fragments: Range<usize>,
}

impl Unit {
    /// Where the record sits in the input, as error messages name it (`toolOutputs[2]`).
    pub(crate) fn place(&self) -> String {
        match self.kind {
            Kind::Task => "task".to_string(),
            kind => format!("{}[{}]", kind.list(), self.index),
        }
    }
}

/// A piece of a unit's text: the smallest thing the context keeps or drops.
#[derive(Debug, Clone, PartialEq)]
pub struct Fragment {
    /// `fr_` + the first 12 hex digits of sha256(record id, chunk number, text).
    pub(crate) id: String,
    /// Its unit.
    pub(crate) unit: UnitIx,
    /// Its number within the unit (0-based).
    pub(crate) chunk: usize,
    /// Its bytes within the unit's text.
    pub(crate) span: Range<usize>,
    /// Its tokens (the body alone; tags and headers are counted at selection).
    pub(crate) tokens: usize,
    /// Whether it is its unit's excerpt: `span` is then within [`Unit::excerpt`].
    pub(crate) excerpt: bool,
}

impl Fragment {
    /// The fragment's text.
    pub(crate) fn text<'a>(&self, units: &'a [Unit]) -> &'a str {
        let unit = &units[self.unit];
        if self.excerpt {
            &unit.excerpt[self.span.clone()]
        } else {
            &unit.text[self.span.clone()]
        }
    }
}

/// Implements indexing of `[$item]` and `Vec<$item>` by the newtype index `$ix`.
macro_rules! index_by {
    ($ix:ty, $item:ty) => {
        impl std::ops::Index<$ix> for [$item] {
            type Output = $item;

            fn index(&self, ix: $ix) -> &$item {
                &self[ix.0]
            }
        }

        impl std::ops::Index<$ix> for Vec<$item> {
            type Output = $item;

            fn index(&self, ix: $ix) -> &$item {
                &self[ix.0]
            }
        }
    };
}
pub(crate) use index_by;

index_by!(UnitIx, Unit);
index_by!(FragmentIx, Fragment);

/// The first `n` hex digits of a sha256 digest.
pub(crate) fn hex_prefix(hash: &[u8; 32], n: usize) -> String {
    let mut s = hex::encode(&hash[..n.div_ceil(2).min(32)]);
    s.truncate(n);
    s
}

/// Whether `a` happened after `b`: by timestamps when both have one, else by list
/// position when they share a kind; `None` when the records cannot be ordered.
pub(crate) fn is_later(a: &Unit, b: &Unit) -> Option<bool> {
    match (a.time, b.time) {
        (Some(x), Some(y)) if x != y => Some(x > y),
        _ if a.kind == b.kind => Some(a.index > b.index),
        (Some(_), Some(_)) => Some(a.order > b.order),
        _ => None,
    }
}

/// Why a unit left the candidates before scoring.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dropped {
    /// The reason (`duplicate`, `near_duplicate`, `repeated_run`, `superseded`).
    pub(crate) reason: DropReason,
    /// The unit that absorbed or superseded it.
    pub(crate) by: Option<UnitIx>,
    /// A sentence saying what happened.
    pub(crate) detail: String,
}
