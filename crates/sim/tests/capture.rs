//! tshark reads the simulator's captures, and its analysis agrees with the
//! simulator's own counters: the retransmissions it flags are the
//! sender's, the SACK blocks it decodes are what the sender's scoreboard
//! took from them, its RTT samples are the sender's within a microsecond,
//! and each end sees exactly the packets the link's counters say crossed
//! it (docs/SCENARIOS.md, "Packet captures"). Needs tshark (Debian's
//! package; scripts/test.sh installs it).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use kleinrock_sim::{scenario, Results, Sim};
use kleinrock_testkit::{installed, require, tshark};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("kr-capture-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `text` (a scenario; `{dir}` stands for `dir`) with its capture in
/// `dir/capture.pcap` (or .pcapng).
fn run(text: &str, dir: &Path) -> (Results, PathBuf) {
    let text = text.replace("{dir}", &dir.display().to_string());
    let mut cfg = scenario::parse(&text, "capture.toml", None).unwrap();
    let file = dir.join(cfg.capture.unwrap().file_name());
    cfg.capture_file = Some(file.clone());
    let r = Sim::new(cfg).unwrap().run(&mut |_| {}).unwrap();
    (r, file)
}

/// Frames matching `filter`.
fn count(file: &Path, filter: &str) -> u64 {
    tshark(file, filter, &["frame.number"]).len() as u64
}

/// One CUBIC upload through a 40-packet FIFO at 20 Mbit/s, 1% random loss
/// on the data's way: slow start overflows the queue, and losses keep
/// coming, so SACK recovery, RACK and loss probes all retransmit. A ping
/// and a UDP download cross too.
const LOSSY: &str = r#"
duration = "3s"
seed = 3
[link]
rate = "20Mbit"
queue = 40
[link.up]
loss = "1%"
[[flow]]
cc = "cubic"
rtt = "30ms"
trace = "{dir}/cubic.csv"
[[ping]]
rtt = "30ms"
interval = "100ms"
[[udp]]
rate = "1Mbit"
rtt = "30ms"
direction = "download"
[capture]
at = "left"
"#;

/// The sender's `pkts_acked` calls, in order: (time in ns, RTT sample in
/// µs or -1, SACKed segments outstanding).
fn pkts_acked(trace: &Path) -> Vec<(u64, i64, u64)> {
    let mut r = kleinrock_trace::read::TraceReader::open(trace).unwrap();
    let [hook, ts, rtt, sacked] =
        ["hook", "ts_ns", "as_rtt_us", "pre_sacked_out"].map(|c| r.column(c).unwrap());
    let mut rows = Vec::new();
    while r.next_row().unwrap().is_some() {
        if r.text(hook) == "pkts_acked" {
            let c = r.cells();
            rows.push((
                c[ts].unwrap() as u64,
                c[rtt].unwrap() as i64,
                c[sacked].unwrap() as u64,
            ));
        }
    }
    rows
}

/// A frame time as tshark prints it (seconds, nine decimals) in ns.
fn ns(epoch: &str) -> u64 {
    let (s, frac) = epoch.split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1_000_000_000 + format!("{frac:0<9}")[..9].parse::<u64>().unwrap()
}

#[test]
fn tshark_agrees_with_the_sender_at_its_end() {
    require!(installed("tshark", "tshark"));
    let dir = Dir::new("lossy");
    let (r, file) = run(LOSSY, &dir.0);
    let f = &r.flows[0];
    assert!(f.retransmits >= 10, "the run must retransmit: {f:?}");

    // Retransmissions: every data segment the sender sent again. tshark
    // calls one sent within its out-of-order window of the highest
    // segment "out-of-order" rather than a retransmission (its heuristic
    // for captures taken mid-path); at the sender's end there is no
    // reordering, so those are retransmissions too.
    let data = "ip.src == 192.0.2.2 && tcp.len > 0";
    let flagged = count(
        &file,
        &format!("{data} && (tcp.analysis.retransmission || tcp.analysis.out_of_order)"),
    );
    assert_eq!(flagged, f.retransmits);
    assert_eq!(count(&file, data), f.segments_sent);

    // ACKs as the sender took them, in order, against its pkts_acked calls
    // at the same instants.
    let mss = 1448u64;
    let acks = tshark(
        &file,
        "ip.src == 198.51.100.2 && tcp.flags.syn == 0",
        &[
            "frame.time_epoch",
            "tcp.ack",
            "tcp.options.sack_le",
            "tcp.options.sack_re",
            "tcp.analysis.ack_rtt",
            "tcp.analysis.acks_frame",
        ],
    );
    let retransmitted: BTreeSet<String> = tshark(
        &file,
        &format!("{data} && (tcp.analysis.retransmission || tcp.analysis.out_of_order)"),
        &["frame.number"],
    )
    .into_iter()
    .map(|row| row[0].clone())
    .collect();
    let mut calls: HashMap<u64, Vec<(i64, u64)>> = HashMap::new();
    for (t, rtt, sacked) in pkts_acked(&dir.0.join("cubic.csv")) {
        calls.entry(t).or_default().push((rtt, sacked));
    }
    let mut at_time: HashMap<u64, usize> = HashMap::new();
    let (mut sacked, mut blocks_seen, mut rtts_compared, mut matched) = (BTreeSet::new(), 0, 0, 0);
    let mut previous_had_sack = false;
    for row in &acks {
        let t = ns(&row[0]);
        // Relative numbers: the first byte of segment s is 1 + s * mss.
        let cum = (row[1].parse::<u64>().unwrap() - 1) / mss;
        let edges = |i: usize| -> Vec<u64> {
            row[i]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| (s.parse::<u64>().unwrap() - 1) / mss)
                .collect()
        };
        let (le, re) = (edges(2), edges(3));
        assert_eq!(le.len(), re.len());
        blocks_seen += le.len();
        for (a, b) in le.iter().zip(&re) {
            assert!(a < b, "a SACK block [{a}, {b}) at {t}");
            sacked.extend((*a..*b).filter(|&s| s >= cum));
        }
        sacked.retain(|&s| s >= cum);
        let k = at_time.entry(t).or_default();
        let Some(&(rtt_us, sacked_out)) = calls.get(&t).and_then(|c| c.get(*k)) else {
            continue;
        };
        *k += 1;
        matched += 1;
        // The scoreboard's SACKed count is the union of the blocks above
        // the cumulative ACK: the blocks are the ones the receiver sent.
        assert_eq!(sacked.len() as u64, sacked_out, "SACKed segments at {t}");
        // RTT: tshark's sample is the time since the segment ending at
        // the ACK number was sent, the sender's (ca_rtt) the time since
        // the newest segment it newly ACKed: the same segment, unless
        // SACKs were involved (then the sender's is a SACKed segment's)
        // or that segment was sent again (Karn: no sample; tshark times
        // the original).
        let clean = le.is_empty() && !previous_had_sack;
        previous_had_sack = !le.is_empty();
        if row[4].is_empty() || !clean || retransmitted.contains(&row[5]) {
            continue;
        }
        let theirs = row[4].parse::<f64>().unwrap() * 1e6;
        assert!(
            rtt_us >= 0,
            "no RTT sample at {t} where tshark has {theirs} us"
        );
        assert!(
            (theirs - rtt_us as f64).abs() < 1.0,
            "RTT at {t}: tshark {theirs} us, the sender {rtt_us} us"
        );
        rtts_compared += 1;
    }
    assert!(blocks_seen > 100, "SACK blocks: {blocks_seen}");
    assert!(
        matched * 100 >= acks.len() * 95,
        "{matched} of {} ACKs matched",
        acks.len()
    );
    // Most: this run is in SACK recovery a third of the time.
    assert!(
        rtts_compared * 2 >= acks.len(),
        "{rtts_compared} of {} ACKs had their RTT compared",
        acks.len()
    );

    // Pings: each request and its reply, matched by tshark on id and
    // sequence number.
    let p = &r.pings[0];
    assert_eq!(count(&file, "icmp.type == 8"), p.sent);
    assert_eq!(count(&file, "icmp.type == 0 && icmp.resp_to"), p.received);
    // The UDP download: what reached the left end.
    let u = &r.udp[0];
    let got = count(&file, "udp && ip.dst == 192.0.2.2");
    assert!(got > 0 && got <= u.sent);
    // Every packet offered to the up link is here: what left it and what
    // its queue dropped.
    let up = r.links[0];
    assert_eq!(
        // (not the handshake, which the capture adds)
        count(
            &file,
            "ip.src == 192.0.2.2 && !(tcp.flags.syn == 1) && !(tcp.len == 0 && tcp.ack == 1)"
        ),
        up.tx_packets + up.queue_drops
    );
}

/// DCTCP uploading through a FIFO that marks at 10 packets, and a
/// request/response download, captured at the right end in pcapng; no
/// loss anywhere, and both flows stop half a second before the end, so
/// that everything in flight arrives.
const MARKED: &str = r#"
duration = "2s"
[link]
rate = "20Mbit"
queue = 200
[link.up]
ecn_mark_at = 10
[[flow]]
cc = "dctcp"
rtt = "20ms"
stop = "1.5s"
[[flow]]
cc = "reno"
rtt = "20ms"
stop = "1.5s"
direction = "download"
request = "300B"
response = "30KB"
think = "50ms"
[capture]
at = "right"
format = "pcapng"
snaplen = 200
"#;

#[test]
fn the_right_end_sees_the_marks_and_both_sequence_spaces_hold_together() {
    require!(installed("tshark", "tshark"));
    let dir = Dir::new("marked");
    let (r, file) = run(MARKED, &dir.0);
    assert_eq!(file.extension().unwrap(), "pcapng");
    let up = r.links[0];
    assert!(up.marks > 50, "{up:?}");
    assert_eq!(up.queue_drops + up.loss_drops, 0);
    // Data arrives at the right end marked as the queue marked it: every
    // CE mark the link counted, and no other packet with CE.
    assert_eq!(count(&file, "ip.dsfield.ecn == 3"), up.marks);
    assert!(count(&file, "ip.src == 192.0.2.2 && ip.dsfield.ecn == 2") > 0);
    // DCTCP's receiver echoes them, its sender answers with CWR.
    assert!(
        count(
            &file,
            "ip.src == 198.51.100.2 && tcp.srcport == 20000 && tcp.flags.ece == 1"
        ) > 0
    );
    assert!(
        count(
            &file,
            "ip.src == 192.0.2.2 && tcp.flags.cwr == 1 && tcp.len > 0"
        ) > 0
    );
    // ECN as negotiated: the DCTCP flow's SYN asks for it, reno's does not.
    assert_eq!(
        count(
            &file,
            "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.ece == 1"
        ),
        1
    );
    // Nothing lost, nothing reordered: tshark finds every segment it
    // expects and every ACK acknowledges what it saw, in both sequence
    // spaces of the request/response flow too.
    for flag in [
        "tcp.analysis.lost_segment",
        "tcp.analysis.ack_lost_segment",
        "tcp.analysis.retransmission",
        "tcp.analysis.out_of_order",
    ] {
        assert_eq!(count(&file, flag), 0, "{flag}");
    }
    // Each request is one 300-byte segment from the left client.
    let requests = count(
        &file,
        "tcp.srcport == 50000 && tcp.dstport == 20001 && tcp.len == 300",
    );
    let f = &r.flows[1];
    assert!(f.responses > 5, "{f:?}");
    assert!(
        (f.responses..=f.responses + 1).contains(&requests),
        "{requests} requests, {f:?}"
    );
    // Every packet that left the up link arrived here.
    assert_eq!(
        count(&file, "ip.src == 192.0.2.2 && !(tcp.flags.syn == 1) && !(tcp.len == 0 && tcp.ack == 1 && tcp.seq == 1)"),
        up.tx_packets
    );
    // The snap length and the pcapng interface tshark reads back.
    let lens = tshark(&file, "tcp.len == 1448", &["frame.cap_len", "frame.len"]);
    assert_eq!(lens[0], ["200", "1502"]);
    let names = tshark(
        &file,
        "frame.number == 1",
        &["frame.interface_name", "frame.comment"],
    );
    assert_eq!(names[0][0], "right");
}
