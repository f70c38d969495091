#!/usr/bin/env python3
"""ResNet-18's convolutions one shape at a time in PyTorch, beside `cargo bench --bench
conv_layers` (benches/conv_layers.rs), which prints the same lines for flex.

For each shape (the 7x7 stem, the three 3x3 convolutions of stride 2, one 3x3 of stride 1 per
stage), the median over ROUNDS of a forward pass alone (under torch.inference_mode) and of a
training pass: forward, then the gradients of the weights and (except the stem, whose input is
the photo) of the input. No bias, random values, glibc's allocator with catdog's settings (as
bench/pytorch_reference.py).

Usage:
    python3 bench/pytorch_conv_layers.py [BATCH (16)] [ROUNDS (10)] [--threads N] [--glibc-defaults]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_reference import add_allocator_flag, cpu_model, keep_freed_memory  # noqa: E402

# Input channels, output channels, input side, kernel side, stride, padding.
SHAPES = [
    (3, 64, 224, 7, 2, 3),
    (64, 128, 56, 3, 2, 1),
    (128, 256, 28, 3, 2, 1),
    (256, 512, 14, 3, 2, 1),
    (64, 64, 56, 3, 1, 1),
    (128, 128, 28, 3, 1, 1),
    (256, 256, 14, 3, 1, 1),
    (512, 512, 7, 3, 1, 1),
]


def timed(f):
    """Milliseconds f() took."""
    start = time.perf_counter()
    f()
    return (time.perf_counter() - start) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("batch", nargs="?", type=int, default=16)
    parser.add_argument("rounds", nargs="?", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads [default: all]")
    add_allocator_flag(parser)
    args = parser.parse_args()
    keep_freed_memory(args.glibc_defaults)
    try:
        import torch
    except ImportError:
        sys.exit("PyTorch is not installed: python3 -m pip install torch")
    torch.set_num_threads(args.threads)
    rounds = max(args.rounds, 1)
    print(f"PyTorch {torch.__version__} on {cpu_model()} ({torch.get_num_threads()} threads), "
          f"batch {args.batch}, median of {rounds} rounds")
    conv = torch.nn.functional.conv2d
    for c_in, c_out, side, k, stride, pad in SHAPES:
        x = torch.randn(args.batch, c_in, side, side)
        w = torch.randn(c_out, c_in, k, k)
        # The stem's input is the photo, which needs no gradient.
        x_ad = x.clone().requires_grad_(c_in > 3)
        w_ad = w.clone().requires_grad_(True)
        side_out = (side + 2 * pad - k) // stride + 1
        dy = torch.randn(args.batch, c_out, side_out, side_out)

        def forward():
            with torch.inference_mode():
                conv(x, w, None, stride, pad)

        def train():
            x_ad.grad, w_ad.grad = None, None
            (conv(x_ad, w_ad, None, stride, pad) * dy).sum().backward()

        # One untimed round first, as the Rust side does.
        times = [(timed(forward), timed(train)) for _ in range(rounds + 1)][1:]
        forward_ms = statistics.median(f for f, _ in times)
        train_ms = statistics.median(t for _, t in times)
        print(f"{c_in}->{c_out} {side}px k{k} s{stride}: forward {forward_ms:.2f} ms, training {train_ms:.2f} ms")


if __name__ == "__main__":
    main()
