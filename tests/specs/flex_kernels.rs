//! The vendored burn-flex's own kernels (vendor/burn-flex/PATCHED.md names the test of each):
//! convolution, max-pool and batch norm, their gradients, and the fused convolution → pool →
//! ReLU, convolution → shortcut → clamp, batch norm → pool → ReLU and batch norm → shortcut →
//! clamp, and element-wise
//! operations on all threads, each against burn's unpatched ndarray backend; and a kernel
//! larger than its padded input refused.

use burn::tensor::{Device, Tensor};
use catdog::device::{CpuBackend, cpu_backend};

/// Random weights for a sum over an output, drawn once and reused on the second backend, so
/// that gradients of `sum(output · weights)` weigh every output element differently.
#[derive(Default)]
struct OutputWeights(Option<burn::tensor::TensorData>);

impl OutputWeights {
    fn weighted_sum<const D: usize>(&mut self, output: Tensor<D>) -> Tensor<1> {
        let weights = self
            .0
            .get_or_insert_with(|| random_data(output.dims(), 1000))
            .clone();
        let device = output.device();
        (output * Tensor::from_data(weights, &device)).sum()
    }
}

/// Values uniform in [−1, 1) from their own generator (SplitMix64 from `seed`), not flex's
/// shared one: `dropout_acts_while_training_only` reseeds that while other tests draw from it
/// on other threads, which made a case's data change from run to run, and with it whether
/// the fused test's pooled outputs held both zeros and positive values.
fn random_data<const D: usize>(shape: [usize; D], seed: u64) -> burn::tensor::TensorData {
    let mut state = seed;
    let values = (0..shape.iter().product::<usize>())
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 40) as f32 / (1 << 23) as f32 - 1.0
        })
        .collect::<Vec<_>>();
    burn::tensor::TensorData::new(values, shape)
}

/// `[2, 3, 6, 6]` whole numbers in 0..4: most 2×2 windows hold ties, which must pick the
/// same maximum.
fn tied_data() -> burn::tensor::TensorData {
    tied_data_shaped([2, 3, 6, 6])
}

/// Values of four levels only, as [`tied_data`], in any shape.
fn tied_data_shaped(shape: [usize; 4]) -> burn::tensor::TensorData {
    burn::tensor::TensorData::new(
        (0..shape.iter().product::<usize>())
            .map(|i| ((i * 7 + i / 5) % 4) as f32)
            .collect::<Vec<_>>(),
        shape,
    )
}

/// `data` on flex as its primitive, for the tests that call burn-flex's operations directly.
fn flex_primitive<const D: usize>(data: &burn::tensor::TensorData) -> burn_flex::FlexTensor {
    Tensor::<D>::from_data(data.clone(), &Device::flex())
        .try_into_primitive::<burn::backend::Flex>()
        .unwrap()
}

/// Runs `compute` on flex and on ndarray and asserts that all its results agree. catdog's
/// burn-flex computes convolutions, batch norm and their gradients itself
/// (vendor/burn-flex/PATCHED.md); ndarray's are burn's unpatched ones.
fn assert_flex_matches_ndarray(
    case: &str,
    compute: impl Fn(&Device, &mut OutputWeights) -> Vec<(&'static str, burn::tensor::TensorData)>,
) {
    let mut weights = OutputWeights::default();
    let expected = compute(
        &cpu_backend(CpuBackend::Ndarray).device.autodiff(),
        &mut weights,
    );
    let actual = compute(&Device::flex().autodiff(), &mut weights);
    for ((name, actual), (_, expected)) in actual.iter().zip(&expected) {
        assert_eq!(actual.shape(), expected.shape(), "{name} shape, {case}");
        let (a, e) = (
            actual.try_to_vec::<f32>().unwrap(),
            expected.try_to_vec::<f32>().unwrap(),
        );
        // A NaN anywhere makes `worst` NaN, which fails the comparison below. Relative to
        // the value where it exceeds the tensor's root mean square (and 1): Winograd's
        // rounding grows with the terms it sums, so with the output's scale, not with each
        // value, and a weight gradient over thousands of positions is large, and its
        // rounding with it.
        let rms = (e.iter().map(|e| e * e).sum::<f32>() / e.len().max(1) as f32).sqrt();
        let worst = a
            .iter()
            .zip(&e)
            .map(|(a, e)| (a - e).abs() / e.abs().max(rms).max(1.0))
            .fold(
                0.0,
                |worst: f32, d| if d.is_nan() { d } else { worst.max(d) },
            );
        assert!(worst < 1e-4, "{name} differs by {worst}, {case}");
    }
}

/// Element-wise operations on tensors long enough for flex to share them out between its
/// threads (vendor/burn-flex/src/ops/patch/elementwise.rs), at a length that is no multiple
/// of its chunks: ReLU and a scalar product of a tensor nothing else holds (written in place)
/// and of one still held (written anew), ReLU's gradient, and a sum.
#[test]
fn flex_element_wise_operations_on_all_threads_match_ndarray() {
    use burn::tensor::activation::relu;

    let len = 150_001;
    let (x, y) = (random_data([len], 10), random_data([len], 11));
    assert_flex_matches_ndarray("element-wise, 150,001 values", |device, weights| {
        let fresh = |data: &burn::tensor::TensorData| Tensor::<1>::from_data(data.clone(), device);
        let held = fresh(&x);
        let x_grad = fresh(&x).require_grad();
        let grads = weights.weighted_sum(relu(x_grad.clone())).backward();
        vec![
            ("relu in place", relu(fresh(&x)).into_data()),
            ("relu anew", relu(held.clone()).into_data()),
            ("scaled in place", (fresh(&x) * 3.5).into_data()),
            ("scaled anew", (held.clone() * -0.25).into_data()),
            ("sum", (held.clone() + fresh(&y)).into_data()),
            ("relu gradient", x_grad.grad(&grads).unwrap().into_data()),
            ("held unchanged", held.into_data()),
        ]
    });
    // A binary operation without a vector kernel on two tensors nothing else holds: written
    // into the first, zipped on all threads (ReLU's gradient, as flex computes it).
    let gradient = |out: f32, g: f32| if out > 0.0 { g } else { 0.0 };
    let zipped = burn_flex::ops::binary::binary_op(
        flex_primitive::<1>(&x),
        flex_primitive::<1>(&y),
        gradient,
        |out: f64, g: f64| if out > 0.0 { g } else { 0.0 },
        None,
    );
    let zipped = Tensor::<1>::from_primitive::<burn::backend::Flex>(zipped).into_data();
    let expected: Vec<f32> = x
        .iter::<f32>()
        .zip(y.iter::<f32>())
        .map(|(out, g)| gradient(out, g))
        .collect();
    assert_eq!(zipped.try_to_vec::<f32>().unwrap(), expected);
}

/// A kernel larger than the padded input is a shape error: flex panics saying so (as burn's
/// shape checks do), where its output size used to wrap to 2⁶⁴ − 1 and come back as a
/// tensor claiming that shape.
#[test]
fn flex_refuses_a_kernel_larger_than_the_padded_input() {
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;
    let device = Device::flex();
    let x = Tensor::<4>::ones([1, 1, 1, 1], &device);
    let w = Tensor::<4>::ones([1, 1, 3, 3], &device);
    let options = ConvOptions::new([1, 1], [0, 0], [1, 1], 1);
    let result = std::panic::catch_unwind(|| conv2d(x, w, None, options).dims());
    let panic = result.expect_err("no tensor of 2⁶⁴ − 1 rows");
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains("the kernel reaches 3 along axis 2, more than the padded input's 1"),
        "{message}"
    );
}

/// The model's 3×3 layers, and strides, uneven padding, dilation, groups and depthwise
/// convolutions; more images than threads (each thread's patch buffer then serves several) and no bias.
#[test]
fn flex_convolution_and_its_gradients_match_ndarray() {
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;

    let same = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let uneven = ConvOptions {
        stride: [1, 2],
        padding: [(2, 0), (1, 2)],
        dilation: [1, 1],
        groups: 2,
    };
    let cases = [
        (
            [3, 4, 9, 8],
            [5, 4, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        ),
        (
            [2, 3, 11, 10],
            [4, 3, 3, 2],
            ConvOptions::new([2, 1], [1, 0], [1, 2], 1),
        ),
        ([2, 4, 8, 9], [6, 2, 3, 3], uneven),
        (
            [1, 2, 6, 6],
            [3, 2, 1, 1],
            ConvOptions::new([1, 1], [0, 0], [1, 1], 1),
        ),
        (
            [9, 3, 7, 5],
            [4, 3, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        ),
        // ResNet's stem (7×7, stride 2, padding 3) and a stride-2 3×3, rows wide enough (70
        // and 75 outputs) that the stride-2 patch copy runs in whole vectors and a remainder.
        (
            [2, 3, 9, 140],
            [4, 3, 7, 7],
            ConvOptions::new([2, 2], [3, 3], [1, 1], 1),
        ),
        (
            [2, 5, 6, 150],
            [3, 5, 3, 3],
            ConvOptions::new([2, 2], [1, 1], [1, 1], 1),
        ),
        // Deep enough for Winograd (forward with 16 input channels, input gradient with 17
        // output channels), given an image per thread: odd sizes, tasks of unequal numbers of
        // images, a one-row image, a deep image (on two threads one thread with two tasks), a
        // one-column image, 16 images (so that a
        // 16-thread machine takes that path too); batch 1 stays im2col's.
        ([3, 16, 9, 7], [17, 16, 3, 3], same.clone()),
        // ResNet-18's last layers in small: few tiles a thread (4 an image), 64 channels and
        // more.
        ([4, 64, 7, 7], [80, 64, 3, 3], same.clone()),
        ([2, 16, 1, 5], [16, 16, 3, 3], same.clone()),
        ([3, 128, 24, 23], [128, 128, 3, 3], same.clone()),
        ([2, 16, 5, 1], [16, 16, 3, 3], same.clone()),
        ([16, 16, 5, 6], [16, 16, 3, 3], same.clone()),
        ([1, 20, 4, 6], [16, 20, 3, 3], same.clone()),
        // Wide enough (24 tiles a row) that a block holds 3 of an image's 7 tile rows, both
        // by the 2 MB rule and by the 64 tiles a block takes at least: blocks of 3, 3 and 1.
        ([2, 128, 26, 95], [128, 128, 3, 3], same.clone()),
        // Small images and many channels, which Winograd's path takes a whole batch at a time,
        // output channels shared out (ResNet-18's 7×7 layers at batch 16): 72 output channels
        // in tasks of 48 and 24 (the input gradient's 96 in two of 48), odd sides; then three
        // images of one tile each, shared out unevenly for the output's transform.
        ([2, 96, 7, 5], [72, 96, 3, 3], same.clone()),
        ([3, 128, 4, 4], [96, 128, 3, 3], same.clone()),
        // Depthwise (one group per channel, vendor/burn-flex/src/ops/patch/depthwise.rs):
        // EfficientNet's 3×3 and 5×5, stride 1 and stride 2 padded as TensorFlow's "same"
        // (the extra pixel right and bottom); a dilated one with uneven strides and padding
        // on one image; and one without bias.
        (
            [3, 6, 9, 8],
            [6, 1, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 6),
        ),
        (
            [2, 5, 11, 10],
            [5, 1, 5, 5],
            ConvOptions {
                stride: [2, 2],
                padding: [(1, 2), (1, 2)],
                dilation: [1, 1],
                groups: 5,
            },
        ),
        (
            [1, 4, 7, 9],
            [4, 1, 3, 3],
            ConvOptions {
                stride: [2, 3],
                padding: [(0, 1), (2, 0)],
                dilation: [2, 1],
                groups: 4,
            },
        ),
        (
            [3, 3, 8, 8],
            [3, 1, 3, 3],
            ConvOptions {
                stride: [2, 2],
                padding: [(0, 1), (0, 1)],
                dilation: [1, 1],
                groups: 3,
            },
        ),
        // Rows wider than the 16 outputs the forward pass sums at a time, and not a multiple
        // of them: stride 1 (37 = 16 + 16 + 5) and stride 2 "same" (20 = 16 + 4).
        (
            [2, 3, 5, 37],
            [3, 1, 3, 3],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 3),
        ),
        (
            [1, 4, 6, 40],
            [4, 1, 5, 5],
            ConvOptions {
                stride: [2, 2],
                padding: [(1, 2), (1, 2)],
                dilation: [1, 1],
                groups: 4,
            },
        ),
        // Stride 1 without padding, and with uneven padding: the input gradient as the
        // forward pass of the output gradient padded by `k − 1 − pad`.
        (
            [1, 2, 7, 19],
            [2, 1, 3, 3],
            ConvOptions::new([1, 1], [0, 0], [1, 1], 2),
        ),
        (
            [2, 2, 6, 18],
            [2, 1, 3, 3],
            ConvOptions {
                stride: [1, 1],
                padding: [(0, 2), (2, 0)],
                dilation: [1, 1],
                groups: 2,
            },
        ),
        // A 2×7 kernel (the weight gradient's fallback for widths other than 3 and 5), and a
        // single row with stride 2 across only (the two-row forward pass's lone row).
        (
            [2, 3, 9, 12],
            [3, 1, 2, 7],
            ConvOptions::new([1, 1], [1, 3], [1, 1], 3),
        ),
        (
            [1, 2, 1, 20],
            [2, 1, 3, 3],
            ConvOptions::new([1, 2], [1, 1], [1, 1], 2),
        ),
        // 1×1 (EfficientNet's expansions and projections): read in place over several images
        // and two groups; with padding, through im2col.
        (
            [3, 4, 5, 7],
            [6, 2, 1, 1],
            ConvOptions::new([1, 1], [0, 0], [1, 1], 2),
        ),
        (
            [2, 3, 4, 4],
            [5, 3, 1, 1],
            ConvOptions::new([1, 1], [1, 1], [1, 1], 1),
        ),
        // Patch matrices larger than the 1 MB block im2col copies at a time, so that an image
        // takes several blocks of output rows, the last one short, with padding rows at the
        // top and bottom: the stem (60 output rows of 150, in blocks of 11) and two groups of
        // a stride-1 7×7 (41 rows of 500, in blocks of 2).
        (
            [2, 3, 120, 300],
            [4, 3, 7, 7],
            ConvOptions::new([2, 2], [3, 3], [1, 1], 1),
        ),
        (
            [1, 4, 41, 500],
            [4, 2, 7, 7],
            ConvOptions::new([1, 1], [3, 3], [1, 1], 2),
        ),
    ];
    for (i, (x_shape, w_shape, options)) in cases.into_iter().enumerate() {
        let with_bias = ![4, 8, 15].contains(&i);
        let seed = 3 * i as u64;
        let (x, w, bias) = (
            random_data(x_shape, seed),
            random_data(w_shape, seed + 1),
            random_data([w_shape[0]], seed + 2),
        );
        let case = format!("{x_shape:?} * {w_shape:?}, {options:?}, bias: {with_bias}");
        assert_flex_matches_ndarray(&case, |device, weights| {
            let x = Tensor::<4>::from_data(x.clone(), device).require_grad();
            let w = Tensor::<4>::from_data(w.clone(), device).require_grad();
            let b = Tensor::<1>::from_data(bias.clone(), device).require_grad();
            let y = conv2d(
                x.clone(),
                w.clone(),
                with_bias.then(|| b.clone()),
                options.clone(),
            );
            let grads = weights.weighted_sum(y.clone()).backward();
            let mut results = vec![
                ("y", y.into_data()),
                ("dx", x.grad(&grads).unwrap().into_data()),
                ("dw", w.grad(&grads).unwrap().into_data()),
            ];
            if with_bias {
                results.push(("db", b.grad(&grads).unwrap().into_data()));
            }
            results
        });
    }
}

/// flex's own max-pools at inference and with their gradient: SmallCnn's 2×2
/// (vendor/burn-flex/src/ops/patch/pool.rs) with odd sizes, batch 1 and ties, and a pooling
/// it leaves to upstream (ceil mode); ResNet's 3×3 of stride 2 with padding 1 and other
/// windows (pool_window.rs), odd sizes, ties, uneven and no padding, rows of 16 windows and
/// more; and a dilated one, upstream's.
#[test]
fn flex_max_pool_and_its_gradient_match_ndarray() {
    use burn::tensor::module::max_pool2d;
    use burn::tensor::ops::MaxPoolOptions;

    let two = ([2, 2], [2, 2], [0, 0], 1);
    let cases = [
        (random_data([3, 4, 8, 6], 0), two, false),
        (random_data([2, 3, 7, 9], 1), two, false),
        (random_data([1, 2, 2, 2], 2), two, false),
        (random_data([1, 1, 5, 4], 3), two, false),
        (tied_data(), two, false),
        (random_data([2, 2, 5, 5], 4), two, true),
        (
            random_data([2, 3, 12, 12], 5),
            ([3, 3], [2, 2], [1, 1], 1),
            false,
        ),
        (
            random_data([1, 2, 9, 7], 6),
            ([3, 3], [2, 2], [1, 1], 1),
            false,
        ),
        (tied_data(), ([3, 3], [2, 2], [1, 1], 1), false),
        (tied_data(), ([3, 2], [1, 2], [1, 0], 1), false),
        (
            random_data([2, 2, 7, 8], 7),
            ([3, 3], [1, 1], [0, 0], 1),
            false,
        ),
        (
            random_data([1, 3, 6, 9], 8),
            ([2, 4], [3, 1], [1, 2], 1),
            false,
        ),
        (
            random_data([1, 2, 9, 9], 9),
            ([3, 3], [2, 2], [1, 1], 2),
            false,
        ),
        // Rows wide enough for 16 windows side by side (and a remainder one at a time).
        (
            random_data([1, 2, 5, 75], 10),
            ([3, 3], [2, 2], [1, 1], 1),
            false,
        ),
        (
            tied_data_shaped([1, 2, 4, 70]),
            ([3, 3], [2, 2], [1, 1], 1),
            false,
        ),
        (
            tied_data_shaped([1, 1, 4, 40]),
            ([2, 3], [1, 1], [0, 1], 1),
            false,
        ),
    ];
    for (x, (kernel, stride, [pad_h, pad_w], dilation), ceil_mode) in cases {
        let case = format!(
            "{:?}, kernel {kernel:?}, stride {stride:?}, padding [{pad_h}, {pad_w}], \
             dilation {dilation}, ceil_mode {ceil_mode}",
            x.shape()
        );
        assert_flex_matches_ndarray(&case, |device, weights| {
            let options = MaxPoolOptions {
                kernel_size: kernel,
                stride,
                padding: [(pad_h, pad_h), (pad_w, pad_w)],
                dilation: [dilation, dilation],
                ceil_mode,
            };
            let pool = |x: Tensor<4>| max_pool2d(x, options.clone());
            let plain = pool(Tensor::<4>::from_data(x.clone(), device));
            let tracked = Tensor::<4>::from_data(x.clone(), device).require_grad();
            let y = pool(tracked.clone());
            let grads = weights.weighted_sum(y.clone()).backward();
            vec![
                ("y at inference", plain.into_data()),
                ("y", y.into_data()),
                ("dx", tracked.grad(&grads).unwrap().into_data()),
            ]
        });
    }
}

/// burn-flex's convolution → 2×2 max-pool → ReLU in one pass (what catdog's prediction runs
/// on flex, src/model/fused.rs) against the three apart on ndarray: Winograd's path (with 16
/// images too, so that a 16-thread machine takes it) and im2col's (3 or 20 input channels,
/// batch 1, no padding), with and without bias; a shape it does not take (odd output sides,
/// two groups) is left to the caller (`None`), not computed.
#[test]
fn flex_fused_convolution_pool_and_relu_match_ndarray() {
    use burn::backend::Flex;
    use burn::tensor::activation::relu;
    use burn::tensor::module::{conv2d, max_pool2d};
    use burn::tensor::ops::{ConvOptions, MaxPoolOptions};

    let same = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let valid = ConvOptions::new([1, 1], [0, 0], [1, 1], 1);
    let fused = |x: &burn::tensor::TensorData,
                 w: &burn::tensor::TensorData,
                 b: Option<&burn::tensor::TensorData>,
                 options: &ConvOptions<2>| {
        burn_flex::ops::conv2d_max_pool2x2_relu(
            flex_primitive::<4>(x),
            flex_primitive::<4>(w),
            b.map(flex_primitive::<1>),
            options,
        )
        .map(|y| Tensor::<4>::from_primitive::<Flex>(y).into_data())
    };
    let cases = [
        ([3, 16, 8, 6], [17, 16, 3, 3], same.clone(), true),
        ([16, 16, 4, 6], [16, 16, 3, 3], same.clone(), false),
        // Winograd's whole-batch path (small images, many channels).
        ([2, 64, 8, 4], [48, 64, 3, 3], same.clone(), true),
        ([2, 3, 10, 8], [5, 3, 3, 3], same.clone(), true),
        ([1, 20, 6, 4], [8, 20, 3, 3], same.clone(), true),
        ([2, 4, 10, 10], [6, 4, 3, 3], valid, false),
        // Past im2col's 1 MB block of patches: 200 output rows of 400 in blocks of 24, the
        // last of 8.
        ([1, 3, 200, 400], [4, 3, 3, 3], same.clone(), true),
    ];
    let ndarray = cpu_backend(CpuBackend::Ndarray).device;
    for (i, (x_shape, w_shape, options, with_bias)) in cases.into_iter().enumerate() {
        let case = format!("{x_shape:?} * {w_shape:?}, {options:?}, bias: {with_bias}");
        let seed = 3 * i as u64;
        let (x, w, b) = (
            random_data(x_shape, seed),
            random_data(w_shape, seed + 1),
            random_data([w_shape[0]], seed + 2),
        );
        let y = conv2d(
            Tensor::<4>::from_data(x.clone(), &ndarray),
            Tensor::<4>::from_data(w.clone(), &ndarray),
            with_bias.then(|| Tensor::<1>::from_data(b.clone(), &ndarray)),
            options.clone(),
        );
        let pool = MaxPoolOptions {
            kernel_size: [2, 2],
            stride: [2, 2],
            padding: [(0, 0), (0, 0)],
            dilation: [1, 1],
            ceil_mode: false,
        };
        let expected = relu(max_pool2d(y, pool)).into_data();
        let actual = fused(&x, &w, with_bias.then_some(&b), &options)
            .unwrap_or_else(|| panic!("not fused: {case}"));
        assert_eq!(actual.shape(), expected.shape(), "{case}");
        let (a, e) = (
            actual.try_to_vec::<f32>().unwrap(),
            expected.try_to_vec::<f32>().unwrap(),
        );
        for (a, e) in a.iter().zip(&e) {
            assert!(
                (a - e).abs() <= 1e-4 * e.abs().max(1.0),
                "{a} against {e}, {case}"
            );
        }
        assert!(e.contains(&0.0) && e.iter().any(|&v| v > 0.0), "{case}");
    }
    let (x, w) = (
        random_data([2, 3, 9, 8], 100),
        random_data([4, 3, 3, 3], 101),
    );
    assert!(fused(&x, &w, None, &same).is_none(), "odd output height");
    let (x, w) = (
        random_data([2, 4, 8, 8], 102),
        random_data([4, 2, 3, 3], 103),
    );
    let groups = ConvOptions::new([1, 1], [1, 1], [1, 1], 2);
    assert!(fused(&x, &w, None, &groups).is_none(), "two groups");
}

/// burn-flex's convolution → added tensor → clamp in one pass (what catdog's prediction runs
/// on flex for ResNet-18 and EfficientNet-Lite0, src/model/fused.rs) against the operations
/// apart on ndarray, on each of flex's paths: Winograd's (batch 16, so that a 16-thread
/// machine takes it too), im2col's (a 7×7 stem of stride 2, a 1×1 of stride 2, batch 1), the
/// pointwise 1×1 and the depthwise ones (uneven "same" padding); ReLU after a shortcut, ReLU6
/// alone, the shortcut alone. Two groups that are not depthwise, and a shortcut of another
/// shape, are left to the caller (`None`).
#[test]
fn flex_fused_convolution_shortcut_and_clamp_match_ndarray() {
    use burn::backend::Flex;
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;

    let relu = Some((0.0, f32::INFINITY));
    let relu6 = Some((0.0, 6.0));
    let padded = |pad: usize, stride: usize| ConvOptions::new([stride; 2], [pad; 2], [1, 1], 1);
    let depthwise = |channels: usize, stride: usize, (begin, end): (usize, usize)| {
        ConvOptions::new_with_padding([stride; 2], [(begin, end); 2], [1, 1], channels)
    };
    let fused = |x: &burn::tensor::TensorData,
                 w: &burn::tensor::TensorData,
                 b: &burn::tensor::TensorData,
                 add: Option<&burn::tensor::TensorData>,
                 options: &ConvOptions<2>,
                 clamp: Option<(f32, f32)>| {
        burn_flex::ops::conv2d_then(
            flex_primitive::<4>(x),
            flex_primitive::<4>(w),
            Some(flex_primitive::<1>(b)),
            options,
            add.map(flex_primitive::<4>),
            clamp,
        )
        .map(|y| Tensor::<4>::from_primitive::<Flex>(y).into_data())
    };
    let cases = [
        ([16, 16, 8, 6], [17, 16, 3, 3], padded(1, 1), true, relu),
        ([2, 16, 9, 7], [16, 16, 3, 3], padded(1, 1), true, relu6),
        // Tall images of 70 tile rows, the last cut short, in blocks of fewer rows (64
        // channels): the shortcut and clamp, applied to an image's rows in a block at once,
        // start and end inside the image.
        ([2, 64, 278, 6], [64, 64, 3, 3], padded(1, 1), true, relu),
        // Winograd's whole-batch path (small images, many channels).
        ([2, 64, 5, 4], [48, 64, 3, 3], padded(1, 1), true, relu6),
        ([2, 3, 15, 13], [8, 3, 7, 7], padded(3, 2), false, relu),
        ([1, 8, 9, 9], [12, 8, 1, 1], padded(0, 2), true, None),
        ([2, 12, 5, 6], [20, 12, 1, 1], padded(0, 1), true, relu6),
        (
            [2, 24, 9, 8],
            [24, 1, 3, 3],
            depthwise(24, 2, (0, 1)),
            false,
            relu6,
        ),
        (
            [2, 24, 7, 7],
            [24, 1, 5, 5],
            depthwise(24, 1, (2, 2)),
            true,
            relu6,
        ),
    ];
    let ndarray = cpu_backend(CpuBackend::Ndarray).device;
    for (i, (x_shape, w_shape, options, shortcut, clamp)) in cases.into_iter().enumerate() {
        let case =
            format!("{x_shape:?} * {w_shape:?}, {options:?}, shortcut {shortcut}, {clamp:?}");
        let seed = 200 + 4 * i as u64;
        // Weights in [−3, 3), so that even 9-term sums reach past ReLU6's 6.
        let w = random_data(w_shape, seed + 1);
        let w = burn::tensor::TensorData::new(
            w.iter::<f32>().map(|v| 3.0 * v).collect::<Vec<_>>(),
            w_shape,
        );
        let (x, b) = (
            random_data(x_shape, seed),
            random_data([w_shape[0]], seed + 2),
        );
        let y = conv2d(
            Tensor::<4>::from_data(x.clone(), &ndarray),
            Tensor::<4>::from_data(w.clone(), &ndarray),
            Some(Tensor::<1>::from_data(b.clone(), &ndarray)),
            options.clone(),
        );
        let add = shortcut.then(|| random_data(y.dims(), seed + 3));
        let y = match &add {
            Some(add) => y + Tensor::<4>::from_data(add.clone(), &ndarray),
            None => y,
        };
        let expected = match clamp {
            Some((low, high)) => y.clamp(low, high.min(f32::MAX)),
            None => y,
        }
        .into_data();
        let actual = fused(&x, &w, &b, add.as_ref(), &options, clamp)
            .unwrap_or_else(|| panic!("not fused: {case}"));
        assert_eq!(actual.shape(), expected.shape(), "{case}");
        let (a, e) = (
            actual.try_to_vec::<f32>().unwrap(),
            expected.try_to_vec::<f32>().unwrap(),
        );
        let rms = (e.iter().map(|e| e * e).sum::<f32>() / e.len() as f32).sqrt();
        for (a, e) in a.iter().zip(&e) {
            assert!(
                (a - e).abs() <= 1e-4 * e.abs().max(rms).max(1.0),
                "{a} against {e}, {case}"
            );
        }
        // The clamp was reached: values at its bounds and between them.
        if let Some((low, high)) = clamp {
            assert!(
                e.contains(&low) && e.iter().any(|&v| v > low && v < high),
                "{case}"
            );
        }
        if clamp == relu6 {
            assert!(e.contains(&6.0), "nothing reached 6, {case}");
        }
    }
    let (x, w, b) = (
        random_data([2, 4, 8, 8], 300),
        random_data([4, 2, 3, 3], 301),
        random_data([4], 302),
    );
    let groups = ConvOptions::new([1, 1], [1, 1], [1, 1], 2);
    assert!(
        fused(&x, &w, &b, None, &groups, relu).is_none(),
        "two groups"
    );
    let (w, wrong) = (
        random_data([4, 4, 3, 3], 303),
        random_data([2, 4, 8, 7], 304),
    );
    let same = padded(1, 1);
    assert!(
        fused(&x, &w, &b, Some(&wrong), &same, relu).is_none(),
        "a shortcut of another shape"
    );
}

/// The fused inference convolutions keep Winograd's transformed kernels from call to call
/// (vendor/burn-flex/src/ops/patch/kernel_cache.rs): the same weights again, new weights of
/// the same shape (each drawn after the last were dropped, so that their buffer may take the
/// old one's place), and weights viewed with another layout all give exactly what flex's
/// plain convolution, which transforms them at every call, gives.
#[test]
fn flex_kept_winograd_kernels_follow_the_weights() {
    use burn::backend::Flex;
    use burn::tensor::module::conv2d;
    use burn::tensor::ops::ConvOptions;

    let device = Device::flex();
    let same = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
    let x = Tensor::<4>::from_data(random_data([16, 16, 6, 6], 400), &device);
    let check_with = |x: &Tensor<4>, w: &Tensor<4>, case: &str| {
        let expected = conv2d(x.clone(), w.clone(), None, same.clone()).into_data();
        let fused = burn_flex::ops::conv2d_then(
            x.clone().try_into_primitive::<Flex>().unwrap(),
            w.clone().try_into_primitive::<Flex>().unwrap(),
            None,
            &same,
            None,
            None,
        )
        .expect("fused");
        let actual = Tensor::<4>::from_primitive::<Flex>(fused).into_data();
        assert_eq!(actual, expected, "{case}");
    };
    let check = |w: &Tensor<4>, case: &str| check_with(&x, w, case);
    for round in 0..3u64 {
        let w = Tensor::<4>::from_data(random_data([16, 16, 3, 3], 401 + round), &device);
        check(&w, &format!("weights {round}, first call"));
        check(&w, &format!("weights {round}, again"));
    }
    // [16, 16, 3, 3] weights read as their transpose: the same buffer, another layout.
    let w = Tensor::<4>::from_data(random_data([16, 16, 3, 3], 410), &device);
    check(&w, "weights");
    check(
        &w.clone().swap_dims(0, 1),
        "the same weights, input and output channels swapped",
    );
    // Small images and many channels (Winograd's whole-batch path), where each task reads
    // its output channels' part of the kept kernels or transforms its own.
    let x = Tensor::<4>::from_data(random_data([2, 64, 4, 4], 420), &device);
    let w = Tensor::<4>::from_data(random_data([48, 64, 3, 3], 421), &device);
    check_with(&x, &w, "whole batch, first call");
    check_with(&x, &w, "whole batch, again");
}

/// The 2×2 pool and ResNet's 3×3 of stride 2 (pool_window.rs) with i64 indices (what a
/// direct `ModuleOps` call may ask for; autodiff asks for flex's default i32, which the test
/// above compares with ndarray) give the same pooled values, indices and gradient as with
/// i32, odd sizes and ties included.
#[test]
fn flex_max_pool_with_i64_indices_matches_i32() {
    use burn::backend::Flex;
    use burn::backend::ops::ModuleOps;
    use burn::tensor::{Int, IntDType};

    let two = ([2, 2], [2, 2], [0, 0]);
    let three = ([3, 3], [2, 2], [1, 1]);
    for (x, pooled_shape, (kernel, stride, padding)) in [
        (random_data([2, 3, 7, 9], 10), [2, 3, 3, 4], two),
        (tied_data(), [2, 3, 3, 3], two),
        (random_data([2, 3, 9, 7], 12), [2, 3, 5, 4], three),
        (tied_data(), [2, 3, 3, 3], three),
    ] {
        let shape = x.shape().clone();
        let grad = random_data(pooled_shape, 11);
        let pool = |dtype| {
            let pooled = <Flex as ModuleOps<Flex>>::max_pool2d_with_indices(
                flex_primitive::<4>(&x),
                kernel,
                stride,
                padding,
                [1, 1],
                false,
                dtype,
            );
            let dx = <Flex as ModuleOps<Flex>>::max_pool2d_with_indices_backward(
                flex_primitive::<4>(&x),
                kernel,
                stride,
                padding,
                [1, 1],
                false,
                flex_primitive::<4>(&grad),
                pooled.indices.clone(),
            );
            (
                Tensor::<4>::from_primitive::<Flex>(pooled.output).into_data(),
                Tensor::<4, Int>::from_primitive::<Flex>(pooled.indices).into_data(),
                Tensor::<4>::from_primitive::<Flex>(dx.x_grad).into_data(),
            )
        };
        let (i32s, i64s) = (pool(IntDType::I32), pool(IntDType::I64));
        assert_eq!(i32s.1.dtype(), burn::tensor::DType::I32, "{shape:?}");
        assert_eq!(i64s.1.dtype(), burn::tensor::DType::I64, "{shape:?}");
        assert_eq!(i32s.0, i64s.0, "pooled values, {shape:?}");
        assert_eq!(i32s.1.convert::<i64>(), i64s.1, "indices, {shape:?}");
        assert_eq!(i32s.2, i64s.2, "gradient, {shape:?}");
    }
}

/// Training (batch statistics, with gradients) and inference (given statistics); also with a
/// mean far from zero beside the spread, where statistics summed in one read about zero would
/// lose the variance (flex's sums are about the first image's mean).
#[test]
fn flex_batch_norm_and_its_gradients_match_ndarray() {
    use burn::tensor::module::{batch_norm, batch_norm_train};

    let (gamma, beta) = (random_data([3], 1), random_data([3], 2));
    let mean = random_data([3], 3);
    // In [0.1, 2).
    let variance =
        (Tensor::<1>::from_data(random_data([3], 4), &Device::flex()) * 0.95 + 1.05).into_data();
    let x = random_data([4, 3, 5, 6], 0);
    let far = (Tensor::<4>::from_data(x.clone(), &Device::flex()) * 2.0 + 100.0).into_data();
    for (name, x) in [("batch norm [4, 3, 5, 6]", x), ("mean 100, spread 2", far)] {
        assert_flex_matches_ndarray(name, |device, weights| {
            let x = Tensor::<4>::from_data(x.clone(), device).require_grad();
            let gamma = Tensor::<1>::from_data(gamma.clone(), device).require_grad();
            let beta = Tensor::<1>::from_data(beta.clone(), device).require_grad();
            let trained = batch_norm_train(x.clone(), gamma.clone(), beta.clone(), 1e-5);
            let grads = weights.weighted_sum(trained.output.clone()).backward();
            let given = [mean.clone(), variance.clone()].map(|v| Tensor::<1>::from_data(v, device));
            let [mean, variance] = given;
            let inference = batch_norm(
                x.clone().detach(),
                gamma.clone(),
                beta.clone(),
                mean,
                variance,
                1e-5,
            );
            vec![
                ("output", trained.output.into_data()),
                ("mean", trained.mean.into_data()),
                ("variance", trained.variance.into_data()),
                ("dx", x.grad(&grads).unwrap().into_data()),
                ("dgamma", gamma.grad(&grads).unwrap().into_data()),
                ("dbeta", beta.grad(&grads).unwrap().into_data()),
                ("inference", inference.into_data()),
            ]
        });
    }
}

/// The results the fused batch norm → pool tests compare: `fused` with a batch norm of these
/// γ and β, run once on `2·x` and then on `x` (so that the running statistics move twice):
/// its output, the gradients of x, γ and β, and the running statistics.
fn norm_pool_results(
    device: &Device,
    weights: &mut OutputWeights,
    [x, gamma, beta]: [&burn::tensor::TensorData; 3],
    fused: impl Fn(&burn::nn::BatchNorm, Tensor<4>) -> Tensor<4>,
) -> Vec<(&'static str, burn::tensor::TensorData)> {
    use burn::module::Param;
    use burn::nn::BatchNormConfig;

    let mut norm = BatchNormConfig::new(gamma.num_elements()).init(device);
    norm.gamma = Param::from_tensor(Tensor::from_data(gamma.clone(), device));
    norm.beta = Param::from_tensor(Tensor::from_data(beta.clone(), device));
    let input = || Tensor::<4>::from_data(x.clone(), device).require_grad();
    let _ = fused(&norm, input() * 2.0);
    let x = input();
    let y = fused(&norm, x.clone());
    let grads = weights.weighted_sum(y.clone()).backward();
    vec![
        ("y", y.into_data()),
        ("dx", x.grad(&grads).unwrap().into_data()),
        ("dgamma", norm.gamma.val().grad(&grads).unwrap().into_data()),
        ("dbeta", norm.beta.val().grad(&grads).unwrap().into_data()),
        ("running mean", norm.running_mean.value().into_data()),
        ("running variance", norm.running_var.value().into_data()),
    ]
}

/// catdog's batch norm → 2×2 max-pool → ReLU while training, one operation on flex
/// (src/model/norm_pool_relu.rs), against the three apart on ndarray: the output, the
/// gradients of x, γ and β, and the running statistics after two steps; batch 1, ties, γ of
/// both signs, more channels, and odd sides, which flex's operation leaves to the three apart.
#[test]
fn flex_fused_batch_norm_pool_and_relu_match_ndarray() {
    use burn::nn::BatchNorm;
    use burn::nn::pool::MaxPool2dConfig;
    use catdog::model::norm_pool_relu;

    let pool = MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
    let cases = [
        random_data([4, 3, 6, 8], 0),
        random_data([1, 2, 2, 2], 1),
        tied_data(),
        random_data([3, 16, 8, 10], 2),
        random_data([2, 2, 5, 7], 3),
    ];
    for (seed, x) in (10..).zip(cases) {
        let shape = x.shape().to_vec();
        let channels = shape[1];
        let (gamma, beta) = (
            random_data([channels], seed),
            random_data([channels], seed + 100),
        );
        let even = shape[2] % 2 == 0 && shape[3] % 2 == 0;
        let fused = burn_flex::ops::batch_norm_max_pool2x2_relu(
            flex_primitive::<4>(&x),
            flex_primitive::<1>(&gamma),
            flex_primitive::<1>(&beta),
            1e-5,
        );
        assert_eq!(fused.is_some(), even, "flex fuses {shape:?}");
        assert_flex_matches_ndarray(&format!("{shape:?}"), |device, weights| {
            let fused = |norm: &BatchNorm, x| norm_pool_relu(norm, &pool, x);
            norm_pool_results(device, weights, [&x, &gamma, &beta], fused)
        });
    }
}

/// catdog's batch norm → ReLU → max-pool over other windows while training, one operation on
/// flex (src/model/norm_pool_relu.rs, ResNet's stem), against the three apart on ndarray: the
/// output, the gradients of x, γ and β, and the running statistics after two steps. ResNet's
/// 3×3 window of stride 2 and padding 1 (overlapping windows; batch 1 and one window; ties;
/// rows of 16 whole windows and more, which go side by side), and a 2×2 window of stride 1.
#[test]
fn flex_fused_batch_norm_relu_and_window_pool_match_ndarray() {
    use burn::nn::pool::MaxPool2dConfig;
    use burn::nn::{BatchNorm, PaddingConfig2d};
    use catdog::model::norm_relu_pool;

    let resnet = ([3, 3], [2, 2], [1, 1]);
    let cases = [
        (random_data([4, 3, 8, 10], 0), resnet),
        (random_data([1, 2, 2, 2], 1), resnet),
        (tied_data(), resnet),
        (random_data([2, 3, 9, 40], 2), resnet),
        (random_data([3, 4, 5, 7], 3), ([2, 2], [1, 1], [0, 0])),
    ];
    for (seed, (x, (kernel, stride, padding))) in (10..).zip(cases) {
        let shape = x.shape().to_vec();
        let channels = shape[1];
        let (gamma, beta) = (
            random_data([channels], seed),
            random_data([channels], seed + 100),
        );
        let fused = burn_flex::ops::batch_norm_relu_max_pool(
            flex_primitive::<4>(&x),
            flex_primitive::<1>(&gamma),
            flex_primitive::<1>(&beta),
            1e-5,
            [kernel, stride, padding],
        );
        assert!(fused.is_some(), "flex fuses {shape:?}, {kernel:?}");
        let [top, left] = padding;
        let pool = MaxPool2dConfig::new(kernel)
            .with_strides(stride)
            .with_padding(PaddingConfig2d::Explicit(top, left, top, left))
            .init();
        let case = format!("{shape:?}, {kernel:?} window");
        assert_flex_matches_ndarray(&case, |device, weights| {
            let fused = |norm: &BatchNorm, x| norm_relu_pool(norm, &pool, x);
            norm_pool_results(device, weights, [&x, &gamma, &beta], fused)
        });
    }
}

/// catdog's batch norm → shortcut added → ReLU, ReLU6 or nothing while training, one
/// operation on flex (src/model/norm_then.rs), against the operations apart on ndarray: the
/// output, the gradients of x, γ, β and the shortcut, and the running statistics after two
/// steps; batch 1, γ of both signs and large enough for ReLU6's upper bound, more channels,
/// odd sides.
#[test]
fn flex_fused_batch_norm_shortcut_and_clamp_match_ndarray() {
    use burn::module::Param;
    use burn::nn::BatchNormConfig;
    use catdog::model::{Then, norm_then};

    let cases = [
        (random_data([4, 3, 6, 8], 0), Then::Relu, false),
        (random_data([4, 3, 6, 8], 1), Then::Relu, true),
        (random_data([1, 2, 2, 2], 2), Then::Relu, true),
        (random_data([3, 16, 5, 7], 3), Then::Relu6, false),
        (random_data([2, 4, 5, 6], 4), Then::Relu6, true),
        (random_data([2, 4, 5, 6], 5), Then::Nothing, true),
        (random_data([2, 4, 3, 3], 6), Then::Nothing, false),
    ];
    for (seed, (x, then, shortcut)) in (10..).zip(cases) {
        let shape: [usize; 4] = x.shape().to_vec().try_into().unwrap();
        let channels = shape[1];
        // γ in [−8, 8): normalised values beyond ReLU6's 6 on both sides.
        let gamma = Tensor::<1>::from_data(random_data([channels], seed), &Device::flex()) * 8.0;
        let (gamma, beta) = (gamma.into_data(), random_data([channels], seed + 100));
        let added = random_data(shape, seed + 200);
        let fused = burn_flex::ops::batch_norm_add_clamp(
            flex_primitive::<4>(&x),
            flex_primitive::<1>(&gamma),
            flex_primitive::<1>(&beta),
            1e-5,
            shortcut.then(|| flex_primitive::<4>(&added)),
            None,
        );
        assert!(fused.is_some(), "flex fuses {shape:?}");
        let case = format!("{shape:?}, {then:?}, shortcut {shortcut}");
        assert_flex_matches_ndarray(&case, |device, weights| {
            let mut norm = BatchNormConfig::new(channels).init(device);
            norm.gamma = Param::from_tensor(Tensor::from_data(gamma.clone(), device));
            norm.beta = Param::from_tensor(Tensor::from_data(beta.clone(), device));
            let input = || Tensor::<4>::from_data(x.clone(), device).require_grad();
            let add = Tensor::<4>::from_data(added.clone(), device).require_grad();
            let add_to = |shortcut: bool| shortcut.then(|| add.clone());
            let _ = norm_then(&norm, input() * 2.0, add_to(shortcut), then);
            let x = input();
            let y = norm_then(&norm, x.clone(), add_to(shortcut), then);
            let grads = weights.weighted_sum(y.clone()).backward();
            let mut results = vec![
                ("y", y.into_data()),
                ("dx", x.grad(&grads).unwrap().into_data()),
                ("dgamma", norm.gamma.val().grad(&grads).unwrap().into_data()),
                ("dbeta", norm.beta.val().grad(&grads).unwrap().into_data()),
                ("running mean", norm.running_mean.value().into_data()),
                ("running variance", norm.running_var.value().into_data()),
            ];
            if shortcut {
                results.push(("dshortcut", add.grad(&grads).unwrap().into_data()));
            }
            results
        });
    }
}
