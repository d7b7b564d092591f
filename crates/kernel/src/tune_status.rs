//! The tuner's status, as `kleinrock tune status` prints it: bpftune's
//! table (IPAddress CongAlg Metric Count Greedy MinRtt MaxRtDlvr, its
//! units) with Kleinrock's columns beside it, as text and as JSON.
//!
//! The running daemon renders both and writes them atomically (a
//! temporary file renamed over the old) into its state directory, at most
//! once a second and only when something changed; `status` only reads
//! them. The learned state lives in the daemon's memory, not in BPF maps
//! (they hold only the decisions), so reading pinned maps would show the
//! choices without the reasons; a file needs no protocol between the
//! daemon and the command, no root to read, and outlives a daemon that
//! died (the status then says so).

use std::fmt::Write as _;
use std::path::Path;

use kleinrock_select::live::{Counts, PeerStatus};

use crate::Error;

/// What the status says about the daemon itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub policy: String,
    /// `run` or `advise`.
    pub mode: String,
    pub pid: u32,
    pub cgroup: String,
    pub started_unix: u64,
    pub written_unix: u64,
    /// `None`: no table file; `Some(None)`: not saved yet.
    pub table: Option<(String, Option<u64>)>,
    /// (spec, kernel name) per candidate.
    pub candidates: Vec<(String, String)>,
    /// The program's counters: reports, reports lost, connections without
    /// storage, reports that did not decode.
    pub reports: u64,
    pub lost: u64,
    pub no_storage: u64,
    pub undecodable: u64,
    pub counts: Counts,
    /// Peers the policy remembers, and those not shown.
    pub peers: usize,
    pub more: usize,
    /// The daemon has stopped (its last words).
    pub stopped: bool,
}

fn cand(h: &Header, i: Option<usize>) -> String {
    match i {
        Some(i) => h
            .candidates
            .get(i)
            .map_or_else(|| i.to_string(), |c| c.0.clone()),
        None => "default".into(),
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.filter(|v| v.is_finite())
        .map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// The status as a person reads it.
pub fn text(h: &Header, peers: &[PeerStatus]) -> String {
    let mut s = String::new();
    let state = if h.stopped { "stopped" } else { "running" };
    let _ = writeln!(
        s,
        "kleinrock tune: {state} (pid {}), policy {}, mode {}, cgroup {}, since {}",
        h.pid,
        h.policy,
        h.mode,
        h.cgroup,
        crate::pins::format_utc(h.started_unix)
    );
    let table = match &h.table {
        None => "no table file".to_string(),
        Some((p, None)) => format!("table {p} (not saved yet)"),
        Some((p, Some(t))) => format!("table {p} (saved {})", crate::pins::format_utc(*t)),
    };
    let c = &h.counts;
    let _ = writeln!(
        s,
        "connections: {} opened, {} ended; set {}, failed {}, refused without ECN {}, \
         switched by the retransmission rule {}; {} decisions; {table}",
        c.opened,
        c.closed,
        c.set.iter().sum::<u64>(),
        c.failed,
        c.no_ecn,
        c.switched,
        c.decisions
    );
    let _ = writeln!(
        s,
        "reports: {} (lost {}, undecodable {}); connections not tuned for want of storage: {}",
        h.reports, h.lost, h.undecodable, h.no_storage
    );
    let _ = writeln!(s, "{:>20} {:>16} {:>20}", "CongAlg", "Kernel", "Count");
    for (i, (spec, name)) in h.candidates.iter().enumerate() {
        let _ = writeln!(
            s,
            "{spec:>20} {name:>16} {:>20}",
            c.set.get(i).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(
        s,
        "{:>16} {:>20} {:>10} {:>8} {:>8} {:>8} {:>10} | {:>7} {:>8} {:>9} {:>6} {:>6} {:>5} {:<22} Trade",
        "IPAddress",
        "CongAlg",
        "Metric",
        "Count",
        "Greedy",
        "MinRtt",
        "MaxRtDlvr",
        "Cost",
        "RTT(ms)",
        "Mbit/s",
        "Retr%",
        "CE",
        "Fails",
        "Note",
    );
    for p in peers {
        let addr = kleinrock_select::addr(p.peer).to_string();
        for a in &p.algs {
            let t = &a.tally;
            let n = t.conns.max(1) as f64;
            let has = t.conns > 0;
            let mut note = Vec::new();
            if p.next == Some(a.alg) {
                note.push(if h.mode == "advise" {
                    "would set"
                } else {
                    "next"
                });
            }
            if p.best == Some(a.alg) {
                note.push("best");
            }
            if a.unavailable {
                note.push("unavailable");
            }
            // What the cheapest gives up, on its row.
            let trade = p
                .trade
                .filter(|t| t.choice == a.alg)
                .map(|t| format!("{t} against {}", cand(h, Some(t.rival))))
                .unwrap_or_default();
            let row = format!(
                "{:>16} {:>20} {:>10} {:>8} {:>8} {:>8} {:>10} | {:>7} {:>8} {:>9} {:>6} {:>6} {:>5} {:<22} {}",
                addr,
                cand(h, Some(a.alg)),
                a.metric.map_or_else(|| "-".into(), |m| m.to_string()),
                a.count,
                a.greedy,
                a.min_rtt_us,
                a.max_rt_dlvr,
                opt(a.cost, 3),
                opt(has.then(|| t.rtt_sum_us / n / 1000.0), 2),
                opt(has.then(|| t.goodput_sum / n * 8.0 / 1e6), 2),
                opt(
                    (t.segs > 0).then(|| 100.0 * t.retrans as f64 / t.segs as f64),
                    2
                ),
                t.ce,
                t.failed,
                note.join(", "),
                trade
            );
            let _ = writeln!(s, "{}", row.trim_end());
        }
        if p.algs.iter().all(|a| p.next != Some(a.alg)) {
            let _ = writeln!(
                s,
                "{:>16} {:>20} next connection: {}{}",
                addr,
                "",
                cand(h, p.next),
                if p.ecn { " (ECN seen)" } else { "" }
            );
        }
    }
    if h.more > 0 {
        let _ = writeln!(s, "({} more peers not shown)", h.more);
    }
    s
}

/// A JSON string literal.
fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn jnum(x: Option<f64>) -> String {
    x.filter(|v| v.is_finite())
        .map_or_else(|| "null".into(), |v| format!("{v}"))
}

fn jalg(h: &Header, i: Option<usize>) -> String {
    match i {
        Some(_) => js(&cand(h, i)),
        None => "null".into(),
    }
}

/// The status for programs.
pub fn json(h: &Header, peers: &[PeerStatus]) -> String {
    let c = &h.counts;
    let mut s = String::from("{");
    let _ = write!(
        s,
        "\"running\":{},\"pid\":{},\"policy\":{},\"mode\":{},\"cgroup\":{},\"started_unix\":{},\"written_unix\":{},",
        !h.stopped,
        h.pid,
        js(&h.policy),
        js(&h.mode),
        js(&h.cgroup),
        h.started_unix,
        h.written_unix
    );
    match &h.table {
        None => s.push_str("\"table\":null,\"saved_unix\":null,"),
        Some((p, t)) => {
            let _ = write!(
                s,
                "\"table\":{},\"saved_unix\":{},",
                js(p),
                t.map_or_else(|| "null".into(), |t| t.to_string())
            );
        }
    }
    s.push_str("\"candidates\":[");
    for (i, (spec, name)) in h.candidates.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"spec\":{},\"kernel\":{},\"set\":{}}}",
            js(spec),
            js(name),
            c.set.get(i).copied().unwrap_or(0)
        );
    }
    let _ = write!(
        s,
        "],\"connections\":{{\"opened\":{},\"ended\":{},\"failed\":{},\"refused_without_ecn\":{},\"switched\":{},\"decisions\":{}}},",
        c.opened, c.closed, c.failed, c.no_ecn, c.switched, c.decisions
    );
    let _ = write!(
        s,
        "\"reports\":{{\"written\":{},\"lost\":{},\"undecodable\":{},\"no_storage\":{}}},\"peers_remembered\":{},\"peers_not_shown\":{},\"peers\":[",
        h.reports, h.lost, h.undecodable, h.no_storage, h.peers, h.more
    );
    for (i, p) in peers.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"address\":{},\"next\":{},\"best\":{},\"ecn\":{},\"seen_ms\":{},\"algorithms\":[",
            js(&kleinrock_select::addr(p.peer).to_string()),
            jalg(h, p.next),
            jalg(h, p.best),
            p.ecn,
            p.seen_ms
        );
        for (j, a) in p.algs.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let t = &a.tally;
            let n = t.conns.max(1) as f64;
            let has = t.conns > 0;
            let _ = write!(
                s,
                "{{\"algorithm\":{},\"metric\":{},\"count\":{},\"greedy\":{},\"min_rtt_us\":{},\"max_rt_dlvr\":{},\"cost\":{},\"connections\":{},\"rtt_ms\":{},\"goodput_mbps\":{},\"retrans_pct\":{},\"ce\":{},\"failed\":{},\"unavailable\":{}}}",
                js(&cand(h, Some(a.alg))),
                a.metric.map_or_else(|| "null".into(), |m| m.to_string()),
                a.count,
                a.greedy,
                a.min_rtt_us,
                a.max_rt_dlvr,
                jnum(a.cost),
                t.conns,
                jnum(has.then(|| t.rtt_sum_us / n / 1000.0)),
                jnum(has.then(|| t.goodput_sum / n * 8.0 / 1e6)),
                jnum((t.segs > 0).then(|| 100.0 * t.retrans as f64 / t.segs as f64)),
                t.ce,
                t.failed,
                a.unavailable
            );
        }
        s.push_str("],\"trade\":");
        match p.trade {
            Some(t) => {
                let _ = write!(
                    s,
                    "{{\"algorithm\":{},\"against\":{},\"goodput_pct\":{},\"rtt_pct\":{}}}",
                    jalg(h, Some(t.choice)),
                    jalg(h, Some(t.rival)),
                    jnum(Some(100.0 * t.goodput)),
                    jnum(Some(100.0 * t.rtt))
                );
            }
            None => s.push_str("null"),
        }
        s.push('}');
    }
    s.push_str("]}\n");
    s
}

/// Writes `text` at `path` atomically: a temporary file beside it,
/// renamed over it.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), Error> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error(format!("cannot write {}: {e}", path.display()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_select::live::{AlgStatus, Tally};
    use kleinrock_select::trade::Trade;

    fn header() -> Header {
        Header {
            policy: "kleinrock".into(),
            mode: "run".into(),
            pid: 42,
            cgroup: "/sys/fs/cgroup/unified".into(),
            started_unix: 1_795_365_600,
            written_unix: 1_795_365_660,
            table: Some(("/var/lib/kleinrock-tune/table".into(), None)),
            candidates: vec![
                ("cubic".into(), "cubic".into()),
                ("bbr".into(), "bbr".into()),
            ],
            reports: 10,
            lost: 0,
            no_storage: 0,
            undecodable: 0,
            counts: Counts {
                opened: 5,
                closed: 5,
                set: vec![1, 3],
                ..Counts::default()
            },
            peers: 1,
            more: 0,
            stopped: false,
        }
    }

    fn peer() -> PeerStatus {
        PeerStatus {
            peer: kleinrock_select::peer("192.168.168.1".parse().unwrap()),
            next: Some(1),
            best: Some(1),
            ecn: false,
            seen_ms: 7,
            algs: vec![AlgStatus {
                alg: 1,
                metric: Some(923_173),
                count: 61,
                greedy: 59,
                min_rtt_us: 3,
                max_rt_dlvr: 10024,
                cost: Some(0.923),
                tally: Tally {
                    conns: 2,
                    rtt_sum_us: 4000.0,
                    goodput_sum: 2.0 * 12.5e6,
                    segs: 1000,
                    retrans: 5,
                    ..Tally::default()
                },
                unavailable: false,
            }],
            trade: None,
        }
    }

    #[test]
    fn the_text_has_bpftunes_columns_then_ours() {
        let t = text(&header(), &[peer()]);
        assert!(t.contains(
            "       IPAddress              CongAlg     Metric    Count   Greedy   MinRtt  MaxRtDlvr |    Cost  RTT(ms)    Mbit/s  Retr%     CE Fails Note"
        ), "{t}");
        assert!(t.contains(
            "   192.168.168.1                  bbr     923173       61       59        3      10024 |   0.923     2.00    100.00   0.50      0     0 next, best"
        ), "{t}");
        assert!(
            t.starts_with("kleinrock tune: running (pid 42), policy kleinrock"),
            "{t}"
        );
    }

    #[test]
    fn a_choice_that_gives_up_goodput_says_so_on_its_row() {
        // bbr chosen at 2 ms and 100 Mbit/s; cubic delivered 130.
        let mut p = peer();
        let mut cubic = p.algs[0];
        cubic.alg = 0;
        cubic.tally.goodput_sum = 2.0 * 16.25e6;
        cubic.tally.rtt_sum_us = 2.0 * 5000.0;
        p.algs.insert(0, cubic);
        p.trade = Some(Trade {
            choice: 1,
            rival: 0,
            goodput: 100.0 / 130.0 - 1.0,
            rtt: 2.0 / 5.0 - 1.0,
        });
        let t = text(&header(), std::slice::from_ref(&p));
        assert!(t.contains(&format!(" Fails {:<22} Trade\n", "Note")), "{t}");
        let row = t
            .lines()
            .find(|l| l.contains(" bbr ") && l.contains('|'))
            .unwrap();
        assert!(
            row.ends_with(&format!(
                "0     0 {:<22} -23% goodput for -60% RTT against cubic",
                "next, best"
            )),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.contains(" cubic ") && l.contains('|'))
            .unwrap();
        assert!(!row.contains("goodput for"), "{t}");
        let v: serde_json::Value = serde_json::from_str(&json(&header(), &[p])).unwrap();
        assert_eq!(v["peers"][0]["trade"]["algorithm"], "bbr");
        assert_eq!(v["peers"][0]["trade"]["against"], "cubic");
        assert_eq!(
            v["peers"][0]["trade"]["goodput_pct"]
                .as_f64()
                .unwrap()
                .round(),
            -23.0
        );
        assert_eq!(
            v["peers"][0]["trade"]["rtt_pct"].as_f64().unwrap().round(),
            -60.0
        );
    }

    #[test]
    fn the_json_parses_and_says_the_same() {
        let j = json(&header(), &[peer()]);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["peers"][0]["address"], "192.168.168.1");
        assert_eq!(v["peers"][0]["next"], "bbr");
        assert_eq!(v["peers"][0]["algorithms"][0]["greedy"], 59);
        assert_eq!(v["peers"][0]["algorithms"][0]["goodput_mbps"], 100.0);
        assert_eq!(v["candidates"][1]["set"], 3);
        assert_eq!(v["saved_unix"], serde_json::Value::Null);
        assert_eq!(v["peers"][0]["trade"], serde_json::Value::Null);
        assert_eq!(js("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
