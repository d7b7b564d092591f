//! Properties of every algorithm over scripts of TCP-core events
//! (src/script.rs), checked spec by spec: each spec of `script::SPECS` gets
//! its own cases, none is left to sampling.
//!
//! 1. **No panic, from any state.** Every field of the starting connection
//!    and every event argument is drawn from the whole of its type, edges
//!    first (0, 1, 2^31 - 1, 2^31, 2^32 - 1, ...). Tests build with
//!    overflow checks, so an arithmetic overflow panics: where the kernel
//!    computes in C's wrapping u32, the port must wrap the same way, and a
//!    panic is a port's bug.
//! 2. **The kernel's guarantees, from the kernel's states.** From states
//!    the kernel can be in (`Domain::Kernel`: 1 <= cwnd <= clamp, cwnd below
//!    2^31, ssthresh at least 1, SACKed and lost segments within those out;
//!    physical paths, ACKs of at most 200 segments a microsecond and RTT
//!    samples of at most 2 s, so that no bandwidth-delay product reaches
//!    2^31 segments, past which BBR's u32 BDP wraps in the kernel too),
//!    after every hook:
//!    - cwnd stays at least 1, and within the clamp if it was (the core may
//!      leave it above: an undo or the end of a recovery does not clamp).
//!      Vegas's floor of 2 comes before its clamp (`tcp_vegas.c`), so with
//!      a clamp of 1 it may set 2; CDG's own CWR ends as the core's
//!      `tcp_end_cwnd_reduction()` does, with cwnd = ssthresh, unclamped;
//!    - no hook sets ssthresh to 0;
//!    - `ssthresh()` returns at least 2 (`tcp_reno_ssthresh()`, CUBIC's,
//!      H-TCP's, DCTCP's and CDG's `max(2U, ...)`), except where the kernel
//!      returns something else: BBR returns `snd_ssthresh` unchanged
//!      (`bbr_ssthresh()`), CDG with `use_tolerance` returns cwnd while the
//!      queue is not full, and CDG's own CWR keeps the backoff's threshold;
//!    - `undo_cwnd()` returns exactly `max(cwnd, prior_cwnd)`
//!      (`tcp_reno_undo_cwnd()`: reno, CUBIC, H-TCP, Vegas, CDG),
//!      `max(cwnd, loss_cwnd)` (DCTCP with ECN), or cwnd (BBR);
//!    - `cong_avoid` never shrinks a window within the clamp, except
//!      Vegas's by design and CDG's own CWR, which cuts it to ssthresh at
//!      a backoff and sets it to ssthresh when the CWR ends;
//!    - DCTCP's alpha stays within 0..=1024.
//!
//! Exact agreement with the kernel is elsewhere: hand-worked vectors beside
//! each algorithm, kernel traces in crates/kernel (docs/TESTING.md); the
//! replay of recorded scripts is in crates/trace/tests/replay.rs.

use kleinrock_cc::cdg::CdgCwr;
use kleinrock_cc::ops::Tap;
use kleinrock_cc::script::strategy::{self, script};
use kleinrock_cc::script::{
    Ack, Domain, Event, Flight, Player, Script, Start, UntilCwndZero, SPECS,
};
use kleinrock_cc::{Algorithm, CongestionControl, Declared, Hook, Sock, ALGORITHMS};
use proptest::test_runner::TestCaseError;

/// Cases per spec and property.
const CASES: u32 = 1_000;
/// Events per script, at most.
const EVENTS: usize = 400;

/// Runs `property` over `CASES` scripts from `domain` for every spec.
fn for_every_spec(domain: Domain, property: impl Fn(&str, &Script) -> Result<(), TestCaseError>) {
    strategy::for_every_spec(file!(), CASES, script(domain, EVENTS), |spec, s| {
        property(spec, &s)
    });
}

fn algorithm(spec: &str) -> Algorithm {
    spec.parse().unwrap()
}

/// A private member's value, if the algorithm has it.
fn member(cc: &Algorithm, name: &str) -> Option<i64> {
    let mut found = None;
    cc.visit_ca(&mut |n, v| {
        if n == name {
            found = Some(v);
        }
    });
    found
}

/// The state a hook is judged against: the connection before it, and the
/// algorithm's members the guarantees name.
struct Before {
    sk: Sock,
    loss_cwnd: Option<i64>,
    in_own_cwr: bool,
    cdg_state: Option<i64>,
}

/// A tap that checks the kernel's guarantees after every hook and keeps
/// the first one broken.
#[derive(Default)]
struct Guarantees {
    before: Option<Before>,
    broken: Option<String>,
}

fn in_own_cwr(cc: &Algorithm) -> bool {
    matches!(cc, Algorithm::Cdg(c) if c.state().own.in_cwr)
}

impl Tap<Algorithm> for Guarantees {
    fn before(&mut self, _hook: &Hook, sk: &Sock, cc: &Algorithm) {
        self.before = Some(Before {
            sk: sk.clone(),
            loss_cwnd: member(cc, "loss_cwnd"),
            in_own_cwr: in_own_cwr(cc),
            cdg_state: member(cc, "state"),
        });
    }

    fn after(&mut self, hook: &Hook, sk: &Sock, cc: &Algorithm, ret: u32) {
        let Some(before) = self.before.take() else {
            return;
        };
        if self.broken.is_none() {
            if let Err(e) = check(hook, &before, sk, cc, ret) {
                self.broken = Some(format!("{}: {e}", hook.name()));
            }
        }
    }
}

/// CDG's `CDG_NONFULL`: the queue is not full, so a loss is tolerated.
const CDG_NONFULL: i64 = kleinrock_cc::cdg::CDG_NONFULL as i64;

/// The kernel's guarantees after `hook` (see the module's documentation).
fn check(hook: &Hook, b: &Before, sk: &Sock, cc: &Algorithm, ret: u32) -> Result<(), String> {
    let pre = &b.sk;
    let (cwnd, clamp) = (sk.snd_cwnd, sk.snd_cwnd_clamp);
    if cwnd == 0 {
        return Err(format!("cwnd 0 (was {})", pre.snd_cwnd));
    }
    let vegas_floor = cc.name() == "vegas" && cwnd == 2;
    let own_cwr_ended = b.in_own_cwr && !in_own_cwr(cc) && cwnd == sk.snd_ssthresh;
    if pre.snd_cwnd <= clamp && cwnd > clamp && !vegas_floor && !own_cwr_ended {
        return Err(format!("cwnd {} -> {cwnd} > clamp {clamp}", pre.snd_cwnd));
    }
    if sk.snd_ssthresh == 0 {
        return Err(format!("ssthresh {} -> 0", pre.snd_ssthresh));
    }
    if let Algorithm::Dctcp(d) = cc {
        let alpha = d.state().dctcp_alpha;
        if alpha > 1024 {
            return Err(format!("dctcp_alpha {alpha} > 1024"));
        }
    }
    let cdg = match cc {
        Algorithm::Cdg(c) => Some(c.params()),
        _ => None,
    };
    match hook {
        Hook::Ssthresh => {
            let tolerated = cdg.is_some_and(|p| p.use_tolerance)
                && b.cdg_state == Some(CDG_NONFULL)
                && ret == pre.snd_cwnd;
            let kept = cc.name() == "bbr" || b.in_own_cwr;
            if kept && ret != pre.snd_ssthresh {
                return Err(format!(
                    "returned {ret}, not the threshold {} it keeps",
                    pre.snd_ssthresh
                ));
            }
            if !kept && !tolerated && ret < 2 {
                return Err(format!("returned {ret} < 2 (cwnd {})", pre.snd_cwnd));
            }
        }
        Hook::UndoCwnd => {
            let want = match cc {
                Algorithm::Bbr(_) => pre.snd_cwnd,
                Algorithm::Dctcp(d) if !d.is_fallback() => {
                    pre.snd_cwnd.max(b.loss_cwnd.unwrap() as u32)
                }
                _ => pre.snd_cwnd.max(pre.prior_cwnd),
            };
            if ret != want {
                return Err(format!(
                    "returned {ret}, not {want} (cwnd {}, prior_cwnd {})",
                    pre.snd_cwnd, pre.prior_cwnd
                ));
            }
        }
        Hook::CongAvoid { .. } if cwnd < pre.snd_cwnd && pre.snd_cwnd <= clamp => {
            let own_cwr = cdg.is_some_and(|p| p.cwr == CdgCwr::Own);
            let began = in_own_cwr(cc) && cwnd == sk.snd_ssthresh;
            let ended = b.in_own_cwr && !in_own_cwr(cc) && cwnd >= sk.snd_ssthresh;
            if !(cc.name() == "vegas" || own_cwr && (began || ended)) {
                return Err(format!(
                    "shrank cwnd {} -> {cwnd} (ssthresh {})",
                    pre.snd_cwnd, sk.snd_ssthresh
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Plays `s` on `spec` with the guarantees checked after every hook.
fn keeps_the_kernels_guarantees(spec: &str, s: &Script) -> Result<(), TestCaseError> {
    let mut p = Player::new(algorithm(spec), &s.start, Guarantees::default());
    let broken = |p: &Player<Algorithm, Guarantees>, what: &str| match &p.tap.broken {
        Some(e) => Err(TestCaseError::fail(format!("{what}: {e}"))),
        None => Ok(()),
    };
    broken(&p, "init")?;
    p.play_all(&s.events, |p, e| broken(p, &format!("{e:?}")))
}

#[test]
fn no_hook_panics_from_any_state() {
    for_every_spec(Domain::Any, |spec, s| {
        let mut p = Player::new(algorithm(spec), &s.start, UntilCwndZero::default());
        p.play_all(
            &s.events,
            |p, _| if p.tap.stopped { Err(()) } else { Ok(()) },
        )
        .ok();
        Ok(())
    });
}

#[test]
fn hooks_keep_the_kernels_guarantees_from_the_kernels_states() {
    for_every_spec(Domain::Kernel, keeps_the_kernels_guarantees);
}

#[test]
fn every_algorithm_is_among_the_specs() {
    for a in ALGORITHMS {
        assert!(SPECS.contains(&a.name), "{} has no spec", a.name);
    }
}

/// A connection as `tcp_init_sock()` leaves it, at `hz`, clamped.
fn fresh(hz: u32, clamp: u32) -> Start {
    Start {
        hz,
        now_us: 0,
        cwnd: 10,
        ssthresh: 0x7fff_ffff,
        clamp,
        cwnd_cnt: 0,
        prior_cwnd: 0,
        flight: Flight::default(),
        delivered: 0,
        delivered_ce: 0,
        lost: 0,
        seq: 0,
        srtt_us: 0,
        mss: 1448,
        ecn: false,
    }
}

fn ack(acked: u32, rtt_us: i32, dt_us: u64) -> Event {
    Event::Ack(Ack {
        acked,
        rtt_us,
        dt_us,
        ..Ack::default()
    })
}

/// Cases the earlier property found, kept as scripts.
#[test]
fn regressions() {
    // Vegas's decrease in congestion avoidance is no shrinking bug.
    let vegas = Script {
        start: fresh(100, 31),
        events: vec![
            ack(17, 0, 0),
            ack(11, 0, 0),
            ack(1, 1, 0),
            ack(1, 1, 0),
            ack(10, 128, 3544),
            ack(2, 1_671_033, 25_399),
            ack(14, 278_955, 30_229),
        ],
    };
    // CDG with use_tolerance returns a cwnd of 1 as ssthresh after an RTO,
    // as the kernel does while the queue is not full.
    let cdg = Script {
        start: fresh(100, 2),
        events: vec![
            ack(1, 821_878, 0),
            ack(3, 1, 0),
            Event::Rto { dt_us: 0 },
            Event::Loss,
        ],
    };
    for (spec, s) in [("vegas", vegas), ("cdg:use_tolerance=1:use_shadow=0", cdg)] {
        keeps_the_kernels_guarantees(spec, &s).unwrap();
    }
}
