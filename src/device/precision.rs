//! `--precision`: the float type the GPU computes in. Half precision is what reaches a GPU's
//! tensor cores (through SPIR-V's cooperative matrices); burn has no autocast, so the choice
//! is the device's default float type, set once before its first tensor.

use burn::tensor::{Device, FloatDType};
use serde::{Deserialize, Serialize};

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
