//! `kleinrock tune`: the selector on a host's real connections
//! (docs/TUNE.md).
//!
//! A sockops program (`src/bpf/tune.bpf.c`) attached to a cgroup v2 sets
//! each new connection's congestion control from a map of choices per
//! peer, and reports what the connection showed; a daemon feeds the
//! reports to a policy (`kleinrock_select::live`) and keeps the map
//! current.
//!
//! - [`record`]: the program's reports and map entries, byte for byte.
//! - [`cgroup`]: finding cgroup v2, checking a path, a scratch cgroup.
//! - [`names`]: candidates as the kernel names them; the ports the tuner
//!   loads, and unloads at `stop`.
//! - [`program`]: the program from userspace (needs a build with BPF).
//! - [`daemon`]: the loop, one step at a time; `stop`.
//! - [`status`]: what `kleinrock tune status` prints.

#[path = "tune_cgroup.rs"]
pub mod cgroup;
#[path = "tune_daemon.rs"]
pub mod daemon;
#[path = "tune_names.rs"]
pub mod names;
#[path = "tune_record.rs"]
pub mod record;
#[path = "tune_status.rs"]
pub mod status;

/// How the program is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Record, never set.
    pub advise: bool,
    /// Prefix lengths to look up when a peer has no entry (IPv4 bits,
    /// IPv6 bits): the policy's priors.
    pub priors: Option<(u8, u8)>,
    /// Reports of long connections, every this many ms (0: none).
    pub report_ms: u32,
    /// Entries of the choices map (LRU).
    pub capacity: u32,
    /// bpftune's DROP_SHIFT, for its retransmission rule.
    pub lossy_shift: u32,
}

/// The program's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub records: u64,
    pub lost: u64,
    pub no_storage: u64,
}

#[cfg(feature = "bpf")]
#[path = "tune_program.rs"]
pub mod program;

/// A build without BPF programs has no program to load: every path to
/// it stops at [`crate::missing_bpf`] first.
#[cfg(not(feature = "bpf"))]
pub mod program {
    use crate::tune::record::Report;
    use crate::Error;
    use kleinrock_select::live::Prefix;
    use std::convert::Infallible;
    use std::path::Path;
    use std::time::Duration;

    pub use super::{Settings, Stats};

    pub struct Program(Infallible);

    impl Program {
        pub fn load(_: &Settings) -> Result<Program, Error> {
            Err(Error(
                crate::missing_bpf()
                    .unwrap_or("this build has no BPF programs")
                    .into(),
            ))
        }
        pub fn attach(&mut self, _: &Path) -> Result<(), Error> {
            match self.0 {}
        }
        pub fn detach(&mut self) {
            match self.0 {}
        }
        pub fn attached(&self) -> bool {
            match self.0 {}
        }
        pub fn set(&self, _: Prefix, _: Option<(&str, usize, bool)>) -> Result<(), Error> {
            match self.0 {}
        }
        pub fn get(&self, _: Prefix) -> Option<(String, u32)> {
            match self.0 {}
        }
        pub fn set_lossy(&self, _: &str, _: usize) -> Result<(), Error> {
            match self.0 {}
        }
        pub fn poll(&self, _: Duration) -> Result<Vec<Result<Report, String>>, Error> {
            match self.0 {}
        }
        pub fn stats(&self) -> Stats {
            match self.0 {}
        }
        pub fn map_memory(&self) -> u64 {
            match self.0 {}
        }
    }
}
