use std::process::ExitCode;

fn main() -> ExitCode {
    catdog::device::keep_freed_memory();
    if std::env::var_os("BURN_DEVICE").is_none() {
        // burn reads state it has no device for (Adam's moments, when a run resumes) onto its
        // default device, which would be the GPU and fail on machines without one; the state
        // moves to the chosen backend at the next step anyway. Set before any thread starts.
        unsafe { std::env::set_var("BURN_DEVICE", "flex") };
    }
    catdog::cli::main()
}
