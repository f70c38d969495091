#!/usr/bin/env bash
# catdog on a machine with an NVIDIA GPU, everything written into one folder (issue 18, item 6):
#   1. devices: the adapter, its Vulkan version, SPIR-V or WGSL, cooperative matrix, f16;
#   2. the article's comparison, same batch: `catdog bench --backends gpu,flex` at 64 and
#      128 px, batch 32, batches made on the host and uploaded each step as training does;
#   3. the GPU at its best: --batch-size 32,128,512 with the batches kept on the device
#      (--data-on-device), in f32 and f16, at 64 and 128 px, training and inference, with each
#      run's warm-up (kernel tuning) time in its JSON;
#   4. PyTorch beside it where it is installed: CUDA with cudnn.benchmark, f32 and AMP (f16)
#      at the same sizes with the batches on the device, and the CPU at batch 32.
# Designed to finish within 8 minutes on an H200 with 16 cores; every command has a timeout,
# so one that hangs costs its slot, not the run.
#
# Such a machine may have no internet and no Rust toolchain: build the binary elsewhere, for
# any x86-64 CPU with AVX2, and copy it over with this repository:
#   RUSTFLAGS="-C target-cpu=x86-64-v3" cargo build --release
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
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
    ldconfig -p | grep -E 'libvulkan\.so' || echo "no Vulkan loader (libvulkan.so.1) found"
    ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>&1
    nproc
} > "$out/machine.txt" 2>&1

log "devices"
"$catdog" devices > "$out/devices.txt" 2>&1
"$catdog" devices --json > "$out/devices.json" 2>> "$out/log.txt"
cat "$out/devices.txt" >&2

# One line per run of a catdog or PyTorch JSON report.
summary() {
    python3 - "$1" <<'PY' >&2 || true
import json, sys
report = json.load(open(sys.argv[1]))
for run in report["runs"]:
    print(f'  {run["backend"]:13} {run.get("precision", "f32"):7} batch {run.get("batch_size", report["settings"].get("batch_size", "?")):>4}'
          f' {run["train_images_per_sec"]:10.1f} train {run["infer_images_per_sec"]:10.1f} infer'
          f'  warm-up {run["warmup_seconds"]:5.1f} s  {run["device"]}')
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
}

for px in 64 128; do
    bench "same-batch-$px" 60 --backends gpu,flex --image-size "$px" --batch-size 32 --seconds 2
done
for px in 64 128; do
    for precision in f32 f16; do
        bench "gpu-best-$px-$precision" 75 --backends gpu --image-size "$px" \
            --batch-size 32,128,512 --data-on-device --precision "$precision" --seconds 1
    done
done

if python3 -c 'import torch' 2>/dev/null; then
    reference() { # name, then pytorch_reference.py's flags
        local name=$1
        shift
        log "PyTorch $* ($(elapsed) so far)"
        timeout 60 python3 "$here/pytorch_reference.py" --seconds 1 --repeats 3 "$@" \
            > "$out/$name.json" 2>> "$out/log.txt" || log "PyTorch $name failed or timed out"
        summary "$out/$name.json"
    }
    for px in 64 128; do
        reference "pytorch-cpu-$px" --devices cpu --image-size "$px" --batch-size 32
        for batch in 32 128 512; do
            for amp in "" "--amp"; do
                reference "pytorch-cuda-$px-$batch${amp:+-amp}" --devices cuda --image-size "$px" \
                    --batch-size "$batch" --data-on-device $amp
            done
        done
    done
else
    log "PyTorch is not installed here: skipped the reference (see bench/pytorch_reference.py)"
fi
log "done in $(elapsed): $out"
