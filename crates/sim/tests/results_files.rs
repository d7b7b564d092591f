//! The results files are written by hand-rolled writers (`json`, `decimal`)
//! for speed; these tests hold them to the bytes serde_json and `core::fmt`
//! produce for the same records.

use std::fmt::Write as _;

use kleinrock_sim::results::{
    FlowSample, FlowSummary, LinkSummary, PingSample, PingSummary, QueueSample, UdpSummary,
};
use kleinrock_sim::{scenario, Results, Sim};
use serde::Serialize;

/// Every kind of record: bulk, transfer and request/response flows in both
/// directions, pings, UDP, random loss, a short sample interval.
const SCENARIO: &str = r#"
duration = "3s"
seed = 5
sample_interval = "37ms"

[link]
rate = "20Mbit"
queue = 60
loss = "0.5%"

[[flow]]
cc = "cubic"
rtt = "30ms"

[[flow]]
cc = "bbr"
rtt = "50ms"
direction = "download"
size = "200KB"
start = "0.3s"

[[flow]]
cc = "reno"
rtt = "20ms"
response = "20KB"
think = "100ms"

[[ping]]
rtt = "10ms"
interval = "50ms"

[[udp]]
rate = "1Mbit"
rtt = "10ms"
"#;

fn run() -> Results {
    run_text(SCENARIO)
}

fn run_text(text: &str) -> Results {
    let cfg = scenario::parse(text, "results_files.toml", None).unwrap();
    Sim::new(cfg).unwrap().run(&mut |_| {}).unwrap()
}

/// The document serde would write: the writer's reference.
#[derive(Serialize)]
struct Json<'a> {
    duration_s: f64,
    seed: u64,
    events: u64,
    flows: &'a [FlowSummary],
    links: Links,
    pings: &'a [PingSummary],
    udp: &'a [UdpSummary],
    flow_series: &'a [FlowSample],
    queue_series: &'a [QueueSample],
    ping_series: &'a [PingSample],
}

#[derive(Serialize)]
struct Links {
    up: LinkSummary,
    down: LinkSummary,
}

fn serde_reference(r: &Results) -> String {
    serde_json::to_string_pretty(&Json {
        duration_s: r.duration_s,
        seed: r.seed,
        events: r.events,
        flows: &r.flows,
        links: Links {
            up: r.links[0].into(),
            down: r.links[1].into(),
        },
        pings: &r.pings,
        udp: &r.udp,
        flow_series: &r.flow_series,
        queue_series: &r.queue_series,
        ping_series: &r.ping_series,
    })
    .unwrap()
}

/// The CSV files as `core::fmt` writes them.
fn fmt_reference(r: &Results) -> [String; 4] {
    let mut f = String::from("t,flow,goodput_bps,throughput_bps,cwnd,ssthresh,srtt_us,min_rtt_us,inflight,pacing_rate_bps,delivery_rate_bps,retransmits,segs_out,ca_state\n");
    for s in &r.flow_series {
        writeln!(
            f,
            "{:.6},{},{:.0},{:.0},{},{},{},{},{},{},{:.0},{},{},{}",
            s.t,
            s.flow,
            s.goodput_bps,
            s.throughput_bps,
            s.cwnd,
            s.ssthresh,
            s.srtt_us,
            s.min_rtt_us,
            s.inflight,
            s.pacing_rate_bps,
            s.delivery_rate_bps,
            s.retransmits,
            s.segs_out,
            s.ca_state
        )
        .unwrap();
    }
    let mut q = String::from("t,link,packets,bytes,delay_us,drops,marks\n");
    for s in &r.queue_series {
        writeln!(
            q,
            "{:.6},{},{},{},{},{},{}",
            s.t, s.link, s.packets, s.bytes, s.delay_us, s.drops, s.marks
        )
        .unwrap();
    }
    let mut p = String::from("t,ping,rtt_ms\n");
    for s in &r.ping_series {
        writeln!(p, "{:.6},{},{:.3}", s.t, s.ping, s.rtt_ms).unwrap();
    }
    let mut m = String::from("flow,cc,direction,rtt_ms,goodput_bps,bytes,retransmits,rtos,tlps,rtt_p50_ms,rtt_p95_ms,rtt_p99_ms,completion_s\n");
    for x in &r.flows {
        writeln!(
            m,
            "{},{},{},{},{:.0},{},{},{},{},{},{},{},{}",
            x.flow,
            x.cc,
            x.direction,
            x.rtt_ms,
            x.goodput_bps,
            x.bytes,
            x.retransmits,
            x.rtos,
            x.tlps,
            x.rtt_p50_ms,
            x.rtt_p95_ms,
            x.rtt_p99_ms,
            x.completion_s.map_or(String::new(), |c| c.to_string())
        )
        .unwrap();
    }
    [f, q, p, m]
}

#[test]
fn json_matches_serde_json() {
    let r = run();
    assert!(r.flows.iter().any(|f| f.completion_s.is_some()));
    assert!(r.flows.iter().any(|f| f.completion_s.is_none()));
    assert!(!r.ping_series.is_empty() && !r.udp.is_empty());
    assert_eq!(r.to_json(), serde_reference(&r));
}

#[test]
fn json_of_awkward_values_matches_serde_json() {
    let mut r = run();
    // Non-finite floats become null; strings are escaped; extremes.
    r.flow_series[0].goodput_bps = f64::NAN;
    r.flow_series[1].delivery_rate_bps = f64::INFINITY;
    r.flow_series[2].t = 1e-7;
    r.flows[0].cc = "cubic:\"odd\\name\"\n\t\u{1}é".into();
    r.flows[0].rtt_p99_ms = 1e21;
    r.duration_s = 0.1 + 0.2;
    r.seed = u64::MAX;
    assert_eq!(r.to_json(), serde_reference(&r));
    let mut empty = r.clone();
    empty.flows.clear();
    empty.flow_series.clear();
    empty.pings.clear();
    assert_eq!(empty.to_json(), serde_reference(&empty));
}

#[test]
fn files_match_core_fmt_and_replace_old_ones() {
    check_files(&run(), "small");
}

#[test]
fn files_larger_than_the_write_buffer_match_too() {
    // results.json, flows.csv and queues.csv well past the 64 KB the
    // writer spills at.
    let text = SCENARIO
        .replace("sample_interval = \"37ms\"", "sample_interval = \"1ms\"")
        .replace("interval = \"50ms\"", "interval = \"1ms\"");
    let r = run_text(&text);
    assert!(r.queue_series.len() > 5000 && r.ping_series.len() > 2500);
    check_files(&r, "large");
}

fn check_files(r: &Results, tag: &str) {
    let dir = std::env::temp_dir().join(format!("kleinrock-results-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A longer file from an earlier run must not leave a tail behind.
    std::fs::write(dir.join("flows.csv"), vec![b'x'; 1 << 20]).unwrap();
    for _ in 0..2 {
        r.write(&dir).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(read("results.json"), serde_reference(r));
        let [f, q, p, m] = fmt_reference(r);
        assert_eq!(read("flows.csv"), f);
        assert_eq!(read("queues.csv"), q);
        assert_eq!(read("pings.csv"), p);
        assert_eq!(read("summary.csv"), m);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
