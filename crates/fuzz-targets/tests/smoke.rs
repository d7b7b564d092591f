//! A short run of every fuzz target in the suite, on stable: the inputs
//! campaigns found (fuzz/regressions/<target>/, each a crash, hang or
//! unclear message since fixed), the seeds, and seeded mutations of them,
//! through the same checks libFuzzer runs (docs/FUZZING.md). Seconds, not
//! a campaign: it keeps what was found found, and catches a change that
//! breaks a boundary on the inputs nearest the seeds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use kleinrock_cc::rand::SplitMix64;
use kleinrock_fuzz_targets::{mutate::mutate, seeds::seeds, target};

/// Mutated inputs per target.
const MUTANTS: usize = 2_000;

/// Every file of fuzz/regressions/<name>/, sorted.
fn regressions(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(name);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

/// Runs `name`'s check on `input`, failing with the input shown.
fn check(name: &str, what: &str, input: &[u8]) {
    let t = target(name).expect("a target");
    if catch_unwind(AssertUnwindSafe(|| (t.check)(input))).is_err() {
        let shown: String = String::from_utf8_lossy(&input[..input.len().min(2_000)])
            .escape_debug()
            .collect();
        panic!(
            "fuzz target {name} failed on {what} ({} bytes; keep it in fuzz/regressions/{name}/ once fixed): \"{shown}\"",
            input.len()
        );
    }
}

/// The regressions, the seeds, then [`MUTANTS`] mutations: each of a
/// seed or of an earlier mutant, so some are several steps away.
fn smoke(name: &str) {
    for (file, input) in regressions(name) {
        check(name, &file, &input);
    }
    let seeds = seeds(name);
    assert!(!seeds.is_empty(), "{name} has no seeds");
    for (i, s) in seeds.iter().enumerate() {
        check(name, &format!("seed {i}"), s);
    }
    let mut rng = SplitMix64::new(0x16);
    let mut pool = seeds.clone();
    for i in 0..MUTANTS {
        let from = &pool[(rng.next_u64() % pool.len() as u64) as usize];
        let other = &seeds[(rng.next_u64() % seeds.len() as u64) as usize];
        let m = mutate(&mut rng, from, other);
        check(name, &format!("mutant {i}"), &m);
        if pool.len() < 4 * seeds.len() + 64 {
            pool.push(m);
        }
    }
}

#[test]
fn scenario() {
    smoke("scenario");
}

#[test]
fn workload() {
    smoke("workload");
}

#[test]
fn spec() {
    smoke("spec");
}

#[test]
fn hook_trace() {
    smoke("hook_trace");
}

#[test]
fn select_table() {
    smoke("select_table");
}

#[test]
fn bpftune_table() {
    smoke("bpftune_table");
}

#[test]
fn mahimahi() {
    smoke("mahimahi");
}

#[test]
fn hooks() {
    smoke("hooks");
}

#[test]
fn every_target_has_a_smoke_test_and_a_libfuzzer_binary() {
    let this = include_str!("smoke.rs");
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    for t in kleinrock_fuzz_targets::TARGETS {
        assert!(
            this.contains(&format!("smoke(\"{}\");", t.name)),
            "no smoke test for {}",
            t.name
        );
        let bin = std::fs::read_to_string(fuzz.join(format!("{}.rs", t.name)))
            .unwrap_or_else(|_| panic!("no fuzz/fuzz_targets/{}.rs", t.name));
        assert!(
            bin.contains(&format!("kleinrock_fuzz_targets::{}(", t.name)),
            "fuzz/fuzz_targets/{}.rs calls another target",
            t.name
        );
    }
}
