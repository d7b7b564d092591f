//! Frames from descriptions: the simulator keeps no bytes of a packet, only
//! what it means (a segment's index, an ACK's SACK blocks, its ECN bits),
//! so a capture of it lays out the headers a host would have sent:
//! Ethernet, IPv4 (DF, TTL 64, the ECN field), then TCP (sequence and
//! acknowledgement numbers, flags with ECE and CWR, window, options: MSS,
//! window scale and SACK-permitted on a SYN, SACK blocks after two NOPs as
//! Linux writes them), UDP, or an ICMP echo, each checksummed over a
//! payload of zeros of the packet's length, which is kept up to the snap
//! length. Laid out by etherparse. The lab's packets are real IP and get
//! only the Ethernet header ([`ethernet`]).
//!
//! The hosts are the lab's (docs/LAB.md, "Topology"), so that captures of
//! the two engines read alike: the left hosts are 192.0.2.2, the right
//! ones 198.51.100.2, with locally administered MACs.

use etherparse::{
    EtherType, Ethernet2Header, IcmpEchoHeader, Icmpv4Header, Icmpv4Type, IpEcn, IpNumber,
    Ipv4Header, TcpHeader, TcpOptionElement, UdpHeader,
};

/// A side's address on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Host {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

/// The left hosts: the lab's sender namespace's address.
pub const LEFT: Host = Host {
    mac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
    ip: [192, 0, 2, 2],
};

/// The right hosts: the lab's receiver namespace's address.
pub const RIGHT: Host = Host {
    mac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x02],
    ip: [198, 51, 100, 2],
};

/// The IP header's ECN field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ecn {
    #[default]
    NotEct,
    /// ECT(0), what Linux's classic ECN and DCTCP send.
    Ect0,
    Ce,
}

/// A TCP segment's header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tcp<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    /// The acknowledgement number; `None`: no ACK flag (a SYN only).
    pub ack: Option<u32>,
    pub syn: bool,
    pub ece: bool,
    pub cwr: bool,
    /// The window field as sent (already shifted by the scale).
    pub window: u16,
    /// SYN options.
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// SACK blocks as [left edge, right edge), at most four.
    pub sack: &'a [(u32, u32)],
}

/// What the IP packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport<'a> {
    Tcp(Tcp<'a>),
    Udp { src_port: u16, dst_port: u16 },
    EchoRequest { id: u16, seq: u16 },
    EchoReply { id: u16, seq: u16 },
}

/// A packet to lay out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Left to right (from [`LEFT`] to [`RIGHT`]), or the other way.
    pub up: bool,
    pub ecn: Ecn,
    pub transport: Transport<'a>,
    /// Bytes after the transport header (zeros here).
    pub payload: u32,
}

/// Zeros to checksum and copy as payload; no IPv4 payload is longer.
static ZEROS: [u8; 65_536] = [0; 65_536];

/// Why a packet cannot be laid out: it would not fit an IPv4 packet, or
/// its TCP options would not fit the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLong(pub String);

/// Lays out frames into a buffer it keeps (no allocation per frame once
/// the buffer has grown to the snap length).
#[derive(Default)]
pub struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    /// The frame of `p`: its first `keep` bytes (headers first, then as
    /// much of the payload as fits), and its whole length on the wire.
    pub fn build(&mut self, p: &Packet, keep: usize) -> Result<(&[u8], u32), TooLong> {
        let (src, dst) = if p.up { (LEFT, RIGHT) } else { (RIGHT, LEFT) };
        self.buf.clear();
        let payload = &ZEROS[..(p.payload as usize).min(ZEROS.len())];
        let eth = Ethernet2Header {
            source: src.mac,
            destination: dst.mac,
            ether_type: EtherType::IPV4,
        };
        self.buf.extend_from_slice(&eth.to_bytes());
        let (protocol, header, len) = transport_header(p, src.ip, dst.ip, payload)?;
        let transport = &header[..len];
        let ip_payload = transport.len() + payload.len();
        let mut ip = Ipv4Header::new(
            u16::try_from(ip_payload).unwrap_or(u16::MAX),
            64,
            protocol,
            src.ip,
            dst.ip,
        )
        .map_err(|e| TooLong(format!("an IPv4 payload of {ip_payload} bytes: {e}")))?;
        ip.ecn = match p.ecn {
            Ecn::NotEct => IpEcn::NotEct,
            Ecn::Ect0 => IpEcn::Ect0,
            Ecn::Ce => IpEcn::CongestionExperienced,
        };
        ip.header_checksum = ip.calc_header_checksum();
        self.buf.extend_from_slice(&ip.to_bytes());
        self.buf.extend_from_slice(transport);
        let total = self.buf.len() + payload.len();
        let room = keep.saturating_sub(self.buf.len());
        self.buf
            .extend_from_slice(&payload[..payload.len().min(room)]);
        self.buf.truncate(keep);
        Ok((&self.buf, total as u32))
    }
}

/// The transport header's bytes, checksummed, and their length.
fn transport_header(
    p: &Packet,
    src: [u8; 4],
    dst: [u8; 4],
    payload: &[u8],
) -> Result<(IpNumber, [u8; TcpHeader::MAX_LEN], usize), TooLong> {
    let mut out = [0u8; TcpHeader::MAX_LEN];
    let mut put = |bytes: &[u8]| {
        out[..bytes.len()].copy_from_slice(bytes);
        bytes.len()
    };
    let too_long = |what: &str| TooLong(format!("{what} over a {}-byte payload", payload.len()));
    let (protocol, len) = match p.transport {
        Transport::Tcp(t) => {
            let mut h = TcpHeader::new(t.src_port, t.dst_port, t.seq, t.window);
            h.syn = t.syn;
            h.ece = t.ece;
            h.cwr = t.cwr;
            if let Some(ack) = t.ack {
                h.ack = true;
                h.acknowledgment_number = ack;
            }
            let (options, n) = tcp_options(&t)?;
            h.set_options(&options[..n])
                .map_err(|e| TooLong(format!("TCP options: {e}")))?;
            if payload.len() > u16::MAX as usize - h.header_len() {
                return Err(too_long("a TCP header"));
            }
            // The payload is zeros, which add nothing to a ones'-complement
            // sum: the header's sum, with the pseudo-header's length
            // raised by the payload's (summing 1448 zeros was a third of
            // a frame's cost).
            let header_only = h
                .calc_checksum_ipv4_raw(src, dst, &[])
                .map_err(|_| too_long("a TCP header"))?;
            h.checksum = add_to_sum(header_only, payload.len() as u16);
            (IpNumber::TCP, put(&h.to_bytes()))
        }
        Transport::Udp { src_port, dst_port } => {
            let h = UdpHeader::with_ipv4_checksum(src_port, dst_port, &dummy_ip(src, dst), payload)
                .map_err(|_| too_long("a UDP header"))?;
            (IpNumber::UDP, put(&h.to_bytes()))
        }
        Transport::EchoRequest { id, seq } | Transport::EchoReply { id, seq } => {
            let echo = IcmpEchoHeader { id, seq };
            let kind = match p.transport {
                Transport::EchoRequest { .. } => Icmpv4Type::EchoRequest(echo),
                _ => Icmpv4Type::EchoReply(echo),
            };
            let h = Icmpv4Header::with_checksum(kind, payload);
            (IpNumber::ICMP, put(&h.to_bytes()))
        }
    };
    Ok((protocol, out, len))
}

/// The checksum `checksum` (a ones' complement of a sum) of a sum that
/// grows by `n`.
fn add_to_sum(checksum: u16, n: u16) -> u16 {
    let mut sum = u32::from(!checksum) + u32::from(n);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 header carrying only the addresses, for UDP's pseudo-header.
fn dummy_ip(src: [u8; 4], dst: [u8; 4]) -> Ipv4Header {
    Ipv4Header {
        source: src,
        destination: dst,
        ..Ipv4Header::default()
    }
}

/// The options as Linux lays them out (`tcp_options_write()`): on a SYN
/// MSS, then SACK-permitted after two NOPs, then the window scale after
/// one; SACK blocks after two NOPs.
fn tcp_options(t: &Tcp) -> Result<([TcpOptionElement; 8], usize), TooLong> {
    let mut o = [const { TcpOptionElement::Noop }; 8];
    let mut n = 0;
    let mut push = |e| {
        o[n] = e;
        n += 1;
    };
    if let Some(mss) = t.mss {
        push(TcpOptionElement::MaximumSegmentSize(mss));
    }
    if t.sack_permitted {
        push(TcpOptionElement::Noop);
        push(TcpOptionElement::Noop);
        push(TcpOptionElement::SelectiveAcknowledgementPermitted);
    }
    if let Some(shift) = t.window_scale {
        push(TcpOptionElement::Noop);
        push(TcpOptionElement::WindowScale(shift));
    }
    if let Some((&first, rest)) = t.sack.split_first() {
        if rest.len() > 3 {
            return Err(TooLong(format!(
                "{} SACK blocks (a TCP header holds at most 4)",
                t.sack.len()
            )));
        }
        let mut more = [None; 3];
        for (m, &b) in more.iter_mut().zip(rest) {
            *m = Some(b);
        }
        push(TcpOptionElement::Noop);
        push(TcpOptionElement::Noop);
        push(TcpOptionElement::SelectiveAcknowledgement(first, more));
    }
    Ok((o, n))
}

/// The Ethernet header of a real IP packet (the lab's), going up or down;
/// IPv4 or, by the version nibble, IPv6.
pub fn ethernet(up: bool, ip_packet: &[u8]) -> [u8; 14] {
    let (src, dst) = if up { (LEFT, RIGHT) } else { (RIGHT, LEFT) };
    let ether_type = match ip_packet.first().map(|b| b >> 4) {
        Some(6) => EtherType::IPV6,
        _ => EtherType::IPV4,
    };
    Ethernet2Header {
        source: src.mac,
        destination: dst.mac,
        ether_type,
    }
    .to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    fn segment(sack: &[(u32, u32)]) -> Packet<'_> {
        Packet {
            up: false,
            ecn: Ecn::Ce,
            transport: Transport::Tcp(Tcp {
                src_port: 20000,
                dst_port: 40000,
                seq: 7,
                ack: Some(1001),
                ece: true,
                window: 512,
                sack,
                ..Tcp::default()
            }),
            payload: 1448,
        }
    }

    #[test]
    fn a_segment_parses_back_to_what_it_was_built_from() {
        let mut b = Builder::default();
        let blocks = [(3001, 4001), (5001, 6001)];
        let (frame, len) = b.build(&segment(&blocks), 2000).unwrap();
        // Ethernet 14, IPv4 20, TCP 20 + NOP NOP SACK(2 + 16), payload.
        assert_eq!(len, 14 + 20 + 20 + 20 + 1448);
        assert_eq!(frame.len() as u32, len);
        let s = SlicedPacket::from_ethernet(frame).unwrap();
        let Some(NetSlice::Ipv4(ip)) = &s.net else {
            panic!("not IPv4")
        };
        assert_eq!(ip.header().source(), RIGHT.ip);
        assert_eq!(ip.header().ecn(), IpEcn::CongestionExperienced);
        assert_eq!(ip.header().total_len(), 20 + 40 + 1448);
        let Some(TransportSlice::Tcp(tcp)) = &s.transport else {
            panic!("not TCP")
        };
        let h = tcp.to_header();
        assert_eq!((h.sequence_number, h.acknowledgment_number), (7, 1001));
        assert!(h.ack && h.ece && !h.cwr && !h.syn);
        let opts: Vec<_> = h.options_iterator().map(|o| o.unwrap()).collect();
        assert_eq!(
            opts,
            [
                TcpOptionElement::Noop,
                TcpOptionElement::Noop,
                TcpOptionElement::SelectiveAcknowledgement(
                    (3001, 4001),
                    [Some((5001, 6001)), None, None]
                )
            ]
        );
        // The checksum verifies over the payload of zeros.
        assert_eq!(
            h.calc_checksum_ipv4_raw(RIGHT.ip, LEFT.ip, &ZEROS[..1448])
                .unwrap(),
            h.checksum
        );
        assert_eq!(ip.header().header_checksum(), {
            ip.header().to_header().calc_header_checksum()
        });
    }

    #[test]
    fn the_checksum_without_summing_zeros_is_etherparses_over_them() {
        let mut b = Builder::default();
        for payload in [0, 1, 2, 3, 536, 1448, 9000, 65_000] {
            for seq in [0, 1, 0xffff, 0x1234_5678, u32::MAX] {
                let blocks = [(seq, seq.wrapping_add(1448))];
                let mut p = segment(&blocks);
                p.payload = payload;
                if let Transport::Tcp(t) = &mut p.transport {
                    t.seq = seq;
                }
                let (frame, _) = b.build(&p, usize::MAX).unwrap();
                let s = SlicedPacket::from_ethernet(frame).unwrap();
                let Some(TransportSlice::Tcp(tcp)) = &s.transport else {
                    panic!("not TCP")
                };
                let h = tcp.to_header();
                let full = h
                    .calc_checksum_ipv4_raw(RIGHT.ip, LEFT.ip, &ZEROS[..payload as usize])
                    .unwrap();
                assert_eq!(h.checksum, full, "payload {payload}, seq {seq}");
            }
        }
    }

    #[test]
    fn the_snap_length_cuts_the_payload_and_then_the_headers() {
        let mut b = Builder::default();
        let (frame, len) = b.build(&segment(&[]), 128).unwrap();
        assert_eq!((frame.len(), len), (128, 14 + 20 + 20 + 1448));
        let (frame, _) = b.build(&segment(&[]), 20).unwrap();
        assert_eq!(frame.len(), 20);
    }

    #[test]
    fn five_sack_blocks_are_refused() {
        let mut b = Builder::default();
        let blocks = [(1, 2); 5];
        assert!(b.build(&segment(&blocks), 128).is_err());
    }

    #[test]
    fn a_syn_carries_its_options_in_linuxs_order() {
        let mut b = Builder::default();
        let syn = Packet {
            up: true,
            ecn: Ecn::NotEct,
            transport: Transport::Tcp(Tcp {
                src_port: 40000,
                dst_port: 20000,
                seq: 99,
                syn: true,
                ece: true,
                cwr: true,
                window: 65535,
                mss: Some(1448),
                window_scale: Some(7),
                sack_permitted: true,
                ..Tcp::default()
            }),
            payload: 0,
        };
        let (frame, len) = b.build(&syn, 128).unwrap();
        assert_eq!(len, 14 + 20 + 32);
        let s = SlicedPacket::from_ethernet(frame).unwrap();
        let Some(TransportSlice::Tcp(tcp)) = &s.transport else {
            panic!("not TCP")
        };
        let opts: Vec<_> = tcp.options_iterator().map(|o| o.unwrap()).collect();
        assert_eq!(
            opts,
            [
                TcpOptionElement::MaximumSegmentSize(1448),
                TcpOptionElement::Noop,
                TcpOptionElement::Noop,
                TcpOptionElement::SelectiveAcknowledgementPermitted,
                TcpOptionElement::Noop,
                TcpOptionElement::WindowScale(7),
            ]
        );
        assert!(tcp.syn() && !tcp.ack() && tcp.ece() && tcp.cwr());
    }

    #[test]
    fn udp_and_icmp_checksum_over_their_payload() {
        let mut b = Builder::default();
        let udp = Packet {
            up: true,
            ecn: Ecn::NotEct,
            transport: Transport::Udp {
                src_port: 40001,
                dst_port: 30000,
            },
            payload: 1472,
        };
        let (frame, len) = b.build(&udp, 2000).unwrap();
        assert_eq!(len, 14 + 1500);
        let s = SlicedPacket::from_ethernet(frame).unwrap();
        let Some(TransportSlice::Udp(u)) = &s.transport else {
            panic!("not UDP")
        };
        let h = u.to_header();
        assert_eq!(h.length, 1480);
        assert_eq!(
            h.calc_checksum_ipv4_raw(LEFT.ip, RIGHT.ip, &ZEROS[..1472])
                .unwrap(),
            h.checksum
        );
        let ping = Packet {
            transport: Transport::EchoReply { id: 1, seq: 5 },
            payload: 56,
            up: false,
            ..udp
        };
        let mut b = Builder::default();
        let (frame, len) = b.build(&ping, 2000).unwrap();
        assert_eq!(len, 14 + 84);
        let s = SlicedPacket::from_ethernet(frame).unwrap();
        let Some(TransportSlice::Icmpv4(i)) = &s.transport else {
            panic!("not ICMP")
        };
        assert_eq!(
            i.icmp_type(),
            Icmpv4Type::EchoReply(IcmpEchoHeader { id: 1, seq: 5 })
        );
        let mut again = i.header();
        let sent = again.checksum;
        again.update_checksum(i.payload());
        assert_eq!(again.checksum, sent);
    }
}
