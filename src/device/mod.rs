//! Where the work runs: the machine's CPU and GPUs ([`cpu_info`], [`gpu_adapters`]), the
//! backend chosen from them ([`select`]), and how the C allocator serves the CPU backends.

mod allocator;
mod backend;
mod batch;
mod failure;
mod hardware;
mod kernels;
mod missing_gpu;
mod precision;
mod survey;

pub use backend::{
    Backend, BackendChoice, BackendKind, CpuBackend, GpuFeatures, Selection, cpu_backend, select,
};
pub use hardware::{AdapterKind, GpuAdapter, hardware_gpu};
pub use missing_gpu::GPU_DEVICE_FILES;
pub use precision::Precision;

pub(crate) use backend::{Plan, is_cpu, plan};
pub(crate) use batch::Batch;
pub(crate) use failure::explain_panic;
pub(crate) use hardware::{CpuInfo, all_gpu_adapters, cpu_info};
pub(crate) use survey::Survey;
