//! A pretrained network's new classifier fitted alone (`catdog train --epochs 0`): the
//! classes' logits as the best linear reading of what ImageNet's network already sees in the
//! training photos, with no training step. Multinomial logistic regression with an L2
//! penalty, solved on the host.

/// A linear layer's weights, as burn's `Linear` holds them: `weight[f * classes + c]` for
/// feature `f` and class `c`, and one bias per class.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearFit {
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

impl LinearFit {
    /// The mean cross-entropy of the layer's answers for `rows` against `labels`, and how many
    /// of them it gets right.
    pub fn loss_and_correct(&self, rows: &[Vec<f32>], labels: &[usize]) -> (f64, usize) {
        let weight: Vec<f64> = self.weight.iter().map(|&w| f64::from(w)).collect();
        let bias: Vec<f64> = self.bias.iter().map(|&b| f64::from(b)).collect();
        let mut logits = vec![0.0; bias.len()];
        let mut loss = 0.0;
        let mut correct = 0;
        for (row, &label) in rows.iter().zip(labels) {
            let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let log_total = logits_into(&weight, &bias, &row, &mut logits);
            loss += log_total - logits[label];
            let best = (0..logits.len()).max_by(|&a, &b| logits[a].total_cmp(&logits[b]));
            correct += usize::from(best == Some(label));
        }
        (loss / rows.len().max(1) as f64, correct)
    }
}

/// The logits of `row` into `logits` (one per class, `weight` laid out as [`LinearFit`]'s),
/// returning the log of the sum of their exponentials.
fn logits_into(weight: &[f64], bias: &[f64], row: &[f64], logits: &mut [f64]) -> f64 {
    let classes = bias.len();
    logits.copy_from_slice(bias);
    for (f, &v) in row.iter().enumerate() {
        for (logit, w) in logits
            .iter_mut()
            .zip(&weight[f * classes..(f + 1) * classes])
        {
            *logit += v * w;
        }
    }
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    max + logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln()
}

/// Gradient steps at most; a fit on a few hundred photos' features is done in a few hundred.
const MAX_STEPS: usize = 20_000;

/// The gradient's size, relative to the weights', at which the fit stops.
const TOLERANCE: f64 = 1e-6;

/// The linear layer minimising the mean cross-entropy of `features` (one row per photo, all of
/// one length) against `labels` (each below `classes`), plus `l2 / 2` times the sum of the
/// squared weights (not the biases). The problem is convex, and its answers (the differences
/// between logits) depend on the photos alone, not on any starting point or seed.
///
/// Nesterov's accelerated gradient descent on features centred on their mean, with the step
/// and momentum set from the largest eigenvalue of their covariance (the loss's curvature is
/// at most half of it, plus `l2`), until the gradient is a millionth of the weights' size or
/// [`MAX_STEPS`] have been taken. `stop` is asked first and every hundred steps; `None` when it
/// says so.
pub fn fit_linear(
    features: &[Vec<f32>],
    labels: &[usize],
    classes: usize,
    l2: f64,
    stop: &dyn Fn() -> bool,
) -> Option<LinearFit> {
    assert!(l2 > 0.0, "the penalty makes the fit unique");
    assert_eq!(features.len(), labels.len(), "one label per photo");
    let n = features.len();
    let dims = features.first().map_or(0, Vec::len);
    if n == 0 || dims == 0 || classes == 0 {
        return Some(LinearFit {
            weight: vec![0.0; dims * classes],
            bias: vec![0.0; classes],
        });
    }
    let mean: Vec<f64> = (0..dims)
        .map(|f| features.iter().map(|row| f64::from(row[f])).sum::<f64>() / n as f64)
        .collect();
    let x: Vec<Vec<f64>> = features
        .iter()
        .map(|row| {
            row.iter()
                .zip(&mean)
                .map(|(&v, m)| f64::from(v) - m)
                .collect()
        })
        .collect();
    // Curvature of the mean cross-entropy: at most ½·λmax(XᵀX/n) for the weights (centred
    // features) and ½ for the biases.
    let smoothness = 0.5 * largest_eigenvalue(&x).max(1.0) + l2;
    let step = 1.0 / smoothness;
    let condition = smoothness / l2;
    let momentum = (condition.sqrt() - 1.0) / (condition.sqrt() + 1.0);

    // `theta`: the last step's point; `look`: where the next gradient is taken, past it by
    // the momentum.
    let size = dims * classes + classes;
    let mut theta = vec![0.0f64; size];
    let mut look = theta.clone();
    let mut gradient = vec![0.0f64; size];
    for taken in 0..MAX_STEPS {
        if taken % 100 == 0 && stop() {
            return None;
        }
        gradient_at(&x, labels, classes, l2, &look, &mut gradient);
        let norm = gradient.iter().map(|g| g * g).sum::<f64>().sqrt();
        let scale = theta.iter().map(|t| t * t).sum::<f64>().sqrt().max(1.0);
        if norm <= TOLERANCE * scale {
            theta.copy_from_slice(&look);
            break;
        }
        for i in 0..size {
            let next = look[i] - step * gradient[i];
            look[i] = next + momentum * (next - theta[i]);
            theta[i] = next;
        }
    }
    let (weight, bias) = theta.split_at(dims * classes);
    // Back from centred features: b − μᵀW.
    let bias = (0..classes)
        .map(|c| {
            bias[c]
                - (0..dims)
                    .map(|f| mean[f] * weight[f * classes + c])
                    .sum::<f64>()
        })
        .map(|b| b as f32)
        .collect();
    Some(LinearFit {
        weight: weight.iter().map(|&w| w as f32).collect(),
        bias,
    })
}

/// The gradient of the penalised mean cross-entropy at `theta` (weights, then biases).
fn gradient_at(
    x: &[Vec<f64>],
    labels: &[usize],
    classes: usize,
    l2: f64,
    theta: &[f64],
    gradient: &mut [f64],
) {
    let dims = x[0].len();
    let (weight, bias) = theta.split_at(dims * classes);
    let (weight_grad, bias_grad) = gradient.split_at_mut(dims * classes);
    for (g, w) in weight_grad.iter_mut().zip(weight) {
        *g = l2 * w;
    }
    bias_grad.fill(0.0);
    let share = 1.0 / x.len() as f64;
    let mut logits = vec![0.0f64; classes];
    for (row, &label) in x.iter().zip(labels) {
        let log_total = logits_into(weight, bias, row, &mut logits);
        // Softmax minus the one-hot label, per photo's share of the mean.
        for (c, logit) in logits.iter_mut().enumerate() {
            let p = (*logit - log_total).exp();
            *logit = (p - f64::from(u8::from(c == label))) * share;
        }
        for (f, &v) in row.iter().enumerate() {
            let g = &mut weight_grad[f * classes..(f + 1) * classes];
            for (g, d) in g.iter_mut().zip(&logits) {
                *g += v * d;
            }
        }
        for (g, d) in bias_grad.iter_mut().zip(&logits) {
            *g += d;
        }
    }
}

/// The largest eigenvalue of `XᵀX / n`, by power iteration (an estimate from below, raised by
/// a tenth to stay on the safe side of it).
fn largest_eigenvalue(x: &[Vec<f64>]) -> f64 {
    let dims = x[0].len();
    let mut v = vec![1.0 / (dims as f64).sqrt(); dims];
    let mut value = 0.0;
    for _ in 0..50 {
        let mut next = vec![0.0f64; dims];
        for row in x {
            let dot: f64 = row.iter().zip(&v).map(|(a, b)| a * b).sum();
            for (n, r) in next.iter_mut().zip(row) {
                *n += dot * r;
            }
        }
        let norm = next.iter().map(|a| a * a).sum::<f64>().sqrt();
        if norm == 0.0 {
            return 0.0;
        }
        value = norm / x.len() as f64;
        v = next.into_iter().map(|a| a / norm).collect();
    }
    value * 1.1
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO_ON: &dyn Fn() -> bool = &|| false;

    /// Three classes told apart by which of three features is largest, over a common offset
    /// (which centring must take out and the bias put back): every photo's logits favour its
    /// class, and the fit is where the penalised loss's gradient vanishes.
    #[test]
    fn a_fit_reads_the_classes_from_their_features() {
        let mut features = Vec::new();
        let mut labels = Vec::new();
        for i in 0..30 {
            let class = i % 3;
            let wobble = (i as f32 * 0.37).sin() * 0.3;
            let mut row = vec![5.0 + wobble, 5.0 - wobble, 5.0, 5.0 + 0.1 * wobble];
            row[class] += 1.0;
            features.push(row);
            labels.push(class);
        }
        let fit = fit_linear(&features, &labels, 3, 0.01, GO_ON).unwrap();
        assert_eq!((fit.weight.len(), fit.bias.len()), (12, 3));
        let (loss, correct) = fit.loss_and_correct(&features, &labels);
        assert_eq!(correct, 30);
        assert!(loss > 0.0 && loss < 0.5, "{loss}");
        // The gradient of the penalised loss at the fit, on the uncentred features.
        let x: Vec<Vec<f64>> = features
            .iter()
            .map(|r| r.iter().map(|&v| f64::from(v)).collect())
            .collect();
        let theta: Vec<f64> = fit
            .weight
            .iter()
            .chain(&fit.bias)
            .map(|&v| f64::from(v))
            .collect();
        let mut gradient = vec![0.0; theta.len()];
        gradient_at(&x, &labels, 3, 0.01, &theta, &mut gradient);
        let largest = gradient.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        assert!(largest < 1e-4, "gradient {gradient:?}");
    }

    /// A stronger penalty gives smaller weights, so less sure answers.
    #[test]
    fn a_larger_penalty_gives_smaller_weights() {
        let features = vec![
            vec![0.0, 1.0],
            vec![1.0, 0.0],
            vec![0.2, 0.9],
            vec![0.8, 0.1],
        ];
        let labels = [0, 1, 0, 1];
        let size = |l2| {
            let fit = fit_linear(&features, &labels, 2, l2, GO_ON).unwrap();
            fit.weight.iter().map(|w| w * w).sum::<f32>()
        };
        assert!(size(1.0) < size(0.01), "{} vs {}", size(1.0), size(0.01));
        assert!(size(1.0) > 0.0);
        // Asked to stop, it stops.
        assert_eq!(fit_linear(&features, &labels, 2, 0.01, &|| true), None);
    }
}
