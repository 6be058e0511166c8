//! Locking that survives a panic: every mutex in the crate guards plain data, which a
//! thread that panicked while holding it leaves usable, so the relay carries on with it
//! rather than failing every later frame.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, ignoring poisoning.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
