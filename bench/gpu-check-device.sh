#!/usr/bin/env bash
# bench/gpu-check.sh on a GPU machine that has an NVIDIA driver but no Rust, no Vulkan loader
# and no internet (CONTRIBUTING.md, "Running the GPU check"): the loaders come as Debian
# packages in .gl/, the binary as .device/catdog.xz (built for x86-64-v3 and stripped), both
# copied beside the checkout. Writes everything into one archive, $OUT/gpu-check.tgz, and the
# console into $OUT/console.txt, two files to copy back.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
for deb in .gl/*.deb; do dpkg -x "$deb" /; done
ldconfig
# The NVIDIA driver's Vulkan ICD, where the loader does not find it by itself.
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ] && ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
    export VK_DRIVER_FILES=$icd
fi
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
[ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}" | tee "$out/console.txt"
xz -dc .device/catdog.xz > /tmp/catdog 2>/dev/null ||
    python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.device/catdog.xz'), open('/tmp/catdog', 'wb'))" ||
    { echo "no .device/catdog.xz" | tee -a "$out/console.txt"; exit 1; }
chmod +x /tmp/catdog
export XDG_CACHE_HOME=/tmp/cache PYTHONUNBUFFERED=1
timeout "${GPU_CHECK_SECONDS:-490}" bench/gpu-check.sh /tmp/catdog /tmp/gc 2>&1 | tee -a "$out/console.txt"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv >> "$out/console.txt" 2>&1
rm -rf /tmp/gc/exchange-pictures /tmp/gc/exchange-model
tar czf "$out/gpu-check.tgz" -C /tmp gc
