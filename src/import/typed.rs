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
