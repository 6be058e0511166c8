//! Extending a server's `tools/list` result with the injected tools.
//!
//! Only the last page is extended (a result without `nextCursor`), so a paginating client
//! sees our tools once. A name the server already uses — on this page or an earlier one —
//! is not shadowed: ours takes the `ctxopt_` prefix.

use std::collections::BTreeSet;

use serde_json::Value;

use super::tool_filter::ToolFilter;
use super::tools::{InjectedTool, ToolNames};

/// An extended `tools/list` result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Extended {
    /// The result object as JSON text: the server's members in their order, our tools
    /// appended to `tools`.
    pub(crate) result: String,
    /// The names our tools were offered under (`None` on a page that is not the last).
    pub(crate) names: Option<ToolNames>,
    /// Renames made to avoid the server's names: (own name, offered name).
    pub(crate) renamed: Vec<(String, String)>,
    /// How many of the server's tools this page no longer lists (`--hide-tools`,
    /// `--only-tools`).
    pub(crate) hidden: usize,
}

impl Extended {
    /// One line per rename, for stderr.
    pub(crate) fn notes(&self) -> Vec<String> {
        self.renamed
            .iter()
            .map(|(own, offered)| {
                format!("ctxopt: the server already has a tool named `{own}`; ours is offered as `{offered}`")
            })
            .collect()
    }
}

/// The names of the tools listed in a `tools/list` result.
pub(crate) fn listed_names(result: &Value) -> Vec<String> {
    result
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name")?.as_str().map(str::to_string))
        .collect()
}

/// Whether a `tools/list` result says more pages follow.
pub(crate) fn has_next_page(result: &Value) -> bool {
    result.get("nextCursor").is_some_and(|c| !c.is_null())
}

/// Extends a `tools/list` result (the `result` object's JSON text) with `tools`, on the
/// last page only, and takes out the server's tools `filter` hides, on every page.
/// `earlier_pages` holds the tool names of the earlier pages of the same listing. `None`
/// when the text is not a result with a `tools` array, or when nothing changes: the result
/// is then relayed as it is.
pub(crate) fn extend_tools_list(
    raw_result: &str,
    tools: &[InjectedTool],
    earlier_pages: &BTreeSet<String>,
    filter: &ToolFilter,
) -> Option<Extended> {
    let mut result: Value = serde_json::from_str(raw_result).ok()?;
    let last = !has_next_page(&result);
    let page: BTreeSet<String> = listed_names(&result).into_iter().collect();
    let listed = result.get_mut("tools")?.as_array_mut()?;
    let before = listed.len();
    listed.retain(|t| {
        t.get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| filter.shows(n))
    });
    let hidden = before - listed.len();
    let extend = last && !tools.is_empty();
    if !extend && hidden == 0 {
        return None;
    }
    let (names, renamed) = if extend {
        let taken = |name: &str| page.contains(name) || earlier_pages.contains(name);
        let (names, renamed) = ToolNames::avoiding(tools, &taken);
        listed.extend(names.definitions());
        (Some(names), renamed)
    } else {
        (None, Vec::new())
    };
    Some(Extended {
        result: serde_json::to_string(&result).ok()?,
        names,
        renamed,
        hidden,
    })
}

/// Adds `capabilities.tools` to an `initialize` or `server/discover` result (the `result`
/// object's JSON text) that lacks it, so the client asks for tools and the proxy can serve
/// the injected ones ([`Bridge::own_tools_list`](super::Bridge::own_tools_list)). `None` when
/// the server already declares tools, or the text is not a result with `capabilities`.
pub(crate) fn ensure_tools_capability(raw_result: &str) -> Option<String> {
    let mut result: Value = serde_json::from_str(raw_result).ok()?;
    let capabilities = result.get_mut("capabilities")?.as_object_mut()?;
    if capabilities.contains_key("tools") {
        return None;
    }
    capabilities.insert("tools".into(), serde_json::json!({"listChanged": false}));
    serde_json::to_string(&result).ok()
}

/// A response frame with its `result` replaced (the frame's other members, the id's
/// spelling included, kept as parsed). `None` when either text is not JSON or the frame is
/// not a response.
pub(crate) fn with_result(frame: &str, result: &str) -> Option<String> {
    let mut frame: Value = serde_json::from_str(frame).ok()?;
    let slot = frame.get_mut("result")?;
    *slot = serde_json::from_str(result).ok()?;
    serde_json::to_string(&frame).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::injected::tools::Selection;

    fn extend(raw: &str, selection: Selection, earlier: &BTreeSet<String>) -> Option<Extended> {
        extend_tools_list(raw, selection.tools(), earlier, &ToolFilter::All)
    }

    /// The `tools/list` result of the real server-filesystem, recorded on the wire.
    fn filesystem_result() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-world/tier1-tools-list/filesystem-wire.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let frame: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        frame["result"].to_string()
    }

    #[test]
    fn real_filesystem_list_gains_six_tools_after_its_own() {
        let raw = filesystem_result();
        let own = listed_names(&serde_json::from_str(&raw).unwrap());
        assert!(own.contains(&"read_text_file".to_string()));
        let ext = extend(&raw, Selection::All, &BTreeSet::new()).unwrap();
        assert!(ext.renamed.is_empty());
        let value: Value = serde_json::from_str(&ext.result).unwrap();
        let names = listed_names(&value);
        assert_eq!(names.len(), own.len() + 6);
        assert_eq!(&names[..own.len()], own.as_slice());
        assert_eq!(names[own.len()], "build_context");
        // The server's part is unchanged, byte for byte, as canonical JSON.
        let before: Value = serde_json::from_str(&raw).unwrap();
        for (i, tool) in before["tools"].as_array().unwrap().iter().enumerate() {
            assert_eq!(&value["tools"][i], tool);
        }
    }

    #[test]
    fn a_taken_name_gets_the_prefix_even_from_an_earlier_page() {
        let raw = r#"{"tools":[{"name":"build_context","inputSchema":{"type":"object"}}]}"#;
        let earlier: BTreeSet<String> = ["get_decisions".to_string()].into();
        let ext = extend(raw, Selection::All, &earlier).unwrap();
        assert_eq!(
            ext.renamed,
            vec![
                ("build_context".into(), "ctxopt_build_context".into()),
                ("get_decisions".into(), "ctxopt_get_decisions".into()),
            ]
        );
        let names = listed_names(&serde_json::from_str(&ext.result).unwrap());
        assert_eq!(names[0], "build_context");
        assert_eq!(names[1], "ctxopt_build_context");
        let names = ext.names.unwrap();
        assert!(names.is_injected("ctxopt_build_context"));
        assert!(!names.is_injected("build_context"));
    }

    #[test]
    fn only_the_last_page_and_only_a_selection_are_extended() {
        let page = r#"{"tools":[],"nextCursor":"2"}"#;
        assert_eq!(extend(page, Selection::All, &BTreeSet::new()), None);
        let last = r#"{"tools":[],"nextCursor":null}"#;
        let ext = extend(last, Selection::BuildContext, &BTreeSet::new()).unwrap();
        assert_eq!(
            listed_names(&serde_json::from_str(&ext.result).unwrap()),
            ["build_context"]
        );
        assert_eq!(extend(last, Selection::None, &BTreeSet::new()), None);
        assert_eq!(
            extend(r#"{"prompts":[]}"#, Selection::All, &BTreeSet::new()),
            None
        );
    }

    #[test]
    fn hidden_server_tools_leave_every_page_and_ours_stay() {
        let raw = filesystem_result();
        let filter = ToolFilter::from_options(Some("write_file,build_context"), None);
        let ext = extend_tools_list(
            &raw,
            Selection::BuildContext.tools(),
            &BTreeSet::new(),
            &filter,
        )
        .unwrap();
        let names = listed_names(&serde_json::from_str(&ext.result).unwrap());
        assert!(!names.contains(&"write_file".to_string()));
        assert!(names.contains(&"read_text_file".to_string()));
        assert_eq!(names.last().map(String::as_str), Some("build_context"));
        assert_eq!(ext.hidden, 1);
        let page = r#"{"tools":[{"name":"write_file"},{"name":"a"}],"nextCursor":"2"}"#;
        let ext = extend_tools_list(page, &[], &BTreeSet::new(), &filter).unwrap();
        assert_eq!(
            listed_names(&serde_json::from_str(&ext.result).unwrap()),
            ["a"]
        );
        assert_eq!(ext.names, None);
    }

    #[test]
    fn a_server_without_tools_gets_the_capability() {
        let init = r#"{"protocolVersion":"2025-06-18","capabilities":{"prompts":{}},"serverInfo":{"name":"p","version":"1"}}"#;
        let out: Value = serde_json::from_str(&ensure_tools_capability(init).unwrap()).unwrap();
        assert_eq!(
            out["capabilities"]["tools"],
            serde_json::json!({"listChanged": false})
        );
        assert_eq!(out["capabilities"]["prompts"], serde_json::json!({}));
        let with_tools = r#"{"capabilities":{"tools":{"listChanged":true}}}"#;
        assert_eq!(ensure_tools_capability(with_tools), None);
        assert_eq!(ensure_tools_capability(r#"{"tools":[]}"#), None);
    }

    #[test]
    fn with_result_replaces_only_the_result() {
        let frame = r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{"tools":[]}}"#;
        assert_eq!(
            with_result(frame, r#"{"tools":[{"name":"a"}]}"#).unwrap(),
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{"tools":[{"name":"a"}]}}"#
        );
        assert_eq!(
            with_result(r#"{"jsonrpc":"2.0","id":1,"error":{}}"#, "{}"),
            None
        );
    }
}
