//! A real folder of photos holds broken and odd files. Odd but valid photos are read right;
//! each broken one is skipped with a warning naming it; training goes on; nothing panics.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use catdog::data::decode_photo;
use image::{ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use serde_json::Value;

use crate::common::{catdog, fixture, real_photos_or_skip, synth, text, train_one_epoch};

const RED: [u8; 3] = [220, 20, 20];

fn red_image(width: u32, height: u32) -> RgbImage {
    RgbImage::from_pixel(width, height, Rgb(RED))
}

/// Every pixel of a decoded 16×16 photo is close to `color`.
fn assert_all_near(pixels: &[u8], color: [u8; 3], what: &str) {
    for pixel in pixels.chunks(3) {
        let off = pixel
            .iter()
            .zip(color)
            .map(|(&p, c)| (p as i32 - c as i32).abs())
            .max()
            .unwrap();
        assert!(
            off <= 40,
            "{what}: pixel {pixel:?}, expected about {color:?}"
        );
    }
}

#[test]
fn odd_but_valid_photos_decode_to_the_right_pixels() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);

    let mut rgba = RgbaImage::from_pixel(30, 30, Rgba([RED[0], RED[1], RED[2], 255]));
    rgba.put_pixel(0, 0, Rgba([0, 0, 0, 0]));
    rgba.save(path("alpha.png")).unwrap();
    image::ImageBuffer::<Rgb<u16>, _>::from_pixel(12, 12, Rgb([56_000, 5_000, 5_000]))
        .save(path("sixteen-bit.png"))
        .unwrap();
    image::GrayImage::from_pixel(40, 20, image::Luma([128]))
        .save_with_format(path("gray.jpg"), ImageFormat::Jpeg)
        .unwrap();
    for (name, format) in [
        ("photo.webp", ImageFormat::WebP),
        ("photo.bmp", ImageFormat::Bmp),
        ("photo.gif", ImageFormat::Gif),
    ] {
        red_image(25, 17)
            .save_with_format(path(name), format)
            .unwrap();
    }
    red_image(1, 1).save(path("one-pixel.png")).unwrap();
    // A JPEG named .png: the content decides, not the name.
    red_image(20, 20)
        .save_with_format(path("really-a-jpeg.png"), ImageFormat::Jpeg)
        .unwrap();

    for name in [
        "alpha.png",
        "sixteen-bit.png",
        "photo.webp",
        "photo.bmp",
        "photo.gif",
        "one-pixel.png",
        "really-a-jpeg.png",
    ] {
        let pixels = decode_photo(&path(name), 16).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(pixels.len(), 16 * 16 * 3);
        assert_all_near(&pixels[3..], RED, name);
    }
    assert_all_near(
        &decode_photo(&path("gray.jpg"), 16).unwrap(),
        [128; 3],
        "gray.jpg",
    );
    assert_all_near(
        &decode_photo(&fixture("cmyk.jpg"), 16).unwrap(),
        [255, 0, 0],
        "cmyk.jpg",
    );

    // Stored 20×10 with red left and blue right, EXIF says "turn 90° clockwise": upright,
    // red is on top and blue below.
    // The large one (160×80) goes through the DCT-scaled JPEG path, the small one does not.
    for name in ["exif-rotate-90.jpg", "exif-rotate-90-large.jpg"] {
        let upright = decode_photo(&fixture(name), 16).unwrap();
        let row = |y: usize| &upright[y * 16 * 3..(y + 1) * 16 * 3];
        assert_all_near(row(2), [255, 0, 0], &format!("top of the rotated {name}"));
        assert_all_near(
            row(13),
            [0, 0, 255],
            &format!("bottom of the rotated {name}"),
        );
    }
}

/// A PNG whose header claims 100,000 × 100,000 pixels: 30 GB once decoded.
fn decompression_bomb() -> Vec<u8> {
    let mut header = Vec::new();
    header.extend_from_slice(b"IHDR");
    header.extend_from_slice(&100_000u32.to_be_bytes());
    header.extend_from_slice(&100_000u32.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&header);
    png.extend_from_slice(&crc32fast::hash(&header).to_be_bytes());
    png
}

/// A JPEG of noise, so that most of it is entropy-coded data, as in a photo: cut to a third,
/// it still decodes "successfully" unless catdog checks for its end.
fn jpeg_bytes() -> Vec<u8> {
    let mut state = 7u32;
    let noise = RgbImage::from_fn(256, 256, |_, _| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let [r, g, b, _] = state.to_le_bytes();
        Rgb([r, g, b])
    });
    let mut bytes = Vec::new();
    noise
        .write_to(&mut std::io::Cursor::new(&mut bytes), ImageFormat::Jpeg)
        .unwrap();
    bytes
}

/// The check for JPEGs cut short refuses none of the 2,002 Kaggle originals.
#[test]
fn every_real_photo_decodes() {
    let Some(dir) = real_photos_or_skip("every_real_photo_decodes") else {
        return;
    };
    let failures: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| decode_photo(&path, 16).err())
        .map(|err| format!("{err:#}"))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bad_files_are_skipped_with_a_warning_and_training_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("photos");
    synth(&data, 40, 16);
    let (cats, dogs) = (data.join("cat"), data.join("dog"));

    let mut bad: Vec<PathBuf> = Vec::new();
    let mut add_bad = |path: PathBuf, bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        bad.push(path);
    };
    add_bad(cats.join("empty.jpg"), b"");
    let jpeg = jpeg_bytes();
    add_bad(cats.join("truncated.jpg"), &jpeg[..jpeg.len() / 3]);
    add_bad(cats.join("not-an-image.jpg"), b"<html>404 not found</html>");
    add_bad(dogs.join("bomb.png"), &decompression_bomb());
    // A PNG whose last data chunk fails its CRC (the 4 bytes before the 12-byte IEND chunk).
    let mut png = Vec::new();
    red_image(8, 8)
        .write_to(&mut std::io::Cursor::new(&mut png), ImageFormat::Png)
        .unwrap();
    let crc = png.len() - 16;
    png[crc] ^= 0xff;
    add_bad(dogs.join("bad-crc.png"), &png);
    std::os::unix::fs::symlink(dir.path().join("nowhere.jpg"), dogs.join("dangling.jpg")).unwrap();
    bad.push(dogs.join("dangling.jpg"));

    // Unreadable: only where permissions apply (not as root, which reads anything).
    let locked = dogs.join("unreadable.png");
    fs::write(&locked, b"whatever").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::File::open(&locked).is_err() {
        bad.push(locked);
    } else {
        fs::remove_file(&locked).unwrap();
    }

    // Not photos at all, or not classes: ignored without a word.
    fs::write(cats.join("notes.txt"), "my cats").unwrap();
    fs::write(cats.join("Thumbs.db"), [0u8; 64]).unwrap();
    fs::write(dogs.join(".DS_Store"), [0u8; 64]).unwrap();
    fs::write(dogs.join(".hidden.jpg"), b"not even an image").unwrap();
    fs::create_dir(data.join("empty-folder")).unwrap();
    std::os::unix::fs::symlink(&data, dogs.join("loop")).unwrap();

    // Valid photos with awkward names or links still count.
    let odd_name = dogs.join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff.png"));
    red_image(16, 16)
        .save_with_format(&odd_name, ImageFormat::Png)
        .unwrap();
    std::os::unix::fs::symlink(cats.join("00000.png"), cats.join("linked.png")).unwrap();
    // A class folder's sub-folders belong to it.
    fs::create_dir(cats.join("older")).unwrap();
    red_image(16, 16).save(cats.join("older/old.png")).unwrap();
    let good = 40 + 3;

    let model = dir.path().join("model");
    let output = train_one_epoch(&data, &model, 16).json().run();
    let err = text(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let report: Value = serde_json::from_str(text(&output.stdout).trim()).unwrap();
    assert_eq!(report["classes"], serde_json::json!(["cat", "dog"]));
    let trained = report["train_images"].as_u64().unwrap() + report["val_images"].as_u64().unwrap();
    assert_eq!(trained, good);
    let mut skipped: Vec<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .collect();
    skipped.sort();
    let mut expected: Vec<String> = bad.iter().map(|p| p.display().to_string()).collect();
    expected.sort();
    assert_eq!(skipped, expected);
    for path in &expected {
        let warnings = err
            .lines()
            .filter(|l| l.starts_with(&format!("skipped {path}: ")))
            .count();
        assert_eq!(warnings, 1, "one warning for {path} in:\n{err}");
    }
    // The decoder's words once, and a chunk named as people name it.
    let crc_warning = err.lines().find(|l| l.contains("bad-crc.png")).unwrap();
    assert!(crc_warning.contains("IDAT chunk"), "{crc_warning}");
    assert!(!crc_warning.contains("ChunkType"), "{crc_warning}");
    assert_eq!(crc_warning.matches("CRC error").count(), 1, "{crc_warning}");

    // predict over the whole folder (sub-folders and the symlink loop included): an error
    // line for each bad file, a prediction for every good one, and exit code 1.
    let output = catdog()
        .predict()
        .flex()
        .model(&model)
        .json()
        .arg(&data)
        .run();
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    for path in &expected {
        assert!(
            err.contains(path.as_str()),
            "no error for {path} in:\n{err}"
        );
    }
    let predicted = text(&output.stdout).lines().count();
    assert_eq!(predicted as u64, good, "every good photo");
}
