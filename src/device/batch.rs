//! How many photos a piece of work sends to the device at once, and who chose it: what an
//! out-of-memory message names, and says how to lower.

/// The photos a piece of work sends to the device at once: what an out-of-memory message
/// names, and says how to lower.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Batch {
    /// Set by `--batch-size` and shaped by `--image-size` (training, validation, the bench).
    Chosen(usize),
    /// catdog's own, at the model's size (`predict`, `eval`).
    Fixed(usize),
}

impl Batch {
    pub(crate) fn size(self) -> usize {
        match self {
            Batch::Chosen(size) | Batch::Fixed(size) => size,
        }
    }
}
