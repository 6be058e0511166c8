//! Pairing responses with requests by id, per direction, and tracking the protocol revision.
//!
//! A client request (`c2s`) is answered by an `s2c` response; a server request (`s2c`) by a
//! `c2s` response. Both sides number their ids independently (often both from 0), so the
//! pending requests are kept per requesting direction. Duplicate ids pair first-in,
//! first-out. [`Outstanding`] is that rule, once: the live accounting ([`Pairing`]) and the
//! log reader's pairing iterator ([`super::exchanges`]) both use it.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::record::Direction;

/// Requests waiting for their responses: what is remembered of each (`T`), per requesting
/// direction and id text, first-in first-out per id.
#[derive(Debug)]
pub(crate) struct Outstanding<T> {
    pending: HashMap<(Direction, String), VecDeque<T>>,
}

impl<T> Default for Outstanding<T> {
    fn default() -> Self {
        Outstanding {
            pending: HashMap::new(),
        }
    }
}

impl<T> Outstanding<T> {
    /// Remembers a request relayed in `dir` with id text `id`.
    pub(crate) fn request(&mut self, dir: Direction, id: &str, request: T) {
        self.pending
            .entry((dir, id.to_string()))
            .or_default()
            .push_back(request);
    }

    /// The request that a response relayed in `dir` with id text `id` answers, taken out
    /// (the oldest, when several share the id).
    pub(crate) fn answer(&mut self, dir: Direction, id: &str) -> Option<T> {
        let key = (answering(dir), id.to_string());
        let queue = self.pending.get_mut(&key)?;
        let found = queue.pop_front();
        if queue.is_empty() {
            self.pending.remove(&key);
        }
        found
    }

    /// Every request still waiting, with its direction, taken out (in no particular order).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (Direction, T)> + '_ {
        self.pending
            .drain()
            .flat_map(|((dir, _), queue)| queue.into_iter().map(move |r| (dir, r)))
    }
}

/// A request waiting for its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The request's method.
    pub(crate) method: String,
    /// The tool name of a `tools/call`.
    pub(crate) tool: Option<String>,
    /// When the request was relayed.
    pub(crate) at: Instant,
    /// The protocol revision the request was sent under.
    pub(crate) protocol: Option<String>,
    /// The task a `tasks/*` request names.
    pub(crate) task: Option<String>,
}

/// The direction a response to a request sent in `dir` travels in, and vice versa.
pub(crate) fn answering(dir: Direction) -> Direction {
    match dir {
        Direction::C2s => Direction::S2c,
        Direction::S2c => Direction::C2s,
        Direction::C2p => Direction::P2c,
        Direction::P2c => Direction::C2p,
    }
}

/// Pending requests per direction and the connection's protocol revision.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    pending: Outstanding<Pending>,
    negotiated: Option<String>,
    last_per_request: Option<String>,
}

impl Pairing {
    /// Records a request relayed in `dir` with id text `id`; returns the revision in effect
    /// for it: its own (per-request `_meta`, or the version an `initialize` asks for), else
    /// the negotiated one, else the last per-request revision seen.
    pub(crate) fn request(
        &mut self,
        dir: Direction,
        id: &str,
        mut pending: Pending,
    ) -> Option<String> {
        if pending.method != "initialize" && pending.protocol.is_some() {
            self.last_per_request = pending.protocol.clone();
        }
        pending.protocol = pending.protocol.or_else(|| self.current());
        let protocol = pending.protocol.clone();
        self.pending.request(dir, id, pending);
        protocol
    }

    /// The revision in effect for a notification carrying `own` (its `_meta` revision).
    pub(crate) fn notification(&mut self, own: Option<String>) -> Option<String> {
        if own.is_some() {
            self.last_per_request = own.clone();
        }
        own.or_else(|| self.current())
    }

    /// Pairs a response relayed in `dir` with id text `id`. `result_protocol` is the
    /// response's `result.protocolVersion`, which becomes the negotiated revision when it
    /// answers `initialize`.
    pub(crate) fn response(
        &mut self,
        dir: Direction,
        id: &str,
        result_protocol: Option<&str>,
    ) -> Option<Pending> {
        let mut found = self.pending.answer(dir, id)?;
        if found.method == "initialize" {
            if let Some(v) = result_protocol {
                self.negotiated = Some(v.to_string());
                found.protocol = self.negotiated.clone();
            }
        }
        Some(found)
    }

    /// The revision in effect outside any particular request.
    pub(crate) fn current(&self) -> Option<String> {
        self.negotiated
            .clone()
            .or_else(|| self.last_per_request.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, protocol: Option<&str>) -> Pending {
        Pending {
            method: method.into(),
            tool: None,
            at: Instant::now(),
            protocol: protocol.map(Into::into),
            task: None,
        }
    }

    #[test]
    fn overlapping_ids_pair_per_direction() {
        let mut p = Pairing::default();
        p.request(Direction::C2s, "0", req("tools/list", None));
        p.request(Direction::S2c, "0", req("roots/list", None));
        assert_eq!(
            p.response(Direction::C2s, "0", None).unwrap().method,
            "roots/list"
        );
        assert_eq!(
            p.response(Direction::S2c, "0", None).unwrap().method,
            "tools/list"
        );
        assert!(p.response(Direction::S2c, "0", None).is_none());
    }

    #[test]
    fn outstanding_drains_and_forgets_answered_ids() {
        let mut o = Outstanding::default();
        o.request(Direction::C2s, "1", "a");
        o.request(Direction::C2p, "1", "b");
        assert_eq!(o.answer(Direction::S2c, "1"), Some("a"));
        assert_eq!(o.answer(Direction::S2c, "1"), None);
        assert_eq!(o.answer(Direction::C2s, "1"), None);
        assert_eq!(o.drain().collect::<Vec<_>>(), [(Direction::C2p, "b")]);
    }

    #[test]
    fn duplicate_ids_pair_in_order() {
        let mut p = Pairing::default();
        p.request(Direction::C2s, "1", req("a", None));
        p.request(Direction::C2s, "1", req("b", None));
        assert_eq!(p.response(Direction::S2c, "1", None).unwrap().method, "a");
        assert_eq!(p.response(Direction::S2c, "1", None).unwrap().method, "b");
    }

    #[test]
    fn initialize_negotiates_and_stateless_requests_carry_their_own() {
        let mut p = Pairing::default();
        assert_eq!(
            p.request(
                Direction::C2s,
                "1",
                req("server/discover", Some("2026-07-28"))
            ),
            Some("2026-07-28".into())
        );
        p.response(Direction::S2c, "1", None);
        assert_eq!(
            p.request(Direction::C2s, "2", req("initialize", Some("2025-11-25"))),
            Some("2025-11-25".into())
        );
        let init = p.response(Direction::S2c, "2", Some("2025-06-18")).unwrap();
        assert_eq!(init.protocol.as_deref(), Some("2025-06-18"));
        assert_eq!(p.current().as_deref(), Some("2025-06-18"));
        assert_eq!(
            p.request(Direction::C2s, "3", req("tools/list", None)),
            Some("2025-06-18".into())
        );
    }
}
