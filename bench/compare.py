#!/usr/bin/env python3
"""catdog against PyTorch on this machine, side by side in one run.

Runs `catdog bench --json` and bench/pytorch_reference.py with the same settings, one after
the other, each with its batches made once before the clock starts (`--data-on-device`, so
that both time forward, backward and the update alone), and prints each catdog backend's training and inference photos/s beside its
PyTorch counterpart (the CPU backends against PyTorch on the CPU, wgpu against PyTorch on
CUDA where there is one) with the ratio catdog/PyTorch. It does so --rounds times, alternating
the two, so that a machine whose speed drifts within minutes shows in the spread of the
ratios, each measured with both sides seconds apart, and prints their medians.

With --photos DIR it compares inference on real photos instead: `catdog eval --data DIR` and
`catdog predict DIR` with the built-in model on the CPU (flex) against bench/pytorch_photos.py
running the same weights over the same photos, photos/s from decoded pixels (eval) and from
the files (predict), and both accuracies.

Usage:
    python3 bench/compare.py [--catdog target/release/catdog] [--backends flex,ndarray]
                             [--network small-cnn|small-cnn-wide|resnet18|efficientnet-lite0]
                             [--image-size 64 (224 for resnet18 and efficientnet-lite0)]
                             [--batch-size 32] [--seconds 3] [--repeats 3]
                             [--rounds 3] [--json FILE]
    python3 bench/compare.py --photos DIR [--catdog ...] [--rounds 3] [--json FILE]

Needs PyTorch: see bench/pytorch_reference.py (and Pillow for --photos).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(command, **pipes):
    print("$ " + " ".join(command), file=sys.stderr)
    done = subprocess.run(command, text=True, **pipes)
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed with exit code {done.returncode}")
    return done


def run_json(command):
    return json.loads(run(command, stdout=subprocess.PIPE).stdout)


def print_table(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def compare_photos(args):
    """catdog eval and predict against bench/pytorch_photos.py on the photos of args.photos."""
    catdog = [args.catdog]
    # One pass a photo, as PyTorch's: catdog averages in the mirror image unless told not to.
    model = ["--model", "builtin", "--backend", "cpu", "--no-flip"]
    threads = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    rounds = []
    for number in range(1, args.rounds + 1):
        print(f"round {number} of {args.rounds}", file=sys.stderr)
        evaluation = run_json(catdog + ["eval", "--data", args.photos, "--json"] + model)
        predict = run(catdog + ["predict", args.photos] + model,
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).stderr
        speed = re.search(r"predicted [\d,]+ photos in [\d.]+ s: (\d+) photos/s", predict)
        if speed is None:
            sys.exit(f"catdog predict printed no speed line:\n{predict}")
        pytorch = run_json([sys.executable, os.path.join(HERE, "pytorch_photos.py"), args.photos,
                            "--threads", threads, "--repeats", "1"])
        rounds.append({"catdog_eval": evaluation, "catdog_predict_images_per_sec": float(speed[1]),
                       "pytorch": pytorch})

    print(f"the built-in model ({pytorch['image_size']} px) over the {pytorch['photos']} photos of "
          f"{args.photos}, batch {pytorch['batch_size']}, catdog on flex and PyTorch "
          f"{pytorch['torch_version']} on the CPU, {threads} threads each; eval: photos/s from decoded "
          f"pixels to probabilities; predict: from the files, decoding included (PyTorch: a "
          f"DataLoader with {pytorch['workers']} Pillow workers); PyTorch's allocator: "
          f"{pytorch['allocator']}; {args.rounds} round(s)")
    rows = [("round", "catdog eval", "PyTorch eval", "ratio", "catdog predict", "PyTorch predict",
             "ratio", "catdog accuracy", "PyTorch accuracy")]
    ratios = []
    for number, result in enumerate(rounds, 1):
        evaluation, pytorch = result["catdog_eval"], result["pytorch"]
        predict = result["catdog_predict_images_per_sec"]
        ratio = (evaluation["infer_images_per_sec"] / pytorch["eval_images_per_sec"],
                 predict / pytorch["predict_images_per_sec"])
        ratios.append(ratio)
        accuracy = pytorch["accuracy"]
        rows.append((str(number), f"{evaluation['infer_images_per_sec']:.0f}",
                     f"{pytorch['eval_images_per_sec']:.0f}", f"{ratio[0]:.2f}x", f"{predict:.0f}",
                     f"{pytorch['predict_images_per_sec']:.0f}", f"{ratio[1]:.2f}x",
                     f"{evaluation['accuracy'] * 100:.1f} %",
                     "-" if accuracy is None else f"{accuracy * 100:.1f} %"))
    print_table(rows)
    if args.rounds > 1:
        eval_ratios, predict_ratios = zip(*ratios)
        print(f"median ratio over the rounds: eval {statistics.median(eval_ratios):.2f}x, "
              f"predict {statistics.median(predict_ratios):.2f}x")
    return rounds


def compare_bench(args):
    """catdog bench against bench/pytorch_reference.py, per backend and round."""
    # Both sides time the same work: the batches are made (normalised, in f32, on the
    # device) once before the clock starts, so only forward, backward and the update count.
    common = ["--network", args.network, "--image-size", args.image_size, "--batch-size", args.batch_size,
              "--seconds", args.seconds, "--repeats", args.repeats, "--data-on-device"]
    catdog_command = [args.catdog, "bench", "--json"] + common
    if args.backends:
        catdog_command += ["--backends", args.backends]
    rounds = []
    for number in range(1, args.rounds + 1):
        print(f"round {number} of {args.rounds}", file=sys.stderr)
        catdog = run_json(catdog_command)
        threads = str(catdog["machine"]["cpu"]["compute_threads"])
        pytorch = run_json([sys.executable, os.path.join(HERE, "pytorch_reference.py"),
                            "--threads", threads] + common)
        rounds.append({"catdog": catdog, "pytorch": pytorch})

    title = {"small-cnn": "SmallCnn", "small-cnn-wide": "wide SmallCnn",
             "resnet18": "ResNet-18", "efficientnet-lite0": "EfficientNet-Lite0"}[args.network]
    print(f"{title}, {args.image_size} px, batch {args.batch_size}, median photos/s of "
          f"{args.repeats} windows of >= {args.seconds} s; torch {pytorch['torch_version']}; "
          f"batches made before the clock starts on both sides; PyTorch's allocator: "
          f"{pytorch['settings']['allocator']}; {args.rounds} round(s), catdog then PyTorch in each")
    header = ("round", "catdog", "threads", "train", "infer", "PyTorch", "threads", "train",
              "infer", "train ratio", "infer ratio")
    rows = [header]
    ratios = {}
    for number, result in enumerate(rounds, 1):
        catdog, pytorch = result["catdog"], result["pytorch"]
        threads = str(catdog["machine"]["cpu"]["compute_threads"])
        by_backend = {run["backend"]: run for run in pytorch["runs"]}
        for run in catdog["runs"]:
            counterpart = by_backend.get("pytorch-cuda" if run["hardware_gpu"] else "pytorch-cpu")
            if counterpart is None:
                continue
            train = run["train_images_per_sec"] / counterpart["train_images_per_sec"]
            infer = run["infer_images_per_sec"] / counterpart["infer_images_per_sec"]
            ratios.setdefault(run["backend"], []).append((train, infer))
            rows.append((
                str(number), run["backend"], "GPU" if run["hardware_gpu"] else threads,
                f"{run['train_images_per_sec']:.1f}", f"{run['infer_images_per_sec']:.1f}",
                counterpart["backend"],
                "GPU" if run["hardware_gpu"] else str(pytorch["settings"]["threads"]),
                f"{counterpart['train_images_per_sec']:.1f}",
                f"{counterpart['infer_images_per_sec']:.1f}",
                f"{train:.2f}x", f"{infer:.2f}x",
            ))
    print_table(rows)
    if args.rounds > 1:
        for backend, pairs in ratios.items():
            train, infer = zip(*pairs)
            print(f"{backend}: median ratio over the rounds: train {statistics.median(train):.2f}x, "
                  f"infer {statistics.median(infer):.2f}x")
    return rounds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catdog", default=os.path.join(HERE, "..", "target", "release", "catdog"))
    parser.add_argument("--backends", default=None, help="catdog backends [default: catdog's default]")
    parser.add_argument("--network", choices=["small-cnn", "small-cnn-wide", "resnet18",
                                              "efficientnet-lite0"],
                        default="small-cnn")
    parser.add_argument("--image-size", default=None, help="[default: 64, 224 for resnet18]")
    parser.add_argument("--batch-size", default="32")
    parser.add_argument("--seconds", default="3")
    parser.add_argument("--repeats", default="3")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of both sides, alternated, each with its own ratio [default: 3]")
    parser.add_argument("--json", metavar="FILE", help="also write every round's results to FILE")
    parser.add_argument("--photos", metavar="DIR",
                        help="compare eval and predict on these photos instead of the bench")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.image_size is None:
        args.image_size = "224" if args.network in ("resnet18", "efficientnet-lite0") else "64"
    rounds = compare_photos(args) if args.photos else compare_bench(args)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"rounds": rounds}, out, indent=1)


if __name__ == "__main__":
    main()
