//! AdamW as burn-optim's `AdamW` computes it, each parameter's update made in one pass on
//! flex.
//!
//! burn-optim's AdamW makes every step from fifteen tensor operations, each a pass over
//! parameter-sized tensors, whatever the batch: on a CPU that was a large share of a small
//! batch's step. On flex, in f32, [`OnePassAdamW`] hands each parameter to burn-flex's
//! `adamw_step` (vendor/burn-flex/src/ops/patch/adamw.rs), which computes the same floats in
//! one pass; elsewhere (the GPU, ndarray, half precision) it is burn-optim's AdamW. Its state
//! is burn-optim's `AdamWState` either way, so checkpoints do not change.

use burn::backend::{DispatchDevice, Flex};
use burn::optim::{
    AdamW, AdamWConfig, AdamWState, AdaptiveMomentumState, LearningRate, ModuleOptimizer, Optimizer,
};
use burn::tensor::{DType, Device, Tensor};

/// AdamW's settings: PyTorch's betas (burn's defaults too), and the epsilon and weight decay
/// given.
#[derive(Clone)]
pub struct OnePassAdamW {
    epsilon: f32,
    weight_decay: f32,
    /// burn-optim's AdamW with the same settings, for the tensors flex does not hold.
    upstream: AdamW,
}

const BETA_1: f32 = 0.9;
const BETA_2: f32 = 0.999;

impl OnePassAdamW {
    pub fn new(epsilon: f32, weight_decay: f32) -> Self {
        let upstream = AdamWConfig::new()
            .with_beta_1(BETA_1)
            .with_beta_2(BETA_2)
            .with_epsilon(epsilon)
            .with_weight_decay(weight_decay)
            .build();
        OnePassAdamW {
            epsilon,
            weight_decay,
            upstream,
        }
    }

    /// The optimizer for a whole module.
    pub fn init(self) -> ModuleOptimizer {
        ModuleOptimizer::from(self)
    }
}

/// A parameter, its gradient and its AdamW state.
type Inputs<const D: usize> = (Tensor<D>, Tensor<D>, Option<AdamWState<D>>);

impl OnePassAdamW {
    /// The step made by burn-flex in one pass; the inputs back where they are not all flex's
    /// own f32 tensors, or the state keeps AMSGrad's maximum (which this does not update).
    fn step_on_flex<const D: usize>(
        &self,
        lr: LearningRate,
        (tensor, grad, state): Inputs<D>,
    ) -> Result<(Tensor<D>, AdamWState<D>), Box<Inputs<D>>> {
        let on_flex = |t: &Tensor<D>| {
            matches!(t.device().as_dispatch(), DispatchDevice::Flex(_))
                && t.dtype() == DType::F32
                // A tensor that tracks gradients is not flex's own (none should here).
                && t.clone().try_into_primitive::<Flex>().is_ok()
        };
        let moments = state.as_ref().map(|s| &s.momentum);
        let all_on_flex = on_flex(&tensor)
            && on_flex(&grad)
            && moments.is_none_or(|m| {
                m.max_moment_2.is_none() && on_flex(&m.moment_1) && on_flex(&m.moment_2)
            });
        if !all_on_flex {
            return Err(Box::new((tensor, grad, state)));
        }
        let flex = |t: Tensor<D>| {
            t.try_into_primitive::<Flex>()
                .expect("checked to be flex's own just above")
        };
        let time = state.as_ref().map_or(0, |s| s.momentum.time) + 1;
        let moments = state.map(|s| (flex(s.momentum.moment_1), flex(s.momentum.moment_2)));
        let step = burn_flex::ops::AdamWStep {
            beta_1: BETA_1,
            beta_2: BETA_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            lr,
            time: time as i32,
        };
        let (param, moment_1, moment_2) =
            burn_flex::ops::adamw_step(flex(tensor), flex(grad), moments, &step);
        let momentum = AdaptiveMomentumState {
            time,
            moment_1: Tensor::from_primitive::<Flex>(moment_1),
            moment_2: Tensor::from_primitive::<Flex>(moment_2),
            max_moment_2: None,
        };
        Ok((
            Tensor::from_primitive::<Flex>(param),
            AdamWState { momentum },
        ))
    }
}

impl Optimizer for OnePassAdamW {
    type State<const D: usize> = AdamWState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<D>, Option<Self::State<D>>) {
        match self.step_on_flex(lr, (tensor, grad, state)) {
            Ok((tensor, state)) => (tensor, Some(state)),
            Err(inputs) => {
                let (tensor, grad, state) = *inputs;
                self.upstream.step(lr, tensor, grad, state)
            }
        }
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &Device) -> Self::State<D> {
        <AdamW as Optimizer>::to_device(state, device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;

    /// Four steps of both optimizers on flex from the same weights and gradients, with and
    /// without weight decay, on a parameter one thread updates and on one shared out between
    /// the threads: the same parameters and moments, to the bit.
    #[test]
    fn the_one_pass_adamw_step_matches_burns() {
        let device = Device::flex();
        for (weight_decay, shape) in [(0.05, [3, 5]), (0.0, [7, 9]), (0.01, [300, 300])] {
            let one_pass = OnePassAdamW::new(1e-8, weight_decay);
            let upstream = AdamWConfig::new()
                .with_epsilon(1e-8)
                .with_weight_decay(weight_decay)
                .build();
            let start = Tensor::<2>::random(shape, Distribution::Normal(0.0, 1.0), &device);
            let (mut ours, mut theirs) = (start.clone(), start);
            let (mut our_state, mut their_state) = (None, None);
            for step in 0..4 {
                let grad = Tensor::<2>::random(shape, Distribution::Normal(0.0, 0.1), &device);
                let lr = 1e-3 * (step + 1) as f64;
                let inputs = (ours, grad.clone(), our_state);
                let Ok((param, state)) = one_pass.step_on_flex(lr, inputs) else {
                    panic!("flex's f32 tensors were not updated in one pass");
                };
                (ours, our_state) = (param, Some(state));
                (theirs, their_state) = upstream.step(lr, theirs, grad, their_state);
                let case = format!("weight decay {weight_decay}, {shape:?}, step {step}");
                let (a, b) = (our_state.as_ref().unwrap(), their_state.as_ref().unwrap());
                assert_eq!(a.momentum.time, b.momentum.time, "{case}");
                for (name, a, b) in [
                    ("parameter", &ours, &theirs),
                    ("first moment", &a.momentum.moment_1, &b.momentum.moment_1),
                    ("second moment", &a.momentum.moment_2, &b.momentum.moment_2),
                ] {
                    let bits = |t: &Tensor<2>| -> Vec<u32> {
                        t.to_data().iter::<f32>().map(f32::to_bits).collect()
                    };
                    assert!(bits(a) == bits(b), "{case}: the {name}s differ");
                }
            }
        }
    }
}
