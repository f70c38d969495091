//! The page `catdog serve` shows and its API: the page and its files, the model and the
//! machine, predictions that match `catdog predict`'s for several photos and several clients
//! at once, and every refusal, each with its status and reason.

use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use super::{Served, a_photo_and_a_drawing, http, multipart, rotated_photo};
use crate::common::catdog;

/// The page and its two files, compiled in, with the headers that keep other sites out.
#[test]
fn the_page_and_its_files_come_with_the_headers_that_keep_other_sites_out() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let (_, head, _) = served.get("/");
    // Header names are the same in any case.
    let head = head.to_ascii_lowercase();
    assert!(
        head.contains("content-security-policy: default-src 'self'"),
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
}

/// Under the hood, and the machine: the model's facts and curves, and the devices' verdict.
#[test]
fn the_api_describes_the_model_and_the_machine() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let model = served.get_json("/api/model");
    assert_eq!(model["name"], "builtin");
    assert_eq!(model["network"], "EfficientNet-Lite0");
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
}

/// Two photos at once: the answers `catdog predict` gives the same files. Eight clients at
/// once: each gets its answer, the same one.
#[test]
fn the_page_predicts_like_predict_for_several_photos_and_clients() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let dir = tempfile::tempdir().unwrap();
    let (photo, drawn) = a_photo_and_a_drawing(dir.path(), "cat");
    let drawn_bytes = std::fs::read(&drawn).unwrap();
    let photo_bytes = rotated_photo();
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
    let expected = catdog()
        .predict()
        .flex()
        .model("builtin")
        .json()
        .arg(&photo)
        .arg(&drawn)
        .succeeds();
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
}

/// A file that is not a photo: 400 and why, alone; beside a photo, its own error. Too large,
/// too many: 413 and the limits. A body that is not a form: 400 and what it must be.
#[test]
fn what_is_not_a_photo_or_too_much_is_refused_with_the_reason() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let photo_bytes = rotated_photo();
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
}

/// A body declared far larger than memory, never sent: 413, and the server lives on.
#[test]
fn a_body_declared_larger_than_memory_is_refused_and_the_server_lives_on() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
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
}

/// Another site's name for this address (DNS rebinding), no token, a wrong one: 403.
#[test]
fn other_sites_and_requests_without_the_token_are_refused() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let port = served.port;
    let host = format!("rebind.example:{port}");
    let (status, _, body) = served.request("GET", "/", &[("Host", &host)], b"");
    assert_eq!(status, 403);
    assert!(String::from_utf8_lossy(&body).contains("rebind.example"));
    let (content_type, body) = multipart(&[("rotated.jpg", &rotated_photo())]);
    for token in [None, Some("0123456789abcdef0123456789abcdef")] {
        let mut headers = vec![("Content-Type", content_type.as_str())];
        headers.extend(token.map(|t| ("X-Catdog-Token", t)));
        let (status, _, reply) = served.request("POST", "/api/predict", &headers, &body);
        assert_eq!(status, 403, "{}", String::from_utf8_lossy(&reply));
        assert!(String::from_utf8_lossy(&reply).contains("token"));
    }
}

/// No path on disk is reachable, and each address takes its own method.
#[test]
fn no_path_on_disk_is_reachable_and_each_address_takes_its_own_method() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    assert_eq!(served.get("/../Cargo.toml").0, 404);
    assert_eq!(served.get("/api/model/../../Cargo.toml").0, 404);
    assert_eq!(served.get("/api/predict").0, 405);
}
