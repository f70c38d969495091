//! Which request gets what: the page and its files, the model, the machine, predictions and
//! the bench. Every request is checked for its `Host` first, and every one that changes
//! something (a prediction queues on the model, a bench takes the machine) for the page's
//! token.

use std::path::PathBuf;

use hyper::Method;
use rayon::prelude::*;
use serde_json::{Value, json};

use super::bench_job::BenchRequest;
use super::http::Request;
use super::reply::Reply;
use super::{State, guard, page, upload};
use crate::data::decode_photo_bytes;
use crate::output;

/// The reply to `request`.
pub(crate) fn reply(state: &State, request: &mut Request) -> Reply {
    route(state, request).unwrap_or_else(|refusal| refusal)
}

fn route(state: &State, request: &mut Request) -> Result<Reply, Reply> {
    guard::check_host(request, state.port)?;
    let path = request.path.clone();
    let method = request.method.clone();
    let allowed = match path.as_str() {
        "/"
        | "/app.js"
        | "/style.css"
        | "/api/model"
        | "/api/model/curves.svg"
        | "/api/devices" => Method::GET,
        "/api/predict" => Method::POST,
        "/api/bench" if method == Method::GET => Method::GET,
        "/api/bench" if method == Method::DELETE => Method::DELETE,
        "/api/bench" => Method::POST,
        _ => {
            return Err(Reply::error(
                404,
                format!("catdog's page has nothing at {path}"),
            ));
        }
    };
    if method != allowed && !(method == Method::HEAD && allowed == Method::GET) {
        return Err(Reply::error(
            405,
            format!("{path} takes {allowed} requests"),
        ));
    }
    if allowed == Method::POST || allowed == Method::DELETE {
        guard::check_token(request.header("X-Catdog-Token"), &state.token)?;
    }
    Ok(match path.as_str() {
        "/" => page::index(&state.token),
        "/app.js" => page::script(),
        "/style.css" => page::style(),
        "/api/model" => Reply::json(200, &state.model),
        "/api/model/curves.svg" => match &state.curves {
            Some(svg) => Reply::text(200, "image/svg+xml", svg.clone()),
            None => Reply::error(404, "this model folder has no curves.svg"),
        },
        "/api/devices" => Reply::json(200, state.devices()),
        "/api/predict" => predict(state, request)?,
        "/api/bench" if method == Method::POST => {
            let body = upload::read_body(request)?;
            let (choices, settings) = BenchRequest::parse(&body)?;
            state.bench.start(choices, settings)?;
            Reply::json(202, &state.bench.status())
        }
        "/api/bench" if method == Method::DELETE => {
            state.bench.stop()?;
            Reply::json(202, &state.bench.status())
        }
        _ => Reply::json(200, &state.bench.status()),
    })
}

/// The photos of a `multipart/form-data` request, each decoded and predicted: one entry per
/// photo, in order, with its answer or why it could not be read. 400 where none could.
fn predict(state: &State, request: &mut Request) -> Result<Reply, Reply> {
    let content_type = request.header("Content-Type").map(str::to_string);
    let body = upload::read_body(request)?;
    let photos = upload::photos(content_type.as_deref(), body)?;
    let decoded: Vec<anyhow::Result<Vec<u8>>> = photos
        .par_iter()
        .map(|photo| decode_photo_bytes(&photo.bytes, state.image_size, &photo.name))
        .collect();
    // The pixels go to the model; each photo keeps whether it had any, or why not.
    let mut readable: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let outcomes: Vec<Result<(), anyhow::Error>> = photos
        .iter()
        .zip(decoded)
        .map(|(photo, pixels)| pixels.map(|p| readable.push((PathBuf::from(&photo.name), p))))
        .collect();
    // One model, one photo batch at a time: requests from several tabs wait their turn here.
    let predictions = match readable.is_empty() {
        true => Vec::new(),
        false => state
            .predictor()
            .predict_decoded(&readable)
            .map_err(|err| Reply::error(500, format!("{err:#}")))?,
    };
    let mut predictions = predictions.into_iter();
    let answers: Vec<Value> = photos
        .iter()
        .zip(outcomes)
        .map(|(photo, outcome)| match outcome {
            Ok(()) => {
                let prediction = predictions.next().expect("one prediction a readable photo");
                let mut answer = output::prediction_json(&prediction, &state.choice);
                // The browser's file name, not a path on this machine.
                answer.as_object_mut().map(|a| a.remove("path"));
                answer["name"] = json!(photo.name);
                answer["words"] = json!(output::answer_words(&prediction));
                answer
            }
            Err(err) => json!({ "name": photo.name, "error": format!("{err:#}") }),
        })
        .collect();
    let status = match readable.is_empty() {
        true => 400,
        false => 200,
    };
    let error = (status == 400).then(|| {
        answers
            .iter()
            .filter_map(|a| a["error"].as_str())
            .collect::<Vec<_>>()
            .join("; ")
    });
    Ok(Reply::json(
        status,
        &json!({ "model": state.model["line"], "photos": answers, "error": error }),
    ))
}
