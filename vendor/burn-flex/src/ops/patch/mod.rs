//! catdog's additions to burn-flex 0.22.1 (see `PATCHED.md`): convolution, its gradients and
//! batch normalisation as single passes over the data, where upstream composes them from
//! generic tensor operations.

pub(crate) mod batch_norm;
pub(crate) mod conv;
pub(crate) mod pool;

use burn_backend::DType;
use burn_std::{Bytes, Shape, bf16, f16};

use crate::ops::module::{cast_from_f32, cast_to_f32};
use crate::{FlexTensor, Layout};

/// The float types the kernels compute in (half precision is computed in f32).
pub(crate) trait Element:
    bytemuck::Pod
    + num_traits::Float
    + core::ops::AddAssign
    + burn_backend::Element
    + Send
    + Sync
    + 'static
{
}
impl Element for f32 {}
impl Element for f64 {}

/// The tensor, contiguous, in the precision the kernels compute in: f16 and bf16 become f32.
pub(crate) fn widen(tensor: FlexTensor) -> FlexTensor {
    match tensor.dtype() {
        DType::F16 => cast_to_f32(tensor, f16::to_f32),
        DType::BF16 => cast_to_f32(tensor, bf16::to_f32),
        DType::F32 | DType::F64 => tensor.to_contiguous(),
        other => panic!("burn-flex: a float operation got a {other:?} tensor"),
    }
}

/// A kernel's result as a tensor of `dtype` (the dtype its inputs had before [`widen`]).
pub(crate) fn narrow<T: Element>(
    data: alloc::vec::Vec<T>,
    shape: Shape,
    dtype: DType,
) -> FlexTensor {
    let tensor = FlexTensor::new(
        Bytes::from_elems(data),
        Layout::contiguous(shape),
        T::dtype(),
    );
    match dtype {
        DType::F16 => cast_from_f32(tensor, f16::from_f32),
        DType::BF16 => cast_from_f32(tensor, bf16::from_f32),
        _ => tensor,
    }
}
