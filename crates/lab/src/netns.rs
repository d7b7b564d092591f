//! A lab's network namespaces: named ones, as `ip netns add` makes them,
//! entered by a thread through setns(2) and by a child process just before
//! it execs; removed, with every process still inside, when dropped.
//!
//! setns(CLONE_NEWNET) moves only the calling thread, so a test can keep
//! its own threads in the host namespace and send one thread into the lab.
//! A socket stays in the namespace it was created in, whichever thread uses
//! it afterwards.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};

use crate::tools::{self, Tools};
use crate::Error;

/// Where iproute2 keeps named namespaces (bind mounts of nsfs files).
pub(crate) const NETNS_DIR: &str = "/var/run/netns";

/// One of the lab's hosts: a named network namespace and its address.
#[derive(Debug)]
pub struct Node {
    name: String,
    /// The nsfs file, shared with the commands made by [`Node::command`].
    file: Arc<File>,
    addr: Ipv4Addr,
}

impl Node {
    /// `ip netns add name`; from the moment it succeeds, dropping the
    /// returned node removes the namespace again.
    pub(crate) fn create(name: String, addr: Ipv4Addr, tools: &Tools) -> Result<Node, Error> {
        tools::run(
            Command::new(&tools.ip).args(["netns", "add", &name]),
            None,
            None,
        )?;
        match File::open(path(&name)) {
            Ok(file) => Ok(Node {
                name,
                file: Arc::new(file),
                addr,
            }),
            Err(e) => {
                remove(&name);
                Err(Error::failed(format!(
                    "cannot open {} after creating it: {e}",
                    path(&name).display()
                )))
            }
        }
    }

    /// The namespace's name, as `ip netns list` shows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The address other hosts reach this one at (the router answers at
    /// this address on the sender's side and at
    /// [`ROUTER_RECEIVER_SIDE_ADDR`](crate::ROUTER_RECEIVER_SIDE_ADDR) on
    /// the receiver's).
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// A command that runs `program` inside this namespace: the child
    /// enters it between fork and exec. Unlike `ip netns exec`, the child
    /// keeps the host's /sys; everything under /proc/sys/net and every
    /// socket it opens are the namespace's. Spawn it before the lab is
    /// dropped: the drop kills what is inside the namespace at that moment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        let ns = Arc::clone(&self.file);
        // SAFETY: the closure runs in the forked child and makes one
        // system call on a descriptor the Arc keeps open.
        unsafe {
            cmd.pre_exec(move || setns(&ns));
        }
        cmd
    }

    /// Runs `f` on a new thread inside this namespace and returns what it
    /// returns (a panic in `f` is resumed here). Sockets made in `f` stay
    /// in the namespace: `lab.receiver().run(|| TcpListener::bind(..))`
    /// gives a listener any thread can accept on.
    pub fn run<T: Send, F: FnOnce() -> T + Send>(&self, f: F) -> Result<T, Error> {
        thread::scope(|scope| {
            let handle = thread::Builder::new()
                .name(self.thread_name())
                .spawn_scoped(scope, || self.enter().map(|()| f()))
                .map_err(|e| Error::failed(format!("cannot start a thread: {e}")))?;
            match handle.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Starts `f` on a new thread inside this namespace and returns once
    /// the thread is inside, so that a failure to enter is this call's
    /// error rather than the thread's.
    pub fn spawn<T, F>(&self, f: F) -> Result<JoinHandle<T>, Error>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let ns = Arc::clone(&self.file);
        let name = self.name.clone();
        let (entered, inside) = mpsc::sync_channel(1);
        let handle = thread::Builder::new()
            .name(self.thread_name())
            .spawn(move || {
                let result = setns(&ns);
                drop(ns);
                let ok = result.is_ok();
                let _ = entered.send(result);
                if !ok {
                    // spawn() reports the failure; end the thread quietly,
                    // without running f or invoking the panic hook.
                    std::panic::resume_unwind(Box::new(()));
                }
                f()
            })
            .map_err(|e| Error::failed(format!("cannot start a thread: {e}")))?;
        match inside.recv() {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(e)) => Err(enter_error(&name, e)),
            Err(_) => Err(Error::failed(format!(
                "the thread meant to enter {name} ended before it could"
            ))),
        }
    }

    /// Writes `value` to the namespace's sysctl `key` (dotted, as sysctl(8)
    /// takes it, e.g. `net.ipv4.tcp_ecn`).
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), Error> {
        let file = PathBuf::from("/proc/sys").join(key.replace('.', "/"));
        self.run(|| std::fs::write(&file, value))?.map_err(|e| {
            Error::failed(format!("cannot set {key} to {value} in {}: {e}", self.name))
        })
    }

    /// Runs a lab tool inside this namespace, its failure one sentence.
    pub(crate) fn exec(
        &self,
        program: &std::path::Path,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Result<(), Error> {
        tools::run(self.command(program).args(args), stdin, Some(&self.name))
    }

    fn enter(&self) -> Result<(), Error> {
        setns(&self.file).map_err(|e| enter_error(&self.name, e))
    }

    /// `krlab-rtr`: the role, as the thread's name (at most 15 bytes).
    fn thread_name(&self) -> String {
        let role = self.name.rsplit('-').next().unwrap_or("");
        format!("krlab-{role}")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        kill_inside(&self.file);
        remove(&self.name);
    }
}

fn setns(ns: &File) -> io::Result<()> {
    // SAFETY: setns on a descriptor we own; it affects only this thread.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn enter_error(name: &str, e: io::Error) -> Error {
    Error::failed(format!("cannot enter network namespace {name}: {e}"))
}

pub(crate) fn path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// Kills (SIGKILL) every process whose network namespace is `ns`, except
/// this one: what a lab leaves running (an `iperf3 -s`, a test's child)
/// must not outlive it in a namespace nobody can name any more.
pub(crate) fn kill_inside(ns: &File) {
    let Ok(meta) = ns.metadata() else { return };
    let wanted = format!("net:[{}]", meta.ino());
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let inside = std::fs::read_link(entry.path().join("ns/net"))
            .is_ok_and(|link| link.as_os_str() == wanted.as_str());
        if inside {
            // SAFETY: kill has no memory preconditions; a pid that has
            // exited meanwhile just makes it fail.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// What `ip netns delete` does: detach the bind mount and remove the file.
/// The namespace itself goes when its last user (process, socket or open
/// file) does. Errors are ignored: a name already gone is the goal.
pub(crate) fn remove(name: &str) {
    let p = path(name);
    if let Ok(c) = CString::new(p.as_os_str().as_encoded_bytes()) {
        // SAFETY: a NUL-terminated path that lives across the call.
        unsafe {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH);
        }
    }
    let _ = std::fs::remove_file(&p);
}
