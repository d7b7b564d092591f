//! The binary trace record of `src/bpf/trace.bpf.h`, decoded into what a
//! trace row holds: the hook call, the connection state before and after,
//! the return value and the raw private area.
//!
//! The layout is `struct kr_trace_rec`, member for member, in the host's
//! byte order (the record never leaves the machine that wrote it). Its
//! first member is the C `sizeof`, so a record from a program built with
//! another layout is refused instead of misread.

use kleinrock_cc::{AckSample, CaEvent, CaState, Hook, PacingStatus, RateSample, Sock};

/// `sizeof(struct kr_trace_rec)`.
pub const RECORD_SIZE: usize = 656;

/// `ICSK_CA_PRIV_SIZE`: the algorithm's private area, bytes.
pub const CA_PRIV_SIZE: usize = 104;

/// A connection as the records name it: IPv4 addresses in network order
/// (zero for IPv6) and ports in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conn {
    pub saddr: [u8; 4],
    pub sport: u16,
    pub daddr: [u8; 4],
    pub dport: u16,
}

impl std::fmt::Display for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d] = self.saddr;
        let [w, x, y, z] = self.daddr;
        write!(
            f,
            "{a}.{b}.{c}.{d}:{} -> {w}.{x}.{y}.{z}:{}",
            self.sport, self.dport
        )
    }
}

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub conn: Conn,
    /// `bpf_ktime_get_ns()` at the hook's entry.
    pub ts_ns: u64,
    pub hook: Hook,
    pub pre: Sock,
    pub post: Sock,
    pub ret: u32,
    pub pre_ca: [u8; CA_PRIV_SIZE],
    pub post_ca: [u8; CA_PRIV_SIZE],
}

/// Why a record could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// The record is not `RECORD_SIZE` bytes or says another size: the BPF
    /// program and this kleinrock were built from different sources.
    Layout { got: usize, says: u32 },
    /// A hook number or argument outside what the kernel passes.
    Value(String),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Layout { got, says } => write!(
                f,
                "a trace record of {got} bytes (it says {says}) where {RECORD_SIZE} were \
                 expected: the loaded BPF program and this kleinrock come from different \
                 builds; unload it and load it again with this kleinrock"
            ),
            RecordError::Value(why) => f.write_str(why),
        }
    }
}

/// Reads the record's members in declaration order.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[self.at..self.at + N]);
        self.at += N;
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_ne_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_ne_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_ne_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_ne_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_ne_bytes(self.take())
    }
    fn skip(&mut self, n: usize) {
        self.at += n;
    }
}

/// `struct kr_sock_state` into a [`Sock`] with a `hz` jiffies clock.
fn sock_state(f: &mut Fields<'_>, hz: u32) -> Result<Sock, RecordError> {
    let mut s = Sock::new(hz);
    s.tcp_mstamp = f.u64();
    s.tcp_clock_cache = f.u64();
    s.tcp_wstamp_ns = f.u64();
    s.delivered_mstamp = f.u64();
    s.pacing_rate = f.u64();
    s.max_pacing_rate = f.u64();
    s.snd_cwnd = f.u32();
    s.snd_ssthresh = f.u32();
    s.snd_cwnd_cnt = f.u32();
    s.snd_cwnd_clamp = f.u32();
    s.snd_cwnd_stamp = f.u32();
    s.prior_cwnd = f.u32();
    s.srtt_us = f.u32();
    s.min_rtt_us = f.u32();
    s.packets_out = f.u32();
    s.sacked_out = f.u32();
    s.lost_out = f.u32();
    s.retrans_out = f.u32();
    s.max_packets_out = f.u32();
    s.snd_una = f.u32();
    s.snd_nxt = f.u32();
    s.rcv_nxt = f.u32();
    s.high_seq = f.u32();
    s.lsndtime = f.u32();
    s.delivered = f.u32();
    s.delivered_ce = f.u32();
    s.lost = f.u32();
    s.app_limited = f.u32();
    s.mss_cache = f.u32();
    s.gso_max_size = f.u32();
    s.gso_max_segs = f.u32();
    s.jiffies = f.u32();
    s.is_cwnd_limited = f.u8() != 0;
    let state = f.u8();
    s.icsk_ca_state = CaState::from_u8(state)
        .ok_or_else(|| RecordError::Value(format!("icsk_ca_state {state} is not 0-4")))?;
    s.rate_app_limited = f.u8() != 0;
    let pacing = f.u8();
    s.pacing_status = PacingStatus::from_u8(pacing)
        .ok_or_else(|| RecordError::Value(format!("sk_pacing_status {pacing} is not 0-2")))?;
    s.pacing_shift = f.u8();
    s.ecn_flags = f.u8();
    s.icsk_ack_pending = f.u8();
    f.skip(1);
    Ok(s)
}

/// Decodes one ring-buffer record, with jiffies counted at `hz`.
pub fn decode(bytes: &[u8], hz: u32) -> Result<Record, RecordError> {
    let says = bytes
        .get(..4)
        .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
        .unwrap_or(0);
    if bytes.len() != RECORD_SIZE || says as usize != RECORD_SIZE {
        return Err(RecordError::Layout {
            got: bytes.len(),
            says,
        });
    }
    let mut f = Fields { bytes, at: 4 };
    let hook = f.u32();
    let ts_ns = f.u64();
    let saddr = f.take::<4>();
    let daddr = f.take::<4>();
    let sport = f.u16();
    let dport = f.u16();
    let ret = f.u32();
    let arg_ack = f.u32();
    let arg_acked = f.u32();
    let arg_u = f.u32();
    let arg_flag = f.i32();
    let sample = AckSample {
        pkts_acked: f.u32(),
        rtt_us: f.i32(),
        in_flight: f.u32(),
    };
    f.skip(4);
    let prior_mstamp = f.u64();
    let interval_us = f.i64();
    let rtt_us = f.i64();
    let rs = RateSample {
        prior_mstamp,
        interval_us,
        rtt_us,
        prior_delivered: f.u32(),
        delivered: f.i32(),
        snd_interval_us: f.u32(),
        rcv_interval_us: f.u32(),
        losses: f.i32(),
        acked_sacked: f.u32(),
        prior_in_flight: f.u32(),
        last_end_seq: f.u32(),
        is_app_limited: f.u8() != 0,
        is_retrans: f.u8() != 0,
        is_ack_delayed: f.u8() != 0,
        prior_delivered_ce: 0,
        delivered_ce: 0,
    };
    f.skip(5);
    let pre = sock_state(&mut f, hz)?;
    let post = sock_state(&mut f, hz)?;
    let pre_ca = f.take::<CA_PRIV_SIZE>();
    let post_ca = f.take::<CA_PRIV_SIZE>();
    debug_assert_eq!(f.at, RECORD_SIZE);
    let hook = match hook {
        0 => Hook::Init,
        1 => Hook::Release,
        2 => Hook::Ssthresh,
        3 => Hook::CongAvoid {
            ack: arg_ack,
            acked: arg_acked,
        },
        4 => Hook::PktsAcked(sample),
        5 => Hook::SetState(
            u8::try_from(arg_u)
                .ok()
                .and_then(CaState::from_u8)
                .ok_or_else(|| RecordError::Value(format!("set_state to {arg_u}, not 0-4")))?,
        ),
        6 => Hook::CwndEvent(
            u8::try_from(arg_u)
                .ok()
                .and_then(CaEvent::from_u8)
                .ok_or_else(|| RecordError::Value(format!("cwnd_event {arg_u}, not 0-5")))?,
        ),
        7 => Hook::InAckEvent(arg_u),
        8 => Hook::UndoCwnd,
        9 => Hook::CongControl {
            ack: arg_ack,
            flag: arg_flag as u32,
            rs,
        },
        n => return Err(RecordError::Value(format!("hook number {n} is not 0-9"))),
    };
    Ok(Record {
        conn: Conn {
            saddr,
            sport,
            daddr,
            dport,
        },
        ts_ns,
        hook,
        pre,
        post,
        ret,
        pre_ca,
        post_ca,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a record the way the BPF program lays it out.
    struct Builder(Vec<u8>);

    impl Builder {
        fn u8(&mut self, v: u8) -> &mut Self {
            self.0.push(v);
            self
        }
        fn u16(&mut self, v: u16) -> &mut Self {
            self.0.extend(v.to_ne_bytes());
            self
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.0.extend(v.to_ne_bytes());
            self
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.0.extend(v.to_ne_bytes());
            self
        }
        fn zeros(&mut self, n: usize) -> &mut Self {
            self.0.extend(std::iter::repeat_n(0, n));
            self
        }
        /// A kr_sock_state whose every member is `base` + its index.
        fn state(&mut self, base: u32) -> &mut Self {
            for i in 0..6 {
                self.u64((base + i) as u64);
            }
            for i in 6..32 {
                self.u32(base + i);
            }
            // is_cwnd_limited, Recovery, rate_app_limited, NEEDED, shift 10,
            // ecn_flags, ack pending, pad
            self.u8(1).u8(3).u8(1).u8(1).u8(10).u8(5).u8(1).u8(0)
        }
    }

    fn record(hook: u32, arg_u: u32) -> Vec<u8> {
        let mut b = Builder(Vec::new());
        b.u32(RECORD_SIZE as u32).u32(hook).u64(123_456_789);
        b.u32(u32::from_ne_bytes([10, 0, 0, 1]))
            .u32(u32::from_ne_bytes([10, 0, 1, 2]));
        b.u16(40_000).u16(5201).u32(77);
        b.u32(1000).u32(3).u32(arg_u).u32(0x4000); // ack, acked, u, flag
        b.u32(2).u32(-1i32 as u32).u32(9).u32(0); // ack_sample, pad
        b.u64(11).u64(-1i64 as u64).u64(250); // rs: mstamp, interval, rtt
        for v in [12u32, 13, 14, 15, 16, 17, 18, 19] {
            b.u32(v);
        }
        b.u8(1).u8(0).u8(1).zeros(5);
        b.state(100).state(200);
        let ca: Vec<u8> = (0..CA_PRIV_SIZE as u8).collect();
        b.0.extend(&ca);
        b.0.extend(ca.iter().map(|x| x ^ 0xff));
        assert_eq!(b.0.len(), RECORD_SIZE);
        b.0
    }

    #[test]
    fn every_member_lands_in_its_field() {
        let r = decode(&record(9, 0), 250).unwrap();
        assert_eq!(r.conn.to_string(), "10.0.0.1:40000 -> 10.0.1.2:5201");
        assert_eq!(r.ts_ns, 123_456_789);
        assert_eq!(r.ret, 77);
        let Hook::CongControl { ack, flag, rs } = r.hook else {
            panic!("not cong_control: {:?}", r.hook)
        };
        assert_eq!((ack, flag), (1000, 0x4000));
        assert_eq!((rs.prior_mstamp, rs.interval_us, rs.rtt_us), (11, -1, 250));
        assert_eq!(
            (rs.prior_delivered, rs.delivered, rs.losses, rs.last_end_seq),
            (12, 13, 16, 19)
        );
        assert!(rs.is_app_limited && !rs.is_retrans && rs.is_ack_delayed);
        assert_eq!(r.pre.tcp_mstamp, 100);
        assert_eq!(r.pre.max_pacing_rate, 105);
        assert_eq!(r.pre.snd_cwnd, 106);
        assert_eq!(r.pre.min_rtt_us, 113);
        assert_eq!(r.pre.jiffies, 131);
        assert_eq!(r.post.snd_cwnd, 206);
        assert_eq!(r.post.gso_max_segs, 230);
        assert!(r.pre.is_cwnd_limited && r.pre.rate_app_limited);
        assert_eq!(r.pre.icsk_ca_state, CaState::Recovery);
        assert_eq!(r.pre.pacing_status, PacingStatus::Needed);
        assert_eq!((r.pre.pacing_shift, r.pre.ecn_flags), (10, 5));
        assert_eq!(r.pre.icsk_ack_pending, 1);
        assert_eq!(r.pre.hz, 250);
        assert_eq!(r.pre_ca[0..3], [0, 1, 2]);
        assert_eq!(r.post_ca[103], 103 ^ 0xff);
    }

    #[test]
    fn hook_arguments() {
        let r = decode(&record(4, 0), 250).unwrap();
        assert_eq!(
            r.hook,
            Hook::PktsAcked(AckSample {
                pkts_acked: 2,
                rtt_us: -1,
                in_flight: 9
            })
        );
        let r = decode(&record(3, 0), 250).unwrap();
        assert_eq!(
            r.hook,
            Hook::CongAvoid {
                ack: 1000,
                acked: 3
            }
        );
        let r = decode(&record(5, 4), 250).unwrap();
        assert_eq!(r.hook, Hook::SetState(CaState::Loss));
        let r = decode(&record(6, 5), 250).unwrap();
        assert_eq!(r.hook, Hook::CwndEvent(CaEvent::EcnIsCe));
        assert_eq!(
            decode(&record(7, 6), 250).unwrap().hook,
            Hook::InAckEvent(6)
        );
    }

    #[test]
    fn values_the_kernel_never_passes_are_refused() {
        assert!(matches!(
            decode(&record(10, 0), 250),
            Err(RecordError::Value(_))
        ));
        assert!(matches!(
            decode(&record(5, 7), 250),
            Err(RecordError::Value(_))
        ));
        assert!(matches!(
            decode(&record(6, 6), 250),
            Err(RecordError::Value(_))
        ));
    }

    #[test]
    fn a_record_of_another_layout_is_refused() {
        let mut r = record(0, 0);
        r.push(0);
        let e = decode(&r, 250).unwrap_err();
        assert!(e.to_string().contains("different builds"), "{e}");
        let mut r = record(0, 0);
        r[..4].copy_from_slice(&1u32.to_ne_bytes());
        assert!(matches!(
            decode(&r, 250),
            Err(RecordError::Layout { says: 1, .. })
        ));
        assert!(matches!(
            decode(&[], 250),
            Err(RecordError::Layout { got: 0, says: 0 })
        ));
    }
}
