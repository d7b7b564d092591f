//! libFuzzer target `scenario`: crates/fuzz-targets says what it checks.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kleinrock_fuzz_targets::scenario(data));
