//! Which backend runs the network: the GPU through wgpu, or one of burn's two CPU backends.
//!
//! `--backend auto` asks [`hardware_gpu`](super::hardware_gpu) whether a real GPU exists,
//! which is what the deep-learning frameworks do by themselves; the other choices name a
//! backend outright.

use std::fmt;
use std::sync::OnceLock;

use anyhow::{Result, anyhow, bail};
use burn::tensor::{Device, DeviceKind};
use serde::{Deserialize, Serialize};

use super::hardware::{self, GpuAdapter};
use super::precision::Precision;
use super::{kernels, missing_gpu};

/// What the user asks for with `--backend`; [`help`](Self::help) says what each one means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    #[default]
    Auto,
    Gpu,
    Cpu,
    Wgpu,
    Flex,
    Ndarray,
}

impl BackendChoice {
    pub const ALL: [BackendChoice; 6] = [
        BackendChoice::Auto,
        BackendChoice::Gpu,
        BackendChoice::Cpu,
        BackendChoice::Wgpu,
        BackendChoice::Flex,
        BackendChoice::Ndarray,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Gpu => "gpu",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Wgpu => "wgpu",
            BackendChoice::Flex => "flex",
            BackendChoice::Ndarray => "ndarray",
        }
    }

    /// The choice `name` names (`"gpu"`, `"flex"`, …), if catdog has one by that name.
    pub fn from_name(name: &str) -> Option<BackendChoice> {
        BackendChoice::ALL
            .into_iter()
            .find(|choice| choice.name() == name)
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            BackendChoice::Auto => "The GPU when wgpu finds a hardware one, otherwise the CPU",
            BackendChoice::Gpu => {
                "wgpu on a hardware GPU (Vulkan, Metal, DX12); an error where there is none"
            }
            BackendChoice::Cpu => "The faster CPU backend for this network (flex)",
            BackendChoice::Wgpu => {
                "wgpu on any adapter, software rasterizers such as lavapipe included"
            }
            BackendChoice::Flex => "burn's pure-Rust CPU backend",
            BackendChoice::Ndarray => {
                "burn's older CPU backend (deprecated in burn 0.22, slow at training)"
            }
        }
    }
}

/// A concrete backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Wgpu,
    Flex,
    Ndarray,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Wgpu => "wgpu",
            BackendKind::Flex => "flex",
            BackendKind::Ndarray => "ndarray",
        })
    }
}

/// A backend ready to compute on.
#[derive(Clone, Debug)]
pub struct Backend {
    pub kind: BackendKind,
    pub device: Device,
    /// What runs the work, e.g. "NVIDIA H200 (Vulkan, discrete GPU)".
    pub device_name: String,
    /// The graphics adapter, for wgpu.
    pub adapter: Option<&'static GpuAdapter>,
    /// What wgpu's kernels are compiled to on it, and what they can use.
    pub gpu_features: Option<GpuFeatures>,
    /// The float type it computes in ([`set_precision`](Self::set_precision)).
    pub precision: Precision,
}

/// What the GPU runtime compiles its kernels to on an adapter, and what they can use: read
/// from the runtime itself once it is open, so it is what training will get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GpuFeatures {
    /// "SPIR-V" (Vulkan), "MSL" (Metal) or "WGSL" (the portable fallback).
    pub compiler: &'static str,
    /// Cooperative-matrix (tensor-core) instructions in matmuls and convolutions; WGSL has
    /// none.
    pub cooperative_matrix: bool,
    /// Half-precision floats, which `--precision f16` needs.
    pub f16: bool,
}

impl GpuFeatures {
    /// "SPIR-V kernels, cooperative matrix (tensor cores): no, f16: yes".
    pub fn describe(&self) -> String {
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        format!(
            "{} kernels, cooperative matrix (tensor cores): {}, f16: {}",
            self.compiler,
            yes_no(self.cooperative_matrix),
            yes_no(self.f16)
        )
    }
}

/// Whether `device` is one of the CPU backends (flex, ndarray), whose operations spread over
/// the CPU's threads themselves; a GPU's run in their own queues.
pub fn is_cpu(device: &Device) -> bool {
    use burn::backend::DispatchDevice;
    matches!(
        device.as_dispatch(),
        DispatchDevice::Flex(_) | DispatchDevice::NdArray(_)
    )
}

impl Backend {
    /// Whether the work runs on a real GPU (not the CPU, nor a software rasterizer).
    pub fn is_hardware_gpu(&self) -> bool {
        self.adapter.is_some_and(|a| a.kind.is_hardware())
    }
}

/// What `--backend` resolves to on this machine, before any device is opened.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: BackendKind,
    /// The adapter, for wgpu.
    pub adapter: Option<&'static GpuAdapter>,
    /// Why: "auto: found a hardware GPU, …", "asked for flex".
    pub reason: String,
}

/// The backend chosen, opened, and why it was chosen.
#[derive(Clone, Debug)]
pub struct Selection {
    pub backend: Backend,
    pub reason: String,
    /// What to tell a user before the first steps where this run tunes GPU kernels (the first
    /// run on an adapter, which can take minutes); `None` otherwise.
    pub tuning_note: Option<String>,
}

/// Resolves `--backend` and opens the device; for wgpu, the reason also says where its tuned
/// kernels are kept and whether this run tunes them.
pub fn select(choice: BackendChoice) -> Result<Selection> {
    let plan = plan(choice)?;
    let mut reason = plan.reason.clone();
    let mut tuning_note = None;
    if plan.kind == BackendKind::Wgpu
        && let Some(cache) = kernels::use_catdog_cache()
    {
        reason = format!("{reason} {}", cache.describe());
        tuning_note = (!cache.tuned_before).then(|| cache.describe());
    }
    Ok(Selection {
        backend: open(&plan)?,
        reason,
        tuning_note,
    })
}

/// Resolves `--backend` to a backend (and, for wgpu, an adapter) without opening anything.
pub fn plan(choice: BackendChoice) -> Result<Plan> {
    let named = |kind: BackendKind, adapter: Option<&'static GpuAdapter>| Plan {
        kind,
        adapter,
        reason: match adapter {
            Some(adapter) if !adapter.kind.is_hardware() => format!(
                "Asked for {kind}. {} is a software rasterizer: it computes on the CPU, far \
                 slower than --backend cpu, and its first run tunes kernels for many minutes.",
                adapter.name
            ),
            _ => format!("Asked for {kind}."),
        },
    };
    Ok(match choice {
        BackendChoice::Auto => match hardware::hardware_gpu() {
            Some(gpu) => Plan {
                kind: BackendKind::Wgpu,
                adapter: Some(gpu),
                reason: format!("Chosen by auto: wgpu found {}.", gpu.describe()),
            },
            None => Plan {
                kind: BackendKind::Flex,
                adapter: None,
                reason: match missing_gpu_causes() {
                    Some(causes) => format!(
                        "Chosen by auto: no GPU found, so the CPU it is.\n  A GPU may be \
                         hidden: {causes}"
                    ),
                    None => "Chosen by auto: no GPU found, so the CPU it is (`catdog devices` \
                             says what this computer has)."
                        .to_string(),
                },
            },
        },
        BackendChoice::Gpu => match hardware::hardware_gpu() {
            Some(gpu) => named(BackendKind::Wgpu, Some(gpu)),
            None => bail!(
                "--backend gpu: {}. Use --backend cpu to run on the CPU \
                 (or --backend wgpu to run the GPU code on a software rasterizer)",
                no_gpu_reason()
            ),
        },
        BackendChoice::Wgpu => {
            match hardware::hardware_gpu().or_else(|| hardware::gpu_adapters().first()) {
                Some(adapter) => named(BackendKind::Wgpu, Some(adapter)),
                None => bail!(
                    "--backend wgpu: wgpu finds no graphics adapter at all ({}). Use --backend \
                     cpu",
                    missing_gpu_causes().unwrap_or_else(|| {
                        "no Vulkan, Metal or DX12 driver; on Debian or Ubuntu, `apt install \
                         mesa-vulkan-drivers` gives a software one"
                            .to_string()
                    })
                ),
            }
        }
        BackendChoice::Cpu | BackendChoice::Flex => named(BackendKind::Flex, None),
        BackendChoice::Ndarray => named(BackendKind::Ndarray, None),
    })
}

/// Opens the device a [`Plan`] names.
fn open(plan: &Plan) -> Result<Backend> {
    match (plan.kind, plan.adapter) {
        (BackendKind::Wgpu, Some(adapter)) => wgpu_backend(adapter),
        (BackendKind::Wgpu, None) => bail!("wgpu needs an adapter"),
        (BackendKind::Flex, _) => Ok(cpu_backend(CpuBackend::Flex)),
        (BackendKind::Ndarray, _) => Ok(cpu_backend(CpuBackend::Ndarray)),
    }
}

/// Why there is no GPU to use, in the user's words, with what to try where the machine
/// shows a cause.
fn no_gpu_reason() -> String {
    let adapters = hardware::gpu_adapters();
    let found = if adapters.is_empty() {
        "no GPU found (wgpu sees no graphics adapter)".to_string()
    } else {
        let names: Vec<String> = adapters.iter().map(GpuAdapter::describe).collect();
        format!(
            "no hardware GPU found (wgpu sees only {})",
            names.join("; ")
        )
    };
    match missing_gpu_causes() {
        Some(causes) => format!("{found}; {causes}"),
        None => found,
    }
}

/// What on this machine keeps Vulkan from seeing a GPU, with what to try; `None` where
/// nothing shows.
fn missing_gpu_causes() -> Option<String> {
    let causes = missing_gpu::explain(&missing_gpu::ThisMachine);
    (!causes.is_empty()).then(|| causes.join("; "))
}

/// One of burn's CPU backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuBackend {
    Flex,
    Ndarray,
}

impl From<CpuBackend> for BackendKind {
    fn from(cpu: CpuBackend) -> BackendKind {
        match cpu {
            CpuBackend::Flex => BackendKind::Flex,
            CpuBackend::Ndarray => BackendKind::Ndarray,
        }
    }
}

/// A CPU backend on all the threads rayon gives it.
pub fn cpu_backend(cpu: CpuBackend) -> Backend {
    super::allocator::keep_freed_memory();
    let device = match cpu {
        CpuBackend::Flex => Device::flex(),
        // Deprecated in burn 0.22 in favour of flex; catdog keeps it so both can be compared.
        #[allow(deprecated)]
        CpuBackend::Ndarray => Device::ndarray(),
    };
    Backend {
        kind: cpu.into(),
        device,
        device_name: format!(
            "{} ({} threads)",
            hardware::cpu_info().model,
            hardware::cpu_info().compute_threads
        ),
        adapter: None,
        gpu_features: None,
        precision: Precision::F32,
    }
}

/// wgpu on `adapter`. The runtime can be set up once per process, so the device is kept.
fn wgpu_backend(adapter: &'static GpuAdapter) -> Result<Backend> {
    static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();
    let device = DEVICE
        .get_or_init(|| {
            Device::wgpu_options()
                .device_kind(device_kinds(adapter).0)
                .init()
                .map_err(|err| err.to_string())
        })
        .clone()
        .map_err(|err| anyhow!("could not open {}: {err}", adapter.describe()))?;
    Ok(Backend {
        kind: BackendKind::Wgpu,
        gpu_features: gpu_features(&device, adapter),
        precision: Precision::of(&device),
        device,
        device_name: adapter.describe(),
        adapter: Some(adapter),
    })
}

/// Asks the runtime opened on `adapter` which compiler it chose and what it found; `None`
/// where this build has no such runtime.
fn gpu_features(device: &Device, adapter: &GpuAdapter) -> Option<GpuFeatures> {
    let client = burn::cubecl::Device::wgpu(device_kinds(adapter).1)
        .ok()?
        .client();
    Some(GpuFeatures {
        compiler: match client.name() {
            "wgpu<spirv>" => "SPIR-V",
            "wgpu<msl>" => "MSL",
            _ => "WGSL",
        },
        cooperative_matrix: !client.properties().features.matmul.cmma.is_empty(),
        f16: device.supports_dtype(burn::tensor::FloatDType::F16),
    })
}

/// `adapter` as burn names it (to open it) and as cubecl does (to ask its runtime what it
/// found): one list, so the two cannot name different adapters.
fn device_kinds(adapter: &GpuAdapter) -> (DeviceKind, burn::cubecl::wgpu::WgpuDeviceKind) {
    use burn::cubecl::wgpu::WgpuDeviceKind as Cube;
    use burn::tensor::wgpu::wgpu::DeviceType;
    let i = adapter.index_in_type;
    match adapter.device_type {
        DeviceType::DiscreteGpu => (DeviceKind::DiscreteGpu(i), Cube::DiscreteGpu(i)),
        DeviceType::IntegratedGpu => (DeviceKind::IntegratedGpu(i), Cube::IntegratedGpu(i)),
        DeviceType::VirtualGpu => (DeviceKind::VirtualGpu(i), Cube::VirtualGpu(i)),
        DeviceType::Cpu => (DeviceKind::Cpu, Cube::Cpu),
        DeviceType::Other => (DeviceKind::DefaultDevice, Cube::DefaultDevice),
    }
}

impl Backend {
    /// Makes `precision` this backend's float type. The GPU takes it once per process, before
    /// its first tensor; the CPU backends compute in f32 only.
    pub fn set_precision(&mut self, precision: Precision) -> Result<()> {
        if self.device.settings().float_dtype == precision.dtype() {
            self.precision = precision;
            return Ok(());
        }
        if self.kind != BackendKind::Wgpu {
            bail!(
                "--precision {} needs the GPU (--backend gpu or wgpu): {} computes in f32 only",
                precision.name(),
                self.kind
            );
        }
        if !self.device.supports_dtype(precision.dtype()) {
            bail!(
                "--precision {}: {} cannot compute in it (see `catdog devices` for its f16); \
                 use --precision f32",
                precision.name(),
                self.device_name
            );
        }
        if let Err(err) = self.device.configure(precision.dtype()) {
            bail!(
                "--precision {}: the GPU already computes in {:?} in this process, and takes a \
                 precision only before its first use ({err})",
                precision.name(),
                self.device.settings().float_dtype
            );
        }
        self.precision = precision;
        Ok(())
    }
}
