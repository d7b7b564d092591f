//! What every conditional test of the workspace calls: a test that needs
//! something this machine may lack (root, a kernel with BTF, BPF programs
//! in the build, iperf3, flent...) asks [`require`] (or the [`require!`]
//! macro) before it starts.
//!
//! - On a developer's machine a missing capability is a skip: the test
//!   says `skipped: <reason>` on stderr, appends `<test>\t<capability>\t
//!   <reason>` to the file `KLEINROCK_SKIP_LOG` names (if set) and
//!   returns. libtest counts such a test as passed and keeps a passing
//!   test's output to itself, so the log, not stderr, is how
//!   `scripts/test.sh` counts skips truly.
//! - Where the capability is required (`KLEINROCK_REQUIRE`, a comma list
//!   of capabilities or `all`; `scripts/test.sh` sets `all` when it runs
//!   as root on Linux, as CI does) the same call panics with the reason,
//!   so a suite that should have run a test cannot pass without it.
//!
//! Timing tests on a shared virtual machine assert accuracy only when the
//! hypervisor left the CPU alone; [`timing`] records whether a run was
//! judged (`KLEINROCK_TIMING_LOG`), so the suite can say how many were
//! not, and fail when none was (docs/TESTING.md).
//!
//! [`wording`] says what a message for a person must be, for the
//! hostile-input tests and the fuzz targets alike.

use std::fmt;
use std::io::Write;

pub mod wording;
use std::path::Path;

/// The variable naming the capabilities that must be present.
pub const REQUIRE: &str = "KLEINROCK_REQUIRE";
/// The variable naming the file skips are appended to.
pub const SKIP_LOG: &str = "KLEINROCK_SKIP_LOG";
/// The variable naming the file timing runs are appended to.
pub const TIMING_LOG: &str = "KLEINROCK_TIMING_LOG";

/// A capability this machine lacks, and why (one sentence that names the
/// fix where there is one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// Its name in `KLEINROCK_REQUIRE` (`root`, `bpf`, `iperf3`...).
    pub capability: &'static str,
    pub reason: String,
}

impl Missing {
    pub fn new(capability: &'static str, reason: impl Into<String>) -> Missing {
        Missing {
            capability,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason, self.capability)
    }
}

/// True when the test may go on: nothing is missing. When something is,
/// panics if `KLEINROCK_REQUIRE` requires it; otherwise records the skip
/// and returns false, and the test returns.
#[track_caller]
pub fn require(missing: Option<Missing>) -> bool {
    let Some(m) = missing else {
        return true;
    };
    let test = test_name();
    if required(m.capability, std::env::var(REQUIRE).ok().as_deref()) {
        panic!(
            "{test} cannot run: {} ({REQUIRE} requires `{}` here, so this is a failure, \
             not a skip)",
            m.reason, m.capability
        );
    }
    eprintln!("skipped: {m}");
    append(
        SKIP_LOG,
        &format!("{test}\t{}\t{}\n", m.capability, one_line(&m.reason)),
    );
    false
}

/// Returns from the calling test when [`require`] says to skip.
#[macro_export]
macro_rules! require {
    ($missing:expr) => {
        if !$crate::require($missing) {
            return;
        }
    };
}

/// Is `capability` among those `list` (the value of `KLEINROCK_REQUIRE`)
/// names?
pub fn required(capability: &str, list: Option<&str>) -> bool {
    list.is_some_and(|l| {
        l.split(',')
            .map(str::trim)
            .any(|c| c == "all" || c == capability)
    })
}

/// Records that a timing measurement `what` of the calling test was judged
/// (`quiet`: the host left it alone, its accuracy was asserted) or not.
pub fn timing(what: &str, quiet: bool) {
    let verdict = if quiet { "judged" } else { "not judged" };
    append(
        TIMING_LOG,
        &format!("{}\t{}\t{verdict}\n", test_name(), one_line(what)),
    );
}

/// `root`, when this process is not root.
pub fn root() -> Option<Missing> {
    // SAFETY: geteuid has no preconditions.
    (unsafe { libc::geteuid() } != 0)
        .then(|| Missing::new("root", "needs root; run the tests as root or with sudo"))
}

/// `bpf`, when the build under test carries no BPF programs: `carried` is
/// `kleinrock_kernel::CAN_LOAD` (this crate depends on nothing of ours).
/// They need clang at build time and the kernel crate's `bpf` feature,
/// which the whole workspace's build turns on (`--features kernel` for the
/// CLI alone).
pub fn bpf(carried: bool) -> Option<Missing> {
    (!carried).then(|| {
        Missing::new(
            "bpf",
            "this build carries no BPF programs (clang at build time, and the whole \
             workspace or --features kernel)",
        )
    })
}

/// `program`, when it is not on the PATH; `package` is what installs it.
pub fn installed(program: &'static str, package: &str) -> Option<Missing> {
    let found = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| is_executable(&dir.join(program)))
    });
    (!found).then(|| {
        Missing::new(
            program,
            format!("`{program}` is not installed (apt-get install {package})"),
        )
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The calling test, as `<test binary>::<test>`: libtest runs each test
/// on a thread named for it, and the binary (its file name less cargo's
/// hash) tells tests of the same name in different files apart.
fn test_name() -> String {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("<unnamed thread>");
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let binary = match binary.rsplit_once('-') {
        Some((stem, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            stem.to_string()
        }
        _ => binary,
    };
    format!("{binary}::{test}")
}

fn one_line(text: &str) -> String {
    text.replace(['\t', '\n'], " ")
}

/// tshark's `fields` of every frame of the capture `file` that matches the
/// display filter `filter`: a row per frame, a field's several values
/// joined by commas, an absent field empty. Panics if tshark fails. Ask
/// for it first with `installed("tshark", "tshark")`.
pub fn tshark(file: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(file).args(["-Y", filter]);
    cmd.args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]);
    cmd.args(["-E", "aggregator=,"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark -Y {filter:?} on {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Appends `line` to the file `variable` names, if it names one. One
/// write of a short line to a file opened for appending, so that test
/// threads and processes writing at once do not interleave.
fn append(variable: &str, line: &str) {
    let Some(path) = std::env::var_os(variable) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot append to {} ({variable}): {e}",
            Path::new(&path).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_and_lists_require() {
        assert!(required("bpf", Some("all")));
        assert!(required("bpf", Some("flent, bpf")));
        assert!(!required("bpf", Some("flent,iperf3")));
        assert!(!required("bpf", Some("")));
        assert!(!required("bpf", None));
        assert!(!required("bp", Some("bpf")));
    }

    #[test]
    fn the_test_is_named_by_its_binary_and_thread() {
        let name = test_name();
        assert!(
            name.starts_with("kleinrock_testkit::") || name.contains("::tests::"),
            "{name}"
        );
        assert!(
            name.ends_with("tests::the_test_is_named_by_its_binary_and_thread"),
            "{name}"
        );
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let m = installed("kleinrock-no-such-program", "nothing").unwrap();
        assert_eq!(m.capability, "kleinrock-no-such-program");
        assert_eq!(
            m.reason,
            "`kleinrock-no-such-program` is not installed (apt-get install nothing)"
        );
        assert_eq!(installed("sh", "dash"), None);
    }
}
