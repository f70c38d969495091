#!/usr/bin/env python3
"""catdog's SmallCnn (or ResNet-18) in PyTorch, timed the way `catdog bench` times it: the yardstick.

The same network (4 x [conv 3x3 pad 1 -> batch norm -> ReLU -> max-pool 2], 32-64-128-128
channels (64-128-256-256 with --network small-cnn-wide), global average pool, linear to 2
classes; with --network resnet18, torchvision's
resnet18(num_classes=2), which is catdog's --network resnet18 layer for layer; with --network
efficientnet-lite0, the PyPI package efficientnet-lite-pytorch's EfficientNet, likewise), AdamW (lr 1e-3, eps 1e-8, weight decay
5e-4, catdog's default), cross-entropy, the same image and batch size, and the same method: a
few untimed warm-up steps, then the median (with min and max) of REPEATS windows of at least
SECONDS each. A training step builds
the batch from uint8 pixels (normalised with ImageNet's statistics), runs forward, backward and
the optimizer step, and reads the loss back (loss.item() waits for the device). An inference
step reads the class probabilities back. It prints the same JSON fields as `catdog bench
--json` (runs[].backend, device, train_images_per_sec, infer_images_per_sec, ...).

PyTorch is not needed by catdog itself. To install it:
    python3 -m pip install torch numpy                       # CUDA build on Linux
    python3 -m pip install torch numpy --index-url https://download.pytorch.org/whl/cpu  # CPU only

On CUDA, torch.backends.cudnn.benchmark is on (cuDNN picks its fastest convolutions, as
catdog's wgpu autotunes its kernels). --amp trains and infers under torch.autocast in float16
with a GradScaler, PyTorch's usual mixed precision (compare with catdog's --precision f16).
--data-on-device uploads the batches once, before the clock starts, as catdog's
--data-on-device does. glibc's allocator gets the settings catdog gives itself (no mmap, no
trim), so that neither side pays for fresh pages at every step; --glibc-defaults leaves them.

Usage:
    python3 bench/pytorch_reference.py [--network small-cnn|small-cnn-wide|resnet18|efficientnet-lite0] [--devices cpu,cuda]
                                       [--image-size 64 (224 for resnet18)] [--batch-size 32]
                                       [--seconds 3] [--repeats 3] [--warmup-steps 3] [--threads N]
                                       [--amp] [--data-on-device] [--glibc-defaults]
"""

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as missing:
    sys.exit(
        f"pytorch_reference.py needs PyTorch and NumPy ({missing}).\n"
        "Install them with: python3 -m pip install torch numpy\n"
        "(CPU only: python3 -m pip install torch numpy --index-url https://download.pytorch.org/whl/cpu)"
    )

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


SMALL_CNN_CHANNELS = {"small-cnn": (32, 64, 128, 128), "small-cnn-wide": (64, 128, 256, 256)}


class SmallCnn(nn.Module):
    def __init__(self, classes=2, channels=SMALL_CNN_CHANNELS["small-cnn"]):
        super().__init__()
        layers, channels_in = [], 3
        for channels_out in channels:
            layers += [
                nn.Conv2d(channels_in, channels_out, 3, padding=1),
                nn.BatchNorm2d(channels_out),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            ]
            channels_in = channels_out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(channels_in, classes)

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)).flatten(1))


def network(name):
    """A fresh network called `name` as catdog names it (`--network`)."""
    if name in SMALL_CNN_CHANNELS:
        return SmallCnn(channels=SMALL_CNN_CHANNELS[name])
    if name == "efficientnet-lite0":
        try:
            from efficientnet_lite_pytorch import EfficientNet
        except ImportError:
            sys.exit("--network efficientnet-lite0 needs efficientnet-lite-pytorch: "
                     "python3 -m pip install efficientnet-lite-pytorch")
        # catdog's layer for layer; without the dropout and drop-connect catdog does not use.
        return EfficientNet.from_name("efficientnet-lite0", num_classes=2, dropout_rate=0.0,
                                      drop_connect_rate=0.0)
    try:
        import torchvision
    except ImportError:
        sys.exit("--network resnet18 needs torchvision: python3 -m pip install torchvision")
    return torchvision.models.resnet18(num_classes=2)


def keep_freed_memory(glibc_defaults):
    """Gives PyTorch catdog's allocator settings (src/device/allocator.rs: no mmap, no trim),
    unless `glibc_defaults`; returns what the run used. With glibc's defaults every block
    above 32 MB is mmapped and unmapped at each use: at batch 64 and 80 px, PyTorch's
    inference ran at ~650 photos/s in a fresh process against ~1,700 with these settings."""
    if glibc_defaults:
        return "glibc defaults"
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return "system defaults (no glibc)"
    m_trim_threshold, m_mmap_max = -1, -4
    if libc.mallopt(m_trim_threshold, 2**31 - 1) != 1 or libc.mallopt(m_mmap_max, 0) != 1:
        sys.exit("mallopt refused catdog's allocator settings (pass --glibc-defaults to run without)")
    return "catdog's: no mmap, no trim"


def positive(text):
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def add_allocator_flag(parser):
    parser.add_argument("--glibc-defaults", action="store_true",
                        help="leave glibc's allocator settings as they are, not catdog's")


def measure(args, step):
    """Photos/s of `step` (which returns the photos it processed) over args.repeats windows."""
    windows = []
    for _ in range(args.repeats):
        started, photos = time.perf_counter(), 0
        while photos == 0 or time.perf_counter() - started < args.seconds:
            photos += step()
        windows.append(photos / (time.perf_counter() - started))
    return {
        "median": statistics.median(windows),
        "min": min(windows),
        "max": max(windows),
        "windows": windows,
    }


def bench_device(args, device_name):
    device = torch.device(device_name)
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    pictures = rng.integers(0, 256, (args.batch_size * 8, args.image_size, args.image_size, 3), dtype=np.uint8)
    labels = torch.tensor([i % 2 for i in range(len(pictures))])
    batches = [range(i, i + args.batch_size) for i in range(0, len(pictures), args.batch_size)]
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    amp = args.amp and device.type == "cuda"

    def make_batch(indices):
        pixels = torch.from_numpy(pictures[indices.start:indices.stop]).to(device)
        images = (pixels.permute(0, 3, 1, 2).float() / 255.0 - mean) / std
        return images, labels[indices.start:indices.stop].to(device)

    resident = [make_batch(indices) for indices in batches] if args.data_on_device else None

    def batch(number):
        if resident is not None:
            return resident[number % len(resident)]
        return make_batch(batches[number % len(batches)])

    model = network(args.network).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-8, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device.type, enabled=amp)
    step_count = [0]

    def train_step():
        step_count[0] += 1
        images, targets = batch(step_count[0])
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(images), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        loss.item()
        return len(targets)

    model.train()
    started = time.perf_counter()
    for _ in range(args.warmup_steps):
        train_step()
    warmup_seconds = time.perf_counter() - started
    train = measure(args, train_step)

    model.eval()

    def infer_step():
        step_count[0] += 1
        images, targets = batch(step_count[0])
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.float16, enabled=amp):
            torch.softmax(model(images).float(), dim=1).cpu()
        return len(targets)

    # Untimed first batches, as catdog's bench does (cudnn.benchmark picks its algorithms
    # for the new shapes then).
    started = time.perf_counter()
    for _ in range(args.warmup_steps):
        infer_step()
    infer_warmup_seconds = time.perf_counter() - started
    infer = measure(args, infer_step)
    if device.type == "cuda":
        name = f"{torch.cuda.get_device_name(device)} (CUDA)"
    else:
        name = f"{cpu_model()} ({torch.get_num_threads()} threads)"
    return {
        "backend": f"pytorch-{device.type}",
        "device": name,
        "hardware_gpu": device.type == "cuda",
        "batch_size": args.batch_size,
        "precision": "amp-f16" if amp else "f32",
        "data_on_device": args.data_on_device,
        "train_images_per_sec": train["median"],
        "infer_images_per_sec": infer["median"],
        "train": train,
        "infer": infer,
        "warmup_seconds": warmup_seconds,
        "infer_warmup_seconds": infer_warmup_seconds,
    }


def cpu_model():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default=None, help="comma-separated: cpu, cuda [default: cuda if present, cpu]")
    parser.add_argument("--network", choices=["small-cnn", "small-cnn-wide", "resnet18",
                                              "efficientnet-lite0"],
                        default="small-cnn")
    parser.add_argument("--image-size", type=int, default=None, help="[default: 64, 224 for resnet18]")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=positive, default=3)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads [default: all]")
    parser.add_argument("--amp", action="store_true", help="float16 autocast with a GradScaler (CUDA only)")
    parser.add_argument("--data-on-device", action="store_true", help="upload the batches once")
    add_allocator_flag(parser)
    args = parser.parse_args()
    if args.image_size is None:
        args.image_size = 224 if args.network in ("resnet18", "efficientnet-lite0") else 64
    allocator = keep_freed_memory(args.glibc_defaults)

    torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = True
    devices = args.devices.split(",") if args.devices else (["cuda"] if torch.cuda.is_available() else []) + ["cpu"]
    runs = []
    for device in devices:
        if device == "cuda" and not torch.cuda.is_available():
            sys.exit("--devices cuda: PyTorch sees no CUDA GPU here")
        print(f"pytorch_reference: {device}...", file=sys.stderr)
        runs.append(bench_device(args, device))
    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "machine": {"cpu": cpu_model(), "threads": os.cpu_count(), "os": platform.platform()},
        "settings": {
            "network": args.network,
            "image_size": args.image_size,
            "batch_size": args.batch_size,
            "batch_sizes": [args.batch_size],
            "seconds": args.seconds,
            "repeats": args.repeats,
            "warmup_steps": args.warmup_steps,
            "threads": torch.get_num_threads(),
            "amp": args.amp,
            "data_on_device": args.data_on_device,
            "cudnn_benchmark": True,
            "allocator": allocator,
        },
        "runs": runs,
    }))


if __name__ == "__main__":
    main()
