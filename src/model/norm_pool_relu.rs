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
use burn_flex::FlexTensor;
use burn_flex::ops::{
    batch_norm_max_pool2x2_relu, batch_norm_max_pool2x2_relu_backward, batch_norm_relu_max_pool,
    batch_norm_relu_max_pool_backward,
};

use super::FlexTraining;
use super::activation::Then;
use super::norm_then::{norm_then, update_running_statistics};

/// A fused operation's gradient: `backward` turns the saved state and the output's gradient
/// into the gradients of x, γ and β.
#[derive(Debug)]
struct NormPool<S> {
    backward: fn(&S, FlexTensor) -> [FlexTensor; 3],
}

impl<S: Clone + Send + core::fmt::Debug + 'static> Backward<Flex, 3> for NormPool<S> {
    type State = S;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let all = (self.backward)(&ops.state, grad);
        for (parent, grad) in ops.parents.into_iter().zip(all) {
            if let Some(node) = parent {
                grads.register::<Flex>(node.id, grad);
            }
        }
    }
}

/// What a fused operation's forward pass gives: its output, the batch's mean and variance,
/// and the state its gradient needs.
type Fused<S> = (FlexTensor, FlexTensor, FlexTensor, S);

/// `forward` of x, γ and β (flex's own tensors) as an operation of the autodiff graph whose
/// gradient is `backward`, with `norm`'s running statistics updated from the batch's; `None`
/// where x, γ or β are not flex training tensors, or `forward` does not take them.
fn fused_norm<S: Clone + Send + core::fmt::Debug + 'static>(
    norm: &BatchNorm,
    x: &Tensor<4>,
    forward: impl FnOnce(FlexTensor, FlexTensor, FlexTensor) -> Option<Fused<S>>,
    backward: fn(&S, FlexTensor) -> [FlexTensor; 3],
) -> Option<Tensor<4>> {
    let training = |t: Tensor<4>| t.try_into_primitive::<FlexTraining>().ok();
    let input = training(x.clone())?;
    let gamma = norm.gamma.val().try_into_primitive::<FlexTraining>().ok()?;
    let beta = norm.beta.val().try_into_primitive::<FlexTraining>().ok()?;
    let nodes = [input.node(), gamma.node(), beta.node()];
    let (output, mean, variance, saved) = forward(
        input.into_primitive(),
        gamma.into_primitive(),
        beta.into_primitive(),
    )?;
    let op = NormPool { backward };
    let output = match op
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(saved, output),
        OpsKind::UnTracked(prep) => prep.finish(output),
    };
    update_running_statistics(norm, mean, variance, &x.device());
    Some(Tensor::from_primitive::<FlexTraining>(output))
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
    let window = [pool.kernel_size, pool.stride, padding];
    let forward = |x, gamma, beta| {
        let f = batch_norm_relu_max_pool(x, gamma, beta, norm.epsilon, window)?;
        Some((f.output, f.mean, f.variance, f.saved))
    };
    fused_norm(norm, x, forward, batch_norm_relu_max_pool_backward)
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
    let forward = |x, gamma, beta| {
        let f = batch_norm_max_pool2x2_relu(x, gamma, beta, norm.epsilon)?;
        Some((f.output, f.mean, f.variance, f.saved))
    };
    fused_norm(norm, x, forward, batch_norm_max_pool2x2_relu_backward)
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
