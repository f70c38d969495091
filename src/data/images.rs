//! Photos after decoding: square RGB pixels, one byte per channel, held in memory or read
//! straight from the memory-mapped pixel cache ([`super::cache`]).

use std::sync::Arc;

use memmap2::Mmap;

/// Where the pixels live. A mapped file costs no heap memory: the kernel pages it in as
/// batches read it and may drop those pages again under memory pressure.
#[derive(Debug)]
pub enum Pixels {
    Owned(Vec<u8>),
    Mapped(Mmap),
}

impl Pixels {
    fn bytes(&self) -> &[u8] {
        match self {
            Pixels::Owned(bytes) => bytes,
            Pixels::Mapped(map) => map,
        }
    }
}

/// Square images of `size × size` RGB pixels (row-major, `[y][x][r, g, b]`) with the class
/// index of each. [`select`](Self::select) picks a subset without copying pixels, so the
/// training and validation sets share one buffer or one mapped file.
#[derive(Clone, Debug)]
pub struct ImageSet {
    size: u32,
    pixels: Arc<Pixels>,
    /// Where each image starts in `pixels`, in images.
    slots: Vec<usize>,
    labels: Vec<usize>,
}

impl ImageSet {
    pub fn new(size: u32) -> ImageSet {
        ImageSet::from_pixels(size, Pixels::Owned(Vec::new()), Vec::new())
    }

    /// All images in `pixels`, in order, one label each.
    pub(crate) fn from_pixels(size: u32, pixels: Pixels, labels: Vec<usize>) -> ImageSet {
        assert_eq!(
            pixels.bytes().len(),
            labels.len() * image_bytes(size),
            "one label per image"
        );
        ImageSet {
            size,
            pixels: Arc::new(pixels),
            slots: (0..labels.len()).collect(),
            labels,
        }
    }

    /// Side of every image, in pixels.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Bytes in one image.
    pub fn image_bytes(&self) -> usize {
        image_bytes(self.size)
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// The pixels of image `index`.
    pub fn image(&self, index: usize) -> &[u8] {
        let bytes = self.image_bytes();
        let start = self.slots[index] * bytes;
        &self.pixels.bytes()[start..start + bytes]
    }

    /// Appends an image of [`image_bytes`](Self::image_bytes) bytes to a set built in memory.
    pub fn push(&mut self, pixels: &[u8], label: usize) {
        assert_eq!(pixels.len(), self.image_bytes(), "image of the wrong size");
        let Some(Pixels::Owned(buffer)) = Arc::get_mut(&mut self.pixels) else {
            panic!("images are pushed only onto a set of its own, in memory");
        };
        self.slots.push(buffer.len() / pixels.len());
        buffer.extend_from_slice(pixels);
        self.labels.push(label);
    }

    /// The images at `indices`, in that order, sharing this set's pixels.
    pub fn select(&self, indices: &[usize]) -> ImageSet {
        ImageSet {
            size: self.size,
            pixels: Arc::clone(&self.pixels),
            slots: indices.iter().map(|&i| self.slots[i]).collect(),
            labels: indices.iter().map(|&i| self.labels[i]).collect(),
        }
    }
}

/// Two sets are equal when they hold the same pictures with the same labels, wherever the
/// pixels live.
impl PartialEq for ImageSet {
    fn eq(&self, other: &ImageSet) -> bool {
        self.size == other.size
            && self.labels == other.labels
            && (0..self.len()).all(|i| self.image(i) == other.image(i))
    }
}

/// Bytes in one RGB image of `size × size` pixels.
pub fn image_bytes(size: u32) -> usize {
    size as usize * size as usize * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_shares_the_pixels_and_keeps_its_order() {
        let mut set = ImageSet::new(1);
        for value in 0..4u8 {
            set.push(&[value; 3], value as usize % 2);
        }
        let picked = set.select(&[3, 1]);
        assert_eq!(picked.labels(), [1, 1]);
        assert_eq!(picked.image(0), [3; 3]);
        assert_eq!(picked.select(&[1]).image(0), [1; 3]);
        assert!(Arc::ptr_eq(&set.pixels, &picked.pixels));
    }
}
