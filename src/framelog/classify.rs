//! What a frame is, read from its text: JSON-RPC kind, id, method and the few members the
//! accounting needs. Pure functions over the frame text; nothing is re-serialized.

use std::ops::Range;

use super::json_scan::{as_str, elements, find, is_valid, member, object_members, root, Member};
use super::record::FrameKind;
use crate::protocol::{PROTOCOL_VERSION_KEY, RELATED_TASK_KEY, SUBSCRIPTION_ID_KEY};

/// The accounting-relevant facts of one JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    /// Its kind (never [`FrameKind::Batch`]).
    pub(crate) kind: FrameKind,
    /// The id as its JSON text.
    pub(crate) id: Option<String>,
    /// The method of a request or notification.
    pub(crate) method: Option<String>,
    /// `params.name` of a `tools/call` request.
    pub(crate) tool: Option<String>,
    /// The [`PROTOCOL_VERSION_KEY`] member of `params._meta`, or for `initialize`
    /// requests `params.protocolVersion` (the revision the client asks for).
    pub(crate) request_protocol: Option<String>,
    /// `result.protocolVersion` of a response (meaningful for `initialize`).
    pub(crate) result_protocol: Option<String>,
    /// `result.isError` when it is a boolean.
    pub(crate) result_is_error: Option<bool>,
    /// `error.code` when it is an integer.
    pub(crate) error_code: Option<i64>,
    /// The 2026-07-28 revision's facts, when the message has any.
    pub(crate) revision: Option<Box<Revision>>,
    /// The message's span in the frame text.
    pub(crate) span: Range<usize>,
}

/// What a message says in the 2026-07-28 revision's vocabulary: kept apart (and absent
/// from most messages) so that a [`Message`] stays small.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Revision {
    /// `result.resultType` of a response (`complete`, `input_required`, `task`).
    pub(crate) result_type: Option<String>,
    /// The opaque `requestState` of a request's `params` or a response's `result`.
    pub(crate) request_state: Option<String>,
    /// Whether a request's `params` carry `inputResponses` (the retry of an
    /// `input_required` result).
    pub(crate) has_input_responses: bool,
    /// The task a message is about (the tasks extension): a request's `params.taskId`; a
    /// response's `result.task.taskId` (a task handle), `result.taskId` (`tasks/get`) or
    /// `result._meta[RELATED_TASK_KEY].taskId` (`tasks/result`).
    pub(crate) task_id: Option<String>,
    /// The `_meta[SUBSCRIPTION_ID_KEY]` of a notification, as its JSON text.
    pub(crate) subscription: Option<String>,
}

/// A frame's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Not UTF-8, not JSON, or JSON that is not a JSON-RPC object or array.
    Unparseable,
    /// One message.
    Single(Message),
    /// A JSON array; each element classified on its own.
    Batch(Vec<Message>),
}

/// Classifies frame text (line ending already removed).
pub(crate) fn classify(text: &str) -> Shape {
    if !is_valid(text) {
        return Shape::Unparseable;
    }
    let span = root(text);
    match text.as_bytes()[span.start] {
        b'{' => match message(text, span) {
            m if m.kind == FrameKind::Unparseable => Shape::Unparseable,
            m => Shape::Single(m),
        },
        b'[' => Shape::Batch(
            elements(text, span)
                .into_iter()
                .map(|el| message(text, el))
                .collect(),
        ),
        _ => Shape::Unparseable,
    }
}

fn string_in(text: &str, members: &[Member], name: &str) -> Option<String> {
    find(text, members, name).and_then(|r| as_str(text, r).map(|s| s.into_owned()))
}

fn message(text: &str, span: Range<usize>) -> Message {
    // Each lookup below scans only what it must: a frame may be tens of megabytes.
    let top = object_members(text, span.clone());
    let get = |name| find(text, &top, name);
    // JSON-RPC ids are strings, numbers or null; a message with any other id is not one
    // this reads (an object id could hold anything, `_meta` included).
    let id_text = get("id").map(|r| &text[r]);
    let bad_id = id_text
        .is_some_and(|t| !matches!(t.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9' | b'n')));
    let id = id_text.filter(|_| !bad_id).map(str::to_string);
    let method = get("method").and_then(|r| as_str(text, r).map(|s| s.into_owned()));
    let params = get("params");
    let result = get("result");
    let error = get("error");
    let kind = match (&method, &id, &result, &error) {
        _ if bad_id => FrameKind::Unparseable,
        (Some(_), Some(_), _, _) => FrameKind::Request,
        (Some(_), None, _, _) => FrameKind::Notification,
        (None, _, _, Some(_)) => FrameKind::Error,
        (None, Some(_), Some(_), None) => FrameKind::Response,
        _ => FrameKind::Unparseable,
    };
    let params_members = params.map(|p| object_members(text, p)).unwrap_or_default();
    let tool = (method.as_deref() == Some("tools/call"))
        .then(|| string_in(text, &params_members, "name"))
        .flatten();
    let request_protocol = if method.as_deref() == Some("initialize") {
        string_in(text, &params_members, "protocolVersion")
    } else {
        find(text, &params_members, "_meta")
            .and_then(|m| string_in(text, &object_members(text, m), PROTOCOL_VERSION_KEY))
    };
    let result_members = result.map(|r| object_members(text, r)).unwrap_or_default();
    let result_protocol = string_in(text, &result_members, "protocolVersion");
    let result_is_error = find(text, &result_members, "isError").and_then(|r| match &text[r] {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    });
    let error_code = error
        .and_then(|r| member(text, r, "code"))
        .and_then(|r| text[r].parse::<i64>().ok());
    let result_type = string_in(text, &result_members, "resultType");
    let request_state = match kind {
        FrameKind::Request => string_in(text, &params_members, "requestState"),
        _ => string_in(text, &result_members, "requestState"),
    };
    let has_input_responses =
        kind == FrameKind::Request && find(text, &params_members, "inputResponses").is_some();
    let task_id = match kind {
        FrameKind::Request => string_in(text, &params_members, "taskId"),
        FrameKind::Response => find(text, &result_members, "task")
            .and_then(|t| member(text, t, "taskId"))
            .or_else(|| find(text, &result_members, "taskId"))
            .or_else(|| {
                let meta = find(text, &result_members, "_meta")?;
                member(text, member(text, meta, RELATED_TASK_KEY)?, "taskId")
            })
            .and_then(|r| as_str(text, r).map(|s| s.into_owned())),
        _ => None,
    };
    let subscription = (kind == FrameKind::Notification)
        .then(|| find(text, &params_members, "_meta"))
        .flatten()
        .and_then(|m| member(text, m, SUBSCRIPTION_ID_KEY))
        .map(|r| text[r].to_string());
    let revision = Revision {
        result_type,
        request_state,
        has_input_responses,
        task_id,
        subscription,
    };
    Message {
        kind,
        id,
        method,
        tool,
        request_protocol,
        result_protocol,
        result_is_error,
        error_code,
        revision: (revision != Revision::default()).then(|| Box::new(revision)),
        span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(text: &str) -> Message {
        match classify(text) {
            Shape::Single(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_id_that_is_not_a_string_number_or_null_makes_the_message_unparseable() {
        for id in [r#"{"_meta":{"x":0}}"#, "[1]", "true", "false"] {
            let shape = classify(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            assert!(matches!(shape, Shape::Unparseable), "{id}: {shape:?}");
            let Shape::Batch(items) = classify(&format!(r#"[{{"id":{id},"method":"ping"}}]"#))
            else {
                panic!("{id}: a batch")
            };
            assert_eq!(
                (items[0].kind, items[0].id.as_deref()),
                (FrameKind::Unparseable, None),
                "{id}"
            );
        }
        for id in [r#""a""#, "-1", "0", "null"] {
            let m = single(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
            assert_eq!(
                (m.kind, m.id.as_deref()),
                (FrameKind::Request, Some(id)),
                "{id}"
            );
        }
    }

    #[test]
    fn kinds_ids_and_fields() {
        let m = single(
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(m.kind, FrameKind::Request);
        assert_eq!(m.id.as_deref(), Some("18446744073709551616"));
        assert_eq!(m.tool.as_deref(), Some("echo"));
        assert_eq!(m.request_protocol.as_deref(), Some("2026-07-28"));

        let m = single(r#"{"jsonrpc":"2.0","id":"a\"b","result":{"isError":true}}"#);
        assert_eq!(
            (m.kind, m.id.as_deref(), m.result_is_error),
            (FrameKind::Response, Some(r#""a\"b""#), Some(true))
        );

        let m = single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert_eq!((m.kind, m.error_code), (FrameKind::Error, Some(-32700)));

        let m = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(m.kind, FrameKind::Notification);

        let m = single(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert_eq!(m.request_protocol.as_deref(), Some("2025-06-18"));
    }

    #[test]
    fn unparseable_lines() {
        for text in [
            "",
            "hello",
            "{\"a\":",
            "42",
            "\"s\"",
            "{\"jsonrpc\":\"2.0\"}",
        ] {
            assert_eq!(classify(text), Shape::Unparseable, "{text}");
        }
    }

    /// A request whose `params` nests `arrays` arrays: `arrays + 1` levels deep.
    fn nested(arrays: usize) -> String {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}{}}}",
            "[".repeat(arrays),
            "]".repeat(arrays)
        )
    }

    #[test]
    fn d2_frames_nested_past_the_depth_limit_are_unparseable_at_any_depth() {
        use crate::framelog::json_scan::MAX_DEPTH;
        // 127 levels (the object and 126 arrays) parse; 128 do not, as serde_json decides.
        assert!(
            matches!(classify(&nested(MAX_DEPTH - 2)), Shape::Single(m) if m.kind == FrameKind::Request)
        );
        for arrays in [MAX_DEPTH - 1, 10_000, 1_000_000] {
            assert_eq!(classify(&nested(arrays)), Shape::Unparseable, "{arrays}");
        }
        let deep_meta = format!(
            "{{\"_meta\":{{}},\"a\":{}{}}}",
            "[".repeat(1_000_000),
            "]".repeat(1_000_000)
        );
        let stripped =
            crate::framelog::meta_strip::strip_meta(&deep_meta, root(&deep_meta)).unwrap();
        assert!(
            stripped.starts_with("{\"a\":[[["),
            "no stack overflow, the member cut"
        );
    }

    #[test]
    fn batches_classify_each_item() {
        let Shape::Batch(items) = classify(r#"[{"id":1,"method":"a"},{"method":"b"},7]"#) else {
            panic!()
        };
        let kinds: Vec<_> = items.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                FrameKind::Request,
                FrameKind::Notification,
                FrameKind::Unparseable
            ]
        );
    }
}
