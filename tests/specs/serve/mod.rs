//! `catdog serve`: the page, its rules and its API, over real HTTP on 127.0.0.1, each test
//! with a server of its own (it starts in a moment).

mod browser;
mod limits;
mod page;
mod process;
mod race;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Catdog, catdog, fixture, synth};

/// A `catdog serve` started on a free port with the built-in model on flex, its cache folder
/// (where bench results are kept) in `cache`; killed when dropped.
pub struct Served {
    pub child: Child,
    pub port: u16,
    pub token: String,
}

impl Served {
    pub fn start(cache: &Path) -> Served {
        Served::start_with(cache, &[])
    }

    /// [`Served::start`] with `args` added (`--host 0.0.0.0`, say).
    pub fn start_with(cache: &Path, args: &[&str]) -> Served {
        let mut child = serve_command(cache, &["--port", "0"])
            .args(args)
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines
            .next()
            .expect("catdog serve prints its address")
            .unwrap();
        let address = first
            .strip_prefix("catdog serve: the page is at http://127.0.0.1:")
            .unwrap_or_else(|| panic!("{first}"));
        let port = address.trim_end_matches('/').parse().unwrap();
        let model = lines.next().unwrap().unwrap();
        assert!(model.starts_with("model: built-in"), "{model}");
        let mut served = Served {
            child,
            port,
            token: String::new(),
        };
        let (status, _, page) = served.get("/");
        assert_eq!(status, 200);
        let page = String::from_utf8(page).unwrap();
        let marker = "name=\"catdog-token\" content=\"";
        let at = page.find(marker).expect("the page carries its token") + marker.len();
        served.token = page[at..at + 32].to_string();
        served
    }

    /// One request, with this server's `Host` unless `headers` names one.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        http(self.port, method, path, headers, body)
    }

    /// What the server wrote to stderr, once it has stopped.
    pub fn stderr(&mut self) -> String {
        let mut text = String::new();
        let mut pipe = self.child.stderr.take().expect("read once");
        pipe.read_to_string(&mut text).unwrap();
        text
    }

    pub fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        self.request("GET", path, &[], b"")
    }

    pub fn get_json(&self, path: &str) -> Value {
        let (status, _, body) = self.get(path);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }

    /// `POST path` with the page's token.
    pub fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
        let mut all = vec![("X-Catdog-Token", self.token.as_str())];
        all.extend_from_slice(headers);
        let (status, _, body) = self.request("POST", path, &all, body);
        let json = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{status}: {err}: {}", String::from_utf8_lossy(&body)));
        (status, json)
    }

    pub fn predict(&self, photos: &[(&str, &[u8])]) -> (u16, Value) {
        let (content_type, body) = multipart(photos);
        self.post("/api/predict", &[("Content-Type", &content_type)], &body)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `catdog serve` with the built-in model on flex, its cache folder in `cache`, and `args`.
pub fn serve_command(cache: &Path, args: &[&str]) -> Catdog {
    catdog()
        .serve()
        .flex()
        .model("builtin")
        .args(args)
        .env("XDG_CACHE_HOME", cache)
}

/// A small JPEG turned by its EXIF orientation, and a drawn picture of `class`, written
/// into `dir`.
pub fn a_photo_and_a_drawing(dir: &Path, class: &str) -> (PathBuf, PathBuf) {
    let pictures = dir.join("pictures");
    synth(&pictures, 2, 48);
    let drawn = std::fs::read_dir(pictures.join(class))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let photo = dir.join("rotated.jpg");
    std::fs::write(&photo, rotated_photo()).unwrap();
    (photo, drawn)
}

/// One HTTP/1.1 request to 127.0.0.1:`port`, the connection closed after it.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"))
    {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (and close) before reading a body it refuses.
    let _ = stream.write_all(body);
    // The head, then as many bytes as it announces (a server may keep the connection open
    // after its answer, to drain a body it refused).
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split(' ')
        .nth(1)
        .unwrap_or_else(|| panic!("no reply head: {head:?}"))
        .parse()
        .unwrap();
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    });
    let mut body = Vec::new();
    match length {
        Some(length) => {
            body.resize(length, 0);
            reader.read_exact(&mut body).unwrap();
        }
        None => {
            reader.read_to_end(&mut body).unwrap();
        }
    }
    (status, head, body)
}

/// A `multipart/form-data` body of `photos` (file name, bytes), as a browser's FormData
/// sends it, and its content type.
pub fn multipart(photos: &[(&str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "----catdog-test-boundary-7d1f";
    let mut body = Vec::new();
    for (name, bytes) in photos {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"photo\"; \
                 filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A small JPEG turned by its EXIF orientation (`tests/fixtures/exif-rotate-90.jpg`).
pub fn rotated_photo() -> Vec<u8> {
    std::fs::read(fixture("exif-rotate-90.jpg")).unwrap()
}
