//! Packet captures from the delay line, which sees every packet crossing
//! the router as raw IP (docs/LAB.md, "Packet captures"): no tcpdump, and
//! the same ends, directions, snap lengths and formats as the simulator's
//! captures (`kleinrock_capture::CaptureSpec`). A packet arriving from the
//! left is seen at the left end when the delay line reads it (what the
//! sender sent, before the bottleneck's queue) and at the right end when
//! it writes it back (what the receiver gets, CE marks included); the
//! other direction likewise. Each IP packet gets an Ethernet header with
//! the simulator's addresses and is handed to a writer thread
//! (`kleinrock_capture::background`): the delay line copies at most the
//! snap length and never waits; what the writer cannot take in time is
//! counted and reported, not waited for. Timestamps are the wall clock.

use std::path::PathBuf;

use kleinrock_capture::background::{Background, Outcome};
use kleinrock_capture::{frame, CaptureSpec, Writer};

use crate::config::FRAME;
use crate::Error;

/// A capture the lab writes: what, where, and a comment for pcapng.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabCapture {
    pub spec: CaptureSpec,
    pub path: PathBuf,
    /// What the capture is of (pcapng keeps it in its section header).
    pub comment: String,
}

/// The delay line's end of a running capture.
pub(crate) struct Tap {
    spec: CaptureSpec,
    writer: Background,
    /// CLOCK_REALTIME less CLOCK_MONOTONIC, in ns: the delay line's times
    /// are monotonic, a capture's the wall clock.
    offset_ns: u64,
}

impl Tap {
    pub(crate) fn start(c: &LabCapture) -> Result<Tap, Error> {
        let cannot = |e: std::io::Error| {
            Error::failed(format!(
                "cannot write the capture {}: {}",
                c.path.display(),
                kleinrock_files::reason(&e)
            ))
        };
        let writer = Writer::create(&c.path, &c.spec, &c.comment).map_err(cannot)?;
        let keep = (c.spec.snaplen as usize).min(FRAME as usize);
        Ok(Tap {
            spec: c.spec,
            writer: Background::start(writer, keep).map_err(cannot)?,
            offset_ns: clock(libc::CLOCK_REALTIME).wrapping_sub(clock(libc::CLOCK_MONOTONIC)),
        })
    }

    /// `packet` was read from lane `lane`'s TUN at `at` (monotonic ns).
    #[inline]
    pub(crate) fn arrived(&mut self, lane: usize, at: u64, packet: &[u8]) {
        if self.spec.sees(lane) && self.spec.at_entry(lane) {
            self.keep(lane, at, packet);
        }
    }

    /// `packet` was written back into lane `lane`'s TUN at `at`.
    #[inline]
    pub(crate) fn released(&mut self, lane: usize, at: u64, packet: &[u8]) {
        if self.spec.sees(lane) && !self.spec.at_entry(lane) {
            self.keep(lane, at, packet);
        }
    }

    fn keep(&mut self, lane: usize, at: u64, packet: &[u8]) {
        let head = frame::ethernet(lane == 0, packet);
        let len = (head.len() + packet.len()) as u32;
        self.writer.offer(
            at.wrapping_add(self.offset_ns),
            &head,
            packet,
            self.spec.snaplen as usize,
            len,
        );
    }

    /// Waits for the writer to write everything and close the file.
    pub(crate) fn finish(self) -> Result<Outcome, Error> {
        self.writer.finish().map_err(|e| {
            Error::failed(format!(
                "the capture could not be written: {}",
                kleinrock_files::reason(&e)
            ))
        })
    }
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe {
        libc::clock_gettime(id, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
