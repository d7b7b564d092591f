//! What a capture records: the packets crossing one end of the dumbbell's
//! bottleneck (both its directions, or one), each cut to a snap length,
//! in pcap or pcapng. Both engines take the same value: the simulator
//! from a scenario's `[capture]` table or `--pcap`, the lab likewise.
//!
//! The bottleneck has two directions, `up` (left to right: an upload's
//! data, a ping's requests) and `down`. Its left end is where the left
//! hosts are: a capture there sees what they send as they send it (before
//! the bottleneck's queue, so also what the queue then drops) and what
//! reaches them as it arrives, as tcpdump on a left host would; the right
//! end likewise for the right hosts.

use std::fmt;

/// An end of the bottleneck, and so the hosts on that side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The upload senders' side, where pings start.
    Left,
    Right,
}

/// Which of the bottleneck's directions a capture keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Left to right.
    Up,
    /// Right to left.
    Down,
    Both,
}

/// The file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// libpcap's format with nanosecond timestamps: what every tool reads.
    Pcap,
    /// pcapng: one interface, nanosecond timestamps, a comment naming the
    /// run, and at the end the packets a capture could not keep.
    PcapNg,
}

/// tcpdump's default and largest snap length.
pub const MAX_SNAPLEN: u32 = 262_144;

/// The default snap length: every header a frame here can have (Ethernet
/// 14, IPv4 20, TCP up to 60) and nothing of the payload, which the
/// simulator does not have (it would be zeros) and which TCP analysis does
/// not need (it reads the IP length).
pub const DEFAULT_SNAPLEN: u32 = 128;

/// A capture: where, which packets, how much of each, which format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureSpec {
    pub at: End,
    pub direction: Direction,
    /// Bytes of each frame kept, 1 to [`MAX_SNAPLEN`].
    pub snaplen: u32,
    pub format: Format,
}

impl CaptureSpec {
    /// Both directions at `at`, [`DEFAULT_SNAPLEN`], pcap.
    pub fn at(at: End) -> CaptureSpec {
        CaptureSpec {
            at,
            direction: Direction::Both,
            snaplen: DEFAULT_SNAPLEN,
            format: Format::Pcap,
        }
    }

    /// Does the capture keep packets of `link` (0: up, 1: down)?
    pub fn sees(&self, link: usize) -> bool {
        match self.direction {
            Direction::Both => true,
            Direction::Up => link == 0,
            Direction::Down => link == 1,
        }
    }

    /// Is `link` (0: up, 1: down) seen where packets enter it (its
    /// sender's side) rather than where they leave it?
    pub fn at_entry(&self, link: usize) -> bool {
        (link == 0) == (self.at == End::Left)
    }

    /// The file's name in a run's results directory.
    pub fn file_name(&self) -> &'static str {
        match self.format {
            Format::Pcap => FILE_NAMES[0],
            Format::PcapNg => FILE_NAMES[1],
        }
    }
}

/// Every name a capture file has in a run's results directory.
pub const FILE_NAMES: [&str; 2] = ["capture.pcap", "capture.pcapng"];

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            End::Left => "left",
            End::Right => "right",
        })
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Up => "up",
            Direction::Down => "down",
            Direction::Both => "both",
        })
    }
}

impl fmt::Display for CaptureSpec {
    /// As a person reads it: `the left end, both directions, 128 bytes of
    /// each packet, pcap`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = match self.direction {
            Direction::Both => "both directions",
            Direction::Up => "up only",
            Direction::Down => "down only",
        };
        let format = match self.format {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
        };
        write!(
            f,
            "the {} end of the bottleneck, {dir}, {} bytes of each packet, {format}",
            self.at, self.snaplen
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_sees_its_own_links_entry_and_the_others_exit() {
        let left = CaptureSpec::at(End::Left);
        let right = CaptureSpec::at(End::Right);
        assert!(left.at_entry(0) && !left.at_entry(1));
        assert!(!right.at_entry(0) && right.at_entry(1));
    }

    #[test]
    fn a_direction_keeps_its_link_only() {
        let mut c = CaptureSpec::at(End::Left);
        assert!(c.sees(0) && c.sees(1));
        c.direction = Direction::Up;
        assert!(c.sees(0) && !c.sees(1));
        c.direction = Direction::Down;
        assert!(!c.sees(0) && c.sees(1));
    }
}
