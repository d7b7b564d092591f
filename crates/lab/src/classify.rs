//! The delay line's classifier: which flow an IP packet belongs to, read
//! from its headers, so that flows with different base RTTs can share one
//! bottleneck, as in the simulator's dumbbell (where each flow's `rtt` is
//! split into a pipe after the data bottleneck and one after the ACK
//! bottleneck).
//!
//! A flow is named by its protocol and its server's port (for ICMP echo,
//! the echo identifier): a TCP or UDP packet belongs to the flow whose port
//! is its destination port or, failing that, its source port, so that one
//! entry covers both directions of a connection to that server. The
//! client's port is ephemeral (Linux picks it from
//! `net.ipv4.ip_local_port_range`, 32768-60999 by default), which is why
//! servers should listen below 32768. Packets of no configured flow
//! (ARP is not an IP packet and never reaches a TUN; ICMP errors; other
//! ports) take no path of their own: only the link's delays apply.
//!
//! What else the delay line needs to know of a packet is read here too, in
//! the same pass over the header: whether it is ECN-capable, whether it is
//! a TCP segment carrying data (only those get the link's jitter, as in the
//! simulator), and a hash of its 5-tuple, FQ-CoDel's flow key (Linux's
//! `fq_codel` hashes the same fields with `skb_get_hash()`).

use std::time::Duration;

use crate::config::MAX_DELAY;
use crate::{ecn, Error};

/// The transport protocol a [`FlowPath`] matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    /// ICMP echo requests and replies, by their identifier.
    Icmp,
}

impl Proto {
    fn number(self) -> u8 {
        match self {
            Proto::Tcp => TCP,
            Proto::Udp => UDP,
            Proto::Icmp => ICMP,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
            Proto::Icmp => "ICMP",
        }
    }
}

/// One flow's own path through the delay line: extra one-way delays after
/// the bottleneck in each direction, on top of the link's own delay (its
/// pipes, in the simulator's words).
///
/// For a flow of base RTT `rtt` whose data goes forward (an upload), the
/// simulator's pipes are `forward: rtt / 2` (after the data bottleneck) and
/// `reverse: rtt - rtt / 2` (after the ACK bottleneck); for a download the
/// other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowPath {
    pub proto: Proto,
    /// The server's (listening) port for TCP and UDP, the echo identifier
    /// for ICMP.
    pub port: u16,
    /// Extra delay for its packets going forward (sender to receiver).
    pub forward: Duration,
    /// Extra delay for its packets going in reverse.
    pub reverse: Duration,
}

impl FlowPath {
    /// The extra delay in direction `lane` (0 forward, 1 reverse).
    pub(crate) fn extra(&self, lane: usize) -> Duration {
        [self.forward, self.reverse][lane]
    }
}

/// Checks the flows a lab is made with: each port once per protocol,
/// delays within the lab's limit, and no TCP or UDP port 0 (a server's
/// port is never 0).
pub(crate) fn validate(flows: &[FlowPath]) -> Result<(), Error> {
    if flows.len() >= usize::from(u16::MAX) {
        return Err(Error::invalid(format!(
            "{} flow paths are more than the delay line's {}; give fewer flows",
            flows.len(),
            u16::MAX - 1
        )));
    }
    for (i, f) in flows.iter().enumerate() {
        let name = f.proto.name();
        if f.port == 0 && f.proto != Proto::Icmp {
            return Err(Error::invalid(format!(
                "flow path {i} is {name} port 0, which no server listens on; give the \
                 server's port"
            )));
        }
        if let Some(j) = flows[..i]
            .iter()
            .position(|g| (g.proto, g.port) == (f.proto, f.port))
        {
            return Err(Error::invalid(format!(
                "flow paths {j} and {i} are both {name} port {}, so a packet could not tell \
                 them apart; give each flow its own port",
                f.port
            )));
        }
        for (way, d) in [("forward", f.forward), ("reverse", f.reverse)] {
            if d > MAX_DELAY {
                return Err(Error::invalid(format!(
                    "flow path {i}'s {way} delay of {d:?} is longer than the lab's limit of \
                     {MAX_DELAY:?}; give a shorter one-way delay"
                )));
            }
        }
    }
    Ok(())
}

const ICMP: u8 = 1;
const TCP: u8 = 6;
const UDP: u8 = 17;

/// What the delay line needs to know of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Class {
    /// Its flow's path: 0 for none, else 1 + the index in the lab's flows.
    pub path: u16,
    /// A hash of its 5-tuple (FQ-CoDel's flow key).
    pub flow: u32,
    /// ECT(0), ECT(1) or CE.
    pub ecn_capable: bool,
    /// A TCP segment with payload: the link's jitter applies to it.
    pub data: bool,
}

/// Maps (protocol, port) to a path, one table per protocol: a lookup is an
/// index, whatever the number of flows.
#[derive(Debug)]
pub(crate) struct Classifier {
    /// TCP, UDP, ICMP: 65536 entries each, 0 for no path.
    tables: [Box<[u16]>; 3],
}

impl Classifier {
    pub(crate) fn new(flows: &[FlowPath]) -> Classifier {
        let mut tables = [0, 1, 2].map(|_| vec![0u16; 1 << 16].into_boxed_slice());
        for (i, f) in flows.iter().enumerate() {
            tables[table(f.proto.number()).expect("a known protocol")][usize::from(f.port)] =
                i as u16 + 1;
        }
        Classifier { tables }
    }

    /// Reads an IPv4 packet's headers (anything else gets no path and hash
    /// 0).
    pub(crate) fn classify(&self, p: &[u8]) -> Class {
        let ecn_capable = ecn::ecn_capable(p);
        if p.len() < 20 || p[0] >> 4 != 4 {
            return Class {
                ecn_capable,
                ..Class::default()
            };
        }
        let ihl = usize::from(p[0] & 0x0f) * 4;
        let proto = p[9];
        let mut hash =
            mix(u64::from_be_bytes(p[12..20].try_into().expect("8 bytes"))) ^ u64::from(proto);
        // Only a first fragment (or an unfragmented packet) has the
        // transport header.
        let first = u16::from_be_bytes([p[6], p[7]]) & 0x1fff == 0;
        let l4 = &p[ihl.min(p.len())..];
        let mut class = Class {
            ecn_capable,
            ..Class::default()
        };
        let (Some(t), true) = (table(proto), first) else {
            class.flow = fold(mix(hash));
            return class;
        };
        let ports = match proto {
            TCP | UDP if l4.len() >= 4 => {
                let src = u16::from_be_bytes([l4[0], l4[1]]);
                let dst = u16::from_be_bytes([l4[2], l4[3]]);
                hash ^= u64::from(u32::from_be_bytes(l4[..4].try_into().expect("4 bytes"))) << 8;
                [dst, src]
            }
            // Echo reply (0) and request (8): the identifier.
            ICMP if l4.len() >= 8 && (l4[0] == 0 || l4[0] == 8) => {
                let id = u16::from_be_bytes([l4[4], l4[5]]);
                hash ^= u64::from(id) << 8;
                [id, id]
            }
            _ => {
                class.flow = fold(mix(hash));
                return class;
            }
        };
        class.flow = fold(mix(hash));
        let table = &self.tables[t];
        class.path = match table[usize::from(ports[0])] {
            0 => table[usize::from(ports[1])],
            path => path,
        };
        if proto == TCP && l4.len() >= 20 {
            let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
            let headers = ihl + usize::from(l4[12] >> 4) * 4;
            class.data = total > headers;
        }
        class
    }
}

fn table(proto: u8) -> Option<usize> {
    match proto {
        TCP => Some(0),
        UDP => Some(1),
        ICMP => Some(2),
        _ => None,
    }
}

/// SplitMix64's finalizer: every input bit reaches every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn fold(x: u64) -> u32 {
    (x ^ (x >> 32)) as u32
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An IPv4 packet: `proto`, ports (or ICMP type and id), `payload`
    /// bytes after a 20-byte TCP (8-byte UDP, ICMP) header, and `tos`.
    pub(crate) fn ipv4(proto: u8, a: u16, b: u16, payload: usize, tos: u8) -> Vec<u8> {
        let l4 = match proto {
            TCP => {
                let mut h = vec![0u8; 20];
                h[..2].copy_from_slice(&a.to_be_bytes());
                h[2..4].copy_from_slice(&b.to_be_bytes());
                h[12] = 5 << 4;
                h
            }
            UDP => {
                let mut h = vec![0u8; 8];
                h[..2].copy_from_slice(&a.to_be_bytes());
                h[2..4].copy_from_slice(&b.to_be_bytes());
                h
            }
            _ => {
                // a: the ICMP type, b: the identifier.
                let mut h = vec![a as u8, 0, 0, 0, 0, 0, 0, 1];
                h[4..6].copy_from_slice(&b.to_be_bytes());
                h
            }
        };
        let total = 20 + l4.len() + payload;
        let mut p = vec![
            0x45, tos, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 2, 198, 51, 100, 2,
        ];
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        let check = crate::ecn::tests::header_checksum(&p);
        p[10..12].copy_from_slice(&check.to_be_bytes());
        p.extend_from_slice(&l4);
        p.resize(total, 0xab);
        p
    }

    fn flows() -> Vec<FlowPath> {
        let ms = Duration::from_millis;
        vec![
            FlowPath {
                proto: Proto::Tcp,
                port: 5001,
                forward: ms(10),
                reverse: ms(10),
            },
            FlowPath {
                proto: Proto::Udp,
                port: 5001,
                forward: ms(1),
                reverse: ms(2),
            },
            FlowPath {
                proto: Proto::Icmp,
                port: 77,
                forward: ms(3),
                reverse: ms(4),
            },
        ]
    }

    #[test]
    fn a_flow_is_found_by_its_servers_port_either_way() {
        let c = Classifier::new(&flows());
        // To the server and back from it.
        assert_eq!(c.classify(&ipv4(TCP, 40000, 5001, 100, 0)).path, 1);
        assert_eq!(c.classify(&ipv4(TCP, 5001, 40000, 0, 0)).path, 1);
        assert_eq!(c.classify(&ipv4(UDP, 40000, 5001, 100, 0)).path, 2);
        // Echo request and reply with identifier 77.
        assert_eq!(c.classify(&ipv4(ICMP, 8, 77, 56, 0)).path, 3);
        assert_eq!(c.classify(&ipv4(ICMP, 0, 77, 56, 0)).path, 3);
        // Anything else: no path.
        assert_eq!(c.classify(&ipv4(TCP, 40000, 5002, 100, 0)).path, 0);
        assert_eq!(c.classify(&ipv4(ICMP, 8, 78, 56, 0)).path, 0);
        assert_eq!(c.classify(&ipv4(ICMP, 3, 77, 56, 0)).path, 0);
        let mut fragment = ipv4(UDP, 40000, 5001, 100, 0);
        fragment[7] = 1;
        assert_eq!(c.classify(&fragment).path, 0);
        // IPv6 (with ECT(0) here): no path, but ECN read.
        let v6 = c.classify(&[0x60; 60]);
        assert_eq!((v6.path, v6.ecn_capable), (0, true));
        assert_eq!(c.classify(&[0x45; 10]), Class::default());
    }

    #[test]
    fn data_ecn_and_the_flow_hash_are_read_in_the_same_pass() {
        let c = Classifier::new(&[]);
        let data = c.classify(&ipv4(TCP, 40000, 5001, 1448, 0b10));
        assert!(data.data && data.ecn_capable);
        let ack = c.classify(&ipv4(TCP, 5001, 40000, 0, 0));
        assert!(!ack.data && !ack.ecn_capable);
        assert!(!c.classify(&ipv4(UDP, 40000, 5001, 1000, 0)).data);
        // One connection, one hash, whichever packet; another connection,
        // another hash.
        let a = c.classify(&ipv4(TCP, 40000, 5001, 1448, 0)).flow;
        assert_eq!(a, c.classify(&ipv4(TCP, 40000, 5001, 10, 0b11)).flow);
        assert_ne!(a, c.classify(&ipv4(TCP, 40001, 5001, 1448, 0)).flow);
        assert_ne!(a, c.classify(&ipv4(UDP, 40000, 5001, 1448, 0)).flow);
    }

    #[test]
    fn bad_flow_paths_are_refused_in_one_sentence() {
        validate(&flows()).unwrap();
        let mut twice = flows();
        twice.push(twice[0]);
        assert_eq!(
            validate(&twice).unwrap_err().to_string(),
            "flow paths 0 and 3 are both TCP port 5001, so a packet could not tell them apart; \
             give each flow its own port"
        );
        let mut zero = flows();
        zero[1].port = 0;
        assert!(validate(&zero)
            .unwrap_err()
            .to_string()
            .starts_with("flow path 1 is UDP port 0"));
        let mut long = flows();
        long[2].reverse = Duration::from_secs(11);
        assert_eq!(
            validate(&long).unwrap_err().to_string(),
            "flow path 2's reverse delay of 11s is longer than the lab's limit of 10s; give a \
             shorter one-way delay"
        );
    }
}
