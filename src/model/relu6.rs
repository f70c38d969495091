//! ReLU6, `clamp(x, 0, 6)`, EfficientNet-Lite's activation, as one pass spread over the CPU's
//! cores on flex: burn-flex's `clamp_f32` and `clamp_backward_f32` (vendor/burn-flex/PATCHED.md).
//! burn's `clamp` is a single-threaded pass on flex at inference, and while training burn's
//! autodiff makes it from two comparisons and four masked fills. Registered with burn's
//! autodiff as `norm_pool_relu.rs` registers its operation; other backends get burn's `clamp`.

use burn::backend::Flex;
use burn::tensor::{DType, Tensor};
use burn_autodiff::checkpoint::base::Checkpointer;
use burn_autodiff::checkpoint::strategy::NoCheckpointing;
use burn_autodiff::grads::Gradients;
use burn_autodiff::ops::{Backward, Ops, OpsKind};
use burn_flex::FlexTensor;
use burn_flex::ops::{clamp_backward_f32, clamp_f32};

use super::FlexTraining;

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
    match on_flex(x) {
        Ok(y) => y,
        Err(x) => (*x).clamp(LOW, HIGH),
    }
}

/// `x` clamped by flex's one pass, or `x` back where it is not an f32 tensor on flex. `x` is
/// dropped once its flex tensor is out, so that the clamp is done in place where nothing else
/// holds the values (a copy kept alive beside it made every clamp write a new tensor).
fn on_flex(x: Tensor<4>) -> Result<Tensor<4>, Box<Tensor<4>>> {
    const IN_ORDER: &str = "an f32 tensor, and bounds in order";
    if x.dtype() != DType::F32 {
        return Err(Box::new(x));
    }
    if let Ok(input) = x.clone().try_into_primitive::<FlexTraining>() {
        drop(x);
        let node = input.node();
        let output = clamp_f32(input.into_primitive(), LOW, HIGH).expect(IN_ORDER);
        let output = match Relu6
            .prepare::<NoCheckpointing>([node])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(output.clone(), output),
            OpsKind::UnTracked(prep) => prep.finish(output),
        };
        return Ok(Tensor::from_primitive::<FlexTraining>(output));
    }
    if let Ok(input) = x.clone().try_into_primitive::<Flex>() {
        drop(x);
        let output = clamp_f32(input, LOW, HIGH).expect(IN_ORDER);
        return Ok(Tensor::from_primitive::<Flex>(output));
    }
    Err(Box::new(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Values either side of both bounds, on flex with and without autodiff and on ndarray:
    /// the same clamped values (the input untouched where it is still held), and the gradient 1
    /// strictly inside the bounds, 0 outside; flex takes the one operation, ndarray burn's
    /// `clamp`.
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
            // In place only where nothing else holds the values: `x` is untouched.
            let x = x.to_data().try_to_vec::<f32>().unwrap();
            assert_eq!(x, values, "{device:?}");
            // Where nothing else holds them, the clamp is the same.
            let alone =
                Tensor::<4>::from_data(TensorData::new(values.to_vec(), [8, 1, 1, 1]), &device);
            let y = relu6(alone).to_data().try_to_vec::<f32>().unwrap();
            assert_eq!(y, expected, "{device:?}");
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
            on_flex(zeros(&Device::flex().autodiff())).is_ok(),
            "flex trains with it"
        );
        assert!(on_flex(zeros(&ndarray)).is_err(), "another backend");
    }
}
