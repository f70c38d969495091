//! `catdog download` against a server on 127.0.0.1 that the test starts, serving archives
//! it makes: no test touches the internet. A download is checked, laid out by class, resumed
//! where it stopped, refused where it is damaged, too long or would land outside its folder,
//! and flushed to disk before its folder is marked complete.

mod archives;
mod server;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use catdog::download::{Format, Layout, Request, Source, Summary, download};

use crate::common::{assert_success, catdog, stdout, strace_or_skip};
use archives::{kaggle_like, md5_hex, pet_entries, pets, picture, tar_gz, zip, zip_declaring};
use server::{Reply, Server, etag, serve};

fn request(server: &Server, to: &Path) -> Request {
    Request {
        to: to.to_path_buf(),
        mirror: Some(server.url.clone()),
        archive: None,
    }
}

fn get(source: &Source, request: &Request) -> anyhow::Result<Summary> {
    download(source, request, &mut ())
}

fn error(result: anyhow::Result<Summary>) -> String {
    format!("{:#}", result.expect_err("the download must fail"))
}

/// What a whole download of [`pet_entries`] into `pets` leaves beside it: the marker and the
/// three photos, and nothing else.
fn unpacked_pets() -> [PathBuf; 4] {
    [
        "pets/.catdog-download.json",
        "pets/cat/Abyssinian_1.jpg",
        "pets/cat/Bengal_2.jpg",
        "pets/dog/beagle_1.jpg",
    ]
    .map(PathBuf::from)
}

/// Everything in `dir`, as paths relative to it.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        if entry.path().is_dir() {
            found.extend(
                listing(&entry.path())
                    .into_iter()
                    .map(|p| Path::new(&entry.file_name()).join(p)),
            );
        } else {
            found.push(PathBuf::from(entry.file_name()));
        }
    }
    found.sort();
    found
}

#[test]
fn a_whole_download_is_checked_laid_out_by_class_and_not_fetched_twice() {
    let archive = tar_gz(&pet_entries());
    let source = pets(&archive);
    let server = serve(archive, vec![Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");

    let summary = get(&source, &request(&server, &to)).unwrap();
    assert_eq!((summary.cats, summary.dogs), (2, 1), "{summary:?}");
    assert_eq!(summary.other_entries, 1, "the .mat file");
    let mut left_out = summary.left_out.clone();
    left_out.sort();
    assert_eq!(
        left_out,
        [
            (
                "images/Persian_3.jpg".to_string(),
                "not an image".to_string()
            ),
            ("images/pug_7.jpg".to_string(), "empty".to_string())
        ]
    );
    assert_eq!(fs::read(to.join("cat/Bengal_2.jpg")).unwrap(), picture(2));
    assert_eq!(fs::read(to.join("dog/beagle_1.jpg")).unwrap(), picture(3));
    assert_eq!(
        listing(dir.path()),
        unpacked_pets(),
        "the photos, and no archive or temporary folder left beside them"
    );

    // Run again: the folder is recognised and nothing is fetched.
    let again = get(&source, &request(&server, &to)).unwrap();
    assert!(again.already_there);
    assert_eq!((again.cats, again.dogs), (2, 1));
    assert_eq!(server.ranges.lock().unwrap().len(), 1, "one request in all");

    // A folder that is something else is not touched.
    let other = dir.path().join("mine");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("notes.txt"), "mine").unwrap();
    let err = error(get(&source, &request(&server, &other)));
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(fs::read_to_string(other.join("notes.txt")).unwrap(), "mine");
}

/// Two downloads into one folder: the second is refused while the first holds the folder's
/// lock, instead of removing the first's unpacking folder as a leftover.
#[test]
fn a_second_download_into_the_same_folder_waits_for_the_first() {
    let archive = tar_gz(&pet_entries());
    let source = pets(&archive);
    let server = serve(archive, vec![Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    // The first download, as another process holds it.
    let held = fs::File::create(dir.path().join(".pets.catdog-lock")).unwrap();
    held.try_lock().unwrap();
    let err = error(get(&source, &request(&server, &to)));
    assert!(
        err.contains("another `catdog download` is writing") && err.contains("pets"),
        "{err}"
    );
    assert!(!to.exists(), "nothing unpacked");
    assert_eq!(server.ranges.lock().unwrap().len(), 0, "nothing fetched");
    drop(held);
    let summary = get(&source, &request(&server, &to)).unwrap();
    assert_eq!((summary.cats, summary.dogs), (2, 1));
}

/// A folder name that is not UTF-8 is refused before anything is fetched or unpacked.
#[cfg(unix)]
#[test]
fn a_folder_name_that_is_not_text_is_refused_before_any_work() {
    use std::os::unix::ffi::OsStrExt;
    let archive = tar_gz(&pet_entries());
    let source = pets(&archive);
    let server = serve(archive, vec![Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join(std::ffi::OsStr::from_bytes(b"pets-\xff"));
    let err = error(get(&source, &request(&server, &to)));
    assert!(err.contains("is not valid UTF-8"), "{err}");
    assert_eq!(server.ranges.lock().unwrap().len(), 0, "nothing fetched");
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A server that sends on past the file's end (no Content-Length): catdog stops at the size
/// it knows, and where it knows none, at the source's ceiling, removing what it fetched.
#[test]
fn a_body_longer_than_the_archive_is_stopped_at_its_size() {
    let archive = tar_gz(&pet_entries());
    let source = pets(&archive);
    let server = serve(archive.clone(), vec![Reply::Longer(300_000)]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    let summary = get(&source, &request(&server, &to)).unwrap();
    assert_eq!(
        summary.fetched_bytes,
        archive.len() as u64,
        "not a byte more"
    );
    assert_eq!((summary.cats, summary.dogs), (2, 1));

    let zipped = zip(&[
        ("PetImages/Cat/1.jpg", picture(1)),
        ("PetImages/Dog/1.jpg", picture(2)),
    ]);
    let server = serve(zipped, vec![Reply::Longer(2 << 20)]);
    let to = dir.path().join("kaggle");
    let err = error(get(&kaggle_like(), &request(&server, &to)));
    assert!(
        err.contains("sent more than 1.0 MiB, more than this archive can be"),
        "{err}"
    );
    assert!(!to.exists());
    assert_eq!(
        listing(dir.path()),
        unpacked_pets(),
        "no part left of the download that was stopped"
    );
}

/// Two photos whose zip entries declare 2⁶³ bytes each: their sum is past any disk, and the
/// archive is refused before a byte is unpacked (in a release build the sum used to wrap to
/// 0, which passed the free-space check).
#[test]
fn a_zip_declaring_more_bytes_than_a_disk_holds_is_refused() {
    let archive = zip_declaring(
        &[
            ("PetImages/Cat/1.jpg", picture(1)),
            ("PetImages/Dog/2.jpg", picture(2)),
        ],
        1 << 63,
    );
    let server = serve(archive, vec![Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    let err = error(get(&kaggle_like(), &request(&server, &to)));
    assert!(
        err.contains("declares more bytes of photos than any disk holds")
            && err.contains("9223372036854775808"),
        "{err}"
    );
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
}

/// A `.part` that already holds the whole archive (a run stopped after the download, before
/// unpacking) of a source whose size is not known: the server's 416 with the size says it is
/// complete, and nothing is fetched again.
#[test]
fn a_complete_part_of_unknown_size_is_not_fetched_again() {
    let zipped = zip(&[
        ("PetImages/Cat/1.jpg", picture(1)),
        ("PetImages/Dog/1.jpg", picture(2)),
    ]);
    let server = serve(zipped.clone(), vec![Reply::NotSatisfiable]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("kaggle");
    fs::write(dir.path().join("kaggle.cats.zip.part"), &zipped).unwrap();
    let summary = get(&kaggle_like(), &request(&server, &to)).unwrap();
    assert_eq!((summary.cats, summary.dogs), (1, 1));
    assert_eq!(summary.fetched_bytes, 0);
    assert_eq!(
        *server.ranges.lock().unwrap(),
        [Some(format!("bytes={}-", zipped.len()))],
        "one request, answered 416"
    );
}

/// A download resumed after the file changed on the server: the part is sent back with its
/// validator (If-Range), the server answers with the whole new file, and catdog starts over
/// instead of appending the new file's end to the old file's start.
#[test]
fn a_part_of_an_older_version_of_the_file_is_not_appended_to() {
    let old = tar_gz(&pet_entries());
    let mut entries = pet_entries();
    entries.push(("images/boxer_9.jpg", picture(9)));
    let new = tar_gz(&entries);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    let half = old.len() / 2;
    let first = serve(old.clone(), vec![Reply::DropAfter(half)]);
    error(get(&pets(&old), &request(&first, &to)));

    let second = serve(new.clone(), vec![Reply::Whole]);
    let source = Source {
        size: None,
        md5: Some(md5_hex(&new)),
        max_size: 1 << 20,
        ..pets(&new)
    };
    let summary = get(&source, &request(&second, &to)).unwrap();
    assert_eq!(*second.if_ranges.lock().unwrap(), [Some(etag(&old))]);
    assert_eq!(
        summary.fetched_bytes,
        new.len() as u64,
        "the new file, whole"
    );
    assert_eq!((summary.cats, summary.dogs), (2, 2));
}

/// Redirects are followed (catdog follows them itself, to refuse https → http).
#[test]
fn a_redirect_is_followed_to_the_archive() {
    let archive = tar_gz(&pet_entries());
    let server = serve(archive.clone(), vec![Reply::Redirect, Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let summary = get(&pets(&archive), &request(&server, &dir.path().join("pets"))).unwrap();
    assert_eq!((summary.cats, summary.dogs), (2, 1));
    assert_eq!(server.ranges.lock().unwrap().len(), 2);
}

#[test]
fn a_dropped_connection_resumes_where_it_stopped() {
    let archive = tar_gz(&pet_entries());
    let half = archive.len() / 2;
    let source = pets(&archive);
    let server = serve(archive.clone(), vec![Reply::DropAfter(half), Reply::Whole]);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");

    let err = error(get(&source, &request(&server, &to)));
    assert!(
        err.contains(&format!("stopped after {half} of {}", archive.len())),
        "{err}"
    );
    assert!(
        err.contains("run the same command again to resume"),
        "{err}"
    );
    assert!(!to.exists(), "nothing unpacked from half an archive");
    let part = dir.path().join("pets.images.tar.gz.part");
    assert_eq!(fs::read(&part).unwrap(), archive[..half]);

    let summary = get(&source, &request(&server, &to)).unwrap();
    assert_eq!((summary.cats, summary.dogs), (2, 1));
    assert_eq!(
        summary.fetched_bytes,
        (archive.len() - half) as u64,
        "only the rest"
    );
    assert_eq!(
        *server.ranges.lock().unwrap(),
        [None, Some(format!("bytes={half}-"))]
    );
    assert!(!part.exists());
}

#[test]
fn a_wrong_checksum_or_a_truncated_body_is_refused_before_unpacking() {
    let archive = tar_gz(&pet_entries());
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    let part = dir.path().join("pets.images.tar.gz.part");

    let mut damaged = archive.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    let server = serve(damaged, vec![Reply::Whole]);
    let err = error(get(&pets(&archive), &request(&server, &to)));
    assert!(err.contains("has MD5") && err.contains("damaged"), "{err}");
    assert!(err.contains("download it afresh"), "{err}");
    assert!(!to.exists() && !part.exists(), "{:?}", listing(dir.path()));

    // A server that sends part of the file as if it were all of it: the size gives it away
    // where it is known...
    let server = serve(archive.clone(), vec![Reply::Truncated(archive.len() - 10)]);
    let err = error(get(&pets(&archive), &request(&server, &to)));
    assert!(
        err.contains(&format!("offers {} bytes", archive.len() - 10)),
        "{err}"
    );
    assert!(!to.exists());

    // ...and the structure where it is not.
    let zipped = zip(&[
        ("PetImages/Cat/1.jpg", picture(1)),
        ("PetImages/Dog/1.jpg", picture(2)),
    ]);
    let server = serve(zipped.clone(), vec![Reply::Truncated(zipped.len() - 30)]);
    let err = error(get(&kaggle_like(), &request(&server, &to)));
    assert!(err.contains("is not a whole zip archive"), "{err}");
    assert!(!to.exists());
    assert_eq!(
        listing(dir.path()),
        Vec::<PathBuf>::new(),
        "the bad download is removed"
    );
}

#[test]
fn http_errors_and_no_network_name_the_url_and_the_way_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("pets");
    let source = kaggle_like();
    for (status, says) in [(404, "answered 404"), (500, "answered HTTP 500")] {
        let server = serve(Vec::new(), vec![Reply::Status(status)]);
        let err = error(get(&source, &request(&server, &to)));
        assert!(err.contains(&format!("{}/cats.zip", server.url)), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("--archive cats.zip"), "{err}");
    }
    // Nothing listens on a port just freed.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let offline = Request {
        mirror: Some(format!("http://{closed}")),
        ..request(&serve(Vec::new(), vec![Reply::Whole]), &to)
    };
    let started = std::time::Instant::now();
    let err = error(get(&source, &offline));
    assert!(
        err.contains("cannot reach") && err.contains("by hand"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 20, "fails at once");
    assert_eq!(listing(dir.path()), Vec::<PathBuf>::new());
}

#[test]
fn entries_that_would_land_outside_the_folder_refuse_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("sets/pets");
    let escapes = [
        (
            Format::TarGz,
            tar_gz(&[
                ("images/Abyssinian_1.jpg", picture(1)),
                ("../Bengal_1.jpg", picture(2)),
            ]),
            "../Bengal_1.jpg",
        ),
        (
            Format::Zip,
            zip(&[
                ("PetImages/Dog/1.jpg", picture(1)),
                ("PetImages/Cat/../../../2.jpg", picture(2)),
            ]),
            "../../2.jpg",
        ),
        (
            Format::TarGz,
            tar_gz(&[("/tmp/Bengal_9.jpg", picture(2))]),
            "/tmp/Bengal_9.jpg",
        ),
        // On Windows, joining `C:x.jpg` would replace the whole path with drive C's.
        (
            Format::Zip,
            zip(&[
                ("PetImages/Dog/1.jpg", picture(1)),
                ("PetImages/Cat/C:x.jpg", picture(2)),
            ]),
            "C:x.jpg",
        ),
    ];
    for (format, archive, entry) in escapes {
        let source = Source {
            format,
            layout: match format {
                Format::TarGz => Layout::BreedCase,
                Format::Zip => Layout::ClassFolders,
            },
            md5: None,
            ..pets(&archive)
        };
        let server = serve(archive, vec![Reply::Whole]);
        let err = error(get(&source, &request(&server, &to)));
        assert!(
            err.contains(entry) && err.contains("outside the folder"),
            "{err}"
        );
        assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    }

    // A link is refused too.
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_path("images/Bengal_1.jpg").unwrap();
    header.set_link_name("/etc/passwd").unwrap();
    header.set_size(0);
    header.set_cksum();
    builder.append(&header, std::io::empty()).unwrap();
    let archive = builder.into_inner().unwrap().finish().unwrap();
    let source = Source {
        md5: None,
        ..pets(&archive)
    };
    let server = serve(archive, vec![Reply::Whole]);
    let err = error(get(&source, &request(&server, &to)));
    assert!(err.contains("the link \"images/Bengal_1.jpg\""), "{err}");
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn the_command_downloads_through_a_mirror_and_unpacks_an_archive_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let archive = zip(&[
        ("PetImages/Cat/1.jpg", picture(1)),
        ("PetImages/Cat/Thumbs.db", b"windows".to_vec()),
        ("PetImages/Dog/1.jpg", picture(2)),
        ("PetImages/Dog/2.jpg", Vec::new()),
        ("readme[1].txt", b"readme".to_vec()),
    ]);
    let server = serve(archive.clone(), vec![Reply::Whole]);
    let to = dir.path().join("kaggle");
    let output = catdog()
        .download()
        .args(["kaggle", "--mirror", &server.url, "--to"])
        .arg(&to)
        .succeeds();
    let text = stdout(&output);
    assert!(
        text.contains("1 cat photos") && text.contains("1 dog photos"),
        "{text}"
    );
    assert!(text.contains("PetImages/Dog/2.jpg (empty)"), "{text}");
    assert!(
        text.contains(&format!("catdog train --data {}", to.display())),
        "{text}"
    );
    assert_eq!(fs::read(to.join("dog/1.jpg")).unwrap(), picture(2));

    // The same archive, downloaded by hand: no network.
    let file = dir.path().join("kagglecatsanddogs_5340.zip");
    fs::write(&file, &archive).unwrap();
    let by_hand = dir.path().join("by-hand");
    let output = catdog()
        .download()
        .args(["kaggle", "--archive"])
        .arg(&file)
        .arg("--to")
        .arg(&by_hand)
        .json()
        .succeeds();
    let summary: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(
        (summary["cats"].as_u64(), summary["dogs"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        file.is_file(),
        "an archive named with --archive is the user's: kept"
    );

    // oxford-pets' size and MD5 are the real ones: a test archive under its name is refused.
    let server = serve(tar_gz(&pet_entries()), vec![Reply::Whole]);
    let pets = dir.path().join("pets");
    catdog()
        .download()
        .args(["oxford-pets", "--mirror", &server.url, "--to"])
        .arg(&pets)
        .fails_with("the archive has 791918971");
    assert!(!pets.exists());
}

/// Issue 37, item 11: every unpacked photo is flushed to disk before the folder is marked
/// complete, so that after a power cut a folder marked complete never holds empty photos.
/// Seen through strace (Linux): each photo's fsync comes before the marker's rename.
#[test]
fn unpacked_photos_are_flushed_before_the_folder_is_marked_complete() {
    if !strace_or_skip("unpacked_photos_are_flushed_before_the_folder_is_marked_complete") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kagglecatsanddogs_5340.zip");
    fs::write(
        &file,
        zip(&[
            ("PetImages/Cat/1.jpg", picture(1)),
            ("PetImages/Dog/1.jpg", picture(2)),
        ]),
    )
    .unwrap();
    let trace = dir.path().join("trace.txt");
    let to = dir.path().join("kaggle");
    let output = std::process::Command::new("strace")
        .args([
            "-f",
            "-y",
            "-e",
            "trace=fsync,fdatasync,rename,renameat,renameat2",
            "-o",
        ])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_catdog"))
        .args(["download", "kaggle", "--archive"])
        .arg(&file)
        .arg("--to")
        .arg(&to)
        .output()
        .unwrap();
    assert_success(&output);
    let lines: Vec<String> = fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let marked = lines
        .iter()
        .position(|line| line.contains("rename") && line.contains(".catdog-download.json"))
        .unwrap_or_else(|| {
            panic!(
                "no rename of the marker in the trace:\n{}",
                lines.join("\n")
            )
        });
    for photo in ["/cat/1.jpg>", "/dog/1.jpg>"] {
        let flushed = lines
            .iter()
            .position(|line| line.contains("sync(") && line.contains(photo));
        assert!(
            flushed.is_some_and(|at| at < marked),
            "{photo} not flushed before the marker (line {flushed:?}, marker at line {marked}):\n{}",
            lines.join("\n")
        );
    }
}
