//! Every run pinned: what a session ran with (client and server by name and version, each
//! protocol revision, each tool catalog's digest, ctxopt's version) and what of it changed
//! mid-run, taken from its frames in log order.
//!
//! The proxy writes them into the log trailer's `pins` ([`PinTracker`] is one of its
//! [`FrameSink`]s, on the tap thread); `ctxopt report` reads them there, and derives them
//! the same way from the frames of a log written before format version 5.

use std::collections::HashSet;

use serde_json::Value;

use super::catalog::CatalogSequence;
use crate::framelog::json_scan::{member, root};
use crate::framelog::{Direction, Frame, FrameKind, Identity, Pins};
use crate::protocol;
use crate::relay::sink::LogPlace;
use crate::relay::FrameSink;

/// One session's pins, as its frames come (see the module docs).
#[derive(Debug, Default)]
pub struct PinTracker {
    client: Option<Identity>,
    server: Option<Identity>,
    protocols: Vec<String>,
    /// The revisions of the server's successful answers: more than one is a change.
    answer_protocols: Vec<String>,
    catalogs: CatalogSequence,
    /// Ids of the client's `tools/list` requests with a cursor: their answers continue
    /// the catalog before.
    cursor_requests: HashSet<String>,
    changed: Vec<String>,
}

impl PinTracker {
    /// Takes the next frame of the session.
    pub fn frame(&mut self, frame: &Frame) {
        if let Some(p) = &frame.protocol {
            if !self.protocols.contains(p) {
                self.protocols.push(p.clone());
            }
        }
        match (frame.dir, frame.kind) {
            (Direction::C2s, FrameKind::Request) => self.request(frame),
            (Direction::S2c, FrameKind::Response) => self.answer(frame),
            _ => {}
        }
    }

    fn request(&mut self, frame: &Frame) {
        let Some(raw) = frame.raw.as_deref() else {
            return;
        };
        if frame.method.as_deref() == Some("tools/list") && raw.contains("\"cursor\"") {
            let has_cursor = frame
                .json()
                .is_some_and(|r| r.pointer("/params/cursor").is_some());
            if let (true, Some(id)) = (has_cursor, &frame.id) {
                self.cursor_requests.insert(id.clone());
            }
        }
        if let Some(client) = identity(client_info(raw).as_ref()) {
            match &self.client {
                Some(known) if *known != client => {
                    self.mark("client");
                    self.client = Some(client);
                }
                Some(_) => {}
                None => self.client = Some(client),
            }
        }
    }

    fn answer(&mut self, frame: &Frame) {
        if let Some(p) = frame
            .protocol
            .as_ref()
            .filter(|p| !self.answer_protocols.contains(p))
        {
            self.answer_protocols.push(p.clone());
            if self.answer_protocols.len() > 1 {
                self.mark("protocol");
            }
        }
        match frame.method.as_deref() {
            Some("initialize" | "server/discover") => {
                let Some(answer) = frame.json() else {
                    return;
                };
                let result = answer.get("result");
                if let Some(server) = identity(result.and_then(protocol::server_info)) {
                    if self.server.as_ref().is_some_and(|known| *known != server) {
                        self.mark("server");
                    }
                    self.server = Some(server);
                }
                if let Some(p) = result
                    .and_then(|r| r.get("protocolVersion"))
                    .and_then(Value::as_str)
                    .filter(|p| !self.protocols.iter().any(|q| q == p))
                {
                    self.protocols.push(p.to_owned());
                }
            }
            Some("tools/list") => {
                let continues = frame
                    .id
                    .as_ref()
                    .is_some_and(|id| self.cursor_requests.remove(id));
                let tools = frame
                    .server_json()
                    .and_then(|v| {
                        v.pointer("/result/tools")
                            .and_then(Value::as_array)
                            .cloned()
                    })
                    .unwrap_or_default();
                self.catalogs.push_page(tools, continues);
            }
            _ => {}
        }
    }

    fn mark(&mut self, what: &str) {
        if !self.changed.iter().any(|w| w == what) {
            self.changed.push(what.to_owned());
        }
    }

    /// The catalogs the server listed, pages assembled.
    pub fn catalogs(&self) -> &CatalogSequence {
        &self.catalogs
    }

    /// The pins so far, with `ctxopt_version` as the version that wrote the log.
    pub fn pins(&self, ctxopt_version: &str) -> Pins {
        let catalog_digests: Vec<String> = self
            .catalogs
            .distinct()
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        let mut changed = self.changed.clone();
        if catalog_digests.len() > 1 {
            changed.push("catalog".to_owned());
        }
        changed.sort();
        Pins {
            client: self.client.clone(),
            server: self.server.clone(),
            protocols: self.protocols.clone(),
            catalog_digests,
            ctxopt_version: ctxopt_version.to_owned(),
            changed,
        }
    }
}

/// The client's identity in a request's text, in either era (`params.clientInfo`, or the
/// stateless `_meta` key): only that member is parsed, never the whole request.
fn client_info(raw: &str) -> Option<Value> {
    if !raw.contains("clientInfo") {
        return None;
    }
    let params = member(raw, root(raw), "params")?;
    let span = member(raw, params.clone(), "clientInfo").or_else(|| {
        let meta = member(raw, params, "_meta")?;
        member(raw, meta, protocol::CLIENT_INFO_KEY)
    })?;
    serde_json::from_str(&raw[span]).ok()
}

/// A peer's `name` and `version`.
pub(crate) fn identity(info: Option<&Value>) -> Option<Identity> {
    let info = info?;
    Some(Identity {
        name: info.get("name")?.as_str()?.to_owned(),
        version: info
            .get("version")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

impl FrameSink for PinTracker {
    fn frame(&mut self, frame: &Frame, _logged: Option<LogPlace<'_>>) {
        PinTracker::frame(self, frame);
    }

    fn trailer_errors(&self) -> Vec<String> {
        Vec::new()
    }

    fn pins(&self) -> Option<Pins> {
        Some(PinTracker::pins(self, env!("CARGO_PKG_VERSION")))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use super::*;
    use crate::framelog::accounting::{Accountant, Tapped};
    use crate::tokenizer::Tokenizer;

    /// The pins of a session of `frames` (direction, text), accounted as the proxy does.
    fn pins_of(frames: &[(Direction, &str)]) -> Pins {
        let mut accountant = Accountant::new(Tokenizer::CharsDiv4);
        let mut tracker = PinTracker::default();
        for (dir, text) in frames {
            let frame = accountant.frame(Tapped {
                dir: *dir,
                bytes: format!("{text}\n").into_bytes(),
                at: SystemTime::now(),
                instant: Instant::now(),
            });
            tracker.frame(&frame);
        }
        tracker.pins("9.9.9")
    }

    fn modern(id: u32, method: &str, version: &str, client: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientInfo":{{"name":"c","version":"{client}"}}}}}}}}"#
        )
    }

    fn tools(id: u32, names: &[&str]) -> String {
        let tools: Vec<Value> = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "inputSchema": {"type": "object"}}))
            .collect();
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}).to_string()
    }

    #[test]
    fn a_steady_session_is_pinned_and_marked_unchanged() {
        let pins = pins_of(&[
            (
                Direction::C2s,
                &modern(1, "server/discover", "2026-07-28", "1"),
            ),
            (
                Direction::S2c,
                r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"2"}}}}"#,
            ),
            (Direction::C2s, &modern(2, "tools/list", "2026-07-28", "1")),
            (Direction::S2c, &tools(2, &["a"])),
        ]);
        assert_eq!(
            pins.client,
            Some(Identity {
                name: "c".into(),
                version: Some("1".into())
            })
        );
        assert_eq!(
            pins.server,
            Some(Identity {
                name: "s".into(),
                version: Some("2".into())
            })
        );
        assert_eq!(pins.protocols, ["2026-07-28"]);
        assert_eq!(
            pins.catalog_digests,
            [super::super::catalog::digest(&[serde_json::json!(
                {"name": "a", "inputSchema": {"type": "object"}}
            )])]
        );
        assert_eq!(pins.ctxopt_version, "9.9.9");
        assert!(pins.changed.is_empty(), "{:?}", pins.changed);
    }

    #[test]
    fn a_mid_run_change_of_protocol_client_and_catalog_is_marked() {
        let pins = pins_of(&[
            (Direction::C2s, &modern(1, "tools/list", "2025-11-25", "1")),
            (Direction::S2c, &tools(1, &["a"])),
            (Direction::C2s, &modern(2, "tools/list", "2026-07-28", "2")),
            (Direction::S2c, &tools(2, &["a", "b"])),
        ]);
        assert_eq!(pins.protocols, ["2025-11-25", "2026-07-28"]);
        assert_eq!(pins.changed, ["catalog", "client", "protocol"]);
        assert_eq!(pins.catalog_digests.len(), 2);
        assert_eq!(pins.client.unwrap().version.as_deref(), Some("2"));
    }

    #[test]
    fn a_catalog_in_pages_is_one_catalog() {
        let pins = pins_of(&[
            (Direction::C2s, &modern(1, "tools/list", "2026-07-28", "1")),
            (Direction::S2c, &tools(1, &["a"])),
            (
                Direction::C2s,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            ),
            (Direction::S2c, &tools(2, &["b"])),
        ]);
        assert_eq!(pins.catalog_digests.len(), 1);
        assert!(pins.changed.is_empty(), "{:?}", pins.changed);
    }
}
