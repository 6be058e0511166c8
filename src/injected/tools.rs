//! The injected tools as data: their definitions (name, description, input and output
//! schemas, JSON Schema draft-07) live in `tools.json`, and [`ToolNames`] maps the names a
//! client sees (prefixed with `ctxopt_` where the server already uses one) to the tools.
//!
//! What a client is offered is the definition without its `outputSchema`: every listed byte
//! costs context tokens in every session, and a model needs the name, the description (which
//! ends with an example call) and the input schema to call a tool right. The output schemas
//! stay here, documented, and the handlers' results are tested against them.

use std::str::FromStr;
use std::sync::LazyLock;

use serde_json::Value;

/// The prefix our tools take when the server already has a tool of the same name.
pub(crate) const COLLISION_PREFIX: &str = "ctxopt_";

/// One of the injected tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InjectedTool {
    /// `build_context {task, budget?, format?}`.
    BuildContext,
    /// `search_context {query, limit?}`.
    SearchContext,
    /// `get_decisions {status?}`.
    GetDecisions,
    /// `get_relevant_errors {query?, limit?}`.
    GetRelevantErrors,
    /// `get_file_history {path}`.
    GetFileHistory,
    /// `ingest_records {records}`.
    IngestRecords,
    /// `get_result {handle, page?, lines?, pattern?, raw?}`: offered only with
    /// `--compact-results` (not one of [`InjectedTool::ALL`]).
    GetResult,
}

impl InjectedTool {
    /// The tools `--inject all` offers, in the order they are listed.
    pub(crate) const ALL: [InjectedTool; 6] = [
        InjectedTool::BuildContext,
        InjectedTool::SearchContext,
        InjectedTool::GetDecisions,
        InjectedTool::GetRelevantErrors,
        InjectedTool::GetFileHistory,
        InjectedTool::IngestRecords,
    ];

    /// Every injected tool: [`InjectedTool::ALL`], then `get_result`.
    pub(crate) fn every() -> impl Iterator<Item = InjectedTool> {
        InjectedTool::ALL
            .into_iter()
            .chain([InjectedTool::GetResult])
    }

    /// The tool's own name (before any collision prefix).
    pub(crate) fn name(self) -> &'static str {
        match self {
            InjectedTool::BuildContext => "build_context",
            InjectedTool::SearchContext => "search_context",
            InjectedTool::GetDecisions => "get_decisions",
            InjectedTool::GetRelevantErrors => "get_relevant_errors",
            InjectedTool::GetFileHistory => "get_file_history",
            InjectedTool::IngestRecords => "ingest_records",
            InjectedTool::GetResult => "get_result",
        }
    }

    /// The tool's whole definition in `tools.json`, under its own name: what is listed in
    /// `tools/list` ([`InjectedTool::offered`]) plus its `outputSchema`.
    pub(crate) fn definition(self) -> &'static Value {
        // The definitions test checks tools.json defines every variant.
        DEFINITIONS
            .iter()
            .find(|d| d["name"] == self.name())
            .expect("tools.json defines every tool")
    }
}

impl InjectedTool {
    /// The definition as listed in `tools/list`, under its own name: [`InjectedTool::definition`]
    /// without the `outputSchema`.
    pub(crate) fn offered(self) -> Value {
        let mut def = self.definition().clone();
        if let Some(members) = def.as_object_mut() {
            members.remove("outputSchema");
        }
        def
    }
}

impl FromStr for InjectedTool {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InjectedTool::every()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("no injected tool is named {s:?}"))
    }
}

static DEFINITIONS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    // tools.json is part of the source; the definitions test parses it.
    serde_json::from_str(include_str!("tools.json")).expect("tools.json is valid JSON")
});

/// Which injected tools to offer (`--inject none|build_context|all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// None: the proxy changes nothing.
    None,
    /// `build_context` only.
    BuildContext,
    /// All six.
    #[default]
    All,
}

impl Selection {
    /// The tools selected.
    pub(crate) fn tools(self) -> &'static [InjectedTool] {
        match self {
            Selection::None => &[],
            Selection::BuildContext => &InjectedTool::ALL[..1],
            Selection::All => &InjectedTool::ALL,
        }
    }
}

impl FromStr for Selection {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Selection::None),
            "build_context" => Ok(Selection::BuildContext),
            "all" => Ok(Selection::All),
            other => Err(format!(
                "unknown --inject value {other:?} (none, build_context or all)"
            )),
        }
    }
}

/// The names under which the injected tools are offered to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
    names: Vec<(String, InjectedTool)>,
}

impl ToolNames {
    /// The tools under their own names.
    pub(crate) fn plain(tools: &[InjectedTool]) -> ToolNames {
        ToolNames {
            names: tools.iter().map(|t| (t.name().to_string(), *t)).collect(),
        }
    }

    /// Names for the tools that avoid `taken`: a taken name gets the `ctxopt_`
    /// prefix (and, if that is taken too, a number). Returns the names and the renames made
    /// (own name, offered name).
    pub(crate) fn avoiding(
        tools: &[InjectedTool],
        taken: &dyn Fn(&str) -> bool,
    ) -> (ToolNames, Vec<(String, String)>) {
        let mut renamed = Vec::new();
        let mut names = Vec::new();
        for tool in tools {
            let own = tool.name();
            let mut name = own.to_string();
            let mut n = 1;
            while taken(&name) {
                name = if n == 1 {
                    format!("{COLLISION_PREFIX}{own}")
                } else {
                    format!("{COLLISION_PREFIX}{own}_{n}")
                };
                n += 1;
            }
            if name != own {
                renamed.push((own.to_string(), name.clone()));
            }
            names.push((name, *tool));
        }
        (ToolNames { names }, renamed)
    }

    /// The name `tool` is offered under, if it is offered.
    pub(crate) fn offered_name(&self, tool: InjectedTool) -> Option<&str> {
        self.names
            .iter()
            .find(|(_, t)| *t == tool)
            .map(|(n, _)| n.as_str())
    }

    /// The tool a client-side name refers to.
    pub(crate) fn lookup(&self, name: &str) -> Option<InjectedTool> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
    }

    /// Whether `name` is one of ours.
    pub(crate) fn is_injected(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// The definitions as offered: each under its offered name.
    pub(crate) fn definitions(&self) -> Vec<Value> {
        self.names
            .iter()
            .map(|(name, tool)| {
                let mut def = tool.offered();
                def["name"] = Value::String(name.clone());
                def
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example call a description ends with (`Example: {...}`).
    fn example(tool: InjectedTool) -> Value {
        let description = tool.definition()["description"].as_str().unwrap();
        let (_, tail) = description
            .split_once("Example: ")
            .unwrap_or_else(|| panic!("{}: no example call", tool.name()));
        let mut stream = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        stream.next().unwrap().unwrap()
    }

    #[test]
    fn definitions_match_the_tools_and_have_valid_schemas() {
        assert_eq!(DEFINITIONS.len(), InjectedTool::every().count());
        for tool in InjectedTool::every() {
            let def = tool.definition();
            assert_eq!(def["name"], tool.name());
            let input = &def["inputSchema"];
            assert_eq!(input["type"], "object");
            assert!(jsonschema::draft7::meta::is_valid(input), "{}", tool.name());
            assert!(tool.offered().get("outputSchema").is_none());
            assert_eq!(tool.offered()["inputSchema"], *input);
            // get_result answers with the kept text itself, which no schema describes.
            if tool == InjectedTool::GetResult {
                assert!(def.get("outputSchema").is_none());
                continue;
            }
            let output = &def["outputSchema"];
            assert_eq!(output["$schema"], "http://json-schema.org/draft-07/schema#");
            assert_eq!(output["type"], "object");
            assert!(
                jsonschema::draft7::meta::is_valid(output),
                "{}",
                tool.name()
            );
            jsonschema::draft7::new(output).unwrap_or_else(|e| panic!("{}: {e}", tool.name()));
        }
    }

    /// Every description ends with an example call, and the example is a valid call: its
    /// arguments pass the input schema, and every argument the schema requires is in it.
    #[test]
    fn every_description_ends_with_a_valid_example_call() {
        for tool in InjectedTool::every() {
            let input = &tool.definition()["inputSchema"];
            let example = example(tool);
            assert!(example.is_object(), "{}", tool.name());
            if let Err(e) = jsonschema::draft7::validate(input, &example) {
                panic!(
                    "{}: the example {example} breaks the schema: {e}",
                    tool.name()
                );
            }
        }
    }

    /// `ingest_records` describes the records format in a sentence instead of restating its
    /// schema: the description must name every list of docs/records.schema.json and the
    /// fields each list's items require.
    #[test]
    fn ingest_records_description_names_every_list_of_the_records_schema() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/records.schema.json");
        let official: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let description = InjectedTool::IngestRecords.definition()["description"]
            .as_str()
            .unwrap();
        let lists = official["properties"].as_object().unwrap();
        for (list, spec) in lists.iter().filter(|(k, _)| *k != "task") {
            let def = spec["items"]["$ref"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap();
            let required: Vec<&str> = official["$defs"][def]["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            let named = format!("{list} [{{{}", required.join(", "));
            assert!(
                description.contains(&named),
                "the description does not name {named:?}: {description}"
            );
        }
    }

    #[test]
    fn taken_names_get_the_prefix() {
        let taken = |n: &str| n == "search_context" || n == "ctxopt_search_context";
        let (names, renamed) = ToolNames::avoiding(Selection::All.tools(), &taken);
        assert_eq!(
            renamed,
            vec![(
                "search_context".to_string(),
                "ctxopt_search_context_2".to_string()
            )]
        );
        assert_eq!(
            names.lookup("ctxopt_search_context_2"),
            Some(InjectedTool::SearchContext)
        );
        assert!(!names.is_injected("search_context"));
        assert!(names.is_injected("build_context"));
        assert_eq!(names.definitions()[1]["name"], "ctxopt_search_context_2");
    }

    #[test]
    fn selection_parses_and_selects() {
        assert_eq!("none".parse::<Selection>().unwrap().tools().len(), 0);
        assert_eq!(
            "build_context".parse::<Selection>().unwrap().tools(),
            &[InjectedTool::BuildContext]
        );
        assert_eq!("all".parse::<Selection>().unwrap().tools().len(), 6);
        assert!("some".parse::<Selection>().is_err());
    }
}
