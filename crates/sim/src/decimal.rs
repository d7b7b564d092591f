//! Numbers as text, appended to a byte buffer, byte for byte as the
//! standard library and serde_json write them but without `core::fmt`'s
//! machinery: integers through `itoa`, shortest round-trip floats through
//! `zmij` (the formatter serde_json itself uses), and fixed precision
//! (`format!("{v:.N}")`) by exact integer arithmetic.
//!
//! Fixed precision: an `f64` is exactly `m * 2^e`, so `v * 10^N` is exactly
//! `m * 10^N * 2^e`; with `m < 2^53` and `N <= 9` that product fits a `u128`
//! and one shift with the bits shifted out kept gives the correctly rounded
//! result (ties to even, as `core::fmt` rounds the exact binary value).
//! Values outside that range (non-finite, or 2^63 and above) go through
//! `core::fmt`.

use std::io::Write as _;

/// Appends `v` in decimal.
pub fn push_int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends a finite `v` as its shortest round-trip decimal, as serde_json
/// writes floats (`30.0`, `3334647.466666667`, `1e-7`).
pub fn push_shortest(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
}

/// Values from here up go through `core::fmt`.
const TWO_POW_63: f64 = (1u64 << 63) as f64;

/// The largest precision the exact path handles (`10^9 * 2^53 < 2^83`).
const MAX_PREC: usize = 9;

/// Appends `v` with `prec` digits after the point: `format!("{v:.prec$}")`.
pub fn push_fixed(out: &mut Vec<u8>, v: f64, prec: usize) {
    const POW10: [u64; MAX_PREC + 1] = [
        1,
        10,
        100,
        1_000,
        10_000,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
    ];
    if !v.is_finite() || v.abs() >= TWO_POW_63 || prec > MAX_PREC {
        let _ = write!(out, "{v:.prec$}");
        return;
    }
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    let (mant, exp) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, biased - 1075)
    };
    let scaled = mant as u128 * POW10[prec] as u128;
    let q = if exp >= 0 {
        // v < 2^63 bounds mant << exp, so scaled << exp < 2^93.
        scaled << exp
    } else {
        let shift = (-exp) as u32;
        if shift >= 128 {
            // scaled < 2^83 is below half of 2^shift: rounds to zero.
            0
        } else {
            let q = scaled >> shift;
            let rest = scaled & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            if rest > half || (rest == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        }
    };
    if bits >> 63 != 0 {
        out.push(b'-');
    }
    // q < 2^63 * 10^prec: the integer part fits a u64, the fraction too.
    let unit = POW10[prec] as u128;
    push_int(out, (q / unit) as u64);
    if prec > 0 {
        out.push(b'.');
        let mut digits = itoa::Buffer::new();
        let f = digits.format((q % unit) as u64).as_bytes();
        out.resize(out.len() + prec - f.len(), b'0');
        out.extend_from_slice(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixed(v: f64, prec: usize) -> String {
        let mut out = Vec::new();
        push_fixed(&mut out, v, prec);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fixed_rounds_the_exact_binary_value_half_to_even() {
        assert_eq!(fixed(0.5, 0), "0");
        assert_eq!(fixed(1.5, 0), "2");
        assert_eq!(fixed(2.5, 0), "2");
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(0.375, 2), "0.38");
        // 0.1 + 0.2 is 0.3000000000000000444...: above the tie.
        assert_eq!(fixed(0.1 + 0.2, 16), format!("{:.16}", 0.1 + 0.2));
        assert_eq!(fixed(-0.0, 3), "-0.000");
        assert_eq!(fixed(-1e-9, 6), "-0.000000");
        assert_eq!(fixed(30.0, 6), "30.000000");
        assert_eq!(fixed(f64::MIN_POSITIVE / 3.0, 9), "0.000000000");
        assert_eq!(fixed(f64::NAN, 6), "NaN");
        assert_eq!(fixed(f64::NEG_INFINITY, 0), "-inf");
        assert_eq!(fixed(1e300, 1), format!("{:.1}", 1e300));
    }

    proptest! {
        #[test]
        fn fixed_matches_core_fmt_on_any_bits(bits in any::<u64>(), prec in 0usize..=MAX_PREC) {
            let v = f64::from_bits(bits);
            prop_assert_eq!(fixed(v, prec), format!("{v:.prec$}"));
        }

        #[test]
        fn fixed_matches_core_fmt_on_simulator_values(
            n in 0u64..1 << 40, d in 1u64..1 << 34, prec in 0usize..=MAX_PREC,
        ) {
            // Times (ns / 1e9) and rates (bits * 1e9 / ns), as results hold them.
            for v in [n as f64 / d as f64, n as f64 / 1e9, n as f64 * 8e9 / d as f64] {
                prop_assert_eq!(fixed(v, prec), format!("{v:.prec$}"));
            }
        }

        #[test]
        fn ints_and_shortest_floats_match_core_fmt_and_serde_json(i in any::<i64>(), bits in any::<u64>()) {
            let mut out = Vec::new();
            push_int(&mut out, i);
            prop_assert_eq!(String::from_utf8(out).unwrap(), i.to_string());
            let v = f64::from_bits(bits);
            if v.is_finite() {
                let mut out = Vec::new();
                push_shortest(&mut out, v);
                prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&v).unwrap());
            }
        }
    }
}
