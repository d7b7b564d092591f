//! Kleinrock's second engine: a scenario file, exactly what `kleinrock
//! sim` runs, run on real Linux TCP in the live lab (crates/lab), with
//! the simulator's [`Results`] as its output, so that results files,
//! `compare`'s report and flent files work on both engines unchanged.
//!
//! - [`plan`](mod@plan): what the lab does for each key of a scenario, and
//!   the one-sentence refusal of what it cannot honour; [`link`] is the
//!   scenario's link mapped onto the lab's, and the link's counters.
//! - [`algorithms`]: the kernel's own algorithms and our BPF ports, loaded
//!   for a run and unloaded after it.
//! - `stack`: the TCP settings inside the lab's namespaces (sysctls,
//!   routes, offloads); `socket`: socket options and `TCP_INFO`.
//! - `traffic`: the traffic generator, Rust sockets inside the
//!   namespaces: TCP flows (bulk, transfers, requests and responses),
//!   pings and constant-rate UDP.
//! - `sample`: `TCP_INFO` every sample interval, and the summaries.
//! - [`signals`]: SIGINT and SIGTERM stop a run, which then cleans up.
//!
//! docs/LAB.md ("`kleinrock lab`") says what each key does in the lab and
//! what each results column means there.

use std::fmt;

pub mod algorithms;
pub mod link;
pub mod plan;
mod run;
mod sample;
pub mod signals;
mod socket;
mod stack;
mod traffic;

pub use kleinrock_cc::implementation::Implementation;
pub use kleinrock_sim::Results;
pub use plan::Plan;

/// Runs `plan` in a new lab and returns its results. `stop` is asked a
/// few times a second whether to stop (a signal came, say): the run then
/// cleans up and returns [`ErrorKind::Interrupted`]. `progress` is told
/// the fraction of the run's time done. Everything the run sets up (the
/// lab's namespaces, the ports it loaded) is removed before it returns,
/// whatever the outcome; leftovers of runs that were killed are swept
/// first.
pub fn run(
    plan: &Plan,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(f64),
) -> Result<Results, Error> {
    run::run(plan, stop, progress)
}

/// What kind of failure an [`Error`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The scenario asks for something the lab cannot do.
    Refused,
    /// Not privileged enough to build a lab or load a port.
    Unprivileged,
    /// Stopped by [`Options::stop`].
    Interrupted,
    /// Something failed while the lab ran.
    Failed,
}

/// A failure, as one sentence naming the problem and, where there is one,
/// the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn refused(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Refused, message)
    }

    pub(crate) fn failed(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Failed, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True when the lab could not run for want of privileges: the one
    /// case in which a test skips.
    pub fn is_unprivileged(&self) -> bool {
        self.kind == ErrorKind::Unprivileged
    }
}

impl From<kleinrock_lab::Error> for Error {
    fn from(e: kleinrock_lab::Error) -> Error {
        let kind = if e.is_unprivileged() {
            ErrorKind::Unprivileged
        } else {
            ErrorKind::Failed
        };
        Error::new(kind, e.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
