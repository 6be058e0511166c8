//! Session files deserialized into each format's own serde types, a failure naming the
//! place it happened (`messages[3].tool_calls[0].id: invalid type …`).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::ImportError;

/// `value` as a `T`; a mismatch is an [`ImportError::Format`] at the path where it is.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ImportError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        ImportError::Format {
            path,
            message: err.into_inner().to_string(),
        }
    })
}

/// `value` as a `T`, borrowed; a mismatch is an [`ImportError::Format`] at the path where
/// it is.
pub(crate) fn from_ref<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, ImportError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        ImportError::Format {
            path,
            message: err.into_inner().to_string(),
        }
    })
}

/// `T` read from `value`, when it has `T`'s shape.
pub(crate) fn shaped<T: DeserializeOwned>(value: &Value) -> Option<T> {
    T::deserialize(value).ok()
}

/// A string field: `None` when absent or not a string.
pub(crate) fn text_or_none<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

/// A boolean field: false unless it is `true`.
pub(crate) fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(deserializer)?.as_bool().unwrap_or(false))
}

/// A count: `None` unless it is a non-negative integer.
pub(crate) fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(deserializer)?.as_u64())
}

/// A field of a shape of its own: `None` when it is absent or not of that shape (serde
/// reads a struct from an object, or from an array of its fields in order).
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(shaped(&Value::deserialize(deserializer)?))
}

/// A list field: empty when absent or not a list; an item not of the type's shape reads
/// as its default.
pub(crate) fn list_or_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Array(items) => items
            .iter()
            .map(|item| shaped(item).unwrap_or_default())
            .collect(),
        _ => Vec::new(),
    })
}

/// A field that is text when it is a string and empty otherwise (a message whose content
/// is not text has no text to keep).
pub(crate) fn text_or_empty<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        _ => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    struct Inner {
        id: String,
    }

    #[test]
    fn a_mismatch_names_its_place() {
        let fine = from_value::<Outer>(serde_json::json!({"items": [{"id": "a"}]})).unwrap();
        assert_eq!(fine.items[0].id, "a");
        let err = from_value::<Outer>(serde_json::json!({"items": [{"id": "a"}, {"id": 7}]}))
            .unwrap_err();
        match err {
            ImportError::Format { path, message } => {
                assert_eq!(path, "items[1].id");
                assert!(message.contains("invalid type"), "{message}");
            }
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    #[test]
    fn lenient_fields_read_what_has_their_shape_and_nothing_else() {
        #[derive(Debug, Default, Deserialize)]
        struct Part {
            #[serde(default, deserialize_with = "text_or_none")]
            name: Option<String>,
            #[serde(default, deserialize_with = "flag")]
            on: bool,
            #[serde(default, deserialize_with = "count")]
            n: Option<u64>,
        }
        #[derive(Debug, Deserialize)]
        struct Whole {
            #[serde(default, deserialize_with = "lenient")]
            one: Option<Part>,
            #[serde(default, deserialize_with = "list_or_empty")]
            many: Vec<Part>,
        }
        let good: Whole = from_value(serde_json::json!({
            "one": {"name": "a", "on": true, "n": 3},
            "many": [{"name": "b"}, 7]
        }))
        .unwrap();
        let one = good.one.unwrap();
        assert_eq!(
            (one.name.as_deref(), one.on, one.n),
            (Some("a"), true, Some(3))
        );
        assert_eq!(good.many.len(), 2);
        assert_eq!(good.many[0].name.as_deref(), Some("b"));
        assert_eq!(good.many[1].name, None);
        let odd: Whole = from_value(serde_json::json!({
            "one": {"name": 1, "on": "yes", "n": -2},
            "many": "no"
        }))
        .unwrap();
        let one = odd.one.unwrap();
        assert_eq!((one.name, one.on, one.n), (None, false, None));
        assert!(odd.many.is_empty());
        for wrong in [
            serde_json::json!("a"),
            serde_json::json!(1),
            serde_json::json!(null),
        ] {
            let whole: Whole = from_value(serde_json::json!({ "one": wrong })).unwrap();
            assert!(whole.one.is_none(), "{wrong}");
        }
    }

    #[test]
    fn text_that_is_not_a_string_is_empty() {
        #[derive(Deserialize)]
        struct Message {
            #[serde(default, deserialize_with = "text_or_empty")]
            content: String,
        }
        let text: Message = from_value(serde_json::json!({"content": "hi"})).unwrap();
        assert_eq!(text.content, "hi");
        let list: Message = from_value(serde_json::json!({"content": [{"type": "x"}]})).unwrap();
        assert_eq!(list.content, "");
        let absent: Message = from_value(serde_json::json!({})).unwrap();
        assert_eq!(absent.content, "");
    }
}
