//! The tuning daemon's loop, as a library: `kleinrock tune run` drives it
//! until a signal, tests and experiments drive it in-process, step by
//! step.
//!
//! [`Daemon::start`] loads the ports the candidates need, the policy's
//! table, and the sockops program (`tune.bpf.c`), writes the decisions
//! the table implies into the program's map, and attaches it to the
//! cgroup. Each [`Daemon::step`] reads the program's reports and feeds
//! them to the policy (`kleinrock_select::live::Tuner`), writes back the
//! decisions that changed (one log line each), saves the table when the
//! interval has passed, and rewrites the status files when something
//! changed (at most once a second). [`Daemon::finish`] saves and detaches.
//!
//! One daemon per state directory: its `pid` file is locked (flock) while
//! the daemon lives, and the kernel drops the lock when the process dies,
//! however it dies; [`running`] asks the lock, and [`stop`] signals the
//! process it names.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kleinrock_select::live::{self, Decision, Prefix, Tuner};
use kleinrock_select::persist::LoadError;

use super::names::{Candidate, TunePins};
use super::program::{Program, Settings, Stats};
use super::record::{Kind, Report};
use super::{cgroup, status};
use crate::pins::{self, Paths, Unloaded};
use crate::Error;

/// What a daemon runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The policy and its settings; its candidates are `candidates`'
    /// specs, in order.
    pub tuner: live::Config,
    pub candidates: Vec<Candidate>,
    pub cgroup: PathBuf,
    /// Record and learn, never set.
    pub advise: bool,
    /// Reports of long connections, this often (zero: at their end only).
    pub report_every: Duration,
    /// The policy's table, restored at start and saved every `save_every`
    /// and at the end.
    pub table: Option<PathBuf>,
    pub save_every: Duration,
    /// Where the pid file and the status files go.
    pub state_dir: Option<PathBuf>,
    pub pins: TunePins,
    /// Peers the status shows (the most recent).
    pub status_peers: usize,
}

/// How often the status files may be rewritten.
const STATUS_EVERY: Duration = Duration::from_secs(1);

pub struct Daemon {
    program: Program,
    tuner: Tuner,
    opts: Options,
    /// Kernel name to candidate.
    index: HashMap<String, usize>,
    started_unix: u64,
    saved_unix: Option<u64>,
    last_save: Instant,
    last_status: Option<Instant>,
    changed: bool,
    save_failing: bool,
    undecodable: u64,
    log: Box<dyn FnMut(&str)>,
    _pid: Option<File>,
    /// Ports loaded at start (and marked as the tuner's).
    pub loaded: Vec<String>,
}

fn now_unix() -> (u64, u64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs(), d.as_millis() as u64)
}

/// Tries to lock `file`: true if this process now holds the lock.
fn lock(file: &File) -> bool {
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// The pid of the daemon whose state directory is `dir`, if one runs.
pub fn running(dir: &Path) -> Option<u32> {
    let path = dir.join("pid");
    let f = File::open(&path).ok()?;
    if lock(&f) {
        return None; // nobody holds it; ours goes with `f`
    }
    std::fs::read_to_string(&path).ok()?.trim().parse().ok()
}

/// Takes the state directory: creates it, locks and writes the pid file.
fn take(dir: &Path) -> Result<File, Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join("pid");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error(format!("cannot open {}: {e}", path.display())))?;
    if !lock(&f) {
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(Error(format!(
            "a tuner is already running (pid {}, state in {}); stop it with `kleinrock tune stop`",
            pid.trim(),
            dir.display()
        )));
    }
    f.set_len(0)
        .and_then(|()| writeln!(f, "{}", std::process::id()))
        .map_err(|e| Error(format!("cannot write {}: {e}", path.display())))?;
    Ok(f)
}

impl Daemon {
    /// Loads, restores and attaches; `log` gets one line per event worth
    /// an operator's attention (a decision change, a table not used).
    pub fn start(opts: Options, mut log: Box<dyn FnMut(&str)>) -> Result<Daemon, Error> {
        if let Some(why) = crate::missing_bpf() {
            return Err(Error(format!("cannot tune connections: {why}")));
        }
        pins::check_root("tuning connections")?;
        cgroup::check(&opts.cgroup)?;
        let specs: Vec<String> = opts.candidates.iter().map(|c| c.spec.clone()).collect();
        if specs != opts.tuner.candidates() {
            return Err(Error(
                "the daemon's candidates and its policy's differ (a bug)".into(),
            ));
        }
        let pid = opts.state_dir.as_deref().map(take).transpose()?;
        if opts.candidates.iter().any(|c| c.port.is_some()) {
            Paths::system().ensure_bpffs()?;
        }
        let loaded = opts.pins.load_ports(&opts.candidates)?;
        for name in &loaded {
            log(&format!("loaded {name} for the candidates"));
        }
        let mut tuner = Tuner::new(opts.tuner.clone());
        let mut saved_unix = None;
        if let Some(dir) = opts.table.as_deref().and_then(Path::parent) {
            // Where systemd's StateDirectory= would have made it.
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Error(format!(
                        "cannot create {} for the table: {e}",
                        dir.display()
                    ))
                })?;
            }
        }
        if let Some(path) = &opts.table {
            match tuner.load(path) {
                Ok(true) => {
                    saved_unix = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map(|d| d.as_secs());
                    log(&format!(
                        "restored {} peers from {}",
                        tuner.peers(),
                        path.display()
                    ));
                }
                Ok(false) => {}
                Err(e @ LoadError::Unusable(_)) => log(&format!("warning: {e}")),
                Err(e @ LoadError::Refused(_)) => return Err(Error(e.to_string())),
            }
        }
        let bpftune = opts.tuner.policy == live::PolicyKind::Bpftune;
        let priors = match opts.tuner.policy {
            live::PolicyKind::Kleinrock => Some((
                opts.tuner.kleinrock.prefix_v4,
                opts.tuner.kleinrock.prefix_v6,
            )),
            live::PolicyKind::Bpftune => None,
        };
        let program = Program::load(&Settings {
            advise: opts.advise,
            priors,
            report_ms: opts.report_every.as_millis().min(u32::MAX as u128) as u32,
            capacity: opts.tuner.kleinrock.capacity.min(u32::MAX as usize) as u32,
            lossy_shift: kleinrock_select::bpftune::DROP_SHIFT,
        })?;
        if bpftune {
            let bbr = kleinrock_select::bpftune::BBR;
            program.set_lossy(&opts.candidates[bbr].name, bbr)?;
        }
        let index = opts
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i))
            .collect();
        let mut d = Daemon {
            program,
            tuner,
            opts,
            index,
            started_unix: now_unix().0,
            saved_unix,
            last_save: Instant::now(),
            last_status: None,
            changed: true,
            save_failing: false,
            undecodable: 0,
            log,
            _pid: pid,
            loaded,
        };
        let initial = d.tuner.decisions();
        d.apply(&initial, false)?;
        d.program.attach(&d.opts.cgroup)?;
        d.write_status(false)?;
        Ok(d)
    }

    /// Writes decisions into the program's map; logs each when `say`.
    fn apply(&mut self, decisions: &[Decision], say: bool) -> Result<(), Error> {
        for d in decisions {
            let c = d
                .alg
                .and_then(|a| self.opts.candidates.get(a).map(|c| (a, c)));
            self.program
                .set(d.key, c.map(|(a, c)| (c.name.as_str(), a, c.needs_ecn)))?;
            if say {
                let name = |a: Option<usize>| {
                    a.and_then(|a| self.opts.candidates.get(a))
                        .map_or("the default", |c| c.spec.as_str())
                };
                let whom = if d.key.len == 128 {
                    kleinrock_select::addr(d.key.addr).to_string()
                } else {
                    format!("new peers in {}", d.key)
                };
                let line = format!("{whom}: {} -> {}", name(d.was), name(d.alg));
                (self.log)(&line);
            }
        }
        if !decisions.is_empty() {
            self.changed = true;
        }
        Ok(())
    }

    fn candidate(&self, kernel_name: &str) -> Option<usize> {
        self.index.get(kernel_name).copied()
    }

    /// Handles the reports that arrive within `wait`; saves and writes
    /// the status when due. Returns how many reports it handled.
    pub fn step(&mut self, wait: Duration) -> Result<usize, Error> {
        let reports = self.program.poll(wait)?;
        let n = reports.len();
        let now_ms = now_unix().1;
        for r in reports {
            let r: Report = match r {
                Ok(r) => r,
                Err(why) => {
                    if self.undecodable == 0 {
                        (self.log)(&format!("warning: {why}"));
                    }
                    self.undecodable += 1;
                    continue;
                }
            };
            let index = |n: &str| self.candidate(n);
            let decisions = match r.kind {
                Kind::Opened => {
                    let o = r.opened(index);
                    self.say_refusal(&o);
                    self.tuner.opened(now_ms, &o)
                }
                Kind::Sample => {
                    self.tuner.sampled(r.cookie, &r.sample());
                    Vec::new()
                }
                Kind::Closed => self.tuner.closed(now_ms, &r.closed(index)),
            };
            self.apply(&decisions, true)?;
        }
        if n > 0 {
            self.changed = true;
        }
        if self.opts.table.is_some() && self.last_save.elapsed() >= self.opts.save_every {
            // A failed save (a full disk) does not stop the tuning: it is
            // said, and tried again at the next interval.
            match self.save() {
                Ok(()) => self.save_failing = false,
                Err(e) if !self.save_failing => {
                    (self.log)(&format!("warning: {e}; trying again every save interval"));
                    self.save_failing = true;
                }
                Err(_) => {}
            }
        }
        if self.changed && self.last_status.is_none_or(|t| t.elapsed() >= STATUS_EVERY) {
            self.write_status(false)?;
        }
        Ok(n)
    }

    /// A line when the kernel refused the map's choice, or the program
    /// did for want of ECN: the candidate is then not proposed for the
    /// peer for a while.
    fn say_refusal(&mut self, o: &live::Opened) {
        let why = match o.outcome {
            live::Outcome::Failed(e) => refusal(e),
            live::Outcome::NoEcn => "the connection did not negotiate ECN".to_string(),
            _ => return,
        };
        let name = o
            .chosen
            .and_then(|c| self.opts.candidates.get(c))
            .map_or("?", |c| c.name.as_str());
        let line = format!(
            "{}: {name} was not set ({why}); not proposed there for a while",
            kleinrock_select::addr(o.peer)
        );
        (self.log)(&line);
    }

    /// Saves the policy's table now (atomically).
    pub fn save(&mut self) -> Result<(), Error> {
        self.last_save = Instant::now();
        let Some(path) = &self.opts.table else {
            return Ok(());
        };
        self.tuner.save(path).map_err(|e| {
            Error(format!(
                "cannot save the learned table to {}: {e}",
                path.display()
            ))
        })?;
        self.saved_unix = Some(now_unix().0);
        Ok(())
    }

    /// The status now: its header and the peers shown.
    pub fn status(&self, stopped: bool) -> (status::Header, Vec<live::PeerStatus>) {
        let (peers, more) = self.tuner.status(self.opts.status_peers);
        let Stats {
            records,
            lost,
            no_storage,
        } = self.program.stats();
        let h = status::Header {
            policy: self.opts.tuner.policy.name().into(),
            mode: if self.opts.advise { "advise" } else { "run" }.into(),
            pid: std::process::id(),
            cgroup: self.opts.cgroup.display().to_string(),
            started_unix: self.started_unix,
            written_unix: now_unix().0,
            table: self
                .opts
                .table
                .as_ref()
                .map(|p| (p.display().to_string(), self.saved_unix)),
            candidates: self
                .opts
                .candidates
                .iter()
                .map(|c| (c.spec.clone(), c.name.clone()))
                .collect(),
            reports: records,
            lost,
            no_storage,
            undecodable: self.undecodable,
            counts: self.tuner.counts.clone(),
            peers: self.tuner.peers(),
            more,
            stopped,
        };
        (h, peers)
    }

    fn write_status(&mut self, stopped: bool) -> Result<(), Error> {
        self.last_status = Some(Instant::now());
        self.changed = false;
        let Some(dir) = self.opts.state_dir.clone() else {
            return Ok(());
        };
        let (h, peers) = self.status(stopped);
        status::write_atomically(&dir.join("status.txt"), &status::text(&h, &peers))?;
        status::write_atomically(&dir.join("status.json"), &status::json(&h, &peers))
    }

    pub fn tuner(&self) -> &Tuner {
        &self.tuner
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Detaches (new connections get the default) without saving: what
    /// the death of the process does.
    pub fn detach(&mut self) {
        self.program.detach();
    }

    /// Saves the table and the status, and detaches.
    pub fn finish(mut self) -> Result<(), Error> {
        let saved = self.save();
        self.program.detach();
        let status = self.write_status(true);
        if let Some(dir) = &self.opts.state_dir {
            let _ = std::fs::remove_file(dir.join("pid"));
        }
        saved.and(status)
    }
}

/// bpf_setsockopt's error, in words: 524 is the kernel's ENOTSUPP, which
/// libc does not name (the kernel's answer for `cdg`).
pub fn refusal(err: i32) -> String {
    match -err {
        524 => "the kernel answered ENOTSUPP, 524".to_string(),
        e => format!("{}", std::io::Error::from_raw_os_error(e)),
    }
}

/// What [`stop`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The daemon it signalled, and whether it had to be killed.
    pub daemon: Option<(u32, bool)>,
    pub unloaded: Vec<(String, Unloaded)>,
}

/// Stops the daemon of `state_dir` (SIGTERM: it saves and detaches; after
/// `wait`, SIGKILL) and unloads the ports the tuner loaded.
pub fn stop(state_dir: &Path, tune_pins: &TunePins, wait: Duration) -> Result<Stopped, Error> {
    pins::check_root("stopping the tuner")?;
    let mut daemon = None;
    if let Some(pid) = running(state_dir) {
        let signal = |sig| {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid as libc::pid_t, sig) }
        };
        if signal(libc::SIGTERM) != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != ErrorKind::NotFound {
                return Err(Error(format!("cannot signal the tuner (pid {pid}): {e}")));
            }
        }
        let gone = |limit: Duration| {
            let start = Instant::now();
            while running(state_dir).is_some() {
                if start.elapsed() >= limit {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            true
        };
        let mut killed = false;
        if !gone(wait) {
            signal(libc::SIGKILL);
            killed = true;
            if !gone(Duration::from_secs(5)) {
                return Err(Error(format!(
                    "the tuner (pid {pid}) did not exit after SIGKILL; its program stays \
                     attached until it does"
                )));
            }
        }
        daemon = Some((pid, killed));
    }
    let unloaded = tune_pins.unload_ports()?;
    Ok(Stopped { daemon, unloaded })
}

/// The key of a peer, for tests and tools.
pub fn peer_key(addr: std::net::IpAddr) -> Prefix {
    Prefix::peer(kleinrock_select::peer(addr))
}
