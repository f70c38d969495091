#!/usr/bin/env bash
# catdog on a machine with an NVIDIA GPU, everything written into one folder:
#   1. devices: the adapter, its Vulkan version, SPIR-V or WGSL, cooperative matrix, f16;
#   2. the article's comparison, same batch: `catdog bench --backends gpu,flex`, batch 32,
#      batches made on the host and uploaded each step as training does, for SmallCnn at 64 px
#      and for the article's kind of network, ResNet-18 at 224 px;
#   3. a ResNet-18 catdog trained, loaded into torchvision: the same answers
#      (bench/resnet18_exchange.py);
#   4. PyTorch beside it where it is installed: CUDA with cudnn.benchmark, f32 and AMP (f16),
#      batches on the device, and the CPU at batch 32;
#   5. the GPU at its best: several batch sizes with the batches kept on the device
#      (--data-on-device), in f32 and f16, training and inference, with each run's warm-up
#      (kernel tuning) time in its JSON: ResNet-18 at 32, 128 and 256, SmallCnn at 32, 128
#      and 512.
# The most telling figures come first, so that a run cut short still has them. Designed to
# finish within 8 minutes on an H200 with 16 cores; every command has a timeout, so one that
# hangs costs its slot, not the run.
#
# Such a machine may have no internet and no Rust toolchain: build the binary elsewhere, for
# any x86-64 CPU with AVX2, and copy it over with this repository:
#   RUSTFLAGS="-C target-cpu=x86-64-v3" cargo build --release --locked
#   bench/gpu-check.sh target/release/catdog gpu-check-out
# It needs the Vulkan loader (libvulkan.so.1) and the NVIDIA driver's Vulkan ICD
# (nvidia_icd.json; in a container, NVIDIA_DRIVER_CAPABILITIES=all).
set -uo pipefail

catdog=${1:-target/release/catdog}
out=${2:-gpu-check-$(date -u +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/log.txt" >&2; }
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started)) s"; }

[ -x "$catdog" ] || { log "no catdog binary at $catdog"; exit 1; }
{
    date -u
    uname -a
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 || true
    ldconfig -p | grep -E 'libvulkan\.so' || echo "no Vulkan loader (libvulkan.so.1) found"
    ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
    grep -m1 'model name' /proc/cpuinfo
    nproc
} > "$out/machine.txt" 2>&1

log "devices"
"$catdog" devices > "$out/devices.txt" 2>&1
"$catdog" devices --json > "$out/devices.json" 2>> "$out/log.txt"
cat "$out/devices.txt" >&2

# One line per run of a catdog or PyTorch JSON report.
summary() {
    python3 - "$1" <<'PY' >&2 2>/dev/null || true
import json, sys
report = json.load(open(sys.argv[1]))
network = report["settings"].get("network", "small-cnn")
for run in report["runs"]:
    print(f'  {network:9} {run["backend"]:13} {run.get("precision", "f32"):7} batch {run.get("batch_size", report["settings"].get("batch_size", "?")):>4}'
          f' {run["train_images_per_sec"]:10.1f} train {run["infer_images_per_sec"]:10.1f} infer'
          f'  warm-up {run["warmup_seconds"]:5.1f} + {run.get("infer_warmup_seconds", 0):4.1f} s  {run["device"]}')
PY
}

bench() { # name, timeout in seconds, then catdog bench's flags
    local name=$1 limit=$2
    shift 2
    log "catdog bench $* ($(elapsed) so far)"
    timeout "$limit" "$catdog" bench --repeats 3 --json \
        --export-markdown "$out/$name.md" --chart "$out/$name.svg" "$@" \
        > "$out/$name.json" 2> "$out/$name.log" || log "$name failed or timed out (see $name.log)"
    summary "$out/$name.json"
    # The plain answer, as `catdog bench` prints it first.
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' \
        "$out/$name.json" > "$out/$name.txt" 2>/dev/null && cat "$out/$name.txt" >&2
}

have_torch=false
python3 -c 'import torch' 2>/dev/null && have_torch=true
reference() { # name, timeout in seconds, then pytorch_reference.py's flags
    local name=$1 limit=$2
    shift 2
    $have_torch || return 0
    log "PyTorch $* ($(elapsed) so far)"
    timeout "$limit" python3 "$here/pytorch_reference.py" --seconds 1 --repeats 3 "$@" \
        > "$out/$name.json" 2>> "$out/log.txt" || log "PyTorch $name failed or timed out"
    summary "$out/$name.json"
}
$have_torch || log "PyTorch is not installed here: skipped the reference (see bench/pytorch_reference.py)"

# 2. The article's comparison, for both networks.
bench same-batch-small-cnn-64 60 --backends gpu,flex --image-size 64 --batch-size 32 --seconds 2
bench same-batch-resnet18-224 150 --network resnet18 --backends gpu,flex --batch-size 32 --seconds 2

# 3. catdog's ResNet-18 in torchvision.
if $have_torch && python3 -c 'import torchvision' 2>/dev/null; then
    log "ResNet-18 weights into torchvision ($(elapsed) so far)"
    timeout 90 "$catdog" synth --out "$out/exchange-pictures" --count 8 --size 64 > /dev/null 2>> "$out/log.txt"
    timeout 120 "$catdog" train --network resnet18 --backend cpu --data "$out/exchange-pictures" \
        --image-size 64 --epochs 1 --batch-size 4 --val-split 0.25 --out "$out/exchange-model" \
        > "$out/exchange-train.txt" 2>&1 &&
        timeout 120 python3 "$here/resnet18_exchange.py" "$out/exchange-model" \
            "$out/exchange-pictures/cat" --catdog "$catdog" 2>&1 | tee "$out/exchange.txt" >&2 ||
        log "the ResNet-18 exchange check failed (see exchange-train.txt, exchange.txt)"
fi

# 4. PyTorch at the same batch, then at its best.
reference pytorch-cuda-resnet18-224-32 60 --network resnet18 --devices cuda --batch-size 32 --data-on-device
reference pytorch-cpu-resnet18-224-32 90 --network resnet18 --devices cpu --batch-size 32
reference pytorch-cuda-small-cnn-64-32 45 --devices cuda --image-size 64 --batch-size 32 --data-on-device
reference pytorch-cpu-small-cnn-64-32 45 --devices cpu --image-size 64 --batch-size 32
for amp in "" "--amp"; do
    reference "pytorch-cuda-resnet18-224-256${amp:+-amp}" 60 --network resnet18 --devices cuda \
        --batch-size 256 --data-on-device $amp
    reference "pytorch-cuda-small-cnn-64-512${amp:+-amp}" 45 --devices cuda --image-size 64 \
        --batch-size 512 --data-on-device $amp
done

# 5. The GPU at its best.
for precision in f32 f16; do
    bench "gpu-best-resnet18-224-$precision" 120 --network resnet18 --backends gpu \
        --batch-size 32,128,256 --data-on-device --precision "$precision" --seconds 1
done
for precision in f32 f16; do
    bench "gpu-best-small-cnn-64-$precision" 75 --backends gpu --image-size 64 \
        --batch-size 32,128,512 --data-on-device --precision "$precision" --seconds 1
done
log "done in $(elapsed): $out"
