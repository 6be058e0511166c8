//! The tool catalogs the proxy trusts, one file per server in a `catalogs/` directory beside
//! the session store (the directory 0700, each file 0600, written whole through a temporary
//! file).
//!
//! A file holds the server's trusted catalog (the tools as the server listed them, and their
//! [`digest`](super::catalog::digest)) and, when a proxy holding changed catalogs back
//! (`--hold-changed-tools`) saw another one, that catalog as `pending` until `ctxopt trust`
//! accepts it. "The same server" is the proxy's server name and the `serverInfo` name of its
//! handshake answer: the file is `<name>--<serverInfo name>.json` (or `<name>.json` when the
//! server gave no name), each made safe for a file name.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::{self, CatalogDiff};
use crate::tokenizer::Tokenizer;

/// One catalog: the tools as the server listed them, and their digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// [`catalog::digest`] of `tools`.
    pub digest: String,
    /// The tool objects as the server listed them.
    pub tools: Vec<Value>,
}

impl Catalog {
    /// A catalog of these tools.
    pub fn of(tools: Vec<Value>) -> Catalog {
        Catalog {
            digest: catalog::digest(&tools),
            tools,
        }
    }
}

/// What is remembered of one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    /// The trusted catalog.
    #[serde(flatten)]
    pub trusted: Catalog,
    /// A changed catalog held back, waiting for `ctxopt trust`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Catalog>,
}

impl Remembered {
    /// What the pending catalog changes, when there is one.
    pub fn pending_diff(&self, tokenizer: Tokenizer) -> Option<CatalogDiff> {
        let pending = self.pending.as_ref()?;
        Some(catalog::diff(
            &self.trusted.tools,
            &pending.tools,
            tokenizer,
        ))
    }
}

/// A server's file name part: ASCII letters, digits, `.`, `_` and `-` kept, anything else `_`.
pub fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The `catalogs/` directory beside a session store.
#[derive(Debug, Clone)]
pub struct CatalogDir {
    dir: PathBuf,
}

/// One server's file in a [`CatalogDir`].
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file's name without `.json`: `<name>--<serverInfo name>` or `<name>`.
    pub key: String,
    /// The file.
    pub path: PathBuf,
    /// What it holds.
    pub remembered: Remembered,
}

impl Entry {
    /// The proxy's server name the entry is for (the key up to `--`).
    pub fn server_name(&self) -> &str {
        self.key.split("--").next().unwrap_or(&self.key)
    }
}

impl CatalogDir {
    /// The directory beside `store_file`.
    pub fn beside(store_file: &Path) -> CatalogDir {
        CatalogDir {
            dir: store_file
                .parent()
                .unwrap_or(Path::new(""))
                .join("catalogs"),
        }
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The file of the server named `server_name` (the proxy's) and `identity` (its
    /// `serverInfo` name).
    pub fn file(&self, server_name: &str, identity: Option<&str>) -> PathBuf {
        let identity = identity.map_or(String::new(), |i| format!("--{}", file_safe(i)));
        self.dir
            .join(format!("{}{identity}.json", file_safe(server_name)))
    }

    /// What `path` holds; `None` when it does not exist or cannot be read as a catalog.
    pub fn read(path: &Path) -> Option<Remembered> {
        let bytes = fs::read(path).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Every server's file, by key.
    pub fn entries(&self) -> std::io::Result<Vec<Entry>> {
        let listing = match fs::read_dir(&self.dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for item in listing {
            let path = item?.path();
            let Some(key) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .map(str::to_owned)
            else {
                continue;
            };
            if let Some(remembered) = Self::read(&path) {
                out.push(Entry {
                    key,
                    path,
                    remembered,
                });
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}

/// A server's pending catalog accepted by [`CatalogDir::accept`].
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The server's key (its file name without `.json`).
    pub key: String,
    /// What the accepted catalog changed (`None`: nothing was pending).
    pub diff: Option<CatalogDiff>,
}

impl CatalogDir {
    /// The servers whose changed catalog waits to be accepted, by key.
    pub fn pending(&self) -> std::io::Result<Vec<Entry>> {
        let mut entries = self.entries()?;
        entries.retain(|e| e.remembered.pending.is_some());
        Ok(entries)
    }

    /// Accepts the pending catalogs of the servers `names` name (the proxy's server name,
    /// every identity of it, or a whole key), or of every server when `names` is `None`:
    /// each becomes the trusted catalog. A name no remembered server has is an error, and
    /// then nothing is accepted.
    pub fn accept(
        &self,
        names: Option<&[String]>,
        tokenizer: Tokenizer,
    ) -> Result<Vec<Accepted>, super::EvidenceError> {
        let io =
            |e: std::io::Error| super::EvidenceError::Io(format!("{}: {e}", self.dir.display()));
        let entries = self.entries().map_err(io)?;
        let chosen: Vec<&Entry> = match names {
            None => entries
                .iter()
                .filter(|e| e.remembered.pending.is_some())
                .collect(),
            Some(names) => {
                let mut chosen = Vec::new();
                for name in names {
                    let safe = file_safe(name);
                    let matching: Vec<&Entry> = entries
                        .iter()
                        .filter(|e| e.key == safe || e.server_name() == safe)
                        .collect();
                    if matching.is_empty() {
                        let known: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
                        return Err(super::EvidenceError::Usage(format!(
                            "no tool catalog is remembered for a server named {name:?} in {} (remembered: {})",
                            self.dir.display(),
                            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                        )));
                    }
                    chosen.extend(matching);
                }
                chosen.sort_by(|a, b| a.key.cmp(&b.key));
                chosen.dedup_by(|a, b| a.key == b.key);
                chosen
            }
        };
        let mut out = Vec::new();
        for entry in chosen {
            let diff = entry.remembered.pending_diff(tokenizer);
            if let Some(pending) = entry.remembered.pending.clone() {
                write(
                    &entry.path,
                    &Remembered {
                        trusted: pending,
                        pending: None,
                    },
                )
                .map_err(io)?;
            }
            out.push(Accepted {
                key: entry.key.clone(),
                diff,
            });
        }
        Ok(out)
    }
}

/// Writes `what` to `path` whole (a temporary file synced and renamed over it), 0600, its
/// directory 0700.
pub fn write(path: &Path, what: &Remembered) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(what).map_err(std::io::Error::other)?;
    crate::private_file::replace_synced(path, &bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_file_written_is_read_back_with_its_pending_catalog_and_listed_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let catalogs = CatalogDir::beside(&dir.path().join("store.sqlite3"));
        let path = catalogs.file("every thing", Some("mcp-servers/everything"));
        assert!(path.ends_with("catalogs/every_thing--mcp-servers_everything.json"));
        assert!(catalogs.entries().unwrap().is_empty(), "no directory yet");
        let remembered = Remembered {
            trusted: Catalog::of(vec![json!({"name": "a", "description": "x"})]),
            pending: Some(Catalog::of(vec![json!({"name": "a", "description": "y"})])),
        };
        write(&path, &remembered).unwrap();
        assert_eq!(CatalogDir::read(&path), Some(remembered.clone()));
        let entries = catalogs.entries().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].key, "every_thing--mcp-servers_everything");
        assert_eq!(entries[0].server_name(), "every_thing");
        let diff = remembered.pending_diff(Tokenizer::CharsDiv4).unwrap();
        assert_eq!(diff.redefined[0].members, ["description"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&path), mode(catalogs.path())), (0o600, 0o700));
    }

    #[test]
    fn accepting_makes_the_pending_catalog_the_trusted_one_and_an_unknown_name_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let catalogs = CatalogDir::beside(&dir.path().join("store.sqlite3"));
        let then = Catalog::of(vec![json!({"name": "a", "description": "x"})]);
        let now = Catalog::of(vec![json!({"name": "a", "description": "y"})]);
        for (name, identity, pending) in [
            ("fs", Some("files"), Some(now.clone())),
            ("fs", Some("other"), None),
            ("git", None, Some(now.clone())),
        ] {
            let path = catalogs.file(name, identity);
            let trusted = then.clone();
            write(&path, &Remembered { trusted, pending }).unwrap();
        }
        let keys = |e: Vec<Entry>| e.into_iter().map(|e| e.key).collect::<Vec<_>>();
        assert_eq!(keys(catalogs.pending().unwrap()), ["fs--files", "git"]);
        let unknown = catalogs.accept(Some(&["nope".to_owned()]), Tokenizer::CharsDiv4);
        assert!(unknown
            .unwrap_err()
            .to_string()
            .contains("remembered: fs--files, fs--other, git"));
        assert_eq!(
            keys(catalogs.pending().unwrap()),
            ["fs--files", "git"],
            "nothing accepted"
        );
        let accepted = catalogs
            .accept(Some(&["fs".to_owned()]), Tokenizer::CharsDiv4)
            .unwrap();
        assert_eq!(accepted.len(), 2, "both identities of fs");
        assert!(accepted[0].diff.as_ref().unwrap().changed());
        assert!(accepted[1].diff.is_none(), "fs--other had nothing pending");
        let fs = CatalogDir::read(&catalogs.file("fs", Some("files"))).unwrap();
        assert_eq!((fs.trusted, fs.pending), (now.clone(), None));
        assert_eq!(keys(catalogs.pending().unwrap()), ["git"]);
        assert_eq!(
            catalogs.accept(None, Tokenizer::CharsDiv4).unwrap().len(),
            1
        );
        assert!(catalogs.pending().unwrap().is_empty());
    }
}
