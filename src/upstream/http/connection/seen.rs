//! The ids of the events a session's streams handed on lately: the specification makes an
//! event id unique within a session, across its streams, so an event with an id seen already
//! is a replay (a server that resumes from further back than asked, or replays another
//! stream's events) and is not handed on again.

use std::collections::{HashSet, VecDeque};

/// How many of the latest event ids are remembered to hand no event on twice.
pub(super) const SEEN_LIMIT: usize = 4096;

/// The ids of the latest events handed on.
#[derive(Debug, Default)]
pub(super) struct Seen {
    order: VecDeque<String>,
    ids: HashSet<String>,
}

impl Seen {
    /// Whether an event with `id` is new (an event without an id always is); remembers it.
    pub(super) fn first_time(&mut self, id: Option<&str>) -> bool {
        let Some(id) = id else { return true };
        if !self.ids.insert(id.to_string()) {
            return false;
        }
        self.order.push_back(id.to_string());
        if self.order.len() > SEEN_LIMIT {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_handed_on_once_and_events_without_ids_always() {
        let mut seen = Seen::default();
        assert!(seen.first_time(Some("e-1")));
        assert!(seen.first_time(None));
        assert!(seen.first_time(None));
        assert!(!seen.first_time(Some("e-1")));
        for n in 0..SEEN_LIMIT {
            assert!(seen.first_time(Some(&n.to_string())));
        }
        // Forgotten once SEEN_LIMIT newer ids came.
        assert!(seen.first_time(Some("e-1")));
        assert_eq!(seen.ids.len(), SEEN_LIMIT);
    }
}
