//! Ctrl-C and SIGTERM during training: the first one says at once that catdog is stopping,
//! and asks it to stop at the next safe point (after the batch in progress; between chunks of
//! photos while decoding); it then saves a checkpoint and exits with 130 or 143. A second
//! Ctrl-C exits at once. Every file catdog writes is renamed into place when complete, so even
//! the immediate exit leaves no half-written model or checkpoint behind.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// The first signal received: 0 for none, then [`Interrupt::code`].
static RECEIVED: AtomicU8 = AtomicU8::new(0);

/// Printed by the handler itself, so that it shows even while the training loop is busy.
const STOPPING: &str = "\ncatdog: stopping after the batch in progress (within a second while \
                        decoding photos); Ctrl-C again quits at once.\n";

/// What the first signal prints where a command other than training installed the handlers.
static MESSAGE: OnceLock<&'static str> = OnceLock::new();

/// What the first signal prints: training's [`STOPPING`], or the message given to
/// [`install_saying`]. Async-signal-safe (one atomic load).
fn message() -> &'static str {
    MESSAGE.get().copied().unwrap_or(STOPPING)
}

/// Which signal asked training to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// Ctrl-C: exit code 130.
    Interrupted,
    /// `kill` / a service manager: exit code 143.
    Terminated,
}

impl Interrupt {
    /// 128 + the signal number, as shells report a process stopped by a signal.
    pub fn exit_code(self) -> u8 {
        match self {
            Interrupt::Interrupted => 130,
            Interrupt::Terminated => 143,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Interrupt::Interrupted => "Ctrl-C (SIGINT)",
            Interrupt::Terminated => "SIGTERM",
        }
    }

    fn code(self) -> u8 {
        match self {
            Interrupt::Interrupted => 1,
            Interrupt::Terminated => 2,
        }
    }
}

/// Records `by`; true when it is the first signal. Async-signal-safe (one atomic).
fn record(by: Interrupt) -> bool {
    RECEIVED
        .compare_exchange(0, by.code(), Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Installs the handlers. Until then (and in the library's other commands) the signals keep
/// their default effect of ending the process.
pub fn install() -> anyhow::Result<()> {
    platform::install()
}

/// [`install`] for a command other than training: the first signal prints `message` (and
/// is reported by [`requested`]), the second Ctrl-C exits at once.
pub fn install_saying(message: &'static str) -> anyhow::Result<()> {
    let _ = MESSAGE.set(message);
    platform::install()
}

/// The signal that asked training to stop, if one has arrived.
pub fn requested() -> Option<Interrupt> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        2 => Some(Interrupt::Terminated),
        _ => Some(Interrupt::Interrupted),
    }
}

#[cfg(unix)]
mod platform {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

    use super::{Interrupt, message, record};

    extern "C" fn on_signal(signal: i32) {
        let by = if signal == Signal::SIGTERM as i32 {
            Interrupt::Terminated
        } else {
            Interrupt::Interrupted
        };
        // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is static.
        unsafe {
            if record(by) {
                let text = message();
                nix::libc::write(2, text.as_ptr().cast(), text.len());
            } else if by == Interrupt::Interrupted {
                // The second Ctrl-C: the user does not want to wait.
                nix::libc::_exit(130);
            }
        }
    }

    pub fn install() -> anyhow::Result<()> {
        let action = SigAction::new(
            SigHandler::Handler(on_signal),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        for signal in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only touches an atomic and calls write and _exit.
            unsafe { sigaction(signal, &action) }
                .map_err(|err| anyhow::anyhow!("cannot install a handler for {signal}: {err}"))?;
        }
        Ok(())
    }
}

/// Windows and others: the `ctrlc` crate's handler runs on a thread of its own, where
/// printing and exiting are safe. (Not compiled on the machines catdog is developed on.)
#[cfg(not(unix))]
mod platform {
    use super::{Interrupt, message, record};

    pub fn install() -> anyhow::Result<()> {
        ctrlc::set_handler(|| {
            if record(Interrupt::Interrupted) {
                eprint!("{}", message());
            } else {
                std::process::exit(130);
            }
        })
        .map_err(|err| anyhow::anyhow!("cannot install a Ctrl-C handler: {err}"))
    }
}
