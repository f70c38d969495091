//! What identifies the exact photos of a folder: their classes, their paths inside the folder,
//! sizes and modification times, hashed with FNV-1a over a fixed encoding. It names the pixel
//! cache and is recorded with a checkpoint and a model, so it must not change with the Rust
//! toolchain (std's `DefaultHasher` may), nor with the path the folder is reached by. Without
//! the modification times it is the folder's listing, which a copy of the folder keeps.

use std::fs;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// Bumped when the encoding below changes.
const ENCODING: &[u8] = b"catdog-photos-v2";
const LISTING_ENCODING: &[u8] = b"catdog-listing-v1";

/// What a fingerprint covers besides the classes, paths and sizes.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Times {
    /// Modification times too: any photo touched changes it.
    Included,
    /// Not them: a copy of the folder has the same one.
    Left,
}

/// The fingerprint of the photos `samples` (path and class index) of `classes`, found under
/// `root`: `photos-…` with the modification times, `listing-…` without.
pub(crate) fn fingerprint<'a>(
    root: &Path,
    classes: &[String],
    samples: impl Iterator<Item = (&'a Path, usize)>,
    times: Times,
) -> String {
    let mut hash = Fnv1a::new();
    hash.write(match times {
        Times::Included => ENCODING,
        Times::Left => LISTING_ENCODING,
    });
    hash.write_u64(classes.len() as u64);
    for class in classes {
        hash.write_bytes(class.as_bytes());
    }
    for (path, label) in samples {
        hash.write_u64(label as u64);
        let inside = path.strip_prefix(root).unwrap_or(path);
        hash.write_bytes(inside.as_os_str().as_encoded_bytes());
        match fs::metadata(path) {
            Ok(meta) if times == Times::Left => hash.write_u64(meta.len()),
            Ok(meta) => {
                hash.write_u64(meta.len());
                let since_epoch = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
                let (secs, nanos) =
                    since_epoch.map_or((u64::MAX, 0), |d| (d.as_secs(), d.subsec_nanos()));
                hash.write_u64(secs);
                hash.write_u64(nanos as u64);
            }
            Err(_) => hash.write_u64(u64::MAX),
        }
    }
    let kind = match times {
        Times::Included => "photos",
        Times::Left => "listing",
    };
    format!("{kind}-{:016x}", hash.finish())
}

/// The 64-bit FNV-1a hash: a fixed, documented function (http://www.isthe.com/chongo/tech/comp/fnv/).
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= byte as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.write(&value.to_le_bytes());
    }

    /// Length first, so that ("ab", "c") and ("a", "bc") differ.
    fn write_bytes(&mut self, bytes: &[u8]) {
        self.write_u64(bytes.len() as u64);
        self.write(bytes);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;

    #[test]
    fn fnv1a_gives_the_published_values() {
        for (input, expected) in [
            (&b""[..], 0xcbf2_9ce4_8422_2325),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut hash = Fnv1a::new();
            hash.write(input);
            assert_eq!(hash.finish(), expected, "{input:?}");
        }
    }

    #[test]
    fn a_folder_has_one_fingerprint_whatever_path_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("photos");
        for name in ["cat/1.jpg", "cat/2.jpg", "dog/1.jpg", "dog/2.jpg"] {
            let path = data.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, name).unwrap();
        }
        let scanned = Dataset::scan(&data).unwrap().fingerprint;
        let roundabout = data.join("cat").join("..");
        assert_eq!(Dataset::scan(&roundabout).unwrap().fingerprint, scanned);

        fs::write(data.join("dog/2.jpg"), "another photo").unwrap();
        let changed = Dataset::scan(&data).unwrap().fingerprint;
        assert_ne!(changed, scanned, "a changed photo changes the fingerprint");
        fs::rename(data.join("dog/2.jpg"), data.join("dog/3.jpg")).unwrap();
        assert_ne!(
            Dataset::scan(&data).unwrap().fingerprint,
            changed,
            "so does a renamed one"
        );
    }

    /// A copy of a folder, whose photos get new modification times, keeps its listing but
    /// not its fingerprint; a photo of another size changes both.
    #[test]
    fn a_copy_keeps_the_listing_and_a_changed_photo_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let (data, copy) = (dir.path().join("photos"), dir.path().join("copy"));
        for name in ["cat/1.jpg", "cat/2.jpg", "dog/1.jpg", "dog/2.jpg"] {
            for root in [&data, &copy] {
                let path = root.join(name);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, name).unwrap();
            }
        }
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        fs::File::options()
            .write(true)
            .open(data.join("cat/1.jpg"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let (original, copied) = (Dataset::scan(&data).unwrap(), Dataset::scan(&copy).unwrap());
        assert_ne!(original.fingerprint, copied.fingerprint);
        assert_eq!(original.listing, copied.listing);
        assert!(copied.listing.starts_with("listing-"), "{}", copied.listing);
        fs::write(copy.join("dog/2.jpg"), "a longer, other photo").unwrap();
        assert_ne!(Dataset::scan(&copy).unwrap().listing, original.listing);
    }
}
