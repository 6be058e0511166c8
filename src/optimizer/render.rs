//! Stage 6, render: the kept fragments as text, in a fixed section order, each behind a
//! source tag `[source: fr_… | record … | path]`. Machine-readable data stays in
//! `sources`; the text holds only what a model should read.

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::extract::Features;
use crate::optimizer::fragment::{Fragment, FragmentIx, Unit, UnitIx};
use crate::optimizer::score::is_constraint;
use crate::optimizer::working_state::StateRole;
use crate::records::Kind;
use crate::records::TestStatus;

/// The context's sections, in render order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Section {
    /// The task.
    Task,
    /// What the session is doing now: the user's latest instruction, the agent's latest
    /// message.
    Now,
    /// The session's latest plan.
    Plan,
    /// Commands whose latest run failed, and what they reported.
    OpenProblems,
    /// Decisions in force and explicit requirements.
    Constraints,
    /// Errors and stack traces.
    Errors,
    /// Failing test results.
    FailingTests,
    /// File snapshots.
    Files,
    /// Diffs.
    Diffs,
    /// Tool and command runs.
    Attempts,
    /// Everything else: messages, passing or skipped tests.
    Notes,
}

impl Section {
    /// Every section, in render order.
    pub(crate) const ALL: [Section; 11] = [
        Section::Task,
        Section::Now,
        Section::Plan,
        Section::OpenProblems,
        Section::Constraints,
        Section::Errors,
        Section::FailingTests,
        Section::Files,
        Section::Diffs,
        Section::Attempts,
        Section::Notes,
    ];

    /// The section's heading text.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Section::Task => "Task",
            Section::Now => "Now",
            Section::Plan => "Plan",
            Section::OpenProblems => "Open problems",
            Section::Constraints => "Constraints & decisions",
            Section::Errors => "Errors",
            Section::FailingTests => "Failing tests",
            Section::Files => "Files",
            Section::Diffs => "Diffs",
            Section::Attempts => "Attempts",
            Section::Notes => "Notes",
        }
    }

    /// The heading line as rendered (with its newline).
    pub(crate) fn heading(self) -> String {
        format!("## {}\n", self.title())
    }

    /// The section a fragment goes to.
    pub(crate) fn of(unit: &Unit, features: &Features, role: Option<StateRole>) -> Section {
        match role {
            Some(StateRole::Instruction | StateRole::Now | StateRole::LatestStep)
                if !is_constraint(unit, features) =>
            {
                return Section::Now
            }
            Some(StateRole::Plan) => return Section::Plan,
            Some(StateRole::OpenProblem) => return Section::OpenProblems,
            _ => {}
        }
        match unit.kind {
            Kind::Task => Section::Task,
            Kind::Decision => Section::Constraints,
            Kind::Message if is_constraint(unit, features) => Section::Constraints,
            Kind::Message => Section::Notes,
            Kind::Error => Section::Errors,
            Kind::TestResult if unit.test_status == Some(TestStatus::Failed) => {
                Section::FailingTests
            }
            Kind::TestResult => Section::Notes,
            Kind::File => Section::Files,
            Kind::Diff => Section::Diffs,
            Kind::ToolOutput => Section::Attempts,
        }
    }
}

/// The source tag line of a fragment (with its newline).
pub(crate) fn tag(fragment: &Fragment, unit: &Unit) -> String {
    // A task cut into parts says which part it shows, so a part left out is never silent.
    let parts = unit.fragments.len();
    if unit.kind == Kind::Task && parts > 1 {
        return format!(
            "[source: {} | record {} | part {} of {parts}]\n",
            fragment.id,
            unit.id,
            fragment.chunk + 1
        );
    }
    match &unit.path {
        Some(path) => format!(
            "[source: {} | record {} | {}]\n",
            fragment.id, unit.id, path
        ),
        None => format!("[source: {} | record {}]\n", fragment.id, unit.id),
    }
}

/// The line(s) shown once before a unit's first fragment in a section (with newline):
/// the command line of a run and its history, or who spoke.
pub(crate) fn unit_header(unit: &Unit, history: Option<&str>) -> Option<String> {
    let header = unit.header.as_deref()?;
    Some(match history {
        Some(h) => format!("{header}\n{h}\n"),
        None => format!("{header}\n"),
    })
}

/// One fragment to render, with its section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Placed {
    /// The section.
    pub(crate) section: Section,
    /// The unit's input order.
    pub(crate) order: usize,
    /// The fragment's number within its unit.
    pub(crate) chunk: usize,
    /// The fragment.
    pub(crate) fragment: FragmentIx,
}

/// Renders `placed` (sorted here by section, record order and chunk) and returns the text
/// and the fragments in render order. `index`, a rendered section of its own (the files in
/// play), goes after the sections that say what the session is doing now (task, now, plan).
pub(crate) fn render(
    units: &[Unit],
    fragments: &[Fragment],
    analyses: &[UnitAnalysis],
    placed: &[Placed],
    index: Option<&str>,
) -> (String, Vec<Placed>) {
    let mut placed = placed.to_vec();
    placed.sort_unstable();
    let mut out = String::new();
    let mut section: Option<Section> = None;
    let mut last_unit: Option<UnitIx> = None;
    let mut index = index;
    for p in &placed {
        let f = &fragments[p.fragment];
        if section != Some(p.section) {
            if section.is_some() {
                out.push('\n');
            }
            if p.section > Section::Plan {
                if let Some(block) = index.take() {
                    out.push_str(block);
                    out.push('\n');
                }
            }
            out.push_str(&p.section.heading());
            section = Some(p.section);
            last_unit = None;
        }
        out.push_str(&tag(f, &units[f.unit]));
        if last_unit != Some(f.unit) {
            if let Some(h) = &analyses[f.unit].header {
                out.push_str(h);
            }
            last_unit = Some(f.unit);
        }
        out.push_str(f.text(units));
        out.push('\n');
    }
    if let Some(block) = index {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(block);
    }
    (out, placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::extract::extract;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, FileRecord, Message, Records, Role};

    #[test]
    fn sections_come_in_fixed_order_with_tags() {
        let records = Records {
            task: Some("Fix it".into()),
            messages: vec![Message {
                common: Common::default(),
                role: Role::User,
                text: "You must keep the API".into(),
            }],
            files: vec![FileRecord {
                common: Common {
                    id: Some("f1".into()),
                    ..Common::default()
                },
                path: "src/a.ts".into(),
                content: "export {}".into(),
            }],
            ..Records::default()
        };
        let (units, frags) = normalize(&records, None).unwrap();
        let analyses = crate::optimizer::analysis::all_live(&units);
        let feats = extract(&units, &frags, &analyses, 1);
        let placed: Vec<Placed> = frags
            .iter()
            .enumerate()
            .rev()
            .map(|(i, f)| Placed {
                section: Section::of(&units[f.unit], &feats[i], None),
                order: units[f.unit].order,
                chunk: f.chunk,
                fragment: FragmentIx(i),
            })
            .collect();
        let (text, order) = render(&units, &frags, &analyses, &placed, None);
        let expected = format!(
            "## Task\n[source: {} | record task]\nFix it\n\n## Constraints & decisions\n[source: {} | record {}]\nuser:\nYou must keep the API\n\n## Files\n[source: {} | record f1 | src/a.ts]\nexport {{}}\n",
            frags[0].id, frags[1].id, units[1].id, frags[2].id
        );
        assert_eq!(text, expected);
        assert_eq!(
            order.iter().map(|p| p.fragment.0).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn nothing_renders_to_nothing() {
        assert_eq!(render(&[], &[], &[], &[], None).0, "");
    }
}
