#!/usr/bin/env python3
"""catdog's EfficientNet-Lite0 and PyTorch's, with the same ImageNet weights: the same answers.

Puts the ImageNet weights catdog carries (`models/efficientnet-lite0-imagenet/`) into a catdog
model folder of 1,000 classes, and into the PyTorch port `EfficientNet` of the PyPI package
`efficientnet-lite-pytorch` (`load_state_dict(strict=True)`, less the batch norms' step
counters); squashes each photo of PHOTOS to 224 × 224 px as a PNG, so that both sides see the
same pixels; runs `catdog predict --json` and PyTorch over them; and compares the 1,000
probabilities of each photo, and which class each side puts first.

Usage:
    python3 bench/efficientnet_exchange.py PHOTOS [--count 16] [--catdog target/release/catdog]
        [--backend flex]

Needs PyTorch, NumPy, Pillow and efficientnet-lite-pytorch. Exits 1 if the two disagree.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
WEIGHTS = os.path.join(HERE, "..", "models", "efficientnet-lite0-imagenet")
SIZE = 224

try:
    import numpy as np
    import torch
    from efficientnet_lite_pytorch import EfficientNet
    from PIL import Image
    from safetensors.torch import load_file
except ImportError as missing:
    sys.exit(f"efficientnet_exchange.py needs PyTorch, NumPy, Pillow, safetensors and "
             f"efficientnet-lite-pytorch ({missing})")


def model_folder(folder, weights_path, classes):
    """A catdog model folder of EfficientNet-Lite0 with `weights_path`'s tensors."""
    with open(weights_path, "rb") as file:
        weights = file.read()
    name = "model-imagenet.safetensors"
    with open(os.path.join(folder, name), "wb") as file:
        file.write(weights)
    # catdog names classes uniquely, whatever the case; ImageNet has "Cardigan" (a corgi) and
    # "cardigan" (a sweater).
    lowered = [label.lower() for label in classes]
    unique = []
    for index, label in enumerate(classes):
        unique.append(label if lowered.count(label.lower()) == 1 else f"{label} ({index})")
    info = {
        "format_version": 1,
        "catdog_version": "exchange check",
        "architecture": "efficientnet-lite0",
        "architecture_version": 1,
        "classes": unique,
        "image_size": SIZE,
        "normalization": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]},
        "epochs": 0,
        "val_accuracy": None,
        "backend": "flex",
        "device": "none: ImageNet's weights",
        "train_images_per_sec": 0.0,
        "weights_file": name,
        "weights_bytes": len(weights),
        "weights_crc32": zlib.crc32(weights),
    }
    with open(os.path.join(folder, "catdog.json"), "w") as file:
        json.dump(info, file)
    return unique


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("photos", help="a folder of photos (any size; squashed to 224 px)")
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--catdog", default=os.path.join(HERE, "..", "target", "release", "catdog"))
    parser.add_argument("--backend", default="flex")
    args = parser.parse_args()

    weights_path = os.path.join(WEIGHTS, "efficientnet-lite0-imagenet.safetensors")
    with open(os.path.join(WEIGHTS, "imagenet-classes.txt")) as file:
        classes = file.read().splitlines()
    weights = {name: tensor.float() for name, tensor in load_file(weights_path).items()}
    model = EfficientNet.from_name("efficientnet-lite0", num_classes=len(classes))
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if unexpected or any(not name.endswith("num_batches_tracked") for name in missing):
        sys.exit(f"the PyTorch port does not take the file: missing {missing}, unexpected {unexpected}")
    model.eval()
    print(f"loaded {len(weights)} tensors into efficientnet_lite_pytorch.EfficientNet")

    photos = sorted(name for name in os.listdir(args.photos)
                    if name.lower().endswith((".jpg", ".jpeg", ".png")))[:args.count]
    if not photos:
        sys.exit(f"no photos in {args.photos}")
    with tempfile.TemporaryDirectory() as work:
        folder = os.path.join(work, "model")
        os.mkdir(folder)
        unique = model_folder(folder, weights_path, classes)
        paths, pixels = [], []
        for name in photos:
            picture = Image.open(os.path.join(args.photos, name)).convert("RGB")
            picture = picture.resize((SIZE, SIZE), Image.BILINEAR)
            path = os.path.join(work, os.path.splitext(name)[0] + ".png")
            picture.save(path)
            paths.append(path)
            pixels.append(np.asarray(picture))
        images = torch.from_numpy(np.stack(pixels)).permute(0, 3, 1, 2).float() / 255.0 * 2 - 1
        with torch.no_grad():
            probabilities = torch.softmax(model(images).double(), dim=1)

        command = [args.catdog, "predict", "--model", folder, "--backend", args.backend,
                   "--no-flip", "--json", "--not-sure-below", "0"] + paths
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
        answers = {line["path"]: line for line in map(json.loads, done.stdout.splitlines())}

    worst, same_first = 0.0, 0
    for i, path in enumerate(paths):
        theirs = answers[path]["probabilities"]
        catdog_row = np.array([theirs[label] for label in unique])
        torch_row = probabilities[i].numpy()
        worst = max(worst, float(np.abs(catdog_row - torch_row).max()))
        first = int(torch_row.argmax())
        same_first += int(catdog_row.argmax()) == first
        print(f"  {os.path.basename(path)}: {classes[first]} {torch_row[first]:.3f} (PyTorch), "
              f"{classes[int(catdog_row.argmax())]} {catdog_row.max():.3f} (catdog)")
    print(f"{len(paths)} photos on {args.backend}: the same first class for {same_first}; largest "
          f"difference of the 1,000 probabilities {worst:.2e}; torch {torch.__version__}")
    if same_first != len(paths) or worst > 1e-4:
        sys.exit("catdog and PyTorch disagree")
    print("catdog and PyTorch agree")


if __name__ == "__main__":
    main()
