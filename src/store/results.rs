//! The exact copies of the results the proxy compacted on the wire (`--compact-results`):
//! one row per result in the `results` table, keyed by workspace and handle, holding the
//! server's response frame exactly as it arrived. `get_result` serves them back; rows older
//! than the retention are deleted whenever a result is kept. Specified in `docs/store.md`
//! and `docs/compaction.md`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, OptionalExtension};

use super::{Scope, Store, StoreError};

/// How long a kept result stays by default.
pub(crate) const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The largest response frame kept, in bytes; a larger result is relayed whole.
pub(crate) const MAX_KEPT_BYTES: usize = 64 * 1024 * 1024;

/// One kept result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeptResult {
    /// The handle `get_result` takes.
    pub(crate) handle: String,
    /// The tool that produced it.
    pub(crate) tool: Option<String>,
    /// The server's response frame, exactly as it arrived, without its line ending.
    pub(crate) frame: String,
    /// When it was kept, Unix seconds.
    pub(crate) created: i64,
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    /// Keeps `frame` under `handle` for `scope`'s workspace (once: keeping the same handle
    /// again changes nothing), after deleting every kept result older than `retention`
    /// relative to `now` (Unix seconds; [`Store::purge_results`]).
    pub(crate) fn keep_result(
        &mut self,
        scope: &Scope,
        handle: &str,
        tool: Option<&str>,
        frame: &str,
        now: i64,
        retention: Duration,
    ) -> Result<(), StoreError> {
        self.purge_results(now, retention)?;
        self.conn
            .execute(
            "INSERT OR IGNORE INTO results (handle, workspace, server, session, tool, created, frame)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                handle,
                scope.workspace,
                scope.server,
                scope.session,
                tool,
                now,
                frame
            ],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Deletes every kept result older than `retention` relative to `now`, its bytes
    /// overwritten (`secure_delete`, then a checkpoint that empties the write-ahead log);
    /// returns how many were deleted.
    pub(crate) fn purge_results(&self, now: i64, retention: Duration) -> Result<usize, StoreError> {
        self.conn
            .pragma_update(None, "secure_delete", true)
            .map_err(|e| self.err(e))?;
        let purged = self
            .conn
            .execute(
                "DELETE FROM results WHERE created < ?1",
                params![now - retention.as_secs() as i64],
            )
            .map_err(|e| self.err(e))?;
        if purged > 0 {
            // The write-ahead log still holds the rows as they were written: move the
            // overwritten pages into the file and empty it. Best effort: a process reading
            // the store at that moment can keep the log from being emptied until the next
            // purge.
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
        Ok(purged)
    }

    /// The result kept under `handle` for `workspace`, unless it is older than `retention`
    /// relative to `now`; every result older than that is deleted first
    /// ([`Store::purge_results`]).
    pub(crate) fn kept_result(
        &self,
        workspace: &str,
        handle: &str,
        now: i64,
        retention: Duration,
    ) -> Result<Option<KeptResult>, StoreError> {
        self.purge_results(now, retention)?;
        self.conn
            .query_row(
                "SELECT handle, tool, frame, created FROM results
                 WHERE workspace = ?1 AND handle = ?2 AND created >= ?3",
                params![workspace, handle, now - retention.as_secs() as i64],
                |r| {
                    Ok(KeptResult {
                        handle: r.get(0)?,
                        tool: r.get(1)?,
                        frame: r.get(2)?,
                        created: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// How many results are kept (of any age), over all workspaces.
    #[cfg(test)]
    pub(crate) fn kept_results(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM results", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(workspace: &str) -> Scope {
        Scope {
            workspace: workspace.into(),
            server: "s".into(),
            session: "t".into(),
        }
    }

    #[test]
    fn a_kept_result_comes_back_exactly_in_its_workspace_only() {
        let mut store = Store::open_in_memory().unwrap();
        let frame = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"é\\u0000\"}]}}";
        let keep = |store: &mut Store, now| {
            store
                .keep_result(
                    &scope("/a"),
                    "r_1",
                    Some("t"),
                    frame,
                    now,
                    DEFAULT_RETENTION,
                )
                .unwrap()
        };
        keep(&mut store, 1000);
        let kept = store
            .kept_result("/a", "r_1", 1000, DEFAULT_RETENTION)
            .unwrap()
            .unwrap();
        assert_eq!(kept.frame, frame);
        assert_eq!(kept.tool.as_deref(), Some("t"));
        assert_eq!(
            store
                .kept_result("/b", "r_1", 1000, DEFAULT_RETENTION)
                .unwrap(),
            None
        );
        // Kept twice: one row.
        keep(&mut store, 1001);
        assert_eq!(store.kept_results().unwrap(), 1);
    }

    #[test]
    fn results_past_the_retention_are_not_served_and_are_deleted_on_the_next_keep() {
        let mut store = Store::open_in_memory().unwrap();
        let day = DEFAULT_RETENTION.as_secs() as i64;
        store
            .keep_result(&scope("/a"), "r_old", None, "{}", 0, DEFAULT_RETENTION)
            .unwrap();
        assert!(store
            .kept_result("/a", "r_old", day, DEFAULT_RETENTION)
            .unwrap()
            .is_some());
        assert_eq!(
            store
                .kept_result("/a", "r_old", day + 1, DEFAULT_RETENTION)
                .unwrap(),
            None
        );
        store
            .keep_result(
                &scope("/a"),
                "r_new",
                None,
                "{}",
                day + 1,
                DEFAULT_RETENTION,
            )
            .unwrap();
        assert_eq!(store.kept_results().unwrap(), 1, "the old row is gone");
    }

    #[test]
    fn an_expired_result_asked_for_is_deleted_and_its_bytes_leave_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let day = DEFAULT_RETENTION.as_secs() as i64;
        let secret = "kept-copy-marker-7f3a91c2";
        let frame = format!("{{\"result\":{{\"text\":\"{}\"}}}}", secret.repeat(500));
        let mut store = Store::open_path(&path).unwrap();
        store
            .keep_result(&scope("/a"), "r_s", None, &frame, 0, DEFAULT_RETENTION)
            .unwrap();
        let on_disk = || {
            ["", "-wal"]
                .iter()
                .filter_map(|ext| std::fs::read(format!("{}{ext}", path.display())).ok())
                .any(|bytes| bytes.windows(secret.len()).any(|w| w == secret.as_bytes()))
        };
        assert!(on_disk(), "canary: the kept copy is on disk at first");
        assert_eq!(
            store
                .kept_result("/a", "r_s", day + 1, DEFAULT_RETENTION)
                .unwrap(),
            None
        );
        assert_eq!(store.kept_results().unwrap(), 0);
        assert!(
            !on_disk(),
            "the expired copy's bytes are still in the store file"
        );
    }

    #[test]
    fn kept_results_survive_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let frame = "{\"result\":{}}";
        Store::open_path(&path)
            .unwrap()
            .keep_result(&scope("/a"), "r_x", None, frame, 5, DEFAULT_RETENTION)
            .unwrap();
        let reopened = Store::open_path(&path).unwrap();
        let kept = reopened
            .kept_result("/a", "r_x", 6, DEFAULT_RETENTION)
            .unwrap()
            .unwrap();
        assert_eq!(kept.frame, frame);
    }
}
