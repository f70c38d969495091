//! The two sample photos built into catdog (`examples/`; their authors and licences are in
//! examples/CREDITS.md), so that `catdog predict --samples` answers in any folder.

/// (name, JPEG file) of each sample photo.
pub const SAMPLE_PHOTOS: [(&str, &[u8]); 2] = [
    ("cat.jpg", include_bytes!("../../examples/cat.jpg")),
    ("dog.jpg", include_bytes!("../../examples/dog.jpg")),
];
