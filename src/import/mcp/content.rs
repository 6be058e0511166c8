//! MCP content blocks as text: text blocks as they are, everything binary as a one-line
//! reference (`[image image/png 12345 bytes]`) so no base64 reaches the store. Each text is
//! capped as the store keeps it ([`cap`]).

use serde_json::Value;

use super::stored_text::cap;

/// The text of a `content` array, one block per line. Text blocks and embedded text
/// resources are inlined; images, audio, blobs and resource links become references.
pub(crate) fn render(blocks: &[Value]) -> String {
    blocks
        .iter()
        .map(render_block)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The texts of embedded text resources (`{type: "resource", resource: {uri, text}}`), in
/// order, as `(uri, text)`.
pub(crate) fn text_resources(blocks: &[Value]) -> Vec<(String, String)> {
    blocks
        .iter()
        .filter(|b| str_at(b, "type") == Some("resource"))
        .filter_map(|b| {
            let r = b.get("resource")?;
            let text = r.get("text")?.as_str()?;
            Some((
                str_at(r, "uri").unwrap_or_default().to_string(),
                cap(text).into_owned(),
            ))
        })
        .collect()
}

/// The joined text of the `text` blocks only.
pub(crate) fn text_blocks(blocks: &[Value]) -> Option<String> {
    let texts: Vec<_> = blocks
        .iter()
        .filter(|b| str_at(b, "type") == Some("text"))
        .filter_map(|b| str_at(b, "text"))
        .map(cap)
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn render_block(block: &Value) -> String {
    let kind = str_at(block, "type").unwrap_or("unknown");
    match kind {
        "text" => cap(str_at(block, "text").unwrap_or_default()).into_owned(),
        "image" | "audio" => reference(kind, str_at(block, "mimeType"), str_at(block, "data")),
        "resource_link" => {
            let mut out = format!(
                "[resource link {}",
                str_at(block, "uri").unwrap_or("(no uri)")
            );
            for field in ["name", "mimeType"] {
                if let Some(v) = str_at(block, field) {
                    out.push(' ');
                    out.push_str(v);
                }
            }
            out.push(']');
            out
        }
        "resource" => {
            let r = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_at(r, "uri").unwrap_or("(no uri)");
            match str_at(r, "text") {
                Some(text) => format!("[resource {uri}]\n{}", cap(text)),
                None => reference(
                    &format!("resource {uri}"),
                    str_at(r, "mimeType"),
                    str_at(r, "blob"),
                ),
            }
        }
        other => format!("[{other} content]"),
    }
}

fn reference(what: &str, mime: Option<&str>, base64: Option<&str>) -> String {
    format!(
        "[{what} {} {} bytes]",
        mime.unwrap_or("application/octet-stream"),
        base64.map_or(0, decoded_len)
    )
}

/// The byte length of base64 text once decoded, without decoding it.
pub(crate) fn decoded_len(base64: &str) -> usize {
    let chars = base64.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = base64
        .trim_end()
        .bytes()
        .rev()
        .take_while(|&b| b == b'=')
        .count();
    (chars / 4 * 3 + (chars % 4).saturating_sub(1)).saturating_sub(padding.min(2))
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use serde_json::json;

    use super::*;

    #[test]
    fn decoded_len_matches_decoding() {
        for n in 0..20 {
            let bytes = vec![7u8; n];
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert_eq!(decoded_len(&b64), n, "{b64}");
            let unpadded = b64.trim_end_matches('=');
            assert_eq!(decoded_len(unpadded), n, "{unpadded}");
        }
    }

    #[test]
    fn binary_blocks_become_references() {
        let png = base64::engine::general_purpose::STANDARD.encode([1u8; 12345]);
        let blocks = vec![
            json!({"type": "text", "text": "here it is"}),
            json!({"type": "image", "data": png, "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///x.bin", "mimeType": "application/octet-stream", "blob": "AAA="}}),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}),
            json!({"type": "resource_link", "uri": "file:///b", "name": "b"}),
        ];
        assert_eq!(
            render(&blocks),
            "here it is\n[image image/png 12345 bytes]\n[audio audio/wav 3 bytes]\n\
             [resource file:///x.bin application/octet-stream 2 bytes]\n\
             [resource file:///a.txt]\nhello\n[resource link file:///b b]"
        );
        assert_eq!(
            text_resources(&blocks),
            vec![("file:///a.txt".to_string(), "hello".to_string())]
        );
        assert_eq!(text_blocks(&blocks).as_deref(), Some("here it is"));
    }
}
