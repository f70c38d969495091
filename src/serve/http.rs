//! The HTTP side of `catdog serve`, on hyper: connections, their limits and their timeouts.
//! What a request gets is [`routes`](super::routes)'s business; this file only makes sure
//! that no client, slow, silent or hostile, can hold the server's threads, files or memory.
//!
//! - at most [`MAX_CONNECTIONS`] connections at once (more wait in the system's queue);
//! - a request's line and headers: at most [`MAX_HEADER_BYTES`] and [`MAX_HEADERS`] of
//!   them (431 beyond), all within [`HEADER_TIMEOUT`], which also closes a connection kept
//!   open with nothing to say;
//! - a body: no pause longer than [`BODY_STALL`] (408), at most [`MAX_UPLOADS`] read or held
//!   at once (others wait their turn, up to [`UPLOAD_WAIT`], then 503), its size bounded by
//!   the route (a declared one refused before any wait or read);
//! - HTTP/1.0 and 1.1 only; malformed framing (two Content-Lengths, an unknown
//!   Transfer-Encoding) is refused by hyper with 400;
//! - an error while accepting a connection (too many open files) is reported and tried again.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use super::State;
use super::reply::Reply;
use super::routes;

/// Connections open at once. A browser opens about six to a page.
pub(crate) const MAX_CONNECTIONS: usize = 128;
/// A request's line and headers together, in bytes: cookies for `localhost` from other
/// programs' pages come along too.
pub(crate) const MAX_HEADER_BYTES: usize = 64 << 10;
/// Headers in one request.
pub(crate) const MAX_HEADERS: usize = 100;
/// From the moment a connection waits for a request to the end of its headers.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest pause while a body is sent.
pub(crate) const BODY_STALL: Duration = Duration::from_secs(10);
/// Request bodies being read, or held while their photos are answered, at once.
pub(crate) const MAX_UPLOADS: usize = 4;
/// How long a body waits for its turn to be read.
pub(crate) const UPLOAD_WAIT: Duration = Duration::from_secs(60);
/// How long a stopping server waits for the requests it is answering.
pub(crate) const FINISHING: Duration = Duration::from_secs(30);

/// How often the server looks whether it should stop.
const TICK: Duration = Duration::from_millis(100);

/// What every connection shares.
struct Shared {
    state: Arc<State>,
    /// Set once the server stops: requests that come after are told so.
    stopping: AtomicBool,
    /// Requests being answered.
    in_flight: AtomicUsize,
    uploads: Arc<Semaphore>,
}

/// Answers connections on `listener` until `stop` says so (checked several times a second),
/// then finishes the requests being answered, for at most [`FINISHING`]; those that arrive
/// meanwhile are told that catdog is stopping.
pub(super) async fn serve(
    listener: std::net::TcpListener,
    state: Arc<State>,
    stop: &dyn Fn() -> bool,
) -> Result<()> {
    listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listener)?;
    let shared = Arc::new(Shared {
        state,
        stopping: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        uploads: Arc::new(Semaphore::new(MAX_UPLOADS)),
    });
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let (stopped, stop_seen) = watch::channel(false);
    let mut accept_errors = AcceptErrors::default();
    let mut finishing: Option<Instant> = None;
    loop {
        if finishing.is_none() && stop() {
            shared.stopping.store(true, Ordering::SeqCst);
            stopped.send_replace(true);
            finishing = Some(Instant::now());
        }
        if let Some(since) = finishing
            && (shared.in_flight.load(Ordering::SeqCst) == 0 || since.elapsed() >= FINISHING)
        {
            return Ok(());
        }
        let Ok(Ok(permit)) =
            tokio::time::timeout(TICK, Arc::clone(&connections).acquire_owned()).await
        else {
            continue;
        };
        match tokio::time::timeout(TICK, listener.accept()).await {
            Err(_) => continue,
            Ok(Ok((stream, _))) => {
                tokio::spawn(connection(
                    stream,
                    Arc::clone(&shared),
                    stop_seen.clone(),
                    permit,
                ));
            }
            Ok(Err(err)) => {
                accept_errors.note(&err);
                // Too many open files, say: connections that end meanwhile free some.
                drop(permit);
                tokio::time::sleep(TICK).await;
            }
        }
    }
}

/// One connection, served until either side closes it; a stopping server finishes the
/// request under way and closes it.
async fn connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut stop_seen: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |request| answer(Arc::clone(&shared), request));
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
        .serve_connection(TokioIo::new(stream), service);
    let mut served = std::pin::pin!(served);
    // A connection's errors (a client gone, a malformed request, a timeout) end only it.
    tokio::select! {
        _ = served.as_mut() => {}
        () = stop_asked(&mut stop_seen) => {
            served.as_mut().graceful_shutdown();
            let _ = served.await;
        }
    }
}

/// Returns once the server stops (never, where it cannot tell).
async fn stop_asked(stop_seen: &mut watch::Receiver<bool>) {
    loop {
        let stopped = *stop_seen.borrow_and_update();
        if stopped {
            return;
        }
        if stop_seen.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The reply to one request: worked out on a thread of its own, since predicting and reading
/// photos keep a core busy.
async fn answer(
    shared: Arc<Shared>,
    request: hyper::Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if shared.stopping.load(Ordering::SeqCst) {
        return Ok(Reply::error(503, "catdog is stopping: start it again").into_response());
    }
    let _answering = InFlight::start(&shared.in_flight);
    let (head, incoming) = request.into_parts();
    let body = Body {
        incoming: Some(incoming),
        runtime: Handle::current(),
        uploads: Arc::clone(&shared.uploads),
        _upload: None,
    };
    let state = Arc::clone(&shared.state);
    let reply = tokio::task::spawn_blocking(move || {
        let mut request = Request {
            method: head.method,
            path: head.uri.path().to_string(),
            authority: head.uri.authority().map(|a| a.to_string()),
            headers: head.headers,
            body,
        };
        routes::reply(&state, &mut request)
    })
    .await
    // A panic while answering: the request gets a 500, the server goes on.
    .unwrap_or_else(|_| Reply::error(500, "catdog failed on this request"));
    Ok(reply.into_response())
}

/// A request as the routes see it: its method, path and headers, and its body still to be
/// read.
pub(crate) struct Request {
    pub method: Method,
    /// Without the query.
    pub path: String,
    /// The server named in the request line itself (`GET http://host/ HTTP/1.1`), which
    /// stands in for `Host`.
    pub authority: Option<String>,
    headers: HeaderMap,
    pub body: Body,
}

impl Request {
    /// A header's value, where the request has it once, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }

    /// How many times the request carries header `name`.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers.get_all(name).iter().count()
    }
}

/// A request's body, read on demand within limits.
pub(crate) struct Body {
    incoming: Option<Incoming>,
    runtime: Handle,
    uploads: Arc<Semaphore>,
    /// Held from the first read until the request is answered: the body's bytes, and the
    /// photos decoded from them, live until then.
    _upload: Option<OwnedSemaphorePermit>,
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Larger than the limit asked for: the length the client declared, where it did (then
    /// nothing was read), or `None` where the bytes sent ran past the limit.
    TooLarge(Option<u64>),
    /// The client paused longer than [`BODY_STALL`].
    Stalled,
    /// [`MAX_UPLOADS`] other bodies were being read or answered for all of [`UPLOAD_WAIT`].
    Busy,
    /// The connection broke or the body's framing was wrong.
    Broken(String),
}

impl Body {
    /// The length the client declared (Content-Length), where it did.
    fn declared_length(&self) -> Option<u64> {
        let incoming = self.incoming.as_ref()?;
        hyper::body::Body::size_hint(incoming).exact()
    }

    /// The whole body, at most `limit` bytes; an empty one once read.
    pub fn read(&mut self, limit: u64) -> Result<Vec<u8>, BodyError> {
        if let Some(length) = self.declared_length()
            && length > limit
        {
            return Err(BodyError::TooLarge(Some(length)));
        }
        let Some(incoming) = self.incoming.take() else {
            return Ok(Vec::new());
        };
        let uploads = Arc::clone(&self.uploads);
        let runtime = self.runtime.clone();
        runtime.block_on(async {
            let permit = tokio::time::timeout(UPLOAD_WAIT, uploads.acquire_owned())
                .await
                .map_err(|_| BodyError::Busy)?
                .map_err(|_| BodyError::Busy)?;
            self._upload = Some(permit);
            collect(incoming, limit).await
        })
    }
}

async fn collect(mut incoming: Incoming, limit: u64) -> Result<Vec<u8>, BodyError> {
    let mut bytes = Vec::new();
    loop {
        let frame = match tokio::time::timeout(BODY_STALL, incoming.frame()).await {
            Err(_) => return Err(BodyError::Stalled),
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(err))) => return Err(BodyError::Broken(err.to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if (bytes.len() + data.len()) as u64 > limit {
                return Err(BodyError::TooLarge(None));
            }
            bytes.extend_from_slice(&data);
        }
    }
}

/// One request being answered, counted in the server's tally until it is dropped.
struct InFlight<'t>(&'t AtomicUsize);

impl InFlight<'_> {
    fn start(tally: &AtomicUsize) -> InFlight<'_> {
        tally.fetch_add(1, Ordering::SeqCst);
        InFlight(tally)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Errors while accepting connections, said once a kind every ten seconds rather than
/// several times a second.
#[derive(Default)]
struct AcceptErrors {
    last: Option<(String, Instant)>,
}

impl AcceptErrors {
    fn note(&mut self, err: &std::io::Error) {
        let text = err.to_string();
        let repeat = self
            .last
            .as_ref()
            .is_some_and(|(last, at)| *last == text && at.elapsed() < Duration::from_secs(10));
        if !repeat {
            eprintln!("catdog: cannot accept a connection ({text}); trying again");
            self.last = Some((text, Instant::now()));
        }
    }
}
