//! Writing a command's result, the one way every subcommand does it: to stdout, or whole
//! to the file given with `--output` (never half-written, mode 0600: reports and contexts
//! quote frames and tool results).

use std::io::{ErrorKind, Write};
use std::path::Path;

use anyhow::Context;

/// Writes `bytes` to `path` when given, else to stdout. A file is written to a temporary
/// sibling with mode 0600 and renamed into place, so a failure leaves no partial file.
/// A stdout whose reader has gone (`ctxopt report … | head`) is not an error: the rest is
/// dropped quietly and the command ends as it would have.
pub(crate) fn emit(path: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    let Some(path) = path else {
        let mut out = std::io::stdout().lock();
        return match out.write_all(bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
            written => written.context("writing stdout"),
        };
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".tmp-{}", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let written = write_private(&temp, bytes).and_then(|()| {
        std::fs::rename(&temp, path).with_context(|| format!("renaming into {}", path.display()))
    });
    if written.is_err() {
        std::fs::remove_file(&temp).ok();
    }
    written
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()
        .with_context(|| format!("writing {}", path.display()))
}
