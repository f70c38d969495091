//! The cache of decoded photos that `catdog train` keeps: written once into the user's cache
//! folder, never among the photos while that folder can be written, and read back by later
//! runs, which then learn exactly what the decoding run learned.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{assert_success, path, stderr, stdout, synth, train_one_epoch};

/// One epoch on flex of the photos in `data` at 32 px, in batches of 8, into `out`, with
/// `cache_home` as the user's cache folder (`XDG_CACHE_HOME`).
fn train(data: &Path, out: &Path, cache_home: &Path) -> Output {
    train_one_epoch(data, out, 32)
        .batch_size(8)
        .json()
        .env("XDG_CACHE_HOME", cache_home)
        .run()
}

#[test]
fn decoded_photos_are_cached_once_and_read_back_by_later_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, 40, 32);
    let user_cache = dir.path().join("user-cache");

    let first = train(&data, &dir.path().join("first"), &user_cache);
    assert_success(&first);
    assert!(
        stderr(&first).contains("Cached the decoded photos in"),
        "{}",
        stderr(&first)
    );
    assert!(
        !data.join(".catdog-cache").exists(),
        "nothing is written among the photos"
    );
    assert!(
        stderr(&first).contains(path(&user_cache.join("catdog"))),
        "the cache is in the user's cache folder, and catdog says so: {}",
        stderr(&first)
    );
    let second = train(&data, &dir.path().join("second"), &user_cache);
    assert_success(&second);
    assert!(
        stderr(&second).contains("Read the decoded photos from the cache"),
        "{}",
        stderr(&second)
    );
    // Same seed, same pixels: the cached run learns exactly what the decoding run learned.
    let report =
        |output: &Output| -> Value { serde_json::from_str(stdout(output).trim()).unwrap() };
    assert_eq!(report(&first)["train_loss"], report(&second)["train_loss"]);
    assert_eq!(
        report(&first)["val_accuracy"],
        report(&second)["val_accuracy"]
    );
}

/// A read-only photo folder is left alone: the cache goes to the user's cache folder.
#[test]
fn a_read_only_photo_folder_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let user_cache = dir.path().join("user-cache");
    let read_only = dir.path().join("read-only");
    synth(&read_only, 40, 32);
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).unwrap();
    let third = train(&read_only, &dir.path().join("third"), &user_cache);
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o755)).unwrap();
    assert_success(&third);
    assert!(!read_only.join(".catdog-cache").exists());
    assert!(
        stderr(&third).contains(path(&user_cache.join("catdog"))),
        "{}",
        stderr(&third)
    );
}

/// A user cache folder that cannot be written: the photo folder's `.catdog-cache` instead of
/// decoding at every run.
#[test]
fn a_cache_folder_that_cannot_be_written_gives_way_to_the_photo_folder() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    synth(&data, 40, 32);
    let not_a_folder = dir.path().join("cache-is-a-file");
    fs::write(&not_a_folder, "").unwrap();
    let fourth = train(&data, &dir.path().join("fourth"), &not_a_folder);
    assert_success(&fourth);
    assert!(
        stderr(&fourth).contains(path(&data.join(".catdog-cache"))),
        "{}",
        stderr(&fourth)
    );
}
