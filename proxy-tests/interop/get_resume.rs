//! server-everything's standalone GET stream cut under the proxy: the proxy reaches the server
//! through a TCP relay of this module, which closes the GET stream's connection once a
//! message came on it, and holds the proxy's next GET while the server sends a message of
//! its own accord (kept in its event store, no stream to send it on). Released, the GET
//! carries `Last-Event-ID`; the server's event store replays every event stored after that
//! id, whatever stream it belonged to (the answers to the tool calls among them): the client
//! gets the message sent in the gap, and none of the answers twice.
//!
//! What server-everything cannot show: a message sent after the reopening. Its event store
//! has no `getStreamIdForEventId`, so the SDK registers the replaying stream under the id of
//! the last event replayed instead of the standalone stream's: later messages are stored and
//! sent on no stream (the proxy's own fault tests, `http_get_resume`, cover them).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ctxopt::framelog::{Direction, HttpVia};
use serde_json::Value;

use super::peers::{Peers, Server};
use super::remote::{free_port, Served};
use crate::http_faults::Session;
use crate::support::poll_until;
use crate::support::proxy::ProxyCmd;

/// One connection through the relay: its client side and the head of the last request it
/// carried.
struct Carried {
    client: TcpStream,
    head: Arc<Mutex<String>>,
}

/// The connections through a relay to a port.
#[derive(Clone, Default)]
struct Relay {
    carried: Arc<Mutex<Vec<Carried>>>,
    /// While set, a GET waits before it goes on to the server.
    held: Arc<(Mutex<bool>, Condvar)>,
}

impl Relay {
    /// A relay on a port of its own to `port` on 127.0.0.1; its URL for `/mcp`.
    fn start(port: u16) -> (Relay, String) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let relay = Relay::default();
        let kept = relay.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                kept.carry(client, server);
            }
        });
        (relay, url)
    }

    /// Pumps both ways; the client's bytes watched for request heads.
    fn carry(&self, client: TcpStream, server: TcpStream) {
        let head = Arc::new(Mutex::new(String::new()));
        self.carried.lock().expect("lock").push(Carried {
            client: client.try_clone().expect("clone"),
            head: head.clone(),
        });
        let (mut from_client, mut to_server) = (
            client.try_clone().expect("clone"),
            server.try_clone().expect("clone"),
        );
        let held = self.held.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0; 1 << 16];
            while let Ok(n) = from_client.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = String::from_utf8_lossy(&buf[..n]);
                if chunk.starts_with("GET ") {
                    let (flag, changed) = &*held;
                    let mut holding = flag.lock().expect("lock");
                    while *holding {
                        holding = changed.wait(holding).expect("lock");
                    }
                }
                if ["GET ", "POST ", "DELETE "]
                    .iter()
                    .any(|m| chunk.starts_with(m))
                {
                    *head.lock().expect("lock") =
                        chunk.lines().take(12).collect::<Vec<_>>().join("\n");
                }
                if to_server.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = to_server.shutdown(Shutdown::Both);
        });
        let (mut from_server, mut to_client) = (server, client);
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from_server, &mut to_client);
            let _ = to_client.shutdown(Shutdown::Both);
        });
    }

    /// The heads of the GETs carried so far, in order.
    fn gets(&self) -> Vec<String> {
        self.carried
            .lock()
            .expect("lock")
            .iter()
            .map(|c| c.head.lock().expect("lock").clone())
            .filter(|h| h.starts_with("GET "))
            .collect()
    }

    /// Holds the GETs to come (`true`), or lets them go on.
    fn hold(&self, holding: bool) {
        let (flag, changed) = &*self.held;
        *flag.lock().expect("lock") = holding;
        changed.notify_all();
    }

    /// Closes the connections whose last request was a GET (the stream under way).
    fn cut_gets(&self) {
        for carried in self.carried.lock().expect("lock").iter() {
            if carried.head.lock().expect("lock").starts_with("GET ") {
                let _ = carried.client.shutdown(Shutdown::Both);
            }
        }
    }
}

#[test]
fn everything_get_stream_cut_is_reopened_from_its_last_event_and_nothing_is_relayed_twice() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let port = free_port();
    let _served = Served::start(
        peers.http_server_command(Server::Everything, port, false),
        port,
    );
    let (relay, url) = Relay::start(port);
    let mut session = Session::spawn(ProxyCmd::remote(&url).option(&["--inject", "none"]));
    assert!(session.ask(1, "initialize")["result"].is_object());
    session.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let opened = poll_until(Duration::from_secs(60), Duration::from_millis(10), || {
        (!relay.gets().is_empty()).then_some(())
    });
    assert!(opened.is_some(), "the proxy never opened the GET stream");
    // Started, the simulated logging sends a message at once, on the GET stream (no request
    // of the client's is related to it), and every 5 s after; stopped, none.
    let toggle = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"toggle-simulated-logging","arguments":{{}}}}}}"#
        )
    };
    let mut got = Vec::new();
    let until_answered = |session: &mut Session, id: u64, got: &mut Vec<Value>| loop {
        let message = session.next();
        got.push(message.clone());
        if message["id"] == id {
            return;
        }
    };
    session.write_line(&toggle(2));
    until_answered(&mut session, 2, &mut got);
    if !got.iter().any(|m| m["method"] == "notifications/message") {
        got.push(session.next());
    }
    session.write_line(&toggle(3));
    until_answered(&mut session, 3, &mut got);
    let before = got.len();
    relay.hold(true);
    relay.cut_gets();
    // Sent while the proxy has no stream open: kept in the server's event store.
    session.write_line(&toggle(4));
    until_answered(&mut session, 4, &mut got);
    assert_eq!(got.len(), before + 1, "nothing but the answer: {got:?}");
    session.stderr_line("reopening it with Last-Event-ID");
    relay.hold(false);
    // The message sent in the gap, replayed on the reopened stream.
    let replayed = session.next();
    assert_eq!(replayed["method"], "notifications/message", "{replayed}");
    let gets = relay.gets();
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert!(
        gets[1].to_ascii_lowercase().contains("last-event-id: "),
        "{gets:?}"
    );
    // Stopped again, so that nothing more comes.
    session.write_line(&toggle(5));
    until_answered(&mut session, 5, &mut got);
    let log = session.close();
    // Each answer once, each event id once.
    for id in ["2", "3", "4", "5"] {
        let answers = log
            .dir(Direction::S2c)
            .into_iter()
            .filter(|f| f.id.as_deref() == Some(id))
            .count();
        assert_eq!(answers, 1, "answers to {id}");
    }
    let mut ids: Vec<String> = log
        .dir(Direction::S2c)
        .into_iter()
        .filter_map(|f| f.http.as_ref()?.event_id.clone())
        .collect();
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "an event relayed twice");
    let on_get = log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| f.http.as_ref().is_some_and(|h| h.via == HttpVia::Get))
        .count();
    assert!(on_get >= 2, "{:?}", log.trailer.errors);
    let reopened: Vec<_> = log
        .trailer
        .errors
        .iter()
        .filter(|e| e.contains("reopening it with Last-Event-ID"))
        .collect();
    assert_eq!(reopened.len(), 1, "{:?}", log.trailer.errors);
}
