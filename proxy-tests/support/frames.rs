//! Frames the fixture server writes and the tests expect, built by one function on both
//! sides so a byte-exact comparison needs no copy of a 64 MB frame in the repository.

/// A `tools/call`-style response of exactly `size` bytes, `\n` included, answering `id`.
/// The text content is a deterministic pattern of printable ASCII.
pub(crate) fn big_response(id: u64, size: usize) -> Vec<u8> {
    let head =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
    let tail = "\"}]}}\n";
    assert!(size >= head.len() + tail.len(), "frame too small");
    let fill = size - head.len() - tail.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(head.as_bytes());
    out.extend((0..fill).map(|i| b"abcdefghij klmnopqrstuvwxyz0123456789"[i % 37]));
    out.extend_from_slice(tail.as_bytes());
    out
}
