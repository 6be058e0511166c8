//! `ctxopt serve`: the six context tools (`build_context`, …) as a plain stdio MCP server
//! over the session store.

use std::io::{self, BufReader};
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::injected::{server, Bridge};
use ctxopt::store::{self, Scope, Store, StoreArgs};

/// Arguments of `ctxopt serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    store: StoreArgs,
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
    let scope = Scope::resolve(
        args.store.workspace.as_deref(),
        "ctxopt",
        store::new_session_id(),
    )
    .context("resolving the workspace")?;
    let bridge = match Store::open_arg(args.store.store.as_deref()) {
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
