//! `catdog devices`: what the machine has, for people or as JSON.

use serde_json::{Value, json};

use crate::device::{Backend, CpuInfo, GpuAdapter, Plan};

/// The adapter `--backend wgpu` opened, or why it would not open.
pub type OpenedGpu = Result<Backend, String>;

/// `catdog devices`: the CPU, every adapter wgpu sees, and what `--backend auto` picks.
pub fn devices_text(
    cpu: &CpuInfo,
    adapters: &[&GpuAdapter],
    auto: &Plan,
    wgpu: Option<&OpenedGpu>,
) -> String {
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
    match wgpu {
        Some(Ok(backend)) => {
            if let Some(features) = &backend.gpu_features {
                out.push_str(&format!(
                    "--backend wgpu opens {}: {}.\n",
                    backend.device_name,
                    features.describe()
                ));
            }
        }
        Some(Err(err)) => out.push_str(&format!("--backend wgpu fails: {err}\n")),
        None => {}
    }
    out.push_str(&format!(
        "--backend auto uses {}. {}",
        auto.kind, auto.reason
    ));
    out
}

/// `catdog devices --json`.
pub fn devices_json(
    cpu: &CpuInfo,
    adapters: &[&GpuAdapter],
    auto: &Plan,
    wgpu: Option<&OpenedGpu>,
) -> Value {
    let wgpu = match wgpu {
        Some(Ok(backend)) => {
            json!({"device": backend.device_name, "features": backend.gpu_features})
        }
        Some(Err(err)) => json!({"error": err}),
        None => Value::Null,
    };
    json!({
        "cpu": cpu,
        "gpus": adapters,
        "hardware_gpu": adapters.iter().any(|a| a.kind.is_hardware()),
        "auto": {"backend": auto.kind, "reason": auto.reason},
        "wgpu": wgpu,
    })
}
