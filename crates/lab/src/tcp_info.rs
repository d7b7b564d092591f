//! A TCP socket's state as getsockopt(TCP_INFO) reports it: the evidence a
//! lab test looks at to know that the link did what it was set to do (an
//! RTO fired, ECE came back for CE marks). A field the running kernel does
//! not fill in (it returns a shorter `struct tcp_info` than libc knows) is
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
    /// Congestion window, in packets.
    pub snd_cwnd: u32,
    /// Slow-start threshold, in packets.
    pub snd_ssthresh: u32,
    /// Smoothed RTT, in microseconds.
    pub rtt_us: u32,
    /// Minimum RTT seen, in microseconds.
    pub min_rtt_us: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
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
        // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
        let mut raw: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: raw and len are valid for the call; the kernel writes at
        // most len bytes.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_fd().as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut raw as *mut libc::tcp_info).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TcpInfo::from_raw(&raw, len as usize))
    }

    /// `raw`, of which the kernel filled the first `len` bytes.
    fn from_raw(raw: &libc::tcp_info, len: usize) -> TcpInfo {
        let has = |offset: usize, size: usize| len >= offset + size;
        TcpInfo {
            ca_state: raw.tcpi_ca_state,
            ecn: raw.tcpi_options & OPT_ECN != 0,
            snd_cwnd: raw.tcpi_snd_cwnd,
            snd_ssthresh: raw.tcpi_snd_ssthresh,
            rtt_us: raw.tcpi_rtt,
            min_rtt_us: raw.tcpi_min_rtt,
            total_retrans: raw.tcpi_total_retrans,
            bytes_acked: raw.tcpi_bytes_acked,
            bytes_received: raw.tcpi_bytes_received,
            delivered: raw.tcpi_delivered,
            delivered_ce: raw.tcpi_delivered_ce,
            total_rto: has(offset_of!(libc::tcp_info, tcpi_total_rto), 2)
                .then_some(raw.tcpi_total_rto),
            total_rto_recoveries: has(offset_of!(libc::tcp_info, tcpi_total_rto_recoveries), 2)
                .then_some(raw.tcpi_total_rto_recoveries),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn fields_a_short_answer_leaves_out_are_none() {
        // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
        let mut raw: libc::tcp_info = unsafe { std::mem::zeroed() };
        raw.tcpi_total_rto = 3;
        raw.tcpi_total_rto_recoveries = 2;
        raw.tcpi_options = OPT_ECN | 1;
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
