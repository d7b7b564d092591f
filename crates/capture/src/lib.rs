//! Packet captures of the links Kleinrock's two engines run: pcap or
//! pcapng files that Wireshark, tshark, tcpdump, tcptrace and captcp read,
//! with a packet's real Ethernet, IPv4 and TCP, UDP or ICMP headers.
//!
//! - [`spec`]: where a capture looks (which end of the dumbbell's
//!   bottleneck, which direction), its snap length and its file format,
//!   as a scenario's `[capture]` table or `--pcap` gives them.
//! - [`frame`]: the headers of a packet the simulator describes (it keeps
//!   no bytes), laid out and checksummed by etherparse; the lab's packets
//!   are real IP and only get an Ethernet header.
//! - [`writer`]: the file, through pcap-file, at nanosecond resolution.
//! - [`background`]: a writer on a thread of its own behind a bounded
//!   queue, for the lab's delay line, which must never wait for a disk;
//!   what it cannot queue is counted as dropped.

pub mod background;
pub mod frame;
pub mod spec;
pub mod writer;

pub use spec::{CaptureSpec, Direction, End, Format};
pub use writer::Writer;
