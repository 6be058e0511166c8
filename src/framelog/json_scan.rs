//! A span scanner over JSON text that is already known to be valid.
//!
//! The accounting task never re-serializes a frame: it looks at members of the frame
//! through byte ranges into the original text. Validity is checked first with
//! [`is_valid`] (serde_json, without building a tree); the functions here then assume it
//! and only track structure, so they never fail.

use std::borrow::Cow;
use std::ops::Range;

/// serde_json's recursion limit, which the proxy keeps everywhere: a value nested this many
/// levels of arrays and objects deep or more (the outermost included) is refused, so a frame
/// that deep is `unparseable` (and relayed untouched), and nothing that walks a frame's
/// structure recurses further.
pub(crate) const MAX_DEPTH: usize = 128;

/// `true` when `text` is one complete JSON value (surrounding whitespace allowed) nested
/// less than [`MAX_DEPTH`] deep.
pub(crate) fn is_valid(text: &str) -> bool {
    serde_json::from_str::<Shallow>(text).is_ok()
}

/// Any JSON value, visited through serde_json's `deserialize_any`, which counts nesting
/// (unlike `IgnoredAny`, which skips a value without a depth limit) and fails past
/// [`MAX_DEPTH`]; nothing is built.
struct Shallow;

impl<'de> serde::Deserialize<'de> for Shallow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShallowVisitor)
    }
}

struct ShallowVisitor;

impl<'de> serde::de::Visitor<'de> for ShallowVisitor {
    type Value = Shallow;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_str<E>(self, _: &str) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_unit<E>(self) -> Result<Shallow, E> {
        Ok(Shallow)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shallow, A::Error> {
        while seq.next_element::<Shallow>()?.is_some() {}
        Ok(Shallow)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Shallow, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, Shallow>()?
            .is_some()
        {}
        Ok(Shallow)
    }
}

/// One `"key": value` member of an object, as byte ranges into the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The key, quotes included.
    pub key: Range<usize>,
    /// The value.
    pub value: Range<usize>,
}

/// Index of the first non-whitespace byte at or after `i`.
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The span of the top-level value of `text` (whitespace trimmed).
pub fn root(text: &str) -> Range<usize> {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    start..value_end(b, start)
}

/// The end (exclusive) of the value starting at `i`.
pub(crate) fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{') | Some(b'[') => container_end(b, i),
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            {
                j += 1;
            }
            j
        }
    }
}

/// The end (exclusive, after the closing quote) of the string starting at `i`: the first
/// quote after an even number of backslashes (each pair is one escaped backslash; an odd
/// one escapes the quote). Found by quotes alone, so a string dense with escapes (text with
/// `\n` every line) is crossed at `memchr` speed rather than stopped at every escape.
fn string_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while let Some(k) = b.get(j..).and_then(|rest| memchr::memchr(b'"', rest)) {
        let quote = j + k;
        let backslashes = b[i + 1..quote]
            .iter()
            .rev()
            .take_while(|&&c| c == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return quote + 1;
        }
        j = quote + 1;
    }
    b.len()
}

/// The end (exclusive) of the object or array starting at `i`.
fn container_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// The members of the object spanning `obj` (which must start with `{`).
pub(crate) fn members(text: &str, obj: Range<usize>) -> Vec<Member> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_ws(b, obj.start + 1);
    while i < obj.end && b[i] == b'"' {
        let key = i..string_end(b, i);
        let colon = skip_ws(b, key.end);
        let vstart = skip_ws(b, colon + 1);
        let value = vstart..value_end(b, vstart);
        i = skip_ws(b, value.end);
        if i < obj.end && b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
        out.push(Member { key, value });
    }
    out
}

/// The elements of the array spanning `arr` (which must start with `[`).
pub(crate) fn elements(text: &str, arr: Range<usize>) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_ws(b, arr.start + 1);
    while i < arr.end && b[i] != b']' {
        let value = i..value_end(b, i);
        i = skip_ws(b, value.end);
        if i < arr.end && b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
        out.push(value);
    }
    out
}

/// The decoded content of the JSON string spanning `span` (quotes included).
pub(crate) fn string_value(text: &str, span: Range<usize>) -> Cow<'_, str> {
    let inner = &text[span.start + 1..span.end - 1];
    if inner.contains('\\') {
        Cow::Owned(serde_json::from_str::<String>(&text[span]).unwrap_or_default())
    } else {
        Cow::Borrowed(inner)
    }
}

/// The members of `value` when it is an object (else none).
pub(crate) fn object_members(text: &str, value: Range<usize>) -> Vec<Member> {
    if text.as_bytes().get(value.start) == Some(&b'{') {
        members(text, value)
    } else {
        Vec::new()
    }
}

/// The value of the first member called `name` among `members`.
pub fn find(text: &str, members: &[Member], name: &str) -> Option<Range<usize>> {
    members
        .iter()
        .find(|m| string_value(text, m.key.clone()) == name)
        .map(|m| m.value.clone())
}

/// The value of member `name` of the object spanning `obj`, if `obj` is an object and has it.
/// Scans the whole object: look up several members with [`object_members`] and [`find`].
pub(crate) fn member(text: &str, obj: Range<usize>, name: &str) -> Option<Range<usize>> {
    find(text, &object_members(text, obj), name)
}

/// The decoded string at `span`, if the value there is a string.
pub fn as_str(text: &str, span: Range<usize>) -> Option<Cow<'_, str>> {
    (text.as_bytes().get(span.start) == Some(&b'"')).then(|| string_value(text, span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_members_and_elements_with_whitespace_and_escapes() {
        let text = r#" { "a" : [1, {"b":"x\"}"} ] , "c\u0064":null,"e":-1.5e3 } "#;
        assert!(is_valid(text));
        let r = root(text);
        assert_eq!(&text[r.clone()], text.trim());
        let ms = members(text, r.clone());
        let keys: Vec<_> = ms
            .iter()
            .map(|m| string_value(text, m.key.clone()))
            .collect();
        assert_eq!(keys, ["a", "cd", "e"]);
        assert_eq!(&text[ms[2].value.clone()], "-1.5e3");
        let els = elements(text, ms[0].value.clone());
        assert_eq!(&text[els[1].clone()], r#"{"b":"x\"}"}"#);
        assert_eq!(&text[member(text, r, "cd").unwrap()], "null");
    }

    #[test]
    fn escaped_backslashes_before_quotes() {
        let text = r#"{"k":"a\\","z":"\\\"","y":1}"#;
        assert!(is_valid(text));
        let ms = members(text, root(text));
        assert_eq!(&text[ms[0].value.clone()], r#""a\\""#);
        assert_eq!(&text[ms[1].value.clone()], r#""\\\"""#);
        assert_eq!(&text[ms[2].value.clone()], "1");
    }

    #[test]
    fn every_string_ends_at_its_closing_quote_whatever_its_escapes() {
        // Runs of 0 to 5 backslashes before quotes, escape-dense lines, a string at the end.
        let mut cases: Vec<String> = (0..6)
            .map(|n| format!("{}\"{}\"x", "\\".repeat(n), "\\".repeat(5 - n)))
            .collect();
        cases.push("line\n".repeat(1000));
        cases.push(String::new());
        for case in &cases {
            let text = serde_json::to_string(&vec![case.clone(), "after".into()]).unwrap();
            let els = elements(&text, root(&text));
            let parsed: Vec<String> = els
                .iter()
                .map(|e| string_value(&text, e.clone()).into_owned())
                .collect();
            assert_eq!(parsed, [case.as_str(), "after"], "{text}");
        }
    }

    #[test]
    fn empty_containers_have_no_children() {
        assert!(members("{ }", 0..3).is_empty());
        assert!(elements("[ ]", 0..3).is_empty());
    }
}
