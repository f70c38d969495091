//! Fetching an archive into a `.part` file that a later run resumes (HTTP Range).

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ureq::Agent;

use super::DownloadProgress;

/// Brings `url` into `part`, continuing what an earlier run left there, and returns the
/// bytes fetched now. `expected` is the archive's size where known; `room(total, have)` may
/// refuse before the body is read (free space).
pub(super) fn fetch(
    url: &str,
    part: &Path,
    expected: Option<u64>,
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
    let agent: Agent = Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        // A stalled connection ends the run, and the next one resumes.
        .timeout_per_read(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .user_agent(concat!("catdog/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent.get(url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let mut response = request
        .call()
        .map_err(|err| anyhow::anyhow!("cannot reach {url}: {err} (offline?)"))?;
    let status = response.status().as_u16();
    let length = response.body().content_length();
    let (start, total) = match status {
        206 => {
            let range = response
                .headers()
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .and_then(content_range);
            match range {
                Some((start, total)) if start == have => {
                    (start, total.or(length.map(|l| start + l)))
                }
                _ => bail!(
                    "{url} answered a resumed download with another part of the file; remove \
                     {} and run again",
                    part.display()
                ),
            }
        }
        200 => (0, length),
        // The part on disk is longer than the file: start again, once.
        416 if have > 0 => {
            fs::remove_file(part).with_context(|| format!("cannot remove {}", part.display()))?;
            return fetch(url, part, expected, room, progress);
        }
        404 | 410 => bail!("{url} answered {status}: the archive is not there (any more)"),
        _ => bail!("{url} answered HTTP {status}: try again later"),
    };
    if let (Some(expected), Some(total)) = (expected, total)
        && expected != total
    {
        bail!("{url} offers {total} bytes, the archive has {expected}: not the same file");
    }
    if let Some(total) = total.or(expected) {
        room(total, start)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .append(start > 0)
        .truncate(start == 0)
        .open(part)
        .with_context(|| format!("cannot write {}", part.display()))?;

    progress.step_started(&format!("downloading {url}"), true, total, start);
    let mut body = response.body_mut().as_reader();
    let mut buffer = vec![0; 256 * 1024];
    let mut fetched = 0u64;
    let outcome = loop {
        match body.read(&mut buffer) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                file.write_all(&buffer[..n])
                    .with_context(|| format!("cannot write {}", part.display()))?;
                fetched += n as u64;
                progress.advanced(n as u64);
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => break Err(err),
        }
    };
    progress.step_finished();
    file.sync_all()
        .with_context(|| format!("cannot write {}", part.display()))?;
    let got = start + fetched;
    let total_text = total.map_or_else(|| "?".to_string(), |t| t.to_string());
    if let Err(err) = outcome {
        bail!(
            "the download stopped after {got} of {total_text} bytes ({err}); {} keeps them: run \
             the same command again to resume",
            part.display()
        );
    }
    if let Some(total) = total
        && got != total
    {
        bail!(
            "the download ended after {got} of {total} bytes; {} keeps them: run the same \
             command again to resume",
            part.display()
        );
    }
    Ok(fetched)
}

/// `bytes START-END/TOTAL` (TOTAL may be `*`): the first byte sent, and the file's size.
fn content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let (range, total) = value.strip_prefix("bytes ")?.split_once('/')?;
    let start = range.split_once('-')?.0.trim().parse().ok()?;
    Some((start, total.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::content_range;

    #[test]
    fn content_range_gives_the_start_and_the_size() {
        assert_eq!(content_range("bytes 100-199/200"), Some((100, Some(200))));
        assert_eq!(content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(content_range("items 5-9/10"), None);
    }
}
