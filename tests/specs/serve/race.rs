//! The page's race: `catdog bench`'s code on flex, one at a time (409 for a second), its
//! progress and verdict readable, its result kept in the cache folder and listed again after
//! a restart; settings out of range refused; a race stopped from the page; and Ctrl-C, which
//! stops the server with exit code 0.

use std::time::{Duration, Instant};

use super::Served;

/// A race small enough for CI: flex, 16 px, batches of 4, one warm-up step, one short window.
const TINY: &[u8] = br#"{"backends": ["flex"], "image_size": 16, "batch_size": 4, "seconds": 0.05,
                        "repeats": 1, "warmup_steps": 1}"#;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

#[test]
fn race_settings_out_of_range_are_refused() {
    let cache = tempfile::tempdir().unwrap();
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
        let (status, reply) = served.post("/api/bench", &JSON, settings);
        assert_eq!(status, 400, "{reply}");
        assert!(reply["error"].as_str().unwrap().contains(reason), "{reply}");
    }
}

#[test]
fn the_race_runs_one_at_a_time_and_is_kept() {
    let cache = tempfile::tempdir().unwrap();
    let finished = {
        let served = Served::start(cache.path());
        let (status, reply) = served.post("/api/bench", &JSON, TINY);
        assert_eq!(status, 202, "{reply}");
        let (status, reply) = served.post("/api/bench", &JSON, TINY);
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
}

/// A race can be stopped from the page (with its token), and ends at its next step instead
/// of running its 30 s of windows.
#[test]
fn a_race_can_be_stopped_from_the_page() {
    let cache = tempfile::tempdir().unwrap();
    let served = Served::start(cache.path());
    let (status, _, _) = served.request("DELETE", "/api/bench", &[], b"");
    assert_eq!(status, 403, "DELETE needs the token");
    let token = [("X-Catdog-Token", served.token.as_str())];
    let (status, _, _) = served.request("DELETE", "/api/bench", &token, b"");
    assert_eq!(status, 409, "nothing runs");
    let long = br#"{"backends": ["flex"], "image_size": 16, "batch_size": 4, "seconds": 10,
                    "repeats": 3, "warmup_steps": 1}"#;
    let (status, reply) = served.post("/api/bench", &JSON, long);
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
}

/// Ctrl-C: a clean stop.
#[test]
fn ctrl_c_stops_the_server_cleanly() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start(cache.path());
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
