use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // Without XDG_RUNTIME_DIR, the Wayland library that the Vulkan driver loads prints
        // "error: XDG_RUNTIME_DIR is invalid or not set" each time wgpu looks for a GPU,
        // which reads like an error of catdog's own.
        // Any absolute folder silences it; there is no Wayland display to find either way.
        // Set here, before any thread starts, as `set_var` requires.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
    catdog::cli::main()
}
