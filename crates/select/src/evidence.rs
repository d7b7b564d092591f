//! What connections to one peer (or prefix) showed, per kind of connection
//! and algorithm, and the cost of each algorithm that follows from it.
//!
//! Connections of different sizes are not comparable: a 1 MB transfer ends
//! in or near slow start, with a low mean rate and little queue whatever
//! the algorithm, while a long one shows the algorithm's steady state. A
//! selector that pools them blames an algorithm for the sizes it happened
//! to draw, and its estimates carry the spread of the size mix as noise.
//! So evidence is kept per bucket, and an algorithm is only ever compared
//! with others in the same bucket:
//!
//! - a transfer that completed (everything the application wrote was
//!   acknowledged) goes by its size, a factor of 4 per bucket from 64 KiB;
//! - a connection closed while it still had data to send goes by how long
//!   it ran, a factor of 4 per bucket from 250 ms: how much it sent is the
//!   algorithm's doing, so its size would file a slow algorithm among
//!   short transfers, where nothing it did is compared with the others.
//!
//! A connection also counts, in every size bucket it passed, with its last
//! sample there: how an algorithm did over its first 4 MB is what a 4 MB
//! transfer would have seen, so long connections inform the choice for
//! short ones. Where it ended counts as demand: the peer's mix of
//! connections, which the choice does not influence.
//!
//! An algorithm's cost at a peer is its cost in each bucket weighted by the
//! peer's demand there (post-stratification: an estimate over the mix whose
//! spread no longer includes which sizes the algorithm drew). In each
//! bucket the cost is bpftune's, in floating point: the algorithm's mean
//! RTT above the best algorithm's, plus its mean rate short of the best's,
//! as fractions. The estimate comes with its standard error, from how much
//! the algorithm's RTT and rate vary from one connection to the next, so
//! that exploration can be sized to the noise.
//!
//! Each arm also counts its collapses: connections that delivered less
//! than an eighth ([`COLLAPSE`]) of the best mean rate among the
//! algorithms there (CDG backing off early on a long path and never
//! recovering: 1.6 Mbit/s where it usually gets 120). An algorithm that
//! has both collapsed and not is erratic there, which the mean and the
//! standard error of its cost describe badly (see [`crate::bandit`]). A
//! prefix lends its collapses with the rest of its evidence.

/// Buckets of completed transfers by size: `[0, 64 KiB)`, then a factor of
/// 4 each, the last unbounded (from 256 MiB).
pub const SIZE_BUCKETS: u8 = 8;
/// Buckets of connections closed while they still had data to send, by
/// how long they ran: `[0, 250 ms)`, then a factor of 4 each, the last
/// unbounded (from 64 s).
pub const TIME_BUCKETS: u8 = 6;
/// All buckets: sizes first, then times.
pub const BUCKETS: u8 = SIZE_BUCKETS + TIME_BUCKETS;
const FIRST_SIZE: u64 = 64 << 10;
const FIRST_TIME_US: u64 = 250_000;

/// `x`'s place on a scale of `count` steps of a factor of 4 from `first`.
fn log4_step(x: u64, first: u64, count: u8) -> u8 {
    let mut step = 0;
    let mut edge = first;
    while x >= edge && step + 1 < count {
        step += 1;
        edge = edge.saturating_mul(4);
    }
    step
}

/// The bucket of a transfer of `bytes`, or of a connection that has had
/// `bytes` acknowledged so far.
pub fn size_bucket(bytes: u64) -> u8 {
    log4_step(bytes, FIRST_SIZE, SIZE_BUCKETS)
}

/// The bucket of a connection closed after `age_us` while it still had
/// data to send.
pub fn time_bucket(age_us: u64) -> u8 {
    SIZE_BUCKETS + log4_step(age_us, FIRST_TIME_US, TIME_BUCKETS)
}

/// A bucket's range, for display: `<64K`, `64K-256K`, ..., `256M+` for
/// sizes, `<250ms`, `250ms-1s`, ..., `64s+` for times.
pub fn bucket_label(bucket: u8) -> String {
    let size = |k: u64| {
        let b = FIRST_SIZE << (2 * k);
        if b >= 1 << 20 {
            format!("{}M", b >> 20)
        } else {
            format!("{}K", b >> 10)
        }
    };
    let time = |k: u64| {
        let us = FIRST_TIME_US << (2 * k);
        if us >= 1_000_000 {
            format!("{}s", us / 1_000_000)
        } else {
            format!("{}ms", us / 1000)
        }
    };
    let (step, count, unit): (u8, u8, &dyn Fn(u64) -> String) = if bucket < SIZE_BUCKETS {
        (bucket, SIZE_BUCKETS, &size)
    } else {
        (bucket - SIZE_BUCKETS, TIME_BUCKETS, &time)
    };
    match step as u64 {
        0 => format!("<{}", unit(0)),
        k if k + 1 >= count as u64 => format!("{}+", unit(k - 1)),
        k => format!("{}-{}", unit(k - 1), unit(k)),
    }
}

/// What one connection showed, at a sample or at its close: RTT (µs),
/// rate (bytes/s) and the share of its segments retransmitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    pub rtt_us: f64,
    pub rate: f64,
    pub loss: f64,
}

/// A connection delivering less than the best mean rate in its bucket
/// divided by this has collapsed: far below anything the spread of
/// ordinary connections explains (the change test's least surprise is a
/// factor of 1.3), and far enough that it is not a slow algorithm's
/// ordinary outcome on a path where another is fast (CUBIC's 2 Mbit/s
/// against BBR's 33 at 5% loss is one, which is why an algorithm is only
/// erratic if it has also not collapsed).
pub const COLLAPSE: f64 = 8.0;

/// Added to the retransmitted share before taking its logarithm: below
/// half a percent, losses are noise to the change test.
pub const LOSS_FLOOR: f64 = 0.005;

impl Seen {
    /// Logarithms of RTT, rate and retransmitted share (plus
    /// [`LOSS_FLOOR`]): relative deviations become differences.
    pub fn logs(&self) -> [f64; 3] {
        [
            self.rtt_us.max(1.0).ln(),
            self.rate.max(1.0).ln(),
            (self.loss + LOSS_FLOOR).ln(),
        ]
    }
}

/// Discounted evidence about one algorithm in one bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Arm {
    /// Discounted number of connections (passing through or ending here).
    pub n: f64,
    /// Discounted sums of their RTT (µs), delivery rate (bytes/s) and
    /// share of segments retransmitted.
    pub rtt_sum: f64,
    pub rate_sum: f64,
    pub loss_sum: f64,
    /// Discounted sums of the squares of RTT and rate and of their
    /// product: how much the cost varies from one connection to the next,
    /// which is how uncertain its mean is.
    pub rtt_sq: f64,
    pub rate_sq: f64,
    pub rtt_rate: f64,
    /// Discounted sums of [`Seen::logs`] and of their squares: whether a
    /// connection lies outside what the algorithm has shown (a change).
    pub log_sum: [f64; 3],
    pub log_sq: [f64; 3],
    /// Discounted number of those connections that collapsed
    /// ([`COLLAPSE`]), judged when each was added; the first connection in
    /// a bucket has no best to fall short of.
    pub collapses: f64,
}

/// Below this weight an arm counts as having no evidence.
const TINY: f64 = 1e-9;

/// The most connections an entry counts: beyond 2^53 a floating-point
/// count stops counting, and no host makes that many to one peer. A saved
/// table that claims more is refused ([`Entry::possible`]), so that no
/// count can wrap.
pub const MAX_COUNT: u64 = 1 << 53;

/// The largest RTT (µs) and rate (bytes/s) one connection can show: the
/// ranges of [`crate::Sample`]'s fields. Its retransmitted share is at
/// most 1.
const MAX_RTT_US: f64 = u32::MAX as f64;
const MAX_RATE: f64 = u64::MAX as f64;

/// The range of each of [`Seen::logs`] for one connection.
fn log_range(i: usize) -> (f64, f64) {
    match i {
        0 => (0.0, MAX_RTT_US.ln()),
        1 => (0.0, MAX_RATE.ln()),
        _ => (LOSS_FLOOR.ln(), (1.0 + LOSS_FLOOR).ln()),
    }
}

fn inverse(x: f64) -> f64 {
    if x > 0.0 {
        1.0 / x
    } else {
        0.0
    }
}

impl Arm {
    pub fn add(&mut self, seen: &Seen) {
        self.n += 1.0;
        self.rtt_sum += seen.rtt_us;
        self.rate_sum += seen.rate;
        self.loss_sum += seen.loss;
        self.rtt_sq += seen.rtt_us * seen.rtt_us;
        self.rate_sq += seen.rate * seen.rate;
        self.rtt_rate += seen.rtt_us * seen.rate;
        for (i, l) in seen.logs().into_iter().enumerate() {
            self.log_sum[i] += l;
            self.log_sq[i] += l * l;
        }
    }

    fn scale(&mut self, f: f64) {
        self.n *= f;
        self.collapses *= f;
        self.rtt_sum *= f;
        self.rate_sum *= f;
        self.loss_sum *= f;
        self.rtt_sq *= f;
        self.rate_sq *= f;
        self.rtt_rate *= f;
        for i in 0..3 {
            self.log_sum[i] *= f;
            self.log_sq[i] *= f;
        }
    }

    fn merge(&mut self, o: &Arm) {
        self.n += o.n;
        self.collapses += o.collapses;
        self.rtt_sum += o.rtt_sum;
        self.rate_sum += o.rate_sum;
        self.loss_sum += o.loss_sum;
        self.rtt_sq += o.rtt_sq;
        self.rate_sq += o.rate_sq;
        self.rtt_rate += o.rtt_rate;
        for i in 0..3 {
            self.log_sum[i] += o.log_sum[i];
            self.log_sq[i] += o.log_sq[i];
        }
    }

    /// The same evidence with RTTs multiplied by `r` and rates by `q`.
    fn rescaled(&self, r: f64, q: f64) -> Arm {
        let mut a = *self;
        a.rtt_sum *= r;
        a.rate_sum *= q;
        a.rtt_sq *= r * r;
        a.rate_sq *= q * q;
        a.rtt_rate *= r * q;
        for (i, c) in [(0, r.ln()), (1, q.ln())] {
            // sum (l + c)^2 = sum l^2 + 2 c sum l + n c^2
            a.log_sq[i] += 2.0 * c * a.log_sum[i] + a.n * c * c;
            a.log_sum[i] += a.n * c;
        }
        a
    }

    /// Whether these sums could have come from connections: each at most
    /// `n` times what one connection adds (none at all without
    /// connections), collapses among them. A saved table's arms are held
    /// to it before they are trusted: sums that no connections explain
    /// give means and costs that are not numbers.
    pub fn possible(&self) -> Result<(), &'static str> {
        // Relative slack for rounding; absolute slack for sums that
        // underflow after their weight did.
        let cap = |per: f64| (self.n + 1e-300) * per * (1.0 + 1e-9);
        let within = |sum: f64, lo: f64, hi: f64| sum <= cap(hi) && sum >= -cap(-lo);
        let mut ok = self.collapses <= cap(1.0)
            && within(self.rtt_sum, 0.0, MAX_RTT_US)
            && within(self.rate_sum, 0.0, MAX_RATE)
            && within(self.loss_sum, 0.0, 1.0)
            && within(self.rtt_sq, 0.0, MAX_RTT_US * MAX_RTT_US)
            && within(self.rate_sq, 0.0, MAX_RATE * MAX_RATE)
            && within(self.rtt_rate, 0.0, MAX_RTT_US * MAX_RATE);
        for i in 0..3 {
            let (lo, hi) = log_range(i);
            ok &= within(self.log_sum[i], lo, hi)
                && within(self.log_sq[i], 0.0, lo.abs().max(hi.abs()).powi(2));
        }
        match (ok, self.n > 0.0) {
            (true, _) => Ok(()),
            (false, false) => Err("an algorithm has statistics but no connections"),
            (false, true) => Err("an algorithm's sums are beyond what its connections could add"),
        }
    }

    pub fn has_evidence(&self) -> bool {
        self.n > TINY
    }

    /// It has both collapsed and not, half a connection's worth of each at
    /// least (after discounting): its outcome is sometimes a catastrophe.
    pub fn erratic(&self) -> bool {
        self.collapses > 0.5 && self.n - self.collapses > 0.5
    }

    pub fn mean_rtt(&self) -> f64 {
        self.rtt_sum / self.n
    }

    pub fn mean_rate(&self) -> f64 {
        self.rate_sum / self.n
    }

    /// Mean of the `i`th of [`Seen::logs`].
    pub fn log_mean(&self, i: usize) -> f64 {
        self.log_sum[i] / self.n
    }

    /// Discounted sum of squared deviations of the `i`th log from its mean.
    pub fn log_ss(&self, i: usize) -> f64 {
        (self.log_sq[i] - self.log_sum[i] * self.log_sum[i] / self.n).max(0.0)
    }

    /// Discounted sums of squared deviations of RTT and of rate from their
    /// means, relative to the means squared: `n - 1` times their squared
    /// coefficients of variation.
    pub fn relative_ss(&self) -> [f64; 2] {
        let rel = |sum: f64, sq: f64| {
            let mean = sum / self.n;
            if mean > 0.0 {
                (sq - sum * mean).max(0.0) / (mean * mean)
            } else {
                0.0
            }
        };
        [
            rel(self.rtt_sum, self.rtt_sq),
            rel(self.rate_sum, self.rate_sq),
        ]
    }

    /// bpftune's cost, from means: RTT above `best_rtt` plus rate short of
    /// `best_rate`, as fractions of them.
    pub fn cost(&self, best_rtt: f64, best_rate: f64) -> f64 {
        let mut c = 0.0;
        if best_rtt > 0.0 {
            c += self.mean_rtt() / best_rtt - 1.0;
        }
        if best_rate > 0.0 {
            c += 1.0 - self.mean_rate() / best_rate;
        }
        c
    }

    /// The variance from one connection to the next of the cost
    /// `rtt / best_rtt - rate / best_rate` (plus a constant), shrunk
    /// towards what relative spreads of RTT and rate of `prior` (squared
    /// coefficients of variation) imply, as if that were `weight`
    /// connections' worth: the mean of the scaled-inverse-chi-squared
    /// posterior, with `n - 1` degrees of freedom of our own. A single
    /// connection says nothing about spread.
    pub fn cost_var(&self, best_rtt: f64, best_rate: f64, prior: [f64; 2], weight: f64) -> f64 {
        let (a, b) = (inverse(best_rtt), inverse(best_rate));
        let n = self.n;
        let ss_rtt = self.rtt_sq - self.rtt_sum * self.rtt_sum / n;
        let ss_rate = self.rate_sq - self.rate_sum * self.rate_sum / n;
        let sp = self.rtt_rate - self.rtt_sum * self.rate_sum / n;
        let ss = (a * a * ss_rtt + b * b * ss_rate - 2.0 * a * b * sp).max(0.0);
        let (x, y) = (a * self.mean_rtt(), b * self.mean_rate());
        let implied = x * x * prior[0] + y * y * prior[1];
        let dof = (n - 1.0).max(0.0);
        (ss + weight * implied) / (dof + weight)
    }
}

/// The median of `v` (0 if empty), reordering it.
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The evidence of one bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    /// Its index: a size bucket below [`SIZE_BUCKETS`], a time bucket from
    /// there.
    pub size: u8,
    /// Discounted number of connections that ended in this bucket.
    pub demand: f64,
    pub arms: Vec<Arm>,
}

impl Bucket {
    /// The least mean RTT and the most mean rate among the algorithms
    /// here: the best operating point they have shown (0 where none has).
    pub fn bests(&self) -> (f64, f64) {
        let live = || self.arms.iter().filter(|a| a.has_evidence());
        let rtt = live().map(Arm::mean_rtt).fold(f64::MAX, f64::min);
        let rate = live().map(Arm::mean_rate).fold(0.0, f64::max);
        (if rtt < f64::MAX { rtt } else { 0.0 }, rate)
    }
}

/// Everything known about one peer (or prefix).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The buckets with evidence, in index order.
    pub buckets: Vec<Bucket>,
    /// Per algorithm: could not be set until this connection count.
    pub unavailable_until: Vec<u64>,
    /// Connections closed.
    pub conns: u64,
    /// The change detector's statistic ([`crate::change`]).
    pub change: f64,
    /// Times the path was found changed and the evidence dropped; a peer
    /// that has changed no longer borrows from its prefix.
    pub resets: u32,
}

/// A connection's trail: its last sample in each size bucket it passed,
/// in order, then where it ended.
pub type Trail = [(u8, Seen)];

impl Entry {
    pub fn new(arms: usize) -> Entry {
        Entry {
            buckets: Vec::new(),
            unavailable_until: vec![0; arms],
            conns: 0,
            change: 0.0,
            resets: 0,
        }
    }

    pub fn arms(&self) -> usize {
        self.unavailable_until.len()
    }

    /// Whether a peer could have come to this state by closing
    /// connections: at most [`MAX_COUNT`] of them, no more changes of path
    /// than connections, no more demand in all and no more connections of
    /// an algorithm in a bucket than connections closed, a change statistic
    /// below the detector's threshold, and arms that are
    /// [`Arm::possible`]. A saved table's entries are held to it.
    pub fn possible(&self) -> Result<(), &'static str> {
        let conns = self.conns as f64 * (1.0 + 1e-9) + 1e-9;
        if self.conns > MAX_COUNT || self.unavailable_until.iter().any(|&u| u > MAX_COUNT) {
            return Err("a connection count is beyond 2^53");
        }
        if self.resets as u64 > self.conns {
            return Err("it counts more path changes than connections");
        }
        if !(0.0..crate::change::THRESHOLD).contains(&self.change) {
            return Err("a change statistic is at or beyond the detector's threshold");
        }
        if self.buckets.iter().map(|b| b.demand).sum::<f64>() > conns {
            return Err("it counts more demand than connections");
        }
        for a in self.buckets.iter().flat_map(|b| &b.arms) {
            if a.n > conns {
                return Err("an algorithm counts more connections than its peer");
            }
            a.possible()?;
        }
        Ok(())
    }

    pub fn bucket(&self, size: u8) -> Option<&Bucket> {
        self.buckets.iter().find(|b| b.size == size)
    }

    fn bucket_mut(&mut self, size: u8) -> &mut Bucket {
        let at = self.buckets.partition_point(|b| b.size < size);
        if self.buckets.get(at).is_none_or(|b| b.size != size) {
            let arms = vec![Arm::default(); self.arms()];
            self.buckets.insert(
                at,
                Bucket {
                    size,
                    demand: 0.0,
                    arms,
                },
            );
        }
        &mut self.buckets[at]
    }

    /// Adds a trail to `alg`'s evidence (not to the demand), counting its
    /// collapses against the best mean rate in each bucket before it.
    pub fn add_trail(&mut self, alg: usize, trail: &Trail) {
        for (size, seen) in trail {
            let b = self.bucket_mut(*size);
            let (_, best_rate) = b.bests();
            let arm = &mut b.arms[alg];
            arm.add(seen);
            if seen.rate * COLLAPSE < best_rate {
                arm.collapses += 1.0;
            }
        }
    }

    fn count_close(&mut self, alg: usize, trail: &Trail) {
        self.add_trail(alg, trail);
        if let Some((size, _)) = trail.last() {
            self.bucket_mut(*size).demand += 1.0;
        }
        self.conns += 1;
    }

    /// A connection running `alg` closed with `trail`: everything known
    /// fades by `gamma`, then it counts.
    pub fn learn(&mut self, alg: usize, trail: &Trail, gamma: f64) {
        for b in &mut self.buckets {
            b.demand *= gamma;
            for a in &mut b.arms {
                a.scale(gamma);
            }
        }
        self.count_close(alg, trail);
    }

    /// The path changed: forget what the algorithms showed, except `trail`.
    /// The demand stays: the sizes the peer asks for did not change.
    pub fn reset(&mut self, alg: usize, trail: &Trail) {
        for b in &mut self.buckets {
            b.arms.fill(Arm::default());
        }
        self.buckets.retain(|b| b.demand > TINY);
        self.count_close(alg, trail);
        self.change = 0.0;
        self.resets += 1;
    }

    /// `theirs` (a prefix's evidence) added to this entry's, weighing at
    /// most `cap` connections per algorithm and bucket, and as demand at
    /// most `cap` connections in all. Their RTTs and rates are first scaled
    /// to this peer's, by the median ratio of ours to theirs over the cells
    /// both have (the median, so that one noisy algorithm's draws do not
    /// rescale the others), so a neighbour farther away or on a faster link
    /// still ranks the algorithms for us.
    pub fn blend(&mut self, theirs: &Entry, cap: f64) {
        let (mut lr, mut lq) = (Vec::new(), Vec::new());
        for t in &theirs.buckets {
            let Some(o) = self.bucket(t.size) else {
                continue;
            };
            for (o, t) in o.arms.iter().zip(&t.arms) {
                if o.has_evidence() && t.has_evidence() {
                    lr.push(o.log_mean(0) - t.log_mean(0));
                    lq.push(o.log_mean(1) - t.log_mean(1));
                }
            }
        }
        let (r, q) = (median(&mut lr).exp(), median(&mut lq).exp());
        let demand: f64 = theirs.buckets.iter().map(|b| b.demand).sum();
        for t in &theirs.buckets {
            let ours = self.bucket_mut(t.size);
            if demand > TINY {
                ours.demand += t.demand * cap.min(demand) / demand;
            }
            for (o, t) in ours.arms.iter_mut().zip(&t.arms) {
                if t.has_evidence() {
                    let mut t = t.rescaled(r, q);
                    t.scale(cap.min(t.n) / t.n);
                    o.merge(&t);
                }
            }
        }
    }

    /// How much RTT and rate vary from one connection to the next here,
    /// pooled over every algorithm and bucket with more than one
    /// connection (squared coefficients of variation), shrunk towards
    /// `prior` as if that were `weight` connections' worth: the noise of
    /// the path, which is what an algorithm tried once is assumed to have.
    pub fn spread(&self, prior: f64, weight: f64) -> [f64; 2] {
        let (mut ss, mut dof) = ([0.0; 2], 0.0);
        for a in self.buckets.iter().flat_map(|b| &b.arms) {
            if a.n > 1.0 {
                let r = a.relative_ss();
                ss[0] += r[0];
                ss[1] += r[1];
                dof += a.n - 1.0;
            }
        }
        ss.map(|s| (s + weight * prior) / (dof + weight))
    }

    /// Each algorithm's cost over the peer's mix, with its standard error
    /// and the share of the mix where it is erratic ([`Arm::erratic`]);
    /// `None` for an algorithm without evidence in any bucket the peer asks
    /// for. Each algorithm's spread is its own, shrunk towards the path's
    /// ([`Entry::spread`] with `prior` and `weight`).
    ///
    /// The estimate is post-stratified: the cost in each bucket weighted by
    /// the peer's demand there. Where an algorithm has no evidence in a
    /// bucket the peer asks for, its cost there is taken to be like the
    /// others' there: their mean, with their spread (at least the path's)
    /// as its uncertainty. So an algorithm only tried on the cheap sizes is
    /// neither credited with them alone nor written off, and drawing from
    /// its posterior tries it on the others.
    pub fn estimates(&self, prior: f64, weight: f64) -> Vec<Option<Estimate>> {
        let spread = self.spread(prior, weight);
        let total: f64 = self.buckets.iter().map(|b| b.demand).sum();
        // Without any close (only open connections' trails so far), each
        // bucket with evidence counts alike.
        let share = |b: &Bucket| {
            if total > TINY {
                b.demand / total
            } else if b.arms.iter().any(Arm::has_evidence) {
                1.0
            } else {
                0.0
            }
        };
        let norm: f64 = self.buckets.iter().map(share).sum();
        // Per algorithm: cost, variance, evidence, whether any of it is
        // its own, and the share where it is erratic.
        let mut acc = vec![(0.0, 0.0, 0.0, false, 0.0); self.arms()];
        for b in self.buckets.iter().filter(|b| share(b) > TINY) {
            let w = share(b) / norm;
            let (best_rtt, best_rate) = b.bests();
            let cells: Vec<Option<(f64, f64, f64)>> = b
                .arms
                .iter()
                .map(|a| {
                    a.has_evidence().then(|| {
                        let var = a.cost_var(best_rtt, best_rate, spread, weight);
                        (a.cost(best_rtt, best_rate), var / a.n, a.n)
                    })
                })
                .collect();
            let costs: Vec<f64> = cells.iter().flatten().map(|c| c.0).collect();
            let m = costs.len().max(1) as f64;
            let mean = costs.iter().sum::<f64>() / m;
            let others = costs.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / m;
            for ((s, cell), a) in acc.iter_mut().zip(&cells).zip(&b.arms) {
                if a.erratic() {
                    s.4 += w;
                }
                match cell {
                    Some((cost, var, n)) => {
                        s.0 += w * cost;
                        s.1 += w * w * var;
                        s.2 += n;
                        s.3 = true;
                    }
                    None => {
                        s.0 += w * mean;
                        s.1 += w * w * others.max(spread[0] + spread[1]);
                    }
                }
            }
        }
        acc.into_iter()
            .map(|(cost, var, n, seen, erratic)| {
                seen.then(|| Estimate {
                    cost,
                    se: var.sqrt(),
                    n,
                    erratic,
                })
            })
            .collect()
    }
}

/// An algorithm's cost at a peer over its mix, the standard error of that
/// estimate, the evidence behind it (connections' worth, summed over
/// buckets), and the share of the mix (by demand) where it is erratic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub cost: f64,
    pub se: f64,
    pub n: f64,
    pub erratic: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(rtt_us: f64, rate: f64) -> Seen {
        Seen {
            rtt_us,
            rate,
            loss: 0.0,
        }
    }

    #[test]
    fn buckets_grow_by_four_from_64_kib_and_from_250_ms() {
        assert_eq!(size_bucket(0), 0);
        assert_eq!(size_bucket(65_535), 0);
        assert_eq!(size_bucket(65_536), 1);
        assert_eq!(size_bucket(262_143), 1);
        assert_eq!(size_bucket(1_000_000), 2, "a decimal megabyte");
        assert_eq!(size_bucket(1 << 20), 3);
        assert_eq!(size_bucket(36_000_000), 5);
        assert_eq!(size_bucket(1 << 30), 7);
        assert_eq!(size_bucket(u64::MAX), 7);
        assert_eq!(time_bucket(0), 8);
        assert_eq!(time_bucket(249_999), 8);
        assert_eq!(time_bucket(3_000_000), 10);
        assert_eq!(time_bucket(64_000_000), 13);
        assert_eq!(time_bucket(u64::MAX), 13);
        let labels: Vec<String> = (0..BUCKETS).map(bucket_label).collect();
        assert_eq!(
            labels,
            [
                "<64K", "64K-256K", "256K-1M", "1M-4M", "4M-16M", "16M-64M", "64M-256M", "256M+",
                "<250ms", "250ms-1s", "1s-4s", "4s-16s", "16s-64s", "64s+"
            ]
        );
    }

    fn no_spread(e: &Entry) -> Vec<Option<Estimate>> {
        e.estimates(0.0, 1.0)
    }

    #[test]
    fn costs_are_fractions_from_the_best_arm_in_each_bucket_weighted_by_demand() {
        let mut e = Entry::new(3);
        // Bucket 2: arm 0 is best, arm 1 has 1.5x its RTT and half its rate.
        e.learn(0, &[(2, seen(1000.0, 100.0))], 1.0);
        e.learn(1, &[(2, seen(1500.0, 50.0))], 1.0);
        // Bucket 10, twice the demand: arm 1 best, arm 0 at twice its RTT.
        for _ in 0..2 {
            e.learn(1, &[(10, seen(2000.0, 400.0))], 1.0);
            e.learn(0, &[(10, seen(4000.0, 400.0))], 1.0);
        }
        let c = no_spread(&e);
        let cost = |i: usize| c[i].unwrap().cost;
        // Demand: 2 connections ended in bucket 2, 4 in bucket 10.
        assert!((cost(0) - (2.0 * 0.0 + 4.0 * 1.0) / 6.0).abs() < 1e-12);
        assert!((cost(1) - (2.0 * 1.0 + 4.0 * 0.0) / 6.0).abs() < 1e-12);
        assert_eq!(c[2], None);
        assert_eq!(c[0].unwrap().n, 3.0);
        // Identical outcomes and no prior spread: no uncertainty.
        assert_eq!(c[1].unwrap().se, 0.0);
    }

    #[test]
    fn an_algorithm_missing_from_a_bucket_is_priced_there_like_the_others() {
        let mut e = Entry::new(3);
        e.learn(0, &[(2, seen(1000.0, 100.0))], 1.0);
        e.learn(1, &[(2, seen(1000.0, 50.0))], 1.0);
        e.learn(2, &[(10, seen(1000.0, 100.0))], 1.0);
        let c = no_spread(&e);
        // Bucket 2 (2/3 of the demand): costs 0 and 0.5, mean 0.25, spread
        // 0.0625; bucket 10: arm 2 alone.
        let arm2 = c[2].unwrap();
        assert!((arm2.cost - 2.0 / 3.0 * 0.25).abs() < 1e-12);
        assert!((arm2.se - (4.0 / 9.0 * 0.0625f64).sqrt()).abs() < 1e-12);
        // Arms 0 and 1 take bucket 10 as arm 2 alone there: cost 0.
        assert!((c[1].unwrap().cost - 2.0 / 3.0 * 0.5).abs() < 1e-12);
        assert_eq!(c[0].unwrap().cost, 0.0);
    }

    #[test]
    fn discounting_fades_evidence_and_demand() {
        let mut e = Entry::new(2);
        e.learn(0, &[(1, seen(1000.0, 100.0))], 0.5);
        e.learn(1, &[(1, seen(1000.0, 100.0))], 0.5);
        let b = e.bucket(1).unwrap();
        assert_eq!((b.arms[0].n, b.arms[1].n, b.demand), (0.5, 1.0, 1.5));
        assert_eq!(e.conns, 2);
    }

    #[test]
    fn a_trail_counts_in_every_bucket_it_passed_and_as_demand_where_it_ended() {
        let mut e = Entry::new(2);
        e.learn(1, &[(3, seen(1000.0, 50.0)), (10, seen(1100.0, 80.0))], 1.0);
        assert_eq!(e.bucket(3).unwrap().arms[1].n, 1.0);
        assert_eq!(e.bucket(3).unwrap().demand, 0.0);
        assert_eq!(e.bucket(10).unwrap().demand, 1.0);
        // Only bucket 10 is asked for, so only it prices the algorithm.
        let c = no_spread(&e);
        assert_eq!((c[0], c[1].unwrap().cost), (None, 0.0));
        // A transfer of arm 0 ends in bucket 3, now asked for as much as
        // bucket 10: there arm 1's trail competes with it.
        e.learn(0, &[(3, seen(900.0, 60.0))], 1.0);
        let c = no_spread(&e);
        let in_3 = 1000.0 / 900.0 - 1.0 + (1.0 - 50.0 / 60.0);
        let arm1 = c[1].unwrap().cost;
        assert!((arm1 - (in_3 + 0.0) / 2.0).abs() < 1e-12, "{arm1}");
    }

    #[test]
    fn spread_is_the_arms_own_once_it_has_some_and_the_paths_before() {
        let mut a = Arm::default();
        a.add(&seen(1000.0, 100.0));
        // One connection: the prior, as RTT and rate at the best.
        assert!((a.cost_var(1000.0, 100.0, [0.01, 0.04], 2.0) - 0.05).abs() < 1e-12);
        a.add(&seen(1200.0, 100.0));
        a.add(&seen(800.0, 100.0));
        // RTTs 1000 +- 200: squared deviations sum to 80,000 µs², in cost
        // units (over the best RTT, 1000) 0.08, over 2 degrees of freedom.
        let v = a.cost_var(1000.0, 100.0, [0.0; 2], 0.0);
        assert!((v - 0.04).abs() < 1e-9, "{v}");
        // Rate and RTT moving together cancel in the cost.
        let mut b = Arm::default();
        b.add(&seen(1000.0, 100.0));
        b.add(&seen(2000.0, 200.0));
        assert!(b.cost_var(1000.0, 100.0, [0.0; 2], 0.0) < 1e-9);
        // The path's spread pools the arms with more than one connection.
        let mut e = Entry::new(2);
        for r in [90.0, 110.0] {
            e.learn(0, &[(10, seen(1000.0, r))], 1.0);
        }
        e.learn(1, &[(10, seen(1000.0, 500.0))], 1.0);
        let s = e.spread(0.0, 1.0);
        // Rates 90 and 110: relative squared deviations 0.02 over 1 + 1.
        assert!((s[1] - 0.01).abs() < 1e-12 && s[0] == 0.0, "{s:?}");
    }

    #[test]
    fn a_prefix_lends_its_ranking_scaled_and_capped() {
        let mut mine = Entry::new(2);
        mine.learn(0, &[(10, seen(2000.0, 50.0))], 1.0);
        let mut theirs = Entry::new(2);
        for _ in 0..10 {
            theirs.learn(0, &[(10, seen(1000.0, 100.0))], 1.0);
            theirs.learn(1, &[(10, seen(800.0, 100.0))], 1.0);
        }
        mine.blend(&theirs, 2.0);
        let b = mine.bucket(10).unwrap();
        // Their RTTs doubled and rates halved, as arm 0 shows; at most 2
        // connections' worth each.
        assert!((b.arms[1].mean_rtt() - 1600.0).abs() < 1e-9);
        assert!((b.arms[1].mean_rate() - 50.0).abs() < 1e-9);
        assert!((b.arms[1].n - 2.0).abs() < 1e-12);
        assert!((b.arms[0].n - 3.0).abs() < 1e-12);
        assert!((b.arms[0].mean_rtt() - 2000.0).abs() < 1e-9);
        assert!((b.demand - 3.0).abs() < 1e-12);
        // The rescaled logs and squares agree with the rescaled values.
        assert!((b.arms[1].log_mean(0) - 1600f64.ln()).abs() < 1e-9);
        assert!(b.arms[1].log_ss(0) < 1e-9);
        assert!(b.arms[1].relative_ss()[0] < 1e-9);
    }

    #[test]
    fn an_arm_that_has_collapsed_and_not_is_erratic_where_the_peer_asks() {
        let mut e = Entry::new(3);
        // The first connection in a bucket has no best to fall short of.
        e.learn(0, &[(10, seen(1000.0, 1.0))], 1.0);
        assert_eq!(e.bucket(10).unwrap().arms[0].collapses, 0.0);
        e.learn(0, &[(10, seen(1000.0, 199.0))], 1.0);
        // Arm 1: an eighth of the best mean rate (arm 0's, 100) is 12.5.
        for rate in [100.0, 12.0, 13.0] {
            e.learn(1, &[(10, seen(1000.0, rate))], 1.0);
        }
        // Arm 2: slow every time, so not erratic.
        for rate in [1.0, 2.0] {
            e.learn(2, &[(10, seen(1000.0, rate))], 1.0);
        }
        let b = e.bucket(10).unwrap();
        let counts: Vec<(f64, f64)> = b.arms.iter().map(|a| (a.n, a.collapses)).collect();
        assert_eq!(counts, [(2.0, 0.0), (3.0, 1.0), (2.0, 2.0)]);
        let erratic: Vec<bool> = b.arms.iter().map(Arm::erratic).collect();
        assert_eq!(erratic, [false, true, false]);
        // Three of ten connections end in bucket 2, where nobody is
        // erratic: arm 1 is erratic over 70% of the mix.
        e.learn(0, &[(2, seen(1000.0, 100.0))], 1.0);
        e.learn(1, &[(2, seen(1000.0, 100.0))], 1.0);
        e.learn(2, &[(2, seen(1000.0, 100.0))], 1.0);
        let c = no_spread(&e);
        let share: Vec<f64> = c.iter().map(|c| c.unwrap().erratic).collect();
        assert_eq!(share[0], 0.0);
        assert!((share[1] - 0.7).abs() < 1e-12, "{share:?}");
        assert_eq!(share[2], 0.0);
        // A collapse fades with the rest: at half a connection's worth the
        // arm is no longer erratic.
        let mut a = e.bucket(10).unwrap().arms[1];
        a.scale(0.5);
        assert!(!a.erratic(), "{a:?}");
    }

    #[test]
    fn a_reset_keeps_the_demand_and_the_triggering_trail() {
        let mut e = Entry::new(2);
        e.learn(0, &[(2, seen(1000.0, 100.0))], 1.0);
        e.learn(1, &[(10, seen(1000.0, 100.0))], 1.0);
        e.change = 1.5;
        e.reset(1, &[(4, seen(500.0, 10.0)), (10, seen(600.0, 20.0))]);
        assert_eq!(e.bucket(2).unwrap().arms[0].n, 0.0);
        assert_eq!(e.bucket(2).unwrap().demand, 1.0);
        assert_eq!(e.bucket(10).unwrap().demand, 2.0);
        assert_eq!(e.bucket(10).unwrap().arms[1].mean_rtt(), 600.0);
        assert_eq!(e.bucket(4).unwrap().arms[1].n, 1.0);
        assert_eq!((e.conns, e.resets, e.change), (3, 1, 0.0));
    }
}
