//! Finding the pinned test peers (`proxy-tests/peers/`, installed by
//! `./proxy-tests/run-all --install-only`; `CTXOPT_PEERS_DIR` points elsewhere). A test that
//! needs a peer and finds it missing fails with the install command, unless
//! `CTXOPT_SKIP_PEER_TESTS` is set (and not `0`), which turns the missing peer into a skip.

use std::path::PathBuf;

/// The environment variable that turns a missing peer installation into a skip.
pub(crate) const SKIP_VAR: &str = "CTXOPT_SKIP_PEER_TESTS";

/// Whether [`SKIP_VAR`] asks to skip tests whose peers are missing.
pub(crate) fn skip_requested() -> bool {
    std::env::var_os(SKIP_VAR).is_some_and(|v| v != "0")
}

/// The directory of the installed peers.
pub(crate) fn dir() -> PathBuf {
    std::env::var_os("CTXOPT_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proxy-tests/peers"))
}

/// A file of the installed peers, or `None` (after saying so) when it is missing and
/// [`SKIP_VAR`] is set; a missing peer fails the test otherwise.
pub(crate) fn peer(relative: &str) -> Option<PathBuf> {
    let path = dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    if skip_requested() {
        eprintln!(
            "skipping: {} is missing ({SKIP_VAR} is set)",
            path.display()
        );
        return None;
    }
    panic!(
        "{} is missing: install the peers with `./proxy-tests/run-all --install-only`, \
         or set {SKIP_VAR}=1",
        path.display()
    );
}
