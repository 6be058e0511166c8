//! The binaries' own diagnostics, through `tracing`.
//!
//! By default the messages a user must see (a store or log that is unavailable, records that
//! could not be read, a command's summary) go to standard error as bare lines, exactly as
//! they read; nothing at `debug` or `trace` is even formatted. [`LOG_ENV`] (`CTXOPT_LOG`)
//! takes a filter (`debug`, `ctxopt=trace`, `warn,ctxopt::injected=debug`) and switches to
//! the full format (time, level, module); [`LOG_FILE_ENV`] (`CTXOPT_LOG_FILE`) sends
//! everything to that file instead (appended, created with mode 0600: diagnostics may
//! quote frames).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use tracing_subscriber::EnvFilter;

/// The variable holding the diagnostics filter.
pub(crate) const LOG_ENV: &str = "CTXOPT_LOG";

/// The variable naming a file for the diagnostics instead of standard error.
pub(crate) const LOG_FILE_ENV: &str = "CTXOPT_LOG_FILE";

/// What is shown when [`LOG_ENV`] is not set: the messages for the user, not the debug ones.
const DEFAULT_FILTER: &str = "info";

/// Where the diagnostics go.
enum Sink {
    Stderr,
    File(Mutex<File>),
}

/// One write of a diagnostic line.
enum SinkWriter<'a> {
    Stderr(io::Stderr),
    File(std::sync::MutexGuard<'a, File>),
}

impl Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            SinkWriter::Stderr(e) => e.write(buf),
            SinkWriter::File(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            SinkWriter::Stderr(e) => e.flush(),
            SinkWriter::File(f) => f.flush(),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = SinkWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        match self {
            Sink::Stderr => SinkWriter::Stderr(io::stderr()),
            Sink::File(f) => SinkWriter::File(f.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }
}

fn open_private_append(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Installs the subscriber for this process from [`LOG_ENV`] and [`LOG_FILE_ENV`]; call it
/// first thing in `main`. It starts no thread. A filter that does not parse, or a file that
/// cannot be opened, is said on standard error and the defaults are used instead.
pub fn init() {
    let requested = std::env::var(LOG_ENV).ok().filter(|v| !v.trim().is_empty());
    let mut problems = Vec::new();
    let filter = match &requested {
        Some(spec) => EnvFilter::try_new(spec).unwrap_or_else(|e| {
            problems.push(format!("{LOG_ENV}={spec}: {e}; using {DEFAULT_FILTER}"));
            EnvFilter::new(DEFAULT_FILTER)
        }),
        None => EnvFilter::new(DEFAULT_FILTER),
    };
    let sink = match std::env::var_os(LOG_FILE_ENV).filter(|v| !v.is_empty()) {
        Some(path) => match open_private_append(Path::new(&path)) {
            Ok(file) => Sink::File(Mutex::new(file)),
            Err(e) => {
                problems.push(format!(
                    "{LOG_FILE_ENV}={}: {e}; writing diagnostics to stderr",
                    Path::new(&path).display()
                ));
                Sink::Stderr
            }
        },
        None => Sink::Stderr,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(sink)
        .with_ansi(false);
    let installed = if requested.is_some() {
        builder.try_init()
    } else {
        builder
            .without_time()
            .with_level(false)
            .with_target(false)
            .try_init()
    };
    if installed.is_ok() {
        for problem in problems {
            tracing::warn!("{problem}");
        }
    }
}
