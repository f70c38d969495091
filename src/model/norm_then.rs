//! A training step's batch norm → shortcut added → ReLU or ReLU6 (ResNet's and
//! EfficientNet-Lite's work after each convolution) as one operation on flex, the CPU
//! backend: burn-flex's `batch_norm_add_clamp` (vendor/burn-flex/PATCHED.md) writes the
//! activations once where the operations apart write them up to three times and read them
//! twice more. Registered with burn's autodiff as `norm_pool_relu.rs` registers its
//! operation; other backends, inference, gradient checkpointing and shapes flex does not
//! take get the operations apart.

use burn::backend::Flex;
use burn::nn::BatchNorm;
use burn::tensor::{Device, Tensor};
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, NodeGuard, Ops, OpsKind};
use burn_flex::FlexTensor;
use burn_flex::ops::{NormClampSaved, batch_norm_add_clamp, batch_norm_add_clamp_backward};

use super::FlexTraining;
use super::activation::Then;

/// The operation with `N` inputs: `x`, γ, β and, with a shortcut, the tensor added.
#[derive(Debug)]
struct NormThen<const N: usize>;

impl<const N: usize> Backward<Flex, N> for NormThen<N> {
    type State = NormClampSaved;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        // `[x, γ, β, shortcut]`: without a shortcut, the last is left out.
        let all = batch_norm_add_clamp_backward(&ops.state, grad);
        for (parent, grad) in ops.parents.into_iter().zip(all) {
            if let Some(node) = parent {
                grads.register::<Flex>(node.id, grad);
            }
        }
    }
}

/// `then(norm(x) + add)`: on flex while training as one operation, otherwise the operations
/// apart. Either way `norm`'s running statistics are updated as burn's `BatchNorm::forward`
/// updates them.
pub fn norm_then(norm: &BatchNorm, x: Tensor<4>, add: Option<Tensor<4>>, then: Then) -> Tensor<4> {
    if let Some(y) = fused(norm, &x, add.as_ref(), then) {
        return y;
    }
    then.after(norm.forward(x), add)
}

fn fused(
    norm: &BatchNorm,
    x: &Tensor<4>,
    add: Option<&Tensor<4>>,
    then: Then,
) -> Option<Tensor<4>> {
    if !norm.training.is_enabled() {
        return None;
    }
    let training = |t: Tensor<4>| t.try_into_primitive::<FlexTraining>().ok();
    let input = training(x.clone())?;
    let gamma = norm.gamma.val().try_into_primitive::<FlexTraining>().ok()?;
    let beta = norm.beta.val().try_into_primitive::<FlexTraining>().ok()?;
    let added = match add {
        Some(add) => Some(training(add.clone())?),
        None => None,
    };
    let (x_node, gamma_node, beta_node) = (input.node(), gamma.node(), beta.node());
    let add_node = added.as_ref().map(|a| a.node());
    let fused = batch_norm_add_clamp(
        input.into_primitive(),
        gamma.into_primitive(),
        beta.into_primitive(),
        norm.epsilon,
        added.map(|a| a.into_primitive()),
        then.bounds(),
    )?;
    let output = match add_node {
        Some(add_node) => finish(
            NormThen::<4>,
            [x_node, gamma_node, beta_node, add_node],
            fused.saved,
            fused.output,
        ),
        None => finish(
            NormThen::<3>,
            [x_node, gamma_node, beta_node],
            fused.saved,
            fused.output,
        ),
    };
    update_running_statistics(norm, fused.mean, fused.variance, &x.device());
    Some(output)
}

/// The operation's output as a tensor of the autodiff graph, its gradient tracked where any
/// of `nodes` is.
fn finish<const N: usize>(
    op: NormThen<N>,
    nodes: [NodeGuard; N],
    saved: NormClampSaved,
    output: FlexTensor,
) -> Tensor<4> {
    let output = match op
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(saved, output),
        OpsKind::UnTracked(prep) => prep.finish(output),
    };
    Tensor::from_primitive::<FlexTraining>(output)
}

/// `norm`'s running mean and variance moved towards the batch's, as burn's
/// `BatchNorm::forward` moves them while training.
pub(super) fn update_running_statistics(
    norm: &BatchNorm,
    mean: FlexTensor,
    variance: FlexTensor,
    device: &Device,
) {
    let statistic = |t| Tensor::<1>::from_primitive::<Flex>(t).autodiff();
    let running = |state: Tensor<1>, batch: Tensor<1>| {
        state
            .to_device(device)
            .mul_scalar(1.0 - norm.momentum)
            .add(batch.mul_scalar(norm.momentum))
            .detach()
    };
    norm.running_mean
        .update(running(norm.running_mean.value_sync(), statistic(mean)));
    norm.running_var
        .update(running(norm.running_var.value_sync(), statistic(variance)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::BatchNormConfig;
    use burn::tensor::Distribution;

    /// The one operation is what flex trains with, with and without a shortcut and for each
    /// activation (tests/specs/flex_kernels.rs compares its values with the operations apart,
    /// which would match just as well if it were skipped).
    #[test]
    fn flex_training_takes_the_one_operation_and_nothing_else_does() {
        let takes = |device: Device, shortcut: bool, then: Then| {
            let norm = BatchNormConfig::new(3).init(&device);
            let random = || Tensor::<4>::random([2, 3, 4, 5], Distribution::Default, &device);
            let add = shortcut.then(random);
            fused(&norm, &random(), add.as_ref(), then).is_some()
        };
        for then in [Then::Nothing, Then::Relu, Then::Relu6] {
            for shortcut in [false, true] {
                let case = format!("{then:?}, shortcut {shortcut}");
                assert!(takes(Device::flex().autodiff(), shortcut, then), "{case}");
            }
        }
        assert!(
            !takes(Device::flex(), true, Then::Relu),
            "no autodiff: inference"
        );
        let ndarray = crate::device::cpu_backend(crate::device::CpuBackend::Ndarray).device;
        assert!(
            !takes(ndarray.autodiff(), true, Then::Relu),
            "another backend"
        );
    }
}
