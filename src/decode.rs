//! Photos on disk to square RGB pixels of the training size, on every core.
//!
//! A photo that cannot be decoded is skipped with its reason, never a panic: a real folder of
//! photos always holds a few broken ones.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits};
use rayon::prelude::*;

use crate::dataset::Sample;
use crate::images::ImageSet;

/// Largest width or height decoded: a bigger "photo" is more likely a decompression bomb.
const MAX_SIDE: u32 = 16_384;

/// A photo left out, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The photos that decoded, and the ones that did not.
#[derive(Debug)]
pub struct Decoded {
    pub images: ImageSet,
    pub skipped: Vec<Skipped>,
}

/// Decodes `path` (any supported format, whatever its extension says), turns it upright as
/// its EXIF orientation asks, and squashes it to `size × size` RGB pixels.
pub fn decode_photo(path: &Path, size: u32) -> Result<Vec<u8>> {
    // A decoder bug on a malformed file must cost that file, not the run.
    std::panic::catch_unwind(|| {
        let photo =
            decode_upright(path).with_context(|| format!("cannot decode {}", path.display()))?;
        Ok(resize_rgb(&photo, size))
    })
    .unwrap_or_else(|_| bail!("the decoder failed on {}", path.display()))
}

fn decode_upright(path: &Path) -> Result<DynamicImage> {
    let mut reader = ImageReader::open(path)?.with_guessed_format()?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    reader.limits(limits);
    let mut decoder = reader.into_decoder()?;
    let orientation = decoder.orientation()?;
    let mut photo = DynamicImage::from_decoder(decoder)?;
    photo.apply_orientation(orientation);
    Ok(photo)
}

/// Squashes a picture of any shape to `size × size` RGB bytes.
pub fn resize_rgb(photo: &DynamicImage, size: u32) -> Vec<u8> {
    let rgb = photo.to_rgb8();
    if rgb.dimensions() == (size, size) {
        return rgb.into_raw();
    }
    image::imageops::resize(&rgb, size, size, FilterType::Triangle).into_raw()
}

/// Decodes `samples` on every core, keeping their order; `photo_done` is called after each.
pub fn decode_samples(samples: &[Sample], size: u32, photo_done: &(dyn Fn() + Sync)) -> Decoded {
    let results: Vec<Result<Vec<u8>>> = samples
        .par_iter()
        .map(|sample| {
            let result = decode_photo(&sample.path, size);
            photo_done();
            result
        })
        .collect();

    let mut images = ImageSet::new(size);
    let mut skipped = Vec::new();
    for (sample, result) in samples.iter().zip(results) {
        match result {
            Ok(pixels) => images.push(&pixels, sample.label),
            Err(err) => skipped.push(Skipped {
                path: sample.path.clone(),
                reason: format!("{:#}", err.root_cause()),
            }),
        }
    }
    Decoded { images, skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_any_size_to_the_training_size_and_skips_broken_files() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("cat.1.jpg");
        image::RgbImage::from_pixel(90, 40, image::Rgb([200, 30, 10]))
            .save_with_format(&good, image::ImageFormat::Jpeg)
            .unwrap();
        let broken = dir.path().join("dog.1.jpg");
        std::fs::write(&broken, b"this is not a jpeg").unwrap();

        let samples = [
            Sample {
                path: good.clone(),
                label: 0,
            },
            Sample {
                path: broken.clone(),
                label: 1,
            },
        ];
        let decoded = decode_samples(&samples, 16, &|| {});
        assert_eq!(decoded.images.len(), 1);
        let pixel = &decoded.images.image(0)[..3];
        assert!(
            pixel[0] > 180 && pixel[1] < 60 && pixel[2] < 40,
            "{pixel:?}"
        );
        assert_eq!(decoded.skipped.len(), 1);
        assert_eq!(decoded.skipped[0].path, broken);
    }
}
