#!/usr/bin/env python3
"""Stores a catdog model folder's weights in half precision: half the bytes, for a model that
is compiled into catdog.

    pip install safetensors numpy
    python3 models/halve.py MODEL_DIR

Reads `catdog.json` and the weights file it names, writes every 32-bit float tensor as a 16-bit
one (same names, same metadata) to `model-<crc32>.safetensors`, points `catdog.json` at it
(`weights_file`, `weights_bytes`, `weights_crc32`, as `catdog train` fills them) and removes the
old file. catdog reads either precision into the backend's own. Check the model afterwards
with `catdog eval`: half precision keeps about three significant digits of each weight.
"""

import json
import os
import sys
import zlib

try:
    import numpy as np
    from safetensors.numpy import load, save
except ImportError as missing:
    sys.exit(f"halve.py needs numpy and safetensors ({missing})")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: halve.py MODEL_DIR")
    folder = sys.argv[1]
    info_path = os.path.join(folder, "catdog.json")
    with open(info_path) as file:
        info = json.load(file)
    old = os.path.join(folder, info["weights_file"])
    with open(old, "rb") as file:
        data = file.read()
    length = int.from_bytes(data[:8], "little")
    metadata = json.loads(data[8:8 + length]).get("__metadata__")
    tensors = {name: (t.astype(np.float16) if t.dtype == np.float32 else t)
               for name, t in load(data).items()}
    halved = save(tensors, metadata=metadata)
    crc = zlib.crc32(halved)
    name = f"model-{crc:08x}.safetensors"
    with open(os.path.join(folder, name), "wb") as file:
        file.write(halved)
    info.update(weights_file=name, weights_bytes=len(halved), weights_crc32=crc)
    with open(info_path, "w") as file:
        file.write(json.dumps(info, indent=2) + "\n")
    if os.path.join(folder, name) != old:
        os.remove(old)
    print(f"{len(data):,} bytes -> {len(halved):,} bytes: {os.path.join(folder, name)}")


if __name__ == "__main__":
    main()
