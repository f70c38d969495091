mod base;
pub use base::*;

mod parameter_context;
pub(crate) use parameter_context::*;

/// Adaptor module for optimizers.
pub mod module_optimizer;
pub use module_optimizer::*;

/// Record module for optimizers.
pub mod record;
pub use record::*;
