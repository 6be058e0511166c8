//! Trace and span ids, and the W3C `traceparent` a request may carry in `params._meta`.
//!
//! Ids are derived from the log, not drawn at random: a session's trace id and its session
//! span's id from its header (start time, proxy pid, server name), each operation's span id
//! from the session and the `seq` of the frame that opened it. Exporting the same log twice
//! gives the same ids, so a backend sees one trace, not two.

use sha2::{Digest, Sha256};

use crate::framelog::Header;

/// A 16-byte trace id.
pub(crate) type TraceId = [u8; 16];

/// An 8-byte span id.
pub(crate) type SpanId = [u8; 8];

/// The ids of one session (one header … trailer run of a frame log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionIds {
    key: [u8; 32],
}

impl SessionIds {
    /// The ids of the session `header` opens.
    pub(crate) fn of(header: &Header) -> SessionIds {
        let mut hash = Sha256::new();
        hash.update(header.started.as_bytes());
        hash.update(b"\n");
        hash.update(header.proxy_pid.to_le_bytes());
        hash.update(b"\n");
        hash.update(header.server_name.as_bytes());
        SessionIds {
            key: hash.finalize().into(),
        }
    }

    /// The session's trace id.
    pub(crate) fn trace_id(&self) -> TraceId {
        self.key[..16].try_into().expect("16 of 32 bytes")
    }

    /// The id of the span that covers the whole session.
    pub(crate) fn session_span_id(&self) -> SpanId {
        self.key[16..24].try_into().expect("8 of 32 bytes")
    }

    /// The id of the span opened by the frame with this `seq`.
    pub(crate) fn span_id(&self, seq: u64) -> SpanId {
        let mut hash = Sha256::new();
        hash.update(self.key);
        hash.update(seq.to_le_bytes());
        let digest: [u8; 32] = hash.finalize().into();
        digest[..8].try_into().expect("8 of 32 bytes")
    }
}

/// A remote parent: the W3C trace context a request carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteParent {
    /// The caller's trace.
    pub(crate) trace_id: TraceId,
    /// The caller's span, the parent of the request's span.
    pub(crate) span_id: SpanId,
    /// The trace flags (bit 0: sampled).
    pub(crate) flags: u8,
    /// The `tracestate` that came with it, as it came (empty when none).
    pub(crate) trace_state: String,
}

/// Parses a `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`; a later version may append
/// fields). `None` for anything invalid: a bad length or digit, version `ff`, or an all-zero
/// trace or span id.
pub(crate) fn parse_traceparent(text: &str, trace_state: Option<&str>) -> Option<RemoteParent> {
    let mut fields = text.trim().split('-');
    let version = fields.next()?;
    let (trace, span, flags) = (fields.next()?, fields.next()?, fields.next()?);
    let lower_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if version.len() != 2 || !lower_hex(version) || version == "ff" {
        return None;
    }
    if version == "00" && fields.next().is_some() {
        return None;
    }
    if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    if ![trace, span, flags].iter().all(|f| lower_hex(f)) {
        return None;
    }
    let trace_id: TraceId = hex::decode(trace).ok()?.try_into().ok()?;
    let span_id: SpanId = hex::decode(span).ok()?.try_into().ok()?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(RemoteParent {
        trace_id,
        span_id,
        flags: u8::from_str_radix(flags, 16).ok()?,
        trace_state: trace_state.unwrap_or_default().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_of_the_w3c_examples() {
        let parent = parse_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("rojo=00f067aa0ba902b7"),
        )
        .unwrap();
        assert_eq!(
            hex::encode(parent.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(hex::encode(parent.span_id), "00f067aa0ba902b7");
        assert_eq!(parent.flags, 1);
        assert_eq!(parent.trace_state, "rojo=00f067aa0ba902b7");
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(parse_traceparent(bad, None), None, "{bad}");
        }
        assert!(parse_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later",
            None
        )
        .is_some());
    }
}
