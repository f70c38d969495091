//! The page's "CPU against GPU": `catdog bench`'s own code, run on a thread of its own, one at
//! a time, with what it is doing readable while it runs. Each result is kept in catdog's cache
//! folder as JSON, so that the page lists this machine's earlier races after a restart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use serde::Deserialize;
use serde_json::{Value, json};

use super::reply::Reply;
use crate::bench::{self, BenchProgress, BenchReport, BenchSettings};
use crate::chart;
use crate::device::{Backend, BackendChoice, Precision};
use crate::fs::{read_regular, write_atomically};
use crate::model::NetworkKind;
use crate::output;

/// Earlier results the page lists, newest first, and keeps on disk.
const HISTORY_KEPT: usize = 20;

/// The most bytes a kept result may have (its chart and text take tens of kilobytes).
const RESULT_LIMIT: u64 = 4 << 20;

/// The results catdog wrote in `dir`: `<finished, in ms>.json`, with that time; any other file
/// there is not catdog's, and is left alone.
fn kept_results(dir: &Path) -> Vec<(u128, PathBuf)> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let finished = name.strip_suffix(".json")?.parse().ok()?;
            Some((finished, entry.path()))
        })
        .collect()
}

/// Deletes the results in `dir` older than the newest [`HISTORY_KEPT`], so that the folder
/// does not grow with every race.
fn prune(dir: &Path) {
    let mut results = kept_results(dir);
    results.sort_by_key(|(finished, _)| std::cmp::Reverse(*finished));
    for (_, path) in results.into_iter().skip(HISTORY_KEPT) {
        let _ = std::fs::remove_file(path);
    }
}

/// The bench the page asks for: `catdog bench`'s defaults, or what the request names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BenchRequest {
    backends: Option<Vec<String>>,
    image_size: Option<u32>,
    batch_size: Option<usize>,
    seconds: Option<f64>,
    repeats: Option<usize>,
    warmup_steps: Option<usize>,
}

impl BenchRequest {
    /// Reads a request body (empty for the defaults), refusing values `catdog bench` would.
    pub fn parse(body: &[u8]) -> Result<(Vec<BackendChoice>, BenchSettings), Reply> {
        let request: BenchRequest = match body.iter().all(u8::is_ascii_whitespace) {
            true => BenchRequest::default(),
            false => serde_json::from_slice(body).map_err(|err| {
                Reply::error(400, format!("cannot read the bench's settings: {err}"))
            })?,
        };
        let bad = |what: &str| Err(Reply::error(400, format!("the bench's {what}")));
        let choices = match request.backends {
            None => bench::default_choices(NetworkKind::SmallCnn),
            Some(names) if names.is_empty() => return bad("backends list is empty"),
            Some(names) => {
                let mut choices = Vec::new();
                for name in names {
                    match BackendChoice::from_name(&name) {
                        Some(choice) => choices.push(choice),
                        None => return bad(&format!("backend {name:?} is not one catdog has")),
                    }
                }
                choices
            }
        };
        let defaults = BenchSettings::default();
        let settings = BenchSettings {
            image_size: request.image_size.unwrap_or(defaults.image_size),
            batch_sizes: vec![request.batch_size.unwrap_or(defaults.batch_sizes[0])],
            seconds: request.seconds.unwrap_or(defaults.seconds),
            repeats: request.repeats.unwrap_or(defaults.repeats),
            warmup_steps: request.warmup_steps.unwrap_or(defaults.warmup_steps),
            ..defaults
        };
        // `catdog bench`'s own check, memory included where the race would run on the CPU.
        if let Err(err) = settings.check(bench::any_in_host_memory(&choices)) {
            return Err(Reply::error(400, format!("the bench's settings: {err:#}")));
        }
        // The page's own limits: a race is for watching, and holds the only bench slot.
        if settings.seconds > 60.0 {
            return bad("window must be at most 60 s");
        }
        if settings.repeats > 10 || settings.warmup_steps > 100 {
            return bad("windows must be 1 to 10, and warm-up steps at most 100");
        }
        Ok((choices, settings))
    }
}

/// One bench at a time, what it is doing, and the results so far.
pub(crate) struct BenchJob {
    state: Mutex<JobState>,
    /// Set by the page's "Stop": the running bench ends at its next step.
    cancel: Arc<AtomicBool>,
    /// Where results are kept; `None` keeps them in memory only.
    history_dir: Option<PathBuf>,
}

#[derive(Default)]
struct JobState {
    running: bool,
    /// What the running (or last) bench has done, a line a step.
    progress: Vec<String>,
    /// Why the last bench failed.
    error: Option<String>,
    /// Finished benches, oldest first.
    results: Vec<Value>,
}

impl BenchJob {
    /// A job with the results kept in `history_dir` read back (unreadable files skipped).
    pub fn new(history_dir: Option<PathBuf>) -> BenchJob {
        let mut results: Vec<(u128, Value)> = history_dir
            .as_deref()
            .map(kept_results)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(finished, path)| {
                // A regular file of a sane size only: a pipe put there is not waited on.
                let bytes = read_regular(&path, RESULT_LIMIT).ok()?;
                Some((finished, serde_json::from_slice(&bytes).ok()?))
            })
            .collect();
        results.sort_by_key(|(finished, _)| *finished);
        let skip = results.len().saturating_sub(HISTORY_KEPT);
        BenchJob {
            state: Mutex::new(JobState {
                results: results.into_iter().skip(skip).map(|(_, v)| v).collect(),
                ..JobState::default()
            }),
            cancel: Arc::new(AtomicBool::new(false)),
            history_dir,
        }
    }

    fn state(&self) -> MutexGuard<'_, JobState> {
        // A panic while the lock was held leaves the state as it was: still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `{"running", "progress", "error", "results"}`, the results newest first.
    pub fn status(&self) -> Value {
        let state = self.state();
        json!({
            "running": state.running,
            "progress": state.progress,
            "error": state.error,
            "results": state.results.iter().rev().collect::<Vec<_>>(),
        })
    }

    /// Starts a bench on a thread of its own; 409 while another one runs.
    pub fn start(
        self: &Arc<Self>,
        choices: Vec<BackendChoice>,
        settings: BenchSettings,
    ) -> Result<(), Reply> {
        {
            let mut state = self.state();
            if state.running {
                return Err(Reply::error(
                    409,
                    "a bench is already running: one at a time, so that each has the machine \
                     to itself",
                ));
            }
            state.running = true;
            state.progress.clear();
            state.error = None;
            // Under the lock, so that a stop asked as soon as the race is running holds.
            self.cancel.store(false, Ordering::SeqCst);
        }
        let settings = BenchSettings {
            cancel: Some(Arc::clone(&self.cancel)),
            ..settings
        };
        let job = Arc::clone(self);
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job.run(&choices, &settings)
            }))
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the bench stopped on an internal error")));
            let mut state = job.state();
            state.running = false;
            match outcome {
                Ok(result) => {
                    state.results.push(result);
                    let skip = state.results.len().saturating_sub(HISTORY_KEPT);
                    state.results.drain(..skip);
                }
                Err(err) => state.error = Some(format!("{err:#}")),
            }
        });
        Ok(())
    }

    /// Asks the running bench to stop at its next step (a step under way, such as wgpu
    /// tuning its kernels, finishes first); 409 where none runs.
    pub fn stop(&self) -> Result<(), Reply> {
        if !self.state().running {
            return Err(Reply::error(409, "no bench is running"));
        }
        self.cancel.store(true, Ordering::SeqCst);
        self.note("stopping at the next step, as asked".to_string());
        Ok(())
    }

    fn note(&self, line: String) {
        self.state().progress.push(line);
    }

    fn run(&self, choices: &[BackendChoice], settings: &BenchSettings) -> Result<Value> {
        let backends = bench::open_backends(choices, Precision::F32, &mut |line| self.note(line))?;
        let report = bench::run(&backends, settings, &mut Progress(self))?;
        let finished = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let result = result_json(&report, finished)?;
        if let Some(dir) = &self.history_dir {
            // Kept for the next start; a result that cannot be kept is still shown.
            let kept = std::fs::create_dir_all(dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| {
                    write_atomically(
                        &dir.join(format!("{finished}.json")),
                        result.to_string().as_bytes(),
                    )
                });
            if let Err(err) = kept {
                self.note(format!("this result is not kept for later: {err:#}"));
            }
            prune(dir);
        }
        Ok(result)
    }
}

/// A finished bench as the page shows it: the verdict, the whole text `catdog bench` prints,
/// its bar chart as SVG, and the figures.
fn result_json(report: &BenchReport, finished_ms: u128) -> Result<Value> {
    let runs: Vec<Value> = report
        .runs
        .iter()
        .map(|run| {
            json!({
                "backend": run.backend.to_string(),
                "device": run.device,
                "batch_size": run.batch_size,
                "train_images_per_sec": run.train_images_per_sec,
                "infer_images_per_sec": run.infer_images_per_sec,
            })
        })
        .collect();
    Ok(json!({
        "finished_ms": finished_ms as u64,
        "verdict": output::bench_verdict(report),
        "text": output::bench_text(report),
        "chart_svg": chart::svg(&output::bench_chart(report))?,
        "image_size": report.settings.image_size,
        "runs": runs,
    }))
}

/// The bench's steps, as lines of the job's progress.
struct Progress<'a>(&'a BenchJob);

impl BenchProgress for Progress<'_> {
    fn started(&mut self, backend: &Backend, what: &str) {
        self.0.note(format!(
            "{} on {}: {what}",
            backend.kind, backend.device_name
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The results folder may hold anything: a pipe or a huge file named like a result is
    /// skipped, not waited on or read; only the newest results are kept, and only catdog's
    /// own files are ever deleted.
    #[cfg(unix)]
    #[test]
    fn kept_results_are_read_within_limits_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        for finished in 1..=25u64 {
            let result = json!({ "finished_ms": finished });
            std::fs::write(dir.join(format!("{finished}.json")), result.to_string()).unwrap();
        }
        let status = std::process::Command::new("mkfifo")
            .arg(dir.join("26.json"))
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::File::create(dir.join("27.json"))
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        std::fs::write(dir.join("notes.json"), "the user's").unwrap();

        let job = BenchJob::new(Some(dir.to_path_buf()));
        let results = job.status()["results"].as_array().unwrap().clone();
        assert_eq!(results.len(), HISTORY_KEPT);
        assert_eq!(results[0]["finished_ms"], 25, "newest first");

        prune(dir);
        let mut left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left.len(), HISTORY_KEPT + 1, "{left:?}");
        assert!(left.contains(&"notes.json".to_string()));
        assert!(!left.contains(&"1.json".to_string()) && left.contains(&"27.json".to_string()));
    }
}
