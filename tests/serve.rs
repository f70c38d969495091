//! `catdog serve`: the page, its rules and its API, over real HTTP on 127.0.0.1.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{assert_success, catdog, command};
use serde_json::Value;

/// A `catdog serve` started on a free port with the built-in model on flex, its cache folder
/// (where bench results are kept) in `cache`; killed when dropped.
struct Served {
    child: Child,
    port: u16,
    token: String,
}

impl Served {
    fn start(cache: &Path) -> Served {
        Served::start_with(cache, &[])
    }

    /// [`Served::start`] with `args` added (`--host 0.0.0.0`, say).
    fn start_with(cache: &Path, args: &[&str]) -> Served {
        let mut child = serve_command(cache, &["--port", "0"])
            .args(args)
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
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String, Vec<u8>) {
        http(self.port, method, path, headers, body)
    }

    /// What the server wrote to stderr, once it has stopped.
    fn stderr(&mut self) -> String {
        let mut text = String::new();
        let mut pipe = self.child.stderr.take().expect("read once");
        pipe.read_to_string(&mut text).unwrap();
        text
    }

    fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        self.request("GET", path, &[], b"")
    }

    fn get_json(&self, path: &str) -> Value {
        let (status, _, body) = self.get(path);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }

    /// `POST path` with the page's token.
    fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
        let mut all = vec![("X-Catdog-Token", self.token.as_str())];
        all.extend_from_slice(headers);
        let (status, _, body) = self.request("POST", path, &all, body);
        let json = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{status}: {err}: {}", String::from_utf8_lossy(&body)));
        (status, json)
    }

    fn predict(&self, photos: &[(&str, &[u8])]) -> (u16, Value) {
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
fn serve_command(cache: &Path, args: &[&str]) -> std::process::Command {
    let mut serve = command();
    serve
        .args(["serve", "--backend", "flex", "--model", "builtin"])
        .args(args)
        .env("XDG_CACHE_HOME", cache);
    serve
}

/// A small JPEG turned by its EXIF orientation, and a drawn picture of `class`, written
/// into `dir`.
fn a_photo_and_a_drawing(dir: &Path, class: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let pictures = dir.join("pictures");
    assert_success(&catdog(&[
        "synth",
        "--out",
        &pictures.display().to_string(),
        "--count",
        "2",
        "--size",
        "48",
    ]));
    let drawn = std::fs::read_dir(pictures.join(class))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let photo = dir.join("rotated.jpg");
    std::fs::write(&photo, fixture("exif-rotate-90.jpg")).unwrap();
    (photo, drawn)
}

/// One HTTP/1.1 request to 127.0.0.1:`port`, the connection closed after it.
fn http(
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
fn multipart(photos: &[(&str, &[u8])]) -> (String, Vec<u8>) {
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

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

/// The page, its files and the model; predictions that match `catdog predict`'s, for several
/// photos and several clients at once; and every refusal, each with its status and reason.
#[test]
fn the_page_predicts_like_predict_and_refuses_what_it_should() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;

    // The page and its two files, compiled in, with the headers that keep other sites out.
    let (_, head, _) = served.get("/");
    assert!(
        head.contains("Content-Security-Policy: default-src 'self'"),
        "{head}"
    );
    assert!(
        served.token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        served.token
    );
    let (status, head, script) = served.get("/app.js");
    assert_eq!(status, 200);
    assert!(head.contains("text/javascript"), "{head}");
    assert!(String::from_utf8(script).unwrap().contains("/api/predict"));
    assert_eq!(served.get("/style.css").0, 200);

    // Under the hood, and the machine.
    let model = served.get_json("/api/model");
    assert_eq!(model["name"], "builtin");
    assert_eq!(model["network"], "wide SmallCnn");
    assert_eq!(model["classes"], serde_json::json!(["cat", "dog"]));
    assert_eq!(model["curves"], true);
    let (status, _, curves) = served.get("/api/model/curves.svg");
    assert_eq!(status, 200);
    assert!(String::from_utf8(curves).unwrap().contains("<svg"));
    let devices = served.get_json("/api/devices");
    let verdict = devices["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("GPU: yes") || verdict.starts_with("No GPU"),
        "{verdict}"
    );

    // Two photos at once: the answers `catdog predict` gives the same files.
    let dir = tempfile::tempdir().unwrap();
    let (photo, drawn) = a_photo_and_a_drawing(dir.path(), "cat");
    let drawn_bytes = std::fs::read(&drawn).unwrap();
    let photo_bytes = fixture("exif-rotate-90.jpg");
    let (status, reply) =
        served.predict(&[("rotated.jpg", &photo_bytes), ("drawn.png", &drawn_bytes)]);
    assert_eq!(status, 200, "{reply}");
    assert!(
        reply["model"]
            .as_str()
            .unwrap()
            .starts_with("model: built-in"),
        "{reply}"
    );
    let expected = catdog(&[
        "predict",
        "--backend",
        "flex",
        "--model",
        "builtin",
        "--json",
        &photo.display().to_string(),
        &drawn.display().to_string(),
    ]);
    assert_success(&expected);
    let expected: Vec<Value> = String::from_utf8(expected.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let answers = reply["photos"].as_array().unwrap();
    assert_eq!(answers.len(), 2);
    for ((answer, expected), name) in answers
        .iter()
        .zip(&expected)
        .zip(["rotated.jpg", "drawn.png"])
    {
        assert_eq!(answer["name"], name);
        assert_eq!(answer["answer"], expected["answer"], "{answer} {expected}");
        for class in ["cat", "dog"] {
            let (got, want) = (
                answer["probabilities"][class].as_f64().unwrap(),
                expected["probabilities"][class].as_f64().unwrap(),
            );
            assert!((got - want).abs() < 1e-5, "{class}: {got} vs {want}");
        }
        assert!(answer.get("path").is_none(), "{answer}");
    }

    // Eight clients at once: each gets its answer, the same one.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (content_type, body) = multipart(&[("rotated.jpg", &photo_bytes)]);
            let token = served.token.clone();
            std::thread::spawn(move || {
                let headers = [
                    ("X-Catdog-Token", token.as_str()),
                    ("Content-Type", &content_type),
                ];
                let (status, _, body) = http(port, "POST", "/api/predict", &headers, &body);
                assert_eq!(status, 200);
                let reply: Value = serde_json::from_slice(&body).unwrap();
                reply["photos"][0]["probabilities"]["cat"].as_f64().unwrap()
            })
        })
        .collect();
    let cat = answers[0]["probabilities"]["cat"].as_f64().unwrap();
    for client in clients {
        assert!((client.join().unwrap() - cat).abs() < 1e-6);
    }

    // A file that is not a photo: 400 and why, alone; beside a photo, its own error.
    let (status, reply) = served.predict(&[("notes.txt", b"these are not pixels")]);
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("notes.txt"),
        "{reply}"
    );
    let (status, reply) = served.predict(&[("rotated.jpg", &photo_bytes), ("notes.txt", b"text")]);
    assert_eq!(status, 200, "{reply}");
    assert!(reply["photos"][0]["error"].is_null(), "{reply}");
    assert!(
        reply["photos"][1]["error"]
            .as_str()
            .unwrap()
            .contains("notes.txt"),
        "{reply}"
    );

    // Too large, too many: 413 and the limits.
    let huge = vec![0u8; 21 << 20];
    let (status, reply) = served.predict(&[("huge.jpg", &huge)]);
    assert_eq!(status, 413, "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("huge.jpg"),
        "{reply}"
    );
    let many: Vec<(&str, &[u8])> = (0..33).map(|_| ("p.jpg", photo_bytes.as_slice())).collect();
    let (status, reply) = served.predict(&many);
    assert_eq!(status, 413, "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .contains("more than 32 photos"),
        "{reply}"
    );
    // A body declared far larger than memory, never sent: 413, and the server lives on.
    let (status, _, body) = served.request(
        "POST",
        "/api/predict",
        &[
            ("X-Catdog-Token", &served.token),
            ("Content-Length", "1000000000000"),
        ],
        b"",
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the server stopped after a request declaring 1 TB"
    );
    assert_eq!(served.get("/style.css").0, 200);
    let (status, reply) = served.post(
        "/api/predict",
        &[("Content-Type", "image/jpeg")],
        &photo_bytes,
    );
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .contains("multipart/form-data"),
        "{reply}"
    );

    // Another site's name for this address (DNS rebinding), no token, a wrong one.
    let host = format!("rebind.example:{port}");
    let (status, _, body) = served.request("GET", "/", &[("Host", &host)], b"");
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&body).contains("rebind.example"));
    let (content_type, body) = multipart(&[("rotated.jpg", &photo_bytes)]);
    for token in [None, Some("0123456789abcdef0123456789abcdef")] {
        let mut headers = vec![("Content-Type", content_type.as_str())];
        headers.extend(token.map(|t| ("X-Catdog-Token", t)));
        let (status, _, reply) = served.request("POST", "/api/predict", &headers, &body);
        assert_eq!(status, 403, "{}", String::from_utf8_lossy(&reply));
        assert!(String::from_utf8_lossy(&reply).contains("token"));
    }

    // No path on disk is reachable, and each address takes its own method.
    assert_eq!(served.get("/../Cargo.toml").0, 404);
    assert_eq!(served.get("/api/model/../../Cargo.toml").0, 404);
    assert_eq!(served.get("/api/predict").0, 405);
}

/// The race: `catdog bench`'s code on flex, one at a time (409 for a second), its progress and
/// verdict readable, its result kept in the cache folder and listed again after a restart;
/// settings out of range refused; Ctrl-C stops the server with exit code 0.
#[test]
fn the_race_runs_one_at_a_time_and_is_kept() {
    let cache = tempfile::tempdir().unwrap();
    let tiny = br#"{"backends": ["flex"], "image_size": 16, "batch_size": 4, "seconds": 0.05,
                   "repeats": 1, "warmup_steps": 1}"#;
    let json = [("Content-Type", "application/json")];
    let finished = {
        let served = Served::start(cache.path());
        for (settings, reason) in [
            (&br#"{"backends": ["quantum"]}"#[..], "quantum"),
            (br#"{"seconds": 0}"#, "window"),
            (br#"{"image_size": 4}"#, "image size"),
            (br#"{"path": "/etc"}"#, "unknown field"),
            // Allowed ranges, but a step no machine here holds in memory.
            (
                br#"{"backends": ["flex"], "image_size": 1024, "batch_size": 4096}"#,
                "more than half of this computer's",
            ),
        ] {
            let (status, reply) = served.post("/api/bench", &json, settings);
            assert_eq!(status, 400, "{reply}");
            assert!(reply["error"].as_str().unwrap().contains(reason), "{reply}");
        }
        let (status, reply) = served.post("/api/bench", &json, tiny);
        assert_eq!(status, 202, "{reply}");
        let (status, reply) = served.post("/api/bench", &json, tiny);
        // The first may have finished already on a fast machine; if not, one at a time.
        assert!(status == 409 || status == 202, "{status} {reply}");
        if status == 409 {
            assert!(
                reply["error"].as_str().unwrap().contains("already running"),
                "{reply}"
            );
        }
        let started = Instant::now();
        let status = loop {
            let status = served.get_json("/api/bench");
            if status["running"] == false {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(300), "{status}");
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(status["error"].is_null(), "{status}");
        let progress = status["progress"].as_array().unwrap();
        assert!(
            progress
                .iter()
                .any(|line| line.as_str().unwrap().starts_with("flex on ")),
            "{status}"
        );
        let latest = &status["results"][0];
        assert_eq!(latest["runs"][0]["backend"], "flex", "{latest}");
        assert!(latest["runs"][0]["train_images_per_sec"].as_f64().unwrap() > 0.0);
        assert!(
            latest["verdict"].as_str().unwrap().contains("photos/s"),
            "{latest}"
        );
        assert!(latest["chart_svg"].as_str().unwrap().contains("<svg"));
        let kept: Vec<_> = std::fs::read_dir(cache.path().join("catdog/bench-results"))
            .unwrap()
            .collect();
        assert!(!kept.is_empty());
        latest["finished_ms"].clone()
    };

    // A new server lists the races run before it.
    let served = Served::start(cache.path());
    let status = served.get_json("/api/bench");
    let results = status["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["finished_ms"] == finished),
        "{status}"
    );

    // A race can be stopped from the page (with its token), and ends at its next step
    // instead of running its 30 s of windows.
    let (status, _, _) = served.request("DELETE", "/api/bench", &[], b"");
    assert_eq!(status, 403, "DELETE needs the token");
    let token = [("X-Catdog-Token", served.token.as_str())];
    let (status, _, _) = served.request("DELETE", "/api/bench", &token, b"");
    assert_eq!(status, 409, "nothing runs");
    let long = br#"{"backends": ["flex"], "image_size": 16, "batch_size": 4, "seconds": 10,
                    "repeats": 3, "warmup_steps": 1}"#;
    let (status, reply) = served.post("/api/bench", &json, long);
    assert_eq!(status, 202, "{reply}");
    let asked = Instant::now();
    let (status, _, _) = served.request("DELETE", "/api/bench", &token, b"");
    assert_eq!(status, 202);
    let status = loop {
        let status = served.get_json("/api/bench");
        if status["running"] == false {
            break status;
        }
        assert!(asked.elapsed() < Duration::from_secs(20), "{status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .contains("stopped before the end"),
        "{status}"
    );

    // Ctrl-C: a clean stop.
    let mut served = served;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(served.child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let started = Instant::now();
    let exit = loop {
        if let Some(exit) = served.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "Ctrl-C did not stop the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exit.code(), Some(0));
    let stderr = served.stderr();
    assert!(stderr.contains("the server stopped"), "{stderr}");
}

/// A WebDriver session of headless chromium through chromedriver, spoken to over HTTP.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start(browser: &Path, driver: &Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = std::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        // As the machine's probe found: no background connections (the network is closed);
        // shared memory through /tmp, as a container's /dev/shm may be tiny.
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=900,1000",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let mut browser_session = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let created = browser_session.call(
            "POST",
            "/session",
            serde_json::json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": browser, "args": args},
                "goog:loggingPrefs": {"browser": "ALL"},
            }}}),
        );
        browser_session.session = created["sessionId"].as_str().unwrap().to_string();
        browser_session
    }

    /// One WebDriver command; its `value`.
    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let body = match body.is_null() {
            true => String::new(),
            false => body.to_string(),
        };
        let (status, _, reply) = http(
            self.port,
            method,
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        assert_eq!(status, 200, "{method} {path}: {reply}");
        reply["value"].clone()
    }

    fn session_call(&self, method: &str, path: &str, body: Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Runs `script` in the page and returns what it returns.
    fn run(&self, script: &str) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            serde_json::json!({"script": script, "args": []}),
        )
    }

    /// Waits until `script` returns true.
    fn wait_for(&self, script: &str, what: &str) {
        let started = Instant::now();
        while self.run(script) != true {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the page never showed {what}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = http(self.port, "DELETE", &path, &[], b"");
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// In headless chromium: the page loads with no error in its console, photos chosen through
/// its own file input get their answer and a bar per class (a file that is not a photo, the
/// reason), and the race shows a verdict.
/// `CATDOG_SCREENSHOT=FILE.png` keeps a screenshot of the page with the photos answered (the
/// README's, taken with `CATDOG_SCREENSHOT_PHOTOS=examples/cat.jpg:examples/dog.jpg`, whole
/// paths).
#[test]
fn the_page_works_in_a_real_browser() {
    let Some((browser, driver)) = common::browser_or_skip("the_page_works_in_a_real_browser")
    else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    // Real photos where they are at hand (the screenshot's), else a small JPEG and a drawing.
    let dir = tempfile::tempdir().unwrap();
    let photos: Vec<std::path::PathBuf> = match std::env::var_os("CATDOG_SCREENSHOT_PHOTOS") {
        Some(list) => std::env::split_paths(&list).collect(),
        None => {
            let (photo, drawn) = a_photo_and_a_drawing(dir.path(), "dog");
            vec![photo, drawn]
        }
    };

    let browser = Browser::start(&browser, &driver);
    let page = format!("http://127.0.0.1:{}/", served.port);
    browser.session_call("POST", "/url", serde_json::json!({ "url": page }));
    browser.wait_for(
        "return document.getElementById('model-facts').children.length > 0",
        "the model's facts",
    );
    browser.wait_for(
        "return !document.getElementById('devices-verdict').textContent.startsWith('Looking')",
        "the devices verdict",
    );

    // Photos through the page's own file input, as a person picks them.
    let input = browser.session_call(
        "POST",
        "/element",
        serde_json::json!({"using": "css selector", "value": "#photos"}),
    );
    let input = input
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let files: Vec<String> = photos.iter().map(|p| p.display().to_string()).collect();
    browser.session_call(
        "POST",
        &format!("/element/{input}/value"),
        serde_json::json!({ "text": files.join("\n") }),
    );
    let answered = format!(
        "return document.querySelectorAll('#answers .bar-row').length === {}",
        2 * photos.len()
    );
    browser.wait_for(&answered, "an answer and two bars for each photo");
    let words = browser.run(
        "return Array.from(document.querySelectorAll('#answers .status')).map(e => e.textContent)",
    );
    for words in words.as_array().unwrap() {
        let words = words.as_str().unwrap();
        assert!(
            ["cat", "dog", "not sure ("]
                .iter()
                .any(|w| words.starts_with(w)),
            "{words}"
        );
    }

    // What the README shows: the photos answered.
    let png = browser.session_call("GET", "/screenshot", Value::Null);
    let png = base64_decode(png.as_str().unwrap());
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    if let Some(path) = std::env::var_os("CATDOG_SCREENSHOT") {
        std::fs::write(path, png).unwrap();
    }

    // A tiny race: flex only, one short window.
    browser.run(
        "window.catdogBenchSettings = {backends: ['flex'], image_size: 16, batch_size: 4, \
         seconds: 0.05, repeats: 1, warmup_steps: 1}; \
         document.getElementById('bench-start').click();",
    );
    browser.wait_for(
        "return !document.getElementById('bench-latest').hidden && \
         document.getElementById('bench-start').disabled === false",
        "the race's result",
    );
    let verdict = browser.run("return document.getElementById('bench-verdict').textContent");
    assert!(verdict.as_str().unwrap().contains("photos/s"), "{verdict}");

    // Nothing went wrong in the page: no error in its console.
    let log = browser.session_call("POST", "/se/log", serde_json::json!({"type": "browser"}));
    let errors: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["level"] == "SEVERE")
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // A file that is not a photo: its reason, in the page. (Last: chromium logs the 400 that
    // says so as a console error, as it does for any request refused.)
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "these are not pixels").unwrap();
    browser.session_call(
        "POST",
        &format!("/element/{input}/value"),
        serde_json::json!({ "text": notes.display().to_string() }),
    );
    browser.wait_for(
        "return Array.from(document.querySelectorAll('#answers .status.error'))\
         .some(e => e.textContent.includes('notes.txt'))",
        "why notes.txt was refused",
    );
}

/// Standard base64, as WebDriver sends a screenshot.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    digits
        .chunks(4)
        .flat_map(|chunk| {
            let bits = chunk.iter().fold(0u32, |acc, &d| acc << 6 | u32::from(d))
                << (6 * (4 - chunk.len()));
            let bytes = bits.to_be_bytes();
            bytes[1..chunk.len()].to_vec()
        })
        .collect()
}

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
        .output()
        .unwrap();
    common::assert_fails_with(&output, &format!("cannot listen on 127.0.0.1:{port}"));
    assert!(
        common::stderr(&output).contains("--port 0"),
        "{}",
        common::stderr(&output)
    );
    assert_eq!(
        served.get("/style.css").0,
        200,
        "the first server still answers"
    );
}
