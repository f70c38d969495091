//! Photos held in memory after decoding: square RGB pixels, one byte per channel.

/// `len` square images of `size × size` RGB pixels (row-major, `[y][x][r, g, b]`), with the
/// class index of each. One contiguous buffer: 10,000 photos at 64 px take 123 MB.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImageSet {
    size: u32,
    pixels: Vec<u8>,
    labels: Vec<usize>,
}

impl ImageSet {
    pub fn new(size: u32) -> ImageSet {
        ImageSet {
            size,
            pixels: Vec::new(),
            labels: Vec::new(),
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
        &self.pixels[index * bytes..(index + 1) * bytes]
    }

    /// Appends an image of [`image_bytes`](Self::image_bytes) bytes.
    pub fn push(&mut self, pixels: &[u8], label: usize) {
        assert_eq!(pixels.len(), self.image_bytes(), "image of the wrong size");
        self.pixels.extend_from_slice(pixels);
        self.labels.push(label);
    }

    /// The images at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> ImageSet {
        let mut subset = ImageSet::new(self.size);
        subset.pixels.reserve(indices.len() * self.image_bytes());
        for &index in indices {
            subset.push(self.image(index), self.labels[index]);
        }
        subset
    }
}

/// Bytes in one RGB image of `size × size` pixels.
pub fn image_bytes(size: u32) -> usize {
    size as usize * size as usize * 3
}
