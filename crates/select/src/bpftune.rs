//! bpftune's TCP connection tuner, as its BPF program decides (oracle/bpftune
//! `src/tcp_conn_tuner.bpf.c`, `tcp_conn_tuner.h`, `include/bpftune/rl.h`;
//! the policy of `docs/bpftune-tcp-conn.rst`, seed 003).
//!
//! Per remote host it keeps the least RTT and the most delivery rate seen,
//! and per (host, algorithm) a cost: how far a connection's minimum RTT was
//! above the host's, plus how far the algorithm's best delivery rate falls
//! short of the host's, each as a fraction scaled by 10^6. The cost is an
//! exponential moving average (rate 1/2^shift, shift 2 by default). A new
//! connection to a host seen at least 4 times gets the cheapest algorithm,
//! except that one time in 20 it gets one at random; any connection whose
//! retransmissions exceed 1/64 of its segments switches to BBR.
//!
//! Faithful to the arithmetic of the seed's era, where hosts are keyed by
//! remote address; bpftune since March 2025 (commit d0bcb72) keys them by
//! route gateway instead. Integer widths, truncation, the order of updates
//! and of random draws are the BPF program's.

use std::collections::HashMap;
use std::fmt::Write as _;

use kleinrock_cc::rand::SplitMix64;

use crate::{addr, allows, Mask, Peer, Sample, ALL};

/// The candidates, in bpftune's order (`enum tcp_states`).
pub const CONGS: [&str; 4] = ["cubic", "bbr", "htcp", "dctcp"];
/// Index of BBR in [`CONGS`].
pub const BBR: usize = 1;
/// Connections to a host before learning and choosing start.
pub const REMOTE_HOST_MIN_INSTANCES: u64 = 4;
/// Retransmissions above `segs_out >> DROP_SHIFT` (1/64) switch to BBR.
pub const DROP_SHIFT: u32 = 6;
/// Scale of the cost terms: 10^6 is a 100% deviation.
pub const RTT_SCALE: u64 = 1_000_000;
pub const DELIVERY_SCALE: u64 = 1_000_000;
/// One choice in `EPSILON` is random.
pub const EPSILON: u32 = 20;
/// `BPFTUNE_DELTA_MAX`: the largest learning-rate setting.
pub const DELTA_MAX: u8 = 4;
/// The size of bpftune's host map; hosts beyond it are not tracked.
pub const MAX_HOSTS: usize = 1024;

/// `struct tcp_conn_metric`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnMetric {
    pub greedy_count: u64,
    /// Least connection min RTT seen with this algorithm, µs (displayed only).
    pub min_rtt: u64,
    /// Most delivery rate seen with this algorithm, bytes/µs.
    pub max_rate_delivered: u64,
    pub metric_count: u64,
    /// The learned cost.
    pub metric_value: u64,
}

/// Connections to a host before an algorithm that could not be set there
/// is tried again, as in Kleinrock's policy
/// (`bandit::Config::retry_unavailable`).
pub const RETRY_UNAVAILABLE: u64 = 50;

/// `struct remote_host`, and `unavailable_until`, which is ours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteHost {
    pub min_rtt: u64,
    pub max_rate_delivered: u64,
    pub instances: u64,
    pub metrics: [ConnMetric; 4],
    /// Per algorithm: not chosen until `instances` reaches this. bpftune
    /// keeps no such thing: an algorithm that cannot be set is never
    /// learned, its cost stays 0, the least, and it is chosen for every
    /// connection to the host from then on ([`Bpftune::set_failed`]).
    pub unavailable_until: [u64; 4],
}

/// `rl_update()`: move `value` towards `gain` by 1/2^shift of the
/// difference, truncating towards `value`; an unset (0) value takes `gain`.
pub fn rl_update(value: u64, gain: u64, shift: u8) -> u64 {
    if value == 0 {
        gain
    } else if gain > value {
        value + ((gain - value) >> shift)
    } else if gain < value {
        value - ((value - gain) >> shift)
    } else {
        value
    }
}

/// `tcp_metric_calc()`: updates the host's extremes with this connection,
/// then the cost of a connection with `min_rtt` for an algorithm whose best
/// rate is `rate_delivered`. A zero extreme means "unset".
pub fn metric_calc(r: &mut RemoteHost, min_rtt: u64, rate_delivered: u64) -> u64 {
    let mut metric = 0u64;
    if r.min_rtt == 0 || min_rtt < r.min_rtt {
        r.min_rtt = min_rtt;
    }
    if r.max_rate_delivered == 0 || rate_delivered > r.max_rate_delivered {
        r.max_rate_delivered = rate_delivered;
    }
    // An unset (zero) extreme contributes nothing, as the C `if`s say.
    if let Some(t) = (min_rtt - r.min_rtt)
        .wrapping_mul(RTT_SCALE)
        .checked_div(r.min_rtt)
    {
        metric = metric.wrapping_add(t);
    }
    if let Some(t) = (r.max_rate_delivered - rate_delivered)
        .wrapping_mul(DELIVERY_SCALE)
        .checked_div(r.max_rate_delivered)
    {
        metric = metric.wrapping_add(t);
    }
    metric
}

/// The tuner's state: hosts, counters, and the random source standing in
/// for `bpf_get_prandom_u32()`.
#[derive(Clone, Debug)]
pub struct Bpftune {
    hosts: HashMap<Peer, RemoteHost>,
    /// `BPFTUNE_BITSHIFT`: 6 - learning rate (0..4).
    shift: u8,
    rng: SplitMix64,
    /// `tcp_cong_choices`: algorithms set, by index (failures included).
    pub choices: [u64; 4],
}

impl Bpftune {
    /// bpftune with its default learning rate (4: shift 2).
    pub fn new(seed: u64) -> Bpftune {
        Bpftune::with_learning_rate(seed, DELTA_MAX)
    }

    /// `bpftune -r RATE`: 0..=4, the EMA weight 1/2^(6 - rate).
    pub fn with_learning_rate(seed: u64, rate: u8) -> Bpftune {
        Bpftune {
            hosts: HashMap::new(),
            shift: (DELTA_MAX + 2) - rate.min(DELTA_MAX),
            rng: SplitMix64::new(seed),
            choices: [0; 4],
        }
    }

    fn prandom(&mut self) -> u32 {
        (self.rng.next_u64() >> 32) as u32
    }

    pub fn host(&self, peer: Peer) -> Option<&RemoteHost> {
        self.hosts.get(&peer)
    }

    /// `get_remote_host()`: the host if it has been seen at least
    /// [`REMOTE_HOST_MIN_INSTANCES`] times. A new host is inserted with one
    /// instance (if the map has room); `initial` (an established
    /// connection) counts an instance.
    fn eligible(&mut self, peer: Peer, initial: bool) -> bool {
        match self.hosts.get_mut(&peer) {
            None => {
                if self.hosts.len() < MAX_HOSTS {
                    self.hosts.insert(
                        peer,
                        RemoteHost {
                            instances: 1,
                            ..RemoteHost::default()
                        },
                    );
                }
                false
            }
            Some(h) => {
                if initial {
                    h.instances += 1;
                }
                h.instances >= REMOTE_HOST_MIN_INSTANCES
            }
        }
    }

    /// `epsilon_greedy()`: `greedy` unless a draw is a multiple of
    /// [`EPSILON`], then a random one of `open` (possibly `greedy` again;
    /// bpftune draws among all four, which `open` is unless a daemon
    /// excluded some).
    fn epsilon_greedy(&mut self, greedy: usize, open: &[usize]) -> usize {
        if self.prandom() % EPSILON != 0 {
            return greedy;
        }
        open[(self.prandom() % open.len() as u32) as usize]
    }

    /// A connection to `peer` is established (`*_ESTABLISHED_CB`): the
    /// algorithm to set, or `None` to leave the system's default. The choice
    /// is counted whether or not setting it then succeeds; if it fails, the
    /// connection has no algorithm recorded and nothing is learned from it
    /// (pass `None` to [`Bpftune::close`]).
    pub fn established(&mut self, peer: Peer) -> Option<usize> {
        if !self.eligible(peer, true) {
            return None;
        }
        let s = self.propose(peer, ALL)?;
        self.choices[s] += 1;
        Some(s)
    }

    /// A connection to `peer` is established: counts it, as
    /// [`Bpftune::established`] does, without choosing (a daemon chose
    /// ahead, with [`Bpftune::propose`]). Whether the host had been seen
    /// often enough to be chosen for.
    pub fn count(&mut self, peer: Peer) -> bool {
        self.eligible(peer, true)
    }

    /// The algorithm the next connection to `peer` would get, drawn as at
    /// establishment (the cheapest, ties and one time in [`EPSILON`] at
    /// random), among the candidates `allowed` that are not unavailable
    /// there; `None` for a host that connection does not make seen
    /// [`REMOTE_HOST_MIN_INSTANCES`] times (bpftune counts a connection
    /// before it chooses for it), or when none is usable. Counts nothing.
    pub fn propose(&mut self, peer: Peer, allowed: Mask) -> Option<usize> {
        let host = *self.hosts.get(&peer)?;
        if host.instances + 1 < REMOTE_HOST_MIN_INSTANCES {
            return None;
        }
        let usable = |i: usize| allows(allowed, i) && host.unavailable_until[i] <= host.instances;
        let mut open = [0usize; 4];
        let mut nopen = 0;
        let mut cands = [0usize; 4];
        let mut ncands = 0;
        let mut min = u64::MAX;
        for (i, m) in host.metrics.iter().enumerate().filter(|(i, _)| usable(*i)) {
            open[nopen] = i;
            nopen += 1;
            let v = m.metric_value;
            if v > min {
                continue;
            } else if v < min {
                cands[0] = i;
                ncands = 1;
            } else {
                cands[ncands] = i;
                ncands += 1;
            }
            min = v;
        }
        if nopen == 0 {
            return None;
        }
        let mut minindex = cands[0];
        if ncands > 1 {
            minindex = cands[(self.prandom() % ncands as u32) as usize];
        }
        Some(self.epsilon_greedy(minindex, &open[..nopen]))
    }

    /// `alg` could not be set on a connection to `peer`: not chosen there
    /// for the next [`RETRY_UNAVAILABLE`] connections. Ours: bpftune
    /// records nothing, so the algorithm keeps the cost of 0 it started
    /// with, stays the cheapest, and every later connection to the host
    /// tries it and runs the default instead (the entry is poisoned).
    pub fn set_failed(&mut self, peer: Peer, alg: usize) {
        if let Some(h) = self.hosts.get_mut(&peer) {
            if let Some(u) = h.unavailable_until.get_mut(alg) {
                *u = h.instances + RETRY_UNAVAILABLE;
            }
        }
    }

    /// The hosts, in no particular order.
    pub fn hosts(&self) -> impl Iterator<Item = (Peer, &RemoteHost)> {
        self.hosts.iter().map(|(p, h)| (*p, h))
    }

    /// Restores saved hosts and choice counts (from
    /// [`crate::persist::bpftune`]); hosts beyond [`MAX_HOSTS`] are not
    /// kept, as bpftune's full map keeps none.
    pub fn restore(&mut self, hosts: Vec<(Peer, RemoteHost)>, choices: [u64; 4]) {
        for (p, h) in hosts {
            if self.hosts.len() < MAX_HOSTS || self.hosts.contains_key(&p) {
                self.hosts.insert(p, h);
            }
        }
        self.choices = choices;
    }

    /// `BPF_SOCK_OPS_RETRANS_CB`: BBR for this connection once its
    /// retransmissions exceed 1/64 of its segments, unless it runs BBR.
    pub fn retransmit(
        &mut self,
        current: Option<usize>,
        segs_out: u32,
        total_retrans: u32,
    ) -> Option<usize> {
        if total_retrans > (segs_out >> DROP_SHIFT) && current != Some(BBR) {
            self.choices[BBR] += 1;
            return Some(BBR);
        }
        None
    }

    /// The connection is closing (`FIN_WAIT1` or `CLOSE_WAIT`): learn from
    /// it if an algorithm was set on it and its host is eligible.
    pub fn close(&mut self, peer: Peer, alg: Option<usize>, s: &Sample) {
        if !self.eligible(peer, false) {
            return;
        }
        let Some(alg) = alg else {
            return;
        };
        let min_rtt = s.min_rtt_us as u64;
        let rate = s.rate_bytes_per_us();
        let shift = self.shift;
        let host = self.hosts.get_mut(&peer).expect("eligible hosts exist");
        let i = alg & 3;
        let m = &mut host.metrics[i];
        if m.min_rtt == 0 || min_rtt < m.min_rtt {
            m.min_rtt = min_rtt;
        }
        if m.max_rate_delivered == 0 || rate > m.max_rate_delivered {
            m.max_rate_delivered = rate;
        }
        let alg_max = m.max_rate_delivered;
        let metric = metric_calc(host, min_rtt, alg_max);
        let old = host.metrics[i].metric_value;
        let greedy = host.metrics.iter().all(|o| o.metric_value >= old);
        let m = &mut host.metrics[i];
        m.metric_value = rl_update(old, metric, shift);
        m.metric_count += 1;
        if greedy {
            m.greedy_count += 1;
        }
    }

    /// bpftune's summary: the choices made, and per host (in address order)
    /// its table, with the columns of the seed document.
    pub fn status(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{:>20} {:>20}", "CongAlg", "Count");
        for (i, c) in CONGS.iter().enumerate() {
            let _ = writeln!(s, "{c:>20} {:>20}", self.choices[i]);
        }
        let _ = writeln!(
            s,
            "{:>16} {:>8} {:>10} {:>8} {:>8} {:>8} {:>10}",
            "IPAddress", "CongAlg", "Metric", "Count", "Greedy", "MinRtt", "MaxRtDlvr"
        );
        let mut peers: Vec<&Peer> = self.hosts.keys().collect();
        peers.sort();
        for p in peers {
            let h = &self.hosts[p];
            for (i, m) in h.metrics.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "{:>16} {:>8} {:>10} {:>8} {:>8} {:>8} {:>10}",
                    addr(*p).to_string(),
                    CONGS[i],
                    m.metric_value,
                    m.metric_count,
                    m.greedy_count,
                    m.min_rtt,
                    m.max_rate_delivered
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rl_update_moves_a_quarter_of_the_way_truncating() {
        assert_eq!(rl_update(0, 1234, 2), 1234);
        assert_eq!(rl_update(1000, 2000, 2), 1250);
        assert_eq!(rl_update(1000, 1003, 2), 1000, "3 >> 2 = 0");
        assert_eq!(rl_update(1000, 0, 2), 750);
        assert_eq!(rl_update(1000, 1, 2), 751, "999 >> 2 = 249");
        assert_eq!(rl_update(1000, 2000, 6), 1015);
    }

    #[test]
    fn the_cost_is_two_scaled_fractions_after_updating_the_extremes() {
        let mut h = RemoteHost::default();
        // First connection sets both extremes: cost 0.
        assert_eq!(metric_calc(&mut h, 3000, 100), 0);
        // RTT 4500 against 3000: 500,000; rate 75 of 100: 250,000.
        assert_eq!(metric_calc(&mut h, 4500, 75), 750_000);
        // A faster algorithm raises the host's maximum first: (200-200) = 0,
        // and RTT 3001: 1 * 1e6 / 3000 = 333 (truncated).
        assert_eq!(metric_calc(&mut h, 3001, 200), 333);
        assert_eq!((h.min_rtt, h.max_rate_delivered), (3000, 200));
        // Terms truncate separately: 1/3 + 2/3 of 1e6.
        let mut h = RemoteHost {
            min_rtt: 3,
            max_rate_delivered: 3,
            ..Default::default()
        };
        assert_eq!(metric_calc(&mut h, 4, 1), 333_333 + 666_666);
    }

    fn sample(rtt: u32, rate_bytes_per_us: u32) -> Sample {
        Sample {
            min_rtt_us: rtt,
            rate_delivered: rate_bytes_per_us,
            rate_interval_us: 1,
            mss: 1,
            ..Sample::default()
        }
    }

    #[test]
    fn learning_and_choosing_start_at_the_fourth_connection() {
        let mut b = Bpftune::new(1);
        let p = crate::peer("10.0.0.1".parse().unwrap());
        for _ in 0..3 {
            assert_eq!(b.established(p), None);
            b.close(p, Some(0), &sample(100, 10));
        }
        assert_eq!(b.host(p).unwrap().metrics[0].metric_count, 0, "not learned");
        assert!(b.established(p).is_some());
        b.close(p, Some(2), &sample(100, 10));
        let h = b.host(p).unwrap();
        assert_eq!((h.instances, h.metrics[2].metric_count), (4, 1));
        // A close of an unknown host only registers it.
        let q = crate::peer("10.0.0.2".parse().unwrap());
        b.close(q, Some(1), &sample(100, 10));
        assert_eq!(b.host(q).unwrap().instances, 1);
    }

    #[test]
    fn a_cheaper_algorithm_wins_and_greedy_counts_ties_as_greedy() {
        let mut b = Bpftune::new(7);
        let p = 42;
        for _ in 0..4 {
            b.established(p);
        }
        // bbr: fast and at the minimum RTT; cubic slow and queued.
        b.close(p, Some(1), &sample(1000, 100));
        b.close(p, Some(0), &sample(1500, 50));
        let h = b.host(p).unwrap();
        assert_eq!(h.metrics[1].metric_value, 0);
        assert_eq!(h.metrics[0].metric_value, 1_000_000);
        // bbr's close counted greedy (all values were 0); cubic's did not
        // (bbr's 0 was below cubic's 0? no: equal) -- both were ties at 0.
        assert_eq!(
            (h.metrics[1].greedy_count, h.metrics[0].greedy_count),
            (1, 1)
        );
        // From here bbr (cost 0) beats htcp and dctcp (unset, 0) only by the
        // tie-break; give them costs.
        b.close(p, Some(2), &sample(1400, 50));
        b.close(p, Some(3), &sample(1400, 50));
        // The exploration rate over many draws: 1 in 20 draws explores, and
        // an exploring draw picks uniformly among the four (bbr again in a
        // quarter of them), so bbr gets 95% + 5%/4 = 96.25% (192,500 of
        // 200,000, sd 85) and each other 1.25% (2,500, sd 50).
        let mut counts = [0; 4];
        for _ in 0..200_000 {
            counts[b.established(p).unwrap()] += 1;
        }
        assert!((192_000..193_000).contains(&counts[1]), "{counts:?}");
        for c in [0, 2, 3] {
            assert!((2_250..2_750).contains(&counts[c]), "{counts:?}");
        }
    }

    #[test]
    fn heavy_retransmission_switches_to_bbr_once() {
        let mut b = Bpftune::new(1);
        assert_eq!(
            b.retransmit(Some(0), 640, 10),
            None,
            "10 = 640 >> 6 is not above"
        );
        assert_eq!(b.retransmit(Some(0), 640, 11), Some(BBR));
        assert_eq!(
            b.retransmit(None, 10, 1),
            Some(BBR),
            "fewer than 64 segments: any loss"
        );
        assert_eq!(b.retransmit(Some(BBR), 640, 100), None);
        assert_eq!(b.choices[BBR], 2);
    }

    #[test]
    fn the_status_table_has_the_seeds_columns() {
        let mut b = Bpftune::new(1);
        let p = crate::peer("192.168.168.1".parse().unwrap());
        for _ in 0..4 {
            b.established(p);
        }
        b.close(p, Some(1), &sample(3, 10024));
        let t = b.status();
        assert!(
            t.contains("IPAddress  CongAlg     Metric    Count   Greedy   MinRtt  MaxRtDlvr"),
            "{t}"
        );
        assert!(
            t.contains("192.168.168.1      bbr          0        1        1        3      10024"),
            "{t}"
        );
    }
}
