//! A device failing mid-work, explained: burn reports a GPU out of memory or a lost device by
//! panicking inside its runtime, which would end catdog with a Rust backtrace. [`explain_panic`]
//! turns such a panic into an error that says what happened and what to try.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Result, anyhow};

use super::Batch;

/// How many [`explain_panic`] calls are running: while any is, panics are not printed, for
/// the one it catches is reported as an error instead. Process-wide, not per thread: burn's
/// GPU runtime works on threads of its own and raises their panics again on the caller's.
static EXPLAINING: AtomicUsize = AtomicUsize::new(0);

/// Runs `work`; a panic inside it becomes an error explaining it.
pub(crate) fn explain_panic<T>(batch: Batch, work: impl FnOnce() -> T) -> Result<T> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        // With RUST_BACKTRACE set, the panic is still printed, for whoever debugs it.
        let show = std::env::var_os("RUST_BACKTRACE").is_some();
        panic::set_hook(Box::new(move |info| {
            if show || EXPLAINING.load(Ordering::SeqCst) == 0 {
                default(info);
            }
        }));
    });
    EXPLAINING.fetch_add(1, Ordering::SeqCst);
    let outcome = panic::catch_unwind(AssertUnwindSafe(work));
    EXPLAINING.fetch_sub(1, Ordering::SeqCst);
    outcome.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        anyhow!(describe(message, batch))
    })
}

/// What a panic's message means for the user.
fn describe(message: &str, batch: Batch) -> String {
    let lower = message.to_lowercase();
    let first_line = message.lines().next().unwrap_or(message).trim();
    if [
        "out of memory",
        "out of device memory",
        "out-of-memory",
        "outofmemory",
        "buffertoobig",
    ]
    .iter()
    .any(|s| lower.contains(s))
    {
        let remedy = match batch {
            Batch::Chosen(0 | 1) => "try a smaller --image-size".to_string(),
            Batch::Chosen(size) => format!(
                "try a smaller --batch-size, such as {}, or a smaller --image-size",
                size / 2
            ),
            Batch::Fixed(_) => {
                "free the GPU's memory (other programs using it?) or use --backend cpu".to_string()
            }
        };
        format!(
            "the device ran out of memory on a batch of {} photos ({first_line}): {remedy}",
            batch.size()
        )
    } else if ["device lost", "devicelost", "lost device", "poisoned"]
        .iter()
        .any(|s| lower.contains(s))
    {
        format!(
            "the GPU stopped working ({first_line}): its driver reset it or it was lost. Run \
             catdog again; if it happens again, check the driver (nvidia-smi, `dmesg`), or try \
             --backend cpu"
        )
    } else {
        format!("the computation stopped: {first_line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_names_the_batch_and_a_smaller_one() {
        // The message cubecl's storage gives (`IoError::OutOfMemory` in cubecl-runtime).
        let err = explain_panic(Batch::Chosen(512), || {
            panic!("out of device memory allocating 17179869184 bytes\nbacktrace")
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("batch of 512 photos"), "{err}");
        assert!(err.contains("--batch-size, such as 256"), "{err}");
        assert!(!err.contains("backtrace"), "{err}");
        // predict and eval have no --batch-size to lower.
        let err = explain_panic(Batch::Fixed(64), || panic!("out of device memory"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch of 64 photos"), "{err}");
        assert!(!err.contains("--batch-size"), "{err}");
        assert!(err.contains("--backend cpu"), "{err}");
    }

    #[test]
    fn a_panic_raised_again_from_another_thread_is_explained() {
        let err = explain_panic(Batch::Chosen(64), || {
            let worker = std::thread::spawn(|| panic!("out of device memory allocating 9 bytes"));
            let Err(payload) = worker.join();
            panic::resume_unwind(payload);
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("such as 32"), "{err}");
    }

    #[test]
    fn a_lost_device_and_other_panics_are_errors_too() {
        let lost = explain_panic(Batch::Chosen(32), || {
            panic!("The device is poisoned\nCaused by: DeviceLost")
        })
        .unwrap_err()
        .to_string();
        assert!(lost.contains("the GPU stopped working"), "{lost}");
        let other = explain_panic(Batch::Chosen(32), || panic!("index out of bounds"))
            .unwrap_err()
            .to_string();
        assert!(other.contains("index out of bounds"), "{other}");
        assert_eq!(explain_panic(Batch::Chosen(32), || 7).unwrap(), 7);
    }
}
