//! Where CubeCL keeps the kernels it compiles and the choices it tunes for each GPU adapter:
//! catdog's cache folder, so that an installed binary tunes once per adapter wherever it is
//! started from. (CubeCL's own default is `target/environment` beside the outermost
//! `Cargo.toml` above the current folder, or its user cache elsewhere: a binary started in
//! another project tuned again, into that project's `target/`.)

use std::path::PathBuf;
use std::sync::OnceLock;

use burn::cubecl::config::cache::CacheConfig;
use burn::cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};
use burn::cubecl::environment;

use crate::fs::user_cache_dir;

/// The kernel cache in use.
#[derive(Clone, Debug)]
pub(crate) struct KernelCache {
    pub dir: PathBuf,
    /// Whether an earlier run left tuned kernels there.
    pub tuned_before: bool,
}

impl KernelCache {
    /// One sentence for the user about what the first steps will do.
    pub fn describe(&self) -> String {
        if self.tuned_before {
            format!(
                "GPU kernels tuned by an earlier run are read from {} (sizes and adapters \
                 not seen before are tuned once).",
                self.dir.display()
            )
        } else {
            format!(
                "Tuning GPU kernels for this adapter, once (this can take a few minutes); they \
                 are kept in {}.",
                self.dir.display()
            )
        }
    }
}

/// Points CubeCL at catdog's cache folder, once per process and before any GPU device opens,
/// unless a `cubecl.toml` names a folder of its own; `None` where there is no user cache
/// folder (CubeCL's default then applies).
pub(crate) fn use_catdog_cache() -> Option<KernelCache> {
    static CACHE: OnceLock<Option<KernelCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let dir = user_cache_dir()?.join("gpu-kernels");
            // CubeCL keeps its results in memory only where the folder is missing.
            std::fs::create_dir_all(&dir).ok()?;
            // CubeCL reads its configuration (files, then CUBECL_* variables) once, and
            // points its cache at the configured folder then: set it first.
            let mut config = CubeClRuntimeConfig::from_current_dir().override_from_env();
            if matches!(config.environment.path, CacheConfig::Target) {
                config.environment.path = CacheConfig::Directory(dir);
            }
            CubeClRuntimeConfig::try_set(config);
            Some(KernelCache {
                dir: environment::root(),
                tuned_before: environment::path().exists(),
            })
        })
        .clone()
}
