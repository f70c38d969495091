//! How much memory decoding photos may hold: at most [`MAX_PHOTO_BYTES`] for one photo, and
//! at most [`total`] bytes for all photos being decoded at once, whatever the thread count. A
//! decoding thread reserves what its photo will need before allocating it, and waits while
//! the others hold the rest: a folder of decompression bombs (a few KB on disk that declare
//! a 16384² picture) costs time, never the machine's memory.

use std::sync::{Condvar, Mutex, OnceLock};

/// The most one photo may take while it is decoded: its file, its pixels at full size (or a
/// progressive JPEG's coefficients) and the copies made turning it upright. A 40-megapixel
/// RGB photo needs about 120 MiB decoded at full size; a 16384² 16-bit RGBA PNG, 2 GiB.
pub const MAX_PHOTO_BYTES: u64 = 512 << 20;

/// The most all photos being decoded at once may take: an eighth of the machine's memory,
/// between one photo's [`MAX_PHOTO_BYTES`] and 2 GiB.
pub fn total() -> u64 {
    static TOTAL: OnceLock<u64> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        let memory = crate::device::cpu_info().memory_bytes;
        (memory / 8).clamp(MAX_PHOTO_BYTES, 2 << 30)
    })
}

/// Bytes reserved for decoding, given back when dropped.
pub struct Reservation {
    bytes: u64,
    budget: &'static Budget,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut free = self.budget.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += self.bytes;
        self.budget.returned.notify_all();
    }
}

/// A pool of bytes that reservations take from and give back to.
pub struct Budget {
    free: Mutex<u64>,
    returned: Condvar,
}

impl Budget {
    pub const fn new(bytes: u64) -> Budget {
        Budget {
            free: Mutex::new(bytes),
            returned: Condvar::new(),
        }
    }

    /// Takes `bytes` (at most the pool's size, which [`MAX_PHOTO_BYTES`] keeps them under),
    /// waiting until other reservations give enough back.
    pub fn reserve(&'static self, bytes: u64) -> Reservation {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free < bytes {
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= bytes;
        Reservation {
            bytes,
            budget: self,
        }
    }
}

/// The budget every photo decoded in this process reserves from.
pub fn shared() -> &'static Budget {
    static SHARED: OnceLock<Budget> = OnceLock::new();
    SHARED.get_or_init(|| Budget::new(total()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn reservations_never_hold_more_than_the_budget_together() {
        static BUDGET: Budget = Budget::new(100);
        static HELD: AtomicU64 = AtomicU64::new(0);
        static MOST: AtomicU64 = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for i in 0..8u64 {
                scope.spawn(move || {
                    for _ in 0..50 {
                        let bytes = 30 + i * 5;
                        let _held = BUDGET.reserve(bytes);
                        let now = HELD.fetch_add(bytes, Ordering::SeqCst) + bytes;
                        MOST.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        HELD.fetch_sub(bytes, Ordering::SeqCst);
                    }
                });
            }
        });
        let most = MOST.load(Ordering::SeqCst);
        assert!((30..=100).contains(&most), "{most}");
        assert_eq!(*BUDGET.free.lock().unwrap(), 100, "every byte given back");
    }
}
