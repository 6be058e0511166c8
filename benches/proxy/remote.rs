//! The `remote` section of the proxy benchmark: one local Streamable HTTP server, reached in the
//! same run by a client talking HTTP to it directly, through `ctxopt-proxy --url` and through
//! `mcp-remote` (npm, pinned in `proxy-tests/peers`), the two proxies talking stdio to the
//! client.
//!
//! - Round trips: small `tools/call`s taking turns in blocks (as the stdio round trips do):
//!   p50 and p99 of each path, what each proxy adds to the direct call, each proxy's CPU time
//!   per call and its peak RSS.
//! - Large results: a 16 MB tool result the server streams as one server-sent event, the time
//!   until the client has it, each path's median call, and the ratio to the direct call.
//!
//! The driving client is this benchmark's own, on every path: over stdio the line reader of
//! [`Session`], over HTTP [`HttpSession`] (`ureq`, one connection kept alive; a call ends
//! when its answer has arrived, as the SDK clients hand it on then, and the rest of the
//! stream is read before the next call). A client of our own adds a few microseconds per
//! call and hardly any variance, so the differences between the rows are the proxies'.
//!
//! `CTXOPT_BENCH_REMOTE_SERVER` picks the server: `python` (default: the Python SDK's
//! `proxy-tests/peers/py_server.py`, `echo` for the round trips and `blob` for the large
//! results) or `everything` (`@modelcontextprotocol/server-everything streamableHttp`,
//! round trips only: it has no tool with a result of a chosen size).

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use ctxopt::upstream::http::sse::SseReader;

use super::{cpu_seconds, peers_dir, proc_status, us, Percentiles, Session, MB, ROLE_RESPONDER};

/// The largest answer the direct client takes.
const ANSWER_LIMIT: usize = 256 * MB;

/// Runs the section: round trips (`calls` small calls per path) and, on the Python server,
/// 16 MB results; with a `baseline` proxy binary, a row for it too.
pub(super) fn rows(tmp: &Path, baseline: Option<&Path>, calls: usize) -> Result<()> {
    let server = std::env::var("CTXOPT_BENCH_REMOTE_SERVER").unwrap_or_else(|_| "python".into());
    let kind = match server.as_str() {
        "python" => Server::Python,
        "everything" => Server::Everything,
        other => bail!("CTXOPT_BENCH_REMOTE_SERVER: {other} (python or everything)"),
    };
    let remote = peers_dir().join("node_modules/mcp-remote/dist/proxy.js");
    if !remote.is_file() {
        println!("\n## Remote servers: not run (mcp-remote is not installed: run ./proxy-tests/run-all --install-only)");
        return Ok(());
    }
    let served = Served::start(kind)?;
    println!(
        "\n## Remote servers: {} over Streamable HTTP\n",
        kind.label()
    );
    let paths = Paths {
        tmp,
        url: &served.url,
        remote: &remote,
        baseline,
    };
    paths.round_trips(kind, calls)?;
    if kind == Server::Python {
        paths.large(16 * MB, 12)?;
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    Python,
    Everything,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Server::Python => "the Python SDK's server (py_server.py)",
            Server::Everything => "server-everything",
        }
    }

    /// The small call of the round trips: a tool and its arguments.
    fn echo(self) -> (&'static str, &'static str) {
        match self {
            Server::Python => ("echo", r#"{"text":"hi"}"#),
            Server::Everything => ("echo", r#"{"message":"hi"}"#),
        }
    }
}

/// The server process, stopped when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(kind: Server) -> Result<Served> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = match kind {
            Server::Python => {
                let mut command = Command::new(peers_dir().join(".venv/bin/python"));
                command
                    .arg(peers_dir().join("py_server.py"))
                    .args(["--http", &port.to_string()])
                    .env("PY_SERVER_BLOB_TOOL", "1");
                command
            }
            Server::Everything => {
                let script = peers_dir()
                    .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
                let mut command = Command::new("node");
                command
                    .arg(script)
                    .arg("streamableHttp")
                    .env("PORT", port.to_string());
                command
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {command:?}"))?;
        let mut served = Served {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = served.child.try_wait()? {
                bail!("{command:?} exited before it listened: {status}");
            }
            ensure!(Instant::now() < deadline, "{command:?} never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(served)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The client talking Streamable HTTP to the server itself, one connection kept alive. A call
/// ends when the message answering it has arrived (as a client hands it on then); the rest of
/// its event stream (the server closing it) is read before the next call starts
/// ([`HttpSession::finish_answer`], outside the timing), so the connection is reused.
struct HttpSession {
    agent: ureq::Agent,
    url: String,
    session_id: Option<String>,
    next_id: u64,
    /// The event stream of the last answer, read up to its answer.
    rest: Option<Events>,
}

type Events = SseReader<BufReader<ureq::BodyReader<'static>>>;

impl HttpSession {
    fn connect(url: &str) -> Result<HttpSession> {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(true)
            .build()
            .new_agent();
        let mut session = HttpSession {
            agent,
            url: url.to_string(),
            session_id: None,
            next_id: 0,
            rest: None,
        };
        session.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ctxopt-bench","version":"1"}}"#,
        )?;
        session.finish_answer()?;
        session.post(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            None,
        )?;
        Ok(session)
    }

    /// Reads the rest of the last answer's event stream.
    fn finish_answer(&mut self) -> Result<()> {
        if let Some(mut events) = self.rest.take() {
            while events.next_event()?.is_some() {}
        }
        Ok(())
    }

    /// POSTs `frame`; with `id`, returns the size of the message answering it.
    fn post(&mut self, frame: &[u8], id: Option<u64>) -> Result<usize> {
        self.finish_answer()?;
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(session) = &self.session_id {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        let response = request.send(frame)?;
        if let Some(given) = response.headers().get("mcp-session-id") {
            self.session_id = Some(given.to_str()?.to_string());
        }
        let event_stream = response
            .headers()
            .get("content-type")
            .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        let mut body = response.into_body();
        let Some(id) = id else {
            body.read_to_vec()?;
            return Ok(0);
        };
        let answers = |data: &[u8]| {
            let has = |needle: String| memchr::memmem::find(data, needle.as_bytes()).is_some();
            has(format!(r#""id":{id},"#)) || has(format!(r#""id":{id}}}"#))
        };
        if !event_stream {
            let body = body
                .with_config()
                .limit(ANSWER_LIMIT as u64)
                .read_to_vec()?;
            ensure!(answers(&body), "no answer to request {id}");
            return Ok(body.len());
        }
        let body = BufReader::with_capacity(1 << 16, body.into_reader());
        let mut events = SseReader::new(body, ANSWER_LIMIT);
        while let Some(event) = events.next_event()? {
            if answers(&event.data) {
                self.rest = Some(events);
                return Ok(event.data.len());
            }
        }
        bail!("no answer to request {id}")
    }

    fn request(&mut self, method: &str, params: &str) -> Result<usize> {
        self.next_id += 1;
        let id = self.next_id;
        let frame =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        self.post(frame.as_bytes(), Some(id))
    }
}

/// A client on one of the three paths.
enum Caller {
    Direct(Box<HttpSession>),
    Proxied(Session),
}

impl Caller {
    fn call_tool(&mut self, name: &str, arguments: &str) -> Result<usize> {
        match self {
            Caller::Direct(http) => http.request(
                "tools/call",
                &format!(r#"{{"name":"{name}","arguments":{arguments}}}"#),
            ),
            Caller::Proxied(session) => session.call_tool(name, arguments),
        }
    }

    fn pid(&self) -> Option<u32> {
        match self {
            Caller::Direct(_) => None,
            Caller::Proxied(session) => Some(session.pid()),
        }
    }

    /// Before a timed call: the direct client reads the rest of its last answer.
    fn between_calls(&mut self) -> Result<()> {
        match self {
            Caller::Direct(http) => http.finish_answer(),
            Caller::Proxied(_) => Ok(()),
        }
    }
}

/// A path being measured.
struct Measured {
    label: &'static str,
    caller: Caller,
    times: Vec<Duration>,
    cpu: f64,
}

/// The server's URL and what the paths need.
struct Paths<'a> {
    tmp: &'a Path,
    url: &'a str,
    /// `mcp-remote`'s script.
    remote: &'a Path,
    /// Another `ctxopt-proxy` measured beside this build's (`CTXOPT_BENCH_BASELINE`).
    baseline: Option<&'a Path>,
}

impl Paths<'_> {
    /// The direct client, `ctxopt-proxy --url` (logging to a file and storing results on
    /// disk, as in use; the baseline's too when there is one) and `mcp-remote`, each
    /// connected.
    fn open(&self, name: &str) -> Result<Vec<Measured>> {
        let measured = |label, caller| Measured {
            label,
            caller,
            times: Vec::new(),
            cpu: 0.0,
        };
        let mut paths = vec![measured(
            "direct",
            Caller::Direct(Box::new(HttpSession::connect(self.url)?)),
        )];
        let this = Path::new(env!("CARGO_BIN_EXE_ctxopt-proxy"));
        let proxies = std::iter::once(("ctxopt-proxy --url", this)).chain(
            self.baseline
                .map(|b| ("ctxopt-proxy --url, baseline proxy", b)),
        );
        for (i, (label, proxy)) in proxies.enumerate() {
            let command = [
                proxy.as_os_str(),
                "--log".as_ref(),
                self.tmp.join(format!("{name}-{i}.jsonl")).as_os_str(),
                "--store".as_ref(),
                self.tmp.join(format!("{name}-{i}.db")).as_os_str(),
                "--url".as_ref(),
                self.url.as_ref(),
            ]
            .map(Into::into);
            let session = Session::spawn(&command, ROLE_RESPONDER)?;
            paths.push(measured(label, Caller::Proxied(session)));
        }
        // mcp-remote keeps its OAuth state under MCP_REMOTE_CONFIG_DIR (else ~/.mcp-auth) and
        // writes a line to stderr per message.
        let config_dir = self.tmp.join("mcp-remote");
        let quiet = |command: &mut Command| {
            command
                .env("MCP_REMOTE_CONFIG_DIR", &config_dir)
                .stderr(Stdio::null());
        };
        let remote = ["node".as_ref(), self.remote.as_os_str(), self.url.as_ref()].map(Into::into);
        let session = Session::spawn_with(&remote, ROLE_RESPONDER, quiet)?;
        paths.push(measured("mcp-remote", Caller::Proxied(session)));
        Ok(paths)
    }

    /// Small calls on each path, taking turns in blocks of 500.
    fn round_trips(&self, kind: Server, calls: usize) -> Result<()> {
        let (tool, args) = kind.echo();
        let mut paths = self.open("round-trips")?;
        for path in &mut paths {
            for _ in 0..200 {
                path.caller.call_tool(tool, args)?; // warm-up: JIT, connections, tokenizer load
            }
        }
        take_turns(&mut paths, (tool, args), calls, 500, false)?;
        println!("### Round trips: {calls} sequential small tools/call (`{tool}`)\n");
        println!("| path | p50 | p99 | added p50 | added p99 | CPU per call | peak RSS |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        let mut direct = None;
        for path in paths {
            let (label, peak, cpu, times) = path.end()?;
            let p = Percentiles::of(times);
            let d = direct.get_or_insert((p.p50, p.p99));
            let proxy = match peak {
                None => " | | | ".to_string(),
                Some(peak) => format!(
                    "{:+.1} µs | {:+.1} µs | {} | {peak:.1} MB",
                    p.p50 - d.0,
                    p.p99 - d.1,
                    us(cpu / calls as f64 * 1e6),
                ),
            };
            println!("| {label} | {} | {} | {proxy} |", us(p.p50), us(p.p99));
        }
        Ok(())
    }

    /// `calls` results of `size` bytes on each path, taking turns call by call; after each
    /// proxied call the proxy is left to finish its work on it (the tap's accounting) before
    /// the next call starts.
    fn large(&self, size: usize, calls: usize) -> Result<()> {
        let args = format!(r#"{{"size":{size}}}"#);
        let mut paths = self.open("large")?;
        // The server builds the text once per size; the first call pays for that.
        for path in &mut paths {
            path.caller.call_tool("blob", &args)?;
        }
        let frame = take_turns(&mut paths, ("blob", &args), calls, 1, true)?;
        println!(
            "\n### Large results: {} MB in one server-sent event, {calls} calls per path\n",
            size / MB
        );
        println!("| path | median call | MB/s | ratio to direct | CPU per call | peak RSS |");
        println!("| --- | ---: | ---: | ---: | ---: | ---: |");
        let mut direct = None;
        for path in paths {
            let (label, peak, cpu, mut times) = path.end()?;
            times.sort();
            let median = times[times.len() / 2].as_secs_f64();
            let d = *direct.get_or_insert(median);
            let proxy = match peak {
                None => " | ".to_string(),
                Some(peak) => format!("{:.0} ms | {peak:.1} MB", cpu / calls as f64 * 1e3),
            };
            println!(
                "| {label} | {:.0} ms | {:.0} | {:.3} | {proxy} |",
                median * 1e3,
                frame as f64 / MB as f64 / median,
                median / d
            );
        }
        Ok(())
    }
}

impl Measured {
    /// Its label, its proxy's peak RSS (MB), CPU seconds and call times; its proxy stopped.
    fn end(self) -> Result<(&'static str, Option<f64>, f64, Vec<Duration>)> {
        let peak = self
            .caller
            .pid()
            .map(|pid| proc_status(pid).map(|s| s["VmHWM"]))
            .transpose()?;
        if let Caller::Proxied(session) = self.caller {
            session.finish()?;
        }
        Ok((self.label, peak, self.cpu, self.times))
    }
}

/// Times `calls` calls of `call` (a tool and its arguments) on every path, taking turns of at
/// most `turn` calls; each round of turns is begun by the next path, so that no path always
/// follows the same one (a path's turn can pay for the work the one before it left behind:
/// the tap's accounting, a collection in Node.js). With `settle`, each proxy is left to finish
/// its work on a call before the next call starts (that work is in its CPU time, not in the
/// call's). Each proxy's CPU time from the first call until it has finished its work on the
/// last goes to `cpu`. The size of the last answer.
fn take_turns(
    paths: &mut [Measured],
    (tool, args): (&str, &str),
    calls: usize,
    turn: usize,
    settle: bool,
) -> Result<usize> {
    let before = paths
        .iter()
        .map(|p| p.caller.pid().map(cpu_seconds).transpose())
        .collect::<Result<Vec<_>>>()?;
    let (mut done, mut round, mut size) = (0, 0, 0);
    while done < calls {
        let n = turn.min(calls - done);
        for path in rotated(paths, round) {
            for _ in 0..n {
                path.caller.between_calls()?;
                let start = Instant::now();
                size = path.caller.call_tool(tool, args)?;
                path.times.push(start.elapsed());
                if let (Some(pid), true) = (path.caller.pid(), settle) {
                    super::settle(pid)?;
                }
            }
        }
        done += n;
        round += 1;
    }
    for (path, before) in paths.iter_mut().zip(before) {
        if let (Some(pid), Some(before)) = (path.caller.pid(), before) {
            super::settle(pid)?;
            path.cpu = cpu_seconds(pid)? - before;
        }
    }
    Ok(size)
}

/// The paths in turn, beginning with the one at `round` (modulo their number).
fn rotated(paths: &mut [Measured], round: usize) -> impl Iterator<Item = &mut Measured> {
    let (before, from) = paths.split_at_mut(round % paths.len());
    from.iter_mut().chain(before.iter_mut())
}
