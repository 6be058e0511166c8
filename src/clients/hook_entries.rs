//! ctxopt's hook entries in a client's settings file: Claude Code runs
//! `ctxopt hook claude-code` on UserPromptSubmit, SessionStart and PreCompact; Gemini CLI runs
//! `ctxopt hook gemini-cli` on BeforeAgent and SessionStart. Installing appends one group
//! per event (`{"hooks": [{"type": "command", "command": …}]}`); uninstalling removes exactly
//! the groups that run only that command, and the event list and `hooks` object when they
//! are left empty. Both are idempotent and touch no other byte.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::catalog::{ConfigScope, HookClient, Roots};
use super::edit::{apply, Edit};
use super::json_edit::{append_element, append_member, element_spans, member_spans, remove_item};
use super::jsonc::{self, Node};
use super::ConfigError;

impl HookClient {
    /// The command the hooks run.
    pub fn command(self) -> String {
        format!("ctxopt hook {}", self.client().name())
    }

    /// The events hooked.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            HookClient::ClaudeCode => &["UserPromptSubmit", "SessionStart", "PreCompact"],
            HookClient::GeminiCli => &["BeforeAgent", "SessionStart"],
        }
    }

    /// The settings file of `scope` (user or project).
    pub fn settings(self, roots: &Roots, scope: ConfigScope) -> PathBuf {
        let (home, project) = match self {
            HookClient::ClaudeCode => (".claude/settings.json", ".claude/settings.json"),
            HookClient::GeminiCli => (".gemini/settings.json", ".gemini/settings.json"),
        };
        match scope {
            ConfigScope::Project => roots.project.join(project),
            ConfigScope::User | ConfigScope::Local => roots.home.join(home),
        }
    }

    /// The group installed per event.
    fn group(self) -> Value {
        let mut hook = json!({"type": "command", "command": self.command()});
        if self == HookClient::GeminiCli {
            hook["name"] = json!("ctxopt");
        }
        json!({"hooks": [hook]})
    }
}

/// Whether a group runs only `command`.
fn is_ours(group: &Node, command: &str) -> bool {
    let Some(hooks) = group.get("hooks").and_then(Node::elements) else {
        return false;
    };
    !hooks.is_empty()
        && hooks
            .iter()
            .all(|h| h.get("command").and_then(Node::as_str) == Some(command))
}

fn root(text: &str, path: &Path) -> Result<Node, ConfigError> {
    let root = jsonc::parse(text).map_err(|e| e.in_file(path))?;
    if root.members().is_none() {
        return Err(ConfigError::Syntax {
            line: 1,
            column: 1,
            message: "the settings are not a JSON object".into(),
        }
        .in_file(path));
    }
    Ok(root)
}

/// The settings text with the hooks installed (`None` for a missing file: it is created),
/// and the events that got a hook now.
pub fn install(
    text: Option<&str>,
    client: HookClient,
    path: &Path,
) -> Result<(String, Vec<&'static str>), ConfigError> {
    let command = client.command();
    let all = || -> Value {
        let hooks: serde_json::Map<String, Value> = client
            .events()
            .iter()
            .map(|e| (e.to_string(), json!([client.group()])))
            .collect();
        Value::Object(hooks)
    };
    let Some(text) = text else {
        let pretty = serde_json::to_string_pretty(&json!({ "hooks": all() })).unwrap_or_default();
        return Ok((pretty + "\n", client.events().to_vec()));
    };
    let mut text = text.to_string();
    let mut added = Vec::new();
    // One edit at a time, each on the text the last one left.
    for event in client.events() {
        let root = root(&text, path)?;
        let edit = match root.get("hooks") {
            None => {
                let edit = append_member(&text, &root, "hooks", &all());
                added = client.events().to_vec();
                text = apply(&text, &[edit]);
                break;
            }
            Some(hooks) if hooks.members().is_none() => {
                return Err(ConfigError::Syntax {
                    line: 1,
                    column: 1,
                    message: "`hooks` is not an object".into(),
                }
                .in_file(path))
            }
            Some(hooks) => match hooks.get(event) {
                None => append_member(&text, hooks, event, &json!([client.group()])),
                Some(list) if list.elements().is_some() => {
                    let groups = list.elements().unwrap_or_default();
                    if groups.iter().any(|g| is_ours(g, &command)) {
                        continue;
                    }
                    append_element(&text, list, &client.group())
                }
                Some(_) => continue,
            },
        };
        added.push(*event);
        text = apply(&text, &[edit]);
    }
    Ok((text, added))
}

/// The settings text with ctxopt's hooks removed, and the events that lost one. `created`:
/// ctxopt created the file; when nothing but an empty object is left of it, the text is
/// `None` (the file goes, as it was before the install).
pub fn uninstall(
    text: &str,
    client: HookClient,
    path: &Path,
    created: bool,
) -> Result<(Option<String>, Vec<String>), ConfigError> {
    let command = client.command();
    let mut text = text.to_string();
    let mut removed = Vec::new();
    // One removal at a time, each on the text the last one left.
    loop {
        let root = root(&text, path)?;
        let Some(edit) = next_removal(&text, &root, &command, &mut removed) else {
            let empty = text.chars().filter(|c| !c.is_whitespace()).eq("{}".chars());
            let left = (!(created && empty && !removed.is_empty())).then_some(text);
            return Ok((left, removed));
        };
        text = apply(&text, &[edit]);
    }
}

/// The next of ctxopt's groups to remove: the group, or its event list when it is the
/// list's only group, or the `hooks` member when that list is its only event.
fn next_removal(text: &str, root: &Node, command: &str, removed: &mut Vec<String>) -> Option<Edit> {
    let hooks = root.get("hooks")?;
    let events = hooks.members()?;
    for (e, event) in events.iter().enumerate() {
        let Some(groups) = event.value.elements() else {
            continue;
        };
        let Some(g) = groups.iter().position(|g| is_ours(g, command)) else {
            continue;
        };
        removed.push(event.key.clone());
        if groups.len() > 1 {
            return Some(remove_item(text, &element_spans(&event.value), g));
        }
        if events.len() > 1 {
            return Some(remove_item(text, &member_spans(hooks), e));
        }
        let members = root.members().unwrap_or_default();
        let index = members.iter().rposition(|m| m.key == "hooks")?;
        return Some(remove_item(text, &member_spans(root), index));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: &str = "{\r\n  // mine\r\n  \"model\": \"opus\",\r\n  \"hooks\": {\r\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}],\r\n    \"SessionStart\": [\r\n      {\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}]},\r\n    ],\r\n  },\r\n}\r\n";

    #[test]
    fn install_then_uninstall_is_the_identity_and_install_is_idempotent() {
        let path = Path::new("settings.json");
        for client in [HookClient::ClaudeCode, HookClient::GeminiCli] {
            for text in [SETTINGS, "{}", "{\n  \"a\": 1\n}\n"] {
                let (installed, added) = install(Some(text), client, path).unwrap();
                assert_eq!(added, client.events(), "{installed}");
                let root = jsonc::parse(&installed).unwrap();
                for event in client.events() {
                    let groups = root.at(&["hooks", event]).unwrap().elements().unwrap();
                    assert!(groups.iter().any(|g| is_ours(g, &client.command())));
                }
                let (twice, none) = install(Some(&installed), client, path).unwrap();
                assert_eq!(twice, installed);
                assert!(none.is_empty());
                let (back, removed) = uninstall(&installed, client, path, false).unwrap();
                assert_eq!(back.as_deref(), Some(text), "via {installed}");
                assert_eq!(removed.len(), client.events().len());
            }
        }
    }

    #[test]
    fn a_file_without_a_final_newline_round_trips_byte_for_byte() {
        let path = Path::new("settings.json");
        for text in [
            "{\"model\": \"opus\"}",
            "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}",
            "{\r\n  // mine\r\n  \"a\": [1,]\r\n}",
        ] {
            let (installed, _) = install(Some(text), HookClient::ClaudeCode, path).unwrap();
            assert!(!installed.ends_with('\n'), "{installed:?}");
            let (back, _) = uninstall(&installed, HookClient::ClaudeCode, path, false).unwrap();
            assert_eq!(back.as_deref(), Some(text));
        }
    }

    #[test]
    fn uninstalling_from_the_file_install_created_removes_it_unless_something_else_is_there() {
        let path = Path::new("settings.json");
        for client in [HookClient::ClaudeCode, HookClient::GeminiCli] {
            let (created, _) = install(None, client, path).unwrap();
            let (left, removed) = uninstall(&created, client, path, true).unwrap();
            assert_eq!((left, removed.len()), (None, client.events().len()));
            // A user's setting added since stays, and so does the file.
            let edited = created.replacen('{', "{\n  \"theme\": \"dark\",", 1);
            let (left, _) = uninstall(&edited, client, path, true).unwrap();
            assert_eq!(left.as_deref(), Some("{\n  \"theme\": \"dark\"\n}\n"));
            // A file ctxopt did not create is never removed, even when empty.
            let (left, _) = uninstall(&created, client, path, false).unwrap();
            assert!(left.is_some());
        }
    }

    #[test]
    fn a_missing_file_is_created_and_bad_json_is_refused() {
        let path = Path::new("s.json");
        let (text, _) = install(None, HookClient::ClaudeCode, path).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "ctxopt hook claude-code"
        );
        let err =
            install(Some("{\n  \"hooks\": {,}\n}"), HookClient::ClaudeCode, path).unwrap_err();
        assert!(
            err.to_string().starts_with("s.json: line 2, column 13"),
            "{err}"
        );
    }
}
