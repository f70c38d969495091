//! Photos sent from the page: a `multipart/form-data` body (what a browser's `FormData`
//! sends), read into memory within limits, each part a photo with its file name.

use super::http::{BODY_STALL, BodyError, MAX_UPLOADS, Request, UPLOAD_WAIT};
use super::reply::Reply;
use crate::numbers::human_bytes;

/// The largest photo the page takes: a phone's photo is 2–12 MB.
pub(crate) const MAX_PHOTO_BYTES: u64 = 20 << 20;

/// The most photos one request may hold (the page sends a folder's photos in requests of
/// at most this many).
pub(crate) const MAX_PHOTOS: usize = 32;

/// The largest request body: what [`MAX_PHOTOS`] photos of a few MB each take.
pub(crate) const MAX_BODY_BYTES: u64 = 100 << 20;

/// A photo as the browser sent it.
pub(crate) struct Upload {
    /// Its file name as the browser gave it (never used as a path), or "photo N".
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The request's body, at most [`MAX_BODY_BYTES`]: a longer one is refused with 413 (before
/// it is read where its length is declared), one that stalls with 408, and one that waits
/// too long for the other uploads with 503.
pub(crate) fn read_body(request: &mut Request) -> Result<Vec<u8>, Reply> {
    request.body.read(MAX_BODY_BYTES).map_err(|err| match err {
        BodyError::TooLarge(Some(length)) => {
            too_large(&format!("this request is {}", human_bytes(length)))
        }
        BodyError::TooLarge(None) => too_large("this request is larger"),
        BodyError::Stalled => Reply::error(
            408,
            format!(
                "the photos stopped coming for {} s: send them again",
                BODY_STALL.as_secs()
            ),
        ),
        BodyError::Busy => Reply::error(
            503,
            format!(
                "catdog was busy with {MAX_UPLOADS} other uploads for {} s: send these again",
                UPLOAD_WAIT.as_secs()
            ),
        ),
        BodyError::Broken(why) => Reply::error(400, format!("cannot read the request: {why}")),
    })
}

fn too_large(what: &str) -> Reply {
    Reply::error(
        413,
        format!(
            "{what}: catdog takes photos of up to {} each, at most {MAX_PHOTOS} and {} in one \
             request",
            human_bytes(MAX_PHOTO_BYTES),
            human_bytes(MAX_BODY_BYTES)
        ),
    )
}

/// The photos in a `multipart/form-data` body whose `Content-Type` is `content_type`: each
/// part with a body is a photo, named by its `filename`.
///
/// Read here rather than with a crate: the one well-kept parser (multer) is asynchronous and
/// brings encoding_rs, whose SIMD features change those of a crate burn's CubeCL uses, so
/// adding it rebuilt all of burn; what browsers send for file inputs is this simple.
pub(crate) fn photos(content_type: Option<&str>, body: Vec<u8>) -> Result<Vec<Upload>, Reply> {
    let boundary = content_type.and_then(boundary).ok_or_else(|| {
        Reply::error(
            400,
            "send the photos as multipart/form-data, one part a photo (what a page's FormData \
             sends)",
        )
    })?;
    let malformed = |what: &str| Reply::error(400, format!("cannot read the photos sent: {what}"));
    let delimiter = [b"--", boundary.as_bytes()].concat();
    let mut at = find(&body, &delimiter, 0).ok_or_else(|| malformed("no part begins"))?;
    let mut photos = Vec::new();
    loop {
        at += delimiter.len();
        if body[at..].starts_with(b"--") {
            break;
        }
        if !body[at..].starts_with(b"\r\n") {
            return Err(malformed("a boundary is not followed by a line break"));
        }
        // From the boundary's own line break, so that a part with no headers is read too.
        let head_end =
            find(&body, b"\r\n\r\n", at).ok_or_else(|| malformed("a part's headers never end"))?;
        let head_start = (at + 2).min(head_end);
        let content_start = head_end + 4;
        let next = [b"\r\n", delimiter.as_slice()].concat();
        let content_end = find(&body, &next, content_start)
            .ok_or_else(|| malformed("the last part has no closing boundary"))?;
        let head = String::from_utf8_lossy(&body[head_start..head_end]);
        let name = file_name(&head).unwrap_or_else(|| format!("photo {}", photos.len() + 1));
        if photos.len() == MAX_PHOTOS {
            return Err(too_large(&format!(
                "this request holds more than {MAX_PHOTOS} photos"
            )));
        }
        let bytes = &body[content_start..content_end];
        if bytes.len() as u64 > MAX_PHOTO_BYTES {
            return Err(too_large(&format!(
                "{name} is {}",
                human_bytes(bytes.len() as u64)
            )));
        }
        photos.push(Upload {
            name,
            bytes: bytes.to_vec(),
        });
        at = content_end + 2;
    }
    if photos.is_empty() {
        return Err(Reply::error(400, "the request holds no photo"));
    }
    Ok(photos)
}

/// The boundary a `multipart/form-data; boundary=…` content type names.
fn boundary(content_type: &str) -> Option<String> {
    let (kind, parameters) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let value = parameters.split(';').find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("boundary")
            .then_some(value.trim())
    })?;
    let value = value.trim_matches('"');
    // RFC 2046: 1 to 70 characters.
    (!value.is_empty() && value.len() <= 70).then(|| value.to_string())
}

/// The `filename` of a part's `Content-Disposition` header, where it has a non-empty one.
fn file_name(head: &str) -> Option<String> {
    let disposition = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-disposition")
            .then_some(value)
    })?;
    let start = disposition.find("filename=\"")? + "filename=\"".len();
    let length = disposition[start..].find('"')?;
    let name = &disposition[start..start + length];
    (!name.is_empty()).then(|| name.to_string())
}

/// Where `needle` first occurs in `haystack` from `from` on.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|at| at + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(boundary: &str, parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut body = b"a preamble to ignore\r\n".to_vec();
        for (disposition, bytes) in parts {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: {disposition}\r\n\
                     Content-Type: image/jpeg\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        body
    }

    #[test]
    fn parts_are_read_with_their_names_and_bytes() {
        // A body holding what looks like a boundary without the line break before it.
        let tricky: &[u8] = b"ab--xyz\r\n--xy";
        let body = form(
            "xyz",
            &[
                (
                    "form-data; name=\"photo\"; filename=\"cat.jpg\"",
                    b"\xFF\xD8 cat",
                ),
                ("form-data; name=\"photo\"; filename=\"\"", tricky),
                ("form-data; name=\"photo\"", b""),
            ],
        );
        let photos = photos(Some("multipart/form-data; boundary=\"xyz\""), body).unwrap();
        let read: Vec<(&str, &[u8])> = photos
            .iter()
            .map(|p| (p.name.as_str(), p.bytes.as_slice()))
            .collect();
        assert_eq!(
            read,
            [
                ("cat.jpg", &b"\xFF\xD8 cat"[..]),
                ("photo 2", tricky),
                ("photo 3", b"")
            ]
        );
    }

    #[test]
    fn malformed_bodies_are_refused_with_400_and_why() {
        let refused = |content_type: Option<&str>, body: &[u8]| {
            let reply = photos(content_type, body.to_vec()).err().unwrap();
            (reply.status, String::from_utf8(reply.body).unwrap())
        };
        let form_data = Some("multipart/form-data; boundary=b");
        for (content_type, body, why) in [
            (None, &b"x"[..], "multipart/form-data"),
            (Some("image/jpeg"), b"x", "multipart/form-data"),
            (form_data, b"no boundary here", "no part begins"),
            (
                form_data,
                b"--b\r\nContent-Disposition: form-data\r\n",
                "never end",
            ),
            (
                form_data,
                b"--b\r\n\r\nbytes with no end",
                "no closing boundary",
            ),
            (form_data, b"--bXX", "line break"),
            (form_data, b"--b--\r\n", "no photo"),
        ] {
            let (status, text) = refused(content_type, body);
            assert_eq!(status, 400, "{text}");
            assert!(text.contains(why), "{why}: {text}");
        }
    }

    #[test]
    fn too_many_or_too_large_photos_are_refused_with_413() {
        let one: (&str, &[u8]) = ("form-data; name=\"photo\"; filename=\"p.jpg\"", b"x");
        let content_type = Some("multipart/form-data; boundary=b");
        let body = form("b", &vec![one; MAX_PHOTOS]);
        assert_eq!(photos(content_type, body).unwrap().len(), MAX_PHOTOS);
        let reply = photos(content_type, form("b", &vec![one; MAX_PHOTOS + 1]))
            .err()
            .unwrap();
        assert_eq!(reply.status, 413);
        let big = vec![0u8; MAX_PHOTO_BYTES as usize + 1];
        let disposition = "form-data; name=\"photo\"; filename=\"big.jpg\"";
        let reply = photos(content_type, form("b", &[(disposition, &big)]))
            .err()
            .unwrap();
        assert_eq!(reply.status, 413);
        assert!(String::from_utf8(reply.body).unwrap().contains("big.jpg"));
    }
}
