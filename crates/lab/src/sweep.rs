//! Lab names, and the sweep that removes labs whose creator is gone.
//!
//! Every namespace a lab creates is named
//! `krlab-<pid>-<start>-<n>-<role>`: the creating process's pid and its
//! start time (field 22 of /proc/<pid>/stat, in clock ticks since boot), a
//! per-process counter, and the role (`snd`, `rtr`, `rcv`). A lab is stale
//! when no process with that pid and that start time exists, which a
//! reused pid cannot fake. Dropping a lab removes its namespaces; a process
//! killed before it could (SIGKILL, SIGINT without a handler, abort) leaves
//! them for the next sweep, which every `Lab::new` runs first.

use std::fs::File;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::netns::{self, NETNS_DIR};
use crate::Error;

pub(crate) const PREFIX: &str = "krlab-";

/// The three roles, in the order a lab creates them.
pub(crate) const ROLES: [&str; 3] = ["snd", "rtr", "rcv"];

/// A fresh `krlab-<pid>-<start>-<n>` for this process's next lab.
pub(crate) fn next_id() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or(0);
    format!("{PREFIX}{pid}-{start}-{n}")
}

/// The creator a lab namespace's name records: (pid, start time).
fn creator(name: &str) -> Option<(u32, u64)> {
    let mut fields = name.strip_prefix(PREFIX)?.split('-');
    let pid = fields.next()?.parse().ok()?;
    let start = fields.next()?.parse().ok()?;
    let _n: u32 = fields.next()?.parse().ok()?;
    let role = fields.next()?;
    (ROLES.contains(&role) && fields.next().is_none()).then_some((pid, start))
}

/// When process `pid` started, in clock ticks after boot; `None` if there
/// is no such process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of a /proc/<pid>/stat line. The command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

fn is_stale(name: &str) -> bool {
    creator(name).is_some_and(|(pid, start)| start_time(pid) != Some(start))
}

/// Removes every lab namespace whose creating process no longer exists,
/// killing whatever still runs inside it, and returns the names removed.
/// Labs of live processes, this one included, are left alone, as is any
/// namespace whose name is not a lab's. `Lab::new` calls this first.
pub fn sweep() -> Result<Vec<String>, Error> {
    let entries = match std::fs::read_dir(NETNS_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::failed(format!("cannot list {NETNS_DIR}: {e}"))),
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !is_stale(&name) {
            continue;
        }
        if let Ok(ns) = File::open(entry.path()) {
            netns::kill_inside(&ns);
        }
        netns::remove(&name);
        removed.push(name);
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_record_their_creator() {
        assert_eq!(creator("krlab-4242-987654-3-rtr"), Some((4242, 987654)));
        assert_eq!(creator("krlab-4242-987654-3-snd"), Some((4242, 987654)));
        for not_ours in [
            "krlab-4242-987654-3",
            "krlab-4242-987654-3-xyz",
            "krlab-4242-987654-3-rtr-extra",
            "krlab-x-987654-3-rtr",
            "krlabs-4242-987654-3-rtr",
            "blue",
        ] {
            assert_eq!(creator(not_ours), None, "{not_ours}");
        }
    }

    #[test]
    fn an_id_names_this_process_which_is_alive() {
        let id = next_id();
        let name = format!("{id}-rcv");
        let (pid, start) = creator(&name).unwrap();
        assert_eq!(pid, std::process::id());
        assert_eq!(Some(start), start_time(pid));
        assert!(!is_stale(&name));
        assert_ne!(next_id(), id);
    }

    #[test]
    fn a_reused_pid_does_not_keep_a_lab_alive() {
        let pid = std::process::id();
        let start = start_time(pid).unwrap();
        assert!(is_stale(&format!("{PREFIX}{pid}-{}-0-snd", start + 1)));
    }

    #[test]
    fn start_time_is_counted_after_the_command_name() {
        let line = "77 (a) b (c) S 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 31337 \
                    1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(parse_start_time(line), Some(31337));
        assert_eq!(parse_start_time("garbage"), None);
    }
}
