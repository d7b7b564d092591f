//! Where the tuner attaches: cgroup v2 directories.
//!
//! A sockops program attached to a cgroup runs for the TCP sockets of the
//! processes in it and in its descendants; a socket belongs to the cgroup
//! of the process that created it (an accepted socket to its listener's),
//! from its creation on. The cgroup v2 hierarchy is found from the mount
//! table, never assumed: on a host where systemd mounts the v1
//! controllers at /sys/fs/cgroup, v2 sits beside them (here
//! /sys/fs/cgroup/unified).
//!
//! [`Scratch`] is a cgroup of its own under the hierarchy's root, for
//! tests and experiments: created empty, removed on drop (even when a test
//! panics), with a way to run this process in it for a while.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::Error;

/// `CGROUP2_SUPER_MAGIC` from `include/uapi/linux/magic.h`.
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

/// The mount point of the cgroup v2 hierarchy's root, from `mountinfo`
/// (`/proc/self/mountinfo`): the first `cgroup2` mount of the
/// hierarchy's root (`/`), else the first at all.
pub fn hierarchy_in(mountinfo: &str) -> Option<PathBuf> {
    let mut any = None;
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        if right.split(' ').next() != Some("cgroup2") {
            continue;
        }
        let f: Vec<&str> = left.split(' ').collect();
        let (Some(root), Some(at)) = (f.get(3), f.get(4)) else {
            continue;
        };
        let at = PathBuf::from(unescape(at));
        if *root == "/" {
            return Some(at);
        }
        any.get_or_insert(at);
    }
    any
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let d = |k: usize| u32::from(b[i + k] - b'0');
            out.push((d(1) * 64 + d(2) * 8 + d(3)) as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The root of this host's cgroup v2 hierarchy, or one sentence saying
/// it has none.
pub fn hierarchy() -> Result<PathBuf, Error> {
    let info = fs::read_to_string("/proc/self/mountinfo").map_err(|e| {
        Error(format!(
            "cannot read /proc/self/mountinfo ({}) to find cgroup v2",
            kleinrock_files::reason(&e)
        ))
    })?;
    hierarchy_in(&info).ok_or_else(|| {
        Error(
            "no cgroup v2 hierarchy is mounted (no cgroup2 in /proc/self/mountinfo), and \
             sockops programs attach only to cgroup v2: mount one \
             (`mount -t cgroup2 none /sys/fs/cgroup/unified`) or boot with \
             systemd.unified_cgroup_hierarchy=1"
                .into(),
        )
    })
}

/// Refuses a path that is not a directory of a cgroup v2 hierarchy.
pub fn check(path: &Path) -> Result<(), Error> {
    match crate::pins::statfs_type(path) {
        Some(CGROUP2_SUPER_MAGIC) if path.is_dir() => Ok(()),
        Some(_) => Err(Error(format!(
            "{} is not a cgroup v2 directory, and sockops programs attach only to cgroup v2; \
             give a directory under the cgroup2 mount (`findmnt -t cgroup2`)",
            path.display()
        ))),
        None => Err(Error(format!(
            "{} does not exist or cannot be read; give a cgroup v2 directory \
             (`findmnt -t cgroup2`)",
            path.display()
        ))),
    }
}

/// This process's cgroup v2, as a directory under `root`.
pub fn current(root: &Path) -> Result<PathBuf, Error> {
    let text = fs::read_to_string("/proc/self/cgroup").map_err(|e| {
        Error(format!(
            "cannot read /proc/self/cgroup: {}",
            kleinrock_files::reason(&e)
        ))
    })?;
    let rel = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| Error("this process is in no cgroup v2 (/proc/self/cgroup)".into()))?;
    Ok(root.join(rel.trim_start_matches('/')))
}

/// Moves process `pid` (0: this one, all its threads) into `cgroup`.
pub fn enter(cgroup: &Path, pid: u32) -> io::Result<()> {
    fs::write(cgroup.join("cgroup.procs"), pid.to_string())
}

/// A cgroup made for a test or an experiment, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    root: PathBuf,
}

static SCRATCH: AtomicU32 = AtomicU32::new(0);

impl Scratch {
    /// Creates `<hierarchy root>/kleinrock-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> Result<Scratch, Error> {
        let root = hierarchy()?;
        let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("kleinrock-{tag}-{}-{n}", std::process::id()));
        fs::create_dir(&path).map_err(|e| {
            Error(format!(
                "cannot create the cgroup {}: {}",
                path.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
        Ok(Scratch { path, root })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with this process in the cgroup: the sockets it creates
    /// belong to the cgroup for their life. The whole process moves (a
    /// cgroup v2 holds processes, not threads), so nothing else in it
    /// should create sockets meanwhile. It moves back even if `f` panics.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T, Error> {
        let home = current(&self.root)?;
        enter(&self.path, 0).map_err(|e| {
            Error(format!(
                "cannot move this process into {}: {}",
                self.path.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
        struct Back(PathBuf);
        impl Drop for Back {
            fn drop(&mut self) {
                let _ = enter(&self.0, 0);
            }
        }
        let _back = Back(home);
        Ok(f())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Anything still inside (a child a test left) goes to the root,
        // or the directory cannot be removed.
        if let Ok(procs) = fs::read_to_string(self.path.join("cgroup.procs")) {
            for pid in procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
                let _ = enter(&self.root, pid);
            }
        }
        let _ = fs::remove_dir(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_hierarchy_is_found_beside_the_v1_controllers() {
        let info = "\
24 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
26 24 0:24 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
27 26 0:25 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
28 26 0:26 / /sys/fs/cgroup/cpu rw,nosuid shared:11 - cgroup cgroup rw,cpu
";
        assert_eq!(
            hierarchy_in(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let sub = "40 30 0:25 /system.slice /mnt/cg rw - cgroup2 cgroup2 rw\n\
                   41 30 0:25 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            hierarchy_in(sub),
            Some(PathBuf::from("/mnt/my cg")),
            "the root's mount"
        );
        assert_eq!(
            hierarchy_in("40 30 0:25 /a /x rw - cgroup2 cgroup2 rw\n"),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            hierarchy_in("26 24 0:24 / /sys/fs/cgroup ro - cgroup cgroup ro\n"),
            None
        );
    }

    #[test]
    fn a_directory_that_is_not_cgroup_v2_is_refused() {
        let e = check(Path::new("/tmp")).unwrap_err().0;
        assert!(e.starts_with("/tmp is not a cgroup v2 directory"), "{e}");
        let e = check(Path::new("/nonexistent/cg")).unwrap_err().0;
        assert!(e.starts_with("/nonexistent/cg does not exist"), "{e}");
        if let Ok(root) = hierarchy() {
            check(&root).unwrap();
        }
    }
}
