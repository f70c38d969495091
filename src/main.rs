use std::process::ExitCode;

fn main() -> ExitCode {
    catdog::device::keep_freed_memory();
    catdog::cli::main()
}
