//! What a forward convolution does to its output while each part of it is still in cache:
//! add a tensor of the output's shape (a residual network's shortcut), then clamp (ReLU is
//! `[0, ∞)`, ReLU6 `[0, 6]`). Apart, each is a pass of its own over the whole output, which
//! at a network's widest layers is far larger than the caches, and a fresh buffer each.

use super::{Element, clamp};

/// An addition and a clamp, either or both absent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epilogue<'a, T> {
    /// Added to the output, value for value (the output's shape, contiguous).
    pub add: Option<&'a [T]>,
    /// The lowest and highest value kept; NaN passes through, as burn's ReLU lets it.
    pub clamp: Option<(T, T)>,
}

impl<'a, T: Element> Epilogue<'a, T> {
    /// Neither: the convolution's output as it is.
    pub(crate) const NONE: Epilogue<'static, T> = Epilogue {
        add: None,
        clamp: None,
    };

    /// Whether it does nothing.
    pub(crate) fn is_none(&self) -> bool {
        self.add.is_none() && self.clamp.is_none()
    }

    /// The same, for the part of the output that starts `offset` values in.
    pub(crate) fn from(self, offset: usize) -> Epilogue<'a, T> {
        Epilogue {
            add: self.add.map(|add| &add[offset..]),
            ..self
        }
    }

    /// Applies both to `values`, the output's values from `at` on, in one pass.
    #[inline]
    pub(crate) fn apply(&self, at: usize, values: &mut [T]) {
        match (self.add.map(|add| &add[at..][..values.len()]), self.clamp) {
            (Some(add), Some((low, high))) => {
                for (v, &a) in values.iter_mut().zip(add) {
                    *v = clamp(*v + a, low, high);
                }
            }
            (Some(add), None) => {
                for (v, &a) in values.iter_mut().zip(add) {
                    *v += a;
                }
            }
            (None, Some((low, high))) => {
                for v in values.iter_mut() {
                    *v = clamp(*v, low, high);
                }
            }
            (None, None) => {}
        }
    }
}
