//! Running `ctxopt-proxy` in tests.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The proxy binary under test.
pub(crate) const PROXY: &str = env!("CARGO_BIN_EXE_ctxopt-proxy");

/// How long any single proxy run may take before the test fails.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(120);

/// The fixture server (`proxy-tests/fixture_server.rs`, built as the example
/// `fixture-server`). Built on first use so a narrow `cargo test --test proxy-tests` run
/// never uses a stale one.
pub(crate) fn fixture_server() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // target/<profile>/deps/proxy_tests-… → target/<profile>/examples/fixture-server
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target profile directory");
        let target_dir = profile_dir.parent().expect("target directory");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(name) => name,
        };
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--example",
                "fixture-server",
                "--profile",
                profile,
            ])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo to build the fixture server");
        assert!(status.success(), "building the fixture server failed");
        let path = profile_dir.join("examples").join("fixture-server");
        assert!(path.exists(), "no fixture server at {}", path.display());
        path
    })
}

/// A proxy invocation being put together: proxy options, then the server's argv.
#[derive(Debug)]
pub(crate) struct ProxyCmd {
    options: Vec<OsString>,
    server: Vec<OsString>,
    dir: tempfile::TempDir,
    log: PathBuf,
}

/// What a finished proxy run left behind.
#[derive(Debug)]
pub(crate) struct Run {
    /// Everything the proxy wrote to its stdout (what the client received).
    pub stdout: Vec<u8>,
    /// Everything on the proxy's stderr (the server's stderr passes through here).
    pub stderr: String,
    /// The proxy's exit status.
    pub status: ExitStatus,
    /// The log path the proxy was given.
    pub log: PathBuf,
    /// Keeps the temporary directory alive.
    _dir: tempfile::TempDir,
}

impl ProxyCmd {
    /// The proxy around the fixture server running `steps`, logging to a fresh file.
    pub(crate) fn fixture<S: AsRef<OsStr>>(steps: &[S]) -> Self {
        let mut argv = vec![fixture_server().as_os_str().to_owned()];
        argv.extend(steps.iter().map(|s| s.as_ref().to_owned()));
        Self::server(argv)
    }

    /// The proxy around any command, logging to a fresh file.
    pub(crate) fn server<S: AsRef<OsStr>>(argv: impl IntoIterator<Item = S>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("frames.jsonl");
        ProxyCmd {
            options: Vec::new(),
            server: argv.into_iter().map(|s| s.as_ref().to_owned()).collect(),
            dir,
            log,
        }
    }

    /// The proxy in front of the remote server at `url` (`--url`), logging to a fresh file.
    pub(crate) fn remote(url: &str) -> Self {
        Self::server(Vec::<OsString>::new()).option(&["--url", url])
    }

    /// Adds proxy options (before `--`).
    pub(crate) fn option<S: AsRef<OsStr>>(mut self, args: &[S]) -> Self {
        self.options
            .extend(args.iter().map(|s| s.as_ref().to_owned()));
        self
    }

    /// Logs to `path` instead of the fresh file.
    pub(crate) fn log_to(mut self, path: &Path) -> Self {
        self.log = path.to_path_buf();
        self
    }

    /// The log path the proxy will be given.
    pub(crate) fn log_path(&self) -> &Path {
        &self.log
    }

    /// The proxy's command line, its standard streams left to the caller. Without a
    /// `--store` option the proxy gets `--store :memory:`, so no test writes into the
    /// user's store. The server's command follows `--` (a remote server has none).
    pub(crate) fn command(&self) -> Command {
        let mut cmd = Command::new(PROXY);
        // The redaction key (and anything else of the state directory) stays in the temp dir.
        cmd.env("XDG_STATE_HOME", self.dir.path());
        cmd.arg("--log").arg(&self.log);
        if !self.options.iter().any(|o| o == "--store") {
            cmd.args(["--store", ":memory:"]);
        }
        cmd.args(&self.options);
        if !self.server.is_empty() {
            cmd.arg("--").args(&self.server);
        }
        cmd
    }

    /// Starts the proxy ([`ProxyCmd::command`]) with piped stdin, stdout and stderr.
    pub(crate) fn spawn(&self) -> Child {
        self.command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ctxopt-proxy")
    }

    /// Runs the proxy to the end: writes `input` to its stdin (then closes it) while
    /// collecting stdout and stderr.
    pub(crate) fn run(self, input: &[u8]) -> Run {
        let mut child = self.spawn();
        let mut stdin = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            // The server may exit before reading everything; that is the test's business.
            let _ = stdin.write_all(&input);
        });
        let (stdout, stderr, status) = finish(child);
        let _ = writer.join();
        Run {
            stdout,
            stderr,
            status,
            log: self.log,
            _dir: self.dir,
        }
    }
}

/// Collects a running proxy's stdout and stderr and waits for it (with a watchdog).
pub(crate) fn finish(mut child: Child) -> (Vec<u8>, String, ExitStatus) {
    let mut out = child.stdout.take().expect("stdout");
    // A caller that watched stderr as it came has taken it.
    let err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = String::new();
        if let Some(mut err) = err {
            let _ = err.read_to_string(&mut buf);
        }
        buf
    });
    let status = wait_with_watchdog(&mut child);
    (
        reader.join().expect("stdout reader"),
        err_reader.join().expect("stderr reader"),
        status,
    )
}

/// Waits for `child`, killing it and failing the test after [`WATCHDOG`].
pub(crate) fn wait_with_watchdog(child: &mut Child) -> ExitStatus {
    let status = super::poll_until(WATCHDOG, Duration::from_millis(5), || {
        child.try_wait().expect("wait")
    });
    status.unwrap_or_else(|| {
        let _ = child.kill();
        panic!("ctxopt-proxy did not exit within {WATCHDOG:?}");
    })
}

/// Reads one `\n`-terminated line from `r` (for interactive tests).
pub(crate) fn read_line(r: &mut impl Read) -> Vec<u8> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while r.read(&mut byte).expect("read") == 1 {
        line.push(byte[0]);
        if byte[0] == b'\n' {
            break;
        }
    }
    line
}

/// Sends `sig` to `pid`.
pub(crate) fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// A store file at `path` that this process holds locked (an exclusive transaction) until the
/// connection is dropped or commits: a proxy given it keeps trying to open it beside the relay.
pub(crate) fn locked_store(path: &Path) -> rusqlite::Connection {
    let holder = rusqlite::Connection::open(path).expect("open the store to lock");
    holder
        .execute_batch("CREATE TABLE held(x); BEGIN EXCLUSIVE; INSERT INTO held VALUES (1);")
        .expect("lock the store");
    holder
}

/// The threads of process `pid` other than its main thread that do not block every one of
/// `signals`, by name (Linux: `/proc/PID/task/*/status`); a thread that ends while it is read
/// is left out. The main thread is left out because a thread waiting for signals in
/// `sigtimedwait` shows them unblocked while it waits.
pub(crate) fn threads_not_blocking(pid: u32, signals: &[i32]) -> Vec<String> {
    let wanted = signals.iter().fold(0u64, |set, sig| set | 1 << (sig - 1));
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the proxy's threads");
    let mut open = Vec::new();
    for task in tasks {
        let task = task.expect("task").path();
        if task.file_name() == Some(pid.to_string().as_ref()) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(task.join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        let blocked = u64::from_str_radix(&field("SigBlk:"), 16).expect("SigBlk");
        if blocked & wanted != wanted {
            open.push(format!("{} (SigBlk {blocked:016x})", field("Name:")));
        }
    }
    open
}

/// The names of the threads of process `pid` (Linux: `/proc/PID/task/*/comm`).
pub(crate) fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the proxy's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .collect()
}

/// Whether `pid` is gone (or a zombie nobody has reaped yet).
pub(crate) fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Whether `pid` was reaped: no `/proc` entry left, not even a zombie's. Only its parent
/// reaps it, so for the server this says the proxy has seen it exit.
pub(crate) fn reaped(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits up to `limit` for `pid` to be gone.
pub(crate) fn wait_gone(pid: u32, limit: Duration) -> bool {
    super::poll_until(limit, Duration::from_millis(10), || {
        process_gone(pid).then_some(())
    })
    .is_some()
}

/// A proxy driven step by step, like a client that waits for answers.
#[derive(Debug)]
pub(crate) struct Session {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::process::ChildStdout,
}

impl Session {
    /// Starts `cmd`.
    pub(crate) fn start(cmd: &ProxyCmd) -> Self {
        let mut child = cmd.spawn();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Session {
            child,
            stdin,
            stdout,
        }
    }

    /// Sends bytes to the proxy's stdin.
    pub(crate) fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to proxy");
        stdin.flush().expect("flush");
    }

    /// Reads exactly `buf.len()` bytes the proxy relays to the client.
    pub(crate) fn read_exact(&mut self, buf: &mut [u8]) {
        self.stdout.read_exact(buf).expect("read from proxy");
    }

    /// Reads the next line the proxy relays to the client.
    pub(crate) fn recv(&mut self) -> Vec<u8> {
        read_line(&mut self.stdout)
    }

    /// Kills the proxy with `SIGKILL` (its server, left without input, ends on its own).
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes stdin and waits for the proxy; returns the rest of its stdout, its status and
    /// its stderr.
    pub(crate) fn close_with_stderr(mut self) -> (Vec<u8>, ExitStatus, String) {
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            drop(self.stdin.take());
            let reader = std::thread::spawn(move || {
                let mut buf = String::new();
                let _ = err.read_to_string(&mut buf);
                buf
            });
            let (rest, status) = self.close();
            stderr = reader.join().unwrap_or_default();
            return (rest, status, stderr);
        }
        let (rest, status) = self.close();
        (rest, status, stderr)
    }

    /// Closes stdin and waits for the proxy; returns the rest of its stdout and its status.
    pub(crate) fn close(mut self) -> (Vec<u8>, ExitStatus) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        let status = wait_with_watchdog(&mut self.child);
        (rest, status)
    }
}
