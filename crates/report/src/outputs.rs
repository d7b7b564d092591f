//! What `sim` and `compare` (and the Python package's `sim`, `compare` and
//! sweeps) write besides their results and reports: the
//! hook traces scenarios name (`[[flow]] trace`); `kernel trace --out`'s
//! traces are checked by the same test ([`check_trace`]). Checked before any run,
//! as the results' directories are: a trace is one connection's, so one
//! flow of one run writes each file (several at once wrote one gzip and
//! left it corrupt), into a directory that exists, over nothing or over a
//! hook trace, and never through a link, into a device or a pipe.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use kleinrock_files::Kind;

use crate::runner::Job;

/// How far into an existing file its header row is looked for: as far as
/// a trace's line may go.
const HEADER_LIMIT: u64 = kleinrock_trace::read::MAX_LINE;

/// Whether the regular file at `path` is a hook trace (CSV, gzipped or
/// not, whose header row has a `hook` column): the only file a trace may
/// replace. Only its first 64 KiB are read.
fn is_hook_trace(path: &Path) -> std::io::Result<bool> {
    let mut f = BufReader::new(kleinrock_files::open_file(path)?);
    let input: Box<dyn Read> = if f.fill_buf()?.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else {
        Box::new(f)
    };
    let mut head = Vec::new();
    // A gzip stream cut short still shows its header.
    let _ = input.take(HEADER_LIMIT).read_to_end(&mut head);
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    Ok(String::from_utf8_lossy(line)
        .split(',')
        .any(|c| c.trim() == "hook"))
}

/// Checks every hook trace the runs would write: each path written by one
/// flow of one run only (a scenario's own flows are checked when it is
/// parsed), in a directory that exists, over nothing or a hook trace.
/// `advice` says how to trace one run at a time with this command.
pub fn check_traces(jobs: &[Job], advice: &str) -> Result<(), String> {
    let mut traces: Vec<(&Path, &str)> = jobs
        .iter()
        .flat_map(|j| {
            j.cfg
                .flows
                .iter()
                .filter_map(move |f| f.trace.as_deref().map(|t| (t, j.name.as_str())))
        })
        .collect();
    traces.sort();
    for w in traces.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(format!(
                "the runs `{}` and `{}` would both write the hook trace {}, which would end corrupt; {advice}",
                w[0].1,
                w[1].1,
                w[0].0.display()
            ));
        }
    }
    for (path, name) in traces {
        if let Err(why) = check_trace(path) {
            return Err(format!(
                "{name}: cannot write the hook trace {}: {why}; choose another `trace` path",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Whether a hook trace may be written at `path`: in a directory that
/// exists, over nothing or a hook trace; if not, why (a clause).
pub fn check_trace(path: &Path) -> Result<(), String> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    match kleinrock_files::kind(path).map_err(|e| e.to_string())? {
        Kind::Absent => Ok(()),
        Kind::File => match is_hook_trace(path).map_err(|e| e.to_string())? {
            true => Ok(()),
            false => Err(
                "it is a file that is not a hook trace (no `hook` column in its first line)".into(),
            ),
        },
        k => Err(format!("it is {}", k.describe())),
    }
}
