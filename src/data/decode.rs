//! Photos on disk to square RGB pixels of the training size, on every core.
//!
//! Most photos are JPEGs several times larger than the training size. Those are decoded with
//! `jpeg-decoder` at 1/4 or 1/8 scale, in the DCT domain, which skips most of the decoding
//! work (3× more photos per second at 64 px, measured on the 2k originals); everything else
//! goes through the `image` crate. `fast_image_resize` (SIMD) then squashes the picture to the
//! training size.
//!
//! A photo that cannot be decoded is skipped with its reason, never a panic: a real folder of
//! photos always holds a few broken ones.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use fast_image_resize::images::Image as ResizeImage;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits, RgbImage};
use rayon::prelude::*;

use super::decode_budget::{self, MAX_PHOTO_BYTES};
use crate::fs::{read_prefix, read_regular, regular_file_length};
use crate::numbers::human_bytes;

/// Largest width or height decoded: a bigger "photo" is more likely a decompression bomb.
const MAX_SIDE: u32 = 16_384;

/// DCT-domain scaling pays off only from 1/4 down: `jpeg-decoder` at 1/2 or full scale is
/// slower than the `image` crate's decoder (measured: 489 vs 920 photos/s at 128 px).
const SMALLEST_DCT_SCALE_STEP: u32 = 4;

/// A photo left out, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// Decodes every photo of `paths` on every core, in order, calling `photo_done` after each.
pub(crate) fn decode_photos<P: AsRef<Path> + Sync>(
    paths: &[P],
    size: u32,
    photo_done: &(dyn Fn() + Sync),
) -> Vec<Result<Vec<u8>>> {
    paths
        .par_iter()
        .map(|path| {
            let result = decode_photo(path.as_ref(), size);
            photo_done();
            result
        })
        .collect()
}

/// Decodes `path` (any supported format, whatever its extension says), turns it upright as
/// its EXIF orientation asks, and squashes it to `size × size` RGB pixels.
///
/// Memory is reserved before it is used ([`decode_budget`]): the file, plus what its header
/// says decoding it takes, at most [`MAX_PHOTO_BYTES`] a photo.
pub fn decode_photo(path: &Path, size: u32) -> Result<Vec<u8>> {
    // A decoder bug on a malformed file must cost that file, not the run.
    std::panic::catch_unwind(|| {
        let length = regular_file_length(path, MAX_PHOTO_BYTES)?;
        let header = read_prefix(path, HEADER_BYTES)?;
        let name = path.display().to_string();
        // Most photos are smaller than the header's share: then the header is all of it.
        let whole = header.len() as u64 == length && length < HEADER_BYTES;
        let declared = decoding_bytes(&header, size);
        let (_held, bytes) = if whole || declared.is_some() {
            let held = reserve(declared, &header, length, &name)?;
            let bytes = match whole {
                true => header,
                false => read_regular(path, MAX_PHOTO_BYTES)?,
            };
            (held, bytes)
        } else {
            // The first bytes do not say how large the picture is (a JPEG's frame header
            // after long comment segments, say): read the file, then look again in all of it.
            let file = decode_budget::shared().reserve(length);
            let bytes = read_regular(path, MAX_PHOTO_BYTES)?;
            drop(file);
            (
                reserve(decoding_bytes(&bytes, size), &bytes, length, &name)?,
                bytes,
            )
        };
        decode_read(&bytes, size, &name)
    })
    .unwrap_or_else(|_| bail!("the decoder failed on {}", path.display()))
}

/// [`decode_photo`] for a photo already in memory (sent to `catdog serve`), named `name` in
/// its errors.
pub fn decode_photo_bytes(bytes: &[u8], size: u32, name: &str) -> Result<Vec<u8>> {
    std::panic::catch_unwind(|| {
        // All of it: the picture's size may come after the first HEADER_BYTES.
        let _held = reserve(decoding_bytes(bytes, size), bytes, bytes.len() as u64, name)?;
        decode_read(bytes, size, name)
    })
    .unwrap_or_else(|_| bail!("the decoder failed on {name}"))
}

/// Reserves the memory decoding a photo of `length` bytes that begins with `header` takes
/// (`declared`: what [`decoding_bytes`] read from that header), or refuses a photo that would
/// take more than [`MAX_PHOTO_BYTES`].
fn reserve(
    declared: Option<u64>,
    header: &[u8],
    length: u64,
    name: &str,
) -> Result<decode_budget::Reservation> {
    let decoding = match declared {
        Some(bytes) => bytes,
        // A photo of a known format whose header never says its size: nothing can bound
        // what decoding it would take.
        None if header.starts_with(&[0xFF, 0xD8]) || is_built_format(header) => {
            bail!(
                "{name} does not say how large its picture is, so catdog cannot tell what \
                 decoding it would take: it is damaged or not a photo catdog can read"
            )
        }
        // Not an image at all: decoding says so.
        None => 0,
    };
    let needed = length.saturating_add(decoding);
    if needed > MAX_PHOTO_BYTES {
        bail!(
            "{name} would take {} of memory to decode ({}), more than the {} catdog gives one \
             photo: a photo this large is more likely a decompression bomb; scale it down \
             to use it",
            human_bytes(needed),
            describe_header(header).unwrap_or_else(|| "its header says so".into()),
            human_bytes(MAX_PHOTO_BYTES)
        );
    }
    Ok(decode_budget::shared().reserve(needed))
}

/// Whether `header` begins a file of a format catdog decodes (other formats are refused by
/// decoding, in the decoder's words).
fn is_built_format(header: &[u8]) -> bool {
    use image::ImageFormat;
    matches!(
        image::guess_format(header),
        Ok(ImageFormat::Png | ImageFormat::WebP | ImageFormat::Bmp | ImageFormat::Gif)
    )
}

/// A photo's whole file, read into memory, decoded to `size × size` RGB pixels.
fn decode_read(bytes: &[u8], size: u32, name: &str) -> Result<Vec<u8>> {
    if bytes.is_empty() {
        bail!(
            "{name} is empty (0 bytes): there is no picture in it (an interrupted download or copy?)"
        );
    }
    if bytes.starts_with(&[0xFF, 0xD8]) && !jpeg_reaches_its_end(bytes) {
        bail!(
            "{name} is cut short: its JPEG data stops before the end-of-image marker (an \
             interrupted download or copy?)"
        );
    }
    let photo = match decode_jpeg_scaled(bytes, size) {
        Some(photo) => photo,
        // The decoder's own words, once: its errors repeat their source's text.
        None => decode_upright(bytes)
            .map_err(|err| anyhow!("cannot decode {name}: {}", plain(&err)))?
            .into_rgb8(),
    };
    Ok(resize_rgb(photo, size))
}

/// Bytes read to learn a photo's size from its header: JPEG's frame header comes after its
/// EXIF and other segments, which together stay well under this.
const HEADER_BYTES: u64 = 256 << 10;

/// The bytes decoding a photo whose file begins with `header` takes, by what its header
/// declares (`None` where it cannot be read from the header): a JPEG that
/// [`decode_jpeg_scaled`] takes needs its scaled pixels, and a progressive one its
/// coefficients at full size (two bytes each); anything else the `image` crate's buffer
/// at full size, plus the RGB copies made converting and turning it upright.
fn decoding_bytes(header: &[u8], size: u32) -> Option<u64> {
    let rgb_copies = |width: u64, height: u64| width.saturating_mul(height).saturating_mul(6);
    if let Some(info) = jpeg_info(header) {
        let (width, height) = (u64::from(info.width), u64::from(info.height));
        let components = match info.pixel_format {
            jpeg_decoder::PixelFormat::L8 => 1,
            jpeg_decoder::PixelFormat::L16 => 2,
            jpeg_decoder::PixelFormat::RGB24 => 3,
            jpeg_decoder::PixelFormat::CMYK32 => 4,
        };
        let coefficients = match info.coding_process {
            jpeg_decoder::CodingProcess::DctProgressive => {
                width.saturating_mul(height).saturating_mul(components * 2)
            }
            _ => 0,
        };
        return Some(match scaled_side(&info, size) {
            Some(side) => coefficients + 3 * u64::from(side) * u64::from(side) * 3,
            None => coefficients
                .saturating_add(width.saturating_mul(height).saturating_mul(components))
                .saturating_add(rgb_copies(width, height)),
        });
    }
    let decoder = image_decoder(header, false).ok()?;
    let (width, height) = decoder.dimensions();
    Some(
        decoder
            .total_bytes()
            .saturating_add(rgb_copies(width.into(), height.into())),
    )
}

/// "16384×16384 pixels, PNG": what a photo's header declares, for an error message.
fn describe_header(header: &[u8]) -> Option<String> {
    let (width, height) = header_dimensions(header)?;
    let format = match jpeg_info(header) {
        Some(_) => "JPEG".to_string(),
        None => image::guess_format(header).map_or("?".into(), |f| format!("{f:?}").to_uppercase()),
    };
    Some(format!("{width}×{height} pixels, {format}"))
}

/// The width and height a photo's header declares.
fn header_dimensions(header: &[u8]) -> Option<(u32, u32)> {
    match jpeg_info(header) {
        Some(info) => Some((info.width.into(), info.height.into())),
        None => image_decoder(header, false).ok().map(|d| d.dimensions()),
    }
}

/// A JPEG's frame header, read by `jpeg-decoder`.
fn jpeg_info(bytes: &[u8]) -> Option<jpeg_decoder::ImageInfo> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().ok()?;
    decoder.info()
}

/// Whether a JPEG's segments run to its end-of-image marker. Decoders fill the missing part of
/// a file cut short with grey and report success (Pillow refuses it: "image file is
/// truncated"), so catdog looks for the marker itself: segment by segment, skipping each
/// one's length, and through the entropy-coded data after each start of scan, where a 0xFF
/// byte is followed by 0x00 (stuffing) or a restart marker unless a real marker begins.
fn jpeg_reaches_its_end(bytes: &[u8]) -> bool {
    let length_at = |i: usize| {
        bytes
            .get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let mut i = 2;
    while i + 1 < bytes.len() {
        if bytes[i] != 0xFF {
            // Stray bytes between segments, which decoders skip too.
            i += 1;
            continue;
        }
        match bytes[i + 1] {
            0xD9 => return true,
            // A fill byte before a marker.
            0xFF => i += 1,
            // Markers without a length.
            0x01 | 0xD0..=0xD7 => i += 2,
            marker => {
                let Some(length) = length_at(i + 2) else {
                    return false;
                };
                i += 2 + length as usize;
                if marker == 0xDA {
                    while i + 1 < bytes.len()
                        && !(bytes[i] == 0xFF
                            && bytes[i + 1] != 0x00
                            && !(0xD0..=0xD7).contains(&bytes[i + 1]))
                    {
                        i += 1;
                    }
                }
            }
        }
    }
    false
}

/// A large RGB or grayscale JPEG decoded at the smallest DCT scale (1/4 or 1/8) that keeps
/// its shorter side at least `size`, turned upright; `None` for anything else (other formats,
/// small or CMYK JPEGs, files `jpeg-decoder` rejects), which the `image` crate then decodes.
fn decode_jpeg_scaled(bytes: &[u8], size: u32) -> Option<RgbImage> {
    let info = jpeg_info(bytes)?;
    let side = scaled_side(&info, size)?;
    let grey = info.pixel_format == jpeg_decoder::PixelFormat::L8;
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    decoder.read_info().ok()?;
    let (width, height) = decoder.scale(side as u16, side as u16).ok()?;
    let orientation = decoder
        .exif_data()
        .and_then(Orientation::from_exif_chunk)
        .unwrap_or(Orientation::NoTransforms);
    let pixels = decoder.decode().ok()?;
    let rgb = match grey {
        false => pixels,
        true => pixels.iter().flat_map(|&v| [v, v, v]).collect(),
    };
    let mut photo = DynamicImage::ImageRgb8(RgbImage::from_raw(width.into(), height.into(), rgb)?);
    photo.apply_orientation(orientation);
    Some(photo.into_rgb8())
}

/// The square side to ask `jpeg-decoder` to scale a JPEG to (the smallest DCT scale that
/// keeps its shorter side at least `size`), or `None` where [`decode_jpeg_scaled`] leaves it
/// to the `image` crate: other pixel formats, too large, or under 4× `size`.
fn scaled_side(info: &jpeg_decoder::ImageInfo, size: u32) -> Option<u32> {
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    let rgb_or_grey = matches!(
        info.pixel_format,
        jpeg_decoder::PixelFormat::RGB24 | jpeg_decoder::PixelFormat::L8
    );
    let fits = width.max(height) <= MAX_SIDE;
    if !rgb_or_grey || !fits || width.min(height) < size.saturating_mul(SMALLEST_DCT_SCALE_STEP) {
        return None;
    }
    // Asking for a square of the shorter side keeps both sides at least `size`.
    Some((width.min(height) / SMALLEST_DCT_SCALE_STEP).max(size))
}

/// Any supported format, whatever the file is named, turned upright.
/// A decoder error in words: the PNG decoder names chunks by their debug form
/// (`ChunkType { type: IDAT, critical: true, .. }`), which becomes the chunk's name.
fn plain(err: &image::ImageError) -> String {
    let text = err.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find("ChunkType { type: ") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "ChunkType { type: ".len()..];
        let name_end = after.find([',', ' ', '}']).unwrap_or(after.len());
        out.push_str(&after[..name_end]);
        rest = after.find('}').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

fn decode_upright(bytes: &[u8]) -> image::ImageResult<DynamicImage> {
    let mut decoder = image_decoder(bytes, true)?;
    // `DynamicImage::from_decoder` allocates what the header declares without asking the
    // limits, so the size is checked here first.
    if decoder.total_bytes() > MAX_PHOTO_BYTES {
        return Err(image::ImageError::Limits(
            image::error::LimitError::from_kind(image::error::LimitErrorKind::InsufficientMemory),
        ));
    }
    let orientation = decoder.orientation()?;
    let mut photo = DynamicImage::from_decoder(decoder)?;
    photo.apply_orientation(orientation);
    Ok(photo)
}

/// The `image` crate's decoder for `bytes`, whatever their format: limited to [`MAX_SIDE`] a
/// side and [`MAX_PHOTO_BYTES`] of allocations for decoding, unlimited for reading only the
/// header (so that what it declares can be said).
fn image_decoder(bytes: &[u8], limited: bool) -> image::ImageResult<impl ImageDecoder + '_> {
    let mut reader = ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format()?;
    let mut limits = Limits::no_limits();
    if limited {
        limits.max_image_width = Some(MAX_SIDE);
        limits.max_image_height = Some(MAX_SIDE);
        limits.max_alloc = Some(MAX_PHOTO_BYTES);
    }
    reader.limits(limits);
    reader.into_decoder()
}

/// Squashes a picture of any shape to `size × size` RGB bytes (bilinear, antialiased).
fn resize_rgb(photo: RgbImage, size: u32) -> Vec<u8> {
    let (width, height) = photo.dimensions();
    if (width, height) == (size, size) {
        return photo.into_raw();
    }
    let source = ResizeImage::from_vec_u8(width, height, photo.into_raw(), PixelType::U8x3)
        .expect("an RgbImage holds width × height × 3 bytes");
    let mut resized = ResizeImage::new(size, size, PixelType::U8x3);
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear));
    Resizer::new()
        .resize(&source, &mut resized, &options)
        .expect("source and destination are both RGB8");
    resized.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(photo: &DynamicImage) -> Vec<u8> {
        let mut bytes = Vec::new();
        photo
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        bytes
    }

    #[test]
    fn a_jpeg_cut_short_is_told_from_a_whole_one() {
        // Noise, so that most of the file is entropy-coded data, as in a photo.
        let mut state = 1u32;
        let noise = RgbImage::from_fn(256, 256, |_, _| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let [r, g, b, _] = state.to_le_bytes();
            image::Rgb([r, g, b])
        });
        let jpeg = jpeg(&DynamicImage::ImageRgb8(noise));
        assert!(jpeg_reaches_its_end(&jpeg));
        let mut padded = jpeg.clone();
        padded.extend_from_slice(&[0; 100]);
        assert!(
            jpeg_reaches_its_end(&padded),
            "bytes after the end are allowed"
        );
        let cut = &jpeg[..jpeg.len() / 3];
        assert!(!jpeg_reaches_its_end(cut));
        assert!(
            decode_upright(cut).is_ok(),
            "the decoder alone takes the cut file for a picture"
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.jpg");
        std::fs::write(&path, cut).unwrap();
        let err = format!("{:#}", decode_photo(&path, 32).unwrap_err());
        assert!(err.contains("cut.jpg is cut short"), "{err}");
    }

    #[test]
    fn an_empty_file_is_called_empty_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.jpg");
        std::fs::write(&path, b"").unwrap();
        let err = format!("{:#}", decode_photo(&path, 32).unwrap_err());
        assert!(err.contains("empty.jpg is empty (0 bytes)"), "{err}");
        let err = format!(
            "{:#}",
            decode_photo_bytes(b"", 32, "upload.png").unwrap_err()
        );
        assert!(err.contains("upload.png is empty"), "{err}");
    }

    /// A PNG chunk: length, type, data, CRC-32 of type and data.
    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32fast::hash(&[kind.as_slice(), data].concat());
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    /// Decompression bombs of a few hundred bytes each, declaring 16384² pixels: a 16-bit RGBA
    /// PNG (2 GiB of pixels) and a progressive JPEG (1.5 GiB of coefficients). Each is refused
    /// by what its header declares, naming the file and the limit, before any of it is
    /// decoded.
    #[test]
    fn a_photo_declaring_a_huge_size_is_refused_before_it_is_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&16_384u32.to_be_bytes());
        ihdr.extend_from_slice(&16_384u32.to_be_bytes());
        ihdr.extend_from_slice(&[16, 6, 0, 0, 0]);
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut zlib, &[0; 4096]).unwrap();
        let png = [
            b"\x89PNG\r\n\x1a\n".to_vec(),
            chunk(b"IHDR", &ihdr),
            chunk(b"IDAT", &zlib.finish().unwrap()),
            chunk(b"IEND", &[]),
        ]
        .concat();
        assert!(png.len() < 1_000);
        let png_path = dir.path().join("bomb.png");
        std::fs::write(&png_path, &png).unwrap();

        // A small baseline JPEG made progressive (SOF0 → SOF2) at 16384², in its header only.
        let mut jpeg = jpeg(&DynamicImage::ImageRgb8(RgbImage::new(16, 16)));
        let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        jpeg[sof + 1] = 0xC2;
        jpeg[sof + 5..sof + 9].copy_from_slice(&[0x40, 0x00, 0x40, 0x00]);
        let jpeg_path = dir.path().join("bomb.jpg");
        std::fs::write(&jpeg_path, &jpeg).unwrap();

        for (path, declared) in [
            (&png_path, "16384×16384 pixels, PNG"),
            (&jpeg_path, "16384×16384 pixels, JPEG"),
        ] {
            let err = format!("{:#}", decode_photo(path, 64).unwrap_err());
            assert!(
                err.contains(&path.display().to_string())
                    && err.contains(declared)
                    && err.contains("more than the 512.0 MiB catdog gives one photo"),
                "{err}"
            );
        }

        // The same JPEG with 300 kB of comment segments before its frame header, past the
        // first bytes read for the header: refused all the same, from a file and from memory.
        let mut padded = jpeg[..2].to_vec();
        for _ in 0..5 {
            padded.extend_from_slice(&[0xFF, 0xFE, 0xFF, 0xFF]);
            padded.extend(std::iter::repeat_n(b'x', 0xFFFF - 2));
        }
        padded.extend_from_slice(&jpeg[2..]);
        assert!(padded.len() as u64 > HEADER_BYTES);
        assert!(decoding_bytes(&padded[..HEADER_BYTES as usize], 64).is_none());
        let padded_path = dir.path().join("padded-bomb.jpg");
        std::fs::write(&padded_path, &padded).unwrap();
        let err = format!("{:#}", decode_photo(&padded_path, 64).unwrap_err());
        assert!(
            err.contains("padded-bomb.jpg") && err.contains("16384×16384 pixels, JPEG"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            decode_photo_bytes(&padded, 64, "upload.jpg").unwrap_err()
        );
        assert!(err.contains("16384×16384 pixels, JPEG"), "{err}");
        // A padded photo of a sane size still decodes.
        let mut sane = jpeg[..2].to_vec();
        for _ in 0..5 {
            sane.extend_from_slice(&[0xFF, 0xFE, 0xFF, 0xFF]);
            sane.extend(std::iter::repeat_n(b'x', 0xFFFF - 2));
        }
        sane.extend_from_slice(&self::jpeg(&DynamicImage::ImageRgb8(RgbImage::new(16, 16)))[2..]);
        let sane_path = dir.path().join("padded.jpg");
        std::fs::write(&sane_path, &sane).unwrap();
        assert_eq!(decode_photo(&sane_path, 8).unwrap().len(), 8 * 8 * 3);
        // A header that never gives a size is refused by name.
        let no_frame = [&[0xFFu8, 0xD8][..], &padded[2..5 * (0xFFFF + 2) + 2]].concat();
        let err = format!(
            "{:#}",
            decode_photo_bytes(&no_frame, 64, "noframe.jpg").unwrap_err()
        );
        assert!(
            err.contains("noframe.jpg does not say how large its picture is"),
            "{err}"
        );
    }

    /// Reading a named pipe with a photo's name would wait for a writer for ever.
    #[cfg(unix)]
    #[test]
    fn a_pipe_named_like_a_photo_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.jpg");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = format!("{:#}", decode_photo(&fifo, 32).unwrap_err());
        assert!(err.contains("x.jpg is not a regular file"), "{err}");
    }

    #[test]
    fn large_jpegs_decoded_at_a_dct_scale_match_a_full_decode() {
        let gradient = RgbImage::from_fn(256, 192, |x, y| image::Rgb([x as u8, y as u8, 90]));
        for photo in [
            DynamicImage::ImageRgb8(gradient.clone()),
            DynamicImage::ImageRgb8(gradient).grayscale(),
        ] {
            let jpeg = jpeg(&photo);
            let scaled = decode_jpeg_scaled(&jpeg, 32).expect("large enough to scale");
            assert_eq!(scaled.dimensions(), (64, 48), "decoded at 1/4 scale");
            let full = decode_upright(&jpeg).unwrap().into_rgb8();
            let (scaled, full) = (resize_rgb(scaled, 32), resize_rgb(full, 32));
            let mean_difference = scaled
                .iter()
                .zip(&full)
                .map(|(&a, &b)| a.abs_diff(b) as f64)
                .sum::<f64>()
                / full.len() as f64;
            assert!(mean_difference < 3.0, "{mean_difference}");
        }
        let small = jpeg(&DynamicImage::ImageRgb8(RgbImage::new(100, 100)));
        assert!(
            decode_jpeg_scaled(&small, 32).is_none(),
            "under 4× the size"
        );
    }
}
