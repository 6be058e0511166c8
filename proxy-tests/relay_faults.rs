//! The relay against a scripted fault-injecting server: byte-exactness for everything a
//! process can write, exit codes, signals, start failures, stderr, and log-file faults.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use ctxopt::framelog::{Direction, FrameKind, LineEnding};

use crate::support::frames::big_response;
use crate::support::log::{parse_runs, read_log, wire_bytes};
use crate::support::poll_until;
use crate::support::proxy::{
    finish, locked_store, read_line, reaped, signal, thread_names, threads_not_blocking, wait_gone,
    ProxyCmd,
};

/// Every kind of line a peer may write, including the ones the rules forbid.
fn odd_traffic() -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n");
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n");
    t.extend_from_slice(b"\n");
    t.extend_from_slice(b"Server banner: starting up...\n");
    t.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"tools/list\"}\n",
    );
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"req-\\u00e9\\\"x\",\"method\":\"ping\"}\n");
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    t.extend_from_slice(b"[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"method\":\"b\"}]\n");
    t.extend_from_slice(
        b"  {\"jsonrpc\" : \"2.0\", \"method\" : \"x/future\" , \"params\":{}}  \n",
    );
    t.extend_from_slice(b"garbage \xff\xfe\x00 not utf-8\n");
    t.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"_meta\":{}},\"extra\":[1e400]}\n",
    );
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"unterminated\"}");
    t
}

fn expected_kinds() -> Vec<FrameKind> {
    use FrameKind::*;
    vec![
        Request,
        Notification,
        Unparseable,
        Unparseable,
        Request,
        Request,
        Request,
        Batch,
        Notification,
        Unparseable,
        Response,
        Request,
    ]
}

#[test]
fn client_to_server_and_back_is_byte_exact_and_the_log_reproduces_it() {
    let input = odd_traffic();
    let run = ProxyCmd::fixture(&["chunk:7", "echo"]).run(&input);
    assert!(run.status.success(), "{:?} {}", run.status, run.stderr);
    assert_eq!(
        run.stdout, input,
        "client must receive exactly what it sent, echoed"
    );

    let log = read_log(&run.log);
    for dir in [Direction::C2s, Direction::S2c] {
        let frames = log.dir(dir);
        let rebuilt: Vec<u8> = frames.iter().flat_map(|f| wire_bytes(f)).collect();
        assert_eq!(rebuilt, input, "{dir:?} frames rebuild the stream");
        let kinds: Vec<_> = frames.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, expected_kinds(), "{dir:?}");
        assert_eq!(frames[1].line_ending, LineEnding::Crlf);
        assert_eq!(frames[11].line_ending, LineEnding::None);
        assert_eq!(frames[4].id.as_deref(), Some("18446744073709551616"));
        assert_eq!(frames[5].id.as_deref(), Some(r#""req-\u00e9\"x""#));
        assert!(frames[9].raw_b64.is_some() && frames[9].raw.is_none());
        assert_eq!(frames[7].items.as_ref().map(Vec::len), Some(2));
    }
    assert_eq!(log.trailer.frames_relayed.c2s, 12);
    assert_eq!(log.trailer.frames_relayed.s2c, 12);
    assert_eq!(log.trailer.bytes.c2s, input.len() as u64);
    assert_eq!(log.trailer.bytes.s2c, input.len() as u64);
    assert_eq!(log.trailer.frames_unlogged, 0);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}

#[test]
fn server_output_written_in_tiny_chunks_arrives_byte_exact() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("out.bin");
    std::fs::write(&file, odd_traffic()).unwrap();
    let cmd = ProxyCmd::fixture(&["chunk:1".to_string(), format!("emit:{}", file.display())]);
    let run = cmd.run(b"");
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, odd_traffic());
    let log = read_log(&run.log);
    assert_eq!(
        log.dir(Direction::S2c).len(),
        12,
        "no frame split or coalesced"
    );
}

/// A `size`-byte frame written in `chunk`-byte pieces, then a small one, with the injected
/// tools `inject` (`all` streams the big frame too: no handshake or listing is pending).
fn big_frames_arrive_whole(size: usize, chunk: usize, inject: &str) {
    let mut expected = big_response(1, size);
    expected.extend_from_slice(&big_response(2, 100));
    let run = ProxyCmd::fixture(&[
        format!("chunk:{chunk}"),
        format!("big:1:{size}"),
        "big:2:100".to_string(),
    ])
    .option(&["--tokenizer", "chars/4", "--inject", inject])
    .run(b"");
    assert!(run.status.success(), "{}", run.stderr);
    assert!(
        run.stdout == expected,
        "{size}-byte frame not relayed byte-exact"
    );
    let log = read_log(&run.log);
    let sizes: Vec<u64> = log.frames.iter().map(|f| f.bytes).collect();
    assert_eq!(sizes, [size as u64, 100]);
    assert_eq!(log.frames[0].kind, FrameKind::Response);
    assert!(log.frames[0].tokens as usize >= size / 4 - 100);
}

#[test]
fn an_8_mb_frame_in_4_kb_writes_arrives_whole() {
    big_frames_arrive_whole(8 << 20, 4096, "all");
}

#[test]
fn a_64_mb_frame_in_partial_writes_arrives_whole() {
    big_frames_arrive_whole(64 << 20, 65536 - 1, "all");
}

#[test]
fn a_64_mb_frame_in_small_writes_arrives_whole_without_injection() {
    big_frames_arrive_whole(64 << 20, 4093, "none");
}

#[test]
fn a_large_client_frame_reaches_the_server_byte_exact() {
    let mut input = big_response(9, 8 << 20);
    input.extend_from_slice(b"tail without newline");
    let run = ProxyCmd::fixture(&["echo"])
        .option(&["--tokenizer", "chars/4"])
        .run(&input);
    assert!(run.status.success(), "{}", run.stderr);
    assert!(run.stdout == input);
}

#[test]
fn the_servers_exit_code_becomes_the_proxys() {
    for code in [0, 1, 3, 42, 255] {
        let run = ProxyCmd::fixture(&[format!("exit:{code}")]).run(b"");
        assert_eq!(run.status.code(), Some(code));
        let log = read_log(&run.log);
        assert_eq!(log.trailer.exit.code, Some(code));
        assert_eq!(log.trailer.exit.signal, None);
    }
}

#[test]
fn a_server_killed_by_signal_n_makes_the_proxy_exit_128_plus_n() {
    for sig in [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGKILL,
        libc::SIGSEGV,
        libc::SIGTERM,
        libc::SIGUSR1,
    ] {
        let run = ProxyCmd::fixture(&[format!("signal:{sig}")]).run(b"");
        assert_eq!(run.status.code(), Some(128 + sig), "signal {sig}");
        let log = read_log(&run.log);
        assert_eq!(log.trailer.exit.signal, Some(sig));
        assert_eq!(log.trailer.exit.code, None);
    }
}

#[test]
fn a_crash_mid_frame_relays_the_partial_frame_and_reports_the_signal() {
    let run = ProxyCmd::fixture(&["crash-mid-frame"]).run(b"");
    assert_eq!(run.status.code(), Some(128 + libc::SIGKILL));
    assert_eq!(run.stdout, br#"{"jsonrpc":"2.0","id":1,"result":{"conte"#);
    let log = read_log(&run.log);
    assert_eq!(log.frames.len(), 1);
    assert_eq!(log.frames[0].kind, FrameKind::Unparseable);
    assert_eq!(log.frames[0].line_ending, LineEnding::None);
}

/// Starts the proxy around a fixture that announces its pid and hangs; returns the proxy
/// and the server pid.
fn hanging_server(steps: &[&str], grace: &str) -> (std::process::Child, u32, ProxyCmd) {
    let mut all = steps.to_vec();
    all.extend(["pid", "hang"]);
    let cmd = ProxyCmd::fixture(&all).option(&["--grace-period", grace]);
    let mut child = cmd.spawn();
    let pid = pid_in(&read_line(child.stdout.as_mut().unwrap()));
    (child, pid, cmd)
}

/// The signals the proxy forwards to the server.
const FORWARDED: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

#[test]
fn sigint_sigterm_and_sighup_are_forwarded() {
    for sig in FORWARDED {
        let (child, server, cmd) = hanging_server(&[], "5");
        signal(child.id(), sig);
        let (_, _, status) = finish(child);
        assert_eq!(status.code(), Some(128 + sig), "signal {sig}");
        assert!(wait_gone(server, Duration::from_secs(5)));
        let log = read_log(cmd.log_path());
        assert_eq!(log.trailer.exit.signal, Some(sig));
    }
}

/// Every thread of the proxy blocks the signals it forwards, also the threads started before
/// the relay: the store's opening (kept going here by a store another process holds locked)
/// and the OpenTelemetry export. A thread that did not block them would take a signal sent to
/// the proxy and end it at once, unforwarded, with no trailer in its log.
#[test]
fn every_thread_of_the_proxy_blocks_the_forwarded_signals() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let _holder = locked_store(&store);
    let cmd = ProxyCmd::fixture(&["pid", "hang"]).option(&[
        "--store".as_ref(),
        store.as_os_str(),
        "--otlp-endpoint".as_ref(),
        crate::otel::closed_port_url().as_ref(),
    ]);
    let mut child = cmd.spawn();
    let server = pid_in(&read_line(child.stdout.as_mut().unwrap()));
    let threads = thread_names(child.id());
    let open = threads_not_blocking(child.id(), &FORWARDED);
    // The signal before the assertions: a failing test leaves no proxy running.
    signal(child.id(), libc::SIGTERM);
    let (_, stderr, status) = finish(child);
    for name in ["store-open", "otlp-export"] {
        assert!(
            threads.iter().any(|t| t == name),
            "no {name} thread: {threads:?}"
        );
    }
    assert_eq!(open, Vec::<String>::new());
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(wait_gone(server, Duration::from_secs(5)));
    assert_eq!(
        read_log(cmd.log_path()).trailer.exit.signal,
        Some(libc::SIGTERM)
    );
}

#[test]
fn a_server_ignoring_sigterm_is_killed_after_the_grace_period() {
    let (child, server, cmd) = hanging_server(&["ignore:15"], "0.3");
    signal(child.id(), libc::SIGTERM);
    let (_, _, status) = finish(child);
    assert_eq!(status.code(), Some(128 + libc::SIGKILL));
    assert!(wait_gone(server, Duration::from_secs(5)));
    let log = read_log(cmd.log_path());
    assert_eq!(log.trailer.exit.signal, Some(libc::SIGKILL));
}

#[test]
fn a_killed_proxy_leaves_no_orphan() {
    let (mut child, server, _cmd) = hanging_server(&["ignore:15"], "5");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_gone(server, Duration::from_secs(5)),
        "server {server} outlived the proxy"
    );
}

fn pid_in(line: &[u8]) -> u32 {
    let msg: serde_json::Value = serde_json::from_slice(line).expect("pid line");
    msg["params"]["pid"].as_u64().expect("pid") as u32
}

#[test]
fn what_the_server_leaves_in_its_group_is_terminated_when_it_exits() {
    let run = ProxyCmd::fixture(&["sleeper:null", "exit:0"]).run(b"");
    assert!(run.status.success());
    let sleeper = pid_in(&run.stdout);
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "sleeper {sleeper} orphaned"
    );
    assert!(read_log(&run.log).trailer.errors.is_empty());
}

#[test]
fn a_straggler_holding_the_servers_stdout_is_killed_after_the_drain_period() {
    let run = ProxyCmd::fixture(&["ignore:15", "sleeper:inherit", "exit:0"])
        .option(&["--grace-period", "0.2"])
        .run(b"");
    assert!(run.status.success());
    let sleeper = pid_in(&run.stdout);
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "sleeper {sleeper} orphaned"
    );
    let log = read_log(&run.log);
    assert!(
        log.trailer
            .errors
            .iter()
            .any(|e| e.contains("stdout stayed open")),
        "{:?}",
        log.trailer.errors
    );
}

/// A signal that reaches the proxy after the server exited, while what the server left in its
/// group still holds its stdout, is forwarded to that group when it comes and named in the
/// trailer; it cannot change how the server ended, so the exit status stays the server's.
#[test]
fn a_signal_after_the_server_exited_reaches_its_group_and_is_named_in_the_trailer() {
    // The straggler inherits the ignored SIGTERM: it holds the server's stdout through the
    // proxy's own SIGTERM and the whole drain period. SIGINT ends it, whatever the tests
    // inherited.
    let cmd = ProxyCmd::fixture(&["default:2", "ignore:15", "sleeper:inherit", "pid", "exit:3"])
        .option(&["--grace-period", "60"]);
    let mut child = cmd.spawn();
    let out = child.stdout.as_mut().unwrap();
    let sleeper = pid_in(&read_line(out));
    let server = pid_in(&read_line(out));
    let seen = poll_until(Duration::from_secs(10), Duration::from_millis(5), || {
        reaped(server).then_some(())
    });
    signal(child.id(), libc::SIGINT);
    let forwarded = wait_gone(sleeper, Duration::from_secs(10));
    // Before the assertions: a failing test leaves neither the straggler nor the proxy.
    signal(sleeper, libc::SIGKILL);
    let (_, stderr, status) = finish(child);
    assert!(seen.is_some(), "the proxy never reaped server {server}");
    assert!(forwarded, "the straggler never got the SIGINT: {stderr}");
    assert_eq!(status.code(), Some(3), "{stderr}");
    let log = read_log(cmd.log_path());
    assert_eq!(log.trailer.exit.code, Some(3));
    assert!(
        log.trailer.errors.iter().any(|e| e.starts_with(&format!(
            "signal {} after the server had exited",
            libc::SIGINT
        ))),
        "{:?}",
        log.trailer.errors
    );
}

#[test]
fn client_eof_closes_server_stdin_and_the_proxy_exits_after_the_server() {
    // `respond` runs until its stdin closes, then the fixture writes its pid and exits 0.
    let run = ProxyCmd::fixture(&["respond", "pid"])
        .run(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[1].contains("fixture/pid"),
        "drained after stdin closed"
    );
}

#[test]
fn a_vanished_client_closes_the_servers_stdin_and_the_trailer_says_so() {
    let cmd = ProxyCmd::fixture(&["echo"]);
    let mut child = cmd.spawn();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The echo makes the server write; that write to the gone client fails.
    let _ = stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
    let _ = stdin.flush();
    let status = crate::support::proxy::wait_with_watchdog(&mut child);
    drop(stdin);
    assert!(status.success(), "server ended normally after stdin closed");
    let log = read_log(cmd.log_path());
    assert!(
        log.trailer
            .errors
            .iter()
            .any(|e| e.starts_with("s2c: write failed")),
        "{:?}",
        log.trailer.errors
    );
    assert_eq!(log.trailer.frames_relayed.s2c, 0);
}

#[test]
fn a_missing_command_exits_127_and_a_non_executable_one_126() {
    let run = ProxyCmd::server(["/nonexistent/mcp-server"]).run(b"");
    assert_eq!(run.status.code(), Some(127));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("/nonexistent/mcp-server"));
    let log = read_log(&run.log);
    assert_eq!(log.header.server_pid, None);
    assert_eq!(log.trailer.errors.len(), 1);

    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = ProxyCmd::server([&script]).run(b"");
    assert_eq!(run.status.code(), Some(126));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("not-executable.sh"));
}

#[test]
fn server_stderr_passes_through_unchanged() {
    let run = ProxyCmd::fixture(&["stderr:hello from the server ✓", "stderr:second line"]).run(b"");
    assert!(run.status.success());
    assert_eq!(run.stderr, "hello from the server ✓\nsecond line\n");
    assert!(run.stdout.is_empty());
}

#[test]
fn the_log_is_created_0600_and_appended_to() {
    let scratch = tempfile::tempdir().unwrap();
    let log_path = scratch.path().join("shared.jsonl");
    let run1 = ProxyCmd::fixture(&["echo"])
        .log_to(&log_path)
        .run(b"{\"jsonrpc\":\"2.0\",\"method\":\"one\"}\n");
    assert!(run1.status.success());
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let after_first = std::fs::read(&log_path).unwrap();

    let run2 = ProxyCmd::fixture(&["echo"])
        .log_to(&log_path)
        .run(b"{\"jsonrpc\":\"2.0\",\"method\":\"two\"}\n");
    assert!(run2.status.success());
    let text = std::fs::read(&log_path).unwrap();
    assert!(
        text.starts_with(&after_first),
        "first run's lines untouched"
    );
    let runs = parse_runs(std::str::from_utf8(&text).unwrap());
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].frames[0].method.as_deref(), Some("two"));
}

#[test]
fn an_unopenable_log_does_not_stop_the_relay() {
    let input = odd_traffic();
    let run = ProxyCmd::fixture(&["echo"])
        .log_to(std::path::Path::new("/nonexistent-dir/frames.jsonl"))
        .run(&input);
    assert!(run.status.success());
    assert_eq!(run.stdout, input);
    let lines: Vec<_> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("/nonexistent-dir/frames.jsonl"));
}

#[test]
fn an_unwritable_log_does_not_stop_the_relay() {
    let input = odd_traffic();
    let run = ProxyCmd::fixture(&["echo"])
        .log_to(std::path::Path::new("/dev/full"))
        .run(&input);
    assert!(run.status.success());
    assert_eq!(run.stdout, input);
    let lines: Vec<_> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "said once: {}", run.stderr);
    assert!(lines[0].contains("cannot write frame log /dev/full"));
}

#[test]
fn the_default_log_goes_to_the_state_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let state = scratch.path().join("state");
    let mut child = std::process::Command::new(crate::support::proxy::PROXY)
        .env("XDG_STATE_HOME", &state)
        .args(["--name", "my server", "--"])
        .arg(crate::support::proxy::fixture_server())
        .arg("echo")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let dir = state.join("ctxopt/logs");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1);
    let name = &names[0];
    let pid = child.id();
    let (stamp, rest) = name.split_at(16);
    assert_eq!(rest, format!("-my-server-{pid}.jsonl"));
    let shape: String = stamp
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "99999999T999999Z");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    read_log(&dir.join(name));
}

#[test]
fn a_nonblocking_stdout_from_the_client_is_waited_on_not_dropped() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let (mut reader, writer) = std::io::pipe().unwrap();
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fd = writer.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
    }
    let scratch = tempfile::tempdir().unwrap();
    let log_path = scratch.path().join("frames.jsonl");
    let mut child = std::process::Command::new(crate::support::proxy::PROXY)
        .arg("--log")
        .arg(&log_path)
        .args(["--store", ":memory:", "--tokenizer", "chars/4", "--"])
        .arg(crate::support::proxy::fixture_server())
        .arg("big:1:4194304")
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .spawn()
        .unwrap();
    // Read only once the pipe reports full, so the proxy's writes meet a full pipe first.
    // SAFETY: fcntl on a descriptor we own.
    let capacity = unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_GETPIPE_SZ) };
    assert!(capacity > 0);
    let start = std::time::Instant::now();
    loop {
        let mut waiting: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer.
        let read = unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &mut waiting) };
        assert_eq!(read, 0);
        if waiting >= capacity {
            break;
        }
        assert!(
            start.elapsed() < crate::support::proxy::WATCHDOG,
            "the pipe never filled"
        );
        std::thread::yield_now();
    }
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(got == big_response(1, 4194304), "relayed byte-exact");
    let log = read_log(&log_path);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}
