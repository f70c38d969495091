//! Training-time augmentation on the decoded bytes: a random horizontal flip, a random crop of
//! the picture padded by reflection, and mild brightness and contrast changes.
//!
//! It runs on `u8` pixels in the batch-preparing thread, before conversion to floats, so it
//! costs one pass over each picture. Every choice comes from a random generator seeded by the
//! run's seed and the batch's position, so a resumed run sees the same pictures as one that
//! never stopped. Validation and prediction never augment.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Pixels of reflection padding on each side before the random crop.
const PAD: i64 = 4;
/// Brightness and contrast are each scaled by a factor in `1 ± JITTER`.
const JITTER: f32 = 0.2;

/// The random generator for batch `batch` of epoch `epoch` of a run seeded with `seed`.
pub fn batch_rng(seed: u64, epoch: usize, batch: usize) -> StdRng {
    let mixed = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((epoch as u64) << 32)
        .wrapping_add(batch as u64);
    StdRng::seed_from_u64(mixed)
}

/// Writes an augmented copy of the `size × size` RGB picture `pixels` into `out`.
pub fn augment(pixels: &[u8], size: u32, rng: &mut StdRng, out: &mut [u8]) {
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
        let picture = gradient(16);
        let run = |epoch, batch| {
            let mut out = vec![0; picture.len()];
            augment(&picture, 16, &mut batch_rng(7, epoch, batch), &mut out);
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
            augment(&picture, 16, &mut batch_rng(1, 1, batch), &mut out);
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

    #[test]
    fn reflection_mirrors_at_both_edges() {
        assert_eq!(reflect(-1, 8), 1);
        assert_eq!(reflect(-4, 8), 4);
        assert_eq!(reflect(8, 8), 6);
        assert_eq!(reflect(11, 8), 3);
        assert_eq!(reflect(5, 8), 5);
    }
}
