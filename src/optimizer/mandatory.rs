//! The mandatory rule: which live fragments a build keeps whatever their score (documented in
//! `docs/scoring.md`).

use crate::optimizer::extract::Features;
use crate::optimizer::fragment::{Fragment, Unit, UnitIx};
use crate::optimizer::score::{is_constraint, Focus};
use crate::records::{DecisionStatus, Kind, Role};

/// Whether a live fragment must be kept: the task's first chunk and every chunk of it that
/// shows an error (a long task, such as a written plan, is cut like a message: the rest of
/// it competes by score, and each part shown is tagged `part K of N`); decisions accepted;
/// requirements stated by the user; and of the errors and failing tests the task is about
/// (see [`crate::optimizer::score::focus`]), the first chunk and every chunk that shows an
/// error — a command's whole output given as an error (a directory tree after its one
/// error line) is not all fact: the rest of it competes by score, like a long task's.
pub(crate) fn is_mandatory(
    unit: &Unit,
    fragment: &Fragment,
    features: &Features,
    focus: &Focus,
    unit_index: UnitIx,
) -> bool {
    match unit.kind {
        Kind::Task => fragment.chunk == 0 || features.shows_error(),
        Kind::Decision => unit.decision_status == Some(DecisionStatus::Accepted),
        Kind::Message => unit.role == Some(Role::User) && is_constraint(unit, features),
        Kind::Error | Kind::TestResult => {
            focus.error_units.contains(&unit_index)
                && (fragment.chunk == 0 || features.shows_error())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::optimizer::{build, BuildConfig, BuildOutput};
    use crate::records::Records;

    /// A written plan of 40 steps with an error in step 20, built at `budget`.
    fn plan_at(budget: usize) -> BuildOutput {
        let mut plan = String::from("Implement the following plan: move billing to cents.\n\n");
        for n in 0..40 {
            plan.push_str(&format!(
                "Step {n}: update module_{n}.py so that every amount is kept as an integer \
                 number of cents, and adjust the callers of module_{n} that format totals.\n\n"
            ));
            if n == 20 {
                plan.push_str(
                    "It fails today with:\nTraceback (most recent call last):\n  File \"billing/tax.py\", \
                     line 12, in tax\nZeroDivisionError: division by zero\n\n",
                );
            }
        }
        let records: Records = serde_json::from_value(serde_json::json!({
            "task": plan,
            "messages": [{"id": "m1", "role": "assistant", "text": "Working on module_3.py now."}]
        }))
        .unwrap();
        build(
            &records,
            &BuildConfig {
                budget,
                ..BuildConfig::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn a_long_task_keeps_its_first_part_and_its_error_and_says_which_parts_it_shows() {
        let out = plan_at(600);
        assert!(
            out.context.contains("Implement the following plan"),
            "{}",
            out.context
        );
        assert!(out.context.contains("ZeroDivisionError"), "{}", out.context);
        assert!(
            out.context.contains("| record task | part 1 of "),
            "{}",
            out.context
        );
        // The canary: not every part fits, and the ones left out are not shown.
        assert!(!out.context.contains("Step 39:"), "{}", out.context);
    }

    /// An error whose stack is a command's whole output: one error line, then a directory
    /// listing of `entries` lines; built at 600 tokens.
    fn listing_error(entries: usize) -> BuildOutput {
        let listing: String = (0..entries)
            .map(|n| format!("│   ├── component_{n}.tsx\n"))
            .collect();
        let records: Records = serde_json::from_value(serde_json::json!({
            "task": "Update CLAUDE.md to describe the components.",
            "errors": [{
                "id": "e1",
                "message": "Bash: lsd: 3: No such file or directory (os error 2).",
                "stack": format!("lsd: 3: No such file or directory (os error 2).\n\n\nDemo\n{listing}")
            }]
        }))
        .unwrap();
        build(
            &records,
            &BuildConfig {
                budget: 600,
                ..BuildConfig::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn of_an_error_too_big_to_show_whole_its_error_lines_are_mandatory_and_the_rest_competes() {
        let out = listing_error(400);
        assert!(out.context.contains("os error 2"), "{}", out.context);
        let shown = |out: &BuildOutput| out.context.matches("├── component_").count();
        assert!(shown(&out) < 100, "{}", out.context);
        assert!(out.report.warnings.is_empty(), "{:?}", out.report.warnings);
        // The canary: an error that fits whole is one fragment, kept whole.
        let small = listing_error(20);
        assert_eq!(shown(&small), 20, "{}", small.context);
    }

    #[test]
    fn a_task_within_its_share_of_the_budget_stays_whole() {
        let out = plan_at(8000);
        assert!(out.context.contains("Step 39:"), "{}", out.context);
        assert!(out.context.contains("[source: "), "{}", out.context);
        assert!(!out.context.contains("| part "), "{}", out.context);
        let task = out.sources.iter().filter(|s| s.record == "task").count();
        assert_eq!(task, 1, "{}", out.context);
    }
}
