//! The tuner's sockops program (`src/bpf/tune.bpf.c`) from userspace:
//! loaded with its settings, attached to a cgroup, its choices written,
//! its reports read.
//!
//! The attachment is a BPF link owned by this process and never pinned:
//! if the daemon dies, even by SIGKILL, the kernel closes the link and
//! detaches the program, so new connections get the system's default
//! again, while those already tuned keep the algorithm they were given
//! (the kernel holds a reference to it per socket). A pinned attachment
//! would keep steering new connections with choices nobody updates.

use std::cell::RefCell;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use libbpf_rs::{
    Link, MapCore, MapFlags, MapHandle, Object, PrintLevel, RingBuffer, RingBufferBuilder,
};

use super::record::{choice_bytes, key_bytes, Report};
use crate::load::{btf_of, keep_libbpf_message, open, parameters, refused, LIBBPF_LOG};
use crate::Error;
use kleinrock_select::live::Prefix;

pub use super::{Settings, Stats};

pub struct Program {
    _obj: Object,
    link: Option<Link>,
    choices: MapHandle,
    lossy: MapHandle,
    stats: MapHandle,
    ring: RingBuffer<'static>,
    queue: Rc<RefCell<Vec<Vec<u8>>>>,
    maps: Vec<MapHandle>,
}

/// The program in `src/bpf`.
const PROGRAM: &str = "tune";

impl Program {
    /// Loads the program (not attached yet).
    pub fn load(s: &Settings) -> Result<Program, Error> {
        LIBBPF_LOG.lock().map(|mut l| l.clear()).ok();
        let previous = libbpf_rs::set_print(Some((PrintLevel::Warn, keep_libbpf_message)));
        let program = Program::load_logged(s);
        libbpf_rs::set_print(previous);
        program
    }

    fn load_logged(s: &Settings) -> Result<Program, Error> {
        let refuse = |e: libbpf_rs::Error| refused("kr_tune", "load", e);
        let mut obj = open(PROGRAM, refuse)?;
        let (v4, v6) = s.priors.unwrap_or((24, 48));
        let values = [
            ("advise", s.advise as u32),
            ("priors", s.priors.is_some() as u32),
            ("prefix_v4", v4 as u32),
            ("prefix_v6", v6 as u32),
            ("report_ms", s.report_ms),
            ("lossy_shift", s.lossy_shift),
        ];
        let places: Vec<(usize, u32)> = {
            let vars = parameters(&btf_of(&obj)?);
            values
                .iter()
                .map(|(name, v)| {
                    vars.iter()
                        .find(|(n, _, size)| n == name && *size == 4)
                        .map(|(_, at, _)| (*at, *v))
                        .ok_or_else(|| Error(format!("the tuner's program has no `{name}`")))
                })
                .collect::<Result<_, _>>()?
        };
        for mut map in obj.maps_mut() {
            let name = map.name().to_string_lossy().into_owned();
            if name.ends_with(".rodata") {
                let data = map
                    .initial_value_mut()
                    .ok_or_else(|| Error("libbpf did not map the tuner's settings".into()))?;
                for &(at, v) in &places {
                    data[at..at + 4].copy_from_slice(&v.to_ne_bytes());
                }
            } else if name == "kr_tune_choices" {
                map.set_max_entries(s.capacity.max(1)).map_err(refuse)?;
            }
        }
        let obj = obj.load().map_err(refuse)?;
        let handle = |name: &str| -> Result<MapHandle, Error> {
            let m = obj
                .maps()
                .find(|m| m.name() == name)
                .ok_or_else(|| Error(format!("the tuner's program has no map {name}")))?;
            MapHandle::try_from(&m).map_err(|e| Error(format!("cannot use {name}: {e}")))
        };
        let choices = handle("kr_tune_choices")?;
        let lossy = handle("kr_tune_lossy")?;
        let stats = handle("kr_tune_stats")?;
        let ring_map = handle("kr_tune_ring")?;
        // Every map, for what the kernel charges them.
        let maps = [
            "kr_tune_choices",
            "kr_tune_lossy",
            "kr_tune_stats",
            "kr_tune_sk",
            "kr_tune_ring",
        ]
        .iter()
        .map(|n| handle(n))
        .collect::<Result<Vec<_>, _>>()?;
        let queue = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&queue);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&ring_map, move |data: &[u8]| {
                sink.borrow_mut().push(data.to_vec());
                0
            })
            .map_err(|e| Error(format!("cannot read the tuner's reports: {e}")))?;
        let ring = builder
            .build()
            .map_err(|e| Error(format!("cannot read the tuner's reports: {e}")))?;
        Ok(Program {
            _obj: obj,
            link: None,
            maps,
            choices,
            lossy,
            stats,
            ring,
            queue,
        })
    }

    /// Attaches to the cgroup at `path` (a link this process owns).
    pub fn attach(&mut self, path: &Path) -> Result<(), Error> {
        let dir = std::fs::File::open(path)
            .map_err(|e| Error(format!("cannot open the cgroup {}: {e}", path.display())))?;
        let prog = self
            ._obj
            .progs_mut()
            .find(|p| p.name() == "kr_tune")
            .ok_or_else(|| Error("the tuner's object has no kr_tune program".into()))?;
        let link = prog.attach_cgroup(dir.as_raw_fd()).map_err(|e| {
            Error(format!(
                "could not attach the tuner to the cgroup {}: {e} (this kernel needs \
                 CONFIG_CGROUP_BPF)",
                path.display()
            ))
        })?;
        self.link = Some(link);
        Ok(())
    }

    /// Detaches (new connections get the default again).
    pub fn detach(&mut self) {
        self.link = None;
    }

    pub fn attached(&self) -> bool {
        self.link.is_some()
    }

    /// Writes (or, with `None`, removes) the entry of a peer or prefix.
    pub fn set(&self, key: Prefix, choice: Option<(&str, usize, bool)>) -> Result<(), Error> {
        let k = key_bytes(key);
        match choice {
            Some((name, alg, ecn)) => self
                .choices
                .update(&k, &choice_bytes(name, alg, ecn), MapFlags::ANY)
                .map_err(|e| Error(format!("cannot write the tuner's choice for {key}: {e}"))),
            None => match self.choices.delete(&k) {
                Ok(()) => Ok(()),
                // Evicted by the map's LRU meanwhile, or never written.
                Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(Error(format!(
                    "cannot remove the tuner's choice for {key}: {e}"
                ))),
            },
        }
    }

    /// What the map holds for `key`: the kernel name and index.
    pub fn get(&self, key: Prefix) -> Option<(String, u32)> {
        let v = self
            .choices
            .lookup(&key_bytes(key), MapFlags::ANY)
            .ok()
            .flatten()?;
        let end = v[..16].iter().position(|&c| c == 0).unwrap_or(16);
        let name = String::from_utf8_lossy(&v[..end]).into_owned();
        Some((name, u32::from_ne_bytes(v[16..20].try_into().ok()?)))
    }

    /// Turns bpftune's retransmission rule on, switching lossy
    /// connections to `name` (candidate `alg`).
    pub fn set_lossy(&self, name: &str, alg: usize) -> Result<(), Error> {
        self.lossy
            .update(
                &0u32.to_ne_bytes(),
                &choice_bytes(name, alg, false),
                MapFlags::ANY,
            )
            .map_err(|e| Error(format!("cannot write the retransmission rule: {e}")))
    }

    /// Waits up to `timeout` for reports, and returns those that came.
    pub fn poll(&self, timeout: Duration) -> Result<Vec<Result<Report, String>>, Error> {
        match self.ring.poll(timeout) {
            Ok(()) => {}
            // A signal (the daemon's stop) woke the wait: take what came.
            Err(e) if e.kind() == libbpf_rs::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error(format!("cannot read the tuner's reports: {e}"))),
        }
        Ok(self
            .queue
            .borrow_mut()
            .drain(..)
            .map(|b| Report::decode(&b))
            .collect())
    }

    /// The counters, summed over the CPUs.
    pub fn stats(&self) -> Stats {
        let per_cpu = self
            .stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .ok()
            .flatten()
            .unwrap_or_default();
        let mut s = Stats::default();
        for v in per_cpu {
            let word = |i: usize| {
                v.get(i * 8..i * 8 + 8)
                    .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                    .unwrap_or(0)
            };
            s.records += word(0);
            s.lost += word(1);
            s.no_storage += word(2);
        }
        s
    }

    /// The kernel memory the program's maps are charged (`memlock` in
    /// their fdinfo), bytes.
    pub fn map_memory(&self) -> u64 {
        self.maps
            .iter()
            .filter_map(|m| {
                let fd = m.as_fd().as_raw_fd();
                let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
                info.lines()
                    .find_map(|l| l.strip_prefix("memlock:"))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            })
            .sum()
    }
}
