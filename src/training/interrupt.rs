//! Ctrl-C and SIGTERM during training: the first one asks the training loop to stop after
//! the batch in progress (it then saves a checkpoint and exits with 130 or 143); a second
//! Ctrl-C exits at once. Every file catdog writes is renamed into place when complete, so
//! even the immediate exit leaves no half-written model or checkpoint behind.

use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// The first signal received (its number), or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

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
}

extern "C" fn on_signal(signal: i32) {
    let first = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    if first.is_err() && signal == Signal::SIGINT as i32 {
        // The second Ctrl-C: the user does not want to wait. `_exit` is async-signal-safe.
        unsafe { nix::libc::_exit(130) };
    }
}

/// Installs the handlers for SIGINT and SIGTERM. Until then (and in the library's other
/// commands) the signals keep their default effect of ending the process.
pub fn install() -> anyhow::Result<()> {
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only touches an atomic and calls `_exit`, both async-signal-safe.
        unsafe { sigaction(signal, &action) }
            .map_err(|err| anyhow::anyhow!("cannot install a handler for {signal}: {err}"))?;
    }
    Ok(())
}

/// The signal that asked training to stop, if one has arrived.
pub fn requested() -> Option<Interrupt> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s if s == Signal::SIGTERM as i32 => Some(Interrupt::Terminated),
        _ => Some(Interrupt::Interrupted),
    }
}
