//! The files Kleinrock writes, and the ones it reads back before replacing
//! them: never through a symbolic link, into a device or a named pipe, or
//! over something that is not its own.
//!
//! A careless path (`--table /dev/null`, `--out` naming someone's
//! directory, a trace path that is the scenario itself) must not destroy
//! anything, and a named pipe must not hang the command. So:
//!
//! - [`kind`] says what a path is without following a final symbolic link
//!   (`lstat`), so a command can refuse before any work starts;
//! - [`open_file`] and [`create`] open with `O_NOFOLLOW` and `O_NONBLOCK`
//!   and check the type of what they opened (`fstat`): a link, a device, a
//!   FIFO or a directory is refused, even if it replaced a file since the
//!   check, and opening a FIFO does not wait for a peer; [`replace`] puts
//!   a new file in place of a regular one, and refuses the rest alike;
//! - [`check_dir`] and [`claim_dir`] decide whether a directory is one
//!   Kleinrock may write in: absent (it is then created), empty, or holding
//!   only entries the caller recognises as its own (by name, type and, where
//!   the caller reads them, content). The caller names what is its own;
//!   this crate only walks and refuses.
//!
//! It is a crate of its own because several parts write files: the CLI (the
//! outputs of `sim`, `compare`, `select` and `model`), the report
//! (`compare`'s directory), the simulator's results, the hook traces
//! (crates/trace, for the simulator, `model` and the kernel tracer) and
//! the selector's persistence, which the selector daemon will use without
//! the CLI. The trace reader opens its input through [`open_file`] too.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// What is at a path, the path's last component not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Absent,
    File,
    Dir,
    Symlink,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
}

impl Kind {
    fn of(t: std::fs::FileType) -> Kind {
        if t.is_symlink() {
            Kind::Symlink
        } else if t.is_file() {
            Kind::File
        } else if t.is_dir() {
            Kind::Dir
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_char_device() {
            Kind::CharDevice
        } else if t.is_block_device() {
            Kind::BlockDevice
        } else {
            Kind::Socket
        }
    }

    /// The kind as a sentence says it: "a named pipe".
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Absent => "absent",
            Kind::File => "a regular file",
            Kind::Dir => "a directory",
            Kind::Symlink => "a symbolic link",
            Kind::Fifo => "a named pipe (FIFO)",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Socket => "a socket",
        }
    }
}

/// What `path` is, without following it if it is a symbolic link.
pub fn kind(path: &Path) -> io::Result<Kind> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Kind::of(m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Kind::Absent),
        Err(e) => Err(e),
    }
}

/// A refusal, as a clause to follow "cannot write X: ".
fn refused(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// `path` is `k`, which is not a regular file.
fn not_a_file(path: &Path, k: Kind) -> io::Error {
    refused(format!(
        "{} is {}, not a regular file",
        path.display(),
        k.describe()
    ))
}

/// The flags that keep an open from following a last symbolic link or
/// waiting for a FIFO's other end.
const SAFE: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// Checks that what `open` opened is a regular file.
fn regular(path: &Path, f: io::Result<File>) -> io::Result<File> {
    let f = f.map_err(|e| {
        // O_NOFOLLOW on a symbolic link.
        if e.raw_os_error() == Some(libc::ELOOP) {
            not_a_file(path, Kind::Symlink)
        } else {
            e
        }
    })?;
    let t = f.metadata()?.file_type();
    if !t.is_file() {
        return Err(not_a_file(path, Kind::of(t)));
    }
    Ok(f)
}

/// Refuses before opening anything that is there and is not a regular file,
/// so that a device is not even opened.
fn precheck(path: &Path) -> io::Result<Kind> {
    match kind(path)? {
        k @ (Kind::Absent | Kind::File) => Ok(k),
        k => Err(not_a_file(path, k)),
    }
}

/// Opens an existing regular file to read: a symbolic link, a device, a
/// FIFO or a directory is refused, without blocking.
pub fn open_file(path: &Path) -> io::Result<File> {
    precheck(path)?;
    regular(
        path,
        OpenOptions::new().read(true).custom_flags(SAFE).open(path),
    )
}

/// Creates `path`, or empties it if it is a regular file, to write: a
/// symbolic link, a device, a FIFO or a directory is refused. What the
/// caller writes over must already be known to be its own ([`check_dir`],
/// or the caller's own test of the content).
pub fn create(path: &Path) -> io::Result<File> {
    precheck(path)?;
    let f = regular(
        path,
        OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(SAFE)
            .open(path),
    )?;
    f.set_len(0)?;
    Ok(f)
}

/// Creates a new regular file at `path` in place of the regular file there,
/// if any, which is removed rather than truncated; refuses, removing
/// nothing, if a directory, link, device or FIFO is there. The file opened
/// is always a new one, so one swapped in since the caller's checks is
/// never written through. (Why remove: a file truncated and rewritten on
/// ext4 gets its blocks allocated at close, which costs the writer; see
/// crates/sim/src/results.rs.)
pub fn replace(path: &Path) -> io::Result<File> {
    if precheck(path)? == Kind::File {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    create_new(path)
}

/// An I/O error's reason as a sentence shows it: without the OS error
/// number Rust appends (`(os error 2)`).
pub fn reason(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Creates a new regular file at `path`: fails if anything is there, a
/// symbolic link included (which is not followed).
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(SAFE)
        .open(path)
}

/// Whether the regular file at `path` begins with `prefix` (false for a
/// shorter file); refuses what [`open_file`] refuses.
pub fn starts_with(path: &Path, prefix: &[u8]) -> io::Result<bool> {
    let mut head = Vec::with_capacity(prefix.len());
    open_file(path)?
        .take(prefix.len() as u64)
        .read_to_end(&mut head)?;
    Ok(head == prefix)
}

/// Whether `a` and `b` name the same file (device and inode, links
/// followed); false if either does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// One entry of a directory being checked.
pub struct Entry<'a> {
    pub path: &'a Path,
    /// Its name (`None` if it is not UTF-8, which no name of ours is).
    pub name: Option<&'a str>,
    pub kind: Kind,
}

impl Entry<'_> {
    /// A regular file with one of these names.
    pub fn is_file_named(&self, names: &[&str]) -> bool {
        self.kind == Kind::File && self.name.is_some_and(|n| names.contains(&n))
    }
}

/// Whether an entry is the caller's own: `Ok(false)` refuses it with a
/// sentence naming it; an error (from a nested [`check_dir`]) is passed on.
pub type Ours<'a> = dyn Fn(&Entry) -> io::Result<bool> + 'a;

/// The name of [`claim_dir`]'s probe, which a crash could leave behind.
const PROBE: &str = ".kleinrock-probe-";

/// Checks that `dir` is a directory Kleinrock may write in: absent, or a
/// directory (a symbolic link to one is followed: the user named it) all of
/// whose entries `ours` accepts. The refusal names the first entry that is
/// not.
pub fn check_dir(dir: &Path, ours: &Ours) -> io::Result<()> {
    match std::fs::metadata(dir) {
        // Absent, or under something that is not a directory (which
        // creating it will say).
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(())
        }
        Err(e) => return Err(e),
        Ok(m) if !m.is_dir() => {
            return Err(refused(format!(
                "{} is {}, not a directory",
                dir.display(),
                Kind::of(m.file_type()).describe()
            )))
        }
        Ok(_) => {}
    }
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let path = e.path();
        let name = e.file_name();
        let entry = Entry {
            path: &path,
            name: name.to_str(),
            kind: Kind::of(e.file_type()?),
        };
        if entry.kind == Kind::File && entry.name.is_some_and(|n| n.starts_with(PROBE)) {
            continue;
        }
        if !ours(&entry)? {
            return Err(foreign(&path, entry.kind));
        }
    }
    Ok(())
}

/// `path` is not among what the caller writes there.
fn foreign(path: &Path, k: Kind) -> io::Error {
    refused(match k {
        Kind::File | Kind::Dir => format!(
            "{} is {} this command does not write",
            path.display(),
            k.describe()
        ),
        _ => format!("{} is {}", path.display(), k.describe()),
    })
}

/// [`check_dir`], then creates `dir` (and its parents) if it is absent and
/// proves it writable with a probe file, before any work that would write
/// there.
pub fn claim_dir(dir: &Path, ours: &Ours) -> io::Result<()> {
    check_dir(dir, ours)?;
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!("{PROBE}{}", std::process::id()));
    create_new(&probe)?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kleinrock-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn devices_fifos_and_links_are_refused_without_blocking() {
        let d = scratch("kinds");
        let fifo = d.join("pipe");
        mkfifo(&fifo);
        let file = d.join("file");
        std::fs::write(&file, "kleinrock-select 3\n").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(kind(&fifo).unwrap(), Kind::Fifo);
        assert_eq!(kind(&link).unwrap(), Kind::Symlink);
        assert_eq!(kind(&d.join("absent")).unwrap(), Kind::Absent);
        assert_eq!(kind(Path::new("/dev/null")).unwrap(), Kind::CharDevice);
        for (p, what) in [
            (&fifo, "a named pipe"),
            (&link, "a symbolic link"),
            (&PathBuf::from("/dev/null"), "a character device"),
            (&d, "a directory"),
        ] {
            for e in [open_file(p).unwrap_err(), create(p).unwrap_err()] {
                let e = e.to_string();
                assert!(e.contains(what) && e.contains("not a regular file"), "{e}");
            }
        }
        // /dev/null is still a device, the link still a link.
        assert_eq!(kind(Path::new("/dev/null")).unwrap(), Kind::CharDevice);
        assert_eq!(kind(&link).unwrap(), Kind::Symlink);
        assert!(starts_with(&file, b"kleinrock-select ").unwrap());
        assert!(!starts_with(&file, b"kleinrock-select 3\n and more").unwrap());
        let mut f = create(&file).unwrap();
        f.write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        // replace() refuses what create() refuses, removing nothing.
        for (p, what) in [
            (&fifo, "a named pipe"),
            (&link, "a symbolic link"),
            (&PathBuf::from("/dev/null"), "a character device"),
            (&d, "a directory"),
        ] {
            let e = replace(p).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("not a regular file"), "{e}");
        }
        assert_eq!(kind(&fifo).unwrap(), Kind::Fifo);
        assert_eq!(kind(&link).unwrap(), Kind::Symlink);
        // A regular file is replaced by a new one (another inode); an
        // absent one is created.
        let before = std::fs::metadata(&file).unwrap().ino();
        let mut f = replace(&file).unwrap();
        f.write_all(b"newer").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "newer");
        assert_ne!(std::fs::metadata(&file).unwrap().ino(), before);
        replace(&d.join("fresh")).unwrap();
        assert_eq!(kind(&d.join("fresh")).unwrap(), Kind::File);
        let e = std::fs::File::open(d.join("absent")).unwrap_err();
        assert_eq!(reason(&e), "No such file or directory");
        assert!(same_file(&file, &link) && !same_file(&file, &fifo));
        assert!(!same_file(&file, &d.join("absent")));
    }

    #[test]
    fn a_directory_is_ours_when_new_empty_or_holding_only_ours() {
        let d = scratch("dirs");
        let ours = |e: &Entry| Ok(e.is_file_named(&["a.csv", "b.csv"]));
        let out = d.join("out");
        claim_dir(&out, &ours).unwrap();
        assert!(out.is_dir());
        std::fs::write(out.join("a.csv"), "").unwrap();
        claim_dir(&out, &ours).unwrap();
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "no probe left");
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let e = check_dir(&out, &ours).unwrap_err().to_string();
        assert!(
            e.ends_with("notes.txt is a regular file this command does not write"),
            "{e}"
        );
        std::fs::remove_file(out.join("notes.txt")).unwrap();
        mkfifo(&out.join("b.csv"));
        let e = check_dir(&out, &ours).unwrap_err().to_string();
        assert!(e.ends_with("b.csv is a named pipe (FIFO)"), "{e}");
        let e = claim_dir(&out.join("a.csv"), &ours)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("a.csv is a regular file, not a directory"),
            "{e}"
        );
        // A probe left by a crash is ours.
        std::fs::remove_file(out.join("b.csv")).unwrap();
        std::fs::write(out.join(format!("{PROBE}1")), "").unwrap();
        check_dir(&out, &ours).unwrap();
    }
}
