pub mod base;
pub mod wgsl;
