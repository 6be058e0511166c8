//! The store's schema, as numbered migrations. `PRAGMA user_version` holds the number of
//! migrations applied; opening a store applies the missing ones in one immediate
//! transaction, so two processes opening a fresh store at once apply each exactly once.

/// The migrations, in order: migration `i` brings the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the records table. `key` makes ingestion idempotent (INSERT OR IGNORE); `record`
    // holds the record in the optimizer's records format; the other columns index it.
    "CREATE TABLE records (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        workspace TEXT NOT NULL,
        server TEXT NOT NULL,
        session TEXT NOT NULL,
        kind TEXT NOT NULL,
        path TEXT,
        tool TEXT,
        timestamp TEXT,
        log_path TEXT,
        seq INTEGER,
        part INTEGER NOT NULL DEFAULT 0,
        arguments TEXT,
        record TEXT NOT NULL
    );
    CREATE INDEX records_workspace_kind ON records (workspace, kind, id);
    CREATE INDEX records_workspace_path ON records (workspace, path);",
    // 2: resolve a frame (log + seq) to its records quickly.
    "CREATE INDEX records_frame ON records (log_path, seq, part);",
    // 3: the exact results the proxy compacted on the wire (`--compact-results`), served
    // back by `get_result`; `created` (Unix seconds) drives the retention.
    "CREATE TABLE results (
        handle TEXT NOT NULL,
        workspace TEXT NOT NULL,
        server TEXT NOT NULL,
        session TEXT NOT NULL,
        tool TEXT,
        created INTEGER NOT NULL,
        frame TEXT NOT NULL,
        PRIMARY KEY (workspace, handle)
    );
    CREATE INDEX results_created ON results (created);",
    // 4: what the client hooks injected into sessions' context, one row per answered event;
    // `key` (session, event, transcript position, prompt) makes an event fired twice count
    // and inject once.
    "CREATE TABLE injections (
        key TEXT PRIMARY KEY,
        workspace TEXT NOT NULL,
        client TEXT NOT NULL,
        session TEXT NOT NULL,
        event TEXT NOT NULL,
        created INTEGER NOT NULL,
        records INTEGER NOT NULL,
        characters INTEGER NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX injections_created ON injections (created);",
    // 5: a workspace's newest records (`Filter::newest` without a kind or a path) read in id
    // order from the index, without sorting the whole workspace: the hooks' load on every
    // run reads only the rows it returns.
    "CREATE INDEX records_workspace_id ON records (workspace, id);",
];

/// The schema version this build writes and reads.
pub(crate) fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}
