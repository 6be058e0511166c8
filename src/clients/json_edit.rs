//! Inserting and removing members and elements of JSON objects and arrays as byte edits,
//! each removal the exact inverse of the insertion: a new item goes after the last one with
//! the same separator (line break and indentation) the last one has, and removing it takes
//! back the comma and separator in front of it.

use std::ops::Range;

use serde_json::Value;

use super::edit::{line_ending, separator_before, Edit};
use super::entries::Slot;
use super::jsonc::Node;

/// Where a new last item of a container goes. `open` is the offset of the container's `{`
/// or `[`; `items` are the existing items' spans (a member from its key to its value's end).
pub(crate) fn append_slot(text: &str, open: usize, items: &[Range<usize>]) -> Slot {
    match items.last() {
        Some(last) => Slot {
            at: last.end,
            before: format!(",{}", separator_before(text, last.start)),
            after: String::new(),
        },
        None => Slot {
            at: open + 1,
            before: String::new(),
            after: String::new(),
        },
    }
}

/// The edit that removes item `index` of `items` (spans as for [`append_slot`]).
pub(crate) fn remove_item(text: &str, items: &[Range<usize>], index: usize) -> Edit {
    let item = &items[index];
    if index > 0 {
        return Edit::delete(items[index - 1].end..item.end);
    }
    // The first item: its comma and the space up to the next item go too.
    let rest = &text[item.end..];
    let end = match rest.trim_start().strip_prefix(',') {
        Some(after) => text.len() - after.trim_start().len(),
        None => item.end,
    };
    Edit::delete(item.start..end)
}

/// The spans of an object's members (key to value end).
pub(crate) fn member_spans(object: &Node) -> Vec<Range<usize>> {
    object
        .members()
        .unwrap_or_default()
        .iter()
        .map(|m| m.key_span.start..m.value.span.end)
        .collect()
}

/// The spans of an array's elements.
pub(crate) fn element_spans(array: &Node) -> Vec<Range<usize>> {
    array
        .elements()
        .unwrap_or_default()
        .iter()
        .map(|e| e.span.clone())
        .collect()
}

/// `value` as JSON text for insertion after `slot`: pretty-printed and indented to match
/// when the slot starts a line of its own, else on one line.
pub(crate) fn render(text: &str, slot: &Slot, value: &Value) -> String {
    let Some(indent) = slot.before.rsplit_once('\n').map(|(_, i)| i) else {
        return value.to_string();
    };
    let eol = line_ending(text);
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    pretty
        .lines()
        .collect::<Vec<_>>()
        .join(&format!("{eol}{indent}"))
}

/// The edit that appends member `key: value` to `object`.
pub(crate) fn append_member(text: &str, object: &Node, key: &str, value: &Value) -> Edit {
    let slot = append_slot(text, object.span.start, &member_spans(object));
    let key = Value::String(key.to_string());
    let rendered = render(text, &slot, value);
    Edit::insert(
        slot.at,
        format!("{}{key}: {rendered}{}", slot.before, slot.after),
    )
}

/// The edit that appends `value` to `array`.
pub(crate) fn append_element(text: &str, array: &Node, value: &Value) -> Edit {
    let slot = append_slot(text, array.span.start, &element_spans(array));
    let rendered = render(text, &slot, value);
    Edit::insert(slot.at, format!("{}{rendered}{}", slot.before, slot.after))
}

#[cfg(test)]
mod tests {
    use super::super::edit::apply;
    use super::super::jsonc::parse;
    use super::*;

    #[test]
    fn appending_then_removing_gives_the_text_back() {
        for text in [
            "{}",
            "{ }",
            "{\"a\": 1}",
            "{\r\n  \"a\": 1, // one\r\n  \"b\": [2,],\r\n}",
            "{\n\t\"a\": {\n\t\t\"x\": 1\n\t}\n}\n",
        ] {
            let root = parse(text).unwrap();
            let added = apply(
                text,
                &[append_member(
                    text,
                    &root,
                    "ctx",
                    &serde_json::json!({"k": [1]}),
                )],
            );
            let again = parse(&added).unwrap();
            assert_eq!(
                again.get("ctx").unwrap().members().unwrap().len(),
                1,
                "{added}"
            );
            let spans = member_spans(&again);
            let removed = apply(&added, &[remove_item(&added, &spans, spans.len() - 1)]);
            assert_eq!(removed, text, "via {added:?}");
        }
    }

    #[test]
    fn removing_the_first_item_takes_its_comma() {
        let text = "[1, 2]";
        let root = parse(text).unwrap();
        let spans = element_spans(&root);
        assert_eq!(apply(text, &[remove_item(text, &spans, 0)]), "[2]");
        let one = "[1,]";
        let spans = element_spans(&parse(one).unwrap());
        assert_eq!(apply(one, &[remove_item(one, &spans, 0)]), "[]");
    }
}
