//! A scripted stdio "server" for the proxy's fault tests. Each argument is one step, run
//! in order:
//!
//! - `emit:PATH`: write the file's bytes to stdout, in chunks of the current chunk size.
//! - `chunk:N`: later writes go out in chunks of N bytes, each flushed (default 65536).
//! - `big:ID:SIZE`: write a SIZE-byte response to ID (see `support/frames.rs`).
//! - `echo`: copy stdin to stdout line by line, byte for byte, until end of input.
//! - `respond`: answer each request line on stdin with `{"jsonrpc":"2.0","id":<id>,
//!   "result":<result>}` (a batch with a batch of answers) until end of input; the result
//!   is `{}` or the current `result:`. Responses and notifications get no answer.
//! - `result:JSON`: the result later `respond` steps send.
//! - `method-result:KEY:JSON`: `respond` answers requests matching KEY with this result
//!   instead: KEY is `METHOD#N` (the Nth request of that method, from 1), `METHOD@CURSOR`
//!   (a request whose `params.cursor` is CURSOR) or `METHOD`, tried in that order.
//! - `text-result:METHOD:LINES:WIDTH`: `respond` answers METHOD with a text result of LINES
//!   log lines of WIDTH bytes each (one `ERROR` line in the middle); one line of WIDTH
//!   bytes when LINES is 1 (starting `START`, ending `END`).
//! - `notify-after:METHOD:JSON`: after answering a METHOD request, `respond` also writes the
//!   JSON line (a notification).
//! - `delay-ms:N`: `respond` waits N ms before each answer.
//! - `drain`: read stdin to end of input, discarding it.
//! - `await-line`: read one line of stdin (a marker the test sends), discarding it.
//! - `stderr:TEXT`: write TEXT and a newline to stderr.
//! - `sleeper:null` / `sleeper:inherit`: start `sleep 1000` in the background with its
//!   stdout on /dev/null or on ours, and write its pid like `pid` does.
//! - `pid`: write `{"jsonrpc":"2.0","method":"fixture/pid","params":{"pid":N}}\n`.
//! - `ignore:SIG`: ignore a signal (by number).
//! - `default:SIG`: give a signal (by number) its default action, whatever the fixture
//!   inherited (a shell running the tests in the background ignores `SIGINT`).
//! - `hang`: sleep until killed.
//! - `exit:N`: exit with code N.
//! - `signal:N`: kill itself with signal N.
//! - `crash-mid-frame`: write half a frame, then die by `SIGKILL`.

#[path = "support/frames.rs"]
mod frames;

use std::io::{self, BufRead, Write};
use std::time::Duration;

struct Script {
    chunk: usize,
    result: String,
    delay: Duration,
    by_method: std::collections::HashMap<String, String>,
    notify_after: std::collections::HashMap<String, String>,
    seen: std::collections::HashMap<String, usize>,
}

fn write_chunked(out: &mut impl Write, bytes: &[u8], script: &Script) -> io::Result<()> {
    for piece in bytes.chunks(script.chunk.max(1)) {
        out.write_all(piece)?;
        out.flush()?;
    }
    Ok(())
}

/// The reply to one message, when it is a request.
fn answer(script: &mut Script, msg: &serde_json::Value) -> Option<String> {
    let id = msg.get("id")?;
    let method = msg.get("method")?.as_str().unwrap_or_default();
    let nth = script.seen.entry(method.to_string()).or_default();
    *nth += 1;
    let cursor = msg
        .get("params")
        .and_then(|p| p.get("cursor"))
        .and_then(|c| c.as_str());
    let keys = [
        Some(format!("{method}#{nth}")),
        cursor.map(|c| format!("{method}@{c}")),
        Some(method.to_string()),
    ];
    let result = keys
        .iter()
        .flatten()
        .find_map(|k| script.by_method.get(k))
        .unwrap_or(&script.result);
    let mut reply = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}");
    if let Some(line) = script.notify_after.get(method) {
        reply.push('\n');
        reply.push_str(line);
    }
    Some(reply)
}

fn respond(script: &mut Script, out: &mut impl Write) -> io::Result<()> {
    let stdin = io::stdin();
    let mut line = Vec::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Ok(msg) = serde_json::from_slice::<serde_json::Value>(&line) else {
            continue;
        };
        let reply = match &msg {
            serde_json::Value::Array(items) => {
                let replies: Vec<String> = items.iter().filter_map(|m| answer(script, m)).collect();
                format!("[{}]", replies.join(","))
            }
            single => match answer(script, single) {
                Some(reply) => reply,
                None => continue,
            },
        };
        std::thread::sleep(script.delay);
        write_chunked(out, format!("{reply}\n").as_bytes(), script)?;
    }
}

/// `lines` log lines of `width` bytes, newline-terminated, one `ERROR` line in the middle;
/// a single line `START…END` when `lines` is 1.
fn log_text(lines: usize, width: usize) -> String {
    if lines <= 1 {
        let fill = width.saturating_sub(8);
        return format!("START{}END", &"abcd efgh ".repeat(fill / 10 + 1)[..fill]);
    }
    let mut text = String::with_capacity(lines * (width + 1));
    for i in 0..lines {
        let line = if i == lines / 2 {
            format!("{i:08} ERROR payment gateway timed out after 30000 ms")
        } else {
            format!(
                "{i:08} INFO worker handled request {} in {} ms",
                i * 7 % 1000,
                i % 97
            )
        };
        let pad = width.saturating_sub(line.len());
        text.push_str(&line);
        text.extend(std::iter::repeat_n('.', pad));
        text.push('\n');
    }
    text
}

fn write_pid(out: &mut impl Write, pid: u32) -> io::Result<()> {
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"fixture/pid\",\"params\":{{\"pid\":{pid}}}}}\n"
    );
    out.write_all(line.as_bytes())?;
    out.flush()
}

fn step(script: &mut Script, arg: &str, out: &mut impl Write) -> io::Result<()> {
    let (name, value) = arg.split_once(':').unwrap_or((arg, ""));
    let number = || value.parse::<u64>().unwrap_or(0);
    match name {
        "emit" => write_chunked(out, &std::fs::read(value)?, script)?,
        "chunk" => script.chunk = number() as usize,
        "big" => {
            let (id, size) = value.split_once(':').unwrap_or(("1", value));
            let frame = frames::big_response(id.parse().unwrap_or(1), size.parse().unwrap_or(0));
            write_chunked(out, &frame, script)?;
        }
        "echo" => {
            let stdin = io::stdin();
            let mut input = stdin.lock();
            let mut line = Vec::new();
            while input.read_until(b'\n', &mut line)? > 0 {
                write_chunked(out, &line, script)?;
                line.clear();
            }
        }
        "respond" => respond(script, out)?,
        "result" => script.result = value.to_string(),
        "method-result" | "notify-after" => {
            let (key, json) = value.split_once(':').unwrap_or((value, "{}"));
            let map = if name == "method-result" {
                &mut script.by_method
            } else {
                &mut script.notify_after
            };
            map.insert(key.to_string(), json.to_string());
        }
        "text-result" => {
            let mut parts = value.splitn(3, ':');
            let method = parts.next().unwrap_or("tools/call").to_string();
            let lines = parts.next().and_then(|n| n.parse().ok()).unwrap_or(1);
            let width = parts.next().and_then(|n| n.parse().ok()).unwrap_or(80);
            let text = log_text(lines, width);
            let result = serde_json::json!({"content": [{"type": "text", "text": text}]});
            script.by_method.insert(method, result.to_string());
        }
        "delay-ms" => script.delay = Duration::from_millis(number()),
        "drain" => {
            io::copy(&mut io::stdin().lock(), &mut io::sink())?;
        }
        "await-line" => {
            io::stdin().lock().read_line(&mut String::new())?;
        }
        "stderr" => eprintln!("{value}"),
        "pid" => write_pid(out, std::process::id())?,
        "sleeper" => {
            let stdout = if value == "inherit" {
                std::process::Stdio::inherit()
            } else {
                std::process::Stdio::null()
            };
            let sleeper = std::process::Command::new("sleep")
                .arg("1000")
                .stdin(std::process::Stdio::null())
                .stdout(stdout)
                .spawn()?;
            write_pid(out, sleeper.id())?;
        }
        "ignore" | "default" => {
            let action = if name == "ignore" {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            // SAFETY: setting a signal's disposition to SIG_IGN or SIG_DFL has no
            // preconditions.
            unsafe {
                libc::signal(number() as libc::c_int, action);
            }
        }
        "hang" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "exit" => {
            out.flush()?;
            std::process::exit(number() as i32);
        }
        "signal" | "crash-mid-frame" => {
            if name == "crash-mid-frame" {
                write_chunked(out, br#"{"jsonrpc":"2.0","id":1,"result":{"conte"#, script)?;
            }
            let sig = if name == "signal" {
                number() as libc::c_int
            } else {
                libc::SIGKILL
            };
            // SAFETY: signalling our own process.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
            }
            std::thread::sleep(Duration::from_secs(5));
        }
        other => {
            eprintln!("fixture-server: unknown step `{other}`");
            std::process::exit(99);
        }
    }
    Ok(())
}

fn main() {
    let mut script = Script {
        chunk: 65536,
        result: "{}".to_string(),
        delay: Duration::ZERO,
        by_method: Default::default(),
        notify_after: Default::default(),
        seen: Default::default(),
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for arg in std::env::args().skip(1) {
        if let Err(err) = step(&mut script, &arg, &mut out) {
            eprintln!("fixture-server: {arg}: {err}");
            std::process::exit(98);
        }
    }
    let _ = out.flush();
}
