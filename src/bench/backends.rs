//! Which backends a bench measures, opening them, and whether a step fits in this machine's
//! memory where a backend computes on the CPU.

use anyhow::{Result, bail};

use super::BenchSettings;
use crate::device::{self, Backend, BackendChoice, BackendKind, GpuAdapter, Precision};
use crate::model::NetworkKind;
use crate::numbers::human_bytes;

/// The backends `catdog bench` measures when none are named: wgpu where there is a hardware
/// GPU, then flex, and ndarray for SmallCnn (either width).
pub fn default_choices(network: NetworkKind) -> Vec<BackendChoice> {
    let mut choices = vec![BackendChoice::Flex];
    if ndarray_left_out(network).is_none() {
        choices.push(BackendChoice::Ndarray);
    }
    if device::hardware_gpu().is_some() {
        choices.insert(0, BackendChoice::Gpu);
    }
    choices
}

/// Why `default_choices` leaves ndarray out for the networks of 224 px, for the user who
/// wonders; `None` for SmallCnn, which it measures.
pub fn ndarray_left_out(network: NetworkKind) -> Option<String> {
    match network {
        NetworkKind::SmallCnn | NetworkKind::SmallCnnWide => None,
        NetworkKind::ResNet18 | NetworkKind::EfficientNetLite0 => Some(format!(
            "ndarray left out: it trains {} so slowly that one step takes minutes; \
             `--backends flex,ndarray` measures it anyway",
            network.title()
        )),
    }
}

/// Bytes of memory a training step on a CPU backend takes per float of its input batch,
/// with room to spare: the activations kept for the backward pass, their gradients and the
/// batch. Measured on flex on 2026-12-05 (the peak resident memory of `catdog bench`): 177
/// for SmallCnn at 64 px (between batches of 128 and 512: 364 and 1,200 MB), about 300 for
/// ResNet-18 at 224 px, batch 32 (1.45 GB, the network and its optimizer included).
const STEP_BYTES_PER_INPUT_FLOAT: u64 = 400;

/// Whether a backend of `kind` on `adapter` computes in this machine's memory: the CPU
/// backends, and wgpu on a software rasterizer (lavapipe, llvmpipe), which runs on the CPU.
pub fn in_host_memory(kind: BackendKind, adapter: Option<&GpuAdapter>) -> bool {
    kind != BackendKind::Wgpu || adapter.is_some_and(|a| !a.kind.is_hardware())
}

/// Whether any of `choices` would compute in this machine's memory, as [`in_host_memory`]
/// says of the backend each one opens.
pub fn any_in_host_memory(choices: &[BackendChoice]) -> bool {
    choices.iter().any(|&choice| {
        device::plan(choice).is_ok_and(|plan| in_host_memory(plan.kind, plan.adapter))
    })
}

/// Refuses settings whose largest training step would take more than half of this machine's
/// memory on a CPU backend: at 1024 px and batch 4096 it would take petabytes and end the
/// process.
pub(super) fn check_cpu_memory(settings: &BenchSettings) -> Result<()> {
    let memory = device::cpu_info().memory_bytes;
    let batch = settings.batch_sizes.iter().copied().max().unwrap_or(0) as u64;
    let floats = batch * u64::from(settings.image_size).pow(2) * 3;
    let needed = floats.saturating_mul(STEP_BYTES_PER_INPUT_FLOAT);
    if memory > 0 && needed > memory / 2 {
        bail!(
            "a training step of {batch} pictures of {} px takes about {} on the CPU, more than \
             half of this computer's {} of memory: give a smaller batch size or image size",
            settings.image_size,
            human_bytes(needed),
            human_bytes(memory)
        );
    }
    Ok(())
}

/// Opens each backend of `choices` once (`gpu` and `wgpu` are one), wgpu computing in
/// `precision`; `note` hears which GPU adapter opened and why, and that the CPU backends
/// compute in f32 whatever `precision` says.
pub fn open_backends(
    choices: &[BackendChoice],
    precision: Precision,
    note: &mut dyn FnMut(String),
) -> Result<Vec<Backend>> {
    let mut backends: Vec<Backend> = Vec::new();
    for &choice in choices {
        let selection = device::select(choice)?;
        let mut backend = selection.backend;
        if backends.iter().any(|b| b.kind == backend.kind) {
            continue;
        }
        if backend.kind == BackendKind::Wgpu {
            backend.set_precision(precision)?;
            note(format!(
                "wgpu on {}. {}",
                backend.device_name, selection.reason
            ));
        } else if precision != Precision::F32 {
            note(format!(
                "{} computes in f32 only; --precision {} applies to wgpu",
                backend.kind,
                precision.name()
            ));
        }
        backends.push(backend);
    }
    Ok(backends)
}
