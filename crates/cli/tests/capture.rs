//! `--pcap` on `kleinrock sim` and `kleinrock lab`: where captures go,
//! what is refused, and, as root with tshark, a lab capture read by
//! tshark agreeing with the kernel's own counters (docs/LAB.md, "Packet
//! captures"). The lab test skips through kleinrock-testkit without root
//! or tshark (a failure where KLEINROCK_REQUIRE asks for them); run it
//! with the live-test lock held (`flock /tmp/kleinrock-live-tests.lock
//! cargo test -p kleinrock --test capture`).

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use common::{kleinrock, scenarios, text, tmpdir};
use kleinrock_testkit::{installed, require, root, tshark};

fn files(dir: &Path) -> Vec<String> {
    let mut f: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    f.sort();
    f
}

#[test]
fn sim_writes_the_capture_beside_the_results_and_refuses_what_it_cannot_do() {
    let dir = tmpdir("capture-sim");
    let c1 = fs::read_dir(scenarios())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ns3-C1-")
        })
        .unwrap();
    let c1 = c1.to_str().unwrap();
    let out = dir.join("out");
    let out_s = out.to_str().unwrap();
    // A capture needs a results directory.
    let (_, err) = text(&kleinrock(&["sim", c1, "--pcap", "left", "--quiet"]));
    assert!(
        err.starts_with("error: ns3-C1-") && err.ends_with(": --pcap asks for a packet capture, which is written into the run's results directory; give --out DIR\n"),
        "{err}"
    );
    let o = kleinrock(&["sim", c1, "--pcap", "left,snaplen=0", "--out", out_s]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o).1,
        "error: --pcap \"left,snaplen=0\": `snaplen` = 0 is out of range; it must be from 1 to 262144 bytes (tcpdump's largest; 128, the default, keeps every header)\n"
    );
    assert!(!out.exists(), "nothing written");
    // Two seeds, two captures; the same run again without a capture
    // leaves none of the earlier one behind.
    let o = kleinrock(&[
        "sim",
        c1,
        "--pcap",
        "right,format=pcapng",
        "--seeds",
        "1,2",
        "--out",
        out_s,
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let runs = files(&out);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert!(files(&out.join(run)).contains(&"capture.pcapng".to_string()));
        let head = fs::read(out.join(run).join("capture.pcapng")).unwrap();
        // A pcapng section header block.
        assert_eq!(head[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
    }
    let o = kleinrock(&["sim", c1, "--seeds", "1,2", "--out", out_s, "--quiet"]);
    assert!(o.status.success(), "{}", text(&o).1);
    for run in &runs {
        assert_eq!(
            files(&out.join(run)),
            [
                "flows.csv",
                "pings.csv",
                "queues.csv",
                "results.json",
                "summary.csv"
            ]
        );
    }
    // compare writes none, and says so.
    let s = dir.join("s.toml");
    fs::write(
        &s,
        fs::read_to_string(c1).unwrap() + "\n[capture]\nat = \"left\"\n",
    )
    .unwrap();
    let (_, err) = text(&kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "reno",
    ]));
    assert!(
        err.contains("compare writes no packet captures") && err.lines().count() == 1,
        "{err}"
    );
}

/// Retransmissions, SACK blocks and RTTs of a real Linux CUBIC flow,
/// captured by the delay line at the sender's end.
#[test]
fn tshark_reads_a_lab_capture_as_the_kernel_counted() {
    if !require(root()) || !require(installed("tshark", "tshark")) {
        return;
    }
    let dir = tmpdir("capture-lab");
    let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
    let s = dir.join("lossy.toml");
    // Losses on the data's way; the flow stops offering data a second
    // before the end, so that its last retransmission is in the counters
    // read at the end.
    fs::write(
        &s,
        format!(
            "duration = \"3s\"\n[tcp]\nhz = {hz}\n[link]\nrate = \"10Mbit\"\nqueue = 30\n\
             [link.up]\nloss = \"2%\"\n[[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\nstop = \"2s\"\n\
             [[ping]]\nrtt = \"20ms\"\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let steal = kleinrock_lab::StealMeter::start().unwrap();
    let o = kleinrock(&[
        "lab",
        s.to_str().unwrap(),
        "--pcap",
        "left",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("could not keep"), "{err}");
    let quiet = steal.share().unwrap() < kleinrock_lab::QUIET_STEAL;
    let run = out.join("lossy");
    let file = run.join("capture.pcap");
    let summary = fs::read_to_string(run.join("summary.csv")).unwrap();
    let row: Vec<&str> = summary.lines().nth(1).unwrap().split(',').collect();
    let retransmits: u64 = row[6].parse().unwrap();
    assert!(retransmits > 0, "{summary}");

    // The kernel's tcpi_total_retrans is every segment the sender sent
    // again; the delay line saw each (at the sender's end, tshark's
    // "out-of-order" is a retransmission too: a sender does not reorder).
    let data = "ip.src == 192.0.2.2 && tcp.len > 0";
    let sent = tshark(&file, data, &["tcp.seq", "tcp.nxtseq"]);
    let flagged = tshark(
        &file,
        &format!("{data} && (tcp.analysis.retransmission || tcp.analysis.out_of_order)"),
        &["frame.number"],
    );
    assert_eq!(flagged.len() as u64, retransmits);

    // SACK blocks: what the receiver's kernel sent, byte for byte (the
    // delay line edits only CE into IP); each edge a segment boundary the
    // sender's data showed.
    let starts: BTreeSet<&str> = sent.iter().map(|r| r[0].as_str()).collect();
    let ends: BTreeSet<&str> = sent.iter().map(|r| r[1].as_str()).collect();
    // (the SYN-ACK too: the kernel's first RTT sample is the handshake's)
    let acks = tshark(
        &file,
        "ip.src == 198.51.100.2 && tcp.port == 20000",
        &[
            "tcp.options.sack_le",
            "tcp.options.sack_re",
            "tcp.analysis.ack_rtt",
        ],
    );
    let mut blocks = 0;
    for a in &acks {
        for (le, re) in a[0]
            .split(',')
            .zip(a[1].split(','))
            .filter(|(l, _)| !l.is_empty())
        {
            // A D-SACK reports what arrived twice: a boundary still.
            assert!(
                starts.contains(le) && ends.contains(re),
                "SACK [{le}, {re})"
            );
            blocks += 1;
        }
    }
    assert!(blocks > 0);

    // RTT: from a segment's arrival at the delay line to its ACK's
    // release toward the sender, never below the path's 20 ms (the delay
    // line holds each way its half); on a quiet host, the least of them
    // (the SYN's: no serialization at the bottleneck) at most a
    // millisecond below the kernel's own minimum, which the sender
    // measures a veth hop each way further out.
    let rtts: Vec<f64> = acks
        .iter()
        .filter(|a| !a[2].is_empty())
        .map(|a| a[2].parse::<f64>().unwrap() * 1e3)
        .collect();
    assert!(rtts.len() > 100, "{} RTT samples", rtts.len());
    let least = rtts.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(least >= 20.0, "an ACK {least} ms after its segment");
    let flows = fs::read_to_string(run.join("flows.csv")).unwrap();
    let min_rtt_ms = flows
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(7).unwrap().parse::<f64>().unwrap() / 1e3)
        .filter(|&m| m > 0.0)
        .fold(f64::INFINITY, f64::min);
    eprintln!("tshark's least RTT {least:.3} ms, the kernel's min_rtt {min_rtt_ms:.3} ms");
    kleinrock_testkit::timing("a lab capture's RTT against the kernel's", quiet);
    if quiet {
        assert!(
            (0.0..1.0).contains(&(min_rtt_ms - least)),
            "tshark {least} ms, kernel {min_rtt_ms} ms"
        );
    }
    // The pings' echoes, matched by tshark.
    let pings = tshark(&file, "icmp.type == 0 && icmp.resp_to", &["icmp.seq"]);
    assert!(pings.len() >= 10, "{} replies", pings.len());
}
