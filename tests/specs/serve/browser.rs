//! The page in a real browser (headless chromium, driven through chromedriver): it loads
//! without a console error, answers photos picked through its own file input, and runs a
//! race to its verdict.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Served, a_photo_and_a_drawing, http};
use crate::common::browser_or_skip;

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
    let Some((browser, driver)) = browser_or_skip("the_page_works_in_a_real_browser") else {
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
            [
                "cat",
                "dog",
                "not sure (",
                "not a cat or a dog: looks like "
            ]
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
