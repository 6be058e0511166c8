//! Checks a frame log produced by a real session (read and schema-validated by
//! [`crate::support::log`]) against the trailer's own counts and what the client itself wrote
//! and read.

use std::collections::HashMap;

use ctxopt::framelog::{Direction, Frame, FrameKind};
use ctxopt::tokenizer::Tokenizer;
use serde_json::Value;

use crate::support::log::Log;

impl Log {
    /// The trailer's counts agree with the frame lines, and nothing was lost.
    pub(crate) fn assert_trailer_consistent(&self) {
        let t = &self.trailer;
        assert_eq!(t.frames_logged, self.frames.len() as u64, "frames_logged");
        assert_eq!(t.frames_unlogged, 0, "frames_unlogged: {:?}", t.errors);
        assert!(t.errors.is_empty(), "logging errors: {:?}", t.errors);
        for (dir, relayed, bytes) in [
            (Direction::C2s, t.frames_relayed.c2s, t.bytes.c2s),
            (Direction::S2c, t.frames_relayed.s2c, t.bytes.s2c),
        ] {
            assert_eq!(relayed, self.dir(dir).len() as u64, "{dir:?} frames");
            assert_eq!(
                bytes,
                self.dir(dir).into_iter().map(|f| f.bytes).sum::<u64>(),
                "{dir:?} bytes"
            );
        }
        let seqs: Vec<u64> = self.frames.iter().map(|f| f.seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "seq is not monotonic: {seqs:?}"
        );
    }

    /// Every message the client wrote is a `c2s` frame and every message it read an `s2c`
    /// frame, in the same order, with the same ids and methods.
    pub(crate) fn assert_matches_client_view(&self, sent: &[Value], received: &[Value]) {
        for (dir, view) in [(Direction::C2s, sent), (Direction::S2c, received)] {
            let logged: Vec<Value> = self
                .dir(dir)
                .into_iter()
                .map(|f| {
                    let id = f.id.as_deref().map(|text| {
                        serde_json::from_str::<Value>(text)
                            .unwrap_or_else(|e| panic!("id {text} is not JSON text: {e}"))
                    });
                    let method = match f.kind {
                        FrameKind::Request | FrameKind::Notification => f.method.clone(),
                        _ => None,
                    };
                    serde_json::json!({ "id": id, "method": method })
                })
                .collect();
            assert_eq!(
                logged, view,
                "the {dir:?} frames in the log differ from what the client saw"
            );
        }
    }

    /// Every request has exactly one response the other way, and each response names the
    /// method and (for `tools/call`) the tool of its request.
    pub(crate) fn assert_paired(&self) {
        for (req_dir, resp_dir) in [
            (Direction::C2s, Direction::S2c),
            (Direction::S2c, Direction::C2s),
        ] {
            let mut open: HashMap<String, &Frame> = HashMap::new();
            for request in self
                .dir(req_dir)
                .into_iter()
                .filter(|f| f.kind == FrameKind::Request)
            {
                let id = request.id.clone().expect("a request has an id");
                assert!(
                    open.insert(id.clone(), request).is_none(),
                    "duplicate {req_dir:?} request id {id}"
                );
            }
            for response in self
                .dir(resp_dir)
                .into_iter()
                .filter(|f| matches!(f.kind, FrameKind::Response | FrameKind::Error))
            {
                let id = response.id.clone().expect("a response has an id");
                let request = open
                    .remove(&id)
                    .unwrap_or_else(|| panic!("{resp_dir:?} response {id} answers no request"));
                assert_eq!(response.method, request.method, "method of response {id}");
                assert_eq!(response.tool, request.tool, "tool of response {id}");
                assert!(
                    response.latency_us.is_some(),
                    "response {id} has no latency"
                );
                assert!(
                    response.seq > request.seq,
                    "response {id} logged before its request"
                );
            }
            assert!(
                open.is_empty(),
                "{req_dir:?} requests without a response: {:?}",
                open.keys().collect::<Vec<_>>()
            );
        }
    }

    /// Every request and response carries the revision the client says it uses, from the
    /// `initialize` response on (before it, a `server/discover` probe and the `initialize`
    /// request only propose revisions); in a session without `initialize`, every one does.
    pub(crate) fn assert_protocol(&self, expected: &str) {
        let negotiated = self
            .frames
            .iter()
            .find(|f| f.kind == FrameKind::Response && f.method.as_deref() == Some("initialize"))
            .map_or(0, |f| f.seq);
        for frame in self.frames.iter().filter(|f| f.seq >= negotiated) {
            let checked = match frame.kind {
                FrameKind::Request | FrameKind::Response | FrameKind::Error => true,
                _ => frame.protocol.is_some(),
            };
            if checked {
                assert_eq!(
                    frame.protocol.as_deref(),
                    Some(expected),
                    "protocol of frame {} ({:?} {:?})",
                    frame.seq,
                    frame.kind,
                    frame.method
                );
            }
        }
    }

    /// `tokens` is the o200k_base count of the frame text; `meta_tokens` is zero on frames
    /// without a `_meta` member and never above `tokens`.
    pub(crate) fn assert_token_counts(&self) {
        for frame in &self.frames {
            let raw = frame.raw.as_deref().expect("real peers write UTF-8 frames");
            assert_eq!(
                frame.tokens,
                Tokenizer::O200kBase.count(raw) as u64,
                "tokens of frame {}",
                frame.seq
            );
            assert!(frame.meta_tokens <= frame.tokens, "frame {}", frame.seq);
            if !raw.contains("\"_meta\"") {
                assert_eq!(frame.meta_tokens, 0, "meta_tokens of frame {}", frame.seq);
            }
        }
    }
}
