//! The page's three files, compiled into catdog: no CDN, no JavaScript build step.

use super::reply::Reply;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/style.css");

/// The page, carrying this server's token (which its requests send back).
pub(crate) fn index(token: &str) -> Reply {
    Reply::text(200, "text/html", INDEX.replace("{{TOKEN}}", token))
}

pub(crate) fn script() -> Reply {
    Reply::text(200, "text/javascript", SCRIPT)
}

pub(crate) fn style() -> Reply {
    Reply::text(200, "text/css", STYLE)
}
