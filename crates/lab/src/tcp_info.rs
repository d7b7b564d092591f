//! A TCP socket's state as getsockopt(TCP_INFO) reports it: the evidence a
//! lab test looks at to know that the link did what it was set to do (an
//! RTO fired, ECE came back for CE marks), and what the live engine
//! samples into its results. `struct tcp_info` is declared here from the
//! kernel's uapi header (`include/uapi/linux/tcp.h`, append-only since
//! 2.6) rather than taken from libc, whose declaration differs between
//! libcs (musl's ends before `tcpi_total_rto`) and lags the kernel. A field
//! the running kernel does not fill in (it returns a shorter struct) is
//! `None`.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsFd, AsRawFd};

/// TCPI_OPT_ECN: ECN was negotiated at the handshake.
const OPT_ECN: u8 = 8;

/// A snapshot of a TCP socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpInfo {
    /// `tcpi_ca_state`: 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss.
    pub ca_state: u8,
    /// ECN was negotiated on this connection.
    pub ecn: bool,
    /// The sender's MSS, bytes.
    pub snd_mss: u32,
    /// Congestion window, in packets.
    pub snd_cwnd: u32,
    /// Slow-start threshold, in packets.
    pub snd_ssthresh: u32,
    /// Smoothed RTT, in microseconds.
    pub rtt_us: u32,
    /// Minimum RTT seen, in microseconds.
    pub min_rtt_us: u32,
    /// `tcp_packets_in_flight()`: packets out, less SACKed and lost, plus
    /// retransmitted.
    pub in_flight: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Bytes/s; `~0` when unset.
    pub pacing_rate: u64,
    /// The last rate sample, bytes/s.
    pub delivery_rate: u64,
    /// Data segments sent, retransmissions included.
    pub data_segs_out: u32,
    /// Bytes the peer has acknowledged.
    pub bytes_acked: u64,
    /// Bytes received in order.
    pub bytes_received: u64,
    /// Packets delivered, as the sender counts them.
    pub delivered: u32,
    /// Of those, the ones the peer echoed as CE-marked (ECE).
    pub delivered_ce: u32,
    /// RTO expirations, the SYN's included (Linux 6.7 and later).
    pub total_rto: Option<u16>,
    /// Recoveries begun by an RTO (Linux 6.7 and later).
    pub total_rto_recoveries: Option<u16>,
}

impl TcpInfo {
    /// Reads TCP_INFO from `socket` (a `TcpStream`, or any TCP socket).
    pub fn of(socket: &impl AsFd) -> io::Result<TcpInfo> {
        let mut raw = RawTcpInfo::default();
        let mut len = size_of::<RawTcpInfo>() as libc::socklen_t;
        // SAFETY: raw and len are valid for the call; the kernel writes at
        // most len bytes.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_fd().as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut raw as *mut RawTcpInfo).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TcpInfo::from_raw(&raw, len as usize))
    }

    /// `raw`, of which the kernel filled the first `len` bytes.
    fn from_raw(raw: &RawTcpInfo, len: usize) -> TcpInfo {
        let has = |offset: usize, size: usize| len >= offset + size;
        TcpInfo {
            ca_state: raw.ca_state,
            ecn: raw.options & OPT_ECN != 0,
            snd_mss: raw.snd_mss,
            snd_cwnd: raw.snd_cwnd,
            snd_ssthresh: raw.snd_ssthresh,
            rtt_us: raw.rtt,
            min_rtt_us: raw.min_rtt,
            in_flight: (raw.unacked + raw.retrans).saturating_sub(raw.sacked + raw.lost),
            total_retrans: raw.total_retrans,
            pacing_rate: raw.pacing_rate,
            delivery_rate: raw.delivery_rate,
            data_segs_out: raw.data_segs_out,
            bytes_acked: raw.bytes_acked,
            bytes_received: raw.bytes_received,
            delivered: raw.delivered,
            delivered_ce: raw.delivered_ce,
            total_rto: has(offset_of!(RawTcpInfo, total_rto), 2).then_some(raw.total_rto),
            total_rto_recoveries: has(offset_of!(RawTcpInfo, total_rto_recoveries), 2)
                .then_some(raw.total_rto_recoveries),
        }
    }
}

/// `struct tcp_info` of Linux 6.7 and later, up to `tcpi_total_rto_time`
/// (include/uapi/linux/tcp.h). An older kernel fills a prefix; the length
/// it returned says which fields are real.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    app_limited: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
    rcv_wnd: u32,
    rehash: u32,
    total_rto: u16,
    total_rto_recoveries: u16,
    total_rto_time: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_is_laid_out_as_the_kernels() {
        // Offsets from include/uapi/linux/tcp.h, counted by hand.
        assert_eq!(offset_of!(RawTcpInfo, rto), 8);
        assert_eq!(offset_of!(RawTcpInfo, rtt), 68);
        assert_eq!(offset_of!(RawTcpInfo, total_retrans), 100);
        assert_eq!(offset_of!(RawTcpInfo, pacing_rate), 104);
        assert_eq!(offset_of!(RawTcpInfo, data_segs_out), 156);
        assert_eq!(offset_of!(RawTcpInfo, delivery_rate), 160);
        assert_eq!(offset_of!(RawTcpInfo, delivered), 192);
        assert_eq!(offset_of!(RawTcpInfo, rehash), 236);
        assert_eq!(offset_of!(RawTcpInfo, total_rto), 240);
        assert_eq!(size_of::<RawTcpInfo>(), 248);
    }
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn fields_a_short_answer_leaves_out_are_none() {
        let raw = RawTcpInfo {
            total_rto: 3,
            total_rto_recoveries: 2,
            options: OPT_ECN | 1,
            ..RawTcpInfo::default()
        };
        // Linux 6.6 ends at tcpi_rehash, 236 + 4 bytes.
        let old = TcpInfo::from_raw(&raw, 240);
        assert_eq!((old.total_rto, old.total_rto_recoveries), (None, None));
        assert!(old.ecn);
        let new = TcpInfo::from_raw(&raw, 248);
        assert_eq!(
            (new.total_rto, new.total_rto_recoveries),
            (Some(3), Some(2))
        );
    }

    #[test]
    fn a_loopback_connection_reports_what_it_carried() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        tx.write_all(&[7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        rx.read_exact(&mut got).unwrap();
        let rx_info = TcpInfo::of(&rx).unwrap();
        assert_eq!(rx_info.bytes_received, 100_000);
        let tx_info = TcpInfo::of(&tx).unwrap();
        // Linux's initial window is 10 packets, and loopback loses nothing.
        assert!(tx_info.snd_cwnd >= 10, "{tx_info:?}");
        assert_eq!(tx_info.total_retrans, 0);
        assert!(matches!(tx_info.total_rto, None | Some(0)), "{tx_info:?}");
    }
}
