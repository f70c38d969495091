//! How the learning rate changes over a run, step by step.

use serde::{Deserialize, Serialize};

/// How the learning rate changes over a run; [`help`](Self::help) says how each one does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    #[default]
    Cosine,
    OneCycle,
    Constant,
}

impl Schedule {
    pub const ALL: [Schedule; 3] = [Schedule::Cosine, Schedule::OneCycle, Schedule::Constant];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Cosine => "cosine",
            Schedule::OneCycle => "one-cycle",
            Schedule::Constant => "constant",
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Schedule::Cosine => {
                "Warm up linearly over the first 5 % of steps, then decay to zero along a cosine"
            }
            Schedule::OneCycle => {
                "PyTorch's OneCycleLR: from peak/25 up to the peak along a cosine over the first \
                 30 % of steps, then down to peak/250,000 along a cosine"
            }
            Schedule::Constant => "The same learning rate throughout",
        }
    }

    /// The learning rate for step `step` (from 0) of `total`, peaking at `peak`.
    pub fn learning_rate(self, peak: f64, step: usize, total: usize) -> f64 {
        match self {
            Schedule::Constant => peak,
            Schedule::Cosine => {
                let warmup = (total / 20).max(1);
                if step < warmup {
                    peak * (step + 1) as f64 / warmup as f64
                } else {
                    let progress = (step - warmup) as f64 / (total - warmup).max(1) as f64;
                    cosine_between(peak, 0.0, progress)
                }
            }
            Schedule::OneCycle => {
                let start = peak / 25.0;
                let end = start / 1e4;
                // The last step of the rise, as OneCycleLR counts it.
                let peak_step = (0.3 * total as f64 - 1.0).max(1.0);
                let step = step as f64;
                if step <= peak_step {
                    cosine_between(start, peak, step / peak_step)
                } else {
                    let fall = (total as f64 - 1.0 - peak_step).max(1.0);
                    cosine_between(peak, end, ((step - peak_step) / fall).min(1.0))
                }
            }
        }
    }
}

/// `from` at `progress` 0, `to` at 1, along half a cosine.
fn cosine_between(from: f64, to: f64, progress: f64) -> f64 {
    to + (from - to) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cycle_rises_to_the_peak_at_30_percent_then_falls_as_pytorch_does() {
        let (peak, total) = (2e-3, 1000);
        let rate = |step| Schedule::OneCycle.learning_rate(peak, step, total);
        assert!((rate(0) - peak / 25.0).abs() < 1e-12);
        assert!((rate(299) - peak).abs() < 1e-12, "the peak is at step 299");
        assert!((rate(total - 1) - peak / 25.0 / 1e4).abs() < 1e-12);
        let rates: Vec<f64> = (0..total).map(rate).collect();
        assert!(rates[..300].windows(2).all(|w| w[0] < w[1]));
        assert!(rates[299..].windows(2).all(|w| w[0] > w[1]));
        // Half-way down the cosine, half-way between the peak and the end.
        let middle = 299 + (total - 1 - 299) / 2;
        assert!((rate(middle) - (peak + peak / 25.0 / 1e4) / 2.0).abs() < 1e-9);
    }
}
