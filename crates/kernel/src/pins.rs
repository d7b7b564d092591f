//! Where loaded algorithms live: links pinned under bpffs.
//!
//! A struct_ops congestion control stays registered while a link to it
//! exists. `load` pins that link at `/sys/fs/bpf/kleinrock/<name>/link`, so
//! the algorithm outlives the command; `unload` removes the pin, and the
//! kernel unregisters the name once no other link remains. Beside the link,
//! two symlinks carry what `list` shows, because bpffs holds only pinned
//! objects, directories and symlinks, never regular files:
//!
//! ```text
//! /sys/fs/bpf/kleinrock/kr_cubic/link     the pinned struct_ops link
//! /sys/fs/bpf/kleinrock/kr_cubic/spec  -> cubic
//! /sys/fs/bpf/kleinrock/kr_cubic/loaded -> 1795365600   (Unix seconds)
//! ```
//!
//! Nothing here needs libbpf: listing reads directories and symlinks, and
//! unloading unlinks files.

use crate::Error;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `BPF_FS_MAGIC` from `include/uapi/linux/magic.h`.
const BPF_FS_MAGIC: u64 = 0xcafe_4a11;

/// The file names of the trace maps' pins in an algorithm's directory.
const TRACE_ON: &str = "trace_on";
const TRACE_STATS: &str = "trace_stats";
const TRACE_RING: &str = "trace_ring";

/// The filesystem paths the loader touches; [`Paths::system`] in real use,
/// temporary directories in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// Where bpffs is mounted (`/sys/fs/bpf`).
    pub bpffs: PathBuf,
    /// The kernel's list of registered congestion controls.
    pub available: PathBuf,
    /// This network namespace's default congestion control.
    pub default: PathBuf,
}

impl Paths {
    pub fn system() -> Paths {
        Paths {
            bpffs: PathBuf::from("/sys/fs/bpf"),
            available: PathBuf::from("/proc/sys/net/ipv4/tcp_available_congestion_control"),
            default: PathBuf::from("/proc/sys/net/ipv4/tcp_congestion_control"),
        }
    }

    /// `/sys/fs/bpf/kleinrock`.
    pub fn root(&self) -> PathBuf {
        self.bpffs.join("kleinrock")
    }

    /// `/sys/fs/bpf/kleinrock/<name>`.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    /// The pinned link of `name`.
    /// The pinned trace switch (trace.bpf.h's `kr_trace_on`).
    pub fn trace_on(&self, name: &str) -> PathBuf {
        self.dir(name).join(TRACE_ON)
    }

    /// The pinned trace counters (`kr_trace_stats`).
    pub fn trace_stats(&self, name: &str) -> PathBuf {
        self.dir(name).join(TRACE_STATS)
    }

    /// The pinned trace ring buffer.
    pub fn trace_ring(&self, name: &str) -> PathBuf {
        self.dir(name).join(TRACE_RING)
    }

    pub fn link(&self, name: &str) -> PathBuf {
        self.dir(name).join("link")
    }

    /// The congestion controls the kernel has registered, in its order.
    pub fn available(&self) -> Result<Vec<String>, Error> {
        let text = fs::read_to_string(&self.available).map_err(|e| {
            Error(format!(
                "cannot read {}: {}; is this Linux with TCP enabled?",
                self.available.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
        Ok(text.split_whitespace().map(str::to_string).collect())
    }

    /// Is `name` registered with the kernel?
    pub fn is_registered(&self, name: &str) -> Result<bool, Error> {
        Ok(self.available()?.iter().any(|n| n == name))
    }

    /// Refuses a name the kernel already has, saying whose it is.
    pub fn check_name_free(&self, name: &str) -> Result<(), Error> {
        if !self.is_registered(name)? {
            return Ok(());
        }
        if self.link(name).exists() {
            return Err(Error(format!(
                "{name} is already loaded (pinned at {}); unload it first with \
                 `kleinrock kernel unload {name}`",
                self.link(name).display()
            )));
        }
        Err(Error(format!(
            "a congestion control named {name} is already registered with the kernel \
             (see {}); choose another name with --name",
            self.available.display()
        )))
    }

    /// Refuses when bpffs is not mounted where we pin.
    pub fn check_bpffs(&self) -> Result<(), Error> {
        let not_mounted = || {
            Error(format!(
                "bpffs is not mounted at {0}, so nothing can keep the algorithm loaded after \
                 this command; mount it with `mount -t bpf bpf {0}`",
                self.bpffs.display()
            ))
        };
        match statfs_type(&self.bpffs) {
            Some(t) if t == BPF_FS_MAGIC => Ok(()),
            _ => Err(not_mounted()),
        }
    }

    /// Mounts bpffs where we pin if nothing is mounted there yet, as bpftool
    /// does before it pins: systemd mounts it at boot on most distributions,
    /// but a minimal VM or container may not have, and a loaded algorithm
    /// outlives this command only through a pin. Says what it did on
    /// stderr; a mount that fails leaves `check_bpffs`'s sentence.
    pub fn ensure_bpffs(&self) -> Result<(), Error> {
        if self.check_bpffs().is_ok() {
            return Ok(());
        }
        if mount_bpffs(&self.bpffs) && self.check_bpffs().is_ok() {
            eprintln!(
                "kleinrock: mounted bpffs at {}, where loaded algorithms are pinned",
                self.bpffs.display()
            );
        }
        self.check_bpffs()
    }

    /// Records the spec and the load time beside the pinned link.
    pub fn write_metadata(&self, name: &str, spec: &str, loaded_unix: u64) -> Result<(), Error> {
        let dir = self.dir(name);
        let put = |file: &str, value: &str| {
            let path = dir.join(file);
            std::os::unix::fs::symlink(value, &path).map_err(|e| {
                Error(format!(
                    "cannot write {}: {}",
                    path.display(),
                    kleinrock_files::reason(&e)
                ))
            })
        };
        put("spec", spec)?;
        put("loaded", &loaded_unix.to_string())
    }

    /// Everything kleinrock has pinned, sorted by name.
    pub fn list(&self) -> Result<Vec<Pinned>, Error> {
        let entries = match fs::read_dir(self.root()) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                return Err(Error(format!(
                    "reading {} needs root; run it with sudo",
                    self.root().display()
                )))
            }
            Err(e) => {
                return Err(Error(format!(
                    "cannot read {}: {}",
                    self.root().display(),
                    kleinrock_files::reason(&e)
                )))
            }
        };
        let available = self.available()?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let read = |file: &str| {
                fs::read_link(entry.path().join(file))
                    .ok()
                    .map(|p| p.to_string_lossy().into_owned())
            };
            out.push(Pinned {
                spec: read("spec"),
                loaded_unix: read("loaded").and_then(|s| s.parse().ok()),
                linked: entry.path().join("link").exists(),
                registered: available.contains(&name),
                name,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Refuses to unload the namespace's default: the kernel would drop the
    /// name from its list but keep handing the unregistered ops to every
    /// new socket until the default changes (seen on Linux 6.18).
    pub fn check_not_default(&self, name: &str) -> Result<(), Error> {
        let default = fs::read_to_string(&self.default).unwrap_or_default();
        if default.trim() == name {
            return Err(Error(format!(
                "{name} is this namespace's default congestion control, and new sockets would \
                 keep getting it after unload; set another default first \
                 (`sysctl -w net.ipv4.tcp_congestion_control=cubic`)"
            )));
        }
        Ok(())
    }

    /// Removes `name`'s pins; the kernel then unregisters it (once no other
    /// link holds it). Waits up to `wait` for the name to leave the kernel's
    /// list and says whether it did. Sockets already using it keep it until
    /// they close.
    pub fn unload(&self, name: &str, wait: Duration) -> Result<Unloaded, Error> {
        self.check_not_default(name)?;
        let dir = self.dir(name);
        if !dir.is_dir() {
            if self.is_registered(name)? {
                return Err(Error(format!(
                    "{name} is registered but kleinrock did not load it (nothing at {}); \
                     kleinrock unloads only what it loaded",
                    dir.display()
                )));
            }
            return Err(Error(format!(
                "nothing named {name} is loaded; `kleinrock kernel list` shows what is"
            )));
        }
        for file in ["link", "spec", "loaded", TRACE_ON, TRACE_STATS, TRACE_RING] {
            let path = dir.join(file);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(Error(format!(
                        "cannot remove {}: {}",
                        path.display(),
                        kleinrock_files::reason(&e)
                    )))
                }
            }
        }
        fs::remove_dir(&dir).map_err(|e| {
            Error(format!(
                "cannot remove {}: {}",
                dir.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
        // The last link's release runs from a workqueue: poll briefly.
        let start = Instant::now();
        loop {
            if !self.is_registered(name)? {
                return Ok(Unloaded::Gone);
            }
            if start.elapsed() >= wait {
                return Ok(Unloaded::StillRegistered);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The outcome of an unload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unloaded {
    /// The kernel no longer lists the name.
    Gone,
    /// The pin is gone but the kernel still lists the name: another link
    /// (another process's) still holds it.
    StillRegistered,
}

/// One algorithm under `/sys/fs/bpf/kleinrock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pinned {
    pub name: String,
    pub spec: Option<String>,
    pub loaded_unix: Option<u64>,
    /// Is the link pin present?
    pub linked: bool,
    /// Does the kernel list the name?
    pub registered: bool,
}

/// Refuses when not root: loading struct_ops, pinning in bpffs and
/// unpinning all need it.
pub fn check_root(action: &str) -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error(format!(
            "{action} needs root (CAP_BPF, CAP_NET_ADMIN and access to /sys/fs/bpf); \
             run it with sudo"
        )));
    }
    Ok(())
}

/// Everything `load` checks before touching libbpf: root, bpffs, the name.
pub fn check_can_load(name: &str) -> Result<(), Error> {
    check_root("loading congestion control into the kernel")?;
    let paths = Paths::system();
    paths.ensure_bpffs()?;
    paths.check_name_free(name)
}

/// The filesystem type of `path`, or None if it cannot be stat'ed.
pub(crate) fn statfs_type(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut buf = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: c is a NUL-terminated path and buf is large enough for statfs.
    let rc = unsafe { libc::statfs(c.as_ptr(), buf.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statfs succeeded and filled buf.
    let st = unsafe { buf.assume_init() };
    #[allow(clippy::unnecessary_cast)] // f_type's type differs between libcs
    Some(st.f_type as u64)
}

/// `mount -t bpf bpf PATH`, through the system call; false if it failed.
fn mount_bpffs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(target) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let fstype = c"bpf";
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call, and bpffs takes no mount data.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    rc == 0
}

/// Seconds since the Unix epoch, now.
pub fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DD HH:MM:SS UTC` for a Unix time (Hinnant's civil_from_days).
pub fn format_utc(unix: u64) -> String {
    let (days, secs) = ((unix / 86_400) as i64, unix % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(dir: &Path, available: &str) -> Paths {
        let paths = Paths {
            bpffs: dir.join("bpf"),
            available: dir.join("available"),
            default: dir.join("default"),
        };
        fs::create_dir_all(&paths.bpffs).unwrap();
        fs::write(&paths.available, available).unwrap();
        fs::write(&paths.default, "cubic\n").unwrap();
        paths
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kr-pins-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_utc(1_795_365_600), "2026-11-22 16:40:00 UTC");
    }

    #[test]
    fn a_taken_name_says_whose() {
        let d = tempdir("taken");
        let p = fake(&d, "reno cubic kr_cubic\n");
        assert!(p.check_name_free("kr_reno").is_ok());
        let e = p.check_name_free("cubic").unwrap_err().0;
        assert!(
            e.starts_with("a congestion control named cubic is already registered"),
            "{e}"
        );
        assert!(e.ends_with("choose another name with --name"), "{e}");
        fs::create_dir_all(p.dir("kr_cubic")).unwrap();
        fs::write(p.link("kr_cubic"), "").unwrap();
        let e = p.check_name_free("kr_cubic").unwrap_err().0;
        assert!(
            e.starts_with("kr_cubic is already loaded (pinned at "),
            "{e}"
        );
        assert!(e.ends_with("unload it first with `kleinrock kernel unload kr_cubic`"));
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_directory_that_is_not_bpffs_is_refused() {
        let d = tempdir("nobpffs");
        let p = fake(&d, "reno\n");
        let e = p.check_bpffs().unwrap_err().0;
        assert!(e.starts_with("bpffs is not mounted at "), "{e}");
        assert!(e.ends_with(&format!("`mount -t bpf bpf {}`", p.bpffs.display())));
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn list_and_unload_work_on_the_layout() {
        let d = tempdir("layout");
        let p = fake(&d, "reno cubic\n");
        assert!(p.list().unwrap().is_empty());
        fs::create_dir_all(p.dir("kr_cubic_nohs")).unwrap();
        fs::write(p.link("kr_cubic_nohs"), "").unwrap();
        p.write_metadata("kr_cubic_nohs", "cubic:hystart=off", 1_795_365_600)
            .unwrap();
        let l = p.list().unwrap();
        assert_eq!(
            l,
            vec![Pinned {
                name: "kr_cubic_nohs".into(),
                spec: Some("cubic:hystart=off".into()),
                loaded_unix: Some(1_795_365_600),
                linked: true,
                registered: false,
            }]
        );
        assert_eq!(
            p.unload("kr_cubic_nohs", Duration::ZERO).unwrap(),
            Unloaded::Gone
        );
        assert!(!p.dir("kr_cubic_nohs").exists());
        assert_eq!(
            p.unload("kr_cubic_nohs", Duration::ZERO).unwrap_err().0,
            "nothing named kr_cubic_nohs is loaded; `kleinrock kernel list` shows what is"
        );
        let e = p.unload("reno", Duration::ZERO).unwrap_err().0;
        assert!(
            e.starts_with("reno is registered but kleinrock did not load it"),
            "{e}"
        );
        fs::write(&p.default, "kr_cubic\n").unwrap();
        assert_eq!(
            p.unload("kr_cubic", Duration::ZERO).unwrap_err().0,
            "kr_cubic is this namespace's default congestion control, and new sockets would \
             keep getting it after unload; set another default first \
             (`sysctl -w net.ipv4.tcp_congestion_control=cubic`)"
        );
        fs::remove_dir_all(d).unwrap();
    }
}
