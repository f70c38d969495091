#!/usr/bin/env python3
"""A ResNet-18 that catdog trained, loaded into torchvision: the same answers on the same photos.

`catdog train --network resnet18` saves its weights with torchvision's names and layouts. This
script loads that file into `torchvision.models.resnet18(num_classes=2)` with
`load_state_dict(strict=True)` (the file has every tensor but the batch norms'
`num_batches_tracked` counters, which PyTorch fills in itself when they are absent), runs
PyTorch and `catdog predict --json` over the same pictures, and compares them: the logit
differences (dog − cat, which `predict`'s probabilities give back: log(p_dog / p_cat) × the
model's temperature) within 1e-4, and the probabilities within 1e-5.

The pictures must be PNGs of exactly the model's image size (`catdog synth --size N` makes
some), so that neither side resizes them and both see the same pixels.

Usage:
    python3 bench/resnet18_exchange.py MODEL_DIR PICTURES_DIR [--catdog target/release/catdog]

Needs PyTorch, torchvision, NumPy and Pillow. Exits 1 if the two disagree.
"""

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import numpy as np
    import torch
    import torchvision
    from PIL import Image
except ImportError as missing:
    sys.exit(f"resnet18_exchange.py needs PyTorch, torchvision, NumPy and Pillow ({missing})")


def read_safetensors(path):
    """The tensors of a safetensors file of f32 tensors, without the safetensors package."""
    with open(path, "rb") as file:
        data = file.read()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {entry['dtype']}, not F32")
        start, end = entry["data_offsets"]
        array = np.frombuffer(body[start:end], dtype="<f4").reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model folder `catdog train --network resnet18` wrote")
    parser.add_argument("pictures", help="PNGs of the model's image size")
    parser.add_argument("--catdog", default=os.path.join(HERE, "..", "target", "release", "catdog"))
    args = parser.parse_args()

    with open(os.path.join(args.model, "catdog.json")) as file:
        info = json.load(file)
    if info["architecture"] != "resnet18":
        sys.exit(f"{args.model} holds a {info['architecture']}, not a resnet18")
    size = info["image_size"]
    temperature = (info.get("calibration") or {}).get("temperature", 1.0)

    weights = read_safetensors(os.path.join(args.model, info["weights_file"]))
    model = torchvision.models.resnet18(num_classes=len(info["classes"]))
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as err:
        sys.exit(f"torchvision's resnet18 does not take the file: {err}")
    print(f"loaded {len(weights)} tensors into torchvision.models.resnet18 (strict=True)")
    model.eval()

    paths = sorted(os.path.join(args.pictures, name) for name in os.listdir(args.pictures)
                   if name.endswith(".png"))
    if not paths:
        sys.exit(f"no .png in {args.pictures}")
    mean = torch.tensor(info["normalization"]["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(info["normalization"]["std"]).view(1, 3, 1, 1)
    pixels = []
    for path in paths:
        picture = Image.open(path).convert("RGB")
        if picture.size != (size, size):
            sys.exit(f"{path} is {picture.size[0]}×{picture.size[1]}, not the model's {size}×{size}")
        pixels.append(np.asarray(picture))
    images = (torch.from_numpy(np.stack(pixels)).permute(0, 3, 1, 2).float() / 255.0 - mean) / std
    with torch.no_grad():
        logits = model(images).double()
    probabilities = torch.softmax(logits / temperature, dim=1)

    command = [args.catdog, "predict", "--model", args.model, "--backend", "flex", "--no-flip", "--json",
               "--not-sure-below", "0"] + paths
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    answers = {line["path"]: line for line in map(json.loads, done.stdout.splitlines())}

    cat, dog = info["classes"].index("cat"), info["classes"].index("dog")
    worst_logit, worst_probability = 0.0, 0.0
    for i, path in enumerate(paths):
        theirs = answers[path]["probabilities"]
        catdog_difference = math.log(theirs["dog"] / theirs["cat"]) * temperature
        torch_difference = float(logits[i, dog] - logits[i, cat])
        worst_logit = max(worst_logit, abs(catdog_difference - torch_difference))
        worst_probability = max(worst_probability, abs(theirs["dog"] - float(probabilities[i, dog])))
    print(f"{len(paths)} pictures: largest difference of the logits (dog − cat) {worst_logit:.2e}, "
          f"of the probabilities {worst_probability:.2e}; torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}")
    if worst_logit > 1e-4 or worst_probability > 1e-5:
        sys.exit("catdog and PyTorch disagree")
    print("catdog and PyTorch agree")


if __name__ == "__main__":
    main()
