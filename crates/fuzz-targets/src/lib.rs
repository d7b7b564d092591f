//! Kleinrock's fuzz targets: one per parser and input boundary, each a
//! function of arbitrary bytes that panics if the input breaks the
//! property every boundary must keep (issue 16). libFuzzer's targets
//! (fuzz/fuzz_targets, nightly, coverage-guided; `scripts/fuzz.sh`) and
//! the suite's smoke run (tests/smoke.rs, stable) call the same functions,
//! so what a campaign checks is what the suite checks.
//!
//! The property, per input:
//! - no panic (the targets build with overflow checks, so an overflow is
//!   one), no abort;
//! - no hang and bounded memory: not checkable from inside; libFuzzer's
//!   `-timeout` and `-rss_limit_mb` enforce them in a campaign;
//! - a refusal is one clear line ([`judge`]: one line, no raw control
//!   characters, under 600 bytes, no Rust internals);
//! - what is accepted behaves: a spec's canonical form parses back to the
//!   same algorithm, a table loaded and saved again is a fixed point, a
//!   trace's next delivery opportunity is never before the time asked.
//!
//! | target | boundary |
//! | --- | --- |
//! | `scenario` | a scenario file: `kleinrock_sim::scenario::parse` |
//! | `workload` | a workload file: `kleinrock_fleet::Workload::parse` |
//! | `spec` | an algorithm spec: `str::parse::<Algorithm>` |
//! | `hook_trace` | a hook trace, CSV or gzip, replayed into a spec |
//! | `select_table` | Kleinrock's selector table, checksum added |
//! | `bpftune_table` | bpftune's table, checksum added |
//! | `mahimahi` | a mahimahi trace: `kleinrock_link::mahimahi::Trace::parse` |
//! | `hooks` | arbitrary hook sequences played into every spec |
//!
//! [`seeds`] makes each target's starting inputs; [`mutate`] the smoke
//! run's variations of them.

use std::path::Path;
use std::sync::OnceLock;

mod hooks;
pub mod mutate;
pub mod seeds;
mod table;
mod text;
mod trace;

pub use hooks::hooks;
pub use table::{bpftune_table, select_table};
pub use text::{mahimahi, scenario, spec, workload};
pub use trace::hook_trace;

/// A fuzz target: its name (the libFuzzer binary's, and the directories
/// of its seeds and regressions) and its check.
pub struct Target {
    pub name: &'static str,
    pub check: fn(&[u8]),
    /// libFuzzer's `-max_len` for it: long enough for its seeds and a
    /// little more, short enough that one input cannot take seconds.
    pub max_len: usize,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "scenario",
        check: scenario,
        max_len: 16_384,
    },
    Target {
        name: "workload",
        check: workload,
        max_len: 16_384,
    },
    Target {
        name: "spec",
        check: spec,
        max_len: 1_024,
    },
    Target {
        name: "hook_trace",
        check: hook_trace,
        max_len: 16_384,
    },
    Target {
        name: "select_table",
        check: select_table,
        max_len: 16_384,
    },
    Target {
        name: "bpftune_table",
        check: bpftune_table,
        max_len: 8_192,
    },
    Target {
        name: "mahimahi",
        check: mahimahi,
        max_len: 8_192,
    },
    Target {
        name: "hooks",
        check: hooks,
        max_len: 4_096,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Panics unless `message`, a refusal of `input`, is one clear line
/// (`kleinrock_testkit::wording::unclear`).
pub fn judge(message: &str, input: &str) {
    if let Some(why) = kleinrock_testkit::wording::unclear(message, input) {
        panic!("unclear message: {why}");
    }
}

/// A directory with nothing in it, for the parsers' relative paths (a
/// scenario's link `trace`): no input resolves to a file. One for every
/// run, never written in, so that none is left behind per process.
fn empty_dir() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join("kleinrock-fuzz-empty");
        std::fs::create_dir_all(&d).expect("cannot create the fuzz targets' empty directory");
        d
    })
}
