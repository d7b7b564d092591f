//! Replay, tested on traces the Rust reference records itself: round
//! trips. Such a trace replays with zero divergence whatever the algorithm
//! does, right or wrong, so these tests prove the recorder, the format and
//! the replayer (every input a hook reads is recorded, and the algorithms
//! are deterministic functions of it), not Linux. That a port computes
//! what Linux computes is shown by replaying kernel traces
//! (crates/kernel/tests/trace.rs and conformance.rs, as root) and by
//! hand-worked vectors (docs/TESTING.md).
//!
//! Here: recorded runs and recorded random scripts of every spec round-trip
//! exactly; another algorithm diverges; a perturbed trace is caught at the
//! exact row; malformed files get one clear error naming row and column;
//! a trace written by hand replays.

use std::fs;
use std::path::PathBuf;

use kleinrock_cc::driver::{Driver, Path as NetPath};
use kleinrock_cc::Algorithm;
use kleinrock_trace::{replay, Recorder, Report, TraceError};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-trace-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn lossy_path(seed: u64) -> NetPath {
    NetPath {
        rtt_us: 20_000,
        rate_pps: 5_000,
        buffer_pkts: 60,
        loss_ppm: 2_000,
        ack_every: 2,
        seed,
    }
}

/// Records `spec` over a lossy path for `secs` seconds at `hz`.
fn record(spec: &str, hz: u32, file: &str, secs: u64) -> (PathBuf, u64) {
    let cc: Algorithm = spec.parse().unwrap();
    let path = tmp(file);
    let rec = Recorder::create(&path, &cc).unwrap();
    let mut d = Driver::new(cc, lossy_path(3), hz, rec);
    d.run_for(secs * 1_000_000);
    let rows = d.tap.finish().unwrap();
    (path, rows)
}

fn run(path: &std::path::Path, spec: &str, hz: u32) -> Result<Report, TraceError> {
    replay(path, spec.parse().unwrap(), hz, &mut |_| {})
}

#[test]
fn recorded_runs_round_trip_with_zero_divergence() {
    for (spec, hz) in [
        ("reno", 1000),
        ("reno:hystart=hspp", 250),
        ("cubic", 250),
        ("cubic", 100),
        ("cubic:hystart=hspp", 1000),
        ("cubic:friendly=eq4", 100),
        ("cubic:friendly=newreno:hystart=off", 250),
    ] {
        let file = format!("ok-{}-{hz}.csv.gz", spec.replace([':', '='], "_"));
        let (path, rows) = record(spec, hz, &file, 6);
        let report = run(&path, spec, hz).unwrap();
        assert!(rows > 1000, "{spec}: {rows} rows");
        assert_eq!(report.rows, rows, "{spec}");
        assert!(report.agrees(), "{spec}:\n{report}");
        for hook in [
            "init",
            "cong_avoid",
            "pkts_acked",
            "ssthresh",
            "set_state",
            "in_ack_event",
        ] {
            assert!(report.per_hook.contains_key(hook), "{spec} has {hook} rows");
        }
    }
}

#[test]
fn replaying_with_another_algorithm_diverges() {
    let (path, _) = record("cubic", 250, "other.csv", 10);
    let report = run(&path, "reno", 250).unwrap();
    assert!(!report.agrees());
    // HyStart off changes behaviour too (and the trace has CUBIC's columns).
    let report = run(&path, "cubic:friendly=newreno", 250).unwrap();
    assert!(!report.agrees());
}

/// The header and rows of a plain-CSV trace, for surgery.
fn load(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header, rows)
}

fn save(path: &std::path::Path, header: &[String], rows: &[Vec<String>]) {
    let mut s = header.join(",");
    s.push('\n');
    for r in rows {
        s.push_str(&r.join(","));
        s.push('\n');
    }
    fs::write(path, s).unwrap();
}

fn col(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap()
}

#[test]
fn a_perturbed_output_is_reported_at_its_row() {
    let (path, _) = record("cubic", 250, "perturb.csv", 10);
    let (header, mut rows) = load(&path);
    let (hook, cwnd) = (col(&header, "hook"), col(&header, "post_snd_cwnd"));
    let target = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r[hook] == "cong_avoid")
        .nth(500)
        .map(|(i, _)| i)
        .unwrap();
    let real: i128 = rows[target][cwnd].parse().unwrap();
    rows[target][cwnd] = (real + 1).to_string();
    let bad = tmp("perturbed.csv");
    save(&bad, &header, &rows);
    let report = run(&bad, "cubic", 250).unwrap();
    assert_eq!(report.divergent, 1, "{report}");
    let first = report.first.as_ref().unwrap();
    assert_eq!(
        (first.row, first.line, first.hook),
        (target as u64, target as u64 + 2, "cong_avoid")
    );
    assert_eq!(first.diffs.len(), 1);
    assert_eq!(first.diffs[0].column, "post_snd_cwnd");
    assert_eq!(
        (first.diffs[0].expected, first.diffs[0].actual),
        (real + 1, real)
    );
    assert_eq!(report.per_hook["cong_avoid"].divergent, 1);
    let text = report.to_string();
    assert!(
        text.contains(&format!(
            "first divergence: row {target} (line {})",
            target + 2
        )),
        "{text}"
    );
}

#[test]
fn a_perturbed_private_member_is_reported() {
    let (path, _) = record("cubic", 250, "perturb-ca.csv", 10);
    let (header, mut rows) = load(&path);
    let k = col(&header, "post_ca_bic_K");
    let target = rows.iter().position(|r| r[k] != "0").unwrap();
    rows[target][k] = "1".into();
    let bad = tmp("perturbed-ca.csv");
    save(&bad, &header, &rows);
    let report = run(&bad, "cubic", 250).unwrap();
    let first = report.first.unwrap();
    assert_eq!(first.row, target as u64);
    assert_eq!(first.diffs[0].column, "post_ca_bic_K");
}

#[test]
fn an_output_computed_with_jiffies_out_is_accepted() {
    let (path, _) = record("cubic", 250, "jiffies.csv", 10);
    let (header, mut rows) = load(&path);
    let (pre_e, post_e) = (
        col(&header, "pre_ca_epoch_start"),
        col(&header, "post_ca_epoch_start"),
    );
    let (jin, jout) = (col(&header, "jiffies_in"), col(&header, "jiffies_out"));
    // The row that starts an epoch records jiffies in epoch_start.
    let target = rows
        .iter()
        .position(|r| r[pre_e] == "0" && r[post_e] != "0")
        .unwrap();
    let j: u32 = rows[target][jin].parse().unwrap();
    rows[target][jin] = j.wrapping_sub(1).to_string();
    let ticked = tmp("ticked.csv");
    save(&ticked, &header, &rows);
    let report = run(&ticked, "cubic", 250).unwrap();
    assert!(report.agrees(), "{report}");
    // Neither reading explains it: a divergence.
    rows[target][jout] = j.wrapping_sub(1).to_string();
    save(&ticked, &header, &rows);
    let report = run(&ticked, "cubic", 250).unwrap();
    assert_eq!(report.first.unwrap().row, target as u64);
}

fn err(path: &std::path::Path, spec: &str) -> String {
    run(path, spec, 1000).unwrap_err().to_string()
}

#[test]
fn malformed_traces_get_one_clear_error() {
    let (path, _) = record("reno", 1000, "malformed-src.csv", 2);
    let (header, rows) = load(&path);

    // A column the algorithm reads is missing.
    let c = col(&header, "pre_snd_cwnd");
    let strip = |v: &Vec<String>| {
        let mut v = v.clone();
        v.remove(c);
        v
    };
    let bad = tmp("missing.csv");
    save(
        &bad,
        &strip(&header),
        &rows.iter().map(strip).collect::<Vec<_>>(),
    );
    let e = err(&bad, "reno");
    assert!(
        e.contains("has no column `pre_snd_cwnd` (reno reads snd_cwnd)"),
        "{e}"
    );

    // A bad number.
    let mut r2 = rows.clone();
    let acked = col(&header, "arg_acked");
    let row = r2
        .iter()
        .position(|r| r[col(&header, "hook")] == "cong_avoid")
        .unwrap();
    r2[row][acked] = "12x".into();
    let bad = tmp("number.csv");
    save(&bad, &header, &r2);
    let e = err(&bad, "reno");
    assert!(
        e.ends_with(&format!(
            "row {row} (line {}), column `arg_acked`: `12x` is not an integer",
            row + 2
        )),
        "{e}"
    );

    // An empty argument a hook needs.
    r2[row][acked] = String::new();
    save(&bad, &header, &r2);
    let e = err(&bad, "reno");
    assert!(
        e.ends_with("column `arg_acked`: empty, but cong_avoid needs it"),
        "{e}"
    );

    // An unknown hook.
    let mut r3 = rows.clone();
    r3[3][col(&header, "hook")] = "cong_avoidd".into();
    let bad = tmp("hook.csv");
    save(&bad, &header, &r3);
    let e = err(&bad, "reno");
    assert!(e.contains("row 3 (line 5), column `hook`: unknown hook `cong_avoidd`; valid hooks are init, release"), "{e}");

    // A row with a missing cell.
    let mut r4 = rows.clone();
    r4[7].pop();
    let bad = tmp("ragged.csv");
    save(&bad, &header, &r4);
    let e = err(&bad, "reno");
    assert!(e.contains("line 9 is not valid CSV"), "{e}");

    // An out-of-domain state value.
    let mut r5 = rows.clone();
    r5[2][col(&header, "pre_icsk_ca_state")] = "7".into();
    let bad = tmp("state.csv");
    save(&bad, &header, &r5);
    let e = err(&bad, "reno");
    assert!(
        e.contains("row 2 (line 4), column `pre_icsk_ca_state`: 7 is out of range"),
        "{e}"
    );

    // Missing file, empty file.
    let e = err(&tmp("nope.csv"), "reno");
    assert!(e.starts_with("cannot read trace"), "{e}");
    let empty = tmp("empty.csv");
    fs::write(&empty, "").unwrap();
    let e = err(&empty, "reno");
    assert!(e.contains("the file is empty"), "{e}");
}

#[test]
fn a_hand_built_reno_trace() {
    // Only the columns reno reads, in a shuffled order, plus an unknown
    // column (ignored) and a pkts_acked before init (harmless for reno).
    let csv = "\
extra,hook,arg_acked,arg_ack,pre_snd_cwnd,pre_snd_ssthresh,pre_snd_cwnd_cnt,pre_snd_cwnd_clamp,pre_is_cwnd_limited,pre_max_packets_out,pre_prior_cwnd,post_snd_cwnd,post_snd_ssthresh,post_snd_cwnd_cnt,ret,as_pkts_acked,as_rtt_us,as_in_flight,arg_u
x,pkts_acked,,,10,2147483647,0,4294967295,0,0,0,10,2147483647,0,0,1,-1,1,
x,init,,,10,2147483647,0,4294967295,0,0,0,10,2147483647,0,0,,,,
x,cong_avoid,4,1000,10,2147483647,0,4294967295,1,10,0,14,2147483647,0,0,,,,
x,cong_avoid,8,2000,14,16,0,4294967295,1,14,0,16,16,6,0,,,,
x,cong_avoid,12,3000,16,16,15,4294967295,1,16,0,17,16,11,0,,,,
x,ssthresh,,,17,16,11,4294967295,1,17,0,17,16,11,8,,,,
x,set_state,,,17,8,11,4294967295,1,17,17,17,8,11,0,,,,3
x,undo_cwnd,,,8,8,0,4294967295,1,17,17,8,8,0,17,,,,
x,cong_avoid,1,4000,16,16,0,4294967295,0,8,0,16,16,0,0,,,,
";
    let path = tmp("hand.csv");
    fs::write(&path, csv).unwrap();
    let report = run(&path, "reno", 1000).unwrap();
    assert!(report.agrees(), "{report}");
    assert_eq!(report.rows, 9);
    // Row 4 by hand: cwnd 16 = ssthresh, cnt 15 + 12 = 27 >= 16: +1, 11 left.
    // Change the expected cnt: caught.
    let path2 = tmp("hand2.csv");
    fs::write(
        &path2,
        csv.replace("17,16,11,0,,,,\nx,ssthresh", "17,16,12,0,,,,\nx,ssthresh"),
    )
    .unwrap();
    let report = run(&path2, "reno", 1000).unwrap();
    let first = report.first.unwrap();
    assert_eq!((first.row, first.hook), (4, "cong_avoid"));
    assert_eq!(first.diffs[0].column, "post_snd_cwnd_cnt");
    assert_eq!((first.diffs[0].expected, first.diffs[0].actual), (12, 11));
}

/// A CDG backoff during Loss, where `tcp_enter_cwr()` does nothing, leaves
/// CDG in `CDG_BACKOFF` until some CWR completes; a later round whose draw
/// does not fire leaves it there too, so the trace's `state` cannot say
/// whether that draw fired. Found by `every_recorded_script_round_trips`:
/// the replay took it as fired and diverged at the next round (no growth).
#[test]
fn a_cdg_draw_that_leaves_it_backing_off_replays() {
    use kleinrock_cc::script::{Ack, Event, Flight, Player, Start};
    let ack = |acked, rtt_us| {
        Event::Ack(Ack {
            acked,
            rtt_us,
            ..Ack::default()
        })
    };
    let start = Start {
        hz: 100,
        now_us: 0,
        cwnd: 1,
        ssthresh: 0,
        clamp: 2,
        cwnd_cnt: 0,
        prior_cwnd: 0,
        flight: Flight::default(),
        delivered: 0,
        delivered_ce: 0,
        lost: 0,
        seq: 0,
        srtt_us: 0,
        mss: 420,
        ecn: false,
    };
    let events = [
        ack(158, 1),
        ack(90, -1),
        ack(339, -1),
        ack(530, -1),
        Event::Rto { dt_us: 0 },
        // A round at 125 us after one at 1 us: the draw fires (seeded), in
        // Loss.
        ack(344, 125),
        // The next round's draw does not fire: slow start to 2.
        ack(4_172_263_424, 125),
    ];
    let spec = "cdg:window=256:use_ineff=0:backoff_beta=0";
    let cc: Algorithm = spec.parse().unwrap();
    let path = tmp("cdg-backing-off.csv");
    let rec = Recorder::create(&path, &cc).unwrap();
    let mut p = Player::new(cc, &start, rec);
    for e in &events {
        p.play(e);
    }
    assert_eq!(member(&p.cc, "state"), Some(3), "CDG_BACKOFF");
    assert_eq!(p.sk.snd_cwnd, 2);
    p.tap.finish().unwrap();
    let report = run(&path, spec, 100).unwrap();
    assert!(report.agrees(), "{report}");
}

fn member(cc: &Algorithm, name: &str) -> Option<i64> {
    use kleinrock_cc::CongestionControl;
    let mut found = None;
    cc.visit_ca(&mut |n, v| {
        if n == name {
            found = Some(v);
        }
    });
    found
}

mod properties {
    use super::*;
    use kleinrock_cc::ops::Tap;
    use kleinrock_cc::script::strategy::{for_every_spec, script};
    use kleinrock_cc::script::{Domain, Player, Script};
    use kleinrock_cc::{CongestionControl, Hook, Sock};
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    /// A recorder that, like the property tests' player, calls no hook
    /// once cwnd is 0: the kernel defines nothing after that (its next
    /// congestion avoidance divides by cwnd).
    struct Recording {
        rec: Recorder,
        stopped: bool,
    }

    impl<C: CongestionControl> Tap<C> for Recording {
        fn call(&mut self, hook: &Hook, cc: &mut C, sk: &mut Sock) -> u32 {
            self.stopped |= sk.snd_cwnd == 0;
            if self.stopped {
                return 0;
            }
            Tap::<C>::call(&mut self.rec, hook, cc, sk)
        }
    }

    /// Records `s` played on `spec`, then replays the trace.
    fn round_trip(spec: &str, s: &Script) -> Result<(), TestCaseError> {
        let cc: Algorithm = spec.parse().unwrap();
        let path = tmp(&format!("script-{}.csv", spec.replace([':', '='], "_")));
        let rec = Recorder::create(&path, &cc).unwrap();
        let mut p = Player::new(
            cc,
            &s.start,
            Recording {
                rec,
                stopped: false,
            },
        );
        p.play_all(
            &s.events,
            |p, _| if p.tap.stopped { Err(()) } else { Ok(()) },
        )
        .ok();
        let rows = p.tap.rec.finish().unwrap();
        let report = run(&path, spec, s.start.hz).unwrap();
        prop_assert_eq!(report.rows, rows);
        prop_assert!(report.agrees(), "{}", report);
        Ok(())
    }

    /// A script of every spec, recorded from the kernel's states or from
    /// any state (every field any value, edges first, as kleinrock-cc's
    /// tests/properties.rs draws them), replays exactly: the trace carries
    /// every input a hook reads, at its full width.
    #[test]
    fn every_recorded_script_round_trips() {
        let scripts = prop_oneof![script(Domain::Kernel, 200), script(Domain::Any, 200)];
        for_every_spec(file!(), 128, scripts, |spec, s| round_trip(spec, &s));
    }

    /// Whatever the path, a run of every spec the ACK-clock model drives
    /// and records replays exactly.
    #[test]
    fn every_recorded_run_round_trips() {
        let path = (
            proptest::sample::select(&[100u32, 250, 1000][..]),
            200u32..300_000,
            100u64..50_000,
            0u32..100_000,
            any::<u64>(),
        );
        for_every_spec(
            file!(),
            8,
            path,
            |spec, (hz, rtt_us, rate_pps, loss_ppm, seed)| {
                let cc: Algorithm = spec.parse().unwrap();
                let path = tmp(&format!("run-{seed}.csv"));
                let rec = Recorder::create(&path, &cc).unwrap();
                let net = NetPath {
                    rtt_us,
                    rate_pps,
                    buffer_pkts: 50,
                    loss_ppm,
                    ack_every: 2,
                    seed,
                };
                let mut d = Driver::new(cc, net, hz, rec);
                d.run_for(1_500_000);
                let rows = d.tap.finish().unwrap();
                let report = run(&path, spec, hz).unwrap();
                fs::remove_file(&path).unwrap();
                prop_assert_eq!(report.rows, rows);
                prop_assert!(report.agrees(), "{}", report);
                Ok(())
            },
        );
    }
}
