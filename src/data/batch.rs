//! Pixels to tensors: batches of normalised `[batch, 3, size, size]` images and their labels.

use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::augment::{Augmentation, augment};
use super::images::ImageSet;

/// Per-channel mean and standard deviation that pixels (scaled to 0..1) are normalised with.
/// Saved with the model, so prediction prepares photos exactly as training did.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalization {
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

impl Default for Normalization {
    /// ImageNet's statistics: the values a PyTorch user knows.
    fn default() -> Self {
        Normalization {
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
        }
    }
}

impl Normalization {
    /// `images` (each `size × size × 3` bytes, HWC) as one normalised `[n, 3, size, size]`
    /// host buffer, channel-first as the network wants it.
    pub fn to_chw<'a>(
        &self,
        images: impl ExactSizeIterator<Item = &'a [u8]>,
        size: u32,
    ) -> TensorData {
        let count = images.len();
        let plane = size as usize * size as usize;
        let mut values = vec![0f32; count * 3 * plane];
        let scale: [f32; 3] = std::array::from_fn(|c| 1.0 / (255.0 * self.std[c]));
        let shift: [f32; 3] = std::array::from_fn(|c| self.mean[c] / self.std[c]);
        for (n, pixels) in images.enumerate() {
            let out = &mut values[n * 3 * plane..(n + 1) * 3 * plane];
            for (i, rgb) in pixels.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    out[c * plane + i] = rgb[c] as f32 * scale[c] - shift[c];
                }
            }
        }
        TensorData::new(values, [count, 3, size as usize, size as usize])
    }
}

/// One batch on the host, ready to move to a device.
pub struct HostBatch {
    pub images: TensorData,
    pub labels: Vec<i64>,
}

impl HostBatch {
    /// The images at `indices` of `set`, augmented as `augmentation` says with its random
    /// generator's draws when given.
    pub fn new(
        set: &ImageSet,
        indices: &[usize],
        normalization: &Normalization,
        augmentation: Option<(Augmentation, &mut StdRng)>,
    ) -> HostBatch {
        let images = match augmentation {
            None => normalization.to_chw(indices.iter().map(|&i| set.image(i)), set.size()),
            Some((kind, rng)) => {
                let mut augmented = vec![0u8; indices.len() * set.image_bytes()];
                for (&i, out) in indices.iter().zip(augmented.chunks_mut(set.image_bytes())) {
                    augment(kind, set.image(i), set.size(), rng, out);
                }
                normalization.to_chw(augmented.chunks(set.image_bytes()), set.size())
            }
        };
        HostBatch {
            images,
            labels: indices.iter().map(|&i| set.labels()[i] as i64).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// The batch as tensors on `device`.
    pub fn upload(self, device: &Device) -> DeviceBatch {
        let count = self.labels.len();
        DeviceBatch {
            images: images_on(self.images, device),
            labels: Tensor::from_data(TensorData::new(self.labels.clone(), [count]), device),
            expected: self.labels,
        }
    }
}

/// `images` as a tensor in `device`'s float type (`--precision`): `from_data` converts f32
/// pixels to f16 on a device computing in f16, but keeps them f32 on one computing in flex32,
/// whose weights then refuse them.
pub(crate) fn images_on(images: TensorData, device: &Device) -> Tensor<4> {
    let tensor = Tensor::from_data(images, device);
    let dtype = device.settings().float_dtype;
    if tensor.dtype() == dtype.into() {
        tensor
    } else {
        tensor.cast(dtype)
    }
}

/// One batch on a device, and its labels kept on the host to count right answers: what the
/// bench uploads once to time the device alone.
#[derive(Clone, Debug)]
pub struct DeviceBatch {
    pub images: Tensor<4>,
    pub labels: Tensor<1, Int>,
    pub expected: Vec<i64>,
}

impl DeviceBatch {
    pub fn len(&self) -> usize {
        self.expected.len()
    }
}

/// Batches of indices over `0..len`: shuffled by `seed` when given, in order otherwise.
/// The last batch may be smaller.
pub fn batch_indices(len: usize, batch_size: usize, shuffle_seed: Option<u64>) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..len).collect();
    if let Some(seed) = shuffle_seed {
        order.shuffle(&mut StdRng::seed_from_u64(seed));
    }
    order
        .chunks(batch_size.max(1))
        .map(<[usize]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_into_channel_first_planes() {
        let norm = Normalization {
            mean: [0.5, 0.0, 1.0],
            std: [0.5, 1.0, 0.25],
        };
        // A 1×2 image would not be square; use 2×2 with distinct pixels.
        let pixels = [255, 0, 255, 0, 255, 0, 51, 102, 153, 255, 255, 255];
        let data = norm.to_chw([&pixels[..]].into_iter(), 2);
        assert_eq!(data.shape().to_vec(), [1, 3, 2, 2]);
        let values: Vec<f32> = data.iter::<f32>().collect();
        let expect = |v: u8, c: usize| (v as f32 / 255.0 - norm.mean[c]) / norm.std[c];
        assert!((values[0] - expect(255, 0)).abs() < 1e-6); // red of pixel 0
        assert!((values[4 + 1] - expect(255, 1)).abs() < 1e-6); // green of pixel 1
        assert!((values[8 + 2] - expect(153, 2)).abs() < 1e-6); // blue of pixel 2
    }

    #[test]
    fn batches_cover_every_index_once() {
        let batches = batch_indices(10, 4, Some(3));
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 2]);
        let mut all: Vec<usize> = batches.concat();
        assert_ne!(all, (0..10).collect::<Vec<_>>(), "shuffled");
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(batch_indices(5, 2, None), [vec![0, 1], vec![2, 3], vec![4]]);
    }
}
