//! What no client can do to `catdog serve`: hold its threads and files with connections that
//! say nothing or an HTTP version it does not speak, fill its memory with headers, or keep
//! more uploads in memory than it takes. Crafted requests over raw sockets to 127.0.0.1,
//! bounded in count and time.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::{Served, multipart, rotated_photo};

/// Header timeout and body stall of the server (src/serve/http.rs), with a margin.
const CLOSED_WITHIN: Duration = Duration::from_secs(25);

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
}

/// Everything the server sends until it closes the connection, as text.
fn read_until_closed(mut stream: TcpStream) -> String {
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

/// The status of the reply that `request` (raw bytes) gets.
fn status_of(port: u16, request: &[u8]) -> u16 {
    let mut stream = connect(port);
    // The server may answer and close before reading all of it.
    let _ = stream.write_all(request);
    let reply = read_until_closed(stream);
    reply
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("no reply head: {reply:?}"))
}

/// Open files and threads of process `pid`.
#[cfg(target_os = "linux")]
fn files_and_threads(pid: u32) -> (usize, usize) {
    let files = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let threads = status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (files, threads)
}

/// Waits (up to 10 s) for `pid` to hold no more than `files` open files and `threads`
/// threads; what it holds then.
#[cfg(target_os = "linux")]
fn settles_to(pid: u32, files: usize, threads: usize) -> (usize, usize) {
    let started = Instant::now();
    loop {
        let now = files_and_threads(pid);
        if (now.0 <= files && now.1 <= threads) || started.elapsed() > Duration::from_secs(10) {
            return now;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET / HTTP/2.0` is refused at once, and 300 such requests from clients that close
/// straight away leave no thread or open file behind.
#[cfg(target_os = "linux")]
#[test]
fn requests_in_another_http_version_are_refused_and_leave_nothing_behind() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let pid = served.child.id();
    let port = served.port;
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    for version in ["HTTP/2.0", "HTTP/3.0"] {
        let status = status_of(port, format!("GET / {version}\r\n{host}\r\n").as_bytes());
        assert!(matches!(status, 400 | 505), "{version}: {status}");
    }
    let before = files_and_threads(pid);
    for _ in 0..300 {
        let mut stream = connect(port);
        stream.write_all(b"GET / HTTP/2.0\r\n\r\n").unwrap();
        let _ = stream.shutdown(Shutdown::Both);
    }
    let after = settles_to(pid, before.0 + 8, before.1 + 8);
    assert!(
        after.0 <= before.0 + 8 && after.1 <= before.1 + 8,
        "open files and threads before {before:?}, 10 s after 300 HTTP/2.0 requests {after:?}"
    );
    assert_eq!(served.get("/style.css").0, 200);
}

/// A connection that sends nothing, half a header, or part of a body is closed within the
/// server's timeouts (the last one told why).
#[test]
fn silent_and_stalled_connections_are_closed() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let started = Instant::now();
    let silent = connect(port);
    let mut half_header = connect(port);
    half_header
        .write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAcc").as_bytes())
        .unwrap();
    let mut part_body = connect(port);
    part_body
        .write_all(
            format!(
                "POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Catdog-Token: {}\r\n\
                 Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\
                 \r\n--x",
                served.token
            )
            .as_bytes(),
        )
        .unwrap();
    let readers: Vec<_> = [silent, half_header, part_body]
        .into_iter()
        .map(|stream| std::thread::spawn(move || (read_until_closed(stream), started.elapsed())))
        .collect();
    let replies: Vec<(String, Duration)> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    for (what, (reply, after)) in ["silent", "half a header", "part of a body"]
        .iter()
        .zip(&replies)
    {
        assert!(
            *after < CLOSED_WITHIN,
            "the connection with {what} was still open after {after:?}: {reply:?}"
        );
    }
    let stalled = &replies[2].0;
    assert!(stalled.starts_with("HTTP/1.1 408"), "{stalled}");
    assert!(stalled.contains("stopped coming"), "{stalled}");
    assert_eq!(served.get("/style.css").0, 200);
}

/// 400 connections held open at once: the server keeps no more than its cap of them, and
/// answers again as soon as they go.
#[cfg(target_os = "linux")]
#[test]
fn a_flood_of_connections_cannot_use_up_the_servers_files() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let pid = served.child.id();
    let (files_before, _) = files_and_threads(pid);
    let flood: Vec<TcpStream> = (0..400).map(|_| connect(served.port)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let (files, _) = files_and_threads(pid);
    assert!(
        files <= files_before + 128 + 8,
        "{files} open files with 400 connections waiting ({files_before} before)"
    );
    drop(flood);
    assert_eq!(served.get("/style.css").0, 200);
}

/// With its open files used up (a limit a few above what it holds), the server goes on:
/// connections it cannot take yet wait, and it answers again once files are free.
#[cfg(target_os = "linux")]
#[test]
fn running_out_of_open_files_does_not_stop_the_server() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start(cache.path());
    let pid = served.child.id();
    let limit = files_and_threads(pid).0 + 10;
    let status = std::process::Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success());
    let flood: Vec<TcpStream> = (0..40).map(|_| connect(served.port)).collect();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "the server exited with its open files used up: {}",
        served.stderr()
    );
    drop(flood);
    assert_eq!(served.get("/style.css").0, 200);
}

/// Headers too large or too many are refused with 431, without reading them whole.
#[test]
fn oversized_headers_are_refused_with_431() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let long_line = format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Long: {}\r\n\r\n",
        "a".repeat(4 << 20)
    );
    assert_eq!(status_of(port, long_line.as_bytes()), 431);
    let mut many = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for n in 0..500 {
        many.push_str(&format!("X-Header-{n}: {n}\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(status_of(port, many.as_bytes()), 431);
    assert_eq!(served.get("/style.css").0, 200);
}

/// Two Content-Lengths that disagree, or one that is no number, are refused rather than
/// taken as no body.
#[test]
fn ambiguous_message_framing_is_refused() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let head = format!(
        "POST /api/bench HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Catdog-Token: {}\r\n",
        served.token
    );
    for framing in [
        "Content-Length: 2\r\nContent-Length: 20\r\n",
        "Content-Length: two\r\n",
        "Transfer-Encoding: gzip\r\n",
    ] {
        let request = format!("{head}{framing}\r\n{{}}");
        assert_eq!(status_of(port, request.as_bytes()), 400, "{framing}");
    }
    let request =
        format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    assert_eq!(status_of(port, request.as_bytes()), 400, "two Host headers");
    let bench = served.get_json("/api/bench");
    assert_eq!(bench["running"], false, "a bench started: {bench}");
}

/// Uploads beyond the server's cap wait their turn instead of all being held in memory at
/// once.
#[test]
fn uploads_beyond_the_cap_wait_their_turn() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let (content_type, body) = multipart(&[("rotated.jpg", &rotated_photo())]);
    let head = format!(
        "POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Catdog-Token: {}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        served.token,
        body.len()
    );
    // Four uploads under way, each with half its body sent.
    let held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = connect(port);
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&body[..body.len() / 2]).unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (sender, fifth) = std::sync::mpsc::channel();
    let (token, whole) = (served.token.clone(), body.clone());
    std::thread::spawn(move || {
        let headers = [
            ("X-Catdog-Token", token.as_str()),
            ("Content-Type", content_type.as_str()),
        ];
        let _ = sender.send(super::http(port, "POST", "/api/predict", &headers, &whole));
    });
    assert!(
        fifth.recv_timeout(Duration::from_secs(2)).is_err(),
        "a fifth upload was read while four were under way"
    );
    // The four finish: the fifth is answered.
    for mut stream in held {
        stream.write_all(&body[body.len() / 2..]).unwrap();
        let reply = read_until_closed(stream);
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    }
    let (status, _, reply) = fifth.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
}
