//! The 2026-07-28 revision's multi-round features with the Python SDK on both ends
//! (`peers/py_revision_client.py` × `peers/py_revision_server.py`), direct and through
//! `ctxopt-proxy --compact-results`: a tool call answered `input_required` and retried with the
//! `requestState`, and a `subscriptions/listen` stream. The client observes the same either way;
//! the `input_required` answer reaches it whole, the log pairs the retry with it, `ctxopt report`
//! counts the rounds as one call, the listen notifications carry their subscription, and the
//! trailer pins both peers.

use std::ffi::OsString;

use ctxopt::framelog::{Direction, FrameKind};
use serde_json::Value;

use super::peers::Peers;
use super::remote::{free_port, Served};
use super::session::{proxy_binary, run_driver};
use crate::revision::{member_tokens, report, tool_report};
use crate::support::log::read_log;

#[test]
fn python_sdk_input_required_and_listen_through_the_proxy() {
    let Some(peers) = Peers::locate() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let server: Vec<OsString> = vec![
        peers.python.clone().into(),
        peers.dir.join("py_revision_server.py").into(),
    ];
    let mut through: Vec<OsString> = vec![
        proxy_binary().into(),
        "--log".into(),
        log_path.clone().into(),
    ];
    through.extend(["--inject", "none", "--compact-results", "200", "--store"].map(OsString::from));
    through.extend([
        tmp.path().join("store.sqlite3").into(),
        "--workspace".into(),
        tmp.path().into(),
        "--".into(),
    ]);
    through.extend(server.iter().cloned());
    let driver = |target: &[OsString]| {
        let mut command: Vec<OsString> = vec![
            peers.python.clone().into(),
            peers.dir.join("py_revision_client.py").into(),
            "--".into(),
        ];
        command.extend(target.iter().cloned());
        run_driver(&command, &[])
    };
    let (direct, proxied) = std::thread::scope(|s| {
        let direct = s.spawn(|| driver(&server));
        let proxied = s.spawn(|| driver(&through));
        (direct.join().unwrap(), proxied.join().unwrap())
    });
    assert_eq!(direct.json, proxied.json);
    assert_eq!(
        proxied.json["asked"],
        serde_json::json!(["Who is visiting?"])
    );
    assert_eq!(
        proxied.json["events"],
        serde_json::json!(["ToolsListChanged"])
    );

    let log = read_log(&log_path);
    let json = |f: &ctxopt::framelog::Frame| -> Value {
        serde_json::from_str(f.raw.as_deref().expect("raw")).expect("json")
    };
    let greet: Vec<_> = log
        .frames
        .iter()
        .filter(|f| f.tool.as_deref() == Some("greet"))
        .collect();
    let [call, round, retry, answer] = greet[..] else {
        panic!("two rounds of greet: {greet:?}")
    };
    assert_eq!(round.result_type.as_deref(), Some("input_required"));
    assert!(
        round.left_whole.is_none() && log.dir(Direction::P2c).is_empty(),
        "nothing compacted"
    );
    let state = &json(round)["result"]["requestState"];
    assert!(state.is_string(), "the SDK sealed a requestState");
    assert_eq!(
        &json(retry)["params"]["requestState"],
        state,
        "echoed untouched"
    );
    assert_eq!((call.retries, retry.retries), (None, Some(round.seq)));
    assert_eq!(answer.result_type, None);

    let report = report(&log_path);
    let greeted = tool_report(&report, "greet");
    assert_eq!(
        (&greeted["calls"], &greeted["answered"]),
        (&1.into(), &1.into())
    );
    let tokens = member_tokens(call, "params")
        + member_tokens(round, "result")
        + member_tokens(retry, "params")
        + member_tokens(answer, "result");
    assert_eq!(greeted["call_tokens"]["total"], tokens);

    let listen = log
        .dir(Direction::C2s)
        .into_iter()
        .find(|f| f.method.as_deref() == Some("subscriptions/listen"))
        .expect("the listen request");
    let stream: Vec<(&str, Option<&str>)> = log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| f.kind == FrameKind::Notification)
        .map(|f| (f.method.as_deref().unwrap_or(""), f.subscription.as_deref()))
        .collect();
    assert_eq!(
        stream,
        [
            (
                "notifications/subscriptions/acknowledged",
                listen.id.as_deref()
            ),
            ("notifications/tools/list_changed", listen.id.as_deref()),
        ]
    );

    let pins = log.trailer.pins.as_ref().expect("pins");
    let peer = |p: &Option<ctxopt::framelog::Identity>| {
        p.as_ref().map(|i| (i.name.clone(), i.version.clone()))
    };
    assert_eq!(
        peer(&pins.client),
        Some(("ctxopt-revision-py".into(), Some("1.0.0".into())))
    );
    assert_eq!(
        peer(&pins.server),
        Some(("ctxopt-test-revision-server".into(), Some("1.0.0".into())))
    );
    assert_eq!(pins.protocols, ["2026-07-28"]);
}

/// The same `input_required` round over the HTTP path (`ctxopt-proxy --url` in front of the
/// server serving Streamable HTTP): relayed as it came, its retry paired with it; then a
/// `subscriptions/listen` stream gets its event, and when the client cancels it and closes
/// its end the proxy ends (a listen stream lasts as long as the session: the proxy once
/// waited on it forever).
#[test]
fn python_sdk_input_required_and_listen_over_http() {
    let Some(peers) = Peers::locate() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let port = free_port();
    let mut serve = std::process::Command::new(&peers.python);
    serve
        .arg(peers.dir.join("py_revision_server.py"))
        .args(["--http", &port.to_string()]);
    let served = Served::start(serve, port);
    let mut command: Vec<OsString> = vec![
        peers.python.clone().into(),
        peers.dir.join("py_revision_client.py").into(),
        "--".into(),
        proxy_binary().into(),
        "--log".into(),
        log_path.clone().into(),
    ];
    command.extend(
        [
            "--inject",
            "none",
            "--store",
            ":memory:",
            "--url",
            &served.url,
        ]
        .map(OsString::from),
    );
    let out = run_driver(&command, &[]);
    assert_eq!(
        out.json["greeting"],
        serde_json::json!(["Welcome, Ada. Sign here."])
    );
    assert_eq!(out.json["events"], serde_json::json!(["ToolsListChanged"]));
    let log = read_log(&log_path);
    assert!(
        log.frames
            .iter()
            .any(|f| f.method.as_deref() == Some("notifications/tools/list_changed")),
        "the listen event came through"
    );
    let greet: Vec<_> = log
        .frames
        .iter()
        .filter(|f| f.tool.as_deref() == Some("greet"))
        .collect();
    let [_, round, retry, _] = greet[..] else {
        panic!("two rounds of greet: {greet:?}")
    };
    assert_eq!(round.result_type.as_deref(), Some("input_required"));
    assert!(round.http.is_some(), "it came over HTTP");
    assert_eq!(retry.retries, Some(round.seq));
}
