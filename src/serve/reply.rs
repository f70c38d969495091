//! What the server sends back: a status, a content type and a body, with the headers every
//! reply of catdog's carries.

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

    /// As tiny_http sends it: the page may load only its own scripts, styles and pictures
    /// (and the photos the user picks, as blob: addresses), may not be framed, and no reply
    /// is cached (the page carries a token that changes at each start).
    pub fn into_response(self) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
        let header = |name: &str, value: &str| {
            tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
                .expect("catdog's own header names and values are ASCII")
        };
        let content_type = match self.content_type.starts_with("text/") {
            true => format!("{}; charset=utf-8", self.content_type),
            false => self.content_type.to_string(),
        };
        tiny_http::Response::from_data(self.body)
            .with_status_code(self.status)
            .with_header(header("Content-Type", &content_type))
            .with_header(header("Cache-Control", "no-store"))
            .with_header(header("X-Content-Type-Options", "nosniff"))
            .with_header(header("X-Frame-Options", "DENY"))
            .with_header(header(
                "Content-Security-Policy",
                "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; \
                 script-src 'self'; frame-ancestors 'none'",
            ))
    }
}
