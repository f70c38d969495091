//! What the server sends back: a status, a content type and a body, with the headers every
//! reply of catdog's carries.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

/// One HTTP reply.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, value: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    /// `{"error": reason}` with `status`: every refusal says why in plain words.
    pub fn error(status: u16, reason: impl Into<String>) -> Reply {
        Reply::json(status, &json!({ "error": reason.into() }))
    }

    pub fn text(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            content_type,
            body: body.into(),
        }
    }

    /// As hyper sends it: the page may load only its own scripts, styles and pictures (and
    /// the photos the user picks, as blob: addresses), may not be framed, and no reply is
    /// cached (the page carries a token that changes at each start).
    pub fn into_response(self) -> Response<Full<Bytes>> {
        let content_type = match self.content_type.starts_with("text/") {
            true => format!("{}; charset=utf-8", self.content_type),
            false => self.content_type.to_string(),
        };
        let mut response = Response::new(Full::new(Bytes::from(self.body)));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(&content_type).expect("catdog's content types are ASCII"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; \
                 script-src 'self'; frame-ancestors 'none'",
            ),
        );
        response
    }
}
