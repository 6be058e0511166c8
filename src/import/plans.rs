//! The session's plan as every importer writes it, whatever tool kept it (Claude Code's
//! `TodoWrite` and task list, Codex CLI's `update_plan`, Gemini CLI's `write_todos`): a
//! heading `Plan (<tool>):`, a line `- [status] text` per item, and, when the tool gave one,
//! the reason after them (`Why: …`). The optimizer knows a plan by those lines
//! (`optimizer::working_state::is_plan`).

use serde_json::Value;

/// The plan text of `items` (status, text), from `tool`, with the reason `why` if any.
pub(crate) fn plan_text<'a>(
    tool: &str,
    items: impl IntoIterator<Item = (&'a str, &'a str)>,
    why: Option<&str>,
) -> String {
    let mut lines = vec![format!("Plan ({tool}):")];
    lines.extend(
        items
            .into_iter()
            .map(|(status, text)| format!("- [{}] {}", status.trim(), text.trim())),
    );
    if let Some(why) = why.map(str::trim).filter(|w| !w.is_empty()) {
        lines.push(format!("Why: {why}"));
    }
    lines.join("\n")
}

/// The plan a call's arguments hold as a list under `list` of objects with a `status` and
/// their text under `text` (`{"todos": [{"content", "status"}]}`); `None` when `list` is not
/// a list. A field that is missing or not a string reads as empty.
pub(crate) fn listed_plan(tool: &str, args: &Value, list: &str, text: &str) -> Option<String> {
    let items = args.get(list)?.as_array()?;
    let field = |item: &'_ Value, key: &str| -> String {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let pairs: Vec<(String, String)> = items
        .iter()
        .map(|i| (field(i, "status"), field(i, text)))
        .collect();
    let why = args.get("explanation").and_then(Value::as_str);
    Some(plan_text(
        tool,
        pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())),
        why,
    ))
}

/// The outputs of `records`' plans (records whose id's kind is `plan`), in order.
#[cfg(test)]
pub(crate) fn plans_of(records: &crate::records::Records) -> Vec<&str> {
    records
        .tool_outputs
        .iter()
        .filter(|o| {
            let id = o.common.id.as_deref().unwrap_or("");
            id.starts_with("plan-") || id.starts_with("side-plan-")
        })
        .map(|o| o.output.as_str())
        .collect()
}

/// The line a plan shows for `item` of a client's list: its `status` and its text under `text`.
#[cfg(test)]
pub(crate) fn item_line(item: &Value, text: &str) -> String {
    let field = |k: &str| {
        item[k]
            .as_str()
            .unwrap_or_else(|| panic!("no {k} in {item}"))
    };
    format!("- [{}] {}", field("status"), field(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_of_items_is_a_plan_with_its_reason_after_it() {
        let args = json!({"explanation": "the lexer came first",
            "plan": [{"step": "lex", "status": "completed"}, {"step": "parse", "status": "in_progress"}]});
        let plan = listed_plan("update_plan", &args, "plan", "step").unwrap();
        assert_eq!(
            plan,
            "Plan (update_plan):\n- [completed] lex\n- [in_progress] parse\nWhy: the lexer came first"
        );
        assert!(crate::optimizer::working_state::is_plan(&plan));
        // No list: no plan; an item without its fields stays a line.
        assert_eq!(
            listed_plan("update_plan", &json!({"explanation": "x"}), "plan", "step"),
            None
        );
        assert_eq!(
            listed_plan(
                "write_todos",
                &json!({"todos": [{}]}),
                "todos",
                "description"
            )
            .unwrap(),
            "Plan (write_todos):\n- [] "
        );
    }
}
