//! Removing every `_meta` member, at any depth, from JSON text without re-serializing it.
//!
//! `meta_tokens` is `tokens(frame) − tokens(frame without _meta)`. The removal works on
//! byte spans of the original text, so everything outside the removed members keeps its
//! exact formatting, and a frame without `_meta` yields the identical text (and exactly 0).

use std::ops::Range;

use super::json_scan::{elements, members, string_value, MAX_DEPTH};

/// The byte ranges to cut from `text` (valid JSON) to remove every `_meta` member, sorted
/// and non-overlapping. Empty when the text has no `_meta` member.
pub(crate) fn meta_spans(text: &str, value: Range<usize>) -> Vec<Range<usize>> {
    let mut cuts = Vec::new();
    collect(text, value, &mut cuts);
    merge(cuts)
}

/// `text` with every `_meta` member removed, or `None` when it has none.
pub fn strip_meta(text: &str, value: Range<usize>) -> Option<String> {
    let cuts = meta_spans(text, value);
    if cuts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for cut in cuts {
        out.push_str(&text[at..cut.start]);
        at = cut.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// The cuts for every `_meta` member in `value` and below, walking the values with a stack
/// of their own (no recursion, so any depth is safe). Containers nested deeper than
/// [`MAX_DEPTH`] are not entered: no JSON parser that accepts the frame goes there (such a
/// frame is `unparseable`), and each level rescans its contents, so entering them would
/// cost depth × size.
fn collect(text: &str, value: Range<usize>, cuts: &mut Vec<Range<usize>>) {
    let mut todo = vec![(value, 1usize)];
    while let Some((value, depth)) = todo.pop() {
        if depth > MAX_DEPTH {
            continue;
        }
        match text.as_bytes().get(value.start) {
            Some(b'{') => {
                let ms = members(text, value.clone());
                let removed: Vec<bool> = ms
                    .iter()
                    .map(|m| string_value(text, m.key.clone()) == "_meta")
                    .collect();
                if removed.iter().all(|r| *r) && !ms.is_empty() {
                    cuts.push(ms[0].key.start..ms[ms.len() - 1].value.end);
                    continue;
                }
                for (k, m) in ms.iter().enumerate() {
                    if !removed[k] {
                        todo.push((m.value.clone(), depth + 1));
                        continue;
                    }
                    let kept_after = removed[k + 1..].iter().any(|r| !r);
                    if kept_after {
                        // Up to the next member's key: takes the comma and whitespace with it.
                        cuts.push(m.key.start..ms[k + 1].key.start);
                    } else {
                        // Trailing: from the end of the last kept member before it.
                        let last_kept = (0..k).rev().find(|&j| !removed[j]).unwrap_or(0);
                        cuts.push(ms[last_kept].value.end..m.value.end);
                    }
                }
            }
            Some(b'[') => todo.extend(elements(text, value).into_iter().map(|e| (e, depth + 1))),
            _ => {}
        }
    }
}

fn merge(mut cuts: Vec<Range<usize>>) -> Vec<Range<usize>> {
    cuts.sort_by_key(|c| c.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(cuts.len());
    for c in cuts {
        match out.last_mut() {
            Some(last) if c.start <= last.end => last.end = last.end.max(c.end),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framelog::json_scan::root;

    fn strip(text: &str) -> Option<String> {
        strip_meta(text, root(text))
    }

    #[test]
    fn no_meta_means_no_change() {
        assert_eq!(strip(r#"{"a":{"b":[1,{"meta":2}]}}"#), None);
    }

    #[test]
    fn removes_meta_at_every_position_and_depth_leaving_valid_json() {
        let cases = [
            (r#"{"_meta":{"x":1},"a":1}"#, r#"{"a":1}"#),
            (r#"{"a":1, "_meta" : {"x":1} }"#, r#"{"a":1 }"#),
            (r#"{"a":1,"_meta":{},"b":2}"#, r#"{"a":1,"b":2}"#),
            (r#"{"_meta":1}"#, r#"{}"#),
            (r#"{"_meta":1,"_meta":2}"#, r#"{}"#),
            (r#"{"a":1,"_meta":1,"_meta":2}"#, r#"{"a":1}"#),
            (
                r#"{"p":{"_meta":{"_meta":1},"q":[{"_meta":3,"r":4}]},"\u005fmeta":0}"#,
                r#"{"p":{"q":[{"r":4}]}}"#,
            ),
        ];
        for (input, want) in cases {
            let got = strip(input).unwrap();
            assert_eq!(got, want, "{input}");
            assert!(crate::framelog::json_scan::is_valid(&got));
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;
        use serde_json::Value;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                "[a-z\"\\\\é ]{0,6}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    prop::collection::vec(
                        (
                            prop::sample::select(vec!["_meta", "a", "b", "_metas", "meta"]),
                            inner
                        ),
                        0..5
                    )
                    .prop_map(|members| Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect()
                    )),
                ]
            })
        }

        fn drop_meta(value: &mut Value) {
            match value {
                Value::Object(map) => {
                    map.shift_remove("_meta");
                    map.values_mut().for_each(drop_meta);
                }
                Value::Array(items) => items.iter_mut().for_each(drop_meta),
                _ => {}
            }
        }

        proptest! {
            #[test]
            fn span_strip_equals_tree_strip(value in json(), pretty in any::<bool>()) {
                let text = if pretty {
                    serde_json::to_string_pretty(&value).unwrap()
                } else {
                    serde_json::to_string(&value).unwrap()
                };
                crate::framelog::classify::classify(&text);
                let mut expected = value.clone();
                drop_meta(&mut expected);
                match strip(&text) {
                    None => prop_assert_eq!(&expected, &value),
                    Some(stripped) => {
                        let reparsed: Value = serde_json::from_str(&stripped).unwrap();
                        prop_assert_eq!(&reparsed, &expected);
                        if !pretty {
                            prop_assert_eq!(stripped, serde_json::to_string(&expected).unwrap());
                        }
                    }
                }
            }

            #[test]
            fn classify_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
                if let Ok(text) = std::str::from_utf8(&bytes) {
                    crate::framelog::classify::classify(text);
                }
            }
        }
    }
}
