//! AdamW's update of one parameter in one pass over its values, on all threads.
//!
//! burn-optim 0.22.1's `AdamW` composes each step from fifteen tensor operations (the two
//! moments, their bias corrections, the square root, the weight decay and the update), every
//! one a pass over parameter-sized tensors: for ResNet-18's 11.7 M weights about 1.4 GB read
//! and written a step, the same whatever the batch. Here each value goes through the same
//! operations, in the same order and in the same precision (f32), so that the results are
//! the floats burn-optim's operations on flex give; catdog's
//! `the_one_pass_adamw_step_matches_burns` compares them.

use burn_backend::DType;
use burn_std::Bytes;
use rayon::prelude::*;

use super::elementwise::{CHUNK, PARALLEL_FROM, zeroed};
use crate::{FlexTensor, Layout};

/// One step's constants, as burn-optim's `AdamWConfig` names them.
#[derive(Clone, Copy, Debug)]
pub struct AdamWStep {
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    pub weight_decay: f32,
    /// This step's learning rate.
    pub lr: f64,
    /// This step's number, 1 for the first.
    pub time: i32,
}

/// The parameter after one step and the two moments it leaves, from the parameter `param`,
/// its gradient `grad` and the moments of the step before (`None` at the first step). The
/// parameter and moments are updated in place where nothing else holds them.
///
/// # Panics
/// Where a tensor is not f32, or the tensors' numbers of values differ.
pub fn adamw_step(
    param: FlexTensor,
    grad: FlexTensor,
    moments: Option<(FlexTensor, FlexTensor)>,
    step: &AdamWStep,
) -> (FlexTensor, FlexTensor, FlexTensor) {
    let all = [Some(&param), Some(&grad), moments.as_ref().map(|m| &m.0)];
    let all = all.into_iter().chain([moments.as_ref().map(|m| &m.1)]);
    for tensor in all.flatten() {
        assert_eq!(tensor.dtype(), DType::F32, "adamw_step: f32 tensors only");
    }
    let shape = param.layout().shape().clone();
    let len = shape.num_elements();
    let grad = grad.into_contiguous();
    let g: &[f32] = grad.storage();
    assert_eq!(g.len(), len, "adamw_step: the gradient's shape differs from the parameter's");
    let mut param = param.into_contiguous();
    let (mut m1, mut m2, first) = match moments {
        Some((m1, m2)) => (m1.into_contiguous(), m2.into_contiguous(), false),
        // Written before being read: any values will do.
        None => (zeros(&shape), zeros(&shape), true),
    };
    let p: &mut [f32] = param.storage_mut();
    let (m1_values, m2_values): (&mut [f32], &mut [f32]) = (m1.storage_mut(), m2.storage_mut());
    assert!(
        m1_values.len() == len && m2_values.len() == len,
        "adamw_step: the moments' shapes differ from the parameter's"
    );
    let update = Update::new(step);
    let run = |(((p, m1), m2), g): (((&mut [f32], &mut [f32]), &mut [f32]), &[f32])| {
        if first {
            update.first(p, m1, m2, g)
        } else {
            update.next(p, m1, m2, g)
        }
    };
    if len >= PARALLEL_FROM {
        p.par_chunks_mut(CHUNK)
            .zip(m1_values.par_chunks_mut(CHUNK))
            .zip(m2_values.par_chunks_mut(CHUNK))
            .zip(g.par_chunks(CHUNK))
            .for_each(run);
    } else {
        run((((p, m1_values), m2_values), g));
    }
    (param, m1, m2)
}

fn zeros(shape: &burn_std::Shape) -> FlexTensor {
    let values = zeroed(shape.num_elements(), 0f32);
    FlexTensor::new(
        Bytes::from_elems(values),
        Layout::contiguous(shape.clone()),
        DType::F32,
    )
}

/// The step's scalars, rounded to f32 as burn's scalar operations round them.
struct Update {
    beta_1: f32,
    beta_2: f32,
    factor_1: f32,
    factor_2: f32,
    correction_1: f32,
    correction_2: f32,
    epsilon: f32,
    /// `1 − lr·weight_decay`, `None` where the weight decay is zero (upstream then leaves the
    /// parameter as it is rather than multiplying by 1).
    kept: Option<f32>,
    lr: f32,
}

impl Update {
    fn new(step: &AdamWStep) -> Self {
        let decay_rate = step.lr * step.weight_decay as f64;
        Update {
            beta_1: step.beta_1,
            beta_2: step.beta_2,
            factor_1: 1.0 - step.beta_1,
            factor_2: 1.0 - step.beta_2,
            correction_1: 1f32 - step.beta_1.powi(step.time),
            correction_2: 1f32 - step.beta_2.powi(step.time),
            epsilon: step.epsilon,
            kept: (decay_rate != 0.0).then_some((1.0 - decay_rate) as f32),
            lr: step.lr as f32,
        }
    }

    /// The parameter's new value from its moments (already updated).
    #[inline(always)]
    fn param(&self, p: f32, m1: f32, m2: f32) -> f32 {
        let delta = (m1 / self.correction_1) / ((m2 / self.correction_2).sqrt() + self.epsilon);
        let decayed = match self.kept {
            Some(kept) => p * kept,
            None => p,
        };
        decayed - delta * self.lr
    }

    /// The first step: the moments start from the gradient alone.
    fn first(&self, p: &mut [f32], m1: &mut [f32], m2: &mut [f32], g: &[f32]) {
        let n = p.len();
        let (m1, m2, g) = (&mut m1[..n], &mut m2[..n], &g[..n]);
        for i in 0..n {
            m1[i] = g[i] * self.factor_1;
            m2[i] = g[i] * g[i] * self.factor_2;
            p[i] = self.param(p[i], m1[i], m2[i]);
        }
    }

    /// A later step: `m1 = m1·β₁ + g·(1 − β₁)`, `m2 = m2·β₂ + g²·(1 − β₂)`.
    fn next(&self, p: &mut [f32], m1: &mut [f32], m2: &mut [f32], g: &[f32]) {
        let n = p.len();
        let (m1, m2, g) = (&mut m1[..n], &mut m2[..n], &g[..n]);
        for i in 0..n {
            m1[i] = m1[i] * self.beta_1 + g[i] * self.factor_1;
            m2[i] = m2[i] * self.beta_2 + g[i] * g[i] * self.factor_2;
            p[i] = self.param(p[i], m1[i], m2[i]);
        }
    }
}
