//! Hostile traces: what a careless or malicious file can hold, each
//! replayed or refused with one sentence naming the place, never a panic,
//! a hang or unbounded memory.
//!
//! Every input column of a trace at the edges of its type, for every spec
//! (kleinrock_cc::script::SPECS), replays without a panic: each is either
//! replayed (diverging or not) or refused with one sentence naming row and
//! column (docs/TRACE_FORMAT.md says which are refused). A trace reaches
//! the algorithms from outside, one row's state at a time, with nothing
//! chaining a row's connection to the last: more freedom than the property
//! tests' scripts (crates/cc/tests/properties.rs), which play events from
//! a start. Two passes: each column alone at each edge in every row, and
//! rows whose every input is an edge drawn at random (seeded), for the
//! combinations (a cwnd of 1 with a clamp of 1 and ssthresh 0, ...). Tests
//! build with overflow checks, so an overflow panics too.
//!
//! Then the file itself: devices and FIFOs, endless lines, a header and no
//! rows, a column named twice, text that is not UTF-8, control characters.

use std::fs;
use std::io::Cursor;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use kleinrock_cc::driver::{Driver, Path as NetPath};
use kleinrock_cc::rand::SplitMix64;
use kleinrock_cc::script::SPECS;
use kleinrock_cc::{Algorithm, CongestionControl, Field, Sock};
use kleinrock_trace::{format, replay_from, Recorder, TraceReader};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-edges-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A trace of `spec` as rows of cells: a short recorded run cut to a few
/// rows of each hook the model calls, plus rows of the hooks and
/// arguments it does not (`undo_cwnd`, `release`, every state and event).
fn base(spec: &str, test: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let cc: Algorithm = spec.parse().unwrap();
    let path = tmp(&format!("{test}-{}.csv", spec.replace([':', '='], "_")));
    let rec = Recorder::create(&path, &cc).unwrap();
    let net = NetPath {
        rtt_us: 20_000,
        rate_pps: 1_000,
        buffer_pkts: 10,
        loss_ppm: 30_000,
        ack_every: 2,
        seed: 5,
    };
    let mut d = Driver::new(cc, net, 250, rec);
    d.run_for(2_000_000);
    d.tap.finish().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    fs::remove_file(&path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (hook, arg_u) = (col("hook"), col("arg_u"));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for line in lines {
        let row: Vec<String> = line.split(',').map(String::from).collect();
        let seen = rows
            .iter()
            .filter(|r| r[hook] == row[hook] && r[arg_u] == row[arg_u])
            .count();
        if seen < 2 {
            rows.push(row);
        }
    }
    let template = rows.last().unwrap().clone();
    let mut extra = |name: &str, u: Option<u32>| {
        let mut r = template.clone();
        r[hook] = name.into();
        r[arg_u] = u.map_or(String::new(), |u| u.to_string());
        rows.push(r);
    };
    extra("undo_cwnd", None);
    for state in 0..5 {
        extra("set_state", Some(state));
    }
    for event in 0..6 {
        extra("cwnd_event", Some(event));
    }
    for flags in [0, 1, 2, 4, 7, u32::MAX] {
        extra("in_ack_event", Some(flags));
    }
    extra("release", None);
    (header, rows)
}

/// The edges of an integer type from `lo` to `hi`, and the first values
/// beyond them (which must be refused).
fn edges(lo: i128, hi: i128) -> Vec<i128> {
    let mut v = vec![lo - 1, lo, hi, hi + 1, 0, 1, 2, -1, hi / 2, hi / 2 + 1];
    v.extend([0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 32]);
    v.extend([i128::from(i64::MIN), i128::from(i64::MAX), 1i128 << 100]);
    v.sort();
    v.dedup();
    v
}

/// The input columns of a trace and the range of each one's type; the
/// random members' columns (`post_ca_`), which a replay copies in, too.
fn inputs(header: &[String], cc: &Algorithm) -> Vec<(String, i128, i128)> {
    let u32m = i128::from(u32::MAX);
    let u64m = i128::from(u64::MAX);
    let s32 = (i128::from(i32::MIN), i128::from(i32::MAX));
    let s64 = (i128::from(i64::MIN), i128::from(i64::MAX));
    let mut cols = Vec::new();
    for h in header {
        let range = match h.as_str() {
            "jiffies_in" | "jiffies_out" | "arg_ack" | "arg_acked" | "arg_u" | "arg_flag"
            | "as_pkts_acked" | "as_in_flight" => (0, u32m),
            "as_rtt_us" | "rs_delivered" | "rs_losses" => s32,
            "rs_interval_us" | "rs_rtt_us" => s64,
            "rs_prior_mstamp" => (0, u64m),
            "rs_is_app_limited" | "rs_is_retrans" | "rs_is_ack_delayed" => (0, 1),
            c if c.starts_with("rs_") => (0, u32m),
            c if c.starts_with("post_ca_")
                && cc.drawn_at_random().contains(&&c["post_ca_".len()..]) =>
            {
                s64
            }
            c => match c.strip_prefix("pre_").and_then(Field::from_name) {
                Some(f) if !c.starts_with("pre_ca_") => (0, field_max(f)),
                _ => continue,
            },
        };
        cols.push((h.clone(), range.0, range.1));
    }
    cols
}

/// The largest value a connection field holds.
fn field_max(f: Field) -> i128 {
    let mut sk = Sock::new(250);
    [u64::MAX, u64::from(u32::MAX), 255, 4, 2, 1]
        .into_iter()
        .find(|&v| sk.set(f, v) && sk.get(f) == v)
        .unwrap() as i128
}

fn csv(header: &[String], rows: &[Vec<String>]) -> Vec<u8> {
    let mut s = header.join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.join(","));
        s.push('\n');
    }
    s.into_bytes()
}

/// The values in range that a replay refuses all the same, as
/// docs/TRACE_FORMAT.md lists them: states no kernel can be in. (A random
/// member's cell is refused outside the member's own domain, checked apart;
/// `arg_u` is refused where the hook takes no such state or event.)
fn refused_in_range(column: &str, v: i128) -> bool {
    match column {
        "pre_snd_cwnd" | "pre_snd_cwnd_clamp" => v == 0,
        "pre_pacing_shift" => v >= 64,
        // Every trace here has set_state rows, which take the five states.
        "arg_u" => v > 4,
        c => c.starts_with("post_ca_"),
    }
}

/// Replays `bytes` into `spec`: a report, or one sentence naming the row
/// and the column. Panics with what was replayed if the replay panics.
fn replays_or_refuses(spec: &str, bytes: Vec<u8>, what: &str) -> Result<(), String> {
    let cc: Algorithm = spec.parse().unwrap();
    let run = catch_unwind(AssertUnwindSafe(|| {
        let r = TraceReader::from_reader(Box::new(Cursor::new(bytes)), Path::new("edge.csv"))
            .map_err(|e| e.to_string())?;
        replay_from(r, cc, 250, &mut |_| {})
            .map(|_| ())
            .map_err(|e| e.to_string())
    }));
    match run {
        Err(_) => panic!("{spec}: replaying {what} panicked"),
        Ok(Err(e)) => {
            assert!(
                !e.contains('\n') && e.starts_with("edge.csv row ") && e.contains(", column `"),
                "{spec}: {what}: not one sentence naming row and column: {e}"
            );
            Err(e)
        }
        Ok(Ok(())) => Ok(()),
    }
}

#[test]
fn every_input_column_at_its_edges_replays_or_is_refused() {
    for spec in SPECS {
        let cc: Algorithm = spec.parse().unwrap();
        let (header, rows) = base(spec, "column");
        let hook = header.iter().position(|h| h == "hook").unwrap();
        for (column, lo, hi) in inputs(&header, &cc) {
            let i = header.iter().position(|h| *h == column).unwrap();
            // An argument column is read only by the hooks that take it.
            let read = !(column.starts_with("arg_")
                || column.starts_with("as_")
                || column.starts_with("rs_"))
                || rows.iter().any(|r| {
                    format::arg_columns(&r[hook]).contains(&column.as_str())
                        || r[hook] == "cong_control" && column.starts_with("rs_")
                });
            for v in edges(lo, hi) {
                let mut rows = rows.clone();
                for r in &mut rows {
                    r[i] = v.to_string();
                }
                let what = format!("{column} = {v} in every row");
                let result = replays_or_refuses(spec, csv(&header, &rows), &what);
                if read && (v < lo || v > hi || refused_in_range(&column, v)) {
                    if let Ok(()) = result {
                        assert!(
                            column.starts_with("post_ca_"),
                            "{spec}: {what} was replayed"
                        );
                        continue;
                    }
                    let e = result.unwrap_err();
                    assert!(e.contains(&format!("column `{column}`: ")), "{spec}: {e}");
                } else if let Err(e) = result {
                    panic!("{spec}: {what} was refused: {e}");
                }
            }
        }
    }
}

#[test]
fn rows_of_random_edges_replay_or_are_refused() {
    let mut rng = SplitMix64::new(16);
    for spec in SPECS {
        let cc: Algorithm = spec.parse().unwrap();
        let (header, rows) = base(spec, "random");
        // Every value a replay takes: the rows must replay, not be refused.
        let cols: Vec<(usize, Vec<i128>)> = inputs(&header, &cc)
            .into_iter()
            .filter(|(c, ..)| !c.starts_with("post_ca_"))
            .map(|(c, lo, hi)| {
                let i = header.iter().position(|h| *h == c).unwrap();
                let taken = edges(lo, hi)
                    .into_iter()
                    .filter(|&v| (lo..=hi).contains(&v) && !refused_in_range(&c, v));
                (i, taken.collect())
            })
            .collect();
        for case in 0..200 {
            let mut rows = rows.clone();
            for r in &mut rows {
                for (i, values) in &cols {
                    // Half the cells keep the recorded value, so that rows
                    // stay near states the algorithm reaches.
                    if rng.next_u64() & 1 == 0 {
                        let pick = rng.next_u64() as usize % values.len();
                        r[*i] = values[pick].to_string();
                    }
                }
            }
            let what = format!("case {case}");
            if let Err(e) = replays_or_refuses(spec, csv(&header, &rows), &what) {
                panic!("{spec}: {what} was refused: {e}");
            }
        }
    }
}

/// Issue 16's panics: a row with `snd_cwnd = 0` and `ssthresh = 0` divided
/// by zero in `tcp_cong_avoid_ai()`, and CDG did with the cwnd alone; a
/// clamp of 0 gets there through slow start. Each is refused, naming row
/// and column, for every spec.
#[test]
fn a_zero_window_or_clamp_is_refused_not_divided_by() {
    for spec in SPECS {
        let (header, rows) = base(spec, "zero");
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        for (zeroed, why) in [
            (
                &["pre_snd_cwnd", "pre_snd_ssthresh"][..],
                "a congestion window of 0",
            ),
            (&["pre_snd_cwnd"][..], "a congestion window of 0"),
            (&["pre_snd_cwnd_clamp"][..], "a clamp of 0"),
        ] {
            let mut rows = rows.clone();
            for r in &mut rows {
                for c in zeroed {
                    r[col(c)] = "0".into();
                }
            }
            let what = format!("{zeroed:?} = 0");
            let e = replays_or_refuses(spec, csv(&header, &rows), &what).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "edge.csv row 0 (line 2), column `{}`: {why} is no state of the kernel's",
                    zeroed[0]
                )),
                "{spec}: {e}"
            );
        }
    }
}

fn replay_file(path: &Path, spec: &str, hz: u32) -> Result<kleinrock_trace::Report, String> {
    kleinrock_trace::replay(path, spec.parse().unwrap(), hz, &mut |_| {}).map_err(|e| e.to_string())
}

fn replay_bytes(bytes: &[u8], spec: &str) -> Result<kleinrock_trace::Report, String> {
    let r = TraceReader::from_reader(Box::new(Cursor::new(bytes.to_vec())), Path::new("t.csv"))
        .map_err(|e| e.to_string())?;
    replay_from(r, spec.parse().unwrap(), 250, &mut |_| {}).map_err(|e| e.to_string())
}

/// A hand-written reno trace's header and one row of it.
const RENO_HEADER: &str = "hook,arg_acked,arg_ack,pre_snd_cwnd,pre_snd_ssthresh,pre_snd_cwnd_cnt,pre_snd_cwnd_clamp,pre_is_cwnd_limited,pre_max_packets_out,pre_prior_cwnd,post_snd_cwnd,post_snd_ssthresh";
const RENO_ROW: &str = "cong_avoid,4,1000,10,2147483647,0,4294967295,1,10,0,14,2147483647";

/// Issue 16: `replay /dev/zero` read a header line forever (8 GB after
/// 20 s); a named pipe would wait for a writer. Neither is opened to read.
#[test]
fn devices_and_fifos_are_refused_before_reading() {
    let e = replay_file(Path::new("/dev/zero"), "reno", 250).unwrap_err();
    assert_eq!(
        e,
        "cannot read trace /dev/zero: /dev/zero is a character device, not a regular file"
    );
    let fifo = tmp("fifo.csv");
    let _ = fs::remove_file(&fifo);
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = replay_file(&fifo, "reno", 250).unwrap_err();
    assert!(
        e.ends_with("fifo.csv is a named pipe (FIFO), not a regular file"),
        "{e}"
    );
    let e = replay_file(&std::env::temp_dir(), "reno", 250).unwrap_err();
    assert!(e.ends_with("is a directory, not a regular file"), "{e}");
}

/// A regular file of one endless line, plain or a gzip bomb, stops at
/// 64 KiB of it, in a sentence naming the line.
#[test]
fn an_endless_line_is_refused_at_the_limit() {
    let zeros = vec![0u8; 1 << 20];
    let e = replay_bytes(&zeros, "reno").unwrap_err();
    assert_eq!(e, "t.csv line 1 is longer than 64 KiB, which no hook trace's line is (a row is a few KiB); is it a trace (docs/TRACE_FORMAT.md)?");
    // A header, a row, then a long third line.
    let mut text = format!("{RENO_HEADER}\n{RENO_ROW}\n").into_bytes();
    text.extend(std::iter::repeat_n(b'7', 100_000));
    let e = replay_bytes(&text, "reno").unwrap_err();
    assert!(e.starts_with("t.csv line 3 is longer than 64 KiB"), "{e}");
    // Compressed a thousandfold: the limit is on what it decompresses to.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut gz, &vec![b'x'; 64 << 20]).unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 1 << 20);
    let e = replay_bytes(&bomb, "reno").unwrap_err();
    assert!(e.starts_with("t.csv line 1 is longer than 64 KiB"), "{e}");
}

/// Issue 16: a header-only trace replayed "0 rows, 0 diverge" and exited 0.
#[test]
fn a_trace_without_rows_is_refused() {
    let e = replay_bytes(format!("{RENO_HEADER}\n").as_bytes(), "reno").unwrap_err();
    assert_eq!(e, "t.csv has a header but no rows: an empty trace proves nothing; record one with `kleinrock kernel trace` or `kleinrock model --trace-dir`");
    let ok = replay_bytes(format!("{RENO_HEADER}\n{RENO_ROW}\n").as_bytes(), "reno").unwrap();
    assert_eq!((ok.rows, ok.divergent), (1, 0));
}

#[test]
fn a_column_named_twice_is_refused() {
    let header = format!("{RENO_HEADER},pre_snd_cwnd");
    let e = replay_bytes(format!("{header}\n{RENO_ROW},11\n").as_bytes(), "reno").unwrap_err();
    assert_eq!(e, "t.csv names the column `pre_snd_cwnd` twice in its header (columns 4 and 13); a trace has each column once");
}

/// What a file holds is echoed escaped and cut short, and no message shows
/// Rust's own words (`Utf8 { pos: Some(Position {...}) }`).
#[test]
fn messages_echo_escaped_and_say_no_rust() {
    let mut bytes = b"hook,\xff\xfe,post_snd_cwnd\n".to_vec();
    bytes.extend_from_slice(b"init,1,1\n");
    let e = replay_bytes(&bytes, "reno").unwrap_err();
    assert_eq!(e, "t.csv line 1 is not valid CSV (column 2 of the header is not UTF-8 text; a header names its columns in ASCII); every row needs one cell per header column");
    let evil = format!("cong_avoid\u{1b}[2J{}", "x".repeat(1000));
    let row = RENO_ROW.replacen("cong_avoid", &evil, 1);
    let e = replay_bytes(format!("{RENO_HEADER}\n{row}\n").as_bytes(), "reno").unwrap_err();
    assert!(
        e.starts_with("t.csv row 0 (line 2), column `hook`: unknown hook `cong_avoid\\u001B[2Jxxx")
            && e.contains("... (1014 characters)`; valid hooks are init,"),
        "{e}"
    );
    let row = RENO_ROW.replacen(",4,", ",4\u{202e}\t,", 1);
    let e = replay_bytes(format!("{RENO_HEADER}\n{row}\n").as_bytes(), "reno").unwrap_err();
    assert!(
        e.ends_with("column `arg_acked`: `4\\u202E` is not an integer"),
        "{e}"
    );
}

/// Cells beyond their kernel type were cut to it silently (`rs_delivered`
/// of 2^40 became 0, `jiffies_out` wrapped); a bool of 2 was true.
#[test]
fn cells_beyond_their_type_are_refused() {
    let header = format!("{RENO_HEADER},jiffies_out,rs_delivered,rs_is_retrans");
    let cases = [
        (",,,", None),
        (
            ",4294967296,,",
            Some("column `jiffies_out`: 4294967296 is out of range for tcp_jiffies32 (a u32)"),
        ),
        (",1,2,", None),
    ];
    for (tail, want) in cases {
        let row = format!("{RENO_ROW}{tail}");
        let r = replay_bytes(format!("{header}\n{row}\n").as_bytes(), "reno");
        match want {
            None => assert!(r.is_ok(), "{tail}: {r:?}"),
            Some(w) => assert!(r.unwrap_err().ends_with(w), "{tail}"),
        }
    }
    let row = RENO_ROW.replacen(",1,10,0,", ",2,10,0,", 1);
    let e = replay_bytes(format!("{RENO_HEADER}\n{row}\n").as_bytes(), "reno").unwrap_err();
    assert!(
        e.ends_with("column `pre_is_cwnd_limited`: 2 is not 0 or 1 (is_cwnd_limited is a bool)"),
        "{e}"
    );
    // A rate sample's members, each in its kernel type (the others empty).
    for (column, v, want) in [
        (
            "rs_delivered",
            1i128 << 40,
            "1099511627776 is out of range for an s32",
        ),
        (
            "rs_delivered",
            -(1i128 << 31) - 1,
            "-2147483649 is out of range for an s32",
        ),
        ("rs_prior_mstamp", -1, "-1 is out of range for a u64"),
        (
            "rs_interval_us",
            1i128 << 63,
            "9223372036854775808 is out of range for a long (s64)",
        ),
        ("rs_is_retrans", 2, "2 is not 0 or 1 (the member is a bool)"),
    ] {
        let cell = |c: &str| match c {
            "arg_ack" | "arg_flag" => Some(0),
            c if c == column => Some(v),
            _ => None,
        };
        match format::parse_hook("cong_control", &cell) {
            Err(format::HookError::BadArg(col, why)) => {
                assert_eq!((col, why.as_str()), (column, want))
            }
            other => panic!("{column} = {v}: {other:?}"),
        }
    }
}

#[test]
fn a_clock_rate_of_zero_is_refused() {
    let r = TraceReader::from_reader(
        Box::new(Cursor::new(
            format!("{RENO_HEADER}\n{RENO_ROW}\n").into_bytes(),
        )),
        Path::new("t.csv"),
    )
    .unwrap();
    let e = replay_from(r, "reno".parse().unwrap(), 0, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert_eq!(e, "HZ 0 is not a clock rate; give HZ as an integer from 1 to 1000000 (Linux uses 100, 250, 300 or 1000)");
}
