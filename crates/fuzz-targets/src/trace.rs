//! Hook traces, CSV or gzip, replayed into an algorithm.

use std::io::{Cursor, Read};
use std::path::Path;

use kleinrock_cc::script::SPECS;
use kleinrock_cc::Algorithm;
use kleinrock_trace::{replay_from, TraceReader};

use crate::judge;

/// Clock rates a replay is asked for: common ones, the ends of
/// `kleinrock_trace::HZ`, and two outside it.
pub const HZS: [u32; 9] = [250, 1000, 100, 300, 10_000, 1, 1_000_000, 0, 1_000_001];

/// The first byte of a `hook_trace` input for `spec_index` of
/// [`SPECS`] and `hz_index` of [`HZS`].
pub fn prefix(spec_index: usize, hz_index: usize) -> u8 {
    (hz_index * SPECS.len() + spec_index) as u8
}

/// The first byte picks the spec (of `kleinrock_cc::script::SPECS`) and
/// the clock rate ([`prefix`]); the rest is the trace, gzip if it starts
/// with gzip's magic bytes, as `kleinrock replay` reads a file. Replayed
/// (diverging or not) or refused in one line.
pub fn hook_trace(data: &[u8]) {
    let Some((&first, trace)) = data.split_first() else {
        return;
    };
    let first = first as usize;
    let cc: Algorithm = SPECS[first % SPECS.len()].parse().expect("a spec of SPECS");
    let hz = HZS[first / SPECS.len() % HZS.len()];
    let input = Box::new(Cursor::new(trace.to_vec()));
    let result = TraceReader::from_reader(input, Path::new("t.csv"))
        .and_then(|r| replay_from(r, cc, hz, &mut |_| {}));
    if let Err(e) = result {
        judge(&e.to_string(), &(shown(trace) + KERNEL_TYPES));
    }
}

/// The kernel's integer types, which the trace format is written in
/// (docs/TRACE_FORMAT.md: a column holds "every `u32`"): its messages name
/// them ("out of range for tcp_jiffies32 (a u32)"), as a kernel developer
/// reads them, where a scenario's would show Rust's.
const KERNEL_TYPES: &str = " u32 s32 u64 s64";

/// The text a message about `trace` may echo: the trace, decompressed
/// (at most 1 MiB of it) if it is gzip.
fn shown(trace: &[u8]) -> String {
    if trace.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let _ = flate2::read::MultiGzDecoder::new(trace)
            .take(1 << 20)
            .read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    } else {
        String::from_utf8_lossy(trace).into_owned()
    }
}
