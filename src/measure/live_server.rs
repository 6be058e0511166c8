//! A live MCP server over stdio, for the audit probe and `ctxopt verify`: started from its
//! command line, fed lines, read a line at a time with a deadline, stopped at the end (stdin
//! closed, then killed if it has not left within a second).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use super::MeasureError;

/// A running server.
pub struct LiveServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
}

impl LiveServer {
    /// Starts `argv` (its stderr goes to ours).
    pub fn start(argv: &[String]) -> Result<LiveServer, MeasureError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| MeasureError::Server("no server command given (after --)".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| MeasureError::Server(format!("cannot start `{program}`: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                            line.pop();
                        }
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(LiveServer {
            stdin: child.stdin.take(),
            child,
            lines,
        })
    }

    /// Writes one message and a newline.
    pub fn send(&mut self, message: &[u8]) -> Result<(), MeasureError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| MeasureError::Server("the server's stdin is closed".into()))?;
        stdin
            .write_all(message)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| MeasureError::Server(format!("writing to the server: {e}")))
    }

    /// The next line the server writes, `None` when `timeout` passes first.
    pub fn recv(&self, timeout: Duration) -> Result<Option<Vec<u8>>, MeasureError> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(Some(line)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(MeasureError::Server("the server closed its stdout".into()))
            }
        }
    }

    /// Closes the server's stdin and waits up to a second for it to leave, then kills it.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        for _ in 0..20 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
