//! The canonical serialization of a tool list, the text every footprint is counted on.
//!
//! The rule (the one the published tool-list token tables use): the `tools` array, each
//! tool object restricted to the eight members [`TOOL_MEMBERS`] (nothing removed inside
//! them), keys in the order the server sent them, written as compact single-line JSON.
//! Numbers keep their wire text. Strings are escaped the way Go's `encoding/json` does
//! with HTML escaping off (the reference implementation's encoder): `\"`, `\\`, `\n`,
//! `\r`, `\t`, `\b`, `\f`, other control characters as `\u00xx`, and U+2028/U+2029 as
//! `\u2028`/`\u2029`; every other character is written as itself. One known difference:
//! serde_json spells a number's exponent `e+3` whatever the wire said (`1E3`, `1e3`).

use serde_json::{Map, Value};

/// The tool members the canonical serialization keeps, in no particular order (the
/// server's order wins).
pub(crate) const TOOL_MEMBERS: [&str; 8] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];

/// Writes `value` as compact JSON under the canonical escaping rule.
pub(crate) fn to_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                let b = c as u32 as usize;
                out.push_str("\\u00");
                out.push(HEX[b >> 4] as char);
                out.push(HEX[b & 0xf] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Restricts one tool object to [`TOOL_MEMBERS`], keeping the server's key order. A tool
/// that is not an object is returned unchanged.
pub(crate) fn restrict_tool(tool: &Value) -> Value {
    match tool {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| TOOL_MEMBERS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Returns `value` with the members named in `names` removed from its top level only.
pub(crate) fn without_top_level(value: &Value, names: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !names.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The bounds of `$ref` inlining.
const MAX_REF_DEPTH: usize = 32;

/// Inlines the same-document `$ref`s of one tool's `inputSchema` and `outputSchema`, the
/// way the published tables do before counting: a `$ref` object is replaced by its target
/// (resolved recursively) with the referring object's other members spliced after it, a
/// recursive or unresolvable reference is left as it is, and when every reference
/// resolved the schema's `$defs`/`definitions` are dropped. Returns the rewritten tool and
/// whether any reference was left unresolved.
pub(crate) fn resolve_tool_refs(tool: &Value) -> (Value, bool) {
    let Value::Object(map) = tool else {
        return (tool.clone(), false);
    };
    let mut unresolved = false;
    let mut out = Map::new();
    for (key, member) in map {
        if key == "inputSchema" || key == "outputSchema" {
            let mut resolver = RefResolver {
                root: member,
                unresolved: false,
            };
            let mut resolved = resolver.walk(member, 0, &mut Vec::new());
            if !resolver.unresolved {
                if let Value::Object(schema) = &mut resolved {
                    schema.shift_remove("$defs");
                    schema.shift_remove("definitions");
                }
            }
            unresolved |= resolver.unresolved;
            out.insert(key.clone(), resolved);
        } else {
            out.insert(key.clone(), member.clone());
        }
    }
    (Value::Object(out), unresolved)
}

struct RefResolver<'a> {
    root: &'a Value,
    unresolved: bool,
}

impl RefResolver<'_> {
    fn walk(&mut self, value: &Value, depth: usize, active: &mut Vec<String>) -> Value {
        if depth > MAX_REF_DEPTH {
            self.unresolved = true;
            return value.clone();
        }
        match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.walk(v, depth + 1, active))
                    .collect(),
            ),
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    return self.inline(map, reference, depth, active);
                }
                Value::Object(
                    map.iter()
                        .map(|(k, v)| (k.clone(), self.walk(v, depth + 1, active)))
                        .collect(),
                )
            }
            other => other.clone(),
        }
    }

    fn inline(
        &mut self,
        node: &Map<String, Value>,
        reference: &str,
        depth: usize,
        active: &mut Vec<String>,
    ) -> Value {
        let target = (!active.iter().any(|a| a == reference))
            .then(|| pointer(self.root, reference))
            .flatten();
        let Some(target) = target else {
            self.unresolved = true;
            return Value::Object(node.clone());
        };
        active.push(reference.to_owned());
        let expanded = self.walk(target, depth + 1, active);
        active.pop();
        let Value::Object(expanded) = expanded else {
            return expanded;
        };
        let mut merged = expanded;
        for (k, v) in node {
            if k != "$ref" {
                let walked = self.walk(v, depth + 1, active);
                merged.insert(k.clone(), walked);
            }
        }
        Value::Object(merged)
    }
}

/// Resolves a same-document JSON Pointer fragment (`#`, `#/$defs/x`).
fn pointer<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    let path = fragment.strip_prefix('/')?;
    path.split('/').try_fold(root, |cur, seg| {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        match cur {
            Value::Object(map) => map.get(&seg),
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn compact_keeps_key_order_and_number_text() {
        let v = parse(r#"{ "b": 1.0, "a": [-0.50, 18446744073709551616, 1E3] }"#);
        // Exponents come back from serde_json as `e+`/`e-` (a known difference from the
        // reference encoder, documented in docs/audit.md); everything else is verbatim.
        assert_eq!(
            to_compact(&v),
            r#"{"b":1.0,"a":[-0.50,18446744073709551616,1e+3]}"#
        );
    }

    #[test]
    fn strings_escape_like_go() {
        let v = Value::String("a\"\\\n\r\t\u{8}\u{c}\u{1}\u{2028}é<>&/".into());
        assert_eq!(
            to_compact(&v),
            "\"a\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u2028é<>&/\""
        );
    }

    #[test]
    fn restrict_keeps_eight_members_in_server_order() {
        let v = parse(r#"{"execution":{},"_meta":{"x":1},"name":"t","icons":[],"extra":2}"#);
        assert_eq!(
            to_compact(&restrict_tool(&v)),
            r#"{"_meta":{"x":1},"name":"t","icons":[]}"#
        );
    }

    #[test]
    fn refs_inline_and_defs_drop() {
        let v = parse(
            r##"{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A","description":"d"}},"$defs":{"A":{"type":"string"}}}}"##,
        );
        let (r, unresolved) = resolve_tool_refs(&v);
        assert!(!unresolved);
        assert_eq!(
            to_compact(&r),
            r#"{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string","description":"d"}}}}"#
        );
    }

    #[test]
    fn recursive_refs_stay_and_keep_defs() {
        let v = parse(
            r##"{"inputSchema":{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}}"##,
        );
        let (r, unresolved) = resolve_tool_refs(&v);
        assert!(unresolved);
        assert!(to_compact(&r).contains("$defs"));
    }

    #[test]
    fn top_level_removal_keeps_nested_members() {
        let v = parse(r#"{"_meta":{"a":1},"inputSchema":{"properties":{"icons":{}}},"icons":[]}"#);
        assert_eq!(
            to_compact(&without_top_level(&v, &["_meta", "icons"])),
            r#"{"inputSchema":{"properties":{"icons":{}}}}"#
        );
    }
}
