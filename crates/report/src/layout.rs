//! The names a report directory and a run's results directory hold, and
//! whether an existing directory is one Kleinrock may write in: a
//! directory holding anything else (someone's files, a link, a pipe) is
//! refused before any run starts, so a report never lands in, or
//! overwrites, what is not Kleinrock's.

use std::io;
use std::path::Path;

use kleinrock_files::{check_dir, claim_dir, Entry, Kind};

/// What a run's results directory holds: what `Results::write` writes
/// (kleinrock_sim), for `kleinrock sim --out` and for each of a report's
/// `runs/`, and the run's tables as Parquet (`--format parquet`,
/// kleinrock_columns' RUN_TABLES).
pub const RUN_FILES: [&str; 12] = [
    "results.json",
    "flows.csv",
    "queues.csv",
    "pings.csv",
    "summary.csv",
    "flows.parquet",
    "queues.parquet",
    "pings.parquet",
    "summary.parquet",
    "ping_summary.parquet",
    "udp.parquet",
    "links.parquet",
];

/// A report directory's own files, beside `runs/` (`summary.parquet` with
/// `--format parquet`).
pub const REPORT_FILES: [&str; 4] = [
    "report.html",
    "summary.csv",
    "comparison.json",
    "summary.parquet",
];

/// Whether `e` is a run's results directory: a directory holding only
/// [`RUN_FILES`] and a packet capture (`kleinrock sim --pcap`; a refusal
/// names what else it holds).
pub fn is_run_dir(e: &Entry) -> io::Result<bool> {
    if e.kind != Kind::Dir {
        return Ok(false);
    }
    check_dir(e.path, &|f| {
        Ok(f.is_file_named(&RUN_FILES) || f.is_file_named(&kleinrock_capture::spec::FILE_NAMES))
    })?;
    Ok(true)
}

/// Whether `e` belongs in a report directory: its files, and `runs/`
/// holding run directories and flent files.
fn in_report(e: &Entry) -> io::Result<bool> {
    if e.is_file_named(&REPORT_FILES) {
        return Ok(true);
    }
    if e.kind != Kind::Dir || e.name != Some("runs") {
        return Ok(false);
    }
    check_dir(e.path, &|r| {
        Ok(
            r.kind == Kind::File && r.name.is_some_and(|n| n.ends_with(".flent.gz"))
                || is_run_dir(r)?,
        )
    })?;
    Ok(true)
}

/// Checks, before any run, that `dir` can take a report: new (created
/// here), empty, or a report directory already (a comparison written
/// again); and writable.
pub fn claim_report_dir(dir: &Path) -> io::Result<()> {
    claim_dir(dir, &in_report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_directory_holds_only_a_report() {
        let d = std::env::temp_dir().join(format!("kleinrock-layout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        claim_report_dir(&d).unwrap();
        let run = d.join("runs").join("cubic_seed1");
        std::fs::create_dir_all(&run).unwrap();
        for f in RUN_FILES.iter().chain(&REPORT_FILES[..1]) {
            let p = if *f == "report.html" {
                d.join(f)
            } else {
                run.join(f)
            };
            std::fs::write(p, "").unwrap();
        }
        std::fs::write(d.join("runs").join("cubic_seed1.flent.gz"), "").unwrap();
        claim_report_dir(&d).unwrap();
        std::fs::write(run.join("notes.txt"), "").unwrap();
        let e = claim_report_dir(&d).unwrap_err().to_string();
        assert!(
            e.ends_with("runs/cubic_seed1/notes.txt is a regular file this command does not write"),
            "{e}"
        );
        std::fs::remove_file(run.join("notes.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("summary.csv")).unwrap();
        let e = claim_report_dir(&d).unwrap_err().to_string();
        assert!(e.ends_with("summary.csv is a symbolic link"), "{e}");
    }
}
