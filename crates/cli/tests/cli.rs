//! The `kleinrock` binary as a user meets it: outputs, exit codes, and one
//! clear sentence for every kind of bad input.

mod common;

use std::fs;
use std::process::{Command, Output};

use common::{kleinrock, scenarios, text, tmpdir};

#[test]
fn model_runs_traces_and_replays_every_spec() {
    let dir = tmpdir("model");
    let o = kleinrock(&[
        "model",
        "--cc",
        "reno,cubic:friendly=newreno",
        "--hz",
        "100,1000",
        "--rate-mbps",
        "50",
        "--rtt-us",
        "20000",
        "--loss",
        "0.1",
        "--seconds",
        "3",
        "--trace-dir",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("algorithm"), "{out}");
    for row in ["reno ", "cubic:friendly=newreno "] {
        assert_eq!(
            out.lines().filter(|l| l.starts_with(row)).count(),
            2,
            "{out}"
        );
    }
    assert_eq!(out.matches(": 0 divergent").count(), 4, "{out}");
    let trace = dir.join("cubic_friendly_newreno-hz100.csv.gz");
    assert!(trace.exists());

    // The same trace through `replay`: exit 0, and a table per hook.
    let o = kleinrock(&[
        "replay",
        trace.to_str().unwrap(),
        "--cc",
        "cubic:friendly=newreno",
        "--hz",
        "100",
    ]);
    let (out, _) = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(": 0 diverge") && out.contains("cong_avoid"),
        "{out}"
    );

    // Into another algorithm: exit 1 and the first divergence.
    let o = kleinrock(&[
        "replay",
        trace.to_str().unwrap(),
        "--cc",
        "reno",
        "--hz",
        "100",
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("first divergence: row "), "{out}");
}

#[test]
fn model_is_deterministic_for_a_seed() {
    let args = [
        "model",
        "--cc",
        "cubic",
        "--loss",
        "1",
        "--seconds",
        "2",
        "--seed",
        "9",
    ];
    let a = kleinrock(&args);
    let b = kleinrock(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

fn one_error(args: &[&str]) -> String {
    let o = kleinrock(args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_input_gets_one_clear_sentence() {
    let e = one_error(&["model", "--cc", "cubik"]);
    assert!(
        e.contains(
            "unknown algorithm `cubik`; valid algorithms are reno, bbr, cdg, vegas, htcp, dctcp, cubic"
        ),
        "{e}"
    );
    let e = one_error(&["model", "--cc", "cubic:beta=2000"]);
    assert!(
        e.contains("`2000` is not a valid value for `beta` of cubic; expected 1..1023"),
        "{e}"
    );
    let e = one_error(&["replay", "x.csv", "--cc", "cubic", "--hz", "0"]);
    assert!(e.contains("`0` is not a clock rate"), "{e}");
    let e = one_error(&["model", "--loss", "150"]);
    assert!(e.contains("`150` is not a loss rate"), "{e}");
    let e = one_error(&[
        "replay",
        "/nonexistent/trace.csv",
        "--cc",
        "cubic",
        "--hz",
        "250",
    ]);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("error: cannot read trace /nonexistent/trace.csv"),
        "{e}"
    );
    let dir = tmpdir("bad");
    let bad = dir.join("bad.csv");
    fs::write(&bad, "hook,post_snd_cwnd,post_snd_ssthresh\ninit,10,5\n").unwrap();
    let e = one_error(&[
        "replay",
        bad.to_str().unwrap(),
        "--cc",
        "reno",
        "--hz",
        "250",
    ]);
    assert!(
        e.contains("has no column `pre_snd_cwnd` (reno reads snd_cwnd)"),
        "{e}"
    );
    let file = dir.join("file");
    fs::write(&file, "").unwrap();
    let e = one_error(&[
        "model",
        "--trace-dir",
        file.join("sub").to_str().unwrap(),
        "--seconds",
        "1",
    ]);
    assert!(e.contains("cannot create trace directory"), "{e}");
}

#[test]
fn algorithms_lists_names_and_parameters() {
    let o = kleinrock(&["algorithms"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(out.contains("reno (also: newreno)"), "{out}");
    assert!(out.contains("friendly=linux|eq4|newreno|off"), "{out}");
}

#[test]
fn sim_runs_a_scenario_and_writes_results() {
    let dir = tmpdir("sim");
    let scenario = dir.join("s.toml");
    fs::write(
        &scenario,
        "duration = \"5s\"\n[link]\nrate = \"10Mbit\"\nqueue = 84\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\ndirection = \"download\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = kleinrock(&[
        "sim",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--seeds",
        "1,2",
    ]);
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{stdout}\n{err}");
    assert!(
        stdout.contains("== s-seed1") && stdout.contains("== s-seed2"),
        "{stdout}"
    );
    for f in ["results.json", "flows.csv", "queues.csv", "summary.csv"] {
        assert!(out.join("s-seed1").join(f).exists(), "{f}");
    }
    let flows = fs::read_to_string(out.join("s-seed2").join("flows.csv")).unwrap();
    assert!(flows.starts_with("t,flow,goodput_bps,throughput_bps,cwnd"));
    assert!(flows
        .lines()
        .next()
        .unwrap()
        .ends_with("retransmits,segs_out,ca_state"));
    assert_eq!(flows.lines().count(), 1 + 2 * 50);
}

#[test]
fn sim_errors_name_the_file_line_and_key() {
    let dir = tmpdir("simbad");
    let scenario = dir.join("bad.toml");
    fs::write(
        &scenario,
        "duration = \"5s\"\n[link]\nrate = \"fast\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n",
    )
    .unwrap();
    let e = one_error(&["sim", scenario.to_str().unwrap()]);
    assert!(
        e.contains("bad.toml line 3: `rate` = \"fast\" is not a positive rate"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
    // `sim` does not read the [compare] table, but a mistake there is one.
    fs::write(
        &scenario,
        "duration = \"5s\"\n[link]\nrate = \"1Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n[compare]\ncc = [\"renoo\"]\n",
    )
    .unwrap();
    let e = one_error(&["sim", scenario.to_str().unwrap()]);
    assert!(
        e.contains("bad.toml line 8: `cc` in [compare]: unknown algorithm `renoo`"),
        "{e}"
    );
}

fn scenario(name: &str) -> String {
    scenarios().join(name).to_string_lossy().into_owned()
}

#[test]
fn select_plays_both_policies_and_keeps_kleinrocks_table() {
    let dir = tmpdir("select");
    let table = dir.join("learned");
    let w = scenario("select-e4-lossy.toml");
    let args = [
        "select",
        w.as_str(),
        "--quiet",
        "--table",
        table.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ];
    let o = kleinrock(&args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    // bpftune's status table, with the seed's columns, then Kleinrock's.
    assert!(
        out.contains("IPAddress  CongAlg     Metric    Count   Greedy   MinRtt  MaxRtDlvr"),
        "{out}"
    );
    assert!(
        out.contains("== kleinrock") && out.contains("kleinrock's regret is"),
        "{out}"
    );
    let csv = fs::read_to_string(dir.join("bpftune-connections.csv")).unwrap();
    assert_eq!(csv.lines().count(), 81, "a header and 80 connections");
    // The table was saved; the next run loads it, continues from it and
    // says so; a truncated one is reported, not trusted, and replaced.
    let saved = fs::read_to_string(&table).unwrap();
    assert!(saved.starts_with("kleinrock-select 3\n") && saved.contains("\nend "));
    let o = kleinrock(&args);
    let (out, _) = text(&o);
    assert!(out.contains("loaded the learned table from"), "{out}");
    assert!(
        fs::read_to_string(&table).unwrap().contains(" 160 "),
        "80 + 80 connections"
    );
    fs::write(&table, &saved[..saved.len() / 2]).unwrap();
    let o = kleinrock(&args);
    let (out, err) = text(&o);
    assert!(o.status.success());
    assert!(!out.contains("loaded the learned table"));
    assert!(
        err.contains("is not used: it has no end line (truncated?)"),
        "{err}"
    );
    assert!(fs::read_to_string(&table).unwrap().contains("\nend "));
}

#[test]
fn select_seed_redraws_the_workload() {
    let w = scenario("select-e4-lossless.toml");
    let run = |seed: &str| {
        let o = kleinrock(&[
            "select",
            &w,
            "--quiet",
            "--policy",
            "kleinrock",
            "--seed",
            seed,
        ]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}\n{err}");
        out
    };
    let (a, b) = (run("1"), run("2"));
    // The workload file leaves the seed at 1.
    let file = text(&kleinrock(&[
        "select",
        &w,
        "--quiet",
        "--policy",
        "kleinrock",
    ]))
    .0;
    assert_eq!(a, file);
    assert_ne!(a, b);
}

#[test]
fn select_bad_input_gets_one_clear_sentence() {
    let w = scenario("select-e4-lossy.toml");
    let e = one_error(&["select", &w, "--policy", "greedy"]);
    assert!(
        e.contains("unknown policy `greedy`; valid policies are bpftune and kleinrock"),
        "{e}"
    );
    let e = one_error(&["select", "/nonexistent/w.toml"]);
    assert!(
        e.contains("cannot read workload /nonexistent/w.toml"),
        "{e}"
    );
    let dir = tmpdir("select-bad");
    let bad = dir.join("w.toml");
    fs::write(&bad, "connections = 0\nduration = \"1s\"\ngap = \"1s\"\n").unwrap();
    let e = one_error(&["select", bad.to_str().unwrap()]);
    assert!(
        e.contains("line 1: `connections` = 0 is out of range"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn kernel_load_refuses_bad_input_in_one_sentence_before_needing_root() {
    for (args, expected) in [
        (
            &["kernel", "load", "native:vegas"][..],
            "error: `native:vegas` names no wrapped kernel algorithm; the wrapped ones are native:reno, native:cubic and native:bbr
",
        ),
        (
            &["kernel", "load", "cubicc"][..],
            "error: unknown algorithm `cubicc`; valid algorithms are reno, bbr, cdg, vegas, htcp, dctcp, cubic\n",
        ),
        (
            &["kernel", "load", "reno", "--name", "kr_reno_is_too_long"][..],
            "error: the name `kr_reno_is_too_long` is 19 bytes and the kernel allows 15 (TCP_CA_NAME_MAX is 16 with the NUL); choose a shorter one\n",
        ),
        (
            &["kernel", "load", "cubic:hystart=off:beta=768"][..],
            "error: the derived name `kr_cubic_nohs_b768` is 18 bytes and the kernel allows 15; choose a shorter one with --name (e.g. --name kr_cubic_1)\n",
        ),
        (
            &["kernel", "load", "reno", "cubic", "--name", "x"][..],
            "error: --name names one algorithm, but more than one spec was given; load them one at a time\n",
        ),
        (
            &["kernel", "load", "cubic", "cubic:hystart=on"][..],
            "error: kr_cubic would be loaded twice; give each spec once\n",
        ),
    ] {
        let o = kleinrock(args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert_eq!(err, expected, "{args:?}");
    }
}

#[test]
fn kernel_load_and_unload_without_root_say_to_use_sudo() {
    // As root, drop to nobody for the call (setpriv, util-linux); as anyone
    // else, the call is already unprivileged.
    let bin = env!("CARGO_BIN_EXE_kleinrock");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let run = |args: &[&str]| -> Option<Output> {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
            c
        } else {
            Command::new(bin)
        };
        c.args(args).output().ok()
    };
    if root {
        kleinrock_testkit::require!(kleinrock_testkit::installed("setpriv", "util-linux"));
    }
    let o = run(&["kernel", "unload", "kr_cubic"]).unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        "error: unloading congestion control needs root (CAP_BPF, CAP_NET_ADMIN and access to \
         /sys/fs/bpf); run it with sudo\n"
    );
    let o = run(&["kernel", "load", "cubic"]).unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // A build without BPF says so first; one with BPF asks for root.
    // The one without is a skip of what this test is for (a failure where
    // BPF is required: a binary that cannot load is no evidence).
    let bpf = kleinrock_kernel::CAN_LOAD;
    assert!(
        err.starts_with(if bpf {
            "error: loading congestion control into the kernel needs root"
        } else {
            "error: cannot load kr_cubic: this kleinrock was built without"
        }),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = run(&[
        "kernel",
        "trace",
        "--cc",
        "kr_cubic",
        "--out",
        "/tmp/kr-never.csv",
    ])
    .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(if bpf {
            "error: tracing congestion control needs root"
        } else {
            "error: cannot trace: this kleinrock was built without"
        }),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!std::path::Path::new("/tmp/kr-never.csv").exists());
    kleinrock_testkit::require((!bpf).then(|| {
        kleinrock_testkit::Missing::new(
            "bpf",
            "this kleinrock carries no BPF programs, so loading and tracing never reach \
             the root check (build with --features kernel, and clang)",
        )
    }));
}
