//! A training block's batch norm → 2×2 max-pool → ReLU (SmallCnn's), and batch norm → ReLU →
//! max-pool over any window (ResNet's stem), each as one operation on flex, the CPU backend:
//! burn-flex's `batch_norm_max_pool2x2_relu` and `batch_norm_relu_max_pool`
//! (vendor/burn-flex/PATCHED.md) make about half the passes over the block's largest tensor
//! that the three apart make, forward and backward. burn has no such operations, so this
//! registers them with burn's autodiff (`Backward`, as burn's custom-kernel examples do),
//! reached through the backend extension API; other backends, gradient checkpointing and
//! shapes they do not take get `None`, and the caller the three apart.

use burn::backend::Flex;
use burn::nn::pool::MaxPool2d;
use burn::nn::{BatchNorm, PaddingConfig2d};
use burn::tensor::Tensor;
use burn::tensor::activation::relu;
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, Ops, OpsKind};
use burn_flex::ops::{
    NormPoolSaved, NormReluPoolSaved, batch_norm_max_pool2x2_relu_backward,
    batch_norm_relu_max_pool_backward,
};

use super::FlexTraining;
use super::activation::Then;
use super::norm_then::{norm_then, update_running_statistics};

#[derive(Debug)]
struct NormPoolRelu;

impl Backward<Flex, 3> for NormPoolRelu {
    type State = NormPoolSaved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let all = batch_norm_max_pool2x2_relu_backward(&ops.state, grad);
        for (parent, grad) in ops.parents.into_iter().zip(all) {
            if let Some(node) = parent {
                grads.register::<Flex>(node.id, grad);
            }
        }
    }
}

#[derive(Debug)]
struct NormReluPool;

impl Backward<Flex, 3> for NormReluPool {
    type State = NormReluPoolSaved;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let all = batch_norm_relu_max_pool_backward(&ops.state, grad);
        for (parent, grad) in ops.parents.into_iter().zip(all) {
            if let Some(node) = parent {
                grads.register::<Flex>(node.id, grad);
            }
        }
    }
}

/// `pool(relu(norm(x)))`, ResNet's work after its first convolution: on flex while training,
/// with a pool flex's window pooling takes (no dilation or ceil mode, even padding), as one
/// operation; otherwise batch norm and ReLU ([`norm_then`]), then the pool. Either way
/// `norm`'s running statistics are updated as burn's `BatchNorm::forward` updates them.
pub fn norm_relu_pool(norm: &BatchNorm, pool: &MaxPool2d, x: Tensor<4>) -> Tensor<4> {
    match fused_window(norm, pool, &x) {
        Some(y) => y,
        None => pool.forward(norm_then(norm, x, None, Then::Relu)),
    }
}

fn fused_window(norm: &BatchNorm, pool: &MaxPool2d, x: &Tensor<4>) -> Option<Tensor<4>> {
    let padding = match pool.padding {
        PaddingConfig2d::Valid => [0, 0],
        PaddingConfig2d::Explicit(top, left, bottom, right) if top == bottom && left == right => {
            [top, left]
        }
        _ => return None,
    };
    if !norm.training.is_enabled() || pool.dilation != [1, 1] || pool.ceil_mode {
        return None;
    }
    let training = |t: Tensor<4>| t.try_into_primitive::<FlexTraining>().ok();
    let input = training(x.clone())?;
    let gamma = norm.gamma.val().try_into_primitive::<FlexTraining>().ok()?;
    let beta = norm.beta.val().try_into_primitive::<FlexTraining>().ok()?;
    let nodes = [input.node(), gamma.node(), beta.node()];
    let fused = burn_flex::ops::batch_norm_relu_max_pool(
        input.into_primitive(),
        gamma.into_primitive(),
        beta.into_primitive(),
        norm.epsilon,
        [pool.kernel_size, pool.stride, padding],
    )?;
    let output = match NormReluPool
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(fused.saved, fused.output),
        OpsKind::UnTracked(prep) => prep.finish(fused.output),
    };
    update_running_statistics(norm, fused.mean, fused.variance, &x.device());
    Some(Tensor::from_primitive::<FlexTraining>(output))
}

/// `relu(pool(norm(x)))`, a conv block's work after its convolution: on flex while
/// training, with a 2×2 pool of stride 2 and even sides, as one operation; otherwise the
/// three apart. Either way `norm`'s running statistics are updated as burn's
/// `BatchNorm::forward` updates them.
pub fn norm_pool_relu(norm: &BatchNorm, pool: &MaxPool2d, x: Tensor<4>) -> Tensor<4> {
    match fused(norm, pool, &x) {
        Some(y) => y,
        None => relu(pool.forward(norm.forward(x))),
    }
}

fn fused(norm: &BatchNorm, pool: &MaxPool2d, x: &Tensor<4>) -> Option<Tensor<4>> {
    let unpadded = match pool.padding {
        PaddingConfig2d::Valid => true,
        PaddingConfig2d::Explicit(top, left, bottom, right) => top + left + bottom + right == 0,
        PaddingConfig2d::Same => false,
    };
    let two_by_two = pool.kernel_size == [2, 2] && pool.stride == [2, 2] && pool.dilation == [1, 1];
    if !norm.training.is_enabled() || !unpadded || !two_by_two {
        return None;
    }
    let training = |t: Tensor<4>| t.try_into_primitive::<FlexTraining>().ok();
    let input = training(x.clone())?;
    let gamma = norm.gamma.val().try_into_primitive::<FlexTraining>().ok()?;
    let beta = norm.beta.val().try_into_primitive::<FlexTraining>().ok()?;
    let nodes = [input.node(), gamma.node(), beta.node()];
    let fused = burn_flex::ops::batch_norm_max_pool2x2_relu(
        input.into_primitive(),
        gamma.into_primitive(),
        beta.into_primitive(),
        norm.epsilon,
    )?;
    let output = match NormPoolRelu
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(fused.saved, fused.output),
        OpsKind::UnTracked(prep) => prep.finish(fused.output),
    };
    update_running_statistics(norm, fused.mean, fused.variance, &x.device());
    Some(Tensor::from_primitive::<FlexTraining>(output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::BatchNormConfig;
    use burn::nn::pool::MaxPool2dConfig;
    use burn::tensor::{Device, Distribution};

    /// The one operation is what flex trains with (the tests in tests/specs/flex_kernels.rs compare
    /// its values with the three apart, which would match just as well if it were skipped).
    #[test]
    fn flex_training_takes_the_one_operation_and_nothing_else_does() {
        let pool: MaxPool2d = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
        let takes = |device: Device, sides: [usize; 2]| {
            let norm = BatchNormConfig::new(3).init(&device);
            let x = Tensor::<4>::random([2, 3, sides[0], sides[1]], Distribution::Default, &device);
            fused(&norm, &pool, &x).is_some()
        };
        assert!(takes(Device::flex().autodiff(), [4, 6]));
        assert!(!takes(Device::flex().autodiff(), [5, 6]), "odd sides");
        assert!(!takes(Device::flex(), [4, 6]), "no autodiff: inference");
        let ndarray = crate::device::cpu_backend(crate::device::CpuBackend::Ndarray).device;
        assert!(
            !takes(ndarray.clone().autodiff(), [4, 6]),
            "another backend"
        );

        // ResNet's stem: batch norm → ReLU → 3×3 max-pool of stride 2.
        let stem = |padding: PaddingConfig2d, ceil_mode: bool| {
            let mut pool = MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(padding)
                .init();
            pool.ceil_mode = ceil_mode;
            pool
        };
        let takes = |device: Device, pool: &MaxPool2d| {
            let norm = BatchNormConfig::new(3).init(&device);
            let x = Tensor::<4>::random([2, 3, 7, 9], Distribution::Default, &device);
            fused_window(&norm, pool, &x).is_some()
        };
        let resnet = stem(PaddingConfig2d::Explicit(1, 1, 1, 1), false);
        assert!(takes(Device::flex().autodiff(), &resnet));
        assert!(!takes(Device::flex(), &resnet), "no autodiff: inference");
        assert!(!takes(ndarray.autodiff(), &resnet), "another backend");
        let uneven = stem(PaddingConfig2d::Explicit(1, 1, 0, 0), false);
        assert!(!takes(Device::flex().autodiff(), &uneven), "uneven padding");
        let ceil = stem(PaddingConfig2d::Explicit(1, 1, 1, 1), true);
        assert!(!takes(Device::flex().autodiff(), &ceil), "ceil mode");
    }
}
