//! SIGINT and SIGTERM stop a lab run instead of killing the process: the
//! handler only sets a flag, the run sees it within a fraction of a
//! second, stops its flows and removes its lab and ports, and the command
//! then exits with the signal's status (128 + its number). A second signal
//! while that happens is taken as the first was: cleanup is quick and not
//! to be cut short.

use std::sync::atomic::{AtomicI32, Ordering};

static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    CAUGHT.store(signal, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM from now on.
pub fn catch() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// The signal caught, if any: `Some(2)` after SIGINT.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The signal's name for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
