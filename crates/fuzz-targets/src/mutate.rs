//! Variations of an input for the suite's smoke run: a handful of the
//! mutations libFuzzer makes (bytes flipped, set to edges, inserted,
//! removed, repeated; a number replaced by an edge of its type; two inputs
//! spliced), seeded, so that every run of the suite tries the same inputs.

use kleinrock_cc::rand::SplitMix64;

/// Numbers at the edges of the types input is parsed into.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "255",
    "256",
    "65535",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e308",
    "-0",
    "nan",
    "inf",
    "1e-320",
    "0.5",
    "99999999999999999999999999",
];

fn below(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// `input` changed by one to four mutations, `other` the input a splice
/// takes from.
pub fn mutate(rng: &mut SplitMix64, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + below(rng, 4) {
        let at = below(rng, v.len() + 1);
        match below(rng, 8) {
            0 if at < v.len() => v[at] ^= 1 << below(rng, 8),
            1 if at < v.len() => {
                v[at] = [0, 0xff, b'\n', b'"', b'=', b'[', 0x1b, 0x80][below(rng, 8)]
            }
            2 => {
                let n = 1 + below(rng, 8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
                v.splice(at..at, bytes);
            }
            3 if at < v.len() => {
                let end = (at + 1 + below(rng, 64)).min(v.len());
                v.drain(at..end);
            }
            4 if at < v.len() => {
                let end = (at + 1 + below(rng, 64)).min(v.len());
                let piece = v[at..end].to_vec();
                v.splice(at..at, piece);
            }
            5 => {
                // The number at or after `at`, replaced by an edge.
                if let Some(start) = v[at.min(v.len())..].iter().position(u8::is_ascii_digit) {
                    let start = at + start;
                    let len = v[start..].iter().take_while(|b| b.is_ascii_digit()).count();
                    let edge = EDGES[below(rng, EDGES.len())].as_bytes().to_vec();
                    v.splice(start..start + len, edge);
                }
            }
            6 if !other.is_empty() => {
                let from = below(rng, other.len());
                let end = (from + 1 + below(rng, 256)).min(other.len());
                v.splice(at..at, other[from..end].iter().copied());
            }
            _ => v.truncate(at),
        }
    }
    v
}
