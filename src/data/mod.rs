//! The photos' way to the network: a folder of photos ([`Dataset`]) → decoded, resized pixels
//! ([`decode_photo`]), kept on disk by the pixel cache ([`load_or_decode`]) as an
//! [`ImageSet`] → split for training ([`prepare`]) → batches of normalised tensors
//! ([`HostBatch`]), augmented and prepared ahead on a helper thread ([`prefetch`]).
//! [`synth`] draws the built-in pictures that stand in for photos.

mod augment;
mod batch;
mod cache;
mod dataset;
mod decode;
mod decode_budget;
mod fingerprint;
mod images;
mod prefetch;
mod prepare;
mod samples;
pub mod synth;

pub use batch::Normalization;
pub use dataset::stratified_split;
pub use decode::{Skipped, decode_photo, decode_photo_bytes};
pub use images::ImageSet;
pub use prepare::DataProgress;
pub use samples::SAMPLE_PHOTOS;

pub use augment::Augmentation;
pub(crate) use augment::batch_rng;
pub(crate) use batch::{DeviceBatch, HostBatch, batch_indices, images_on};
pub(crate) use cache::{DecodeWatch, DecodedPhotos, load_or_decode};
pub(crate) use dataset::{Dataset, Sample, check_val_split, count_labels, is_photo, photos_in};
pub(crate) use decode::decode_photos;
pub(crate) use prefetch::{AugmentEpoch, prefetch};
pub(crate) use prepare::{DataSpec, PreparedData, prepare};
