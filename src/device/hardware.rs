//! What this machine has: its CPU and the graphics adapters wgpu can see.
//!
//! Used to pick a backend (`--backend auto`) and to name the device in every report.

use std::sync::OnceLock;

use super::missing_gpu::{ThisMachine, may_reach_a_gpu};
use burn::tensor::wgpu::wgpu;
use serde::Serialize;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};

/// What kind of adapter wgpu reports. Software rasterizers (lavapipe, llvmpipe,
/// SwiftShader, WARP) run on the CPU and are no GPU at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AdapterKind {
    Discrete,
    Integrated,
    Virtual,
    Software,
    Other,
}

impl AdapterKind {
    pub fn is_hardware(self) -> bool {
        !matches!(self, AdapterKind::Software)
    }

    /// "a discrete GPU", "a software rasterizer (no GPU: it runs on the CPU)".
    pub fn describe(self) -> &'static str {
        match self {
            AdapterKind::Discrete => "a discrete GPU",
            AdapterKind::Integrated => "an integrated GPU",
            AdapterKind::Virtual => "a virtual GPU",
            AdapterKind::Software => "a software rasterizer (no GPU: it runs on the CPU)",
            AdapterKind::Other => "a GPU of unknown kind",
        }
    }
}

/// One graphics adapter as wgpu sees it on one graphics API.
#[derive(Clone, Debug, Serialize)]
pub struct GpuAdapter {
    pub name: String,
    pub vendor: String,
    pub kind: AdapterKind,
    /// The graphics API: Vulkan, Metal, DX12 or GL.
    pub api: String,
    /// The version of it the driver offers, where wgpu says (Vulkan): "1.3".
    pub api_version: Option<String>,
    pub driver: String,
    /// Position among the adapters of the same wgpu device type on the same API:
    /// what `DeviceKind::DiscreteGpu(n)` and friends count.
    #[serde(skip)]
    pub index_in_type: usize,
    #[serde(skip)]
    pub device_type: wgpu::DeviceType,
}

impl GpuAdapter {
    /// "NVIDIA H200 on Vulkan 1.3, a discrete GPU".
    pub fn describe(&self) -> String {
        format!(
            "{} on {}{}, {}",
            self.name,
            self.api,
            self.api_version
                .as_ref()
                .map_or_else(String::new, |v| format!(" {v}")),
            self.kind.describe()
        )
    }
}

/// Graphics APIs in the order burn's wgpu runtime tries them.
const APIS: [wgpu::Backend; 4] = [
    wgpu::Backend::Vulkan,
    wgpu::Backend::Metal,
    wgpu::Backend::Dx12,
    wgpu::Backend::Gl,
];

/// The adapters burn's wgpu runtime chooses from: those of the first graphics API that has a
/// hardware adapter, else of the first that has any (as burn's runtime settles it).
pub fn gpu_adapters() -> &'static [GpuAdapter] {
    let apis = || APIS.iter().map(|&api| adapters_on(api));
    apis()
        .find(|adapters| adapters.iter().any(|a| a.kind.is_hardware()))
        .or_else(|| apis().find(|adapters| !adapters.is_empty()))
        .unwrap_or_default()
}

/// Every adapter on the native graphics APIs (Vulkan, Metal, DX12); GL, which lists the
/// same devices again, only where those find none.
pub fn all_gpu_adapters() -> Vec<&'static GpuAdapter> {
    let (gl, native) = APIS.split_last().expect("APIS is not empty");
    let found: Vec<&GpuAdapter> = native.iter().flat_map(|&api| adapters_on(api)).collect();
    if found.is_empty() {
        adapters_on(*gl).iter().collect()
    } else {
        found
    }
}

/// The first hardware GPU, if any. Where no GPU can be reached ([`may_reach_a_gpu`]) the
/// graphics drivers are not loaded to find that out: `--backend auto` on a machine without a
/// GPU starts as fast as `--backend cpu`.
pub fn hardware_gpu() -> Option<&'static GpuAdapter> {
    if !may_reach_a_gpu(&ThisMachine) {
        return None;
    }
    gpu_adapters().iter().find(|a| a.kind.is_hardware())
}

/// The adapters of one graphics API, probed once per process (probing loads drivers).
fn adapters_on(api: wgpu::Backend) -> &'static [GpuAdapter] {
    static PROBED: [OnceLock<Vec<GpuAdapter>>; APIS.len()] =
        [const { OnceLock::new() }; APIS.len()];
    let slot = APIS.iter().position(|&a| a == api).expect("one of APIS");
    PROBED[slot].get_or_init(|| {
        if wgpu::Instance::enabled_backend_features().contains(api.into()) {
            probe(api)
        } else {
            Vec::new()
        }
    })
}

fn probe(api: wgpu::Backend) -> Vec<GpuAdapter> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: api.into(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(api.into()));
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
    infos
        .iter()
        .zip(&adapters)
        .enumerate()
        .map(|(position, (info, adapter))| GpuAdapter {
            name: info.name.clone(),
            vendor: vendor_name(info.vendor),
            kind: adapter_kind(info),
            api: api_name(info.backend).to_string(),
            api_version: vulkan_version(adapter),
            driver: [info.driver.as_str(), info.driver_info.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
            index_in_type: infos[..position]
                .iter()
                .filter(|earlier| earlier.device_type == info.device_type)
                .count(),
            device_type: info.device_type,
        })
        .collect()
}

/// The Vulkan version the driver offers for `adapter`, "1.3"; `None` on other APIs.
#[cfg(not(target_vendor = "apple"))]
fn vulkan_version(adapter: &wgpu::Adapter) -> Option<String> {
    // SAFETY: the hal adapter is only read while `adapter` keeps it alive.
    let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }?;
    let version = hal.physical_device_capabilities().properties().api_version;
    // VK_API_VERSION_MAJOR and _MINOR.
    Some(format!(
        "{}.{}",
        (version >> 22) & 0x7f,
        (version >> 12) & 0x3ff
    ))
}

#[cfg(target_vendor = "apple")]
fn vulkan_version(_adapter: &wgpu::Adapter) -> Option<String> {
    None
}

fn adapter_kind(info: &wgpu::AdapterInfo) -> AdapterKind {
    let name = info.name.to_lowercase();
    let software_names = [
        "llvmpipe",
        "lavapipe",
        "swiftshader",
        "softpipe",
        "basic render",
    ];
    if software_names.iter().any(|s| name.contains(s)) {
        return AdapterKind::Software;
    }
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => AdapterKind::Discrete,
        wgpu::DeviceType::IntegratedGpu => AdapterKind::Integrated,
        wgpu::DeviceType::VirtualGpu => AdapterKind::Virtual,
        wgpu::DeviceType::Cpu => AdapterKind::Software,
        wgpu::DeviceType::Other => AdapterKind::Other,
    }
}

fn api_name(api: wgpu::Backend) -> &'static str {
    match api {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "DX12",
        wgpu::Backend::Gl => "GL",
        wgpu::Backend::BrowserWebGpu => "WebGPU",
        wgpu::Backend::Noop => "none",
    }
}

/// PCI vendor ids of the GPU makers a user is likely to have.
fn vendor_name(id: u32) -> String {
    match id {
        0x10de => "NVIDIA".into(),
        0x1002 | 0x1022 => "AMD".into(),
        0x8086 => "Intel".into(),
        0x106b => "Apple".into(),
        0x13b5 => "ARM".into(),
        0x5143 => "Qualcomm".into(),
        0x10005 => "Mesa".into(),
        0 => "unknown".into(),
        other => format!("{other:#06x}"),
    }
}

/// The processor and memory.
#[derive(Clone, Debug, Serialize)]
pub struct CpuInfo {
    /// e.g. "AMD EPYC 9B14"
    pub model: String,
    /// Physical cores, where the system says.
    pub cores: Option<usize>,
    /// Hardware threads.
    pub threads: usize,
    /// Threads the CPU backends compute on (rayon's pool; `RAYON_NUM_THREADS` sets it).
    pub compute_threads: usize,
    pub memory_bytes: u64,
}

/// What the CPU is, read once per process.
pub fn cpu_info() -> &'static CpuInfo {
    static INFO: OnceLock<CpuInfo> = OnceLock::new();
    INFO.get_or_init(|| {
        let refresh = RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing())
            .with_memory(MemoryRefreshKind::nothing().with_ram());
        let system = System::new_with_specifics(refresh).ok();
        let model = system
            .as_ref()
            .and_then(|s| s.cpus().first())
            .map(|cpu| cpu.brand().trim().to_string())
            .filter(|brand| !brand.is_empty())
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        CpuInfo {
            model,
            cores: System::physical_core_count().ok(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            compute_threads: rayon::current_num_threads(),
            memory_bytes: system.as_ref().map_or(0, System::total_memory),
        }
    })
}
