//! Which code runs a flow's algorithm in the lab, and our BPF ports loaded
//! for one run and unloaded after it.
//!
//! A plain spec runs the kernel's own algorithm when it is one every
//! distribution kernel builds (`reno`, `cubic`, `bbr`) with its default
//! parameters: that is the code the simulator is measured against, and it
//! needs no BPF. Anything else (`cdg`, `dctcp`, `vegas`, `htcp`,
//! `cubic:hystart=hspp`, `cubic:beta=768`) runs as Kleinrock's BPF port
//! (crates/kernel), which takes its parameters per instance, where the
//! kernel's modules take theirs from module parameters shared by the whole
//! host. `kernel:NAME` asks for the kernel's own algorithm of that name
//! (any the kernel has or can load as a module), `port:SPEC` for our port
//! of any spec, `port:cubic` included (docs/LAB.md, "Algorithms").
//!
//! A port is registered under a name unique to the run, `klab<pid>_<n>`
//! (the pid in base 36, a per-process count), never the `kr_` name an
//! operator's `kleinrock kernel load` uses, and pinned under bpffs like
//! any port. The guard that loaded it unloads it when dropped; a run
//! killed before it could leaves it registered, and the next run's
//! [`sweep`] unloads it: the name says which process loaded it, and the
//! `loaded` time beside the pin tells that process from a later one with
//! the same pid.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kleinrock_cc::implementation::{runs_kernels, Implementation};
use kleinrock_cc::{Algorithm, CongestionControl};
use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::Plan;

use crate::Error;

/// Where this kernel lists its congestion controls (global: every
/// namespace sees the same list).
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// What runs a flow's algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Code {
    /// The kernel's own, by its name.
    Kernel(String),
    /// Our port, loaded for the run under [`Plan::name`].
    Port(Plan),
}

impl Code {
    /// The name sockets ask for with `TCP_CONGESTION`.
    pub fn name(&self) -> &str {
        match self {
            Code::Kernel(n) => n,
            Code::Port(p) => &p.name,
        }
    }

    /// For messages: `the kernel's cubic`, `our port of cdg:cwr=own`.
    pub fn describe(&self) -> String {
        match self {
            Code::Kernel(n) => format!("the kernel's {n}"),
            Code::Port(p) => format!("Kleinrock's BPF port of {} as {}", p.spec, p.name),
        }
    }
}

/// The code that runs `alg` asked for as `how`; ports get a name of this
/// run. Refuses, in one sentence, what cannot run here: a port in a build
/// without BPF, the kernel's own algorithm with parameters or under a name
/// this kernel lacks.
pub fn choose(alg: &Algorithm, how: Implementation) -> Result<Code, Error> {
    let name = alg.name();
    let plain = alg.spec() == name;
    if !runs_kernels(alg, how) {
        return port(alg, how);
    }
    if !plain {
        return Err(Error::refused(format!(
            "`kernel:{}` asks for the kernel's own {name} with parameters, which the kernel takes from module parameters shared by the whole host and the lab never changes; write `{}` to run Kleinrock's port with them",
            alg.spec(),
            alg.spec()
        )));
    }
    check_available(name)?;
    Ok(Code::Kernel(name.to_string()))
}

fn port(alg: &Algorithm, how: Implementation) -> Result<Code, Error> {
    let spec = alg.spec();
    if !kleinrock_kernel::CAN_LOAD {
        let asked = format!("{}{spec}", how.prefix());
        return Err(Error::refused(format!(
            "`{asked}` runs in the lab as Kleinrock's BPF port, and this kleinrock was built without BPF support; rebuild it with `cargo build --release --features kernel` (needs clang, libelf-dev, zlib1g-dev and pkg-config), or run the kernel's own reno, cubic or bbr"
        )));
    }
    let plan = kleinrock_kernel::plan(&spec, Some(&run_name()))
        .map_err(|e| Error::refused(e.to_string()))?;
    Ok(Code::Port(plan))
}

/// The next port name of this process: `klab<pid in base 36>_<n in base
/// 36>`, at most 4 + 5 + 1 + 4 bytes of the kernel's 15.
fn run_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(
        "{RUN_PREFIX}{}_{}",
        base36(std::process::id() as u64),
        base36(n as u64 % 36u64.pow(4))
    )
}

/// The prefix of the names this crate loads ports under.
const RUN_PREFIX: &str = "klab";

fn base36(mut v: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(v % 36) as usize]);
        v /= 36;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The pid a run's port name records.
fn loader(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(RUN_PREFIX)?.split_once('_')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    };
    if !ok(pid) || !ok(n) {
        return None;
    }
    u32::try_from(u64::from_str_radix(pid, 36).ok()?).ok()
}

/// Is `name` listed by the kernel? If not, asking a throwaway socket for
/// it lets the kernel load its module (`tcp_<name>`), as it does for any
/// privileged `TCP_CONGESTION`; the socket never connects.
fn check_available(name: &str) -> Result<(), Error> {
    let listed = || {
        std::fs::read_to_string(AVAILABLE)
            .map(|s| s.split_whitespace().any(|n| n == name))
            .unwrap_or(false)
    };
    if listed() {
        return Ok(());
    }
    let loaded = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()
        .map(|probe| {
            use std::os::fd::AsRawFd;
            let opts = crate::socket::TcpOptions {
                congestion: name.to_string(),
                ..Default::default()
            };
            crate::socket::apply(probe.as_raw_fd(), &opts).is_ok()
        })
        .unwrap_or(false);
    if loaded && listed() {
        return Ok(());
    }
    let have = std::fs::read_to_string(AVAILABLE).unwrap_or_default();
    Err(Error::refused(format!(
        "`kernel:{name}` asks for the kernel's own {name}, which this kernel does not have (it has {}) and could not load as the module tcp_{name}; drop `kernel:` to run Kleinrock's BPF port",
        have.split_whitespace().collect::<Vec<_>>().join(", ")
    )))
}

/// Ports loaded for a run: dropping it unloads them.
#[derive(Debug, Default)]
pub struct Loaded {
    names: Vec<String>,
}

impl Loaded {
    /// Loads every port among `codes` (each name once).
    pub fn load(codes: &[Code]) -> Result<Loaded, Error> {
        let mut loaded = Loaded::default();
        for code in codes {
            let Code::Port(plan) = code else { continue };
            if loaded.names.contains(&plan.name) {
                continue;
            }
            kleinrock_kernel::load(plan).map_err(|e| Error::failed(e.to_string()))?;
            loaded.names.push(plan.name.clone());
        }
        Ok(loaded)
    }

    /// The names loaded.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// How long an unload waits for the kernel to drop the name.
const UNLOAD_WAIT: Duration = Duration::from_secs(2);

impl Drop for Loaded {
    fn drop(&mut self) {
        let paths = Paths::system();
        for name in self.names.drain(..) {
            if let Err(e) = paths.unload(&name, UNLOAD_WAIT) {
                eprintln!("warning: could not unload {name}: {e}");
            }
        }
    }
}

/// Unloads every port a run of a process that no longer exists loaded
/// (killed before its guard could), and returns their names. Ports of
/// live runs, this process's included, and every other pinned algorithm
/// are left alone. Best effort: what cannot be unloaded is left for the
/// next sweep.
pub fn sweep() -> Vec<String> {
    let paths = Paths::system();
    let Ok(pinned) = paths.list() else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for p in pinned {
        let Some(pid) = loader(&p.name) else { continue };
        if !is_dead(pid, p.loaded_unix) {
            continue;
        }
        if let Ok(Unloaded::Gone | Unloaded::StillRegistered) = paths.unload(&p.name, UNLOAD_WAIT) {
            removed.push(p.name);
        }
    }
    removed
}

/// Whether the process `pid` that loaded a port at `loaded_unix` is gone:
/// no such process, or one that started after the load (a reused pid).
/// Times are whole seconds, so a process that started within two seconds
/// of the load counts as the loader: a mistake there keeps a port
/// registered, never removes a live run's.
fn is_dead(pid: u32, loaded_unix: Option<u64>) -> bool {
    if pid == std::process::id() {
        return false;
    }
    match started_unix(pid) {
        None => !Path::new(&format!("/proc/{pid}")).exists(),
        Some(start) => loaded_unix.is_some_and(|l| start > l + 2),
    }
}

/// When process `pid` started, in Unix seconds: its start in clock ticks
/// after boot (field 22 of /proc/PID/stat, counted after the command
/// name, which may hold spaces and parentheses) plus the boot time.
fn started_unix(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(boot + ticks / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alg(spec: &str) -> Algorithm {
        spec.parse().unwrap()
    }

    #[test]
    fn plain_kernel_algorithms_run_the_kernels_own() {
        for spec in ["reno", "cubic", "bbr"] {
            assert_eq!(
                choose(&alg(spec), Implementation::Auto),
                Ok(Code::Kernel(spec.into()))
            );
        }
        let e = choose(&alg("cubic:hystart=off"), Implementation::Kernel).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "`kernel:cubic:hystart=off` asks for the kernel's own cubic with parameters"
            ),
            "{e}"
        );
    }

    #[test]
    fn everything_else_is_a_port_under_a_name_of_this_run() {
        match choose(&alg("cubic:hystart=hspp"), Implementation::Auto) {
            Ok(Code::Port(p)) => {
                assert_eq!(loader(&p.name), Some(std::process::id()));
                assert!(p.name.len() <= 15, "{}", p.name);
                assert_eq!(p.spec, "cubic:hystart=hspp");
            }
            Ok(other) => panic!("{other:?}"),
            Err(e) => {
                // A build without BPF refuses ports in this sentence; what
                // the port's name would be is then not checked.
                assert!(
                    !kleinrock_kernel::CAN_LOAD && e.to_string().contains("--features kernel"),
                    "{e}"
                );
                kleinrock_testkit::require(kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD));
            }
        }
    }

    #[test]
    fn names_record_their_loader() {
        assert_eq!(loader("klab2n9c_0"), Some(123_456));
        assert_eq!(base36(123_456), "2n9c");
        for not_ours in ["kr_cubic", "klab_0", "klab2n9c", "klab2N9C_0", "klab2n9c_"] {
            assert_eq!(loader(not_ours), None, "{not_ours}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_later_one_is_not_the_loader() {
        let me = std::process::id();
        assert!(!is_dead(me, Some(0)));
        let start = started_unix(me).unwrap();
        // pid 1 started long before anything loaded now.
        assert!(!is_dead(1, Some(start)));
        assert!(is_dead(1, Some(0)) == (started_unix(1).unwrap() > 2));
    }
}
