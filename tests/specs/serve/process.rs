//! `catdog serve` as a process: where it listens (a warning where other computers can reach
//! it, none for this computer's own addresses), a port in use, and SIGTERM.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use super::{Served, http, multipart, serve_command};
use crate::common::stderr;

/// `--host` with an address other computers reach: a warning saying so, and the page still
/// refuses requests for another server's name.
#[test]
fn listening_beyond_this_computer_warns() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with(cache.path(), &["--host", "0.0.0.0"]);
    let port = served.port;
    let host = format!("rebind.example:{port}");
    assert_eq!(http(port, "GET", "/", &[("Host", &host)], b"").0, 403);
    assert_eq!(http(port, "GET", "/", &[], b"").0, 200);
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let stderr = served.stderr();
    assert!(
        stderr.contains("warning: listening on 0.0.0.0: anyone who can reach this computer"),
        "{stderr}"
    );
}

/// `::ffff:127.0.0.1` is this computer's own address written for IPv6: no warning, and the
/// page answers at 127.0.0.1.
#[test]
fn an_ipv4_mapped_loopback_address_is_this_computer_only() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with(cache.path(), &["--host", "::ffff:127.0.0.1"]);
    assert_eq!(served.get("/style.css").0, 200);
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let stderr = served.stderr();
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// SIGTERM while a photo is being sent: the request in flight still gets its answer, and
/// catdog exits as a program ended by SIGTERM reports it, 143.
#[test]
fn sigterm_answers_the_request_in_flight_and_exits_143() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start(cache.path());
    let cat =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cat.jpg")).unwrap();
    let (content_type, body) = multipart(&[("cat.jpg", &cat)]);
    let mut stream = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Catdog-Token: {}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        served.port,
        served.token,
        body.len()
    )
    .unwrap();
    let half = body.len() / 2;
    stream.write_all(&body[..half]).unwrap();
    // The server reads the request's head and starts answering it.
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(served.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stream.write_all(&body[half..]).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("\"label\":\"cat\""), "{reply}");
    let exit = served.child.wait().unwrap();
    assert_eq!(exit.code(), Some(143), "{exit:?}");
}

/// A port another program holds: a plain error naming it and what to do, no panic.
#[test]
fn a_port_in_use_is_a_clear_error() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port.to_string();
    let output = serve_command(cache.path(), &["--port", &port])
        .fails_with(&format!("cannot listen on 127.0.0.1:{port}"));
    assert!(stderr(&output).contains("--port 0"), "{}", stderr(&output));
    assert_eq!(
        served.get("/style.css").0,
        200,
        "the first server still answers"
    );
}
