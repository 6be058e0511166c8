//! `ctxopt serve`: the six context tools (`build_context`, …) as a plain stdio MCP server
//! over the session store.

use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::injected::{server, Bridge};
use ctxopt::store::{self, Scope, Store};

/// Arguments of `ctxopt serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The store: a SQLite file, or `:memory:` for none (default:
    /// $XDG_STATE_HOME/ctxopt/store.sqlite3, else ~/.local/state/ctxopt/store.sqlite3).
    #[arg(long)]
    store: Option<String>,
    /// The workspace whose records the tools read and write (default: the current
    /// directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Store raw copies: secrets in the records are not redacted. Warns on stderr.
    #[arg(long)]
    no_redact: bool,
}

/// `store`, redacting unless `no_redact` (then with a warning naming `who`).
pub(crate) fn raw_if_asked(store: Store, no_redact: bool, who: &str) -> Store {
    if !no_redact {
        return store;
    }
    eprintln!("{who}: --no-redact: the store keeps secrets in clear");
    store.redacting(None)
}

/// Runs `ctxopt serve` until standard input ends. A store that cannot be opened is reported
/// once; the server still runs and its tools answer with the reason.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scope = Scope::resolve(args.workspace.as_deref(), "ctxopt", store::new_session_id())
        .context("resolving the workspace")?;
    let bridge = match Store::open_arg(args.store.as_deref()) {
        Ok(store) => Bridge::new(raw_if_asked(store, args.no_redact, "ctxopt serve"), scope),
        Err(err) => {
            tracing::warn!("ctxopt serve: {err}; serving without a store");
            Bridge::unavailable(&err, scope)
        }
    };
    server::serve(
        &bridge,
        BufReader::new(io::stdin().lock()),
        io::stdout().lock(),
    )
    .context("serving on stdio")?;
    Ok(ExitCode::SUCCESS)
}
