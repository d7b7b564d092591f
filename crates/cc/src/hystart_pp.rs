//! HyStart++: slow start with a delay-based early exit and a cautious phase
//! (RFC 9406, Balasubramanian, Huang and Olteanu, 2023).
//!
//! Each round (one window of data) HyStart++ takes the minimum of the
//! round's RTT samples. Once a round has at least `N_RTT_SAMPLE` samples and
//! its minimum exceeds the previous round's by `RttThresh` (an eighth of it,
//! clamped to 4-16 ms), slow start gives way to Conservative Slow Start
//! (CSS): growth a quarter of slow start's, for up to `CSS_ROUNDS` rounds.
//! If the RTT falls back below the baseline that triggered CSS, the rise was
//! noise and slow start resumes; otherwise, after the CSS rounds, ssthresh is
//! set to cwnd and congestion avoidance takes over. Unpaced senders grow by
//! at most `L` segments per ACK to limit bursts.
//!
//! Unlike Linux HyStart this changes how the window grows, so it replaces
//! [`crate::aimd::tcp_slow_start`] for the algorithms that opt in. As the
//! RFC recommends (section 4.3), it runs only for the initial slow start:
//! after the first loss, the discovered ssthresh ends later slow starts.
//!
//! No Linux kernel ships HyStart++; this is Kleinrock's own integer
//! rendering of the RFC's pseudocode, with windows in segments.

use crate::sock::{after, Field, Sock};
use crate::state::{private_state, Member};

/// `MIN_RTT_THRESH`: smallest RTT rise that counts, microseconds.
pub const MIN_RTT_THRESH_US: u32 = 4000;
/// `MAX_RTT_THRESH`: largest RTT rise required, microseconds.
pub const MAX_RTT_THRESH_US: u32 = 16000;
/// `MIN_RTT_DIVISOR`: the rise that counts is this fraction of the last
/// round's minimum RTT.
pub const MIN_RTT_DIVISOR: u32 = 8;
/// `N_RTT_SAMPLE`: samples a round needs before it is judged.
pub const N_RTT_SAMPLE: u32 = 8;
/// `CSS_GROWTH_DIVISOR`: CSS grows at a quarter of slow start's rate.
pub const CSS_GROWTH_DIVISOR: u32 = 4;
/// `CSS_ROUNDS`: rounds of CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;
/// `L`: the most segments one ACK may add when not paced (the RFC's
/// recommended 8; unbounded when paced).
pub const L_UNPACED: u32 = 8;

/// The connection fields HyStart++ reads beyond slow start's own
/// ([`crate::aimd::AIMD_READS`]): rounds end at `snd_nxt`, checked against
/// `snd_una`, and pacing lifts the per-ACK growth limit.
pub const HSPP_READS: &[Field] = &[Field::snd_una, Field::snd_nxt, Field::pacing_status];

/// Which part of slow start the connection is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Standard slow start with the delay-increase check running.
    #[default]
    SlowStart = 0,
    /// Conservative slow start.
    Css = 1,
    /// Initial slow start is over (CSS completed or a loss happened):
    /// later slow starts are plain.
    Done = 2,
}

impl Member for Phase {
    fn to_cell(self) -> i64 {
        self as i64
    }
    fn from_cell(cell: i64) -> Phase {
        match cell as u32 {
            0 => Phase::SlowStart,
            1 => Phase::Css,
            _ => Phase::Done,
        }
    }
}

private_state! {
    prefix "hspp_";
    /// Per-connection HyStart++ state; traces name its members `hspp_<member>`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct HystartPP {
        /// Where in RFC 9406's slow start the connection is.
        pub phase: Phase,
        /// `snd_nxt` when the round started: the round ends once it is ACKed.
        pub window_end: u32,
        /// Has the first round started?
        pub started: bool,
        /// `lastRoundMinRTT`, microseconds (`u32::MAX`: infinity).
        pub last_round_min_rtt: u32,
        /// `currentRoundMinRTT`, microseconds.
        pub current_round_min_rtt: u32,
        /// `rttSampleCount` of the current round.
        pub rtt_sample_count: u32,
        /// `cssBaselineMinRtt`, microseconds.
        pub css_baseline_min_rtt: u32,
        /// Rounds completed in CSS.
        pub css_rounds: u32,
        /// ACKed segments not yet turned into CSS growth (`< CSS_GROWTH_DIVISOR`).
        pub css_credit: u32,
    }
}

impl Default for HystartPP {
    fn default() -> Self {
        HystartPP {
            phase: Phase::SlowStart,
            window_end: 0,
            started: false,
            last_round_min_rtt: u32::MAX,
            current_round_min_rtt: u32::MAX,
            rtt_sample_count: 0,
            css_baseline_min_rtt: u32::MAX,
            css_rounds: 0,
            css_credit: 0,
        }
    }
}

/// `RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
/// MAX_RTT_THRESH))`.
pub fn rtt_thresh(last_round_min_rtt: u32) -> u32 {
    (last_round_min_rtt / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH_US, MAX_RTT_THRESH_US)
}

impl HystartPP {
    /// Is the initial slow start (with its CSS) still running?
    pub fn active(&self) -> bool {
        self.phase != Phase::Done
    }

    /// Feeds one ACK in slow start with its RTT sample (`None` when the ACK
    /// gave none). Call from `pkts_acked`.
    pub fn on_ack(&mut self, sk: &mut Sock, rtt_us: Option<u32>) {
        if !self.active() || !sk.in_slow_start() {
            return;
        }
        if !self.started || after(sk.snd_una, self.window_end) {
            self.end_round(sk);
        }
        let Some(rtt) = rtt_us else { return };
        self.current_round_min_rtt = self.current_round_min_rtt.min(rtt);
        self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        if self.rtt_sample_count < N_RTT_SAMPLE {
            return;
        }
        match self.phase {
            Phase::SlowStart => self.check_rtt_rise(),
            Phase::Css => self.check_rtt_fall(),
            Phase::Done => {}
        }
    }

    /// Ends the current round and starts the next one.
    fn end_round(&mut self, sk: &mut Sock) {
        if self.started && self.phase == Phase::Css {
            // The round CSS was entered in is round 0: exit once CSS_ROUNDS
            // whole rounds have passed.
            self.css_rounds += 1;
            if self.css_rounds > CSS_ROUNDS {
                // Enough caution: on to congestion avoidance.
                sk.snd_ssthresh = sk.snd_cwnd;
                self.phase = Phase::Done;
            }
        }
        self.started = true;
        self.window_end = sk.snd_nxt;
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = u32::MAX;
        self.rtt_sample_count = 0;
    }

    fn check_rtt_rise(&mut self) {
        if self.current_round_min_rtt == u32::MAX || self.last_round_min_rtt == u32::MAX {
            return;
        }
        let thresh = rtt_thresh(self.last_round_min_rtt);
        if self.current_round_min_rtt >= self.last_round_min_rtt.saturating_add(thresh) {
            self.css_baseline_min_rtt = self.current_round_min_rtt;
            self.phase = Phase::Css;
            self.css_rounds = 0;
            self.css_credit = 0;
        }
    }

    fn check_rtt_fall(&mut self) {
        if self.current_round_min_rtt < self.css_baseline_min_rtt {
            // The rise was spurious: back to slow start.
            self.css_baseline_min_rtt = u32::MAX;
            self.phase = Phase::SlowStart;
        }
    }

    /// Grows cwnd for `acked` segments in slow start; the replacement for
    /// `tcp_slow_start()`. Returns the segments left over for congestion
    /// avoidance (non-zero only when cwnd reaches ssthresh).
    pub fn slow_start(&mut self, sk: &mut Sock, acked: u32) -> u32 {
        let limited = if sk.is_paced() {
            acked
        } else {
            acked.min(L_UNPACED)
        };
        let grow = match self.phase {
            Phase::Done => return crate::aimd::tcp_slow_start(sk, acked),
            Phase::SlowStart => limited,
            Phase::Css => {
                self.css_credit = self.css_credit.saturating_add(limited);
                let g = self.css_credit / CSS_GROWTH_DIVISOR;
                self.css_credit %= CSS_GROWTH_DIVISOR;
                g
            }
        };
        let room = sk.snd_ssthresh.saturating_sub(sk.snd_cwnd);
        let inc = grow.min(room);
        sk.snd_cwnd = sk.snd_cwnd.saturating_add(inc).min(sk.snd_cwnd_clamp);
        if inc == room {
            acked - inc.min(acked)
        } else {
            0
        }
    }

    /// A loss ends the initial slow start for good (RFC 9406 section 4.3).
    pub fn on_loss(&mut self) {
        self.phase = Phase::Done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Setup;
    use crate::sock::TCP_INFINITE_SSTHRESH;

    /// Runs one round: `n` ACKs with the given RTT, each ACKing one segment,
    /// then moves snd_una past the round's end.
    fn round(h: &mut HystartPP, sk: &mut Sock, n: u32, rtt: u32) {
        sk.snd_una = sk.snd_una.wrapping_add(1);
        sk.snd_nxt = sk.snd_una + 100;
        for _ in 0..n {
            h.on_ack(sk, Some(rtt));
            h.slow_start(sk, 1);
        }
        sk.snd_una = sk.snd_nxt;
    }

    #[test]
    fn rtt_thresh_is_an_eighth_clamped() {
        assert_eq!(rtt_thresh(10_000), 4000);
        assert_eq!(rtt_thresh(100_000), 12_500);
        assert_eq!(rtt_thresh(1_000_000), 16_000);
    }

    #[test]
    fn grows_like_slow_start_with_l_limit_when_unpaced() {
        let mut h = HystartPP::default();
        let mut sk = Sock::new(1000).cwnd(10);
        assert_eq!(h.slow_start(&mut sk, 20), 0);
        assert_eq!(sk.snd_cwnd, 18);
        sk.pacing_status = crate::sock::PacingStatus::Needed;
        h.slow_start(&mut sk, 20);
        assert_eq!(sk.snd_cwnd, 38);
    }

    #[test]
    fn rtt_rise_enters_css_and_css_grows_at_a_quarter() {
        let mut h = HystartPP::default();
        let mut sk = Sock::new(1000).cwnd(10);
        round(&mut h, &mut sk, 8, 100_000);
        round(&mut h, &mut sk, 8, 100_000);
        assert_eq!(h.phase, Phase::SlowStart);
        // 100 ms base: thresh 12.5 ms. 112.4 ms does not trigger...
        round(&mut h, &mut sk, 8, 112_499);
        assert_eq!(h.phase, Phase::SlowStart);
        // ...against 112.499 ms the next needs >= 112.499 + 14.062 ms.
        round(&mut h, &mut sk, 7, 130_000);
        assert_eq!(h.phase, Phase::SlowStart, "only 7 samples so far");
        let before = sk.snd_cwnd;
        h.on_ack(&mut sk, Some(130_000));
        assert_eq!(h.phase, Phase::Css);
        assert_eq!(h.css_baseline_min_rtt, 130_000);
        for _ in 0..8 {
            h.slow_start(&mut sk, 1);
        }
        assert_eq!(sk.snd_cwnd, before + 2);
    }

    #[test]
    fn css_ends_in_congestion_avoidance_after_five_rounds() {
        let mut h = HystartPP::default();
        let mut sk = Sock::new(1000).cwnd(10);
        round(&mut h, &mut sk, 8, 50_000);
        round(&mut h, &mut sk, 8, 60_000);
        assert_eq!(h.phase, Phase::Css);
        for r in 1..=CSS_ROUNDS {
            round(&mut h, &mut sk, 8, 60_000);
            assert_eq!(h.css_rounds, r);
        }
        assert_eq!(h.phase, Phase::Css);
        assert_eq!(sk.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        sk.snd_una += 1;
        h.on_ack(&mut sk, Some(60_000));
        assert_eq!(h.phase, Phase::Done);
        // ssthresh = cwnd: 10, + 8 in round 1, + 7 in round 2 before its
        // eighth sample enters CSS, + 41 ACKs in CSS / 4 = 10: 35.
        assert_eq!((sk.snd_ssthresh, sk.snd_cwnd), (35, 35));
    }

    #[test]
    fn rtt_falling_below_baseline_resumes_slow_start() {
        let mut h = HystartPP::default();
        let mut sk = Sock::new(1000).cwnd(10);
        round(&mut h, &mut sk, 8, 50_000);
        round(&mut h, &mut sk, 8, 60_000);
        assert_eq!(h.phase, Phase::Css);
        round(&mut h, &mut sk, 8, 59_999);
        assert_eq!(h.phase, Phase::SlowStart);
        assert_eq!(h.css_baseline_min_rtt, u32::MAX);
    }

    #[test]
    fn loss_ends_hystart_pp_for_good() {
        let mut h = HystartPP::default();
        let mut sk = Sock::new(1000).cwnd(10);
        h.on_loss();
        sk.snd_ssthresh = 12;
        assert_eq!(h.slow_start(&mut sk, 30), 28);
        assert_eq!(sk.snd_cwnd, 12);
    }
}
