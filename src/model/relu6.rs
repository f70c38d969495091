//! ReLU6, `clamp(x, 0, 6)`, EfficientNet-Lite's activation, as one pass spread over the CPU's
//! cores on flex: burn-flex's `clamp_f32` and `clamp_backward_f32` (vendor/burn-flex/PATCHED.md).
//! burn's `clamp` is a single-threaded pass on flex at inference, and while training burn's
//! autodiff makes it from two comparisons and four masked fills. Registered with burn's
//! autodiff as `norm_pool_relu.rs` registers its operation; other backends get burn's `clamp`.

use burn::backend::Flex;
use burn::tensor::Tensor;
use burn_autodiff::Autodiff;
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, Ops, OpsKind};
use burn_flex::FlexTensor;
use burn_flex::ops::{clamp_backward_f32, clamp_f32};

/// The autodiff backend a training device runs on flex (without gradient checkpointing).
type Training = Autodiff<Flex, NoCheckpointing>;

const LOW: f32 = 0.0;
const HIGH: f32 = 6.0;

#[derive(Debug)]
struct Relu6;

impl Backward<Flex, 1> for Relu6 {
    /// The clamped output: the gradient passes where it lies strictly inside the bounds.
    type State = FlexTensor;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let [parent] = ops.parents;
        if let Some(node) = parent {
            let grad = clamp_backward_f32(&ops.state, grad, LOW, HIGH)
                .expect("the forward pass took an f32 tensor of the gradient's shape");
            grads.register::<Flex>(node.id, grad);
        }
    }
}

/// `min(max(x, 0), 6)`.
pub fn relu6(x: Tensor<4>) -> Tensor<4> {
    match on_flex(&x) {
        Some(y) => y,
        None => x.clamp(LOW, HIGH),
    }
}

fn on_flex(x: &Tensor<4>) -> Option<Tensor<4>> {
    if let Ok(input) = x.clone().try_into_primitive::<Training>() {
        let node = input.node();
        let output = clamp_f32(input.into_primitive(), LOW, HIGH)?;
        let output = match Relu6
            .prepare::<NoCheckpointing>([node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(output.clone(), output),
            OpsKind::UnTracked(prep) => prep.finish(output),
        };
        return Some(Tensor::from_primitive::<Training>(output));
    }
    let input = x.clone().try_into_primitive::<Flex>().ok()?;
    clamp_f32(input, LOW, HIGH).map(Tensor::from_primitive::<Flex>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Values either side of both bounds, on flex with and without autodiff and on ndarray:
    /// the same clamped values, and the gradient 1 strictly inside the bounds, 0 outside; flex
    /// takes the one operation, ndarray burn's `clamp`.
    #[test]
    fn relu6_clamps_and_passes_the_gradient_inside_the_bounds_only() {
        let values = [-3.0f32, -0.5, 0.25, 1.0, 5.5, 6.5, 9.0, 3.0];
        let expected = [0.0f32, 0.0, 0.25, 1.0, 5.5, 6.0, 6.0, 3.0];
        let inside = [0.0f32, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0];
        let ndarray = crate::device::cpu_backend(crate::device::CpuBackend::Ndarray).device;
        for device in [
            Device::flex(),
            Device::flex().autodiff(),
            ndarray.clone().autodiff(),
        ] {
            let x = Tensor::<4>::from_data(TensorData::new(values.to_vec(), [1, 2, 2, 2]), &device);
            let y = relu6(x.clone());
            assert_eq!(
                y.to_data().try_to_vec::<f32>().unwrap(),
                expected,
                "{device:?}"
            );
        }
        for device in [Device::flex().autodiff(), ndarray.clone().autodiff()] {
            let x = Tensor::<4>::from_data(TensorData::new(values.to_vec(), [1, 2, 2, 2]), &device)
                .require_grad();
            let grads = relu6(x.clone()).sum().backward();
            let dx = x
                .grad(&grads)
                .unwrap()
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            assert_eq!(dx, inside, "{device:?}");
        }
        let zeros = |device: &Device| Tensor::<4>::zeros([1, 1, 1, 1], device);
        assert!(
            on_flex(&zeros(&Device::flex().autodiff())).is_some(),
            "flex trains with it"
        );
        assert!(on_flex(&zeros(&ndarray)).is_none(), "another backend");
    }
}
