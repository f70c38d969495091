#!/usr/bin/env bash
# catdog on a machine with an NVIDIA GPU, everything written into one folder:
#   devices, `catdog bench` on wgpu and the CPU backends at 64 and 128 px (table, Markdown,
#   JSON, chart), and the PyTorch reference on CUDA and the CPU where PyTorch is installed.
#
# Such a machine may have no internet and no Rust toolchain: build the binary elsewhere,
# for any x86-64 CPU with AVX2, and copy it over with this repository:
#   RUSTFLAGS="-C target-cpu=x86-64-v3" cargo build --release
#   bench/gpu-check.sh target/release/catdog gpu-check-out
# It needs the Vulkan loader (libvulkan.so.1) and the NVIDIA driver's Vulkan ICD.
set -uo pipefail

catdog=${1:-target/release/catdog}
out=${2:-gpu-check-$(date -u +%Y%m%d-%H%M%S)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/log.txt" >&2; }

[ -x "$catdog" ] || { log "no catdog binary at $catdog"; exit 1; }
{
    date -u
    uname -a
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
    ldconfig -p | grep -E 'libvulkan\.so' || echo "no Vulkan loader (libvulkan.so.1) found"
    nproc
} > "$out/machine.txt" 2>&1

log "devices"
"$catdog" devices > "$out/devices.txt" 2>&1
"$catdog" devices --json > "$out/devices.json" 2>> "$out/log.txt"
cat "$out/devices.txt" >&2

# ndarray trains ~25x slower than flex: measured at 64 px only.
for setting in "64 gpu,flex,ndarray" "128 gpu,flex"; do
    read -r px backends <<< "$setting"
    log "catdog bench at $px px on $backends"
    "$catdog" bench --backends "$backends" --image-size "$px" --batch-size 32 \
        --seconds 3 --repeats 3 --json \
        --export-markdown "$out/bench-$px.md" --chart "$out/bench-$px.svg" \
        > "$out/bench-$px.json" 2>> "$out/log.txt" || log "bench at $px px failed (see log.txt)"
    python3 - "$out/bench-$px.json" <<'PY' >&2 || true
import json, sys
report = json.load(open(sys.argv[1]))
for run in report["runs"]:
    print(f'  {run["backend"]:8} {run["train_images_per_sec"]:10.1f} train  {run["infer_images_per_sec"]:10.1f} infer  {run["device"]}')
PY
done

if python3 -c 'import torch' 2>/dev/null; then
    for px in 64 128; do
        log "PyTorch reference at $px px"
        python3 "$here/pytorch_reference.py" --image-size "$px" --batch-size 32 \
            --seconds 3 --repeats 3 > "$out/pytorch-$px.json" 2>> "$out/log.txt" \
            || log "PyTorch reference at $px px failed"
    done
else
    log "PyTorch is not installed here: skipped the reference (see bench/pytorch_reference.py)"
fi
log "done: $out"
