pub mod builtin;
mod compiler;
pub mod lower;
pub mod metadata;
pub mod ops;
pub mod shader;
pub mod to_wgsl;
pub mod types;
pub mod value;

pub use compiler::*;
pub(crate) use shader::*;
