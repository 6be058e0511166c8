//! A JSON/JSONC reader that keeps where every value is: comments (`//`, `/* */`), trailing
//! commas and a byte-order mark are accepted, and each value, member and array element
//! carries its byte span in the text, so an edit can replace exactly those bytes and leave
//! the rest of the file as it was.

use std::ops::Range;

use super::ConfigError;

/// A parsed value and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    /// The value's bytes in the text (`{` to `}` for an object).
    pub span: Range<usize>,
    /// What the value is.
    pub kind: Kind,
}

/// The kinds of JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// An object's members, in order.
    Object(Vec<Member>),
    /// An array's elements, in order.
    Array(Vec<Node>),
    /// A string, decoded.
    String(String),
    /// A number, a boolean or null.
    Scalar,
}

/// One member of an object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    /// The key, decoded.
    pub key: String,
    /// The key's bytes, quotes included.
    pub(crate) key_span: Range<usize>,
    /// The value.
    pub value: Node,
}

impl Node {
    /// The members, when the value is an object.
    pub(crate) fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements, when the value is an array.
    pub(crate) fn elements(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(e) => Some(e),
            _ => None,
        }
    }

    /// The text, when the value is a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    /// The member named `key`, when the value is an object (the last one, as JSON
    /// parsers take it, if the key is repeated).
    pub(crate) fn member(&self, key: &str) -> Option<&Member> {
        self.members()?.iter().rev().find(|m| m.key == key)
    }

    /// The value of member `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        self.member(key).map(|m| &m.value)
    }

    /// The value at a path of keys.
    pub(crate) fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }
}

/// Parses `text` as JSONC; an error names the line and column.
pub(crate) fn parse(text: &str) -> Result<Node, ConfigError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    if text.starts_with('\u{feff}') {
        p.pos = 3;
    }
    p.skip_trivia()?;
    let node = p.value(0)?;
    p.skip_trivia()?;
    if p.pos < p.bytes.len() {
        return Err(p.error("unexpected text after the value"));
    }
    Ok(node)
}

/// Nesting deeper than this is refused (a config file is never that deep).
const MAX_DEPTH: usize = 256;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ConfigError {
        let (line, column) = line_column(self.text, self.pos);
        ConfigError::Syntax {
            line,
            column,
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), ConfigError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.pos += 1;
                    }
                }
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'*') => {
                    let Some(end) = self.text[self.pos + 2..].find("*/") else {
                        return Err(self.error("unterminated /* comment"));
                    };
                    self.pos += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ConfigError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => Kind::Object(self.object(depth)?),
            Some(b'[') => Kind::Array(self.array(depth)?),
            Some(b'"') => Kind::String(self.string()?),
            Some(b't') => self.word("true")?,
            Some(b'f') => self.word("false")?,
            Some(b'n') => self.word("null")?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            None => return Err(self.error("unexpected end of the text")),
            Some(_) => return Err(self.error("expected a value")),
        };
        Ok(Node {
            span: start..self.pos,
            kind,
        })
    }

    fn object(&mut self, depth: usize) -> Result<Vec<Member>, ConfigError> {
        self.pos += 1;
        let mut members = Vec::new();
        loop {
            self.skip_trivia()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(members);
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a key in quotes or `}`")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            let key_span = key_start..self.pos;
            self.skip_trivia()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:` after the key"));
            }
            self.pos += 1;
            self.skip_trivia()?;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.skip_trivia()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Vec<Node>, ConfigError> {
        self.pos += 1;
        let mut elements = Vec::new();
        loop {
            self.skip_trivia()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(elements);
            }
            elements.push(self.value(depth + 1)?);
            self.skip_trivia()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn word(&mut self, word: &str) -> Result<Kind, ConfigError> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(Kind::Scalar)
        } else {
            Err(self.error("expected a value"))
        }
    }

    fn number(&mut self) -> Result<Kind, ConfigError> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        let literal = &self.text[start..self.pos];
        if serde_json::from_str::<serde_json::Number>(literal).is_err() {
            self.pos = start;
            return Err(self.error("invalid number"));
        }
        Ok(Kind::Scalar)
    }

    fn string(&mut self) -> Result<String, ConfigError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return Err(self.error("unterminated string"));
                }
                Some(b'"') => break,
                Some(b'\\') => self.pos += 2,
                Some(b'\n') => return Err(self.error("line break inside a string")),
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        let literal = &self.text[start..self.pos.min(self.text.len())];
        serde_json::from_str::<String>(literal).map_err(|e| {
            let at = self.pos;
            self.pos = start;
            let err = self.error(&format!("invalid string: {e}"));
            self.pos = at;
            err
        })
    }
}

/// The 1-based line and column (in characters) of byte `pos`.
pub(crate) fn line_column(text: &str, pos: usize) -> (usize, usize) {
    let before = &text[..pos.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_the_values_through_comments_and_trailing_commas() {
        let text = "\u{feff}{ // note\r\n  \"ключ\": [1, \"a\\u00e9\",], /* x */ \"b\": {\"c\": null,},\r\n}";
        let root = parse(text).unwrap();
        let m = root.member("ключ").unwrap();
        assert_eq!(&text[m.key_span.clone()], "\"ключ\"");
        let elements = m.value.elements().unwrap();
        assert_eq!(&text[elements[1].span.clone()], "\"a\\u00e9\"");
        assert_eq!(elements[1].as_str(), Some("aé"));
        assert_eq!(&text[root.at(&["b", "c"]).unwrap().span.clone()], "null");
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let err = parse("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(err.to_string(), "line 3, column 3: expected `,` or `}`");
        assert!(parse("{\"a\": \"x}")
            .unwrap_err()
            .to_string()
            .contains("line 1"));
        assert!(parse("{} x").is_err());
        assert!(parse("{\"a\": tru}").is_err());
        assert!(parse("/* open").is_err());
    }
}
