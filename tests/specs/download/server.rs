//! The test's own HTTP server on 127.0.0.1: it serves one archive under any path, answering
//! each connection as the test asks (whole, cut short, too long, an error status, a
//! redirect), and records the Range and If-Range headers it was sent.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use super::archives::md5_hex;

/// What the server does with one connection.
#[derive(Clone, Copy)]
pub enum Reply {
    /// The file, or the part a Range header asks for.
    Whole,
    /// Announces the whole file, sends its first `n` bytes and hangs up.
    DropAfter(usize),
    /// Sends only the first `n` bytes, as if that were the whole file.
    Truncated(usize),
    Status(u16),
    /// The file, then `n` bytes more, with no Content-Length (the body ends when the
    /// connection closes).
    Longer(usize),
    /// 416 Range Not Satisfiable, saying the file's size (`Content-Range: bytes */N`).
    NotSatisfiable,
    /// 302 to the same file under another path.
    Redirect,
}

pub struct Server {
    pub url: String,
    /// The Range header of each request, `None` where it had none.
    pub ranges: Arc<Mutex<Vec<Option<String>>>>,
    /// The If-Range header of each request.
    pub if_ranges: Arc<Mutex<Vec<Option<String>>>>,
}

/// The ETag the test server gives `body`: its MD5, so another file has another one.
pub fn etag(body: &[u8]) -> String {
    format!("\"{}\"", md5_hex(body))
}

/// Serves `body` under any path, one reply per connection in order (the last repeats).
pub fn serve(body: Vec<u8>, replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let ranges = Arc::new(Mutex::new(Vec::new()));
    let if_ranges = Arc::new(Mutex::new(Vec::new()));
    let (seen, seen_if) = (Arc::clone(&ranges), Arc::clone(&if_ranges));
    thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let reply = replies[n.min(replies.len() - 1)];
            let (range, if_range) = answer(stream, &body, reply);
            seen.lock().unwrap().push(range);
            seen_if.lock().unwrap().push(if_range);
        }
    });
    Server {
        url,
        ranges,
        if_ranges,
    }
}

fn answer(mut stream: TcpStream, body: &[u8], reply: Reply) -> (Option<String>, Option<String>) {
    let mut range = None;
    let mut if_range = None;
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("range:") {
            range = Some(value.trim().to_string());
        }
        if line.to_ascii_lowercase().starts_with("if-range:") {
            if_range = Some(line["if-range:".len()..].trim().to_string());
        }
    }
    let tag = etag(body);
    let head = |status: &str, length: usize, extra: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {length}\r\nETag: {tag}\r\n{extra}\
             Connection: close\r\n\r\n"
        )
    };
    // A Range with an If-Range naming another version of the file gets the whole file.
    let range_served = range
        .as_deref()
        .filter(|_| if_range.as_ref().is_none_or(|v| *v == tag));
    let _ = match reply {
        Reply::Whole => match range_served.and_then(|r| r.strip_prefix("bytes=")) {
            Some(from) => {
                let from: usize = from.trim_end_matches('-').parse().unwrap();
                let rest = &body[from..];
                let extra = format!(
                    "Content-Range: bytes {from}-{}/{}\r\n",
                    body.len() - 1,
                    body.len()
                );
                stream
                    .write_all(head("206 Partial Content", rest.len(), &extra).as_bytes())
                    .and_then(|()| stream.write_all(rest))
            }
            None => stream
                .write_all(head("200 OK", body.len(), "").as_bytes())
                .and_then(|()| stream.write_all(body)),
        },
        Reply::DropAfter(n) => stream
            .write_all(head("200 OK", body.len(), "").as_bytes())
            .and_then(|()| stream.write_all(&body[..n])),
        Reply::Truncated(n) => stream
            .write_all(head("200 OK", n, "").as_bytes())
            .and_then(|()| stream.write_all(&body[..n])),
        Reply::Status(code) => stream
            .write_all(head(&format!("{code} Oops"), 4, "").as_bytes())
            .and_then(|()| stream.write_all(b"oops")),
        Reply::Longer(n) => stream
            .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
            .and_then(|()| stream.write_all(body))
            .and_then(|()| stream.write_all(&vec![0x55; n])),
        Reply::NotSatisfiable => stream.write_all(
            head(
                "416 Range Not Satisfiable",
                0,
                &format!("Content-Range: bytes */{}\r\n", body.len()),
            )
            .as_bytes(),
        ),
        Reply::Redirect => {
            stream.write_all(head("302 Found", 0, "Location: /moved/here/cats.zip\r\n").as_bytes())
        }
    };
    let _ = stream.shutdown(std::net::Shutdown::Both);
    (range, if_range)
}
