//! `--precision`: the float type the GPU computes in. Half precision is what reaches a GPU's
//! tensor cores (through SPIR-V's cooperative matrices); burn has no autocast, so the choice
//! is the device's default float type, set once before its first tensor.

use anyhow::{Result, bail};
use burn::tensor::{Device, FloatDType};
use serde::{Deserialize, Serialize};

use super::backend::{Backend, BackendKind};

/// The float type of the network's weights and activations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    F32,
    F16,
    Flex32,
}

impl Precision {
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F16, Precision::Flex32];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Flex32 => "flex32",
        }
    }

    /// One line for `--help`.
    pub fn help(self) -> &'static str {
        match self {
            Precision::F32 => "32-bit floats everywhere",
            Precision::F16 => {
                "16-bit floats for weights and activations (GPU only); the loss in f32"
            }
            Precision::Flex32 => {
                "Stored as f32, computed at half precision where the GPU allows (GPU only)"
            }
        }
    }

    /// What `device` computes in now.
    pub(crate) fn of(device: &Device) -> Precision {
        match device.settings().float_dtype {
            FloatDType::F16 => Precision::F16,
            FloatDType::Flex32 => Precision::Flex32,
            _ => Precision::F32,
        }
    }

    pub(crate) fn dtype(self) -> FloatDType {
        match self {
            Precision::F32 => FloatDType::F32,
            Precision::F16 => FloatDType::F16,
            Precision::Flex32 => FloatDType::Flex32,
        }
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
