#!/usr/bin/env python3
"""catdog's saved model run by PyTorch over a folder of photos: the yardstick for `catdog
eval` and `catdog predict DIR`.

Loads a catdog model folder (catdog.json and its safetensors weights; the built-in one by
default) into the same network as bench/pytorch_reference.py, in eval mode, and times it the
way catdog times itself, over every photo in DIR, --batch-size photos at a time:
- eval: from decoded pixels (decoded and resized before the clock starts, as `catdog eval`'s
  figure, "decoded photos to probabilities") to class probabilities read back as NumPy;
- predict: from the files to class probabilities, decoding included (`catdog predict DIR`'s
  figure), the way a PyTorch user writes it: a DataLoader whose --workers processes open,
  convert to RGB and resize each photo with Pillow (bilinear), then normalise and infer.
It also prints the accuracy on the photos whose class it can tell (a sub-folder named after a
class, or Kaggle's `cat.123.jpg` names), which should agree with `catdog eval --no-flip`'s on the same
weights to a photo or two (the two resize differently). glibc's allocator gets catdog's
settings, as in bench/pytorch_reference.py.

Usage:
    python3 bench/pytorch_photos.py DIR [--model models/builtin-wide-20k] [--batch-size 64]
                                        [--repeats 3] [--threads N] [--workers 2]
                                        [--glibc-defaults]

Needs PyTorch, NumPy and Pillow: python3 -m pip install torch numpy pillow
"""

import argparse
import json
import os
import statistics
import struct
import sys
import time

try:
    import numpy as np
    import torch
    from PIL import Image
except ImportError as missing:
    sys.exit(f"pytorch_photos.py needs PyTorch, NumPy and Pillow ({missing}).\n"
             "Install them with: python3 -m pip install torch numpy pillow")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytorch_reference import (  # noqa: E402
    SMALL_CNN_CHANNELS, SmallCnn, add_allocator_flag, cpu_model, keep_freed_memory, positive)

PHOTO_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".jfif")


def read_safetensors(path):
    """Every tensor of a safetensors file (8-byte header length, JSON header, raw data)."""
    with open(path, "rb") as file:
        header_bytes = struct.unpack("<Q", file.read(8))[0]
        header = json.loads(file.read(header_bytes))
        data = file.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {entry['dtype']}, this script reads F32 only")
        start, end = entry["data_offsets"]
        values = np.frombuffer(data[start:end], dtype="<f4").reshape(entry["shape"])
        tensors[name] = torch.from_numpy(values.copy())
    return tensors


def load_model(folder):
    """catdog's SmallCnn (either width) from `folder` as PyTorch's, and its catdog.json."""
    with open(os.path.join(folder, "catdog.json")) as file:
        info = json.load(file)
    architecture = info.get("architecture")
    if architecture not in SMALL_CNN_CHANNELS:
        sys.exit(f"{folder}: architecture {architecture!r}, this script knows "
                 + " and ".join(SMALL_CNN_CHANNELS))
    weights = read_safetensors(os.path.join(folder, info["weights_file"]))
    model = SmallCnn(classes=len(info["classes"]), channels=SMALL_CNN_CHANNELS[architecture])
    state = {}
    for block in range(4):
        conv, norm = f"features.{4 * block}", f"features.{4 * block + 1}"
        ours = f"blocks.{block}"
        state[f"{conv}.weight"] = weights[f"{ours}.conv.weight"]
        state[f"{conv}.bias"] = weights[f"{ours}.conv.bias"]
        state[f"{norm}.weight"] = weights[f"{ours}.norm.gamma"]
        state[f"{norm}.bias"] = weights[f"{ours}.norm.beta"]
        state[f"{norm}.running_mean"] = weights[f"{ours}.norm.running_mean"]
        state[f"{norm}.running_var"] = weights[f"{ours}.norm.running_var"]
        state[f"{norm}.num_batches_tracked"] = torch.tensor(0)
    # burn's Linear keeps its weight as [inputs, outputs], PyTorch's as [outputs, inputs].
    state["classifier.weight"] = weights["classifier.weight"].t().contiguous()
    state["classifier.bias"] = weights["classifier.bias"]
    model.load_state_dict(state)
    return model.eval(), info


def labelled_photos(folder, classes):
    """(path, class index or None) of every photo under `folder`, sorted by path."""
    photos = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or not name.lower().endswith(PHOTO_EXTENSIONS):
                continue
            path = os.path.join(root, name)
            parent = os.path.basename(root).lower()
            # As catdog reads a flat folder: `cat.123.jpg` is a cat, `cat.jpg` nothing.
            parts = name.lower().split(".")
            prefix = parts[0] if len(parts) >= 3 else None
            label = classes.index(parent) if parent in classes else (
                classes.index(prefix) if prefix in classes else None)
            photos.append((path, label))
    return photos


class Photos(torch.utils.data.Dataset):
    """The photos as uint8 HWC arrays of the model's size, as a PyTorch user loads them."""

    def __init__(self, paths, size):
        self.paths, self.size = paths, size

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with Image.open(self.paths[index]) as photo:
            photo = photo.convert("RGB").resize((self.size, self.size), Image.BILINEAR)
            return torch.from_numpy(np.asarray(photo, dtype=np.uint8).copy())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--model", default=os.path.join(HERE, "..", "models", "builtin-wide-20k"),
                        help="a catdog model folder [default: the built-in model]")
    parser.add_argument("--batch-size", type=int, default=64, help="as catdog's predict and eval")
    parser.add_argument("--repeats", type=positive, default=3, help="passes over the folder, each timed")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads [default: all]")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader processes decoding photos")
    add_allocator_flag(parser)
    args = parser.parse_args()
    allocator = keep_freed_memory(args.glibc_defaults)

    torch.set_num_threads(args.threads)
    model, info = load_model(args.model)
    classes = [c.lower() for c in info["classes"]]
    size = info["image_size"]
    mean = torch.tensor(info["normalization"]["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(info["normalization"]["std"]).view(1, 3, 1, 1)
    photos = labelled_photos(args.folder, classes)
    if not photos:
        sys.exit(f"no photos found in {args.folder}")
    paths = [path for path, _ in photos]
    dataset = Photos(paths, size)

    def probabilities(pixels):
        """uint8 [n, size, size, 3] -> class probabilities, read back as NumPy."""
        with torch.no_grad():
            images = (pixels.permute(0, 3, 1, 2).float() / 255.0 - mean) / std
            return torch.softmax(model(images), dim=1).numpy()

    def predict_pass():
        """Photos/s from the files; its probabilities are eval's, so they are not kept."""
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size,
                                             num_workers=args.workers)
        started = time.perf_counter()
        for batch in loader:
            probabilities(batch)
        return len(paths) / (time.perf_counter() - started)

    print(f"pytorch_photos: decoding {len(paths)} photos...", file=sys.stderr)
    decoded = torch.stack([dataset[i] for i in range(len(paths))])

    def eval_pass():
        started = time.perf_counter()
        rows = [probabilities(decoded[i:i + args.batch_size])
                for i in range(0, len(decoded), args.batch_size)]
        return len(paths) / (time.perf_counter() - started), np.concatenate(rows)

    print(f"pytorch_photos: {args.repeats} passes of eval and predict...", file=sys.stderr)
    eval_rates, predict_rates = [], []
    for _ in range(args.repeats):
        rate, rows = eval_pass()
        eval_rates.append(rate)
        predict_rates.append(predict_pass())
    labelled = [(row.argmax(), label) for row, (_, label) in zip(rows, photos) if label is not None]
    accuracy = sum(int(p == label) for p, label in labelled) / len(labelled) if labelled else None
    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "device": f"{cpu_model()} ({torch.get_num_threads()} threads)",
        "model": os.path.abspath(args.model),
        "image_size": size,
        "batch_size": args.batch_size,
        "workers": args.workers,
        "allocator": allocator,
        "photos": len(paths),
        "labelled_photos": len(labelled),
        "accuracy": accuracy,
        "eval_images_per_sec": statistics.median(eval_rates),
        "eval_windows": eval_rates,
        "predict_images_per_sec": statistics.median(predict_rates),
        "predict_windows": predict_rates,
    }))


if __name__ == "__main__":
    main()
