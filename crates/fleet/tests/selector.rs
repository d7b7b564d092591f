//! The selector's targets, measured on the workloads in scenarios/: E4 (seed
//! 003) reproduced with bpftune's policy, and Kleinrock's policy against it
//! on the mixed fleet.

use std::path::PathBuf;

use kleinrock_fleet::{run_policy, Outcomes, Policy, Report, Workload};

fn workload(name: &str) -> Workload {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name);
    Workload::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn simulate(w: &Workload, algorithms: &[String]) -> Outcomes {
    Outcomes::simulate(w, algorithms, 2, &|_| {})
}

fn count(r: &Report, o: &Outcomes, spec: &str) -> usize {
    let a = o.algorithm_index(spec).unwrap();
    r.played.iter().filter(|p| p.alg == a).count()
}

fn mean_goodput(r: &Report) -> f64 {
    r.played.iter().map(|p| p.goodput_bps).sum::<f64>() / r.played.len() as f64
}

fn bpftunes() -> Vec<String> {
    ["cubic", "bbr", "htcp", "dctcp"].map(String::from).to_vec()
}

#[test]
fn e4_at_ten_percent_loss_bpftune_converges_to_bbr_at_several_times_cubics_throughput() {
    let w = workload("select-e4-lossy.toml");
    let o = simulate(&w, &bpftunes());
    let r = run_policy(&w, &o, &mut Policy::bpftune(w.seed), &mut |_| {});
    assert_eq!(r.played.len(), 80);
    // Seed 003: 61 of 78 connections on BBR. The connections before the
    // host has four instances run cubic and switch on retransmissions.
    let bbr = count(&r, &o, "bbr");
    assert!(bbr >= 60, "{bbr} of 80 on bbr\n{}", r.status);
    // The learned table has bbr cheapest (cost 0).
    let row = r
        .status
        .lines()
        .find(|l| l.contains("192.168.168.1") && l.contains(" bbr "))
        .unwrap();
    assert_eq!(row.split_whitespace().nth(2), Some("0"), "{}", r.status);
    // Seed: 490 Mbit/s against 58 with cubic alone.
    let cubic = o.algorithm_index("cubic").unwrap();
    let alone = (0..o.seeds())
        .map(|s| o.get(0, cubic, s).goodput_bps)
        .sum::<f64>()
        / o.seeds() as f64;
    let with = mean_goodput(&r);
    assert!(
        with > 5.0 * alone,
        "selector {with:.0} b/s, cubic alone {alone:.0} b/s"
    );
}

#[test]
fn e4_without_loss_bpftune_settles_on_one_algorithm_as_the_seed_shows() {
    let w = workload("select-e4-lossless.toml");
    let o = simulate(&w, &bpftunes());
    let r = run_policy(&w, &o, &mut Policy::bpftune(w.seed), &mut |_| {});
    // Seed 003: 71 of 81 on DCTCP. Every algorithm fills the link, so the
    // costs tie near zero and the tie-break and the learning rate decide:
    // the first algorithm to reach a metric of 0 is chosen greedily ever
    // after.
    let dctcp = count(&r, &o, "dctcp");
    assert!(dctcp >= 60, "{dctcp} of 80 on dctcp\n{}", r.status);
}

/// Both policies on the fleet `name` (at least 50 destinations over 6
/// path types) with its seed replaced by `seed`.
fn both(name: &str, seed: u64) -> (Workload, Report, Report) {
    let (w, b, k) = play(name, seed);
    assert!(w.destinations().len() >= 50 && w.paths.len() >= 6);
    (w, b, k)
}

/// Both policies on `name` with its seed replaced by `seed`.
fn play(name: &str, seed: u64) -> (Workload, Report, Report) {
    let mut w = workload(name);
    w.seed = seed;
    let o = simulate(&w, &w.algorithms());
    let b = run_policy(&w, &o, &mut Policy::bpftune(w.seed), &mut |_| {});
    let k = run_policy(
        &w,
        &o,
        &mut Policy::kleinrock(&w.candidates, w.seed),
        &mut |_| {},
    );
    assert_eq!(b.played.len(), k.played.len());
    (w, b, k)
}

/// Kleinrock's cost and goodput regret are at most half of bpftune's.
fn halves_the_regret(b: &Report, k: &Report, goodput: bool) {
    assert!(
        k.regret_cost <= 0.5 * b.regret_cost,
        "cost regret {} vs {}",
        k.regret_cost,
        b.regret_cost
    );
    if goodput {
        assert!(
            k.regret_bytes <= 0.5 * b.regret_bytes,
            "goodput regret {} vs {}",
            k.regret_bytes,
            b.regret_bytes
        );
    }
}

/// Every destination on a path not in `except` converges within 10
/// connections and, after its path changes, within 20, with at least 80%
/// of its choices best from there on.
fn converges(k: &Report, except: &[&str]) {
    for p in k
        .phases
        .iter()
        .filter(|p| !except.contains(&p.path.as_str()))
    {
        let limit = if p.changed { 20 } else { 10 };
        let c = p.convergence.unwrap_or(u32::MAX);
        assert!(
            c <= limit,
            "{} ({}, changed {}): converged after {c}",
            p.address,
            p.path,
            p.changed
        );
        assert!(p.share_best >= 0.8);
    }
}

/// [`converges`] with near ties counting as best (`kleinrock_fleet::score`),
/// which is never later than the strict reading.
fn converges_with_ties(k: &Report, except: &[&str]) {
    for p in k
        .phases
        .iter()
        .filter(|p| !except.contains(&p.path.as_str()))
    {
        let limit = if p.changed { 20 } else { 10 };
        let c = p.tie_convergence.unwrap_or(u32::MAX);
        assert!(
            c <= limit && p.tie_share_best >= 0.8,
            "{} ({}, changed {}): converged with ties after {c}",
            p.address,
            p.path,
            p.changed
        );
        assert!(c <= p.convergence.unwrap_or(u32::MAX));
    }
}

/// Each changed path noticed, few false alarms.
fn detects_the_changes(w: &Workload, k: &Report) {
    let changing: u32 = w
        .paths
        .iter()
        .filter(|p| p.after.is_some())
        .map(|p| p.destinations)
        .sum();
    assert!(changing > 0);
    assert!(
        (changing as u64 / 2..=2 * changing as u64).contains(&k.changes_detected),
        "{} changes detected for {changing} changed destinations",
        k.changes_detected
    );
}

// The targets of issue 6 on the mixed fleet (54 destinations, 8 path
// types, two of which change after 30 connections), with seeds 1 to 4.
// With seed 2, one of CDG's four simulated outcomes on the long fat pipe
// collapses (1.6 Mbit/s against 120.8): three connections in four it is
// the best there is, but its expected cost is 0.25 against CUBIC's 0.14.
// Once it has collapsed it is tried again only on a draw that beats the
// incumbent by the risk margin, so those destinations converge too.
// docs/SELECTOR.md has the figures.
#[test]
fn kleinrock_halves_bpftunes_regret_converges_within_ten_and_recovers_within_twenty() {
    for seed in [1, 2, 3, 4] {
        let (w, b, k) = both("select-mixed.toml", seed);
        halves_the_regret(&b, &k, true);
        converges(&k, &[]);
        detects_the_changes(&w, &k);
    }
}

// A third of the connections are 1 MB transfers: per-size evidence keeps
// them from being blamed on whichever algorithm drew them.
#[test]
fn with_mixed_sizes_kleinrock_halves_bpftunes_regret_and_converges() {
    let (w, b, k) = both("select-mixed-sizes.toml", 1);
    halves_the_regret(&b, &k, true);
    converges(&k, &[]);
    detects_the_changes(&w, &k);
    // Seed 2: the regret target holds; convergence does not everywhere
    // (docs/SELECTOR.md).
    let (_, b, k) = both("select-mixed-sizes.toml", 2);
    halves_the_regret(&b, &k, true);
}

// Beyond the tuned fleets (docs/SELECTOR.md): FQ-CoDel and RED at shallow
// and deep settings, with ECN and without, which the policy was not tuned
// on. With seeds 1 to 4 the cost regret is 5-13% of bpftune's and every
// destination converges within 10 connections once near ties count as
// best; strictly, with seed 4 a deep-AQM destination alternates between
// CDG and algorithms within the noise of it (29 to never in
// select_draws's five draws). The goodput regret is at most half of
// bpftune's with seed 1 only: with seeds 2-4 bpftune gets more bytes than
// the oracle, which gives goodput up for RTT on the deep AQMs (CDG).
#[test]
fn on_aqm_edges_kleinrock_halves_bpftunes_cost_regret_and_converges_up_to_ties() {
    for seed in [1, 2, 3, 4] {
        let (_, b, k) = play("select-aqm-edges.toml", seed);
        halves_the_regret(&b, &k, seed == 1);
        converges_with_ties(&k, &[]);
        if seed == 1 {
            converges(&k, &[]);
        }
        // No false alarms on paths that do not change.
        assert_eq!(k.changes_detected, 0, "seed {seed}");
    }
}

// Paths that change after 30 of 60 connections (clean to 3% loss, CoDel to
// bursty loss, 100 Mbit/s to 10, 20 ms to 80 ms), not tuned on. With seeds
// 1 to 4 the cost regret is 28-33% of bpftune's, every change is noticed
// (15 or 16 of 16), and every destination converges within 10 and recovers
// within 20 once near ties count: strictly, with seed 2 a destination
// whose rate fell tenfold takes 28 connections, trying CDG and Vegas,
// whose costs there are within the noise of BBR's. The goodput regret is
// at most half of bpftune's with seed 1 (48%); with seeds 3 and 4 it is
// 50% and 54%, with seed 2 103%. docs/SELECTOR.md, "Beyond the tuned
// fleets", has the figures and the reasons.
#[test]
fn on_changing_paths_kleinrock_recovers_within_twenty_up_to_ties() {
    for seed in [1, 2, 3, 4] {
        let (w, b, k) = play("select-changes.toml", seed);
        halves_the_regret(&b, &k, seed == 1);
        converges_with_ties(&k, &[]);
        if seed == 1 {
            converges(&k, &[]);
        }
        detects_the_changes(&w, &k);
    }
}

// Satellite and mobile paths, not tuned on: the cost regret is at most
// half of bpftune's with seeds 1 to 4 (17-24%), and every destination that does
// not change converges within 10 once near ties count, but for the rare
// long fades behind a deep buffer (with seed 3: a fade hits a connection
// or not, every algorithm's cost there is bimodal, and the policy keeps
// trying the others for 50 connections). What does not hold, and why, is
// in docs/SELECTOR.md: recovery after the LEO path's RTT step, and the
// goodput regret, where bpftune gets more bytes than the oracle, which
// gives goodput up for RTT behind deep buffers.
#[test]
fn on_satellite_and_mobile_paths_kleinrock_halves_bpftunes_cost_regret_and_converges_up_to_ties() {
    for seed in [1, 2, 3, 4] {
        for (name, except) in [
            ("select-satellite.toml", ""),
            ("select-mobile.toml", "bursty fades, deep buffer"),
        ] {
            let (_, b, k) = play(name, seed);
            halves_the_regret(&b, &k, false);
            let before = Report {
                phases: k.phases.iter().filter(|p| !p.changed).cloned().collect(),
                ..k.clone()
            };
            converges_with_ties(&before, &[except]);
        }
    }
}

#[test]
fn a_policy_replays_identically() {
    let w = workload("select-e4-lossy.toml");
    let o = simulate(&w, &bpftunes());
    let a = run_policy(&w, &o, &mut Policy::kleinrock(&bpftunes(), 7), &mut |_| {});
    let b = run_policy(&w, &o, &mut Policy::kleinrock(&bpftunes(), 7), &mut |_| {});
    let algs = |r: &Report| r.played.iter().map(|p| p.alg).collect::<Vec<_>>();
    assert_eq!(algs(&a), algs(&b));
    assert_eq!(a.status, b.status);
}
