//! The text parsers: scenario and workload files, algorithm specs,
//! mahimahi traces.

use kleinrock_cc::Algorithm;
use kleinrock_link::mahimahi::Trace;

use crate::{empty_dir, judge};

/// The input as text: bytes that are not UTF-8 are replaced, as the file
/// readers refuse them before any parser sees them.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A scenario file, with relative paths resolving into an empty
/// directory.
pub fn scenario(data: &[u8]) {
    let t = text(data);
    if let Err(e) = kleinrock_sim::scenario::parse(&t, "s.toml", Some(empty_dir())) {
        judge(&e.0, &t);
    }
}

/// A workload file, likewise.
pub fn workload(data: &[u8]) {
    let t = text(data);
    match kleinrock_fleet::Workload::parse(&t, "w.toml", Some(empty_dir())) {
        Ok(w) => {
            // What `select` does next with what it accepted.
            let _ = (w.algorithms(), w.destinations().len());
        }
        Err(e) => judge(&e.0, &t),
    }
}

/// An algorithm spec: refused in one line, or accepted with clear
/// warnings and a canonical form that parses back to the same algorithm.
pub fn spec(data: &[u8]) {
    let t = text(data);
    match t.parse::<Algorithm>() {
        Ok(a) => {
            for w in a.warnings() {
                judge(&w, &t);
            }
            let canonical = a.spec();
            match canonical.parse::<Algorithm>() {
                Ok(b) => assert_eq!(
                    b, a,
                    "`{canonical}` (from `{t}`) parses to another algorithm"
                ),
                Err(e) => panic!("`{canonical}`, the canonical form of `{t}`, is refused: {e}"),
            }
        }
        Err(e) => judge(&e.to_string(), &t),
    }
}

/// The times a parsed trace is asked for its next opportunity: the start,
/// around a millisecond and a second, and a day (a scenario's longest).
const ASKED: [u64; 6] = [0, 1, 999_999, 1_000_000, 1_000_000_000, 86_400_000_000_000];

/// A mahimahi trace: refused in one line, or a trace whose next delivery
/// opportunity is never before the time asked, nor before the last one.
pub fn mahimahi(data: &[u8]) {
    let t = text(data);
    match Trace::parse(&t, "t.trace") {
        Ok(trace) => {
            let _ = trace.mean_rate_bps();
            for at in ASKED {
                let (i, when) = trace.next(0, at);
                assert!(when >= at, "next opportunity at {when} before {at}");
                let (j, then) = trace.next(i + 1, when);
                assert!(
                    j > i && then >= when,
                    "opportunity {j} at {then} before {i} at {when}"
                );
            }
        }
        Err(e) => judge(&e.0, &t),
    }
}
