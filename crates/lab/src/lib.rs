//! Kleinrock's live lab: real Linux TCP between network namespaces over an
//! emulated link.
//!
//! A [`Lab`] is three network namespaces, a sender, a router and a
//! receiver, joined by veth pairs. The router carries the link: per
//! direction a userspace delay line over TUN devices that runs the
//! simulator's bottleneck ([`LinkConfig`], `kleinrock-link`'s: rate or
//! mahimahi trace, FIFO with step marking, CoDel, FQ-CoDel or RED,
//! Bernoulli or Gilbert-Elliott loss, delay and jitter) with per-flow
//! delays ([`FlowPath`]); or the kernel's tbf; random loss and a
//! blackhole switch (iptables).
//! Programs run inside a namespace through [`Node::command`]; Rust code runs
//! there through [`Node::run`] and [`Node::spawn`] (a socket keeps the
//! namespace it was created in, so a listener or a connected stream made
//! there can be used from any thread).
//!
//! ```no_run
//! use std::net::{TcpListener, TcpStream};
//! use std::time::Duration;
//! use kleinrock_lab::{Direction, Lab, LabConfig, Link, Queue, RECEIVER_ADDR};
//!
//! let link = Link {
//!     delay: Duration::from_millis(20), // one way: 40 ms RTT
//!     rate_bps: Some(20_000_000),       // tbf, 20 Mbit/s
//!     queue: Queue::Packets(100),
//!     ..Link::default()
//! };
//! let lab = Lab::new(&LabConfig::symmetric(link))?;
//! let ping = lab.sender().command("ping").args(["-c", "3", "198.51.100.2"]).output()?;
//! let listener = lab.receiver().run(|| TcpListener::bind((RECEIVER_ADDR, 5001)))??;
//! let tx = lab.sender().run(|| TcpStream::connect((RECEIVER_ADDR, 5001)))??;
//! let (rx, _) = listener.accept()?;
//! lab.set_blackhole(Direction::Both, true)?; // until set_blackhole(.., false)
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The lab shells out to `ip`, `tc` and `iptables` (iproute2 and iptables)
//! and needs root. docs/LAB.md is the guide.

use std::fmt;

mod awake;
mod bottleneck;
mod capture;
mod classify;
mod config;
mod delay;
mod ecn;
mod filter;
mod lab;
mod lane;
mod lateness;
mod netns;
mod shaper;
mod steal;
mod sweep;
mod tcp_info;
mod tools;
mod tun;

pub use capture::LabCapture;
pub use classify::{FlowPath, Proto};
pub use kleinrock_capture::background::Outcome as CaptureOutcome;
pub use kleinrock_capture::{CaptureSpec, Direction as CaptureDirection, End, Format};
// The description of a bottleneck the delay line takes, and what it names:
// the simulator's, from `kleinrock-link`.
pub use config::{Direction, LabConfig, Link, Queue, DELAY_LINE_SLOTS};
pub use delay::{DelayStats, QueueSample};
pub use kleinrock_link::codel::CodelParams;
pub use kleinrock_link::config::{LinkConfig, LinkStats, QueueConfig};
pub use kleinrock_link::loss::LossModel;
pub use kleinrock_link::mahimahi::Trace;
pub use kleinrock_link::queue::Limit;
pub use kleinrock_link::red::RedParams;
pub use lab::{
    Lab, RECEIVER_ADDR, RECEIVER_IF, ROUTER_RECEIVER_SIDE_ADDR, ROUTER_RECEIVER_SIDE_IF,
    ROUTER_SENDER_SIDE_ADDR, ROUTER_SENDER_SIDE_IF, SENDER_ADDR, SENDER_IF,
};
pub use lateness::Lateness;
pub use netns::Node;
pub use steal::{StealMeter, QUIET_STEAL};
pub use sweep::sweep;
pub use tcp_info::TcpInfo;

/// What kind of failure an [`Error`] is, so that tests can skip on
/// [`ErrorKind::Unprivileged`] and fail on the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not root.
    Unprivileged,
    /// A tool or device the lab needs is not on this machine.
    Missing,
    /// A configuration value is out of range.
    Invalid,
    /// A command or system call failed.
    Failed,
}

/// A failure, as one sentence that names the problem (and, where there is
/// one, the fix).
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

    pub(crate) fn failed(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Failed, message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid, message)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True when the lab could not be made because this process is not
    /// root: the one case in which a test should skip rather than fail.
    pub fn is_unprivileged(&self) -> bool {
        self.kind == ErrorKind::Unprivileged
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    /// Tests share a lab between threads (one toggles the blackhole while
    /// another sends).
    #[test]
    fn a_lab_can_be_shared_between_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<crate::Lab>();
        shareable::<crate::Node>();
        shareable::<crate::Error>();
    }
}
