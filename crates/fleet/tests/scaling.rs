//! A fleet's cost grows with its connections, not with their square
//! (issue 16: 5,000 destinations took 1.3 s and 20,000 took 24 s, with a
//! choice scanning every open connection of the fleet and a phase table
//! searching every connection per destination). The work is counted
//! (`Report::work`: events, connections grouped, open connections looked
//! at), not timed.

use kleinrock_fleet::{run_policy, Outcomes, Policy, Workload};

/// A fleet of `n` destinations: one path type (or one path type per
/// destination), connections overlapping at each destination (a second
/// long, a mean gap of half a second).
fn fleet(n: u32, one_path_each: bool) -> Workload {
    let path = |name: &str, dests: u32, at: u32| {
        format!(
            "[[path]]\nname = \"{name}\"\ndestinations = {dests}\naddress = \"{}\"\nrtt = \"10ms\"\n[path.link]\nrate = \"10Mbit\"\n",
            std::net::Ipv4Addr::from(0x0a00_0000 + at)
        )
    };
    let mut text = "connections = 6\nduration = \"1s\"\ngap = \"500ms\"\nsample = \"250ms\"\noutcome_seeds = 1\ncandidates = [\"cubic\", \"bbr\"]\n".to_string();
    if one_path_each {
        for i in 0..n {
            text.push_str(&path(&format!("p{i}"), 1, i));
        }
    } else {
        text.push_str(&path("lan", n, 0));
    }
    Workload::parse(&text, "fleet.toml", None).unwrap()
}

/// Work per connection played for each policy on a fleet of `n`.
fn work_per_connection(n: u32, one_path_each: bool, o: Option<&Outcomes>) -> [f64; 2] {
    let w = fleet(n, one_path_each);
    let own;
    let o = match o {
        Some(o) => o,
        None => {
            own = Outcomes::simulate(&w, &w.algorithms(), 2, &|_| {});
            &own
        }
    };
    [
        Policy::bpftune(w.seed),
        Policy::kleinrock(&w.candidates, w.seed),
    ]
    .map(|mut p| {
        let r = run_policy(&w, o, &mut p, &mut |_| {});
        assert_eq!(r.played.len(), n as usize * 6);
        r.work as f64 / r.played.len() as f64
    })
}

#[test]
fn the_work_per_connection_does_not_grow_with_the_destinations() {
    // One path type: the outcomes are the same for every fleet size.
    let w = fleet(1, false);
    let o = Outcomes::simulate(&w, &w.algorithms(), 2, &|_| {});
    let small = work_per_connection(500, false, Some(&o));
    let large = work_per_connection(4000, false, Some(&o));
    for (s, l) in small.iter().zip(&large) {
        // Quadratic steps made it grow with the fleet: 8 times the
        // destinations, 8 times the work per connection.
        assert!(l / s < 1.3, "{small:?} -> {large:?} per connection");
    }
}

#[test]
fn the_work_per_connection_does_not_grow_with_the_path_types() {
    let small = work_per_connection(50, true, None);
    let large = work_per_connection(400, true, None);
    for (s, l) in small.iter().zip(&large) {
        assert!(l / s < 1.3, "{small:?} -> {large:?} per connection");
    }
}
