#!/usr/bin/env python3
"""Pillow decode + resize to SIZE px of every photo in DIR with 2 worker processes, as a
PyTorch DataLoader with num_workers=2 would (Image.open -> convert RGB -> resize): the
yardstick for `catdog bench --data DIR --image-size SIZE`'s decode figure.

Usage: python3 bench/pillow_decode.py DIR SIZE    (needs Pillow: pip install pillow)
"""
import os, sys, time
from multiprocessing import Pool
from PIL import Image

SIZE = int(sys.argv[2])

def load(path):
    with Image.open(path) as im:
        return im.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR).tobytes()

if __name__ == "__main__":
    d = sys.argv[1]
    paths = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".jpg"))
    with Pool(2) as pool:
        rates = []
        for _ in range(3):
            t = time.perf_counter()
            n = sum(1 for _ in pool.imap_unordered(load, paths, chunksize=16))
            rates.append(n / (time.perf_counter() - t))
    rates.sort()
    print(f"pillow {SIZE}px: median {rates[1]:.0f} photos/s (min {rates[0]:.0f}, max {rates[2]:.0f}) over {n} photos")
