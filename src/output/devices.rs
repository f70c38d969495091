//! `catdog devices`: what the machine has, for people or as JSON.

use serde_json::{Value, json};

use crate::device::{BackendKind, GpuAdapter, Plan, Survey};

/// The first line of `catdog devices`: is there a GPU, and what will catdog use.
fn verdict(adapters: &[&GpuAdapter], auto: &Plan) -> String {
    match auto.adapter {
        Some(gpu) if auto.kind == BackendKind::Wgpu => format!(
            "GPU: yes, {} ({}). catdog uses it unless told --backend cpu.\n",
            gpu.name,
            gpu.kind
                .describe()
                .trim_start_matches("a ")
                .trim_start_matches("an ")
        ),
        _ => match adapters.iter().find(|a| !a.kind.is_hardware()) {
            Some(software) => format!(
                "No GPU found: catdog will use the CPU. (wgpu sees only {}, a software \
                 rasterizer that runs on the CPU.)\n",
                software.name
            ),
            None => "No GPU found: catdog will use the CPU.\n".to_string(),
        },
    }
}

/// `catdog devices`' text, from what [`Survey::take`] found: the verdict, then the CPU, every
/// adapter wgpu sees, and what `--backend auto` picks.
pub fn devices_text(survey: &Survey) -> String {
    let Survey {
        cpu,
        adapters,
        auto,
        wgpu,
    } = survey;
    let mut out = verdict(adapters, auto);
    out.push_str(&format!(
        "CPU: {}, {} cores, {} threads (the CPU backends compute on {}), {:.1} GiB memory\n",
        cpu.model,
        cpu.cores.map_or_else(|| "?".to_string(), |c| c.to_string()),
        cpu.threads,
        cpu.compute_threads,
        cpu.memory_bytes as f64 / (1u64 << 30) as f64
    ));
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
pub fn devices_json(survey: &Survey) -> Value {
    let Survey {
        cpu,
        adapters,
        auto,
        wgpu,
    } = survey;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::AdapterKind;
    use burn::tensor::wgpu::wgpu;

    fn adapter(name: &str, kind: AdapterKind) -> &'static GpuAdapter {
        Box::leak(Box::new(GpuAdapter {
            name: name.into(),
            vendor: "0x10de".into(),
            kind,
            api: "Vulkan".into(),
            api_version: Some("1.3".into()),
            driver: String::new(),
            index_in_type: 0,
            device_type: wgpu::DeviceType::DiscreteGpu,
        }))
    }

    fn plan(kind: BackendKind, adapter: Option<&'static GpuAdapter>) -> Plan {
        Plan {
            kind,
            adapter,
            reason: "because".into(),
        }
    }

    #[test]
    fn the_first_line_says_whether_there_is_a_gpu_and_what_catdog_uses() {
        let h200 = adapter("NVIDIA H200", AdapterKind::Discrete);
        assert_eq!(
            verdict(&[h200], &plan(BackendKind::Wgpu, Some(h200))),
            "GPU: yes, NVIDIA H200 (discrete GPU). catdog uses it unless told --backend cpu.\n"
        );
        let llvmpipe = adapter("llvmpipe (LLVM 15.0.6, 256 bits)", AdapterKind::Software);
        let line = verdict(&[llvmpipe], &plan(BackendKind::Flex, None));
        assert!(
            line.starts_with("No GPU found: catdog will use the CPU. (wgpu sees only llvmpipe"),
            "{line}"
        );
        assert_eq!(
            verdict(&[], &plan(BackendKind::Flex, None)),
            "No GPU found: catdog will use the CPU.\n"
        );
    }
}
