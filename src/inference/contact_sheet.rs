//! `catdog eval --mistakes F.png`: the photos the model was surest about and got wrong, on one
//! sheet, each under what the model said and how sure it was.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use image::{ImageEncoder, RgbImage};
use plotters::prelude::*;

use super::Mistake;
use crate::chart::register_font;
use crate::data::decode_photo;
use crate::fs::write_atomically;

/// Side of one photo on the sheet: squashed square, as the model sees it, only larger.
const THUMBNAIL: u32 = 160;
const COLUMNS: u32 = 5;
const GAP: u32 = 12;
const TITLE_HEIGHT: u32 = 44;
const CAPTION_HEIGHT: u32 = 44;

/// Fails unless `path` names a PNG: checked before any work is done.
pub fn check_path(path: &Path) -> Result<()> {
    let png = path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("png"));
    if !png {
        bail!(
            "cannot draw {}: the contact sheet is a PNG, its name must end in .png",
            path.display()
        );
    }
    Ok(())
}

/// Draws `mistakes` (surest first) onto a PNG at `path`. A photo that can no longer be read
/// is drawn as a grey square saying so.
pub fn write(mistakes: &[Mistake], path: &Path) -> Result<()> {
    check_path(path)?;
    let columns = (mistakes.len() as u32).clamp(1, COLUMNS);
    let rows = (mistakes.len() as u32).div_ceil(COLUMNS).max(1);
    let cell_height = THUMBNAIL + CAPTION_HEIGHT;
    let width = GAP + columns * (THUMBNAIL + GAP);
    let height = TITLE_HEIGHT + rows * (cell_height + GAP);
    let mut sheet = RgbImage::from_pixel(width.max(420), height, image::Rgb([255, 255, 255]));
    let cell = |i: u32| {
        (
            GAP + (i % COLUMNS) * (THUMBNAIL + GAP),
            TITLE_HEIGHT + (i / COLUMNS) * (cell_height + GAP),
        )
    };
    let mut unreadable = Vec::new();
    for (i, mistake) in (0..).zip(mistakes) {
        let (x, y) = cell(i);
        match decode_photo(&mistake.source, THUMBNAIL) {
            Ok(pixels) => {
                let photo = RgbImage::from_raw(THUMBNAIL, THUMBNAIL, pixels)
                    .expect("decode_photo returns size × size RGB pixels");
                image::imageops::replace(&mut sheet, &photo, x.into(), y.into());
            }
            Err(_) => {
                let grey = RgbImage::from_pixel(THUMBNAIL, THUMBNAIL, image::Rgb([200, 200, 200]));
                image::imageops::replace(&mut sheet, &grey, x.into(), y.into());
                unreadable.push(i);
            }
        }
    }

    let (width, height) = sheet.dimensions();
    register_font();
    {
        let root = BitMapBackend::with_buffer(&mut sheet, (width, height)).into_drawing_area();
        let text_error = |err| anyhow!("cannot draw {}: {err}", path.display());
        let title = match mistakes.len() {
            0 => "No mistakes: every photo was classified correctly.".to_string(),
            n => format!("The {n} photos the model was surest about, and wrong"),
        };
        root.draw_text(
            &title,
            &("sans-serif", 20).into_font().color(&BLACK),
            (GAP as i32, 12),
        )
        .map_err(text_error)?;
        for (i, mistake) in (0..).zip(mistakes) {
            let (x, y) = cell(i);
            let (x, y) = (x as i32, (y + THUMBNAIL) as i32);
            let verdict = format!(
                "said {} ({:.0} %), is {}",
                mistake.predicted,
                mistake.probability * 100.0,
                mistake.label
            );
            root.draw_text(
                &verdict,
                &("sans-serif", 14).into_font().color(&RGBColor(180, 0, 0)),
                (x, y + 4),
            )
            .map_err(text_error)?;
            root.draw_text(
                &short_name(&mistake.source),
                &("sans-serif", 13).into_font().color(&RGBColor(80, 80, 80)),
                (x, y + 22),
            )
            .map_err(text_error)?;
            if unreadable.contains(&i) {
                root.draw_text(
                    "cannot be read now",
                    &("sans-serif", 14).into_font().color(&BLACK),
                    (x + 10, y - (THUMBNAIL as i32) / 2),
                )
                .map_err(text_error)?;
            }
        }
        root.present().map_err(text_error)?;
    }

    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(
            sheet.as_raw(),
            width,
            height,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|err| anyhow!("cannot encode {}: {err}", path.display()))?;
    write_atomically(path, &png)
}

/// The file name, shortened in the middle to fit under a photo.
fn short_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| path.to_string_lossy(), |name| name.to_string_lossy());
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= 22 {
        return name.into_owned();
    }
    let head: String = chars[..10].iter().collect();
    let tail: String = chars[chars.len() - 10..].iter().collect();
    format!("{head}…{tail}")
}
