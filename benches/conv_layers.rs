//! ResNet-18's convolutions one shape at a time on flex, so that a change to a convolution
//! kernel can be timed where it acts and set beside PyTorch's same convolutions
//! (`bench/pytorch_conv_layers.py` prints the same lines):
//!
//! ```text
//! cargo bench --bench conv_layers -- [BATCH] [ROUNDS]
//! ```
//!
//! For each shape (the 7×7 stem, the three 3×3 convolutions of stride 2, one 3×3 of stride 1
//! per stage), the median over ROUNDS (10) of a forward pass alone and of a training pass:
//! forward, then the gradients of the weights and (except the stem, whose input is the photo)
//! of the input. No bias, batch BATCH (16), random values.

use std::time::Instant;

use burn::tensor::module::conv2d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Distribution, Tensor};
use catdog::device::{CpuBackend, cpu_backend};

/// ResNet-18's convolutions at 224 px: input channels, output channels, input side, kernel
/// side, stride, padding.
const SHAPES: [[usize; 6]; 8] = [
    [3, 64, 224, 7, 2, 3],
    [64, 128, 56, 3, 2, 1],
    [128, 256, 28, 3, 2, 1],
    [256, 512, 14, 3, 2, 1],
    [64, 64, 56, 3, 1, 1],
    [128, 128, 28, 3, 1, 1],
    [256, 256, 14, 3, 1, 1],
    [512, 512, 7, 3, 1, 1],
];

/// The median of `times`, as PyTorch's side takes it (the mean of the middle two).
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    catdog::numbers::median(&times)
}

/// Milliseconds `f` took.
fn timed(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` adds `--bench`; the numbers are the caller's.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .map(|arg| {
            arg.parse().unwrap_or_else(|_| {
                panic!("usage: conv_layers [BATCH] [ROUNDS]; {arg:?} is not a number")
            })
        })
        .collect();
    let batch = numbers.first().copied().unwrap_or(16);
    let rounds = numbers.get(1).copied().unwrap_or(10).max(1);
    let backend = cpu_backend(CpuBackend::Flex);
    println!(
        "{}, batch {batch}, median of {rounds} rounds",
        backend.device_name
    );
    let device = backend.device;
    let autodiff = device.clone().autodiff();
    let random = |dims: [usize; 4], on: &burn::tensor::Device| {
        Tensor::<4>::random(dims, Distribution::Default, on)
    };
    for [c_in, c_out, side, kernel, stride, padding] in SHAPES {
        let options = ConvOptions::new([stride; 2], [padding; 2], [1, 1], 1);
        let (x_dims, w_dims) = ([batch, c_in, side, side], [c_out, c_in, kernel, kernel]);
        let (x, weight) = (random(x_dims, &device), random(w_dims, &device));
        let forward = || {
            let y = conv2d(x.clone(), weight.clone(), None, options.clone());
            y.into_data();
        };
        // The stem's input is the photo, which needs no gradient.
        let input_grad = c_in > 3;
        let x_ad = random(x_dims, &autodiff);
        let x_ad = if input_grad {
            x_ad.require_grad()
        } else {
            x_ad
        };
        let w_ad = random(w_dims, &autodiff).require_grad();
        let side_out = (side + 2 * padding - kernel) / stride + 1;
        let dy = random([batch, c_out, side_out, side_out], &autodiff);
        let train = || {
            let y = conv2d(x_ad.clone(), w_ad.clone(), None, options.clone());
            let grads = (y * dy.clone()).sum().backward();
            w_ad.grad(&grads).expect("a weight gradient").into_data();
            if input_grad {
                x_ad.grad(&grads).expect("an input gradient").into_data();
            }
        };
        // One untimed round first: buffers, and Winograd's kept state.
        let (mut forward_ms, mut train_ms) = (Vec::new(), Vec::new());
        for round in 0..=rounds {
            let (f, t) = (timed(forward), timed(train));
            if round > 0 {
                forward_ms.push(f);
                train_ms.push(t);
            }
        }
        let (forward_ms, train_ms) = (median(forward_ms), median(train_ms));
        println!(
            "{c_in}->{c_out} {side}px k{kernel} s{stride}: forward {forward_ms:.2} ms, \
             training {train_ms:.2} ms"
        );
    }
}
