//! catdog's specifications, one module per thing specified. They are one test binary, so that
//! catdog, burn and wgpu are linked once for all of them (minutes each on a 2-core machine);
//! `cargo test` runs them in one process, as many at a time as the machine has cores.
//!
//! Most run the `catdog` binary as a user does (`common::catdog()` builds its command lines);
//! `training_loop`, `flex_kernels`, `download`, `bad_photos` and `examples` also call the
//! library in this process.
//!
//! Tests must fit in CI's 90 minutes, half of which a cold build takes. A new wgpu test
//! trains at 16 px in batches of 4, the size the others tune: on a fresh machine each new
//! size, batch or precision costs minutes of kernel tuning on lavapipe.

mod common;

mod bad_photos;
mod bench;
mod devices;
mod download;
mod eval;
mod examples;
mod first_runs;
mod flex_kernels;
mod interrupt;
mod model_folder;
mod pixel_cache;
mod precision;
mod predict;
mod resume;
mod serve;
mod train;
mod training_loop;
mod vendored;
