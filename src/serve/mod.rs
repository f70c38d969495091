//! `catdog serve`: catdog as a page in the user's own browser. Drop photos on it for the
//! model's answer, see whether this computer has a GPU, race the CPU against the GPU with
//! `catdog bench`'s own code, and look under the hood of the model in use.
//!
//! An HTTP server on hyper ([`http`], with its limits and timeouts) on 127.0.0.1 by default.
//! The page's HTML, CSS and JavaScript are compiled into catdog (`page/`): no CDN, no build
//! step, it works offline.
//! Every request is checked ([`guard`]): its `Host` must be this server's (against DNS
//! rebinding), and a request that changes something must carry the token the page was served
//! with. No request names a file on disk. Photos are read within limits ([`upload`]); one
//! loaded model answers them in turn; one bench runs at a time ([`bench_job`]).

mod bench_job;
mod guard;
mod http;
mod page;
mod reply;
mod routes;
mod upload;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use self::bench_job::BenchJob;
use crate::device::{Backend, Survey};
use crate::inference::Predictor;
use crate::model::ModelChoice;
use crate::output;

/// How `catdog serve` is set up.
pub struct ServeOptions {
    /// The address to listen on: 127.0.0.1 unless the user says otherwise.
    pub host: IpAddr,
    /// 0 for any free port.
    pub port: u16,
    pub model: ModelChoice,
    /// The backend predictions run on, opened.
    pub backend: Backend,
    pub not_sure_below: f32,
    /// Average each photo's answer with its mirror image's, as `predict` does by default.
    pub flip: bool,
    /// Where finished benches are kept as JSON; `None` keeps them in memory only.
    pub bench_history: Option<PathBuf>,
}

/// catdog's folder for the page's bench results: `bench-results` in catdog's cache folder.
pub fn default_bench_history() -> Option<PathBuf> {
    crate::fs::user_cache_dir().map(|dir| dir.join("bench-results"))
}

/// What every request handler reads.
struct State {
    token: String,
    port: u16,
    choice: ModelChoice,
    image_size: u32,
    predictor: Mutex<Predictor>,
    /// "Under the hood": the model's description, for the page.
    model: Value,
    curves: Option<String>,
    bench: Arc<BenchJob>,
    /// `catdog devices`' report, taken at the first request for it.
    devices: OnceLock<Value>,
}

impl State {
    fn predictor(&self) -> MutexGuard<'_, Predictor> {
        // A panic while predicting is turned into an error before the lock is released; the
        // model itself is never changed by a prediction, so a poisoned lock is still good.
        self.predictor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn devices(&self) -> &Value {
        self.devices.get_or_init(|| match Survey::take() {
            Ok(survey) => {
                let text = output::devices_text(&survey);
                json!({
                    "verdict": text.lines().next().unwrap_or_default(),
                    "text": text,
                })
            }
            Err(err) => json!({ "verdict": format!("{err:#}"), "text": "" }),
        })
    }
}

/// A server listening, with its model loaded.
pub struct Server {
    listener: std::net::TcpListener,
    runtime: tokio::runtime::Runtime,
    address: SocketAddr,
    state: Arc<State>,
}

impl Server {
    /// Loads the model and starts listening.
    pub fn start(options: ServeOptions) -> Result<Server> {
        let predictor = Predictor::load(&options.model, &options.backend)?
            .with_not_sure_below(options.not_sure_below)
            .with_flip(options.flip);
        let wanted = SocketAddr::new(options.host, options.port);
        let listener = std::net::TcpListener::bind(wanted).map_err(|err| {
            anyhow!(
                "cannot listen on {wanted}: {err} (another program may use that port: try \
                 another one with --port, or --port 0 for any free one)"
            )
        })?;
        let address = listener.local_addr()?;
        // Two threads take connections and read requests; answers are worked out on threads
        // of their own (at most one a connection).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(http::MAX_CONNECTIONS)
            .thread_name("catdog-serve")
            .enable_all()
            .build()?;
        let curves = options.model.curves_svg();
        let mut model = model_json(&predictor, &options.backend.device_name);
        model["curves"] = json!(curves.is_some());
        let state = State {
            model,
            token: guard::new_token(),
            port: address.port(),
            choice: options.model.clone(),
            image_size: predictor.info().image_size,
            curves,
            predictor: Mutex::new(predictor),
            bench: Arc::new(BenchJob::new(options.bench_history)),
            devices: OnceLock::new(),
        };
        Ok(Server {
            listener,
            runtime,
            address,
            state: Arc::new(state),
        })
    }

    /// The address it listens on (the port is the one chosen where 0 was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `model: built-in, trained on …`: which model answers, as `predict` names it.
    pub fn model_line(&self) -> String {
        self.state.model["line"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The page's address: `http://127.0.0.1:8080/` (an address any local browser opens where
    /// the server listens on every interface).
    pub fn url(&self) -> String {
        let ip = match self.address.ip().to_canonical() {
            ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
            ip => ip,
        };
        format!("http://{}/", SocketAddr::new(ip, self.address.port()))
    }

    /// Answers requests until `stop` says so (checked several times a second). Then the
    /// requests being answered are finished (for at most [`http::FINISHING`]), and those
    /// that arrive meanwhile are told that catdog is stopping.
    pub fn run(self, stop: &dyn Fn() -> bool) -> Result<()> {
        let Server {
            listener,
            runtime,
            state,
            ..
        } = self;
        let served = runtime.block_on(http::serve(listener, state, stop));
        // An answer past its time is not waited for.
        runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        served
    }
}

/// "Under the hood": the model that answers, what it learned from and how well it did.
fn model_json(predictor: &Predictor, device: &str) -> Value {
    let info = predictor.info();
    json!({
        "line": output::model_line(predictor),
        "name": output::model_name(predictor.choice()),
        "network": info.network().title(),
        "classes": info.classes,
        "image_size": info.image_size,
        "epochs": info.epochs,
        "val_accuracy": info.val_accuracy,
        "trained_with": format!("{} on {}", info.backend, info.device),
        "train_images_per_sec": info.train_images_per_sec,
        "trained_on": info.trained_on.as_ref().map(|t| match &t.data {
            Some(data) => data.to_string_lossy().into_owned(),
            None => "generated pictures".to_string(),
        }),
        "temperature": info.temperature(),
        "not_sure_below": predictor.not_sure_below(),
        "flip": predictor.flip(),
        "predicting_on": device,
    })
}
