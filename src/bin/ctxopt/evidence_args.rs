//! Options `ctxopt replay` and `ctxopt verify` share: which run of a log, and which fields
//! are volatile.

use ctxopt::evidence::volatile::Volatile;

/// How a log is read and its messages compared.
#[derive(Debug, clap::Args)]
pub(crate) struct MatchArgs {
    /// Which run of a log holding several (1-based).
    #[arg(long, value_name = "N")]
    pub run: Option<usize>,
    /// Accept a run without a trailer (the proxy was killed), without a partial last line.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// A field to leave out when comparing messages, as a JSON Pointer into the message
    /// (`*` matches any member or element); repeatable. Added to the defaults
    /// (docs/replay.md).
    #[arg(long = "volatile", value_name = "POINTER")]
    pub volatile: Vec<String>,
    /// Compare every field but the JSON-RPC id (drop the default volatile fields).
    #[arg(long)]
    pub no_default_volatile: bool,
}

impl MatchArgs {
    /// The volatile fields these options name.
    pub(crate) fn volatile(&self) -> anyhow::Result<Volatile> {
        let mut volatile = if self.no_default_volatile {
            Volatile::default()
        } else {
            Volatile::defaults()
        };
        for pointer in &self.volatile {
            volatile.add(pointer)?;
        }
        Ok(volatile)
    }
}
