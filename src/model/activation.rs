//! What follows a convolution, its batch norm and the shortcut added to them: nothing, ReLU
//! (ResNet) or ReLU6 (EfficientNet-Lite). The fused operations (`fused.rs`, `norm_then.rs`)
//! take it as the bounds they clamp to; the operations apart apply it with [`Then::after`].

use burn::tensor::Tensor;
use burn::tensor::activation::relu;

use super::relu6::relu6;

/// What comes after a convolution, its batch norm and the shortcut added to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Then {
    /// No activation (EfficientNet-Lite's projection).
    Nothing,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
}

impl Then {
    /// The bounds it clamps to, as flex's fused operations take them.
    pub(super) fn bounds(self) -> Option<(f32, f32)> {
        match self {
            Then::Nothing => None,
            Then::Relu => Some((0.0, f32::INFINITY)),
            Then::Relu6 => Some((0.0, 6.0)),
        }
    }

    /// `self(y + add)`, or `self(y)` without a shortcut, as the operations apart.
    pub(super) fn after(self, y: Tensor<4>, add: Option<Tensor<4>>) -> Tensor<4> {
        let x = match add {
            Some(add) => y + add,
            None => y,
        };
        match self {
            Then::Nothing => x,
            Then::Relu => relu(x),
            Then::Relu6 => relu6(x),
        }
    }
}
