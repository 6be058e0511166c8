//! The mandatory rule: which live fragments a build keeps whatever their score (documented in
//! `docs/scoring.md`).

use crate::optimizer::extract::Features;
use crate::optimizer::fragment::{Unit, UnitIx};
use crate::optimizer::score::{is_constraint, Focus};
use crate::records::{DecisionStatus, Kind, Role};

/// Whether a live fragment must be kept: the task; decisions accepted; requirements stated
/// by the user; and the errors and failing tests the task is about (see
/// [`crate::optimizer::score::focus`]).
pub(crate) fn is_mandatory(
    unit: &Unit,
    features: &Features,
    focus: &Focus,
    unit_index: UnitIx,
) -> bool {
    match unit.kind {
        Kind::Task => true,
        Kind::Decision => unit.decision_status == Some(DecisionStatus::Accepted),
        Kind::Message => unit.role == Some(Role::User) && is_constraint(unit, features),
        Kind::Error | Kind::TestResult => focus.error_units.contains(&unit_index),
        _ => false,
    }
}
