//! What the tests download: small archives made on the spot (tar.gz and zip, paths written as
//! given, sizes declared as wished) and sources like the real ones that name them.

use std::io::{Cursor, Write};

use catdog::download::{Format, Layout, Source};
use md5::{Digest, Md5};

/// A small PNG, different for each `seed` (the name says .jpg: catdog reads what it is).
pub fn picture(seed: u8) -> Vec<u8> {
    let image = image::RgbImage::from_pixel(4, 4, image::Rgb([seed, 100, 200]));
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    bytes.into_inner()
}

/// A tar.gz of `(path, bytes)`, paths written as given, `..` and all.
pub fn tar_gz(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, bytes) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, bytes.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

pub fn zip(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (path, bytes) in entries {
        writer
            .start_file(*path, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(bytes).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// A zip of `entries` whose central directory says each photo unpacks to `declared` bytes:
/// written with ZIP64 fields, whose uncompressed sizes (8 bytes, first in the field) are then
/// overwritten.
pub fn zip_declaring(entries: &[(&str, Vec<u8>)], declared: u64) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for (path, bytes) in entries {
        writer.start_file(*path, options).unwrap();
        writer.write_all(bytes).unwrap();
    }
    let mut zip = writer.finish().unwrap().into_inner();
    let u16_at = |zip: &[u8], at: usize| u16::from_le_bytes([zip[at], zip[at + 1]]) as usize;
    let mut patched = 0;
    let mut at = 0;
    while let Some(found) = zip[at..].windows(4).position(|w| w == b"PK\x01\x02") {
        let header = at + found;
        let (name, extra) = (u16_at(&zip, header + 28), u16_at(&zip, header + 30));
        let mut field = header + 46 + name;
        while field < header + 46 + name + extra {
            if u16_at(&zip, field) == 1 {
                zip[field + 4..field + 12].copy_from_slice(&declared.to_le_bytes());
                patched += 1;
            }
            field += 4 + u16_at(&zip, field + 2);
        }
        at = header + 46;
    }
    assert_eq!(
        patched,
        entries.len(),
        "a ZIP64 field in each central header"
    );
    zip
}

pub fn md5_hex(bytes: &[u8]) -> &'static str {
    let hex: String = Md5::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Box::leak(hex.into_boxed_str())
}

/// A source like Oxford-IIIT Pet's: a tar.gz of breed-named photos, with size and MD5.
pub fn pets(archive: &[u8]) -> Source {
    Source {
        name: "test-pets",
        title: "test photos",
        url: "https://example.invalid/data/images.tar.gz",
        size: Some(archive.len() as u64),
        md5: Some(md5_hex(archive)),
        max_size: archive.len() as u64,
        format: Format::TarGz,
        layout: Layout::BreedCase,
    }
}

/// A source like Microsoft's Kaggle copy: a zip of class folders, size and checksum unknown.
pub fn kaggle_like() -> Source {
    Source {
        name: "test-kaggle",
        title: "test photos",
        url: "https://example.invalid/cats.zip",
        size: None,
        md5: None,
        max_size: 1 << 20,
        format: Format::Zip,
        layout: Layout::ClassFolders,
    }
}

pub fn pet_entries() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("images/Abyssinian_1.jpg", picture(1)),
        ("images/Bengal_2.jpg", picture(2)),
        ("images/beagle_1.jpg", picture(3)),
        ("images/Abyssinian_1.mat", b"not a photo".to_vec()),
        ("images/pug_7.jpg", Vec::new()),
        (
            "images/Persian_3.jpg",
            b"<html>this is no JPEG</html>".to_vec(),
        ),
    ]
}
