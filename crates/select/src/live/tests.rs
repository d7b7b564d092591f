use super::*;
use crate::peer;

fn cfg(policy: PolicyKind, cands: &[&str]) -> Config {
    Config {
        policy,
        kleinrock: BanditConfig {
            candidates: cands.iter().map(|s| s.to_string()).collect(),
            ..BanditConfig::default()
        },
        needs_ecn: cands.iter().map(|c| c.starts_with("dctcp")).collect(),
        ecn_allow: Vec::new(),
    }
}

fn p(a: &str) -> Peer {
    peer(a.parse().unwrap())
}

fn sample(rtt: u32, rate: u64, bytes: u64) -> Sample {
    Sample {
        min_rtt_us: rtt,
        srtt_us: rtt,
        max_rate_bps: rate,
        mean_rate_bps: rate,
        rate_delivered: 10,
        rate_interval_us: rtt,
        mss: 1448,
        segs_out: 100,
        bytes_acked: bytes,
        age_us: 1_000_000,
        complete: true,
        ..Sample::default()
    }
}

/// One connection to `peer` that gets what the map holds for it (`map`,
/// kept as a daemon keeps it), runs it (or `default` when nothing is held
/// or the set fails) and ends with `truth`'s outcome for what ran.
struct Host {
    map: std::collections::HashMap<Prefix, usize>,
    cookie: u64,
}

impl Host {
    fn new() -> Host {
        Host {
            map: Default::default(),
            cookie: 0,
        }
    }

    fn apply(&mut self, d: &[Decision]) {
        for d in d {
            assert_eq!(self.map.get(&d.key).copied(), d.was, "{d:?}");
            match d.alg {
                Some(a) => self.map.insert(d.key, a),
                None => self.map.remove(&d.key),
            };
        }
    }

    fn held(&self, t: &Tuner, peer: Peer) -> Option<usize> {
        let prefix = t.prefix_of(peer);
        self.map
            .get(&Prefix::peer(peer))
            .or_else(|| prefix.and_then(|p| self.map.get(&p)))
            .copied()
    }

    /// Returns what the connection ran.
    fn connect(
        &mut self,
        t: &mut Tuner,
        peer: Peer,
        default: Option<usize>,
        fails: &[usize],
        truth: &dyn Fn(usize) -> Sample,
    ) -> Option<usize> {
        self.cookie += 1;
        let chosen = self.held(t, peer);
        let outcome = match chosen {
            None => Outcome::Unchosen,
            Some(c) if fails.contains(&c) => Outcome::Failed(-524),
            Some(_) => Outcome::Set,
        };
        let running = if outcome == Outcome::Set {
            chosen
        } else {
            default
        };
        let o = Opened {
            cookie: self.cookie,
            peer,
            chosen,
            outcome,
            running,
            ecn: false,
        };
        let d = t.opened(0, &o);
        self.apply(&d);
        let s = running.map(truth).unwrap_or_else(|| sample(5000, 1, 1000));
        let d = t.closed(
            0,
            &Closed {
                cookie: self.cookie,
                peer,
                running,
                switched: false,
                sample: s,
                ce: 0,
            },
        );
        self.apply(&d);
        running
    }
}

#[test]
fn the_map_converges_on_the_cheapest_and_a_new_neighbour_starts_there() {
    let mut t = Tuner::new(cfg(PolicyKind::Kleinrock, &["cubic", "bbr", "reno"]));
    let mut h = Host::new();
    let truth = |a: usize| match a {
        1 => sample(1000, 12_000_000, 4_000_000),
        0 => sample(1400, 9_000_000, 4_000_000),
        _ => sample(1500, 8_000_000, 4_000_000),
    };
    let a = p("10.1.2.3");
    let ran: Vec<Option<usize>> = (0..40)
        .map(|_| h.connect(&mut t, a, Some(0), &[], &truth))
        .collect();
    assert_eq!(ran[0], Some(0), "nothing held yet: the default");
    let late = ran[20..].iter().filter(|r| **r == Some(1)).count();
    assert!(late >= 18, "{ran:?}");
    // A peer never seen in the same /24 starts from the prefix's choice.
    let b = p("10.1.2.99");
    assert_eq!(h.held(&t, b), Some(1), "{:?}", h.map);
    assert_eq!(h.held(&t, p("10.1.3.1")), None, "another /24");
    let (status, more) = t.status(10);
    assert_eq!((status.len(), more), (1, 0));
    let s = &status[0];
    assert_eq!((s.peer, s.next, s.best), (a, Some(1), Some(1)));
    let bbr = s.algs.iter().find(|r| r.alg == 1).unwrap();
    assert_eq!(bbr.min_rtt_us, 1000);
    assert!(bbr.count >= 18 && bbr.greedy >= 15, "{bbr:?}");
    assert_eq!(bbr.metric, bbr.cost.map(|c| (c * 1e6).round() as u64));
    assert_eq!(t.counts.opened, 40);
}

#[test]
fn a_cheapest_algorithm_that_gives_up_goodput_says_so_in_the_status() {
    // The deep cellular buffer of docs/SELECTOR.md: CDG (1) keeps the RTT
    // near the base at a quarter of CUBIC's (0) goodput, and its cost is
    // the less (RTT +233% for CUBIC, goodput -75% for CDG), transfers of
    // one size.
    let truth = |a: usize| match a {
        0 => sample(200_000, 1_500_000, 4_000_000),
        _ => sample(60_000, 375_000, 4_000_000),
    };
    let mut t = Tuner::new(cfg(PolicyKind::Kleinrock, &["cubic", "cdg"]));
    let mut h = Host::new();
    let a = p("10.33.0.1");
    for _ in 0..30 {
        h.connect(&mut t, a, Some(0), &[], &truth);
    }
    let (s, _) = t.status(1);
    assert_eq!(s[0].best, Some(1));
    let trade = s[0].trade.expect("CDG gives up goodput for RTT");
    assert_eq!((trade.choice, trade.rival), (1, 0), "{trade:?}");
    assert_eq!(trade.to_string(), "-75% goodput for -70% RTT");
    // bpftune's policy keeps no spread to judge noise by: no trade.
    let mut t = Tuner::new(cfg(PolicyKind::Bpftune, &[]));
    let mut h = Host::new();
    for _ in 0..30 {
        h.connect(&mut t, a, Some(0), &[], &truth);
    }
    assert_eq!(t.status(1).0[0].trade, None);
}

#[test]
fn a_failed_set_is_not_retried_and_does_not_poison_the_peer() {
    for policy in [PolicyKind::Kleinrock, PolicyKind::Bpftune] {
        let mut t = Tuner::new(cfg(policy, &["cdg", "cubic"]));
        let mut h = Host::new();
        // cdg (index 0 for Kleinrock; htcp, 2, for bpftune) cannot be set.
        let bad = match policy {
            PolicyKind::Kleinrock => 0,
            PolicyKind::Bpftune => 2,
        };
        let truth = |_: usize| sample(1000, 10_000_000, 1_000_000);
        let a = p("192.0.2.7");
        let mut tried = 0;
        for _ in 0..45 {
            let chosen = h.held(&t, a);
            tried += (chosen == Some(bad)) as u32;
            h.connect(&mut t, a, Some(1), &[bad], &truth);
        }
        assert_eq!(tried, 1, "{policy:?}: tried once in 45 connections");
        if let Some(prefix) = t.prefix_of(a) {
            assert_ne!(
                h.map.get(&prefix),
                Some(&bad),
                "new peers there are not offered it"
            );
        }
        assert_eq!(t.counts.failed, 1);
        let (s, _) = t.status(1);
        let row = s[0].algs.iter().find(|r| r.alg == bad).unwrap();
        assert!(row.unavailable && row.tally.failed == 1, "{row:?}");
    }
}

#[test]
fn an_algorithm_that_needs_ecn_is_proposed_only_where_ecn_was_shown_or_allowed() {
    let mut c = cfg(PolicyKind::Kleinrock, &["dctcp", "cubic"]);
    c.ecn_allow = vec![Prefix::parse("198.51.100.0/24").unwrap()];
    let mut t = Tuner::new(c);
    let (plain, shown, listed) = (p("203.0.113.5"), p("203.0.113.9"), p("198.51.100.4"));
    let mut proposed = [0u32; 3];
    for (i, (peer, ecn)) in [(plain, false), (shown, true), (listed, false)]
        .into_iter()
        .enumerate()
    {
        for k in 0..30u64 {
            let o = Opened {
                cookie: i as u64 * 100 + k,
                peer,
                chosen: None,
                outcome: Outcome::Unchosen,
                running: Some(1),
                ecn,
            };
            for d in t.opened(0, &o) {
                proposed[i] += (d.alg == Some(0)) as u32;
            }
            assert_ne!(
                (i, t.facts.peek(peer).unwrap().next),
                (0, Some(0)),
                "dctcp for a peer without ECN"
            );
            let mut s = sample(1000, 1_000_000, 100_000);
            s.srtt_us = 3000;
            t.closed(
                0,
                &Closed {
                    cookie: o.cookie,
                    peer,
                    running: Some(1),
                    switched: false,
                    sample: s,
                    ce: 0,
                },
            );
        }
    }
    assert_eq!(proposed[0], 0);
    assert!(proposed[1] > 0 && proposed[2] > 0, "{proposed:?}");
}

#[test]
fn bpftune_chooses_from_the_fourth_connection_and_learns_what_it_set() {
    let mut t = Tuner::new(cfg(PolicyKind::Bpftune, &[]));
    assert_eq!(t.candidates(), ["cubic", "bbr", "htcp", "dctcp"]);
    let mut h = Host::new();
    let a = p("2001:db8::5");
    let truth = |x: usize| sample(1000 + 100 * x as u32, 1_000_000, 50_000);
    for i in 0..3 {
        assert_eq!(h.held(&t, a), None, "connection {i}");
        h.connect(&mut t, a, Some(0), &[], &truth);
    }
    assert!(h.held(&t, a).is_some(), "the fourth is chosen for");
    for _ in 0..20 {
        h.connect(&mut t, a, Some(0), &[], &truth);
    }
    let (s, _) = t.status(5);
    let learned: u64 = s[0].algs.iter().map(|r| r.count).sum();
    assert_eq!(learned, 20, "every connection it set, from the fourth on");
    assert_eq!(t.counts.set.iter().sum::<u64>(), 20);
}

#[test]
fn a_table_of_the_other_policy_is_refused_not_replaced() {
    let dir = std::env::temp_dir().join(format!("kr-live-table-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("table");
    let mut k = Tuner::new(cfg(PolicyKind::Kleinrock, &["cubic", "bbr"]));
    let mut h = Host::new();
    for _ in 0..5 {
        h.connect(&mut k, p("10.0.0.1"), Some(0), &[], &|_| {
            sample(1000, 1_000_000, 10_000)
        });
    }
    k.save(&path).unwrap();
    let mut again = Tuner::new(cfg(PolicyKind::Kleinrock, &["cubic", "bbr"]));
    assert!(again.load(&path).unwrap());
    assert_eq!(
        persist::to_text(match &again.policy {
            Policy::Kleinrock(b) => b,
            _ => unreachable!(),
        }),
        std::fs::read_to_string(&path).unwrap()
    );
    assert_eq!(again.decisions().len(), 2, "the peer and its prefix");
    let mut b = Tuner::new(cfg(PolicyKind::Bpftune, &[]));
    let e = b.load(&path).unwrap_err().to_string();
    assert!(e.ends_with("holds a table of Kleinrock's policy, which this daemon (bpftune policy) would replace; give it another table path or remove the file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn prefixes_parse_print_and_contain() {
    let v4 = Prefix::parse("10.0.0.0/8").unwrap();
    assert_eq!(v4.len, 104);
    assert_eq!(v4.to_string(), "10.0.0.0/8");
    assert!(v4.contains(p("10.200.1.1")) && !v4.contains(p("11.0.0.1")));
    let v6 = Prefix::parse("2001:db8::/32").unwrap();
    assert!(v6.contains(p("2001:db8::1")) && !v6.contains(p("10.0.0.1")));
    assert_eq!(
        Prefix::parse("192.0.2.1").unwrap(),
        Prefix::peer(p("192.0.2.1"))
    );
    assert_eq!(
        Prefix::parse("10.0.0.1/8").unwrap_err(),
        "`10.0.0.1/8` has host bits set beyond its length; write the network address"
    );
    assert_eq!(
        Prefix::parse("10.0.0.0/33").unwrap_err(),
        "`10.0.0.0/33` has a prefix length that is not 0 to 32"
    );
    assert!(Prefix::parse("ten")
        .unwrap_err()
        .starts_with("`ten` is not an address"));
    assert!(Prefix::parse("0.0.0.0/0").unwrap().contains(p("8.8.8.8")));
}
