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
        e.contains("notes.txt is a regular file Kleinrock did not write")
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
