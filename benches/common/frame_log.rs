//! A generated frame log of any size, for the benchmarks over large logs
//! (`benches/report_memory.rs`, `benches/ingest_memory.rs`): 2026-07-28 style `tools/call`
//! requests and results across 20 tools, every result carrying a `_meta` envelope with an
//! inline icon, one result in 50 of ~200 kB, some `isError` results and banners. The
//! `tokens` figures in the records are those of each frame's template.

use std::fs::File;
use std::io::{BufWriter, Write};

use base64::Engine as _;
use ctxopt::framelog::{
    Direction, ExitStatus, Frame, FrameKind, Header, LineEnding, LogLine, PerDirection, Trailer,
    FORMAT_VERSION,
};
use ctxopt::protocol::MODERN_VERSION;
use ctxopt::tokenizer::Tokenizer;

/// The number in environment variable `name`, else `default`.
pub(crate) fn env_number(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The peak resident set size of this process (`RUSAGE_SELF`) or of its waited-for
/// children (`RUSAGE_CHILDREN`), in MB.
pub(crate) fn peak_rss_mb(who: libc::c_int) -> f64 {
    // SAFETY: `rusage` is plain integers, for which all zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we pass and reads nothing else.
    unsafe { libc::getrusage(who, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn frame(seq: u64, dir: Direction, kind: FrameKind, raw: String, tokens: u64) -> Frame {
    Frame {
        seq,
        ts: format!(
            "2026-08-20T10:{:02}:{:02}.{:06}Z",
            (seq / 60_000_000) % 60,
            (seq / 1_000_000) % 60,
            seq % 1_000_000
        ),
        dir,
        bytes: raw.len() as u64 + 1,
        line_ending: LineEnding::Lf,
        kind,
        id: None,
        method: None,
        tool: None,
        latency_us: None,
        protocol: Some(MODERN_VERSION.into()),
        is_error: None,
        error_code: None,
        result_type: None,
        retries: None,
        task: None,
        subscription: None,
        tokens,
        meta_tokens: 0,
        items: None,
        raw: Some(raw),
        raw_b64: None,
        server_raw: None,
        compacts: None,
        left_whole: None,
        redactions: None,
        http: None,
    }
}

/// Writes a log of about `size` bytes to `path`; returns the bytes written.
pub(crate) fn generate(path: &std::path::Path, size: u64) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let line = |record: &LogLine, out: &mut BufWriter<File>| -> std::io::Result<u64> {
        let text = serde_json::to_string(record).map_err(std::io::Error::other)?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        Ok(text.len() as u64 + 1)
    };
    let mut written = line(
        &LogLine::Header(Header {
            format_version: FORMAT_VERSION,
            proxy_version: "bench".into(),
            tokenizer: "o200k_base".into(),
            started: "2026-08-20T10:00:00Z".into(),
            server_name: "bench".into(),
            server_argv: vec!["bench-server".into()],
            cwd: ".".into(),
            server_pid: Some(1),
            proxy_pid: 2,
            transport: None,
        }),
        &mut out,
    )?;
    let icon = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode([7u8; 1500])
    );
    let meta = format!(
        r#"{{"io.modelcontextprotocol/serverInfo":{{"name":"bench","version":"1","icons":[{{"src":"{icon}"}}]}}}}"#
    );
    let small = "lorem ipsum dolor sit amet ".repeat(40);
    let large = "0123456789abcdef ".repeat(12_000);
    let tokenizer = Tokenizer::O200kBase;
    let list = (0..20)
        .map(|t| format!(r#"{{"name":"tool_{t}","inputSchema":{{"type":"object"}}}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let list = format!(r#"{{"jsonrpc":"2.0","id":0,"result":{{"tools":[{list}]}}}}"#);
    let wrap = |f: Frame| LogLine::Frame(Box::new(f));
    let mut seq = 0;
    let list_request = r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#;
    for (dir, kind, raw) in [
        (Direction::C2s, FrameKind::Request, list_request.to_owned()),
        (Direction::S2c, FrameKind::Response, list),
    ] {
        let mut f = frame(seq, dir, kind, raw, 0);
        f.method = Some("tools/list".into());
        f.id = Some("0".into());
        written += line(&wrap(f), &mut out)?;
        seq += 1;
    }
    let (small_tokens, large_tokens) = (
        tokenizer.count(&small) as u64,
        tokenizer.count(&large) as u64,
    );
    let mut call = 1u64;
    let mut frames = 2;
    while written < size {
        let tool = format!("tool_{}", call % 20);
        let req = format!(
            r#"{{"jsonrpc":"2.0","id":{call},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"q":"{call}"}}}}}}"#
        );
        let mut f = frame(seq, Direction::C2s, FrameKind::Request, req, 30);
        f.id = Some(call.to_string());
        f.method = Some("tools/call".into());
        f.tool = Some(tool.clone());
        written += line(&wrap(f), &mut out)?;
        seq += 1;
        let (body, body_tokens) = if call.is_multiple_of(50) {
            (&large, large_tokens)
        } else {
            (&small, small_tokens)
        };
        let is_error = call.is_multiple_of(10);
        let res = format!(
            r#"{{"jsonrpc":"2.0","id":{call},"result":{{"content":[{{"type":"text","text":"{body}"}}],"isError":{is_error},"_meta":{meta}}}}}"#
        );
        let mut f = frame(
            seq,
            Direction::S2c,
            FrameKind::Response,
            res,
            body_tokens + 700,
        );
        f.id = Some(call.to_string());
        f.method = Some("tools/call".into());
        f.tool = Some(tool);
        f.latency_us = Some(500 + (call * 7919) % 20_000);
        f.is_error = Some(is_error);
        written += line(&wrap(f), &mut out)?;
        seq += 1;
        frames += 2;
        if call.is_multiple_of(1000) {
            let banner = frame(
                seq,
                Direction::S2c,
                FrameKind::Unparseable,
                "debug: tick".into(),
                3,
            );
            written += line(&wrap(banner), &mut out)?;
            seq += 1;
            frames += 1;
        }
        call += 1;
    }
    written += line(
        &LogLine::Trailer(Trailer {
            ts: "2026-08-20T11:00:00Z".into(),
            exit: ExitStatus {
                code: Some(0),
                signal: None,
            },
            frames_relayed: PerDirection::default(),
            frames_logged: frames,
            frames_unlogged: 0,
            bytes: PerDirection::default(),
            errors: Vec::new(),
            pins: None,
        }),
        &mut out,
    )?;
    out.flush()?;
    Ok(written)
}
