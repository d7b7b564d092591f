//! What the lab's test files share: one lab at a time for the tests that
//! measure, labs that skip or fail as kleinrock-testkit says, and the
//! steal-gated timing of a measurement.

use std::sync::{Mutex, MutexGuard};

use kleinrock_lab::{ErrorKind, Lab, LabConfig, StealMeter, QUIET_STEAL};
use kleinrock_testkit::Missing;

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the machine's two cores for one measuring test at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A lab, or `None` when this process is not root (a skip, or a failure
/// where root is required). Any other error, the lab's tools missing
/// included, is a failure.
pub fn lab(config: &LabConfig) -> Option<Lab> {
    match Lab::new(config) {
        Ok(lab) => Some(lab),
        Err(e) if e.kind() == ErrorKind::Unprivileged => {
            kleinrock_testkit::require(Some(Missing::new("root", e.to_string())));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Runs a timing measurement until the host was quiet during it, at most
/// three times. Returns the last result, and whether the host was quiet
/// for it: the caller asserts accuracy only then, invariants always; `None`
/// when the measurement skipped (it could not make its lab). The verdict
/// is recorded (kleinrock_testkit::timing): one test on a noisy host is
/// not a failure, but a suite none of whose measurements was judged
/// proves nothing about timing, and scripts/test.sh fails it.
pub fn timed<T>(what: &str, mut measure: impl FnMut() -> Option<T>) -> Option<(T, bool)> {
    let mut shares = Vec::new();
    loop {
        let meter = StealMeter::start().unwrap();
        let result = measure()?;
        let share = meter.share().unwrap();
        shares.push(format!("{:.1}%", share * 100.0));
        let quiet = share < QUIET_STEAL;
        if quiet || shares.len() == 3 {
            kleinrock_testkit::timing(what, quiet);
            eprintln!(
                "{what}: the hypervisor took {} of the CPU time{}",
                shares.join(", then "),
                if quiet {
                    String::new()
                } else {
                    format!(
                        " in three attempts, more than {:.0}%: accuracy not asserted, \
                         invariants only",
                        QUIET_STEAL * 100.0
                    )
                }
            );
            return Some((result, quiet));
        }
    }
}
