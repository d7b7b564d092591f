//! A capture file: pcap (nanosecond timestamps, Ethernet) or pcapng (one
//! Ethernet interface at nanosecond resolution, a comment saying what was
//! captured, and an interface-statistics block at the end with the packets
//! the capture saw and those it could not keep), written through
//! pcap-file into a buffered file created by kleinrock-files (a regular
//! file of ours only, never through a link or into a device).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::interface_statistics::{
    InterfaceStatisticsBlock, InterfaceStatisticsOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};

use crate::spec::{CaptureSpec, Format};

/// Bytes buffered before a write to the file: a few hundred frames.
const BUFFER: usize = 1 << 20;

enum Inner {
    Pcap(PcapWriter<BufWriter<File>>),
    PcapNg(PcapNgWriter<BufWriter<File>>),
}

/// An open capture file.
pub struct Writer {
    inner: Inner,
    snaplen: u32,
    /// Packets written, and the time of the last (pcapng's statistics).
    packets: u64,
    last_ns: u64,
}

impl Writer {
    /// Creates (or replaces) the capture file at `path` as `spec` says;
    /// `comment` says what the capture is of (pcapng keeps it in the
    /// section header; pcap has no place for it).
    pub fn create(path: &Path, spec: &CaptureSpec, comment: &str) -> io::Result<Writer> {
        let file = BufWriter::with_capacity(BUFFER, kleinrock_files::replace(path)?);
        let inner = match spec.format {
            Format::Pcap => {
                let header = PcapHeader {
                    snaplen: spec.snaplen,
                    datalink: DataLink::ETHERNET,
                    ts_resolution: TsResolution::NanoSecond,
                    endianness: Endianness::native(),
                    ..PcapHeader::default()
                };
                Inner::Pcap(PcapWriter::with_header(file, header).map_err(io_error)?)
            }
            Format::PcapNg => {
                let section = SectionHeaderBlock {
                    endianness: Endianness::native(),
                    options: vec![
                        SectionHeaderOption::Comment(Cow::Owned(comment.to_string())),
                        SectionHeaderOption::UserApplication(Cow::Borrowed("kleinrock")),
                    ],
                    ..SectionHeaderBlock::default()
                };
                let mut w = PcapNgWriter::with_section_header(file, section).map_err(io_error)?;
                let interface = InterfaceDescriptionBlock {
                    linktype: DataLink::ETHERNET,
                    snaplen: spec.snaplen,
                    options: vec![
                        InterfaceDescriptionOption::IfName(Cow::Owned(format!("{}", spec.at))),
                        InterfaceDescriptionOption::IfDescription(Cow::Owned(spec.to_string())),
                        // Nanoseconds: 10^-9.
                        InterfaceDescriptionOption::IfTsResol(9),
                    ],
                };
                w.write_pcapng_block(interface).map_err(io_error)?;
                Inner::PcapNg(w)
            }
        };
        Ok(Writer {
            inner,
            snaplen: spec.snaplen,
            packets: 0,
            last_ns: 0,
        })
    }

    /// Writes one frame seen at `t_ns` (nanoseconds since the epoch the
    /// caller chose), `orig_len` bytes long on the wire, of which `frame`
    /// holds the first ones; at most the snap length is kept.
    pub fn write(&mut self, t_ns: u64, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let keep = frame
            .len()
            .min(self.snaplen as usize)
            .min(orig_len as usize);
        let data = &frame[..keep];
        let timestamp = Duration::from_nanos(t_ns);
        match &mut self.inner {
            Inner::Pcap(w) => {
                w.write_packet(&PcapPacket::new(timestamp, orig_len, data))
                    .map_err(io_error)?;
            }
            Inner::PcapNg(w) => {
                let block = EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp,
                    original_len: orig_len,
                    data: Cow::Borrowed(data),
                    options: Vec::new(),
                };
                w.write_pcapng_block(block).map_err(io_error)?;
            }
        }
        self.packets += 1;
        self.last_ns = t_ns;
        Ok(())
    }

    /// Flushes the file; pcapng ends with the interface's statistics: the
    /// packets seen (written and `dropped`) and the `dropped` ones, which
    /// the capture could not keep (pcap has no place for them: the caller
    /// says so).
    pub fn finish(self, dropped: u64) -> io::Result<()> {
        let mut file = match self.inner {
            Inner::Pcap(w) => w.into_writer(),
            Inner::PcapNg(mut w) => {
                let stats = InterfaceStatisticsBlock {
                    interface_id: 0,
                    timestamp: self.last_ns,
                    options: vec![
                        InterfaceStatisticsOption::IsbIfRecv(self.packets + dropped),
                        InterfaceStatisticsOption::IsbIfDrop(dropped),
                    ],
                };
                w.write_pcapng_block(stats).map_err(io_error)?;
                w.into_inner()
            }
        };
        file.flush()
    }
}

fn io_error(e: PcapError) -> io::Error {
    match e {
        PcapError::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}
