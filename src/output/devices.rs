//! `catdog devices`: what the machine has, for people or as JSON.

use serde_json::{Value, json};

use crate::device::{CpuInfo, GpuAdapter, Plan};

/// `catdog devices`: the CPU, every adapter wgpu sees, and what `--backend auto` picks.
pub fn devices_text(cpu: &CpuInfo, adapters: &[&GpuAdapter], auto: &Plan) -> String {
    let mut out = format!(
        "CPU: {}, {} cores, {} threads (the CPU backends compute on {}), {:.1} GiB memory\n",
        cpu.model,
        cpu.cores.map_or_else(|| "?".to_string(), |c| c.to_string()),
        cpu.threads,
        cpu.compute_threads,
        cpu.memory_bytes as f64 / (1u64 << 30) as f64
    );
    if adapters.is_empty() {
        out.push_str(
            "GPU: none. wgpu finds no graphics adapter (no Vulkan, Metal or DX12 driver).\n",
        );
    } else {
        out.push_str("Graphics adapters wgpu finds:\n");
        for adapter in adapters {
            out.push_str(&format!(
                "  {}; vendor {}, driver {}\n",
                adapter.describe(),
                adapter.vendor,
                if adapter.driver.is_empty() {
                    "unknown"
                } else {
                    &adapter.driver
                }
            ));
        }
        if !adapters.iter().any(|a| a.kind.is_hardware()) {
            out.push_str("No hardware GPU: only software rasterizers, which run on the CPU.\n");
        }
    }
    out.push_str(&format!(
        "--backend auto uses {}. {}",
        auto.kind, auto.reason
    ));
    out
}

/// `catdog devices --json`.
pub fn devices_json(cpu: &CpuInfo, adapters: &[&GpuAdapter], auto: &Plan) -> Value {
    json!({
        "cpu": cpu,
        "gpus": adapters,
        "hardware_gpu": adapters.iter().any(|a| a.kind.is_hardware()),
        "auto": {"backend": auto.kind, "reason": auto.reason},
    })
}
