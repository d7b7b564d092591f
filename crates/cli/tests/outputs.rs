//! What the commands write: only files that are Kleinrock's, checked before
//! any work, never through a link, into a device or a named pipe, never over
//! an input (issue 16, "Destroys a file").

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{kleinrock, scenarios, text, tmpdir};

/// The command's one-line error.
fn refused(args: &[&str]) -> String {
    let o = kleinrock(args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
    assert!(
        err.starts_with("error: ") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one sentence: {err}");
    err
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn is_fifo(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::symlink_metadata(p).unwrap().file_type().is_fifo()
}

fn is_char_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

fn workload() -> PathBuf {
    scenarios().join("select-e4-lossy.toml")
}

#[test]
fn select_replaces_only_a_table() {
    let dir = tmpdir("outputs-table");
    let w = workload();
    let w = w.to_str().unwrap();
    let notes = dir.join("notes.txt");
    fs::write(&notes, "my notes\n").unwrap();
    let fifo = dir.join("pipe");
    mkfifo(&fifo);
    let link = dir.join("link");
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    // A copy of the workload, so the test cannot damage the shipped one.
    let own = dir.join("w.toml");
    fs::copy(w, &own).unwrap();
    let own_text = fs::read_to_string(&own).unwrap();
    for (table, want) in [
        (
            Path::new("/dev/null"),
            "/dev/null is a character device, not a regular file",
        ),
        (&fifo, "pipe is a named pipe (FIFO), not a regular file"),
        (&link, "link is a symbolic link, not a regular file"),
        (
            &notes,
            "notes.txt is not a Kleinrock table (its first line is not `kleinrock-select N`)",
        ),
        (&own, "it is the workload file"),
        (&dir, "is a directory, not a regular file"),
        (&dir.join("absent").join("t"), "absent is not a directory"),
    ] {
        let e = refused(&[
            "select",
            own.to_str().unwrap(),
            "--quiet",
            "--table",
            table.to_str().unwrap(),
        ]);
        assert!(
            e.starts_with(&format!(
                "error: cannot save the learned table to {}: ",
                table.display()
            )) && e.contains(want)
                && e.trim_end().ends_with("; choose another --table path"),
            "{e}"
        );
    }
    assert!(is_char_device(Path::new("/dev/null")));
    assert!(is_fifo(&fifo));
    assert_eq!(fs::read_to_string(&notes).unwrap(), "my notes\n");
    assert_eq!(fs::read_to_string(&own).unwrap(), own_text);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn select_writes_out_only_where_it_is_its_own() {
    let dir = tmpdir("outputs-select-out");
    let w = workload();
    let w = w.to_str().unwrap();
    let out = dir.join("out");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("notes.txt"), "mine").unwrap();
    let e = refused(&["select", w, "--quiet", "--out", out.to_str().unwrap()]);
    assert!(
        e.contains("notes.txt is a regular file this command does not write")
            && e.contains("choose a new or empty --out directory"),
        "{e}"
    );
    fs::remove_file(out.join("notes.txt")).unwrap();
    mkfifo(&out.join("kleinrock-summary.txt"));
    let e = refused(&["select", w, "--quiet", "--out", out.to_str().unwrap()]);
    assert!(
        e.contains("kleinrock-summary.txt is a named pipe (FIFO)"),
        "{e}"
    );
    assert!(is_fifo(&out.join("kleinrock-summary.txt")));
    // --out a file, and a table --out would overwrite.
    let file = dir.join("file");
    fs::write(&file, "x").unwrap();
    let e = refused(&["select", w, "--quiet", "--out", file.to_str().unwrap()]);
    assert!(e.contains("file is a regular file, not a directory"), "{e}");
    let fresh = dir.join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    let clash = fresh.join("kleinrock-summary.txt");
    let e = refused(&[
        "select",
        w,
        "--quiet",
        "--out",
        fresh.to_str().unwrap(),
        "--table",
        clash.to_str().unwrap(),
    ]);
    assert!(
        e.contains("--out writes kleinrock-summary.txt there"),
        "{e}"
    );
}

/// A scenario that would run for minutes: a refusal that comes back at all
/// came before the run.
const LONG: &str =
    "duration = \"3000s\"\n[link]\nrate = \"1Gbit\"\n[[flow]]\ncc = \"cubic\"\nrtt = \"10ms\"\n";

#[test]
fn sim_checks_its_outputs_before_it_runs() {
    let dir = tmpdir("outputs-sim");
    let s = dir.join("long.toml");
    fs::write(&s, LONG).unwrap();
    let s = s.to_str().unwrap();
    let file = dir.join("file");
    fs::write(&file, "mine").unwrap();
    let e = refused(&["sim", s, "--quiet", "--out", file.to_str().unwrap()]);
    assert!(
        e.contains(&format!(
            "cannot write results to {0}: {0} is a regular file, not a directory; choose a new or empty --out directory",
            file.display()
        )),
        "{e}"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "mine");
    // A directory holding someone's files, or a run directory that does.
    let out = dir.join("out");
    fs::create_dir_all(out.join("long")).unwrap();
    fs::write(out.join("long").join("results.json"), "{}").unwrap();
    fs::write(out.join("long").join("notes.txt"), "mine").unwrap();
    let e = refused(&["sim", s, "--quiet", "--out", out.to_str().unwrap()]);
    assert!(
        e.contains("long/notes.txt is a regular file this command does not write"),
        "{e}"
    );
    // Two scenario files of one name under one --out; a seed twice.
    let other = dir.join("other");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("long.toml"), LONG).unwrap();
    let fresh = dir.join("fresh");
    let e = refused(&[
        "sim",
        s,
        other.join("long.toml").to_str().unwrap(),
        "--out",
        fresh.to_str().unwrap(),
    ]);
    assert!(
        e.contains("long.toml would both write")
            && e.contains("give the scenario files different names"),
        "{e}"
    );
    let e = refused(&[
        "sim",
        s,
        "--seeds",
        "1,2,1",
        "--out",
        fresh.to_str().unwrap(),
    ]);
    assert!(
        e.contains("--seeds lists 1 twice; give each seed once"),
        "{e}"
    );
    assert!(!fresh.exists(), "nothing created for a refused command");
}

#[test]
fn a_hook_trace_is_written_by_one_run_over_nothing_but_a_trace() {
    let dir = tmpdir("outputs-traces");
    let traced = |trace: &str| {
        let s = dir.join("traced.toml");
        fs::write(&s, format!("{LONG}trace = \"{trace}\"\n")).unwrap();
        s.to_str().unwrap().to_string()
    };
    // The gzip several runs wrote at once ended corrupt.
    let s = traced("t.csv.gz");
    let e = refused(&["sim", &s, "--seeds", "1,2", "--quiet"]);
    assert!(
        e.contains("the runs `traced-seed1` and `traced-seed2` would both write the hook trace")
            && e.contains("trace one run at a time"),
        "{e}"
    );
    let e = refused(&[
        "compare",
        &s,
        "--cc",
        "cubic,bbr",
        "--quiet",
        "--out",
        dir.join("r").to_str().unwrap(),
    ]);
    assert!(
        e.contains("would both write the hook trace")
            && e.contains("trace one run with `kleinrock sim`"),
        "{e}"
    );
    // The scenario itself, a pipe, a device, a missing directory.
    let s = traced("traced.toml");
    let e = refused(&["sim", &s, "--quiet"]);
    assert!(
        e.contains("traced.toml: it is a file that is not a hook trace")
            && e.contains("choose another `trace` path"),
        "{e}"
    );
    assert!(fs::read_to_string(&s).unwrap().starts_with("duration"));
    mkfifo(&dir.join("pipe"));
    let e = refused(&["sim", &traced("pipe"), "--quiet"]);
    assert!(e.contains("it is a named pipe (FIFO)"), "{e}");
    let e = refused(&["sim", &traced("/dev/null"), "--quiet"]);
    assert!(e.contains("/dev/null: it is a character device"), "{e}");
    let e = refused(&["sim", &traced("nowhere/t.csv"), "--quiet"]);
    assert!(e.contains("nowhere is not a directory"), "{e}");
    // Over an earlier trace: allowed, and written.
    fs::write(dir.join("old.csv"), "seq,hook,post_snd_cwnd\n0,init,10\n").unwrap();
    let s = dir.join("short.toml");
    fs::write(
        &s,
        "duration = \"1s\"\n[link]\nrate = \"10Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\ntrace = \"old.csv\"\n",
    )
    .unwrap();
    let o = kleinrock(&["sim", s.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(
        fs::read_to_string(dir.join("old.csv"))
            .unwrap()
            .lines()
            .count()
            > 10
    );
}

/// A hook trace that cannot be written while the simulation runs (here a
/// file size limit, with SIGXFSZ ignored, so that the write past it fails
/// with EFBIG: no root and no full disk needed) ends the command in one
/// sentence naming the trace's path and the reason, without the OS's
/// error number (issue 16: "cannot write a hook trace: No such file or
/// directory" named no path).
#[test]
fn a_hook_trace_write_failing_during_the_run_names_the_trace() {
    let dir = tmpdir("outputs-trace-fails");
    let s = dir.join("traced.toml");
    fs::write(
        &s,
        "duration = \"2s\"\n[link]\nrate = \"100Mbit\"\n[[flow]]\ncc = \"cubic\"\nrtt = \"10ms\"\ntrace = \"t.csv\"\n",
    )
    .unwrap();
    // bash's `ulimit -f` counts KiB: 64 KiB, a few hundred rows.
    let o = std::process::Command::new("bash")
        .args(["-c", "trap '' XFSZ; ulimit -f 64; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_kleinrock"))
        .args(["sim", s.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}{err}");
    let trace = dir.join("t.csv");
    assert!(
        err.contains(&format!(
            "cannot write the hook trace {}: File too large",
            trace.display()
        )) && !err.contains("os error")
            && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one sentence: {err}");
    assert_eq!(fs::metadata(&trace).unwrap().len(), 64 << 10);
}

#[test]
fn compare_checks_its_report_directory_before_it_runs() {
    let dir = tmpdir("outputs-compare");
    let s = dir.join("long.toml");
    fs::write(&s, LONG).unwrap();
    let out = dir.join("report");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("summary.csv"), "my spreadsheet").unwrap();
    fs::write(out.join("thesis.tex"), "mine").unwrap();
    let e = refused(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        e.contains("thesis.tex is a regular file this command does not write")
            && e.contains("choose a new or empty directory with --out"),
        "{e}"
    );
    assert_eq!(
        fs::read_to_string(out.join("summary.csv")).unwrap(),
        "my spreadsheet"
    );
}

#[test]
fn model_traces_only_into_a_directory_of_traces() {
    let dir = tmpdir("outputs-model");
    fs::write(dir.join("notes.txt"), "mine").unwrap();
    let e = refused(&[
        "model",
        "--seconds",
        "1",
        "--trace-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(
        e.contains("notes.txt is a regular file this command does not write"),
        "{e}"
    );
    let fresh = dir.join("fresh");
    let e = refused(&[
        "model",
        "--cc",
        "reno,newreno",
        "--seconds",
        "1",
        "--trace-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(e.contains("reno at HZ 250 is asked for twice"), "{e}");
    let e = refused(&[
        "model",
        "--hz",
        "100,100",
        "--seconds",
        "1",
        "--trace-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(e.contains("at HZ 100 is asked for twice"), "{e}");
    // A trace directory of traces is written again.
    let o = kleinrock(&[
        "model",
        "--cc",
        "reno",
        "--seconds",
        "1",
        "--trace-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = kleinrock(&[
        "model",
        "--cc",
        "reno",
        "--seconds",
        "1",
        "--trace-dir",
        fresh.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
}
