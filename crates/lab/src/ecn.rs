//! Setting Congestion Experienced on an ECN-capable IP packet (RFC 3168,
//! section 5): the ECN field is the low two bits of IPv4's TOS byte and of
//! IPv6's traffic class. IPv4's header checksum is updated incrementally
//! (RFC 1624, equation 3) rather than recomputed; IPv6 has none.
//!
//! Whether to mark is the queue's decision (`kleinrock-link`, the
//! simulator's queues); this file reads whether a packet may be marked and
//! does the editing that carries a mark out.

/// The ECN field's values.
const NOT_ECT: u8 = 0b00;
const CE: u8 = 0b11;

/// Is the packet (IPv4 or IPv6, from its first byte) ECN-capable: ECT(0),
/// ECT(1) or CE? Only such a packet is ever marked instead of dropped.
pub(crate) fn ecn_capable(packet: &[u8]) -> bool {
    ecn_field(packet).is_some_and(|ecn| ecn != NOT_ECT)
}

/// The ECN field of an IPv4 or IPv6 packet (from its first byte); `None`
/// for anything else, or a packet too short to hold its IP header.
fn ecn_field(packet: &[u8]) -> Option<u8> {
    match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => Some(packet[1] & 0b11),
        // Traffic class: the low nibble of byte 0 and the high nibble of
        // byte 1; its ECN bits are bits 4 and 5 of byte 1.
        Some(6) if packet.len() >= 40 => Some((packet[1] >> 4) & 0b11),
        _ => None,
    }
}

/// What [`mark_ce`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marked {
    /// The packet was ECT(0) or ECT(1) and now carries CE.
    Now,
    /// It already carried CE.
    Already,
    /// Not-ECT, or not an IP packet: left alone (a marking queue drops
    /// such a packet only when it is full, as for everything else).
    NotEct,
}

/// Sets CE on `packet` (an IPv4 or IPv6 packet from its first byte) if it
/// is ECN-capable.
pub(crate) fn mark_ce(packet: &mut [u8]) -> Marked {
    match ecn_field(packet) {
        None | Some(NOT_ECT) => Marked::NotEct,
        Some(CE) => Marked::Already,
        Some(_) if packet[0] >> 4 == 4 => {
            let old = u16::from_be_bytes([packet[0], packet[1]]);
            packet[1] |= CE;
            let new = u16::from_be_bytes([packet[0], packet[1]]);
            let check = u16::from_be_bytes([packet[10], packet[11]]);
            packet[10..12].copy_from_slice(&checksum_update(check, old, new).to_be_bytes());
            Marked::Now
        }
        Some(_) => {
            packet[1] |= CE << 4;
            Marked::Now
        }
    }
}

/// RFC 1624 equation 3: HC' = ~(~HC + ~m + m'), in ones' complement
/// arithmetic, when one 16-bit word of the header changes from m to m'.
fn checksum_update(check: u16, old: u16, new: u16) -> u16 {
    let sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    !fold(sum)
}

/// Folds the carries of a ones' complement sum back into 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The checksum of an IPv4 header computed from scratch (RFC 791), as
    /// the independent reference.
    pub(crate) fn header_checksum(header: &[u8]) -> u16 {
        let sum = header
            .chunks(2)
            .enumerate()
            .filter(|(i, _)| *i != 5)
            .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        !fold(sum)
    }

    fn ipv4(tos: u8, id: u16, ttl: u8) -> Vec<u8> {
        let mut h = vec![
            0x45, tos, 0x05, 0xdc, 0, 0, 0x40, 0x00, ttl, 6, 0, 0, 192, 0, 2, 2, 198, 51, 100, 2,
        ];
        h[4..6].copy_from_slice(&id.to_be_bytes());
        let c = header_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(&[0xab; 32]);
        h
    }

    #[test]
    fn ect_ipv4_gets_ce_and_a_checksum_that_verifies() {
        // Every DSCP with both ECT codepoints, over headers whose checksums
        // take different carry paths.
        for dscp in 0..64u8 {
            for ect in [0b01, 0b10] {
                for (id, ttl) in [(0, 1), (0x1234, 63), (0xffff, 255), (0xfffe, 64)] {
                    let mut p = ipv4(dscp << 2 | ect, id, ttl);
                    let before = p.clone();
                    assert_eq!(mark_ce(&mut p), Marked::Now);
                    assert_eq!(p[1], dscp << 2 | CE);
                    assert_eq!(
                        u16::from_be_bytes([p[10], p[11]]),
                        header_checksum(&p[..20]),
                        "tos {:#x} id {id:#x}",
                        before[1]
                    );
                    assert_eq!(p[..1], before[..1]);
                    assert_eq!(p[2..10], before[2..10]);
                    assert_eq!(p[12..], before[12..]);
                }
            }
        }
    }

    #[test]
    fn the_update_agrees_with_linux_ip_ecn_set_ce() {
        // include/net/inet_ecn.h: IP_ECN_set_ce adds 0xFFFE (ECT(0)) or
        // 0xFFFD (ECT(1)), minus one or two in ones' complement, to the
        // stored checksum with csum16_add's end-around carry.
        for (ect, add) in [(0b10u8, 0xfffeu16), (0b01, 0xfffd)] {
            for id in (0..=0xffffu16).step_by(97) {
                let mut p = ipv4(ect, id, 64);
                let stored = u16::from_be_bytes([p[10], p[11]]);
                let (sum, carry) = stored.overflowing_add(add);
                let linux = sum + u16::from(carry);
                mark_ce(&mut p);
                assert_eq!(u16::from_be_bytes([p[10], p[11]]), linux, "id {id:#x}");
            }
        }
    }

    #[test]
    fn not_ect_and_ce_are_left_alone() {
        let mut p = ipv4(0xb8, 7, 64);
        let before = p.clone();
        assert_eq!(mark_ce(&mut p), Marked::NotEct);
        assert_eq!(p, before);
        let mut p = ipv4(0xb8 | CE, 7, 64);
        let before = p.clone();
        assert_eq!(mark_ce(&mut p), Marked::Already);
        assert_eq!(p, before);
    }

    #[test]
    fn ipv6_traffic_class_is_marked_without_a_checksum() {
        // Version 6, traffic class 0xa2 (DSCP 40, ECT(0)), flow label 0x12345.
        let mut p = vec![0x6a, 0x21, 0x23, 0x45];
        p.resize(60, 0);
        assert_eq!(mark_ce(&mut p), Marked::Now);
        assert_eq!(&p[..4], &[0x6a, 0x31, 0x23, 0x45]);
        assert_eq!(mark_ce(&mut p), Marked::Already);
        let mut not_ect = vec![0x6a, 0x01, 0x23, 0x45];
        not_ect.resize(60, 0);
        assert_eq!(mark_ce(&mut not_ect), Marked::NotEct);
    }

    #[test]
    fn ecn_capable_means_ect_or_ce_in_the_header() {
        for (tos, capable) in [(0xb8, false), (0xb9, true), (0xba, true), (0xbb, true)] {
            assert_eq!(ecn_capable(&ipv4(tos, 7, 64)), capable, "tos {tos:#x}");
        }
        let mut v6 = vec![0x60, 0x10, 0, 0];
        v6.resize(40, 0);
        assert!(ecn_capable(&v6));
        for runt in [vec![], vec![0x45, 0x02], vec![0x60, 0x20, 0, 0]] {
            assert!(!ecn_capable(&runt));
        }
    }

    #[test]
    fn runts_and_other_protocols_are_not_touched() {
        for mut p in [
            vec![],
            vec![0x45, 0x02],
            vec![0x60, 0x20, 0, 0],
            vec![0x12; 40],
        ] {
            let before = p.clone();
            assert_eq!(mark_ce(&mut p), Marked::NotEct);
            assert_eq!(p, before);
        }
    }
}
