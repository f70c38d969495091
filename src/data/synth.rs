//! A generated dataset, so that catdog trains and tests anywhere without a download.
//!
//! Each picture is a drawn animal face on a cluttered background: cats have pointed ears
//! standing on top of the head, dogs floppy ears hanging at its sides. Everything else (fur,
//! eye and nose colours, a muzzle, position, size, tilt, background shapes, which include
//! triangles and ellipses of their own, and noise) is drawn from the same distributions for
//! both classes, so the network must learn the ears' shape and place to score well.

use std::f32::consts::PI;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::images::ImageSet;

/// Class names, in label order.
pub const CLASSES: [&str; 2] = ["cat", "dog"];

/// `count` pictures of `size` px, labels alternating cat, dog, cat, …
/// Picture `i` depends only on `seed` and `i`.
pub fn generate(count: usize, size: u32, seed: u64) -> ImageSet {
    let pictures: Vec<Vec<u8>> = (0..count)
        .into_par_iter()
        .map(|i| draw(i % 2, size, picture_seed(seed, i)))
        .collect();
    let mut set = ImageSet::new(size);
    for (i, pixels) in pictures.iter().enumerate() {
        set.push(pixels, i % 2);
    }
    set
}

/// Writes `count` pictures as PNG files into `out/cat/` and `out/dog/`.
pub fn write_dataset(out: &Path, count: usize, size: u32, seed: u64) -> Result<()> {
    for class in CLASSES {
        let dir = out.join(class);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    (0..count).into_par_iter().try_for_each(|i| {
        let label = i % 2;
        let pixels = draw(label, size, picture_seed(seed, i));
        let path = out.join(CLASSES[label]).join(format!("{:05}.png", i / 2));
        image::RgbImage::from_raw(size, size, pixels)
            .expect("draw returns size × size × 3 bytes")
            .save(&path)
            .with_context(|| format!("cannot write {}", path.display()))
    })
}

fn picture_seed(seed: u64, index: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64)
}

/// Draws one picture of class `label` (0 = cat, 1 = dog): `size × size` RGB bytes.
pub fn draw(label: usize, size: u32, seed: u64) -> Vec<u8> {
    let rng = &mut StdRng::seed_from_u64(seed);
    let mut canvas = Canvas::new(size as usize, rng);

    let r = rng.random_range(0.15..0.25);
    let cx = rng.random_range(0.3..0.7);
    let cy = rng.random_range(0.4..0.68);

    // Background shapes stay clear of the head and ears: a triangle peeking out behind a
    // dog's head would look like a cat's ear, and make the label a lie.
    for _ in 0..rng.random_range(0..=3) {
        let color = random_color(rng);
        if let Some(shape) = random_clutter(rng, (cx, cy), 2.2 * r) {
            canvas.fill(&shape, color);
        }
    }
    let tilt = rng.random_range(-0.25..0.25);
    let fur = fur_color(rng);
    let at = |angle: f32, distance: f32| {
        let angle = angle + tilt;
        (cx + distance * angle.cos(), cy + distance * angle.sin())
    };

    for side in [-1.0f32, 1.0] {
        let ear_color = shade(fur, rng.random_range(0.55..1.0));
        let ear = if label == 0 {
            // Pointed ear standing on top of the head.
            let base = -PI / 2.0 + side * rng.random_range(0.55..0.95);
            let half_width = rng.random_range(0.25..0.38);
            let apex = at(
                base + side * rng.random_range(-0.1..0.2),
                r * rng.random_range(1.6..2.0),
            );
            Shape::Triangle([
                at(base - half_width, r * 0.9),
                at(base + half_width, r * 0.9),
                apex,
            ])
        } else {
            // Floppy ear hanging down beside the head.
            let (x, y) = at(
                -PI / 2.0 + side * rng.random_range(1.1..1.5),
                r * rng.random_range(0.8..1.0),
            );
            Shape::Ellipse {
                cx: x,
                cy: y + r * rng.random_range(0.35..0.6),
                rx: r * rng.random_range(0.3..0.42),
                ry: r * rng.random_range(0.75..1.0),
                angle: tilt + side * rng.random_range(0.1..0.5),
            }
        };
        canvas.fill(&ear, ear_color);
    }

    canvas.fill(
        &Shape::Ellipse {
            cx,
            cy,
            rx: r,
            ry: r * rng.random_range(0.85..1.05),
            angle: tilt,
        },
        fur,
    );
    if rng.random_bool(0.5) {
        let (x, y) = at(PI / 2.0, r * 0.4);
        let muzzle = Shape::Ellipse {
            cx: x,
            cy: y,
            rx: r * 0.45,
            ry: r * 0.32,
            angle: tilt,
        };
        canvas.fill(&muzzle, shade(fur, 1.4));
    }
    let eye_color = if rng.random_bool(0.5) {
        [0.05, 0.05, 0.05]
    } else {
        [0.2, 0.6, 0.2]
    };
    let eye_radius = r * rng.random_range(0.09..0.15);
    for side in [-1.0f32, 1.0] {
        let (x, y) = at(-PI / 2.0 + side * 1.1, r * 0.45);
        let eye = Shape::Ellipse {
            cx: x,
            cy: y,
            rx: eye_radius,
            ry: eye_radius,
            angle: 0.0,
        };
        canvas.fill(&eye, eye_color);
    }
    let (x, y) = at(PI / 2.0, r * 0.2);
    let nose_size = r * rng.random_range(0.1..0.18);
    let nose = if rng.random_bool(0.5) {
        Shape::Triangle([
            (x - nose_size, y - nose_size),
            (x + nose_size, y - nose_size),
            (x, y + nose_size),
        ])
    } else {
        Shape::Ellipse {
            cx: x,
            cy: y,
            rx: nose_size,
            ry: nose_size * 0.7,
            angle: 0.0,
        }
    };
    canvas.fill(&nose, [0.1, 0.05, 0.05]);

    let noise = rng.random_range(0.02..0.08);
    canvas.into_bytes(noise, rng)
}

type Color = [f32; 3];

fn random_color(rng: &mut StdRng) -> Color {
    [rng.random(), rng.random(), rng.random()]
}

fn fur_color(rng: &mut StdRng) -> Color {
    const FUR: [Color; 6] = [
        [0.85, 0.55, 0.25], // ginger
        [0.55, 0.55, 0.55], // grey
        [0.12, 0.1, 0.1],   // black
        [0.95, 0.93, 0.9],  // white
        [0.5, 0.33, 0.2],   // brown
        [0.9, 0.8, 0.6],    // cream
    ];
    let base = FUR[rng.random_range(0..FUR.len())];
    base.map(|c| (c + rng.random_range(-0.1..0.1)).clamp(0.0, 1.0))
}

fn shade(color: Color, factor: f32) -> Color {
    color.map(|c| (c * factor).clamp(0.0, 1.0))
}

/// A random triangle or ellipse outside the circle at `centre` of radius `clear`; `None`
/// when ten random places were all too close (a big face leaves little room).
fn random_clutter(rng: &mut StdRng, centre: (f32, f32), clear: f32) -> Option<Shape> {
    let s = rng.random_range(0.05..0.2);
    let (x, y) = (0..10)
        .map(|_| (rng.random_range(0.0..1.0f32), rng.random_range(0.0..1.0f32)))
        .find(|&(x, y)| (x - centre.0).hypot(y - centre.1) > clear + s)?;
    if rng.random_bool(0.5) {
        let mut corner = || (x + rng.random_range(-s..s), y + rng.random_range(-s..s));
        Some(Shape::Triangle([corner(), corner(), corner()]))
    } else {
        Some(Shape::Ellipse {
            cx: x,
            cy: y,
            rx: s,
            ry: s * rng.random_range(0.3..1.0),
            angle: rng.random_range(0.0..PI),
        })
    }
}

/// A filled shape in unit coordinates: (0, 0) top left, (1, 1) bottom right.
enum Shape {
    Ellipse {
        cx: f32,
        cy: f32,
        rx: f32,
        ry: f32,
        angle: f32,
    },
    Triangle([(f32, f32); 3]),
}

impl Shape {
    fn contains(&self, x: f32, y: f32) -> bool {
        match *self {
            Shape::Ellipse {
                cx,
                cy,
                rx,
                ry,
                angle,
            } => {
                let (sin, cos) = angle.sin_cos();
                let (dx, dy) = (x - cx, y - cy);
                let u = (dx * cos + dy * sin) / rx;
                let v = (-dx * sin + dy * cos) / ry;
                u * u + v * v <= 1.0
            }
            Shape::Triangle([a, b, c]) => {
                let side = |p: (f32, f32), q: (f32, f32)| {
                    (q.0 - p.0) * (y - p.1) - (q.1 - p.1) * (x - p.0)
                };
                let (d1, d2, d3) = (side(a, b), side(b, c), side(c, a));
                let negative = d1 < 0.0 || d2 < 0.0 || d3 < 0.0;
                let positive = d1 > 0.0 || d2 > 0.0 || d3 > 0.0;
                !(negative && positive)
            }
        }
    }

    /// (min x, min y, max x, max y)
    fn bounds(&self) -> (f32, f32, f32, f32) {
        match *self {
            Shape::Ellipse { cx, cy, rx, ry, .. } => {
                let reach = rx.max(ry);
                (cx - reach, cy - reach, cx + reach, cy + reach)
            }
            Shape::Triangle(points) => points.iter().fold(
                (f32::MAX, f32::MAX, f32::MIN, f32::MIN),
                |(x0, y0, x1, y1), &(x, y)| (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
            ),
        }
    }
}

/// Float RGB pixels, painted shape over shape.
struct Canvas {
    size: usize,
    pixels: Vec<Color>,
}

impl Canvas {
    /// A canvas with a gradient between two random colours, in a random direction.
    fn new(size: usize, rng: &mut StdRng) -> Canvas {
        let (from, to) = (random_color(rng), random_color(rng));
        let direction = rng.random_range(0.0..2.0 * PI);
        let (dx, dy) = (direction.cos(), direction.sin());
        let pixels = (0..size * size)
            .map(|i| {
                let (x, y) = (unit(i % size, size), unit(i / size, size));
                let t = ((x - 0.5) * dx + (y - 0.5) * dy + 0.71) / 1.42;
                std::array::from_fn(|c| from[c] + (to[c] - from[c]) * t)
            })
            .collect();
        Canvas { size, pixels }
    }

    fn fill(&mut self, shape: &Shape, color: Color) {
        let (x0, y0, x1, y1) = shape.bounds();
        let to_pixel = |v: f32| ((v * self.size as f32).max(0.0) as usize).min(self.size);
        for py in to_pixel(y0)..(to_pixel(y1) + 1).min(self.size) {
            for px in to_pixel(x0)..(to_pixel(x1) + 1).min(self.size) {
                let (x, y) = (unit(px, self.size), unit(py, self.size));
                if shape.contains(x, y) {
                    self.pixels[py * self.size + px] = color;
                }
            }
        }
    }

    fn into_bytes(self, noise: f32, rng: &mut StdRng) -> Vec<u8> {
        self.pixels
            .iter()
            .flat_map(|pixel| *pixel)
            .map(|c| {
                let noisy = c + noise * (rng.random::<f32>() + rng.random::<f32>() - 1.0) * 1.7;
                (noisy.clamp(0.0, 1.0) * 255.0).round() as u8
            })
            .collect()
    }
}

/// The centre of pixel row or column `index`, in unit coordinates.
fn unit(index: usize, size: usize) -> f32 {
    (index as f32 + 0.5) / size as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pictures_are_deterministic_and_varied() {
        let a = generate(6, 32, 1);
        assert_eq!(a, generate(6, 32, 1));
        assert_eq!(a.labels(), [0, 1, 0, 1, 0, 1]);
        assert_ne!(a.image(0), a.image(2), "two cats differ");
        assert_ne!(a, generate(6, 32, 2), "another seed draws other pictures");
    }

    #[test]
    fn writes_class_folders_of_pngs() {
        let dir = tempfile::tempdir().unwrap();
        write_dataset(dir.path(), 5, 24, 3).unwrap();
        let cats = crate::data::dataset::photos_in(&dir.path().join("cat")).unwrap();
        let dogs = crate::data::dataset::photos_in(&dir.path().join("dog")).unwrap();
        assert_eq!((cats.len(), dogs.len()), (3, 2));
        let decoded = image::open(&cats[1]).unwrap().to_rgb8();
        assert_eq!(decoded.as_raw(), &draw(0, 24, picture_seed(3, 2)));
    }
}
