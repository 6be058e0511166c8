//! The CLI output layer: every `ctxopt` command that writes a result takes `--output FILE`
//! (written whole via a temporary sibling, mode 0600) or writes stdout, and a stdout whose
//! reader has gone ends the command quietly with its usual exit code.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// Each command that writes a result, with arguments (without `--output`), and its exit
/// code on these inputs.
fn commands() -> Vec<(&'static str, Vec<PathBuf>, i32)> {
    let s = |t: &str| PathBuf::from(t);
    vec![
        (
            "report",
            vec![
                s("report"),
                fixture("frame-logs/filesystem-anomalies.jsonl"),
            ],
            0,
        ),
        (
            "report --format html",
            vec![
                s("report"),
                s("--format"),
                s("html"),
                fixture("frame-logs/everything-stateless.jsonl"),
            ],
            0,
        ),
        (
            "audit",
            vec![
                s("audit"),
                s("--capture"),
                fixture("real-world/tier1-tools-list/github-wire.jsonl"),
            ],
            0,
        ),
        (
            "audit --log",
            vec![
                s("audit"),
                s("--format"),
                s("json"),
                s("--log"),
                fixture("frame-logs/gap-trial.jsonl"),
            ],
            0,
        ),
        (
            "gap",
            vec![
                s("gap"),
                s("--log"),
                fixture("frame-logs/gap-trial.jsonl"),
                s("--client"),
                fixture("gap/gemini-gap3.json"),
            ],
            1,
        ),
        (
            "import-swe",
            vec![
                s("import-swe"),
                fixture("real-world/swe-agent-trajectories/marshmallow-code__marshmallow-1343.traj.json"),
            ],
            0,
        ),
    ]
}

fn ctxopt(args: &[PathBuf]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxopt"));
    cmd.args(args);
    cmd
}

/// A pipe whose read end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two-element array it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just opened by pipe and are owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

#[test]
fn output_files_hold_exactly_what_stdout_gets_and_are_private() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args, code) in commands() {
        let stdout: Output = ctxopt(&args).output().unwrap();
        assert_eq!(stdout.status.code(), Some(code), "{name}");
        assert!(!stdout.stdout.is_empty(), "{name}: nothing on stdout");
        // An existing, world-readable file is replaced whole and made private.
        let file = dir.path().join("result.out");
        std::fs::write(&file, b"old content that is longer than nothing").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let run = ctxopt(&args).arg("--output").arg(&file).output().unwrap();
        assert_eq!(run.status.code(), Some(code), "{name}");
        assert!(
            run.stdout.is_empty(),
            "{name}: stdout used despite --output"
        );
        let written = std::fs::read(&file).unwrap();
        assert_eq!(written, stdout.stdout, "{name}");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left,
            [std::ffi::OsString::from("result.out")],
            "{name}: temporary files left"
        );
    }
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_its_exit_code() {
    for (name, args, code) in commands() {
        let run = ctxopt(&args)
            .stdout(Stdio::from(closed_pipe()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(code), "{name}: {stderr}");
        assert!(stderr.is_empty(), "{name}: {stderr}");
    }
}

#[test]
fn an_output_path_that_cannot_be_written_is_an_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no/such/dir/report.txt");
    let args = vec![
        PathBuf::from("report"),
        fixture("frame-logs/filesystem-anomalies.jsonl"),
    ];
    let run = ctxopt(&args).arg("--output").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("creating"), "{stderr}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
