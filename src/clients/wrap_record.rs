//! What `wrap` found and added in each config file, so that `unwrap` removes what wrap
//! added and nothing else: whether the `ctxopt` server entry of a file is one wrap added or
//! one the file had, and the text of each remote entry wrap replaced (a command line does not
//! hold its bytes). One small JSON file per config file (`<sha256 of its resolved path,
//! 24 hex digits>.json`, holding the path and the origin), in `<state dir>/ctxopt/wrap/`,
//! mode 0600 in a 0700 folder, replaced whole. A file wrapped by a ctxopt that kept no
//! record is judged by its backup (see [`serve_is_ours`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::entries::{self, ServersAt, SERVE_KEY};
use super::ConfigError;

/// Where the `ctxopt` server entry of a file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServeOrigin {
    /// `wrap` added it: `unwrap` removes it.
    Added,
    /// The file had it before `wrap` looked: `unwrap` leaves it.
    Found,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    serve: Option<ServeOrigin>,
    /// Per entry key, the member (key to value end) as it was before wrap.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    remote: BTreeMap<String, String>,
}

/// The records of a state folder.
#[derive(Debug, Clone)]
pub struct WrapRecords {
    dir: PathBuf,
}

impl WrapRecords {
    /// The records in `dir`.
    pub fn in_dir(dir: PathBuf) -> WrapRecords {
        WrapRecords { dir }
    }

    /// The records in the default state folder (`$XDG_STATE_HOME/ctxopt/wrap`, else
    /// `~/.local/state/ctxopt/wrap`); `None` without a home folder.
    pub fn default_place() -> Option<WrapRecords> {
        let base =
            dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
        Some(WrapRecords::in_dir(base.join("ctxopt").join("wrap")))
    }

    fn path(&self, target: &Path) -> PathBuf {
        let digest = hex::encode(Sha256::digest(target.as_os_str().as_encoded_bytes()));
        self.dir.join(format!("{}.json", &digest[..24]))
    }

    /// The record of the (resolved) config file `target`, when there is one.
    fn read(&self, target: &Path) -> Result<Option<Record>, ConfigError> {
        let path = self.path(target);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
                    ConfigError::io(
                        &path,
                        std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                    )
                })?;
                Ok((Path::new(&record.file) == target).then_some(record))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigError::io(&path, e)),
        }
    }

    fn write(&self, target: &Path, change: impl FnOnce(&mut Record)) -> Result<(), ConfigError> {
        let mut record = self.read(target)?.unwrap_or_default();
        record.file = target.to_string_lossy().into_owned();
        change(&mut record);
        let path = self.path(target);
        let json = serde_json::to_vec(&record).expect("a record serializes");
        crate::private_file::replace(&path, &json).map_err(|e| ConfigError::io(&path, e))
    }

    /// The origin recorded for the `ctxopt` entry of the (resolved) config file `target`.
    pub fn serve(&self, target: &Path) -> Result<Option<ServeOrigin>, ConfigError> {
        Ok(self.read(target)?.and_then(|r| r.serve))
    }

    /// Records the origin of the `ctxopt` entry of `target`.
    pub fn set_serve(&self, target: &Path, serve: ServeOrigin) -> Result<(), ConfigError> {
        self.write(target, |r| r.serve = Some(serve))
    }

    /// The remote entries of `target` wrap replaced: key, and the member as it was.
    pub fn remote(&self, target: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
        Ok(self.read(target)?.map(|r| r.remote).unwrap_or_default())
    }

    /// Records the remote entries wrap replaced in `target` (key, the member as it was).
    pub fn add_remote(
        &self,
        target: &Path,
        originals: &[(String, String)],
    ) -> Result<(), ConfigError> {
        self.write(target, |r| r.remote.extend(originals.iter().cloned()))
    }

    /// Forgets the record of `target` (its `ctxopt` entry is gone).
    pub fn forget(&self, target: &Path) -> Result<(), ConfigError> {
        let path = self.path(target);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ConfigError::io(&path, e)),
            _ => Ok(()),
        }
    }
}

/// Whether the `ctxopt` entry of a file is wrap's to remove: the record says wrap added it;
/// without a record (a file wrapped before records were kept), when the backup (the file
/// before ctxopt's first change) has no server named `ctxopt`. No record and no backup:
/// not ours.
pub fn serve_is_ours(
    recorded: Option<ServeOrigin>,
    backup: Option<&str>,
    at: &ServersAt,
    path: &Path,
) -> bool {
    match recorded {
        Some(origin) => origin == ServeOrigin::Added,
        None => backup.is_some_and(|b| {
            matches!(entries::read(b, at, path), Ok(Some(s)) if !s.entries.iter().any(|e| e.key == SERVE_KEY))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_kept_per_file_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let records = WrapRecords::in_dir(dir.path().join("wrap"));
        let a = Path::new("/x/a.json");
        assert_eq!(records.serve(a).unwrap(), None);
        records.set_serve(a, ServeOrigin::Added).unwrap();
        records
            .set_serve(Path::new("/x/b.json"), ServeOrigin::Found)
            .unwrap();
        assert_eq!(records.serve(a).unwrap(), Some(ServeOrigin::Added));
        assert_eq!(
            records.serve(Path::new("/x/b.json")).unwrap(),
            Some(ServeOrigin::Found)
        );
        let originals = [(
            "r".to_string(),
            "\"r\": {\"url\": \"https://h/mcp\"}".to_string(),
        )];
        records.add_remote(a, &originals).unwrap();
        assert_eq!(records.serve(a).unwrap(), Some(ServeOrigin::Added), "kept");
        assert_eq!(records.remote(a).unwrap().get("r"), Some(&originals[0].1));
        records.forget(a).unwrap();
        assert_eq!(records.serve(a).unwrap(), None);
        assert!(records.remote(a).unwrap().is_empty());
    }

    #[test]
    fn without_a_record_the_backup_decides() {
        let at = ServersAt::Json(vec!["mcpServers".into()]);
        let p = Path::new("x.json");
        let had = r#"{"mcpServers": {"ctxopt": {"command": "ctxopt", "args": ["serve"]}}}"#;
        let had_not = r#"{"mcpServers": {"a": {"command": "node"}}}"#;
        assert!(!serve_is_ours(None, Some(had), &at, p));
        assert!(serve_is_ours(None, Some(had_not), &at, p));
        assert!(!serve_is_ours(None, None, &at, p));
        assert!(!serve_is_ours(
            Some(ServeOrigin::Found),
            Some(had_not),
            &at,
            p
        ));
        assert!(serve_is_ours(Some(ServeOrigin::Added), Some(had), &at, p));
    }
}
