//! Running one scripted client session, direct or through the proxy, with a deadline.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// How long one scripted session may take before the test fails (the machine may be busy).
const DEADLINE: Duration = Duration::from_secs(180);

/// The proxy binary under test.
pub(crate) fn proxy_binary() -> &'static str {
    env!("CARGO_BIN_EXE_ctxopt-proxy")
}

/// `ctxopt-proxy --log LOG --inject none --store :memory: -- <server>`: the relay alone, so a
/// proxied session must see exactly what the direct one sees (injection has its own tests).
pub(crate) fn proxied(server: &[OsString], log: &Path) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![
        proxy_binary().into(),
        "--log".into(),
        log.into(),
        "--inject".into(),
        "none".into(),
        "--store".into(),
        ":memory:".into(),
        "--".into(),
    ];
    command.extend(server.iter().cloned());
    command
}

/// What a client driver printed: its transcript, and the messages it wrote and read.
#[derive(Debug)]
pub(crate) struct DriverOutput {
    /// The whole JSON document.
    pub json: Value,
}

impl DriverOutput {
    /// The part that must be equal direct and proxied: everything the client observed,
    /// with its wire lists sorted (the interleaving of independent server messages is timing).
    pub(crate) fn comparable(&self) -> Value {
        let mut json = self.json.clone();
        for side in ["sent", "received"] {
            let list = json["wire"][side].as_array_mut().expect("wire lists");
            list.sort_by_key(|v| v.to_string());
        }
        json
    }

    /// The messages the client wrote, in order.
    pub(crate) fn sent(&self) -> &[Value] {
        self.json["wire"]["sent"].as_array().expect("wire.sent")
    }

    /// The messages the client read, in order.
    pub(crate) fn received(&self) -> &[Value] {
        self.json["wire"]["received"]
            .as_array()
            .expect("wire.received")
    }

    /// The protocol revision the client says it uses.
    pub(crate) fn protocol(&self) -> &str {
        self.json["protocol"].as_str().expect("protocol")
    }
}

/// Runs a driver to completion (or the deadline) with extra environment variables and returns
/// its parsed output; panics with its stderr when it fails.
pub(crate) fn run_driver(command: &[OsString], env: &[(&str, PathBuf)]) -> DriverOutput {
    let mut driver = Command::new(&command[0]);
    driver
        .args(&command[1..])
        .envs(env.iter().map(|(k, v)| (k, v)));
    run_driver_command(driver)
}

/// [`run_driver`] for a driver whose command (its environment, its folder) is set up already.
pub(crate) fn run_driver_command(mut driver: Command) -> DriverOutput {
    let command: Vec<OsString> = std::iter::once(driver.get_program().to_owned())
        .chain(driver.get_args().map(ToOwned::to_owned))
        .collect();
    let mut child = driver
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", command[0]));
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = crate::support::poll_until(DEADLINE, Duration::from_millis(20), || {
        child.try_wait().expect("wait for driver")
    });
    let Some(status) = status else {
        child.kill().ok();
        child.wait().ok();
        panic!(
            "driver {command:?} did not finish in {DEADLINE:?}; stderr:\n{}",
            stderr.join().unwrap_or_default()
        );
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    assert!(
        status.success(),
        "driver {command:?} failed ({status}); stderr:\n{stderr}"
    );
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("driver printed no JSON ({e}): {stdout}\nstderr:\n{stderr}"));
    DriverOutput { json }
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).ok();
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
