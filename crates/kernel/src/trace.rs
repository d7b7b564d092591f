//! `kleinrock kernel trace`: switch a loaded algorithm's trace mode on,
//! drain its ring buffer into one hook trace per connection (the CSV of
//! docs/TRACE_FORMAT.md), switch it off, and say what was recorded, what
//! was skipped and whether anything was lost.
//!
//! [`Recording`] turns raw records into trace files and needs no BPF; it is
//! what the unit tests drive. [`run`] is the session around it (feature
//! `bpf`).
//!
//! A connection is recorded only if tracing saw it from its start (its
//! first record is `init`, or a hook the kernel calls before `init`, such
//! as `pkts_acked` or `cong_control` on the SYN-ACK, while the private area
//! is still all zero), or if the algorithm keeps no private state:
//! the replayer starts from the all-zero private state of a new socket, so
//! a connection joined midway could not be replayed. Such connections are
//! counted and named, not written.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use kleinrock_cc::Hook;
use kleinrock_trace::write::TraceWriter;

use crate::ca::Layout;
use crate::record::{self, Conn};
use crate::Error;

/// One connection's trace file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnFile {
    pub conn: Conn,
    pub path: PathBuf,
    pub rows: u64,
}

/// What a recording wrote and what it could not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// In the order the connections first appeared.
    pub files: Vec<ConnFile>,
    /// Connections already running when tracing began, not written.
    pub joined_midway: Vec<Conn>,
    /// Records that did not decode, and the first reason.
    pub undecodable: u64,
    pub first_undecodable: Option<String>,
}

enum Route {
    Write(usize),
    Skip,
}

/// Routes decoded records to one [`TraceWriter`] per connection.
pub struct Recording {
    out: PathBuf,
    hz: u32,
    layout: Layout,
    names: Vec<String>,
    routes: HashMap<Conn, Route>,
    writers: Vec<TraceWriter>,
    summary: Summary,
    error: Option<Error>,
    pre_ca: Vec<i64>,
    post_ca: Vec<i64>,
}

/// The path of the `n`th connection's trace (from 1): `out` itself for the
/// first, then `trace.2.csv.gz`, `trace.3.csv.gz`, ... beside it.
pub fn conn_path(out: &Path, n: usize) -> PathBuf {
    if n <= 1 {
        return out.to_path_buf();
    }
    let file = out.file_name().map(|f| f.to_string_lossy().into_owned());
    let file = file.unwrap_or_default();
    let (stem, ext) = [".csv.gz", ".csv"]
        .iter()
        .find_map(|e| file.strip_suffix(e).map(|s| (s.to_string(), *e)))
        .unwrap_or((file.clone(), ""));
    out.with_file_name(format!("{stem}.{n}{ext}"))
}

impl Recording {
    /// Writes to `out` (and siblings, one per connection); jiffies are
    /// counted at `hz`; `layout` names the private area's members.
    pub fn new(out: &Path, hz: u32, layout: Layout) -> Recording {
        let names = layout.names();
        Recording {
            out: out.to_path_buf(),
            hz,
            layout,
            names,
            routes: HashMap::new(),
            writers: Vec::new(),
            summary: Summary::default(),
            error: None,
            pre_ca: Vec::new(),
            post_ca: Vec::new(),
        }
    }

    /// Rows written so far, over all connections.
    pub fn rows(&self) -> u64 {
        self.summary.files.iter().map(|f| f.rows).sum()
    }

    /// Connections seen so far, written or not.
    pub fn connections(&self) -> usize {
        self.routes.len()
    }

    /// Takes one ring-buffer record. Never fails: an undecodable record is
    /// counted, and the first I/O error is kept for [`Recording::finish`].
    pub fn push(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let r = match record::decode(bytes, self.hz) {
            Ok(r) => r,
            Err(e) => {
                self.summary.undecodable += 1;
                if self.summary.first_undecodable.is_none() {
                    self.summary.first_undecodable = Some(e.to_string());
                }
                return;
            }
        };
        let route = match self.routes.get(&r.conn) {
            Some(route) => route,
            None => {
                // The kernel zeroes the private area when it assigns the
                // algorithm, and hooks may run before init (pkts_acked or
                // cong_control on the SYN-ACK): a new connection is one
                // whose first record is init or finds the area all zero.
                // Without private state there is nothing to have missed.
                let from_start = self.layout.members.is_empty()
                    || matches!(r.hook, Hook::Init)
                    || r.pre_ca.iter().all(|&b| b == 0);
                let route = if from_start {
                    match self.open(r.conn) {
                        Ok(i) => Route::Write(i),
                        Err(e) => {
                            self.error = Some(e);
                            return;
                        }
                    }
                } else {
                    self.summary.joined_midway.push(r.conn);
                    Route::Skip
                };
                self.routes.entry(r.conn).or_insert(route)
            }
        };
        let Route::Write(i) = *route else {
            return;
        };
        self.layout.read_into(&r.pre_ca, &mut self.pre_ca);
        self.layout.read_into(&r.post_ca, &mut self.post_ca);
        let written =
            self.writers[i].write_row(&r.hook, &r.pre, &r.post, r.ret, &self.pre_ca, &self.post_ca);
        match written {
            Ok(()) => self.summary.files[i].rows += 1,
            Err(e) => {
                let path = self.summary.files[i].path.display().to_string();
                self.error = Some(Error(format!(
                    "cannot write {path}: {}",
                    kleinrock_files::reason(&e)
                )));
            }
        }
    }

    fn open(&mut self, conn: Conn) -> Result<usize, Error> {
        let path = conn_path(&self.out, self.writers.len() + 1);
        let w = TraceWriter::create(&path, &self.names).map_err(|e| {
            Error(format!(
                "cannot create {}: {}",
                path.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
        self.writers.push(w);
        self.summary.files.push(ConnFile {
            conn,
            path,
            rows: 0,
        });
        Ok(self.writers.len() - 1)
    }

    /// Flushes every file.
    pub fn finish(self) -> Result<Summary, Error> {
        if let Some(e) = self.error {
            return Err(e);
        }
        for (w, f) in self.writers.into_iter().zip(&self.summary.files) {
            w.finish().map_err(|e| {
                Error(format!(
                    "cannot write {}: {}",
                    f.path.display(),
                    kleinrock_files::reason(&e)
                ))
            })?;
        }
        Ok(self.summary)
    }
}

/// The kernel's `CONFIG_HZ`, from the same places libbpf reads it for the
/// programs' `__kconfig` extern: /proc/config.gz, then
/// /boot/config-$(uname -r).
pub fn kernel_hz() -> Option<u32> {
    let mut text = String::new();
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        if flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .is_ok()
        {
            if let Some(hz) = parse_hz(&text) {
                return Some(hz);
            }
        }
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let text = std::fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()?;
    parse_hz(&text)
}

/// `CONFIG_HZ=250` in a kernel config.
pub fn parse_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// What to trace.
pub struct Request<'a> {
    /// A name kleinrock loaded (`kr_cubic`, `kn_bbr`), or `cubic`,
    /// `reno` or `bbr` for the kernel's own through its wrapper.
    pub cc: &'a str,
    pub out: &'a Path,
    /// Run this and stop when it exits; `None`: until SIGINT or SIGTERM.
    pub command: Option<&'a [String]>,
}

/// What a trace session did.
#[derive(Debug)]
pub struct Report {
    /// The name traced (`kn_cubic` when asked for `cubic`).
    pub name: String,
    /// The spec to replay the traces with (`kleinrock replay --cc`).
    pub replay_spec: String,
    pub hz: u32,
    pub summary: Summary,
    /// Records the programs submitted, and those the full ring refused.
    pub recorded: u64,
    pub lost: u64,
    /// The wrapper this session loaded and unloaded again, if any.
    pub loaded_wrapper: Option<String>,
    pub command_status: Option<ExitStatus>,
}

/// Traces `req.cc` until the command exits (or SIGINT/SIGTERM), writing one
/// trace per connection; `progress` gets (rows, connections) about once a
/// second. Needs root, bpffs, and a build with BPF.
pub fn run(req: &Request<'_>, progress: &mut dyn FnMut(u64, usize)) -> Result<Report, Error> {
    if let Some(why) = crate::missing_bpf() {
        return Err(Error(format!("cannot trace: {why}")));
    }
    run_checked(req, progress)
}

#[cfg(feature = "bpf")]
use session::run as run_checked;

#[cfg(not(feature = "bpf"))]
fn run_checked(_: &Request<'_>, _: &mut dyn FnMut(u64, usize)) -> Result<Report, Error> {
    unreachable!("run() stops at missing_bpf()")
}

#[cfg(feature = "bpf")]
mod session {
    use super::{kernel_hz, Recording, Report, Request, Summary};
    use crate::pins::{self, Paths};
    use crate::plan::{self, Native, Port, NATIVE_NAME_PREFIX, NATIVE_SPEC_PREFIX};
    use crate::Error;
    use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};
    use std::cell::RefCell;
    use std::path::Path;
    use std::process::{Child, Command, ExitStatus};
    use std::rc::Rc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    static STOP: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, Ordering::SeqCst);
    }

    /// SIGINT and SIGTERM end the session cleanly instead of killing it
    /// with the trace half written and trace mode left on.
    fn catch_signals() {
        let handler = on_signal as extern "C" fn(libc::c_int);
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(libc::SIGINT, handler as libc::sighandler_t);
            libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        }
    }

    fn pid_alive(pid: u32) -> bool {
        Path::new(&format!("/proc/{pid}")).exists()
    }

    fn open_pin(path: &Path, name: &str) -> Result<MapHandle, Error> {
        MapHandle::from_pinned_path(path).map_err(|e| {
            Error(format!(
                "cannot open {} ({e}): {name} was loaded by a kleinrock without trace \
                 mode; unload it and load it again",
                path.display()
            ))
        })
    }

    /// The (recorded, lost) counters.
    fn stats(map: &MapHandle) -> (u64, u64) {
        let v = map
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .unwrap_or_default();
        let word = |i: usize| {
            v.get(i * 8..i * 8 + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                .unwrap_or(0)
        };
        (word(0), word(1))
    }

    fn set_on(map: &MapHandle, pid: u32) -> Result<(), Error> {
        map.update(&0u32.to_ne_bytes(), &pid.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error(format!("cannot switch trace mode: {e}")))
    }

    /// Which loaded instance to trace, loading the kernel algorithm's
    /// wrapper if asked for `cubic`, `reno` or `bbr`.
    fn resolve(cc: &str, paths: &Paths) -> Result<(String, Port, String, Option<String>), Error> {
        let loaded = paths.list()?;
        if let Some(p) = loaded.iter().find(|p| p.name == cc) {
            let spec = p.spec.clone().ok_or_else(|| {
                Error(format!(
                    "{cc} has no spec recorded under {}; unload it and load it again",
                    paths.dir(cc).display()
                ))
            })?;
            let plan = plan::plan(&spec, Some(cc))?;
            let replay = plan.port.reference_spec();
            return Ok((cc.to_string(), plan.port, replay, None));
        }
        if let Some(native) = Native::from_kernel_name(cc) {
            let name = format!("{NATIVE_NAME_PREFIX}{cc}");
            if loaded.iter().any(|p| p.name == name) {
                return Ok((name, Port::Native(native), cc.to_string(), None));
            }
            let plan = plan::plan(&format!("{NATIVE_SPEC_PREFIX}{cc}"), None)?;
            crate::load(&plan)?;
            return Ok((name.clone(), plan.port, cc.to_string(), Some(name)));
        }
        Err(Error(format!(
            "{cc} is not loaded by kleinrock; load it first (`kleinrock kernel load SPEC`), \
             or name the kernel's cubic, reno or bbr to trace them through their wrappers"
        )))
    }

    pub fn run(req: &Request<'_>, progress: &mut dyn FnMut(u64, usize)) -> Result<Report, Error> {
        pins::check_root("tracing congestion control")?;
        let paths = Paths::system();
        paths.ensure_bpffs()?;
        let hz = kernel_hz().ok_or_else(|| {
            Error(
                "cannot read CONFIG_HZ from /proc/config.gz or /boot/config-$(uname -r); \
                 the trace's jiffies need it"
                    .into(),
            )
        })?;
        let (name, port, replay_spec, loaded_wrapper) = resolve(req.cc, &paths)?;
        let result = trace(req, &paths, &name, &port, hz, progress);
        if let Some(w) = &loaded_wrapper {
            // Sockets still using the wrapper keep it until they close.
            let _ = paths.unload(w, Duration::from_secs(1));
        }
        let (summary, recorded, lost, command_status) = result?;
        Ok(Report {
            name,
            replay_spec,
            hz,
            summary,
            recorded,
            lost,
            loaded_wrapper,
            command_status,
        })
    }

    type Traced = (Summary, u64, u64, Option<ExitStatus>);

    fn trace(
        req: &Request<'_>,
        paths: &Paths,
        name: &str,
        port: &Port,
        hz: u32,
        progress: &mut dyn FnMut(u64, usize),
    ) -> Result<Traced, Error> {
        let on = open_pin(&paths.trace_on(name), name)?;
        let counters = open_pin(&paths.trace_stats(name), name)?;
        let ring = open_pin(&paths.trace_ring(name), name)?;
        let layout = crate::ca_layout(port)?;
        let owner = on
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .and_then(|v| {
                v.get(..4)
                    .map(|b| u32::from_ne_bytes(b.try_into().expect("4")))
            })
            .unwrap_or(0);
        if owner != 0 && pid_alive(owner) {
            return Err(Error(format!(
                "{name} is already being traced by process {owner}; stop that trace first"
            )));
        }
        let recording = Rc::new(RefCell::new(Recording::new(req.out, hz, layout)));
        let sink = Rc::clone(&recording);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&ring, move |data: &[u8]| {
                sink.borrow_mut().push(data);
                0
            })
            .map_err(|e| Error(format!("cannot read {name}'s trace ring: {e}")))?;
        let rb = builder
            .build()
            .map_err(|e| Error(format!("cannot read {name}'s trace ring: {e}")))?;
        let (recorded0, lost0) = stats(&counters);
        catch_signals();
        STOP.store(false, Ordering::SeqCst);
        set_on(&on, std::process::id())?;
        let mut child: Option<Child> = None;
        let started = match req.command {
            Some(cmd) => match Command::new(&cmd[0])
                .args(&cmd[1..])
                .env("KLEINROCK_CC", name)
                .spawn()
            {
                Ok(c) => {
                    child = Some(c);
                    Ok(())
                }
                Err(e) => Err(Error(format!("cannot run `{}`: {e}", cmd[0]))),
            },
            None => Ok(()),
        };
        let mut status = None;
        let mut last = Instant::now();
        while started.is_ok() && !STOP.load(Ordering::SeqCst) {
            let _ = rb.poll(Duration::from_millis(50));
            if let Some(c) = child.as_mut() {
                match c.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        break;
                    }
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
            if last.elapsed() >= Duration::from_secs(1) {
                let r = recording.borrow();
                progress(r.rows(), r.connections());
                last = Instant::now();
            }
        }
        if let (Some(c), None) = (child.as_mut(), status) {
            // Stopped by a signal: the command got it too (same process
            // group); wait for it rather than orphan it.
            status = c.wait().ok();
        }
        set_on(&on, 0)?;
        // Hooks that began before the switch may still submit: drain after
        // they are done.
        std::thread::sleep(Duration::from_millis(20));
        let _ = rb.consume();
        drop(rb);
        started?;
        let (recorded1, lost1) = stats(&counters);
        let recording = Rc::try_unwrap(recording)
            .map_err(|_| Error("the trace ring still holds the recording".into()))?
            .into_inner();
        let summary = recording.finish()?;
        Ok((
            summary,
            recorded1.wrapping_sub(recorded0),
            lost1.wrapping_sub(lost0),
            status,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ca::Member;
    use crate::record::{CA_PRIV_SIZE, RECORD_SIZE};

    /// A record of `hook` on the connection with source port `sport`,
    /// cwnd `cwnd` before and `cwnd + 1` after, first private u32 = `ca`.
    fn rec(hook: u32, sport: u16, cwnd: u32, ca: u32) -> Vec<u8> {
        let mut b = vec![0u8; RECORD_SIZE];
        b[0..4].copy_from_slice(&(RECORD_SIZE as u32).to_ne_bytes());
        b[4..8].copy_from_slice(&hook.to_ne_bytes());
        b[16..20].copy_from_slice(&[10, 0, 0, 1]);
        b[20..24].copy_from_slice(&[10, 0, 1, 2]);
        b[24..26].copy_from_slice(&sport.to_ne_bytes());
        b[26..28].copy_from_slice(&5201u16.to_ne_bytes());
        // kr_sock_state starts at 128: six u64, then snd_cwnd.
        let pre = 128;
        let post = pre + 160;
        b[pre + 48..pre + 52].copy_from_slice(&cwnd.to_ne_bytes());
        b[post + 48..post + 52].copy_from_slice(&(cwnd + 1).to_ne_bytes());
        let ca_pre = post + 160;
        b[ca_pre..ca_pre + 4].copy_from_slice(&ca.to_ne_bytes());
        b[ca_pre + CA_PRIV_SIZE..ca_pre + CA_PRIV_SIZE + 4]
            .copy_from_slice(&(ca + 1).to_ne_bytes());
        b
    }

    fn layout() -> Layout {
        Layout {
            members: vec![Member {
                name: "cnt".into(),
                bit_offset: 0,
                bits: 32,
                signed: false,
            }],
        }
    }

    #[test]
    fn one_file_per_connection_named_beside_the_first() {
        let dir = std::env::temp_dir().join(format!("kr-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("t.csv");
        let mut r = Recording::new(&out, 250, layout());
        r.push(&rec(4, 1000, 10, 0)); // pkts_acked before init, zero area: a start
        r.push(&rec(0, 1000, 10, 0));
        r.push(&rec(0, 2000, 10, 0));
        r.push(&rec(3, 3000, 50, 7)); // cong_avoid first: joined midway
        r.push(&rec(3, 1000, 10, 7));
        r.push(&rec(3, 3000, 51, 8));
        r.push(&[1, 2, 3]);
        assert_eq!(r.rows(), 4);
        assert_eq!(r.connections(), 3);
        let s = r.finish().unwrap();
        assert_eq!(s.files.len(), 2);
        assert_eq!(s.files[0].path, out);
        assert_eq!(s.files[0].rows, 3);
        assert_eq!(s.files[1].path, dir.join("t.2.csv"));
        assert_eq!(s.files[1].conn.sport, 2000);
        assert_eq!(s.joined_midway.len(), 1);
        assert_eq!(s.joined_midway[0].sport, 3000);
        assert_eq!(s.undecodable, 1);
        assert!(s.first_undecodable.unwrap().contains("different builds"));
        let text = std::fs::read_to_string(&out).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][col("hook")], "pkts_acked");
        assert_eq!(rows[2][col("hook")], "cong_avoid");
        assert_eq!(rows[2][col("pre_snd_cwnd")], "10");
        assert_eq!(rows[2][col("post_snd_cwnd")], "11");
        assert_eq!(rows[2][col("pre_ca_cnt")], "7");
        assert_eq!(rows[2][col("post_ca_cnt")], "8");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_private_state_no_connection_is_joined_midway() {
        let dir = std::env::temp_dir().join(format!("kr-trace-test2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = Recording::new(&dir.join("reno.csv"), 250, Layout::default());
        r.push(&rec(3, 1000, 10, 0));
        let s = r.finish().unwrap();
        assert_eq!((s.files.len(), s.files[0].rows), (1, 1));
        assert!(s.joined_midway.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_hook_before_init_on_a_zeroed_area_starts_a_connection() {
        let dir = std::env::temp_dir().join(format!("kr-trace-test3-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = Recording::new(&dir.join("bbr.csv"), 250, layout());
        r.push(&rec(9, 1000, 10, 0)); // cong_control on the SYN-ACK
        r.push(&rec(9, 2000, 10, 5)); // cong_control mid-connection
        let s = r.finish().unwrap();
        assert_eq!(s.files.len(), 1);
        assert_eq!(s.files[0].conn.sport, 1000);
        assert_eq!(s.joined_midway.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sibling_names_keep_the_extension() {
        let p = Path::new("/tmp/x/run.csv.gz");
        assert_eq!(conn_path(p, 1), p);
        assert_eq!(conn_path(p, 3), Path::new("/tmp/x/run.3.csv.gz"));
        assert_eq!(conn_path(Path::new("t"), 2), Path::new("t.2"));
    }

    #[test]
    fn hz_from_a_kernel_config() {
        let c = "# comment\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_X=1\n";
        assert_eq!(parse_hz(c), Some(250));
        assert_eq!(parse_hz("CONFIG_HZ_1000=y\n"), None);
    }
}
