//! The injection ledger: what the client hooks added to sessions' context, one row per
//! answered event (`injections` table), counted when the hook printed it: its records,
//! characters and tokens. The row is written before the answer is printed, under a key of
//! the session, the event and where the transcript stood, so an event a client fires twice
//! is answered (and counted) once. `ctxopt status` and `ctxopt report` sum it per session and
//! event (`docs/hooks.md`, "The ledger").

use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError};

/// One answered hook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// What makes the event itself (session, event, transcript position, prompt), hashed.
    pub key: String,
    /// The workspace.
    pub workspace: String,
    /// The client (`claude-code`, `gemini-cli`).
    pub client: String,
    /// The client's session id.
    pub session: String,
    /// The event (`UserPromptSubmit`, `SessionStart`, …).
    pub event: String,
    /// When, Unix seconds.
    pub created: i64,
    /// Records cited.
    pub records: u64,
    /// Characters of the injected text (the marker included).
    pub characters: u64,
    /// Its tokens.
    pub tokens: u64,
}

/// The injections of one session and event, summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InjectionTotal {
    /// The client.
    pub client: String,
    /// The client's session id.
    pub session: String,
    /// The workspace.
    pub workspace: String,
    /// The event.
    pub event: String,
    /// Answers injected.
    pub answers: u64,
    /// Records cited, summed.
    pub records: u64,
    /// Characters injected, summed.
    pub characters: u64,
    /// Tokens injected, summed.
    pub tokens: u64,
    /// The first and the last answer, Unix seconds.
    pub first: i64,
    /// The last answer, Unix seconds.
    pub last: i64,
}

impl Store {
    /// Records `injection` unless an injection with its key is already there; returns
    /// whether it was recorded (false: this event was answered already, so do not answer).
    /// Its workspace and session are redacted as every text the store writes.
    pub fn claim_injection(&mut self, injection: &Injection) -> Result<bool, StoreError> {
        let workspace = self.redact(&injection.workspace).into_owned();
        let session = self.redact(&injection.session).into_owned();
        let n = self
            .conn
            .execute(
                "INSERT OR IGNORE INTO injections
                 (key, workspace, client, session, event, created, records, characters, tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    injection.key,
                    workspace,
                    injection.client,
                    session,
                    injection.event,
                    injection.created,
                    injection.records as i64,
                    injection.characters as i64,
                    injection.tokens as i64,
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(n == 1)
    }

    /// The injections since `since` (Unix seconds; none: all), summed per session and event,
    /// the newest session first.
    pub fn injection_totals(&self, since: Option<i64>) -> Result<Vec<InjectionTotal>, StoreError> {
        let mut statement = self
            .conn
            .prepare(
                "SELECT client, session, workspace, event, COUNT(*), SUM(records),
                        SUM(characters), SUM(tokens), MIN(created), MAX(created)
                 FROM injections WHERE created >= ?1
                 GROUP BY client, session, workspace, event
                 ORDER BY MAX(created) DESC, session, event",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map(params![since.unwrap_or(i64::MIN)], |r| {
                Ok(InjectionTotal {
                    client: r.get(0)?,
                    session: r.get(1)?,
                    workspace: r.get(2)?,
                    event: r.get(3)?,
                    answers: r.get::<_, i64>(4)? as u64,
                    records: r.get::<_, i64>(5)? as u64,
                    characters: r.get::<_, i64>(6)? as u64,
                    tokens: r.get::<_, i64>(7)? as u64,
                    first: r.get(8)?,
                    last: r.get(9)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injection(key: &str, session: &str, event: &str, tokens: u64) -> Injection {
        Injection {
            key: key.into(),
            workspace: "/w".into(),
            client: "claude-code".into(),
            session: session.into(),
            event: event.into(),
            created: 100,
            records: 3,
            characters: tokens * 4,
            tokens,
        }
    }

    #[test]
    fn an_event_is_claimed_once_and_the_totals_sum_per_session_and_event() {
        let mut store = Store::open_in_memory().unwrap();
        assert!(store
            .claim_injection(&injection("k1", "s1", "UserPromptSubmit", 100))
            .unwrap());
        // The same event fired twice: not claimed again, not counted again.
        assert!(!store
            .claim_injection(&injection("k1", "s1", "UserPromptSubmit", 100))
            .unwrap());
        assert!(store
            .claim_injection(&injection("k2", "s1", "UserPromptSubmit", 50))
            .unwrap());
        assert!(store
            .claim_injection(&injection("k3", "s1", "SessionStart", 2000))
            .unwrap());
        let totals = store.injection_totals(None).unwrap();
        let prompt = totals
            .iter()
            .find(|t| t.event == "UserPromptSubmit")
            .unwrap();
        assert_eq!(
            (
                prompt.answers,
                prompt.records,
                prompt.tokens,
                prompt.characters
            ),
            (2, 6, 150, 600)
        );
        let start = totals.iter().find(|t| t.event == "SessionStart").unwrap();
        assert_eq!((start.answers, start.tokens), (1, 2000));
        assert!(store.injection_totals(Some(101)).unwrap().is_empty());
    }

    #[test]
    fn a_secret_in_a_workspace_path_is_redacted_in_the_ledger() {
        let mut store = Store::open_in_memory().unwrap();
        let secret = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
        let mut i = injection("k1", "s1", "SessionStart", 10);
        i.workspace = format!("/home/me/{secret}/app");
        assert!(store.claim_injection(&i).unwrap());
        let totals = store.injection_totals(None).unwrap();
        assert!(!totals[0].workspace.contains(secret), "{totals:?}");
        assert!(totals[0].workspace.contains("[REDACTED:"), "{totals:?}");
    }
}
