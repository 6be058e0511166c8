//! The session's plan as Claude Code 2.1 keeps it: a task list built by `TaskCreate` calls
//! (a subject each, numbered by the client), whose items `TaskUpdate` moves through
//! `pending`, `in_progress` and `completed` (or `deleted`), and which `TaskList` prints
//! whole. No single call holds the list, as `TodoWrite`'s did; [`TaskPlan`] follows it call by
//! call, so that after each change the importer can write the whole list as the plan.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::format::ToolUseResult;
use crate::import::plans::plan_text;

/// One item of the task list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Item {
    subject: String,
    status: String,
}

/// The task list so far, in task id order (a list, not a map, so that the importer's state
/// stays a JSON object the hooks can save).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct TaskPlan {
    items: Vec<(TaskId, Item)>,
}

/// A task id, ordered as the client numbers them (`2` before `10`), other ids after.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct TaskId(Option<u64>, String);

impl TaskId {
    /// The id a call or result gives: a string (`"3"`) or a number.
    fn of(value: &Value) -> Option<TaskId> {
        let text = match value {
            Value::String(s) => s.trim().trim_start_matches('#').to_string(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        (!text.is_empty()).then(|| TaskId(text.parse().ok(), text))
    }
}

/// The text of `value[name]`, when it is a non-empty string.
fn field<'a>(value: &'a Value, name: &str) -> Option<&'a str> {
    value
        .get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

impl TaskPlan {
    /// Follows one answered call of `name` with `input`, its result's text and what the client
    /// recorded of it (`toolUseResult`); whether the call gave the plan: a create or update
    /// that changed the list, or a `TaskList` read whole. An unknown id, a missing field or a
    /// result of another shape changes nothing.
    pub(super) fn follow(
        &mut self,
        name: &str,
        input: &Value,
        text: &str,
        result: Option<&ToolUseResult>,
    ) -> bool {
        let before = self.items.clone();
        match name {
            "TaskCreate" => self.created(input, text, result),
            "TaskUpdate" => self.updated(input),
            "TaskList" => return self.listed(text, result),
            _ => {}
        }
        self.items != before
    }

    /// A task made: its id from the result (`{"task": {"id": "3"}}`, else `Task #3 created`),
    /// its subject from the call, pending.
    fn created(&mut self, input: &Value, text: &str, result: Option<&ToolUseResult>) {
        let id = result
            .and_then(|r| r.task.as_ref())
            .and_then(|t| t.get("id"))
            .and_then(TaskId::of)
            .or_else(|| {
                let rest = text.trim_start().strip_prefix("Task #")?;
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                TaskId::of(&Value::String(digits))
            });
        if let (Some(id), Some(subject)) = (id, field(input, "subject")) {
            let item = Item {
                subject: subject.to_string(),
                status: "pending".into(),
            };
            match self.items.binary_search_by(|(i, _)| i.cmp(&id)) {
                Ok(at) => self.items[at].1 = item,
                Err(at) => self.items.insert(at, (id, item)),
            }
        }
    }

    /// A task changed: a new status (`deleted` takes it off the list) or subject.
    fn updated(&mut self, input: &Value) {
        let Some(id) = input.get("taskId").and_then(TaskId::of) else {
            return;
        };
        let Ok(at) = self.items.binary_search_by(|(i, _)| i.cmp(&id)) else {
            return;
        };
        if field(input, "status") == Some("deleted") {
            self.items.remove(at);
            return;
        }
        let item = &mut self.items[at].1;
        if let Some(status) = field(input, "status") {
            item.status = status.to_string();
        }
        if let Some(subject) = field(input, "subject") {
            item.subject = subject.to_string();
        }
    }

    /// The whole list as the client printed it: from the result (`{"tasks": [{"id",
    /// "subject", "status"}, …]}`), else from its lines `#3 [in_progress] subject`; whether
    /// it read one.
    fn listed(&mut self, text: &str, result: Option<&ToolUseResult>) -> bool {
        let listed: Option<Vec<(TaskId, Item)>> = match result
            .and_then(|r| r.tasks.as_ref())
            .and_then(Value::as_array)
        {
            Some(tasks) => tasks
                .iter()
                .map(|t| {
                    Some((
                        t.get("id").and_then(TaskId::of)?,
                        Item {
                            subject: field(t, "subject")?.to_string(),
                            status: field(t, "status")?.to_string(),
                        },
                    ))
                })
                .collect(),
            None => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(listed_line)
                .collect(),
        };
        let Some(mut listed) = listed.filter(|l| !l.is_empty()) else {
            return false;
        };
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        listed.dedup_by(|a, b| a.0 == b.0);
        self.items = listed;
        true
    }

    /// The list as the plan: `Plan (tasks):` and a line `- [status] subject` per task, in id
    /// order; `None` when it is empty.
    pub(super) fn text(&self) -> Option<String> {
        (!self.items.is_empty()).then(|| {
            let items = self.items.iter();
            plan_text("tasks", items.map(|(_, i)| (&*i.status, &*i.subject)), None)
        })
    }
}

/// A line of `TaskList`'s text: `#3 [in_progress] subject` (anything after the subject in
/// parentheses, such as an owner, is kept as part of it).
fn listed_line(line: &str) -> Option<(TaskId, Item)> {
    let rest = line.trim().strip_prefix('#')?;
    let (id, rest) = rest.split_once(' ')?;
    let rest = rest.trim_start().strip_prefix('[')?;
    let (status, subject) = rest.split_once(']')?;
    let subject = subject.trim();
    Some((
        TaskId::of(&Value::String(id.to_string()))?,
        Item {
            subject: (!subject.is_empty()).then(|| subject.to_string())?,
            status: status.trim().to_string(),
        },
    ))
    .filter(|(id, _)| id.0.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the client recorded of a result, from its JSON.
    fn recorded(value: Value) -> ToolUseResult {
        serde_json::from_value(value).unwrap()
    }

    fn create(plan: &mut TaskPlan, id: &str, subject: &str) -> bool {
        plan.follow(
            "TaskCreate",
            &json!({"subject": subject, "description": "…", "activeForm": "…"}),
            &format!("Task #{id} created successfully: {subject}"),
            Some(&recorded(json!({"task": {"id": id, "subject": subject}}))),
        )
    }

    #[test]
    fn creates_and_updates_make_the_list_in_id_order() {
        let mut plan = TaskPlan::default();
        assert_eq!(plan.text(), None);
        for (id, subject) in [("1", "rename the package"), ("2", "update the CLI")] {
            assert!(create(&mut plan, id, subject));
        }
        // Ten and more sort as numbers.
        assert!(create(&mut plan, "10", "run the tests"));
        let update = |status: &str| json!({"taskId": "1", "status": status});
        assert!(plan.follow(
            "TaskUpdate",
            &update("in_progress"),
            "Updated task #1 status",
            None
        ));
        assert!(plan.follow(
            "TaskUpdate",
            &update("completed"),
            "Updated task #1 status",
            None
        ));
        // The same status again, an unknown id, another tool: nothing changes.
        assert!(!plan.follow("TaskUpdate", &update("completed"), "", None));
        assert!(!plan.follow(
            "TaskUpdate",
            &json!({"taskId": "7", "status": "completed"}),
            "",
            None
        ));
        assert!(!plan.follow("TaskGet", &json!({"taskId": "1"}), "", None));
        assert_eq!(
            plan.text().unwrap(),
            "Plan (tasks):\n- [completed] rename the package\n- [pending] update the CLI\n\
             - [pending] run the tests"
        );
        assert!(plan.follow(
            "TaskUpdate",
            &json!({"taskId": 2, "status": "deleted"}),
            "",
            None
        ));
        assert!(!plan.text().unwrap().contains("update the CLI"));
    }

    #[test]
    fn a_create_without_the_clients_record_takes_the_id_from_the_text() {
        let mut plan = TaskPlan::default();
        let input = json!({"subject": "write the parser"});
        assert!(plan.follow(
            "TaskCreate",
            &input,
            "Task #4 created successfully: write the parser",
            None
        ));
        assert!(plan.follow(
            "TaskUpdate",
            &json!({"taskId": "4", "status": "in_progress"}),
            "",
            None
        ));
        assert_eq!(
            plan.text().unwrap(),
            "Plan (tasks):\n- [in_progress] write the parser"
        );
        // Neither an id nor a subject: nothing.
        assert!(!plan.follow("TaskCreate", &json!({}), "created", None));
    }

    #[test]
    fn a_task_list_replaces_what_was_followed() {
        let mut plan = TaskPlan::default();
        create(&mut plan, "1", "old subject");
        let listed = recorded(json!({"tasks": [
            {"id": "2", "subject": "second", "status": "in_progress", "blockedBy": []},
            {"id": "1", "subject": "first", "status": "completed", "blockedBy": []},
        ]}));
        assert!(plan.follow("TaskList", &json!({}), "", Some(&listed)));
        assert_eq!(
            plan.text().unwrap(),
            "Plan (tasks):\n- [completed] first\n- [in_progress] second"
        );
        // The text alone, as older clients print it.
        let mut plan = TaskPlan::default();
        let text = "#6 [completed] Add ingestion\n#7 [in_progress] Add tests for ingestion\n";
        assert!(plan.follow("TaskList", &json!({}), text, None));
        assert_eq!(
            plan.text().unwrap(),
            "Plan (tasks):\n- [completed] Add ingestion\n- [in_progress] Add tests for ingestion"
        );
        // A text of another shape leaves the list as it was.
        assert!(!plan.follow("TaskList", &json!({}), "No tasks found", None));
        assert!(plan.text().is_some());
    }
}
