//! Training-time augmentation on the decoded bytes. [`Augmentation::Light`]: a random
//! horizontal flip, a random crop of the picture padded by reflection, and mild brightness and
//! contrast changes. [`Augmentation::Photo`]: what makes a photo of the same pet differ, a
//! random part of the picture of varied size and shape (as a photo framed closer or wider), a
//! small rotation, a flip, and brightness, contrast and colour changes.
//!
//! It runs on `u8` pixels in the batch-preparing thread, before conversion to floats, so it
//! costs one pass over each picture. Every choice comes from a random generator seeded by the
//! run's seed and the batch's position, so a resumed run sees the same pictures as one that
//! never stopped. Validation and prediction never augment.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Deserializer, Serialize};

/// Pixels of reflection padding on each side before the random crop.
const PAD: i64 = 4;
/// Brightness and contrast are each scaled by a factor in `1 ± JITTER`.
const JITTER: f32 = 0.2;

/// [`Augmentation::Photo`]'s part of the picture: this share of its area or more.
const PHOTO_MIN_AREA: f32 = 0.35;
/// Its aspect ratio: from 3:4 to 4:3.
const PHOTO_ASPECT: (f32, f32) = (0.75, 4.0 / 3.0);
/// Its rotation: up to this many degrees either way.
const PHOTO_ROTATION: f32 = 10.0;
/// Its brightness, contrast and saturation: each scaled by a factor in `1 ± PHOTO_JITTER`.
const PHOTO_JITTER: f32 = 0.3;

/// How the training pictures are varied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Augmentation {
    /// Not at all.
    #[default]
    Off,
    /// Flips, shifts of a few pixels, mild brightness and contrast.
    Light,
    /// Varied framing (a random part of 35–100 % of the picture, 3:4 to 4:3), rotations of up
    /// to 10°, flips, and stronger brightness, contrast and colour changes.
    Photo,
}

impl Augmentation {
    pub const ALL: [Augmentation; 3] =
        [Augmentation::Off, Augmentation::Light, Augmentation::Photo];

    pub fn name(self) -> &'static str {
        match self {
            Augmentation::Off => "off",
            Augmentation::Light => "light",
            Augmentation::Photo => "photo",
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Augmentation::Off => "the pictures as they are",
            Augmentation::Light => "flips, shifts of a few pixels, mild brightness and contrast",
            Augmentation::Photo => {
                "varied framing (35-100 % of the picture), rotations up to 10°, flips, \
                 brightness, contrast and colour"
            }
        }
    }

    pub fn is_on(self) -> bool {
        self != Augmentation::Off
    }
}

/// Reads a name, or the `true`/`false` of runs saved before there was a choice (`true` was
/// [`Augmentation::Light`]).
impl<'de> Deserialize<'de> for Augmentation {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Switch(bool),
            Name(String),
        }
        match Stored::deserialize(deserializer)? {
            Stored::Switch(false) => Ok(Augmentation::Off),
            Stored::Switch(true) => Ok(Augmentation::Light),
            Stored::Name(name) => Augmentation::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| serde::de::Error::custom(format!("no augmentation {name:?}"))),
        }
    }
}

/// The random generator for batch `batch` of epoch `epoch` of a run seeded with `seed`.
pub fn batch_rng(seed: u64, epoch: usize, batch: usize) -> StdRng {
    let mixed = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((epoch as u64) << 32)
        .wrapping_add(batch as u64);
    StdRng::seed_from_u64(mixed)
}

/// Writes a copy of the `size × size` RGB picture `pixels` into `out`, augmented as `kind`
/// says.
pub fn augment(kind: Augmentation, pixels: &[u8], size: u32, rng: &mut StdRng, out: &mut [u8]) {
    match kind {
        Augmentation::Off => out.copy_from_slice(pixels),
        Augmentation::Light => augment_light(pixels, size, rng, out),
        Augmentation::Photo => augment_photo(pixels, size, rng, out),
    }
}

/// [`Augmentation::Light`].
fn augment_light(pixels: &[u8], size: u32, rng: &mut StdRng, out: &mut [u8]) {
    let size = size as i64;
    let flip = rng.random_bool(0.5);
    let shift_x = rng.random_range(-PAD..=PAD);
    let shift_y = rng.random_range(-PAD..=PAD);
    let brightness = rng.random_range(1.0 - JITTER..=1.0 + JITTER);
    let contrast = rng.random_range(1.0 - JITTER..=1.0 + JITTER);

    // Contrast pulls every value towards the picture's mean, as torchvision's does.
    let mean = pixels.iter().map(|&v| v as f32).sum::<f32>() / pixels.len() as f32;
    let mean = mean * brightness;
    let gain = brightness * contrast;
    let offset = mean * (1.0 - contrast);
    let mut lookup = [0u8; 256];
    for (value, entry) in lookup.iter_mut().enumerate() {
        *entry = (value as f32 * gain + offset).round().clamp(0.0, 255.0) as u8;
    }

    for y in 0..size {
        let source_y = reflect(y + shift_y, size);
        for x in 0..size {
            let flipped_x = if flip { size - 1 - x } else { x };
            let source_x = reflect(flipped_x + shift_x, size);
            let from = ((source_y * size + source_x) * 3) as usize;
            let to = ((y * size + x) * 3) as usize;
            for channel in 0..3 {
                out[to + channel] = lookup[pixels[from + channel] as usize];
            }
        }
    }
}

/// [`Augmentation::Photo`]: each output pixel is read, with bilinear interpolation, from a
/// rotated rectangle of the picture (reflected where it reaches past an edge), then its colour
/// is changed.
fn augment_photo(pixels: &[u8], size: u32, rng: &mut StdRng, out: &mut [u8]) {
    let n = size as f32;
    let flip = rng.random_bool(0.5);
    let area = rng.random_range(PHOTO_MIN_AREA..=1.0);
    let aspect = rng
        .random_range(PHOTO_ASPECT.0.ln()..=PHOTO_ASPECT.1.ln())
        .exp();
    let width = (area * aspect).sqrt().min(1.0) * n;
    let height = (area / aspect).sqrt().min(1.0) * n;
    let center_x = rng.random_range(width / 2.0..=n - width / 2.0);
    let center_y = rng.random_range(height / 2.0..=n - height / 2.0);
    let (sin, cos) = rng
        .random_range(-PHOTO_ROTATION..=PHOTO_ROTATION)
        .to_radians()
        .sin_cos();
    let mut jitter = || rng.random_range(1.0 - PHOTO_JITTER..=1.0 + PHOTO_JITTER);
    let (brightness, contrast, saturation) = (jitter(), jitter(), jitter());

    let mean = pixels.iter().map(|&v| v as f32).sum::<f32>() / pixels.len() as f32;
    let mean = mean * brightness;
    let side = size as i64;
    let at = |x: i64, y: i64| ((reflect(y, side) * side + reflect(x, side)) * 3) as usize;
    for y in 0..size {
        let v = ((y as f32 + 0.5) / n - 0.5) * height;
        for x in 0..size {
            let mut u = ((x as f32 + 0.5) / n - 0.5) * width;
            if flip {
                u = -u;
            }
            // The source point, in pixel coordinates whose centres are whole numbers.
            let source_x = center_x + u * cos - v * sin - 0.5;
            let source_y = center_y + u * sin + v * cos - 0.5;
            let (left, top) = (source_x.floor(), source_y.floor());
            let (fx, fy) = (source_x - left, source_y - top);
            let (left, top) = (left as i64, top as i64);
            let corners = [
                (at(left, top), (1.0 - fx) * (1.0 - fy)),
                (at(left + 1, top), fx * (1.0 - fy)),
                (at(left, top + 1), (1.0 - fx) * fy),
                (at(left + 1, top + 1), fx * fy),
            ];
            let mut rgb = [0.0f32; 3];
            for (from, weight) in corners {
                for (channel, value) in rgb.iter_mut().enumerate() {
                    *value += pixels[from + channel] as f32 * weight;
                }
            }
            let grey = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2];
            let to = ((y * size + x) * 3) as usize;
            for (channel, value) in rgb.into_iter().enumerate() {
                let coloured = (grey + (value - grey) * saturation) * brightness;
                let contrasted = (coloured - mean) * contrast + mean;
                out[to + channel] = contrasted.round().clamp(0.0, 255.0) as u8;
            }
        }
    }
}

/// Mirrors a coordinate that fell off an edge back inside `0..size` (`-1` → `1`).
fn reflect(coordinate: i64, size: i64) -> i64 {
    let reflected = if coordinate < 0 {
        -coordinate
    } else if coordinate >= size {
        2 * (size - 1) - coordinate
    } else {
        coordinate
    };
    reflected.clamp(0, size - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(size: u32) -> Vec<u8> {
        (0..size * size)
            .flat_map(|i| {
                let (x, y) = (i % size, i / size);
                [(x * 8) as u8, (y * 8) as u8, 100]
            })
            .collect()
    }

    #[test]
    fn the_same_position_gives_the_same_picture_and_others_differ() {
        for kind in [Augmentation::Light, Augmentation::Photo] {
            same_position_same_picture(kind);
        }
    }

    fn same_position_same_picture(kind: Augmentation) {
        let picture = gradient(16);
        let run = |epoch, batch| {
            let mut out = vec![0; picture.len()];
            augment(
                kind,
                &picture,
                16,
                &mut batch_rng(7, epoch, batch),
                &mut out,
            );
            out
        };
        assert_eq!(run(1, 3), run(1, 3));
        assert_ne!(run(1, 3), run(1, 4));
        assert_ne!(run(1, 3), run(2, 3));
    }

    #[test]
    fn augmented_pictures_stay_close_to_the_original() {
        let picture = gradient(16);
        let mut flips = 0;
        for batch in 0..50 {
            let mut out = vec![0; picture.len()];
            augment(
                Augmentation::Light,
                &picture,
                16,
                &mut batch_rng(1, 1, batch),
                &mut out,
            );
            // The blue plane is flat: only brightness and contrast move it, by at most 20 %
            // each way (and contrast pulls it towards the mean, which is close to it).
            assert!(out.chunks(3).all(|p| (60..=150).contains(&p[2])), "{out:?}");
            // Red grows left to right in the original; a flip makes it fall.
            let row: Vec<u8> = out[..16 * 3].chunks(3).map(|p| p[0]).collect();
            if row[2] > row[13] {
                flips += 1;
            }
        }
        assert!((10..=40).contains(&flips), "{flips} flips in 50");
    }

    /// Framing, rotation and flips move pixels and never invent colours: a flat picture stays
    /// flat, with only its brightness changed (by at most 30 % either way).
    #[test]
    fn photo_augmentation_moves_pixels_and_keeps_a_flat_picture_flat() {
        let flat = [90u8, 120, 150].repeat(20 * 20);
        let gradient = gradient(20);
        let mut flips = 0;
        for batch in 0..40 {
            let mut out = vec![0; flat.len()];
            let kind = Augmentation::Photo;
            augment(kind, &flat, 20, &mut batch_rng(3, 1, batch), &mut out);
            assert!(out.chunks(3).all(|p| p == &out[..3]), "{out:?}");
            let grey = out[..3].iter().map(|&v| v as f32).sum::<f32>() / 3.0;
            assert!((60.0..=160.0).contains(&grey), "{grey}");

            augment(kind, &gradient, 20, &mut batch_rng(3, 1, batch), &mut out);
            // The green plane grows downwards in the original (0..152); a rotation of at most
            // 10° keeps it growing from the top row to the bottom one.
            let row_mean = |y: usize| {
                out[y * 60..(y + 1) * 60]
                    .chunks(3)
                    .map(|p| p[1] as f32)
                    .sum::<f32>()
                    / 20.0
            };
            assert!(row_mean(0) < row_mean(19), "batch {batch}");
            let row: Vec<u8> = out[..20 * 3].chunks(3).map(|p| p[0]).collect();
            flips += usize::from(row[1] > row[18]);
        }
        assert!((8..=32).contains(&flips), "{flips} flips in 40");
    }

    #[test]
    fn augmentations_are_read_by_name_or_as_older_runs_saved_them() {
        for (json, expected) in [
            ("false", Augmentation::Off),
            ("true", Augmentation::Light),
            ("\"photo\"", Augmentation::Photo),
            ("\"light\"", Augmentation::Light),
        ] {
            let read: Augmentation = serde_json::from_str(json).unwrap();
            assert_eq!(read, expected, "{json}");
        }
        assert_eq!(
            serde_json::to_string(&Augmentation::Photo).unwrap(),
            "\"photo\""
        );
        assert!(serde_json::from_str::<Augmentation>("\"heavy\"").is_err());
    }

    #[test]
    fn reflection_mirrors_at_both_edges() {
        assert_eq!(reflect(-1, 8), 1);
        assert_eq!(reflect(-4, 8), 4);
        assert_eq!(reflect(8, 8), 6);
        assert_eq!(reflect(11, 8), 3);
        assert_eq!(reflect(5, 8), 5);
    }
}
