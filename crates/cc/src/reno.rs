//! Reno (NewReno loss recovery is the TCP core's): Linux's built-in `reno`.
//!
//! Jacobson's slow start and congestion avoidance (SIGCOMM '88, RFC 5681):
//! cwnd doubles per round trip below ssthresh, grows by one segment per
//! round trip above it, and halves on loss. Linux implements it in
//! `net/ipv4/tcp_cong.c` (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`,
//! `tcp_reno_undo_cwnd`), the fallback every other algorithm builds on; this
//! is that, through the shared helpers of [`crate::aimd`].
//!
//! Kleinrock adds one option the kernel lacks: `hystart=hspp` replaces the
//! initial slow start with HyStart++ (RFC 9406), see [`crate::hystart_pp`].

use crate::aimd::{
    reads, tcp_cong_avoid_ai, tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd,
    AIMD_READS,
};
use crate::hystart::SlowStartExit;
use crate::hystart_pp::{HystartPP, HSPP_READS};
use crate::ops::{AckSample, CaVisitor, CongestionControl};
use crate::params::{flag_value, params, Token};
use crate::registry::Declared;
use crate::sock::{Field, Sock};
use crate::state::PrivateState;

/// Reno's `hystart`: `off` or `hspp`. Reno has no Linux HyStart, so the
/// values that would name it (`on`, `1`, `linux`) are refused.
fn slow_start_exit(v: &str) -> Option<SlowStartExit> {
    match v {
        "hspp" => Some(SlowStartExit::HystartPP),
        _ => flag_value(v).filter(|on| !on).map(|_| SlowStartExit::Off),
    }
}

params! {
    /// Reno's options.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RenoParams {
        /// Use HyStart++ for the initial slow start.
        hystart: SlowStartExit {
            default: SlowStartExit::Off,
            values: "off|hspp",
            parse: slow_start_exit,
            help: "slow-start exit: off (Linux reno) or hspp (HyStart++, RFC 9406)",
            token: Token::Values(&[("hspp", "hspp")]),
        },
    }
}

/// The reno algorithm.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reno {
    params: RenoParams,
    hspp: HystartPP,
}

const RENO_HSPP_READS: &[Field] = reads!(AIMD_READS, HSPP_READS);

impl Reno {
    /// Reno with parameters `params`.
    pub fn new(params: RenoParams) -> Reno {
        Reno {
            params,
            hspp: HystartPP::default(),
        }
    }

    /// Does HyStart++ run the initial slow start?
    fn hspp_on(&self) -> bool {
        self.params.hystart == SlowStartExit::HystartPP
    }
}

impl Declared for Reno {
    const NAME: &'static str = "reno";
    const ALIASES: &'static [&'static str] = &["newreno"];
    const SUMMARY: &'static str = "Linux reno: slow start, +1 segment per RTT, halve on loss";
    type Params = RenoParams;

    fn with_params(params: RenoParams) -> Reno {
        Reno::new(params)
    }

    fn params(&self) -> &RenoParams {
        &self.params
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn init(&mut self, _sk: &mut Sock) {
        self.hspp = HystartPP::default();
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        self.hspp.on_loss();
        tcp_reno_ssthresh(sk)
    }

    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        if !self.hspp_on() {
            return tcp_reno_cong_avoid(sk, ack, acked);
        }
        if !sk.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if sk.in_slow_start() {
            acked = self.hspp.slow_start(sk, acked);
            if acked == 0 {
                return;
            }
        }
        let w = sk.snd_cwnd;
        tcp_cong_avoid_ai(sk, w, acked);
    }

    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        if self.hspp_on() {
            let rtt = u32::try_from(sample.rtt_us).ok().map(|r| r.max(1));
            self.hspp.on_ack(sk, rtt);
        }
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        tcp_reno_undo_cwnd(sk)
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        if self.hspp_on() {
            self.hspp.visit(visit);
        }
    }

    fn set_ca(&mut self, name: &str, value: i64) -> bool {
        self.hspp_on() && self.hspp.set(name, value)
    }

    fn reads(&self) -> &'static [Field] {
        if self.hspp_on() {
            RENO_HSPP_READS
        } else {
            AIMD_READS
        }
    }
}
