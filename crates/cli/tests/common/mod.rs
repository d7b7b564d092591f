//! What every test of the `kleinrock` binary needs: running it, its output
//! as text, a scratch directory, the shipped scenarios.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the binary this package builds.
pub fn kleinrock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// (stdout, stderr).
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// An empty directory of this test process, named for the test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kleinrock-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// The repository's scenarios/ directory.
pub fn scenarios() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}
