//! What `catdog devices` reports, gathered once: the CPU, every adapter wgpu sees, what
//! `--backend auto` picks, and the adapter `--backend wgpu` opens (opened to ask what its
//! kernels can use). `output/devices.rs` puts it into words.

use anyhow::Result;

use super::{Backend, BackendChoice, CpuInfo, GpuAdapter, Plan};

/// The adapter `--backend wgpu` opened, or why it would not open.
pub type OpenedGpu = std::result::Result<Backend, String>;

/// This machine's devices, as catdog sees them.
pub struct Survey {
    pub cpu: &'static CpuInfo,
    pub adapters: Vec<&'static GpuAdapter>,
    pub auto: Plan,
    /// `None` where wgpu sees no adapter at all.
    pub wgpu: Option<OpenedGpu>,
}

impl Survey {
    pub fn take() -> Result<Survey> {
        let adapters = super::all_gpu_adapters();
        let wgpu = (!adapters.is_empty()).then(|| {
            super::select(BackendChoice::Wgpu)
                .map(|selection| selection.backend)
                .map_err(|err| format!("{err:#}"))
        });
        Ok(Survey {
            cpu: super::cpu_info(),
            auto: super::plan(BackendChoice::Auto)?,
            adapters,
            wgpu,
        })
    }
}
