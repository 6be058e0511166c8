//! The persistent store: session records in SQLite, scoped by workspace, server and
//! session, each with its provenance (frame log + `seq`, server, tool, arguments).
//! Specified in `docs/store.md`.
//!
//! Several processes (one proxy per wrapped server) write one store at once: the database
//! is in WAL mode with a busy timeout, every write is one short immediate transaction, and
//! every record has a unique key inserted with `INSERT OR IGNORE`, so a record written twice
//! (two processes, or a replay of the same frame log) is kept once.
//!
//! Every text written is redacted first (see [`crate::redact`]), unless the store was
//! opened for raw copies ([`Store::redacting`] with `None`): the record, its arguments and
//! its path.

pub mod injections;
pub mod location;
pub(crate) mod results;
pub(crate) mod schema;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::records::Kind;
use crate::records::{Records, SessionRecord};
use crate::redact::Redactor;

pub use location::{StoreArgs, StoreLocation};

/// How long a write waits for another process's lock before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many of a workspace's newest records a build loads by default.
pub(crate) const DEFAULT_LOAD_LIMIT: usize = 5000;

/// Why the store could not do what was asked. Each variant names the store; a caller reports
/// the first failure once and carries on without the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process held the lock past the busy timeout.
    #[error("store {location} is locked: {detail}")]
    Locked {
        /// The store.
        location: String,
        /// SQLite's words.
        detail: String,
    },
    /// The file, its directory or the database is read-only.
    #[error("store {location} is read-only: {detail}")]
    ReadOnly {
        /// The store.
        location: String,
        /// What refused the write.
        detail: String,
    },
    /// The file is not a SQLite database, or the database is damaged.
    #[error("store {location} is corrupt: {detail}")]
    Corrupt {
        /// The store.
        location: String,
        /// SQLite's words.
        detail: String,
    },
    /// The store was written by a newer ctxopt.
    #[error("store {location} has schema version {found}; this ctxopt reads up to {supported}")]
    NewerSchema {
        /// The store.
        location: String,
        /// The version in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// No store path was given and there is no home directory to put the default in.
    #[error("no store path given and no home directory for the default")]
    NoDefaultLocation,
    /// Creating or opening the file failed.
    #[error("store {location}: {source}")]
    Io {
        /// The store.
        location: String,
        /// The failure.
        source: std::io::Error,
    },
    /// Any other SQLite failure.
    #[error("store {location}: {source}")]
    Sqlite {
        /// The store.
        location: String,
        /// The failure.
        source: rusqlite::Error,
    },
    /// A stored row does not hold a valid record.
    #[error("store {location}: row {row} holds a bad record: {detail}")]
    BadRow {
        /// The store.
        location: String,
        /// The row id.
        row: i64,
        /// What is wrong.
        detail: String,
    },
}

impl StoreError {
    fn from_sqlite(location: &str, err: rusqlite::Error) -> StoreError {
        let location = location.to_string();
        let code = err.sqlite_error_code();
        let detail = err.to_string();
        match code {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                StoreError::Locked { location, detail }
            }
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                StoreError::ReadOnly { location, detail }
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                StoreError::Corrupt { location, detail }
            }
            _ => StoreError::Sqlite {
                location,
                source: err,
            },
        }
    }

    fn from_io(location: &str, err: std::io::Error) -> StoreError {
        let location = location.to_string();
        match err.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                StoreError::ReadOnly {
                    location,
                    detail: err.to_string(),
                }
            }
            _ => StoreError::Io {
                location,
                source: err,
            },
        }
    }
}

/// Whose records these are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The workspace: the proxy's working directory, or `--workspace`.
    pub workspace: String,
    /// The wrapped server's short name.
    pub server: String,
    /// The session: one proxy or server run.
    pub session: String,
}

impl Scope {
    /// A scope for `server` in `workspace` (default: the current directory), made absolute
    /// and canonical so every process names a workspace the same way.
    pub fn resolve(
        workspace: Option<&Path>,
        server: &str,
        session: String,
    ) -> std::io::Result<Scope> {
        let dir = match workspace {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()?,
        };
        Ok(Scope {
            workspace: dir.canonicalize()?.display().to_string(),
            server: server.to_string(),
            session,
        })
    }
}

/// A fresh session id: the UTC start time and the process id (`20260301T100000Z-4242`).
pub fn new_session_id() -> String {
    format!(
        "{}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
        std::process::id()
    )
}

/// Where a record came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    /// The frame log the call was recorded in.
    pub log_path: Option<String>,
    /// The `seq` of the response frame in that log.
    pub seq: Option<u64>,
    /// The record's number among those made from one frame (0, 1, …).
    pub part: u32,
    /// The tool called.
    pub tool: Option<String>,
    /// The call's arguments.
    pub arguments: Option<Value>,
}

/// A record to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRecord {
    /// The record.
    pub record: SessionRecord,
    /// Where it came from.
    pub provenance: Provenance,
}

/// A record read back.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    /// The row id: increases with insertion order across all writers.
    pub row: i64,
    /// The server that produced it.
    pub server: String,
    /// The session it was written in.
    pub session: String,
    /// Where it came from.
    pub provenance: Provenance,
    /// The record.
    pub record: SessionRecord,
}

/// How an insert went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InsertOutcome {
    /// Records newly stored.
    pub inserted: usize,
    /// Records already present (same key), left alone.
    pub duplicates: usize,
}

/// Which records to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The workspace (required: records never leak across workspaces).
    pub workspace: String,
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only records with exactly this path.
    pub path: Option<String>,
    /// Only the newest this many (by row id); the result is still oldest first.
    pub newest: Option<usize>,
}

impl Filter {
    /// Every record of `workspace`.
    pub fn workspace(workspace: &str) -> Filter {
        Filter {
            workspace: workspace.to_string(),
            kind: None,
            path: None,
            newest: None,
        }
    }
}

/// An open store.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    location: String,
    redactor: Option<Arc<Redactor>>,
    /// The store file and its identity (device, inode) once open: a file deleted or
    /// replaced under a running process is noticed ([`Store::file_gone`]).
    file: Option<(std::path::PathBuf, (u64, u64))>,
}

/// The device and inode of `path`, when it exists.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The redactor for texts of the store at `location`: keyed by the key file beside a store
/// file, by a key for this run for an in-memory store (nothing of it outlives the process).
pub fn redactor_for(location: &StoreLocation) -> Redactor {
    match location {
        StoreLocation::File(path) => Redactor::for_store(Some(path)),
        StoreLocation::Memory => Redactor::for_this_run(),
    }
}

impl Store {
    /// Opens (creating if needed) the store at `location`, in WAL mode, migrated to the
    /// current schema.
    pub fn open(location: &StoreLocation) -> Result<Store, StoreError> {
        Store::open_waiting(location, BUSY_TIMEOUT)
    }

    /// [`Store::open`], without waiting for a lock: a store that must be created or
    /// migrated while another process holds it locked fails at once with
    /// [`StoreError::Locked`] (an existing store opens without taking a lock).
    pub fn open_without_waiting(location: &StoreLocation) -> Result<Store, StoreError> {
        Store::open_waiting(location, Duration::ZERO)
    }

    /// Opens the store, waiting for a lock at most `patience`.
    fn open_waiting(location: &StoreLocation, patience: Duration) -> Result<Store, StoreError> {
        let name = location.to_string();
        let conn = match location {
            StoreLocation::Memory => Connection::open_in_memory(),
            StoreLocation::File(path) => {
                location::prepare_file(path).map_err(|e| StoreError::from_io(&name, e))?;
                Connection::open(path)
            }
        }
        .map_err(|e| StoreError::from_sqlite(&name, e))?;
        let redactor = redactor_for(location);
        let mut store = Store {
            conn,
            location: name,
            redactor: Some(Arc::new(redactor)),
            file: None,
        };
        let on_disk = matches!(location, StoreLocation::File(_));
        // Switching a fresh file to WAL and migrating it take locks that SQLite's busy
        // handler does not always wait for when several processes open the store at once:
        // retry those steps until the busy timeout.
        let start = Instant::now();
        loop {
            let configured = store
                .configure(on_disk, patience)
                .and_then(|()| store.migrate())
                .and_then(|()| {
                    let busy = store.conn.busy_timeout(BUSY_TIMEOUT);
                    busy.map_err(|e| store.err(e))
                });
            match configured {
                Err(StoreError::Locked { .. }) if start.elapsed() < patience => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                result => {
                    if let StoreLocation::File(path) = location {
                        store.file = file_id(path).map(|id| (path.clone(), id));
                    }
                    return result.map(|()| store);
                }
            }
        }
    }

    /// Why the store file is no longer the one this store writes (deleted, or replaced by
    /// another file), when it is not: what is written after goes nowhere anyone will read.
    pub fn file_gone(&self) -> Option<String> {
        let (path, id) = self.file.as_ref()?;
        match file_id(path) {
            Some(now) if now == *id => None,
            Some(_) => Some(format!(
                "{}: the store file was replaced while this process ran; what it writes now is lost",
                path.display()
            )),
            None => Some(format!(
                "{}: the store file was deleted while this process ran; what it writes now is lost",
                path.display()
            )),
        }
    }

    /// Opens the store a `--store` argument names (`:memory:` or a path), or the default
    /// file when there is none.
    pub fn open_arg(arg: Option<&str>) -> Result<Store, StoreError> {
        Store::open(&Store::location_arg(arg)?)
    }

    /// The location a `--store` argument names, or the default file when there is none.
    pub fn location_arg(arg: Option<&str>) -> Result<StoreLocation, StoreError> {
        match arg {
            Some(arg) => Ok(StoreLocation::parse(arg)),
            None => StoreLocation::default_file().ok_or(StoreError::NoDefaultLocation),
        }
    }

    /// Opens the store file at `path`.
    pub fn open_path(path: &Path) -> Result<Store, StoreError> {
        Store::open(&StoreLocation::File(path.to_path_buf()))
    }

    /// Opens a private in-memory store.
    #[cfg(test)]
    pub(crate) fn open_in_memory() -> Result<Store, StoreError> {
        Store::open(&StoreLocation::Memory)
    }

    /// Redacts every text written with `redactor` instead of the store's own (its key file
    /// beside the store); `None` writes raw copies (`--no-redact`).
    pub fn redacting(mut self, redactor: Option<Arc<Redactor>>) -> Store {
        self.redactor = redactor;
        self
    }

    /// Runs `f` with SQLite's busy timeout at zero: a store another connection holds
    /// locked fails at once with [`StoreError::Locked`] instead of waiting for it.
    pub fn without_waiting<R>(
        &mut self,
        f: impl FnOnce(&mut Store) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.conn
            .busy_timeout(Duration::ZERO)
            .map_err(|e| self.err(e))?;
        let result = f(self);
        let restored = self
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.err(e));
        let value = result?;
        restored?;
        Ok(value)
    }

    /// The redactor of every text this store writes (`None`: raw copies, `--no-redact`);
    /// other files that hold the same texts (the hooks' state) use it too.
    pub fn redactor(&self) -> Option<&Redactor> {
        self.redactor.as_deref()
    }

    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.redactor {
            Some(r) => r.redact_str(text).0,
            None => Cow::Borrowed(text),
        }
    }

    /// The store's location as given (`:memory:` or the path).
    pub fn location(&self) -> &str {
        &self.location
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.location, e)
    }

    fn configure(&mut self, on_disk: bool, patience: Duration) -> Result<(), StoreError> {
        self.conn.busy_timeout(patience).map_err(|e| self.err(e))?;
        if on_disk {
            let mode: String = self
                .conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            if !mode.eq_ignore_ascii_case("wal") {
                let mode: String = self
                    .conn
                    .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                    .map_err(|e| self.err(e))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    return Err(StoreError::ReadOnly {
                        location: self.location.clone(),
                        detail: format!("cannot switch to WAL mode (journal mode stays {mode})"),
                    });
                }
            }
            self.conn
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let location = self.location.clone();
        let err = |e| StoreError::from_sqlite(&location, e);
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        if version == schema::current_version() {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        if version > schema::current_version() {
            return Err(StoreError::NewerSchema {
                location: location.clone(),
                found: version,
                supported: schema::current_version(),
            });
        }
        for migration in &schema::MIGRATIONS[version.max(0) as usize..] {
            tx.execute_batch(migration).map_err(err)?;
        }
        tx.pragma_update(None, "user_version", schema::current_version())
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The schema version of the open store.
    #[cfg(test)]
    pub(crate) fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Stores `records` under `scope` in one transaction. A record whose key is already
    /// present is left alone and counted as a duplicate.
    pub fn insert(
        &mut self,
        scope: &Scope,
        records: &[NewRecord],
    ) -> Result<InsertOutcome, StoreError> {
        let location = self.location.clone();
        let err = |e| StoreError::from_sqlite(&location, e);
        let texts: Vec<_> = records
            .iter()
            .map(|new| {
                let json = new.record.to_json();
                let json = self.redact(&json).into_owned();
                let path = new.record.path().map(|p| self.redact(p).into_owned());
                let arguments = new.provenance.arguments.as_ref().map(|a| {
                    let a = a.to_string();
                    self.redact(&a).into_owned()
                });
                (json, path, arguments)
            })
            .collect();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut outcome = InsertOutcome::default();
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO records (key, workspace, server, session, kind, path,
                        tool, timestamp, log_path, seq, part, arguments, record)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                )
                .map_err(err)?;
            for (new, (json, path, arguments)) in records.iter().zip(texts) {
                let p = &new.provenance;
                let changed = stmt
                    .execute(params![
                        record_key(scope, new, &json),
                        scope.workspace,
                        scope.server,
                        scope.session,
                        new.record.kind().name(),
                        path,
                        p.tool,
                        new.record.common().timestamp,
                        p.log_path,
                        p.seq.map(|s| s as i64),
                        p.part,
                        arguments,
                        json,
                    ])
                    .map_err(err)?;
                if changed == 0 {
                    outcome.duplicates += 1;
                } else {
                    outcome.inserted += 1;
                }
            }
        }
        tx.commit().map_err(err)?;
        Ok(outcome)
    }

    /// Reads the records `filter` selects, oldest first.
    ///
    /// Each combination of conditions has a statement of its own, so that SQLite reads the
    /// rows newest first from the index that holds them in id order ((workspace, id), (workspace,
    /// kind, id) or (workspace, path) and the row id) and stops at the limit: the cost of
    /// `newest` is the rows returned, not the workspace's size (a condition written as
    /// `?2 IS NULL OR kind = ?2` made SQLite sort every row of the workspace first).
    pub fn load(&self, filter: &Filter) -> Result<Vec<StoredRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&load_sql(filter))
            .map_err(|e| self.err(e))?;
        let limit = filter.newest.map_or(-1, |n| n as i64);
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![&filter.workspace, &limit];
        let kind = filter.kind.map(Kind::name);
        if let Some(kind) = &kind {
            values.push(kind);
        }
        if let Some(path) = &filter.path {
            values.push(path);
        }
        let rows = stmt
            .query_map(values.as_slice(), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                    r.get::<_, u32>(7)?,
                    r.get::<_, Option<String>>(8)?,
                    r.get::<_, String>(9)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (row, server, session, kind, tool, log_path, seq, part, arguments, json) =
                row.map_err(|e| self.err(e))?;
            let bad = |detail: String| StoreError::BadRow {
                location: self.location.clone(),
                row,
                detail,
            };
            let kind: Kind = kind.parse().map_err(bad)?;
            let record = SessionRecord::from_json(kind, &json).map_err(|e| bad(e.to_string()))?;
            let arguments = arguments
                .map(|a| serde_json::from_str(&a))
                .transpose()
                .map_err(|e| bad(e.to_string()))?;
            out.push(StoredRecord {
                row,
                server,
                session,
                provenance: Provenance {
                    log_path,
                    seq: seq.map(|s| s as u64),
                    part,
                    tool,
                    arguments,
                },
                record,
            });
        }
        out.reverse();
        Ok(out)
    }

    /// How many records the store holds for `workspace`.
    pub fn count(&self, workspace: &str) -> Result<u64, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM records WHERE workspace = ?1",
                [workspace],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// The row id of the record with this provenance, if stored (for tests and tools that
    /// resolve a frame to its records).
    pub fn find_by_frame(
        &self,
        workspace: &str,
        log_path: &str,
        seq: u64,
        part: u32,
    ) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM records
                 WHERE workspace = ?1 AND log_path = ?2 AND seq = ?3 AND part = ?4",
                params![workspace, log_path, seq as i64, part],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Runs SQLite's integrity check; `Ok(())` when it says `ok`.
    pub fn check_integrity(&self) -> Result<(), StoreError> {
        let verdict: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(StoreError::Corrupt {
                location: self.location.clone(),
                detail: verdict,
            })
        }
    }
}

/// The statement [`Store::load`] runs for `filter`: the workspace is `?1`, the limit `?2`, then
/// the kind and the path, each only when the filter has it.
fn load_sql(filter: &Filter) -> String {
    let condition = match (filter.kind, &filter.path) {
        (None, None) => "",
        (Some(_), None) => " AND kind = ?3",
        (None, Some(_)) => " AND path = ?3",
        (Some(_), Some(_)) => " AND kind = ?3 AND path = ?4",
    };
    format!(
        "SELECT id, server, session, kind, tool, log_path, seq, part, arguments, record
         FROM records WHERE workspace = ?1{condition} ORDER BY id DESC LIMIT ?2"
    )
}

/// Gives loaded records the ids the optimizer shows in its source tags: the caller's id
/// when it has one not used before, else `r<row>` (the store's row id). Returns the records
/// and, per record in the same order, its id.
pub(crate) fn to_records(
    task: Option<String>,
    stored: Vec<StoredRecord>,
) -> (Records, Vec<(String, StoredRecord)>) {
    let mut used = BTreeSet::new();
    let mut records = Records {
        task,
        ..Records::default()
    };
    let mut ids = Vec::with_capacity(stored.len());
    for s in stored {
        let mut record = s.record.clone();
        let own = record.common().id.clone().filter(|id| !used.contains(id));
        let id = own.unwrap_or_else(|| {
            let mut id = format!("r{}", s.row);
            while used.contains(&id) {
                id.push('\'');
            }
            id
        });
        used.insert(id.clone());
        record.common_mut().id = Some(id.clone());
        record.push_into(&mut records);
        ids.push((id, s));
    }
    (records, ids)
}

/// The unique key of a record. A record made from a frame is identified by its frame
/// (workspace, log path, `seq`, part), so replaying a log or a second writer adds nothing;
/// any other record by its workspace and content, so a fact saved again (in this session or a
/// later one, through any server) is kept once.
fn record_key(scope: &Scope, new: &NewRecord, json: &str) -> String {
    let mut h = Sha256::new();
    let mut field = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    let p = &new.provenance;
    match (&p.log_path, p.seq) {
        (Some(log), Some(seq)) => {
            field("frame");
            field(&scope.workspace);
            field(log);
            field(&seq.to_string());
            field(&p.part.to_string());
        }
        _ => {
            field("content");
            field(&scope.workspace);
            field(new.record.kind().name());
            field(json);
        }
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Common, ErrorRecord, FileRecord};

    fn scope() -> Scope {
        Scope {
            workspace: "/ws".into(),
            server: "fs".into(),
            session: "s1".into(),
        }
    }

    fn error(message: &str, seq: Option<u64>) -> NewRecord {
        NewRecord {
            record: SessionRecord::Error(ErrorRecord {
                common: Common::default(),
                message: message.into(),
                stack: None,
            }),
            provenance: Provenance {
                log_path: seq.map(|_| "log.jsonl".into()),
                seq,
                ..Provenance::default()
            },
        }
    }

    #[test]
    fn fresh_store_has_current_schema() {
        let store = Store::open_in_memory().unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::current_version());
        assert!(schema::current_version() >= 1);
    }

    #[test]
    fn same_frame_is_stored_once_and_content_keys_dedupe() {
        let mut store = Store::open_in_memory().unwrap();
        let first = store
            .insert(&scope(), &[error("a", Some(3)), error("a", None)])
            .unwrap();
        assert_eq!(first.inserted, 2);
        // Same frame with other content, and the same content again without a frame.
        let again = store
            .insert(&scope(), &[error("b", Some(3)), error("a", None)])
            .unwrap();
        assert_eq!(again.duplicates, 2);
        // Content keys ignore the server and the session.
        let later = Scope {
            server: "other".into(),
            session: "s2".into(),
            ..scope()
        };
        assert_eq!(
            store
                .insert(&later, &[error("a", None)])
                .unwrap()
                .duplicates,
            1
        );
        // Another workspace is another key.
        let other = Scope {
            workspace: "/other".into(),
            ..scope()
        };
        assert_eq!(
            store
                .insert(&other, &[error("a", Some(3))])
                .unwrap()
                .inserted,
            1
        );
        assert_eq!(store.count("/ws").unwrap(), 2);
        assert_eq!(store.count("/other").unwrap(), 1);
    }

    #[test]
    fn load_filters_and_keeps_order() {
        let mut store = Store::open_in_memory().unwrap();
        let file = |path: &str, content: &str| NewRecord {
            record: SessionRecord::File(FileRecord {
                common: Common::default(),
                path: path.into(),
                content: content.into(),
            }),
            provenance: Provenance {
                tool: Some("read_file".into()),
                arguments: Some(serde_json::json!({"path": path})),
                ..Provenance::default()
            },
        };
        store
            .insert(
                &scope(),
                &[
                    file("a.rs", "v1"),
                    error("e", None),
                    file("b.rs", "x"),
                    file("a.rs", "v2"),
                ],
            )
            .unwrap();
        let a = store
            .load(&Filter {
                path: Some("a.rs".into()),
                ..Filter::workspace("/ws")
            })
            .unwrap();
        let contents: Vec<_> = a
            .iter()
            .map(|s| match &s.record {
                SessionRecord::File(f) => f.content.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(contents, ["v1", "v2"]);
        assert_eq!(a[0].provenance.tool.as_deref(), Some("read_file"));
        let newest = store
            .load(&Filter {
                newest: Some(2),
                ..Filter::workspace("/ws")
            })
            .unwrap();
        assert_eq!(newest.len(), 2);
        assert!(newest[0].row < newest[1].row);
        let errors = store
            .load(&Filter {
                kind: Some(Kind::Error),
                ..Filter::workspace("/ws")
            })
            .unwrap();
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn every_load_reads_an_index_in_id_order_without_sorting() {
        let store = Store::open_in_memory().unwrap();
        for (kind, path) in [
            (None, None),
            (Some(Kind::File), None),
            (None, Some("a.rs")),
            (Some(Kind::File), Some("a.rs")),
        ] {
            let filter = Filter {
                kind,
                path: path.map(str::to_string),
                newest: Some(1000),
                ..Filter::workspace("/ws")
            };
            let mut stmt = store
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", load_sql(&filter)))
                .unwrap();
            // The plan does not depend on the values (left unbound: NULL).
            let mut rows = stmt.raw_query();
            let mut plan = String::new();
            while let Some(row) = rows.next().unwrap() {
                plan.push_str(&row.get::<_, String>(3).unwrap());
                plan.push_str("; ");
            }
            assert!(plan.contains("USING INDEX"), "{filter:?}: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "{filter:?}: {plan}");
        }
    }

    #[test]
    fn to_records_keeps_unique_caller_ids_and_names_the_rest() {
        let mut store = Store::open_in_memory().unwrap();
        let mut named = error("x", None);
        named.record.common_mut().id = Some("mine".into());
        let mut dup = error("y", None);
        dup.record.common_mut().id = Some("mine".into());
        store
            .insert(&scope(), &[named, dup, error("z", None)])
            .unwrap();
        let stored = store.load(&Filter::workspace("/ws")).unwrap();
        let (records, ids) = to_records(Some("t".into()), stored);
        let names: Vec<_> = ids.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(names, ["mine", "r2", "r3"]);
        assert_eq!(records.errors.len(), 3);
        assert_eq!(records.task.as_deref(), Some("t"));
    }
}

#[cfg(test)]
mod file_tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::records::{Common, Message, Role};

    fn note(text: &str) -> NewRecord {
        NewRecord {
            record: SessionRecord::Message(Message {
                common: Common::default(),
                role: Role::User,
                text: text.into(),
            }),
            provenance: Provenance::default(),
        }
    }

    fn scope() -> Scope {
        Scope {
            workspace: "/ws".into(),
            server: "s".into(),
            session: "1".into(),
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn file_store_is_wal_and_private_with_its_wal_and_shm() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let mut store = Store::open_path(&path).unwrap();
        store.insert(&scope(), &[note("hello")]).unwrap();
        let journal: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(journal, "wal");
        for suffix in ["", "-wal", "-shm"] {
            let p = dir.path().join(format!("store.sqlite3{suffix}"));
            assert!(p.exists(), "{} missing", p.display());
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
        drop(store);
        let again = Store::open_path(&path).unwrap();
        assert_eq!(again.count("/ws").unwrap(), 1);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_corrupt_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
        let err = Store::open_path(&path).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("corrupt"), "{err}");
    }

    #[test]
    fn an_older_schema_is_migrated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        drop(conn);
        let mut store = Store::open_path(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::current_version());
        let indexes: i64 = store
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'records_frame'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexes, 1);
        assert_eq!(store.insert(&scope(), &[note("a")]).unwrap().inserted, 1);
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        drop(Store::open_path(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", schema::current_version() + 1)
            .unwrap();
        drop(conn);
        let err = Store::open_path(&path).unwrap_err();
        assert!(matches!(err, StoreError::NewerSchema { .. }), "{err:?}");
    }

    #[test]
    fn a_read_only_store_is_a_read_only_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let mut store = Store::open_path(&path).unwrap();
        store.insert(&scope(), &[note("a")]).unwrap();
        // `query_only` makes writes fail with SQLITE_READONLY, as a read-only mount does (a
        // chmod would not stop root, who runs some CI).
        store.conn.execute_batch("PRAGMA query_only = ON").unwrap();
        let err = store.insert(&scope(), &[note("b")]).unwrap_err();
        assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    }

    #[test]
    fn a_locked_store_is_a_locked_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite3");
        let mut store = Store::open_path(&path).unwrap();
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        store.conn.busy_timeout(Duration::from_millis(50)).unwrap();
        let err = store.insert(&scope(), &[note("a")]).unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
        holder.execute_batch("ROLLBACK").unwrap();
        assert_eq!(store.insert(&scope(), &[note("a")]).unwrap().inserted, 1);
    }
}
