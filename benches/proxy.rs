//! The proxy benchmark: the same work direct and through `ctxopt-proxy`, in one run.
//!
//! `cargo bench --bench proxy` measures:
//! - round trips of 10,000 sequential small `tools/call`s against a minimal Python responder
//!   (`proxy-tests/peers/py_responder.py`), a minimal Rust responder (this binary, re-spawned),
//!   a minimal Node.js responder (`node_responder.mjs`) and
//!   `@modelcontextprotocol/server-everything` (p50, p99, added µs, ratio);
//! - relaying 1 MB and 16 MB results (throughput of the median call, ratio proxied/direct);
//! - the proxy's idle RSS and its peak RSS (VmHWM) while relaying one 64 MB frame;
//! - `--compact-results 10000`: small round trips (results under the limit) and 16 MB
//!   results (the time until the client has the compacted answer), each beside the same
//!   measurement without it;
//! - remote servers: a local Streamable HTTP server reached directly, through
//!   `ctxopt-proxy --url` and through `mcp-remote` (round trips, CPU, peak RSS, 16 MB results
//!   streamed as server-sent events; `benches/proxy/remote.rs`).
//!
//! Direct and proxied sessions run side by side and take turns in blocks, so both see the
//! same machine load. The proxy logs every frame to a temporary file, as it does in use.
//! Environment: `CTXOPT_BENCH_CALLS` (default 10000) sets the number of small calls;
//! `CTXOPT_BENCH_BASELINE=<path to another ctxopt-proxy>` adds a row per round-trip and
//! throughput measurement for that proxy, run side by side with the others (an A/B
//! comparison of two builds in one run); `CTXOPT_BENCH_SECTIONS` picks sections (a comma
//! list of `round-trips`, `throughput`, `memory`, `compaction`, `remote`; default all);
//! `CTXOPT_BENCH_SERVERS` picks round-trip servers (a comma list of `python`,
//! `python-no-log`, `rust`, `node`, `everything`; default all); `CTXOPT_BENCH_REMOTE_SERVER`
//! the remote section's server (`python` or `everything`). Results are printed as Markdown;
//! `docs/benchmarks.md` records a run.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

#[path = "proxy/remote.rs"]
mod remote;

/// Set in the environment of a re-spawned copy of this binary that acts as the Rust responder.
const ROLE_VAR: &str = "CTXOPT_BENCH_ROLE";
const MB: usize = 1 << 20;
/// The role of a re-spawned copy that relays to the command in its arguments (the bare relay).
const ROLE_RELAY: &str = "relay";
/// The role of a re-spawned copy that answers requests.
const ROLE_RESPONDER: &str = "responder";

fn main() -> Result<()> {
    match std::env::var(ROLE_VAR).as_deref() {
        Ok(ROLE_RELAY) => return bare_relay(),
        Ok(_) => return rust_responder(),
        Err(_) => {}
    }
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "proxy benchmark: run it with `cargo bench --bench proxy` (skipped under cargo test)"
        );
        return Ok(());
    }
    let calls: usize = std::env::var("CTXOPT_BENCH_CALLS")
        .ok()
        .map(|v| v.parse())
        .transpose()
        .context("CTXOPT_BENCH_CALLS")?
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir()?;
    let baseline = std::env::var_os("CTXOPT_BENCH_BASELINE").map(PathBuf::from);
    let servers = std::env::var("CTXOPT_BENCH_SERVERS").unwrap_or_else(|_| {
        "python,python-no-log,rust,rust-otlp-down,rust-otlp-slow,node,everything".into()
    });
    let bench = Bench {
        tmp: tmp.path(),
        baseline,
        servers: servers.split(',').map(|s| s.trim().to_string()).collect(),
    };
    println!("# Proxy benchmark\n");
    println!(
        "{} cores, load average at start {}\n",
        std::thread::available_parallelism()?,
        std::fs::read_to_string("/proc/loadavg")?.trim()
    );

    let sections = std::env::var("CTXOPT_BENCH_SECTIONS")
        .unwrap_or_else(|_| "round-trips,throughput,memory,compaction,remote".into());
    let section = |name: &str| sections.split(',').any(|s| s.trim() == name);
    if section("round-trips") {
        bench.round_trip_rows(calls)?;
    }
    if section("throughput") {
        bench.throughput_rows()?;
    }
    if section("memory") {
        println!("\n## Memory of the proxy process\n");
        bench.memory(64 * MB)?;
    }
    if section("compaction") {
        bench.compaction_rows(calls)?;
    }
    if section("remote") {
        remote::rows(tmp.path(), bench.baseline.as_deref(), calls)?;
    }
    Ok(())
}

impl Bench<'_> {
    /// Whether the round trips against `name` are to be measured.
    fn server(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s == name)
    }

    fn round_trip_rows(&self, calls: usize) -> Result<()> {
        let bench = self;
        println!("## Round trips: {calls} sequential small tools/call\n");
        println!("| server | direct p50 | direct p99 | proxied p50 | proxied p99 | added p50 | added p99 | ratio p50 | proxy CPU per call |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        let python = vec![
            OsString::from("python3"),
            peers_dir().join("py_responder.py").into(),
        ];
        let node = vec![
            OsString::from("node"),
            peers_dir().join("node_responder.mjs").into(),
        ];
        let everything =
            peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let no_log: &[&str] = &["--no-log"];
        // OpenTelemetry export to a collector that is down (nothing listens) and to one that
        // is slow (accepts and never answers): the round trip must not change.
        let down = format!("http://{}", closed_port()?);
        let slow = format!("http://{}", silent_collector()?);
        let otlp_down: &[&str] = &["--otlp-endpoint", &down];
        let otlp_slow: &[&str] = &["--otlp-endpoint", &slow];
        let servers = [
            (
                "python",
                "minimal Python responder",
                python.clone(),
                &[][..],
            ),
            ("python-no-log", "minimal Python responder", python, no_log),
            (
                "rust",
                "minimal Rust responder",
                rust_responder_command()?,
                &[],
            ),
            (
                "rust-otlp-down",
                "minimal Rust responder, collector down",
                rust_responder_command()?,
                otlp_down,
            ),
            (
                "rust-otlp-slow",
                "minimal Rust responder, collector slow",
                rust_responder_command()?,
                otlp_slow,
            ),
            ("node", "minimal Node.js responder", node, &[]),
            (
                "everything",
                "server-everything (echo)",
                vec!["node".into(), everything.clone().into(), "stdio".into()],
                &[],
            ),
        ];
        for (name, label, command, options) in servers {
            if !bench.server(name) {
                continue;
            }
            if name == "everything" && !everything.is_file() {
                println!("| server-everything | not installed: run ./proxy-tests/run-all --install-only | | | | | | | |");
                continue;
            }
            bench.round_trips(label, options, &command, calls, Pass::Proxies)?;
            if options.is_empty() {
                // The bare relay in a pass of its own: sessions that take turns disturb each other.
                bench.round_trips(label, options, &command, calls, Pass::Bare)?;
            }
        }
        Ok(())
    }

    /// The cost of `--compact-results` where it changes nothing (small results) and where
    /// it compacts (16 MB results), each row beside the one without it.
    fn compaction_rows(&self, calls: usize) -> Result<()> {
        let rust = rust_responder_command()?;
        let compact: &[&str] = &["--compact-results", "10000"];
        println!("\n## Compaction: `--compact-results 10000` (minimal Rust responder)\n");
        println!("| server | direct p50 | direct p99 | proxied p50 | proxied p99 | added p50 | added p99 | ratio p50 | proxy CPU per call |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for options in [&[][..], compact] {
            self.round_trips(
                "minimal Rust responder",
                options,
                &rust,
                calls,
                Pass::Proxies,
            )?;
        }
        println!("\n| result size | proxy options | calls | direct MB/s | proxied MB/s | ratio | proxy CPU per call |");
        println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: |");
        for options in [&[][..], compact] {
            self.throughput(16 * MB, None, 16, options, Pass::Proxies)?;
            self.throughput(16 * MB, Some(100), 16, options, Pass::Proxies)?;
        }
        Ok(())
    }

    fn throughput_rows(&self) -> Result<()> {
        let bench = self;
        println!("\n## Throughput: relaying large results (minimal Rust responder)\n");
        println!("| result size | proxy options | calls | direct MB/s | proxied MB/s | ratio | proxy CPU per call |");
        println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: |");
        for (size, calls) in [(MB, 128), (16 * MB, 32)] {
            bench.throughput(size, None, calls, &[], Pass::Proxies)?;
            bench.throughput(size, None, calls, &[], Pass::Bare)?;
        }
        // The same relay without the tap's work, to tell relay cost from accounting cost.
        bench.throughput(
            16 * MB,
            None,
            32,
            &["--tokenizer", "chars/4"],
            Pass::Proxies,
        )?;
        bench.throughput(16 * MB, None, 32, &["--no-log"], Pass::Proxies)?;
        Ok(())
    }
}

/// An address on 127.0.0.1 where nothing listens (bound, then released).
fn closed_port() -> Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// A collector that accepts connections and never reads or answers: each export request
/// waits out its timeout.
fn silent_collector() -> Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    Ok(addr)
}

fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("proxy-tests/peers")
}

fn rust_responder_command() -> Result<Vec<OsString>> {
    Ok(vec![std::env::current_exe()?.into_os_string()])
}

/// A running stdio peer that the benchmark talks to.
struct Session {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    next_id: u64,
}

impl Session {
    /// Starts `command`; a re-spawned copy of this binary in it acts as `role`.
    fn spawn(command: &[OsString], role: &str) -> Result<Session> {
        Session::spawn_with(command, role, |_| {})
    }

    /// [`Session::spawn`], the command changed by `configure` first (environment, stderr).
    fn spawn_with(
        command: &[OsString],
        role: &str,
        configure: impl FnOnce(&mut Command),
    ) -> Result<Session> {
        let mut child = Command::new(&command[0]);
        child
            .args(&command[1..])
            .env(ROLE_VAR, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        configure(&mut child);
        let mut child = child
            .spawn()
            .with_context(|| format!("start {command:?}"))?;
        let stdin = BufWriter::new(child.stdin.take().context("stdin")?);
        let stdout = BufReader::with_capacity(MB, child.stdout.take().context("stdout")?);
        let mut session = Session {
            child,
            stdin,
            stdout,
            line: Vec::with_capacity(MB),
            next_id: 0,
        };
        session.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ctxopt-bench","version":"1"}}"#,
        )?;
        session.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(session)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.stdin.write_all(frame)?;
        self.stdin.write_all(b"\n")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and reads lines until its response; returns the response's size.
    fn request(&mut self, method: &str, params: &str) -> Result<usize> {
        self.next_id += 1;
        let id = self.next_id;
        let frame =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        self.send(frame.as_bytes())?;
        let marker = format!(r#""id":{id},"#);
        let marker_end = format!(r#""id":{id}}}"#);
        loop {
            self.line.clear();
            if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
                bail!("the peer closed its stdout while {method} {id} was pending");
            }
            // Responses carry the id near the front or the end; notifications have none.
            let head = &self.line[..self.line.len().min(256)];
            let tail = &self.line[self.line.len().saturating_sub(256)..];
            let has = |hay: &[u8], needle: &str| {
                hay.windows(needle.len()).any(|w| w == needle.as_bytes())
            };
            if has(head, &marker) || has(tail, &marker) || has(tail, &marker_end) {
                return Ok(self.line.len());
            }
        }
    }

    fn call_tool(&mut self, name: &str, arguments: &str) -> Result<usize> {
        self.request(
            "tools/call",
            &format!(r#"{{"name":"{name}","arguments":{arguments}}}"#),
        )
    }

    fn finish(mut self) -> Result<()> {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

struct Bench<'a> {
    tmp: &'a Path,
    /// Another proxy binary measured side by side with this build's.
    baseline: Option<PathBuf>,
    /// The round-trip servers to measure (`CTXOPT_BENCH_SERVERS`).
    servers: Vec<String>,
}

/// Which relays a pass of the benchmark measures against the direct session.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// This build's proxy, and the baseline's when there is one.
    Proxies,
    /// The bare relay (a reference: two threads copying each way, nothing else), in a pass
    /// of its own so that it does not take turns with the proxy.
    Bare,
}

/// A proxied session being measured, and what its rows are called.
struct Proxied {
    suffix: &'static str,
    session: Session,
    times: Vec<Duration>,
}

impl Bench<'_> {
    /// `<proxy> --log <tmp>/<name>.jsonl --store <tmp>/<name>.db [OPTIONS] -- <server>` (no `--log`
    /// with `--no-log`).
    fn proxied(
        &self,
        proxy: &Path,
        name: &str,
        options: &[&str],
        server: &[OsString],
    ) -> Vec<OsString> {
        let mut command: Vec<OsString> = vec![proxy.into()];
        if !options.contains(&"--no-log") {
            command.extend([
                "--log".into(),
                self.tmp.join(format!("{name}.jsonl")).into(),
            ]);
        }
        // The session store on disk, as in use (the default location is the user's state
        // directory, which a benchmark must not fill).
        command.extend(["--store".into(), self.tmp.join(format!("{name}.db")).into()]);
        command.extend(options.iter().map(OsString::from));
        command.push("--".into());
        command.extend(server.iter().cloned());
        command
    }

    /// This build's proxy around `server`, and the baseline's when there is one; or, for
    /// `Pass::Bare`, the bare relay alone.
    fn proxied_sessions(
        &self,
        name: &str,
        options: &[&str],
        server: &[OsString],
        pass: Pass,
    ) -> Result<Vec<Proxied>> {
        if pass == Pass::Bare {
            let mut command = rust_responder_command()?;
            command.extend(server.iter().cloned());
            return Ok(vec![Proxied {
                suffix: ", bare relay",
                session: Session::spawn(&command, ROLE_RELAY)?,
                times: Vec::new(),
            }]);
        }
        let this = Path::new(env!("CARGO_BIN_EXE_ctxopt-proxy"));
        let mut proxies = vec![("", this)];
        if let Some(baseline) = &self.baseline {
            proxies.push((", baseline proxy", baseline.as_path()));
        }
        proxies
            .into_iter()
            .enumerate()
            .map(|(i, (suffix, proxy))| {
                let command = self.proxied(proxy, &format!("{name}-{i}"), options, server);
                Ok(Proxied {
                    suffix,
                    session: Session::spawn(&command, ROLE_RESPONDER)?,
                    times: Vec::new(),
                })
            })
            .collect()
    }

    fn round_trips(
        &self,
        label: &str,
        options: &[&str],
        server: &[OsString],
        calls: usize,
        pass: Pass,
    ) -> Result<()> {
        let mut direct = Session::spawn(server, ROLE_RESPONDER)?;
        let mut proxied = self.proxied_sessions("round-trips", options, server, pass)?;
        let (echo, args) = if label.starts_with("server-everything") {
            ("echo", r#"{"message":"hi"}"#)
        } else {
            ("ping-tool", "{}")
        };
        for session in
            std::iter::once(&mut direct).chain(proxied.iter_mut().map(|p| &mut p.session))
        {
            for _ in 0..200 {
                session.call_tool(echo, args)?; // warm-up: JIT, page cache, tokenizer load
            }
        }
        let cpu_before = proxied
            .iter()
            .map(|p| cpu_seconds(p.session.pid()))
            .collect::<Result<Vec<_>>>()?;
        let mut d = Vec::with_capacity(calls);
        let block = 500.min(calls);
        while d.len() < calls {
            let n = block.min(calls - d.len());
            let sessions = std::iter::once((&mut direct, &mut d))
                .chain(proxied.iter_mut().map(|p| (&mut p.session, &mut p.times)));
            for (session, times) in sessions {
                for _ in 0..n {
                    let start = Instant::now();
                    session.call_tool(echo, args)?;
                    times.push(start.elapsed());
                }
            }
        }
        let cpu_after = proxied
            .iter()
            .map(|p| cpu_seconds(p.session.pid()))
            .collect::<Result<Vec<_>>>()?;
        direct.finish()?;
        let d = Percentiles::of(d);
        let label = match options {
            [] => label.to_string(),
            _ => format!("{label}, proxy `{}`", options.join(" ")),
        };
        for (i, run) in proxied.into_iter().enumerate() {
            run.session.finish()?;
            let cpu_per_call = (cpu_after[i] - cpu_before[i]) / calls as f64 * 1e6;
            let p = Percentiles::of(run.times);
            println!(
                "| {label}{} | {} | {} | {} | {} | {:+.1} µs | {:+.1} µs | {:.3} | {} |",
                run.suffix,
                us(d.p50),
                us(d.p99),
                us(p.p50),
                us(p.p99),
                p.p50 - d.p50,
                p.p99 - d.p99,
                p.p50 / d.p50,
                us(cpu_per_call)
            );
        }
        Ok(())
    }

    /// Relays `calls` results of `size` bytes, one line, or lines of `line` bytes.
    fn throughput(
        &self,
        size: usize,
        line: Option<usize>,
        calls: usize,
        options: &[&str],
        pass: Pass,
    ) -> Result<()> {
        let server = rust_responder_command()?;
        let mut direct = Session::spawn(&server, ROLE_RESPONDER)?;
        let mut proxied = self.proxied_sessions(
            &format!("throughput-{size}-{line:?}"),
            options,
            &server,
            pass,
        )?;
        let args = match line {
            Some(width) => format!(r#"{{"bytes":{size},"line":{width}}}"#),
            None => format!(r#"{{"bytes":{size}}}"#),
        };
        let shape = line.map_or(String::new(), |w| format!(" in {w}-byte lines"));
        // Per-call times, alternating direct and proxied; the median call sets the rate, so a
        // stall caused by other work on the machine does not. After each proxied call the
        // proxy is left to finish its accounting (logging, counting, storing) before the next
        // call starts, so each call measures the relay alone and no call pays for another's
        // accounting; the proxy's CPU per call (accounting included) is its own column.
        let mut d = Vec::with_capacity(calls);
        let mut cpu = vec![0.0; proxied.len()];
        let mut frame = 0;
        for _ in 0..calls {
            let start = Instant::now();
            frame = direct.call_tool("big", &args)?;
            d.push(start.elapsed());
            for (run, cpu) in proxied.iter_mut().zip(&mut cpu) {
                let pid = run.session.pid();
                let before = cpu_seconds(pid)?;
                let start = Instant::now();
                run.session.call_tool("big", &args)?;
                run.times.push(start.elapsed());
                settle(pid)?;
                *cpu += cpu_seconds(pid)? - before;
            }
        }
        direct.finish()?;
        let rate = |times: &[Duration]| {
            let mut t = times.to_vec();
            t.sort();
            frame as f64 / MB as f64 / t[t.len() / 2].as_secs_f64()
        };
        let options = match options {
            [] => "default".to_string(),
            _ => format!("`{}`", options.join(" ")),
        };
        for (run, cpu) in proxied.into_iter().zip(cpu) {
            run.session.finish()?;
            println!(
                "| {} MB{shape} | {options}{} | {calls} | {:.0} | {:.0} | {:.3} | {:.0} ms |",
                size / MB,
                run.suffix,
                rate(&d),
                rate(&run.times),
                rate(&run.times) / rate(&d),
                cpu / calls as f64 * 1e3,
            );
        }
        Ok(())
    }

    fn memory(&self, size: usize) -> Result<()> {
        println!("| measure | value |");
        println!("| --- | ---: |");
        for options in [&[][..], &["--tokenizer", "chars/4"][..]] {
            let mut session = Session::spawn(
                &self.proxied(
                    Path::new(env!("CARGO_BIN_EXE_ctxopt-proxy")),
                    "idle",
                    options,
                    &rust_responder_command()?,
                ),
                ROLE_RESPONDER,
            )?;
            for _ in 0..100 {
                session.call_tool("ping-tool", "{}")?;
            }
            std::thread::sleep(Duration::from_millis(500));
            let idle = proc_status(session.pid())?;
            session.finish()?;
            let with = match options {
                [] => "default o200k_base".to_string(),
                _ => format!("`{}`", options.join(" ")),
            };
            println!(
                "| idle RSS, {with} (VmRSS after 100 small calls) | {:.1} MB |",
                idle["VmRSS"]
            );
        }

        let this = Path::new(env!("CARGO_BIN_EXE_ctxopt-proxy"));
        let mut proxies = vec![("", this)];
        if let Some(baseline) = &self.baseline {
            proxies.push((", baseline proxy", baseline.as_path()));
        }
        for (i, (suffix, proxy)) in proxies.into_iter().enumerate() {
            let name = format!("memory-{i}");
            let log = self.tmp.join(format!("{name}.jsonl"));
            let mut session = Session::spawn(
                &self.proxied(proxy, &name, &[], &rust_responder_command()?),
                ROLE_RESPONDER,
            )?;
            let frame = session.call_tool("big", &format!(r#"{{"bytes":{size}}}"#))?;
            // The tap may still be counting and logging the big frame: wait until the log
            // holds it and stops growing, then read the high-water mark.
            let deadline = Instant::now() + Duration::from_secs(180);
            let mut last = 0;
            loop {
                std::thread::sleep(Duration::from_millis(300));
                let len = std::fs::metadata(&log)?.len();
                if (len as usize > size && len == last) || Instant::now() > deadline {
                    break;
                }
                last = len;
            }
            // Then the tap ingests the result into the store: wait for the high-water mark to
            // settle too.
            let mut peak = proc_status(session.pid())?["VmHWM"];
            loop {
                std::thread::sleep(Duration::from_millis(1000));
                let now = proc_status(session.pid())?["VmHWM"];
                if now == peak || Instant::now() > deadline {
                    break;
                }
                peak = now;
            }
            session.finish()?;
            let frame_mb = frame as f64 / MB as f64;
            println!("| largest frame relayed{suffix} | {frame_mb:.1} MB |");
            println!("| peak RSS (VmHWM) after relaying and logging it{suffix} | {peak:.1} MB |");
            println!(
                "| peak RSS / largest frame{suffix} | {:.2} |",
                peak / frame_mb
            );
        }
        Ok(())
    }
}

/// The CPU time a process has used so far (user and system, all threads), in seconds,
/// from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at the state, field 3;
    // utime and stime are fields 14 and 15, in clock ticks.
    let (_, rest) = stat.rsplit_once(')').context("/proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok(ticks / per_second)
}

/// Waits until a process has stopped using CPU (its CPU time unchanged across three
/// clock ticks in a row), at most 30 s.
fn settle(pid: u32) -> Result<()> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let tick = Duration::from_secs_f64(1.0 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut last, mut still) = (cpu_seconds(pid)?, 0);
    while still < 3 && Instant::now() < deadline {
        std::thread::sleep(tick);
        let now = cpu_seconds(pid)?;
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    Ok(())
}

/// `VmRSS`, `VmHWM` … of a process, in MB.
fn proc_status(pid: u32) -> Result<HashMap<String, f64>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            let kb: f64 = value.trim().strip_suffix(" kB")?.parse().ok()?;
            Some((key.to_string(), kb / 1024.0))
        })
        .collect())
}

struct Percentiles {
    p50: f64,
    p99: f64,
}

impl Percentiles {
    /// Percentiles in microseconds.
    fn of(mut times: Vec<Duration>) -> Percentiles {
        times.sort();
        let at = |q: f64| {
            times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e6
        };
        Percentiles {
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

fn us(value: f64) -> String {
    format!("{value:.1} µs")
}

/// The reference relay: a bare relay to the command in this process's arguments, two threads
/// copying each way through a 64 KiB buffer (read, then write what was read), nothing else.
fn bare_relay() -> Result<()> {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut child = Command::new(&args[0])
        .args(&args[1..])
        .env(ROLE_VAR, ROLE_RESPONDER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("start {args:?}"))?;
    let mut to_server = child.stdin.take().context("stdin")?;
    let mut from_server = child.stdout.take().context("stdout")?;
    let copy = |from: &mut dyn std::io::Read, to: &mut dyn Write| -> std::io::Result<()> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf)? {
                0 => return Ok(()),
                n => to.write_all(&buf[..n])?,
            }
        }
    };
    // Unbuffered ends: the standard handles' buffers would add copies.
    let mut stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let mut stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    std::thread::spawn(move || {
        let _ = copy(&mut stdin, &mut to_server);
    });
    copy(&mut from_server, &mut stdout)?;
    child.wait()?;
    Ok(())
}

/// The minimal Rust responder: answers each request at once; `tools/call` with
/// `{"bytes": N}` answers with a text of N bytes (built once per size), one line, or lines
/// of W bytes with `"line": W`.
fn rust_responder() -> Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = BufWriter::with_capacity(MB, std::io::stdout().lock());
    let mut texts: HashMap<(usize, Option<usize>), String> = HashMap::new();
    for line in stdin.lines() {
        let message: serde_json::Value = serde_json::from_str(&line?)?;
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue;
        };
        let arguments = &message["params"]["arguments"];
        let line = arguments["line"].as_u64().map(|w| w.max(3) as usize);
        let result = match (method, arguments["bytes"].as_u64()) {
            ("initialize", _) => serde_json::json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "rust-responder", "version": "1"}
            })
            .to_string(),
            ("tools/call", Some(bytes)) => {
                let bytes = bytes as usize;
                let text = texts.entry((bytes, line)).or_insert_with(|| match line {
                    // Each line: W - 2 bytes, then the two bytes of the JSON escape `\n`.
                    Some(w) => ("x".repeat(w - 2) + "\\n").repeat(bytes / w),
                    None => "x".repeat(bytes),
                });
                format!(r#"{{"content":[{{"type":"text","text":"{text}"}}]}}"#)
            }
            _ => r#"{"content":[{"type":"text","text":"ok"}]}"#.to_string(),
        };
        writeln!(stdout, r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)?;
        stdout.flush()?;
    }
    Ok(())
}
