//! What the pipeline knows about each unit between dedupe and selection, in one struct per
//! unit instead of one list per fact.

use crate::optimizer::dedupe::Deduped;
use crate::optimizer::extract::Outcome;
use crate::optimizer::fragment::{index_by, Dropped, Unit, UnitIx};
use crate::optimizer::output::DropReason;
use crate::optimizer::render::unit_header;
use crate::optimizer::select::current_diffs;
use crate::records::Kind;

/// What dedupe, superseding and outcome detection found about one unit.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitAnalysis {
    /// Why the unit left the candidates before scoring, or `None` when it is live.
    pub(crate) dropped: Option<Dropped>,
    /// The outcome of a run or test result ([`Outcome::Unknown`] for other records).
    pub(crate) outcome: Outcome,
    /// The highest containment in a later record (see [`Deduped::redundancy`]): a score
    /// input.
    pub(crate) redundancy: f64,
    /// The lines shown once before the unit's first fragment in a section: its run header
    /// and the history line of earlier runs folded into it.
    pub(crate) header: Option<String>,
    /// Whether it is part of the session's current change (see [`current_diffs`]).
    pub(crate) current_change: bool,
}

impl UnitAnalysis {
    /// Whether the unit is still a candidate (dedupe and superseding kept it).
    pub(crate) fn is_live(&self) -> bool {
        self.dropped.is_none()
    }

    /// Whether the unit was superseded: for a diff, a revert of an earlier change (what
    /// [`current_diffs`] reads the same way).
    pub(crate) fn is_revert(&self) -> bool {
        superseded(self.dropped.as_ref())
    }
}

index_by!(UnitIx, UnitAnalysis);

/// Whether superseding dropped the unit (a diff so dropped is a revert of an earlier one).
fn superseded(dropped: Option<&Dropped>) -> bool {
    dropped.is_some_and(|d| d.reason == DropReason::Superseded)
}

/// Gathers, per unit, what dedupe and superseding decided (`deduped`) and its outcome.
pub(crate) fn analyse(units: &[Unit], deduped: Deduped, outcomes: &[Outcome]) -> Vec<UnitAnalysis> {
    let live: Vec<bool> = deduped.dropped.iter().map(Option::is_none).collect();
    let reverted: Vec<bool> = deduped
        .dropped
        .iter()
        .zip(units)
        .map(|(d, u)| u.kind == Kind::Diff && superseded(d.as_ref()))
        .collect();
    let current = current_diffs(units, &live, &reverted);
    let Deduped {
        dropped,
        history,
        redundancy,
        ..
    } = deduped;
    units
        .iter()
        .zip(dropped)
        .zip(history)
        .enumerate()
        .map(|(i, ((u, dropped), history))| UnitAnalysis {
            dropped,
            outcome: outcomes[i],
            redundancy: redundancy[i],
            header: unit_header(u, history.as_deref()),
            current_change: current[i],
        })
        .collect()
}

/// Every unit live, with its outcome, nothing folded into it and nothing redundant: for
/// tests of the stages after dedupe.
#[cfg(test)]
pub(crate) fn all_live(units: &[Unit]) -> Vec<UnitAnalysis> {
    let outcomes = crate::optimizer::extract::outcomes(units, 1);
    units
        .iter()
        .zip(outcomes)
        .map(|(u, outcome)| UnitAnalysis {
            dropped: None,
            outcome,
            redundancy: 0.0,
            header: unit_header(u, None),
            current_change: false,
        })
        .collect()
}
