//! Fetching an archive into a `.part` file that a later run resumes (HTTP Range).

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use ureq::Agent;

use super::DownloadProgress;
use crate::numbers::human_bytes;

/// Free space is checked again after every this many bytes.
const ROOM_CHECK_EVERY: u64 = 64 << 20;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 10;

/// The file beside `part` that keeps the server's validator for it (its `ETag`, or else its
/// `Last-Modified`), sent back as `If-Range` when the download resumes: a file that changed on
/// the server is then fetched whole instead of appended to the old part.
fn validator_path(part: &Path) -> PathBuf {
    let mut name = part.as_os_str().to_owned();
    name.push(".validator");
    PathBuf::from(name)
}

/// Removes a `.part` file and its validator.
pub(super) fn remove_part(part: &Path) -> Result<()> {
    let _ = fs::remove_file(validator_path(part));
    match fs::remove_file(part) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(err).with_context(|| format!("cannot remove {}", part.display()))
        }
        _ => Ok(()),
    }
}

/// Brings `url` into `part`, continuing what an earlier run left there, and returns the
/// bytes fetched now. `expected` is the archive's size where known; `room(total, have)` may
/// refuse before the body is read, and again as it arrives (free space). No more than the
/// size known, or `ceiling` where none is, is written, and no redirect from https to http is
/// followed.
pub(super) fn fetch(
    url: &str,
    part: &Path,
    expected: Option<u64>,
    ceiling: u64,
    room: &dyn Fn(u64, u64) -> Result<()>,
    progress: &mut dyn DownloadProgress,
) -> Result<u64> {
    let mut have = fs::metadata(part).map_or(0, |m| m.len());
    if expected.is_some_and(|size| have > size) {
        have = 0;
    }
    if expected.is_some_and(|size| have == size) {
        return Ok(0);
    }
    let mut response = get(&agent(), url, &resume_headers(part, have))?;
    let (start, total) = match answer(&response, url, part, have, expected)? {
        Answer::From { start, total } => (start, total),
        Answer::AlreadyWhole => return Ok(0),
        Answer::StartAgain => {
            remove_part(part)?;
            return fetch(url, part, expected, ceiling, room, progress);
        }
    };
    let limit = check_size(url, part, start, total, expected, ceiling, room)?;
    let total = total.or(expected);
    let mut file = open_part(part, start, header(&response, "etag"), || {
        header(&response, "last-modified")
    })?;

    progress.step_started(&format!("downloading {url}"), true, total, start);
    let body = Body {
        url,
        part,
        start,
        total,
        limit,
        ceiling,
    };
    let (fetched, outcome) = body.copy(
        &mut response.body_mut().as_reader(),
        &mut file,
        room,
        progress,
    )?;
    progress.step_finished();
    file.sync_all()
        .with_context(|| format!("cannot write {}", part.display()))?;
    body.check_complete(start + fetched, outcome)?;
    Ok(fetched)
}

/// The HTTP client: bounded waits, no automatic redirects (`get` follows them, refusing
/// https → http), catdog's name.
fn agent() -> Agent {
    Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        // A stalled connection ends the run, and the next one resumes.
        .timeout_per_read(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("catdog/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// With `have` bytes in `part` already, the request for the rest, only if the file is still
/// the one they came from (`If-Range` with its validator).
fn resume_headers(part: &Path, have: u64) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if have > 0 {
        headers.push(("Range", format!("bytes={have}-")));
        if let Ok(validator) = fs::read_to_string(validator_path(part)) {
            headers.push(("If-Range", validator.trim().to_string()));
        }
    }
    headers
}

/// A response header as text.
fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// What the server's answer means for the part on disk.
enum Answer {
    /// Its body is the file from byte `start`, of `total` bytes where it says.
    From { start: u64, total: Option<u64> },
    /// The part holds the whole file already.
    AlreadyWhole,
    /// The part is longer than the file: start again, once.
    StartAgain,
}

/// Reads the status and the headers of the answer to a request for `url` with `have` bytes in
/// `part`.
fn answer(
    response: &ureq::http::Response<ureq::Body>,
    url: &str,
    part: &Path,
    have: u64,
    expected: Option<u64>,
) -> Result<Answer> {
    let status = response.status().as_u16();
    let length = response.body().content_length();
    match status {
        206 => match header(response, "content-range")
            .as_deref()
            .and_then(content_range)
        {
            Some((start, total)) if start == have => Ok(Answer::From {
                start,
                total: total.or(length.map(|l| start + l)),
            }),
            _ => bail!(
                "{url} answered a resumed download with another part of the file; remove {} \
                 and run again",
                part.display()
            ),
        },
        200 => Ok(Answer::From {
            start: 0,
            total: length,
        }),
        416 if have > 0 => {
            // "Range Not Satisfiable" with `Content-Range: bytes */N`: the part holds all N
            // bytes already (a download that ended just before it was unpacked).
            let size = header(response, "content-range")
                .as_deref()
                .and_then(|v| v.strip_prefix("bytes */"))
                .and_then(|n| n.trim().parse::<u64>().ok());
            match size == Some(have) && expected.is_none_or(|e| e == have) {
                true => Ok(Answer::AlreadyWhole),
                false => Ok(Answer::StartAgain),
            }
        }
        404 | 410 => bail!("{url} answered {status}: the archive is not there (any more)"),
        _ => bail!("{url} answered HTTP {status}: try again later"),
    }
}

/// Refuses a file other than the archive, larger than it can be, or without room for it, and
/// a part longer than the file; returns the most bytes the part may end with.
fn check_size(
    url: &str,
    part: &Path,
    start: u64,
    total: Option<u64>,
    expected: Option<u64>,
    ceiling: u64,
    room: &dyn Fn(u64, u64) -> Result<()>,
) -> Result<u64> {
    if let (Some(expected), Some(total)) = (expected, total)
        && expected != total
    {
        bail!("{url} offers {total} bytes, the archive has {expected}: not the same file");
    }
    let total = total.or(expected);
    if let Some(total) = total {
        room(total, start)?;
        ensure!(
            total <= ceiling,
            "{url} announces {}, more than the {} this archive can be",
            human_bytes(total),
            human_bytes(ceiling)
        );
    }
    let limit = total.unwrap_or(ceiling);
    ensure!(
        start <= limit,
        "{} holds {start} bytes, more than the {limit} of the file: remove it and run again",
        part.display()
    );
    Ok(limit)
}

/// Opens `part` to append from `start`, or afresh from 0; a new file's validator (its strong
/// `ETag`, or else `last_modified`) goes with the part only once the part is that file's
/// (opened afresh, empty), so that the two never describe different files.
fn open_part(
    part: &Path,
    start: u64,
    etag: Option<String>,
    last_modified: impl FnOnce() -> Option<String>,
) -> Result<fs::File> {
    if start == 0 {
        let _ = fs::remove_file(validator_path(part));
    }
    let validator = etag
        .filter(|tag| !tag.starts_with("W/"))
        .or_else(last_modified);
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .append(start > 0)
        .truncate(start == 0)
        .open(part)
        .with_context(|| format!("cannot write {}", part.display()))?;
    if start == 0
        && let Some(validator) = validator
    {
        fs::write(validator_path(part), validator)
            .with_context(|| format!("cannot write {}", validator_path(part).display()))?;
    }
    Ok(file)
}

/// The body being written into the part, from byte `start`, never past `limit`.
struct Body<'a> {
    url: &'a str,
    part: &'a Path,
    start: u64,
    total: Option<u64>,
    limit: u64,
    ceiling: u64,
}

impl Body<'_> {
    /// Copies `body` into `file`, checking for room as it grows; returns the bytes written,
    /// and how the reading ended (an error there leaves the part to resume).
    fn copy(
        &self,
        body: &mut impl Read,
        file: &mut fs::File,
        room: &dyn Fn(u64, u64) -> Result<()>,
        progress: &mut dyn DownloadProgress,
    ) -> Result<(u64, std::io::Result<()>)> {
        let mut buffer = vec![0; 256 * 1024];
        let mut fetched = 0u64;
        let mut room_checked_at = 0u64;
        loop {
            let n = match body.read(&mut buffer) {
                Ok(0) => return Ok((fetched, Ok(()))),
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Ok((fetched, Err(err))),
            };
            // Never past the size announced, or past the ceiling where none was.
            let left = self.limit - (self.start + fetched);
            let keep = (n as u64).min(left) as usize;
            file.write_all(&buffer[..keep])
                .with_context(|| format!("cannot write {}", self.part.display()))?;
            fetched += keep as u64;
            progress.advanced(keep as u64);
            if keep < n {
                if self.total.is_some() {
                    // The whole file is here; what the server sent on is not part of it.
                    return Ok((fetched, Ok(())));
                }
                remove_part(self.part)?;
                bail!(
                    "{} sent more than {}, more than this archive can be: stopped, and \
                     removed {}",
                    self.url,
                    human_bytes(self.ceiling),
                    self.part.display()
                );
            }
            if fetched - room_checked_at >= ROOM_CHECK_EVERY {
                room_checked_at = fetched;
                let got = self.start + fetched;
                room(self.total.unwrap_or(got + ROOM_CHECK_EVERY), got)?;
            }
        }
    }

    /// Refuses a download that stopped or ended short, saying that the part keeps what came.
    fn check_complete(&self, got: u64, outcome: std::io::Result<()>) -> Result<()> {
        let total_text = self
            .total
            .map_or_else(|| "?".to_string(), |t| t.to_string());
        if let Err(err) = outcome {
            bail!(
                "the download stopped after {got} of {total_text} bytes ({err}); {} keeps them: \
                 run the same command again to resume",
                self.part.display()
            );
        }
        if let Some(total) = self.total
            && got != total
        {
            bail!(
                "the download ended after {got} of {total} bytes; {} keeps them: run the same \
                 command again to resume",
                self.part.display()
            );
        }
        Ok(())
    }
}

/// GET `url` with `headers`, following up to [`MAX_REDIRECTS`] redirects, none of them from
/// https to http (which would give up the privacy and the integrity TLS gives the download).
fn get(
    agent: &Agent,
    url: &str,
    headers: &[(&str, String)],
) -> Result<ureq::http::Response<ureq::Body>> {
    let mut url = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let mut request = agent.get(&url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request
            .call()
            .map_err(|err| anyhow::anyhow!("cannot reach {url}: {err} (offline?)"))?;
        if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
            return Ok(response);
        }
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .with_context(|| format!("{url} redirects without saying where"))?;
        let next = resolve(&url, location);
        if !redirect_allowed(&url, &next) {
            bail!(
                "{url} redirects to {next}, which is not https: refused, since the download \
                 would no longer be private or protected from tampering on the way"
            );
        }
        url = next;
    }
    bail!("{url}: more than {MAX_REDIRECTS} redirects, refused")
}

/// Whether a redirect from `from` to `to` keeps what `from` promised: https stays https.
fn redirect_allowed(from: &str, to: &str) -> bool {
    let https = |url: &str| {
        url.get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    };
    !https(from) || https(to)
}

/// A redirect's `location` as an absolute URL, relative to `base`.
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    if let Some(host_and_path) = location.strip_prefix("//") {
        return format!("{scheme}://{host_and_path}");
    }
    let host = rest.split('/').next().unwrap_or(rest);
    if location.starts_with('/') {
        return format!("{scheme}://{host}{location}");
    }
    let folder = rest.rsplit_once('/').map_or(host, |(folder, _)| folder);
    format!("{scheme}://{folder}/{location}")
}

/// `bytes START-END/TOTAL` (TOTAL may be `*`): the first byte sent, and the file's size.
fn content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let (range, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let start = range.split_once('-')?.0.trim().parse().ok()?;
    Some((start, total.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::{content_range, redirect_allowed, resolve};

    #[test]
    fn a_redirect_may_not_leave_https_for_http() {
        assert!(!redirect_allowed("https://a.org/x", "http://b.org/x"));
        assert!(!redirect_allowed("HTTPS://a.org/x", "HTTP://a.org/x"));
        assert!(redirect_allowed("https://a.org/x", "https://b.org/x"));
        assert!(redirect_allowed(
            "http://127.0.0.1:8/x",
            "http://127.0.0.1:8/y"
        ));
        assert!(redirect_allowed("http://a.org/x", "https://a.org/x"));
    }

    #[test]
    fn redirects_resolve_against_the_url_they_came_from() {
        let base = "https://example.org/data/pets/images.tar.gz";
        assert_eq!(
            resolve(base, "http://other.org/x.tgz"),
            "http://other.org/x.tgz"
        );
        assert_eq!(resolve(base, "//cdn.org/x.tgz"), "https://cdn.org/x.tgz");
        assert_eq!(
            resolve(base, "/mirror/x.tgz"),
            "https://example.org/mirror/x.tgz"
        );
        assert_eq!(
            resolve(base, "x.tgz"),
            "https://example.org/data/pets/x.tgz"
        );
        assert_eq!(
            resolve("https://example.org", "x.tgz"),
            "https://example.org/x.tgz"
        );
    }

    #[test]
    fn content_range_gives_the_start_and_the_size() {
        assert_eq!(content_range("bytes 100-199/200"), Some((100, Some(200))));
        assert_eq!(content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(content_range("items 5-9/10"), None);
    }
}
