//! Secret redaction of what ctxopt writes to disk (the frame log's raw copies and the
//! store's texts), never of what it relays. Specified in `docs/security.md`.
//!
//! A secret becomes `[REDACTED:<rule>:<length>:<hmac8>]`: the rule that found it, its
//! length in bytes, and the first 8 hex digits of its HMAC-SHA256 under the installation's
//! key, so equal secrets stay comparable across logs and the store without being
//! recoverable. Redaction is idempotent, and no rule finds a secret in its output.
//!
//! # Layout
//! - [`rules`]: the rule table (gitleaks-style: keywords, pattern, allowlist).
//! - [`matcher`](mod@matcher): the table (Aho-Corasick keyword prefilter, then each rule whose
//!   keywords occur, its pattern compiled at its first keyword hit, for positions).
//! - [`escape`]: matches widened so that they never cut a JSON escape.
//! - [`key`]: the per-installation HMAC key file (0600, created on first use).

pub(crate) mod escape;
pub mod key;
pub mod matcher;
pub(crate) mod rules;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hmac::Mac;

pub use key::{Key, KeyError};
pub use matcher::{matcher, Finding};

/// Passes over a text before redaction stops: each pass only turns text outside
/// placeholders into placeholders, so a second pass (needed when a replacement makes a
/// neighbour match, as `\b` can) almost never finds anything and a third never has.
const MAX_PASSES: usize = 16;

/// Where a redactor's key comes from.
#[derive(Debug)]
enum KeySource {
    Fixed(Key),
    /// A key file, read (or created) on first use; a failure falls back to a key for this
    /// run.
    File(PathBuf, OnceLock<Key>),
    /// A random key made on first use, for this run only.
    Run(OnceLock<Key>),
}

/// Redacts secrets. Cheap to share (`Arc`); the rule table is built once per process.
#[derive(Debug)]
pub struct Redactor {
    key: KeySource,
}

impl Redactor {
    /// A redactor with a fixed key (tests, fuzzing).
    pub fn with_key(key: Key) -> Redactor {
        Redactor {
            key: KeySource::Fixed(key),
        }
    }

    /// A redactor whose key is the file at `path`, read (or created, 0600) when the first
    /// secret is found. When the file cannot be used it warns once on stderr and uses a
    /// key for this run: nothing is written in clear either way, but placeholders then
    /// only compare within the run.
    pub(crate) fn with_key_file(path: PathBuf) -> Redactor {
        Redactor {
            key: KeySource::File(path, OnceLock::new()),
        }
    }

    /// A redactor with a random key for this run only (an in-memory store, whose texts do
    /// not outlive the process).
    pub(crate) fn for_this_run() -> Redactor {
        Redactor {
            key: KeySource::Run(OnceLock::new()),
        }
    }

    /// The redactor for a store at `store_file` (`None`: an in-memory store or none): its
    /// key file is [`key::key_path`] of it; without a home directory, a key for this run.
    pub(crate) fn for_store(store_file: Option<&Path>) -> Redactor {
        match key::key_path(store_file) {
            Some(path) => Redactor::with_key_file(path),
            None => {
                eprintln!(
                    "ctxopt: no home directory for the redaction key; redacting with a key for this run only"
                );
                Redactor::for_this_run()
            }
        }
    }

    fn key(&self) -> &Key {
        match &self.key {
            KeySource::Fixed(key) => key,
            KeySource::File(path, key) => key.get_or_init(|| {
                key::load_or_create(path).unwrap_or_else(|err| {
                    eprintln!(
                        "ctxopt: {err}; redacting with a key for this run only (placeholders will not compare with other runs)"
                    );
                    run_key()
                })
            }),
            KeySource::Run(key) => key.get_or_init(run_key),
        }
    }

    /// The placeholder for `secret` found by `rule`.
    pub(crate) fn placeholder(&self, rule: &str, secret: &[u8]) -> String {
        let mut mac = self.key().hmac();
        mac.update(secret);
        let tag = mac.finalize().into_bytes();
        format!(
            "[REDACTED:{rule}:{}:{}]",
            secret.len(),
            hex::encode(&tag[..4])
        )
    }

    /// `text` with every secret replaced by its placeholder, and how many were replaced.
    /// Borrows when there is nothing to redact.
    pub fn redact<'a>(&self, text: &'a [u8]) -> (Cow<'a, [u8]>, usize) {
        let mut out = Cow::Borrowed(text);
        let mut count = 0;
        for _ in 0..MAX_PASSES {
            let findings = matcher().find(&out);
            if findings.is_empty() {
                break;
            }
            count += findings.len();
            let mut next = Vec::with_capacity(out.len());
            let mut at = 0;
            for finding in &findings {
                next.extend_from_slice(&out[at..finding.span.start]);
                next.extend_from_slice(
                    self.placeholder(finding.rule, &out[finding.span.clone()])
                        .as_bytes(),
                );
                at = finding.span.end;
            }
            next.extend_from_slice(&out[at..]);
            out = Cow::Owned(next);
        }
        (out, count)
    }

    /// [`Redactor::redact`] for text: valid UTF-8 in, valid UTF-8 out (matches begin and
    /// end on character boundaries, and placeholders are ASCII).
    pub(crate) fn redact_str<'a>(&self, text: &'a str) -> (Cow<'a, str>, usize) {
        match self.redact(text.as_bytes()) {
            (Cow::Borrowed(_), count) => (Cow::Borrowed(text), count),
            (Cow::Owned(bytes), count) => {
                let text = String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                (Cow::Owned(text), count)
            }
        }
    }

    /// Redacts `text` in place; returns how many secrets it replaced.
    pub(crate) fn redact_string(&self, text: &mut String) -> usize {
        let (redacted, count) = self.redact_str(text);
        if let Cow::Owned(redacted) = redacted {
            *text = redacted;
        }
        count
    }
}

/// A key for this run: random, or where the OS has no randomness to give, derived from
/// the time and process id (still keyed, so a placeholder is not a plain hash).
fn run_key() -> Key {
    Key::random().unwrap_or_else(|_| Key::from_bytes(time_key_bytes()))
}

fn time_key_bytes() -> [u8; key::KEY_LEN] {
    use sha2::Digest;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let digest = sha2::Sha256::new()
        .chain_update(now.as_nanos().to_le_bytes())
        .chain_update(std::process::id().to_le_bytes())
        .finalize();
    digest.into()
}

#[cfg(test)]
mod tests;
