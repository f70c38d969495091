use std::process::ExitCode;

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // Without a desktop session (a server, ssh), libwayland, which the Vulkan driver loads
        // while wgpu looks for adapters, prints "error: XDG_RUNTIME_DIR is invalid or not set"
        // again and again: noise that reads like catdog's own errors. Any absolute folder
        // quiets it; there is no Wayland display to find either way. Set before any thread
        // starts.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
    catdog::cli::main()
}
