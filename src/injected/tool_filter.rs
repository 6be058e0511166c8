//! Which of the server's tools the client sees (`--hide-tools NAME,…`, `--only-tools
//! NAME,…`): the others are taken out of `tools/list`, and a call to one of them is answered
//! with a JSON-RPC error without reaching the server. The injected tools are never filtered.

use std::collections::BTreeSet;

use super::tools::InjectedTool;

/// The server tools taken out of the client's view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolFilter {
    /// Every tool is shown.
    #[default]
    All,
    /// These tools are hidden.
    Hide(BTreeSet<String>),
    /// Only these tools are shown.
    Only(BTreeSet<String>),
}

impl ToolFilter {
    /// A filter from the two options (at most one may be given; `None` for an absent one).
    pub fn from_options(hide: Option<&str>, only: Option<&str>) -> ToolFilter {
        let names = |list: &str| -> BTreeSet<String> {
            list.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        };
        match (hide, only) {
            (_, Some(only)) => ToolFilter::Only(names(only)),
            (Some(hide), None) => ToolFilter::Hide(names(hide)),
            (None, None) => ToolFilter::All,
        }
    }

    /// Whether the client sees the server's tool `name`.
    pub fn shows(&self, name: &str) -> bool {
        match self {
            ToolFilter::All => true,
            ToolFilter::Hide(hidden) => !hidden.contains(name),
            ToolFilter::Only(shown) => shown.contains(name),
        }
    }

    /// Whether any tool may be hidden.
    pub fn is_active(&self) -> bool {
        *self != ToolFilter::All
    }

    /// The names given to `--hide-tools` that are also names of ctxopt-proxy's own tools:
    /// those are never hidden (the proxy's tools are chosen with `--inject`), only a
    /// server tool of the same name is.
    pub(crate) fn injected_names_hidden(&self) -> Vec<&'static str> {
        match self {
            ToolFilter::Hide(hidden) => InjectedTool::every()
                .map(InjectedTool::name)
                .filter(|name| hidden.contains(*name))
                .collect(),
            ToolFilter::All | ToolFilter::Only(_) => Vec::new(),
        }
    }

    /// The message of the JSON-RPC error a call to a hidden tool gets.
    pub(crate) fn refusal(name: &str) -> String {
        format!("Unknown tool: {name} (hidden by ctxopt-proxy --hide-tools/--only-tools)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hide_and_only_select_the_tools_shown() {
        let hide = ToolFilter::from_options(Some("write_file, move_file,"), None);
        assert!(!hide.shows("write_file") && !hide.shows("move_file"));
        assert!(hide.shows("read_file"));
        let only = ToolFilter::from_options(None, Some("read_file"));
        assert!(only.shows("read_file") && !only.shows("write_file"));
        assert!(only.is_active());
        let all = ToolFilter::from_options(None, None);
        assert!(all.shows("anything") && !all.is_active());
        let ours = ToolFilter::from_options(Some("write_file,get_result,build_context"), None);
        assert_eq!(
            ours.injected_names_hidden(),
            ["build_context", "get_result"]
        );
        assert!(hide.injected_names_hidden().is_empty());
        assert!(ToolFilter::from_options(None, Some("build_context"))
            .injected_names_hidden()
            .is_empty());
    }
}
