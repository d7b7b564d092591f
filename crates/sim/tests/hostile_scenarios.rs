//! Scenario files as a careless or hostile user writes them (issue 16):
//! each refused in one line that names the file, the line and the key and
//! says what is valid, without Rust's internals; limits named with their
//! values; nothing panics, allocates from the input or runs away.

use std::path::Path;

use kleinrock_sim::scenario::{self, limits};
use kleinrock_testkit::wording::unclear;

/// A valid scenario each case changes.
const BASE: &str =
    "duration = \"2s\"\n[link]\nrate = \"10Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n";

/// `text` parsed as s.toml: the error, checked to be one clean line.
fn err(text: &str) -> String {
    match scenario::parse(text, "s.toml", None) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => clean(e.0),
    }
}

/// `e`, after checking it is one clear line (kleinrock_testkit::wording).
fn clean(e: String) -> String {
    if let Some(why) = unclear(&e, "") {
        panic!("{why}");
    }
    e
}

/// BASE with `line` added to its [link] table.
fn link(line: &str) -> String {
    BASE.replace(
        "rate = \"10Mbit\"\n",
        &format!("rate = \"10Mbit\"\n{line}\n"),
    )
}

/// BASE with `lines` added to its [[flow]].
fn flow(lines: &str) -> String {
    format!("{BASE}{lines}\n")
}

/// BASE with `section` (a table and its keys) appended.
fn with(section: &str) -> String {
    format!("{BASE}{section}\n")
}

#[test]
fn the_issues_examples_are_refused_with_their_limit() {
    let cases: Vec<(String, &str)> = vec![
        // Aborts on allocation.
        (
            BASE.replace("\"2s\"", "\"1000000000000s\""),
            "s.toml line 1: `duration` = \"1000000000000s\" is longer than 86400s, the limit (a day;",
        ),
        // The same value with an exponent reads as the same number...
        (
            BASE.replace("\"2s\"", "\"1e12s\""),
            "s.toml line 1: `duration` = \"1e12s\" is longer than 86400s, the limit",
        ),
        // ...and a value beyond u64 does not saturate into a valid one.
        (
            BASE.replace("\"2s\"", "\"1e30s\""),
            "s.toml line 1: `duration` = \"1e30s\" is longer than 86400s, the limit",
        ),
        (
            format!("sample_interval = \"1ns\"\n{BASE}"),
            "s.toml line 1: `sample_interval` = \"1ns\" is shorter than 1us, the limit (from 1us, as the series print time in microseconds, to a day)",
        ),
        // A plausible typo: 1 us samples over 10 minutes.
        (
            format!("sample_interval = \"1us\"\n{}", BASE.replace("\"2s\"", "\"10min\"")),
            "s.toml line 1: the time series would hold 1800000003 records (1800000003 samples of 1 flows and 2 bottlenecks every 1us for 600s, and 0 ping replies), more than 10000000, the limit (about 1 GB of memory); make `sample_interval` at least 361us",
        ),
        // Hangs or runs away.
        (
            with("[tcp]\ninit_cwnd = 1000000"),
            "s.toml line 8: `init_cwnd` = 1000000 is out of range; it must be from 1 to 10000 (",
        ),
        (
            with("[[ping]]\nrtt = \"40ms\"\ninterval = \"1ns\""),
            "s.toml line 9: `interval` = \"1ns\" is shorter than 1ms, the limit (from 1ms, as ping counts its interval in whole milliseconds, to a day)",
        ),
        // Silently ignored or silently wrong.
        (
            link("trace = \"cell.up\""),
            "s.toml line 3: [link] sets both `rate` and `trace`; a trace link's rate is the trace's own",
        ),
        (
            link("queue = 100\necn_mark_at = 500"),
            "s.toml line 5: `ecn_mark_at` = 500 in [link.up]: the queue holds at most 100 packets, so it would never mark",
        ),
        (
            link("queue = 100\necn_mark_at = 100"),
            "s.toml line 5: `ecn_mark_at` = 100 in [link.up]: the queue holds at most 100 packets",
        ),
        (
            link("queue = { kind = \"codel\" }\necn_mark_at = 20"),
            "s.toml line 5: `ecn_mark_at` = 20 in [link.up]: it marks in a FIFO, and [link.up]'s queue is codel, which marks by its own `ecn = true`",
        ),
        (
            link("ecn_mark_at = 20\n[link.down]\nqueue = { kind = \"fq_codel\" }"),
            "s.toml line 4: `ecn_mark_at` = 20 in [link.down]: it marks in a FIFO, and [link.down]'s queue is fq_codel",
        ),
        (
            link("queue = \"3000B\"\necn_mark_at = 100"),
            "s.toml line 5: `ecn_mark_at` = 100 in [link.up]: the queue's 3000 bytes never hold 100 packets and one more, even of the smallest, 52 bytes",
        ),
        (
            flow("start = \"3s\""),
            "s.toml line 7: `start` = \"3s\" is at or after the end of the run (`duration` = 2s): it would never send",
        ),
        (
            flow("count = 30\nstagger = \"100ms\""),
            "s.toml line 8: 30 flows started `stagger` = \"100ms\" apart from 0s start until 2900ms, after the run ends at 2s: the last 10 would never send",
        ),
        (
            with("[[ping]]\nrtt = \"40ms\"\nstart = \"2s\""),
            "s.toml line 9: `start` = \"2s\" is at or after the end of the run",
        ),
        (
            with("[[udp]]\nrate = \"1Mbit\"\nrtt = \"40ms\"\nstart = \"5s\""),
            "s.toml line 10: `start` = \"5s\" is at or after the end of the run",
        ),
        // Unclear: the serde messages, each in words with its key.
        (
            format!("seed = \"x\"\n{BASE}"),
            "s.toml line 1: `seed` = \"x\" is a string; it must be a whole number",
        ),
        (
            BASE.replace("[link]\nrate = \"10Mbit\"", "link = \"x\""),
            "s.toml line 2: `link` = \"x\" is a string; it must be a table, written [link] on a line of its own with its keys below",
        ),
        (
            BASE.replace("[[flow]]", "[flow]"),
            "s.toml line 4: [flow] makes `flow` a table, but it must be an array of tables, written [[flow]], one per item",
        ),
        (
            BASE.replace("[link]", "[[link]]"),
            "s.toml line 2: [[link]] makes `link` an array of tables, but it must be a single table, written [link]",
        ),
        (
            with("[tcp]\nmss = 1.5"),
            "s.toml line 8: `mss` = 1.5 is a number; it must be a whole number",
        ),
        (
            BASE.replace("\"2s\"", "2"),
            "s.toml line 1: `duration` = 2 is a number; it must be a duration in quotes, such as \"40ms\" or \"1.5s\"",
        ),
        // The wrong key or the wrong reason: a huge queue is not small.
        (
            link("queue = 9223372036854775807"),
            "s.toml line 4: `queue` = 9223372036854775807 is more than 10000000 packets, the limit (the simulator keeps every queued packet in memory)",
        ),
        (
            format!("seed = 99999999999999999999999\n{BASE}"),
            "s.toml line 1: `seed` = 99999999999999999999999 is too large; a whole number here is at most 9223372036854775807",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.starts_with(want), "\n got: {e}\nwant: {want}...");
    }
    // A comparison that shortens a file's run keeps its late flows, which
    // send nothing: the file does not contradict itself.
    let shortened = flow("start = \"3s\"\ncount = 3\nstagger = \"1s\"");
    let c = scenario::parse_generated(&shortened, "s.toml with duration = 2s", None).unwrap();
    assert_eq!(
        c.flows
            .iter()
            .map(|f| f.start / 1_000_000_000)
            .collect::<Vec<_>>(),
        [3, 4, 5]
    );
}

#[test]
fn echoed_values_are_cut_short_and_escaped() {
    // A 5 MB value comes back as 40 characters and its length.
    let huge = "9".repeat(5_000_000);
    let e = err(&BASE.replace("\"10Mbit\"", &format!("\"{huge}\"")));
    assert!(
        e.starts_with(&format!(
            "s.toml line 3: `rate` = \"{}... (5000000 characters)\" is not a positive rate",
            "9".repeat(40)
        )),
        "{e}"
    );
    let e = err(&format!("seed = 1{}\n{BASE}", "0".repeat(30)));
    assert!(
        e.contains("`seed` = 1000000000000000000000000000000 is too large"),
        "{e}"
    );
    let e = err(&format!("name = [{}]\n{BASE}", "1, ".repeat(1_000_000)));
    assert!(e.starts_with("s.toml line 1: `name` = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, ... (3000002 characters) is an array; it must be a string in quotes"), "{e}");
    // Control and direction-changing characters, written as TOML
    // escapes in the file, are escaped again in the message.
    let e = err(&BASE.replace("\"reno\"", "\"re\\u001B[31mno\""));
    assert!(
        e.contains("`cc` = \"re\\u001B[31mno\" is not an algorithm spec"),
        "{e}"
    );
    let e = err(&flow("direction = \"up\\u202Eload\\n\""));
    assert!(
        e.contains("`direction` = \"up\\u202Eload\\n\" is not a direction"),
        "{e}"
    );
    // A long algorithm spec is refused before the algorithm quotes it.
    let e = err(&BASE.replace("\"reno\"", &format!("\"{}\"", "x".repeat(1000))));
    assert!(
        e.contains("(1000 characters)\" is not an algorithm spec (at most 256 characters"),
        "{e}"
    );
    // A file name with a newline does not break the line.
    let e = scenario::parse("", "a\nb.toml", None).unwrap_err().0;
    assert!(e.starts_with("a\\nb.toml: the scenario is empty;"), "{e}");
}

#[test]
fn numbers_out_of_range_nan_and_infinity() {
    let cases: Vec<(String, &str)> = vec![
        (with("[tcp]\nmss = -5"), "`mss` = -5 is out of range; it must be from 64 to 65483"),
        (with("[tcp]\ninit_cwnd = 0"), "`init_cwnd` = 0 is out of range; it must be from 1 to 10000"),
        (with("[tcp]\nhz = 0"), "`hz` = 0 is out of range; it must be from 1 to 1000000"),
        (with("[tcp]\nrwnd = \"2GB\""), "`rwnd` = \"2GB\" is larger than 1073725440B, the limit"),
        (with("[tcp]\nrwnd = \"1B\""), "`rwnd` = \"1B\" is smaller than 1448B, the limit"),
        (flow("count = -1"), "`count` = -1 is out of range; it must be from 1 to 100000"),
        (flow("count = 0"), "`count` = 0 is out of range"),
        (link("queue = -1"), "`queue` = -1 is smaller than one packet"),
        (link("queue = 0"), "`queue` = 0 is smaller than one packet"),
        (link("queue = \"1e9bdp\""), "`queue` = \"1e9bdp\" is 33000000000 packets at a BDP of 33, more than 10000000 packets, the limit"),
        (link("queue = \"nanbdp\""), "`queue` = \"nanbdp\" is not a positive multiple of the BDP"),
        (link("queue = \"infbdp\""), "`queue` = \"infbdp\" is not a positive multiple of the BDP"),
        (link("queue = \"100GB\""), "`queue` = \"100GB\" is larger than 15GB, the limit"),
        (link("queue = nan"), "`queue` = nan is not a queue size"),
        (link("ecn_mark_at = 0"), "`ecn_mark_at` = 0 is out of range; it must be from 1 to 10000000"),
        (link("ecn_mark_at = 99999999999"), "`ecn_mark_at` = 99999999999 is out of range"),
        (link("loss = \"nan%\""), "`loss` = \"nan%\" is not a probability"),
        (link("loss = \"-1%\""), "`loss` = \"-1%\" is not a probability"),
        (link("loss = 0.01"), "`loss` = 0.01 is not a loss"),
        (link("delay = \"61s\""), "`delay` = \"61s\" is longer than 60s, the limit"),
        (link("jitter = \"1e3s\""), "`jitter` = \"1e3s\" is longer than 60s, the limit"),
        (link("queue = { kind = \"codel\", target = \"200s\" }"), "`target` = \"200s\" is longer than 120s, the limit"),
        (link("queue = { kind = \"codel\", limit = 0 }"), "`limit` = 0 is not a packet count from 1 to 10000000"),
        (link("queue = { kind = \"fq_codel\", limit = 100000000 }"), "`limit` = 100000000 is not a packet count from 1 to 10000000"),
        (link("queue = { kind = \"red\", max = 60, limit = 50 }"), "RED's `limit` (50) must be above its `max` (60)"),
        (link("queue = { kind = \"red\", weight = nan }"), "`weight` = nan is not a weight in (0, 1]"),
        (link("queue = { kind = 5 }"), "queue `kind` = 5 is not a queue"),
        (BASE.replace("\"10Mbit\"", "\"infMbit\""), "`rate` = \"infMbit\" is not a positive rate"),
        (BASE.replace("\"10Mbit\"", "\"NaNMbit\""), "`rate` = \"NaNMbit\" is not a positive rate"),
        (BASE.replace("\"10Mbit\"", "\"2Tbit\""), "`rate` = \"2Tbit\" is faster than 1000Gbit, the limit"),
        (BASE.replace("\"10Mbit\"", "nan"), "`rate` = nan is a number; it must be a rate in quotes, such as \"100Mbit\""),
        (BASE.replace("\"10Mbit\"", "-inf"), "`rate` = -inf is a number; it must be a rate in quotes"),
        (BASE.replace("\"2s\"", "\"NaNs\""), "`duration` = \"NaNs\" is not a duration"),
        (BASE.replace("\"2s\"", "\"infs\""), "`duration` = \"infs\" is not a duration"),
        (BASE.replace("\"2s\"", "\"-1s\""), "`duration` = \"-1s\" is not a duration"),
        (BASE.replace("\"40ms\"", "\"121s\""), "`rtt` = \"121s\" is longer than 120s, the limit (Linux's TCP_RTO_MAX"),
        (BASE.replace("\"40ms\"", "\"0s\""), "`rtt` must be longer than zero"),
        (flow("size = \"1e30B\""), "`size` = \"1e30B\" is larger than 3109556320856B, the limit (fewer than 2^31 segments: the simulated TCP numbers them in 32 bits, without wrap-around)"),
        (flow("size = \"0B\""), "`size` = \"0B\" is smaller than 1B, the limit"),
        (flow("response = \"0.1B\""), "`response` = \"0.1B\" is smaller than 1B, the limit"),
        (flow("response = \"1KB\"\nthink = \"2days\""), "`think` = \"2days\" is not a duration"),
        (flow("stop = \"1e6s\""), "`stop` = \"1e6s\" is longer than 86400s, the limit"),
        (with("[[udp]]\nrate = \"1Tbit\"\nrtt = \"1ms\"\nsize = \"28B\""), "`rate` = \"1Tbit\" in datagrams of 28 bytes is 4464285714 datagrams a second, more than 83333333, the limit"),
        (with("[[udp]]\nrate = \"1Mbit\"\nrtt = \"1ms\"\nsize = \"70000B\""), "`size` = \"70000B\" is not a datagram size from 28B to 65535B"),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.contains(want), "\n got: {e}\nwant: ...{want}...");
    }
}

#[test]
fn what_the_simulator_holds_is_bounded() {
    let cases: Vec<(String, &str)> = vec![
        // 10^7 packets in flight: 1 Tbit/s over a 120 s path.
        (
            BASE.replace("\"10Mbit\"", "\"1Tbit\"").replace("\"40ms\"", "\"120s\""),
            "s.toml line 3: [link.up]'s `rate` with the longest path's RTT, 120s, keeps 10000000000 packets in flight (the bandwidth-delay product), more than 10000000, the limit",
        ),
        // 2^31 segments: 100 Gbit/s for 1000 s.
        (
            BASE.replace("\"10Mbit\"", "\"100Gbit\"").replace("\"2s\"", "\"1000s\"").replace("\"40ms\"", "\"1ms\""),
            "s.toml line 3: [link.up]'s `rate` lets a flow send 8333333333 segments in 1000s, and the simulated TCP numbers segments in 32 bits",
        ),
        // 100,000 flows in all, counted before any is made.
        (
            flow("count = 100000\n[[flow]]\ncc = \"reno\"\nrtt = \"1ms\"\ncount = 100000"),
            "s.toml line 11: this makes 200000 flows, pings and UDP flows in all, more than 100000, the limit",
        ),
        // A day of 1 ms pings.
        (
            format!(
                "{}[[ping]]\nrtt = \"1ms\"\ninterval = \"1ms\"\n",
                BASE.replace("\"2s\"", "\"86400s\"").replace("\"10Mbit\"", "\"10kbit\"")
            ),
            "s.toml line 1: the time series would hold 88992004 records (2592003 samples of 1 flows and 2 bottlenecks every 100ms for 86400s, and 86400001 ping replies), more than 10000000, the limit (about 1 GB of memory); make the pings' `interval` longer or the run shorter",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.starts_with(want), "\n got: {e}\nwant: {want}...");
    }
    // Limits a valid run may reach are accepted: a day, 1 us samples of
    // a short run, 10,000 segments' initial window, 1 ms pings.
    for ok in [
        BASE.replace("\"2s\"", "\"86400s\"")
            .replace("\"10Mbit\"", "\"1kbit\""),
        format!(
            "sample_interval = \"1us\"\n{}",
            BASE.replace("\"2s\"", "\"1s\"")
        ),
        with("[tcp]\ninit_cwnd = 10000\nrwnd = \"1073725440B\""),
        with("[[ping]]\nrtt = \"1ms\"\ninterval = \"1ms\""),
        BASE.replace("\"10Mbit\"", "\"1Tbit\"")
            .replace("\"40ms\"", "\"100us\""),
        link("queue = 10000000\necn_mark_at = 9999999"),
        flow("count = 100000"),
    ] {
        if let Err(e) = scenario::parse(&ok, "s.toml", None) {
            panic!("refused: {e}\n{ok}");
        }
    }
}

#[test]
fn unknown_keys_are_named_with_their_table() {
    let cases: Vec<(String, &str)> = vec![
        (format!("colour = 1\n{BASE}"), "s.toml line 1: unknown key `colour` at the top level; valid keys are name, duration, seed, sample_interval, tcp, link, flow, ping, udp, capture, compare"),
        (with("[colour]\nx = 1"), "s.toml line 7: unknown key `colour` at the top level"),
        (with("[tcp]\nfoo = 1"), "s.toml line 8: unknown key `foo` in [tcp]; valid keys are mss, init_cwnd,"),
        (link("rat = 1"), "s.toml line 4: unknown key `rat` in [link]; valid keys are rate, trace,"),
        (link("[link.up]\nrat = 1"), "s.toml line 5: unknown key `rat` in [link.up]; valid keys are rate, trace, delay, queue, loss, ecn_mark_at"),
        (link("[link.sideways]\nrate = \"1Mbit\""), "s.toml line 4: unknown key `sideways` in [link]; valid keys are"),
        (flow("colour = 1"), "s.toml line 7: unknown key `colour` in [[flow]]; valid keys are cc, rtt,"),
        // A key after [[flow]] is the flow's, which the sentence shows.
        (flow("duration = \"3s\""), "s.toml line 7: unknown key `duration` in [[flow]]"),
        (with("[[ping]]\nrtt = \"1ms\"\nsize = 1"), "s.toml line 9: unknown key `size` in [[ping]]; valid keys are rtt, interval, start, stop"),
        (with("[[udp]]\nrate = \"1Mbit\"\nrtt = \"1ms\"\nccc = 1"), "s.toml line 10: unknown key `ccc` in [[udp]]"),
        (link("queue = { kind = \"codel\", targett = \"5ms\" }"), "s.toml line 4: unknown key `targett` in a codel queue"),
        (link("loss = { p = \"1%\", r = \"1%\", q = \"1%\" }"), "s.toml line 4: unknown key `q` in a Gilbert-Elliott loss"),
        (BASE.replace("rtt = \"40ms\"\n", ""), "s.toml line 4: missing key `rtt` in [[flow]]"),
        (BASE.replace("duration = \"2s\"\n", ""), "s.toml line 1: missing key `duration`"),
        (format!("{BASE}duration = \"3s\"\n"), "s.toml line 7: unknown key `duration` in [[flow]]"),
        (BASE.replace("[link]\n", "duration = \"3s\"\n[link]\n"), "s.toml line 2: `duration` is set twice; a key is written once per table"),
        (format!("{BASE}[link]\n"), "s.toml line 7: [link] appears twice; a table is written once"),
        (BASE.replace("\"10Mbit\"", "\"10Mbit"), "s.toml line 3: this is not valid TOML:"),
        (BASE.replace("reno", "re\u{1b}no"), "s.toml line 5: this is not valid TOML: a string in quotes holds a control character or is not closed; write control characters as escapes such as \\u001B"),
        (BASE.replace("rate = ", "ra te = "), "s.toml line 3: this is not valid TOML: key with no value, expected `=`"),
        ("# only a comment\n".into(), "s.toml line 1: missing key `duration`"),
        ("duration = \"2s\"\n[link]\nrate = \"1Mbit\"\n".into(), "s.toml: no [[flow]], [[ping]] or [[udp]] sections"),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.starts_with(want), "\n got: {e}\nwant: {want}...");
    }
}

/// A valid scenario with every table, as (header, keys and values).
fn every_table() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    vec![
        ("", vec![("duration", "\"2s\"")]),
        ("[tcp]", vec![]),
        ("[link]", vec![("rate", "\"10Mbit\"")]),
        ("[link.up]", vec![]),
        ("[link.down]", vec![]),
        ("[[flow]]", vec![("cc", "\"reno\""), ("rtt", "\"40ms\"")]),
        ("[[ping]]", vec![("rtt", "\"40ms\"")]),
        ("[[udp]]", vec![("rate", "\"1Mbit\""), ("rtt", "\"40ms\"")]),
        ("[capture]", vec![]),
    ]
}

/// `every_table()` with `key = value` set in the table `header`.
fn set(header: &str, key: &'static str, value: &'static str) -> String {
    let mut text = String::new();
    for (h, mut keys) in every_table() {
        if h == header {
            keys.retain(|(k, _)| *k != key);
            keys.push((key, value));
        }
        if !h.is_empty() {
            text += &format!("{h}\n");
        }
        for (k, v) in keys {
            text += &format!("{k} = {v}\n");
        }
    }
    text
}

/// Every key of every table, set to a value of each wrong kind: accepted
/// (a string where any string will do) or refused in one clean line that
/// names the key and its line. Nothing panics.
#[test]
fn every_key_with_every_kind_of_value() {
    let keys: [(&str, &[&str]); 9] = [
        ("", &["name", "duration", "seed", "sample_interval"]),
        (
            "[tcp]",
            &[
                "mss",
                "init_cwnd",
                "hz",
                "rwnd",
                "ecn",
                "peer_ecn",
                "pace_all",
                "slow_start_after_idle",
                "delayed_ack",
            ],
        ),
        (
            "[link]",
            &[
                "rate",
                "trace",
                "delay",
                "queue",
                "loss",
                "ecn_mark_at",
                "jitter",
            ],
        ),
        (
            "[link.up]",
            &["rate", "trace", "delay", "queue", "loss", "ecn_mark_at"],
        ),
        (
            "[link.down]",
            &["rate", "delay", "queue", "loss", "ecn_mark_at"],
        ),
        (
            "[[flow]]",
            &[
                "cc",
                "rtt",
                "start",
                "stop",
                "direction",
                "size",
                "count",
                "stagger",
                "trace",
                "request",
                "response",
                "think",
            ],
        ),
        ("[[ping]]", &["rtt", "interval", "start", "stop"]),
        (
            "[[udp]]",
            &["rate", "rtt", "size", "direction", "start", "stop"],
        ),
        ("[capture]", &["at", "direction", "snaplen", "format"]),
    ];
    let values = [
        "1",
        "-1",
        "0",
        "1.5",
        "nan",
        "-inf",
        "true",
        "\"x\"",
        "\"\"",
        "\"-1s\"",
        "\"1e400s\"",
        "\"nan%\"",
        "[1, 2]",
        "[]",
        "{ a = 1 }",
        "{}",
        "1979-05-27",
        "07:32:00",
        "99999999999999999999",
        "\"\\u0000\"",
    ];
    assert!(scenario::parse(&set("", "seed", "1"), "s.toml", None).is_ok());
    let mut refused = 0;
    for (header, keys) in keys {
        for &key in keys {
            for value in values {
                let text = set(header, key, value);
                if let Err(e) = scenario::parse(&text, "s.toml", None) {
                    refused += 1;
                    let e = clean(e.0);
                    assert!(
                        e.starts_with("s.toml line ") || e.starts_with("s.toml: "),
                        "{e}\n{text}"
                    );
                    assert!(e.contains(key), "does not name `{key}`: {e}\n{text}");
                }
            }
        }
    }
    assert!(refused > 800, "only {refused} refused");
}

#[test]
fn files_that_are_not_scenarios() {
    let dir = std::env::temp_dir().join(format!("kleinrock-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let load = |p: &Path| scenario::load(p).map(|_| ()).map_err(|e| clean(e.0));
    // Not UTF-8: the line and the byte, not Rust's error.
    let latin1 = dir.join("latin1.toml");
    std::fs::write(&latin1, b"duration = \"2s\"\nname = \"caf\xe9\"\n").unwrap();
    let e = load(&latin1).unwrap_err();
    assert!(
        e.ends_with(
            "latin1.toml line 2: byte 12 of the line is not UTF-8 text; save the scenario as UTF-8"
        ),
        "{e}"
    );
    std::fs::write(&latin1, b"\xff\xfe d").unwrap();
    assert!(load(&latin1)
        .unwrap_err()
        .ends_with("line 1: byte 1 of the line is not UTF-8 text; save the scenario as UTF-8"));
    // Empty.
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    assert!(load(&empty).unwrap_err().ends_with("empty.toml: the scenario is empty; it needs a `duration`, a [link] with a `rate` and at least one [[flow]] (docs/SCENARIOS.md)"));
    // Larger than a scenario can be: refused before it is read.
    let big = dir.join("big.toml");
    std::fs::write(&big, "#".repeat(limits::MAX_FILE_BYTES as usize + 1)).unwrap();
    let e = load(&big).unwrap_err();
    assert!(
        e.ends_with(
            "big.toml is larger than 1MiB, the limit for a scenario file; is it the right file?"
        ),
        "{e}"
    );
    // Not a file: a directory, a device, a pipe (which would block).
    let e = load(&dir).unwrap_err();
    assert!(
        e.contains("is not a regular file (it is a directory)"),
        "{e}"
    );
    let e = load(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e, "scenario /dev/zero is not a regular file (it is a device, pipe or socket); give the path of a scenario file");
    let fifo = dir.join("fifo.toml");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        assert!(load(&fifo)
            .unwrap_err()
            .contains("is not a regular file (it is a device, pipe or socket)"));
    }
    // Missing: the OS's reason without its error number.
    let e = load(&dir.join("missing.toml")).unwrap_err();
    assert!(
        e.ends_with("missing.toml: No such file or directory"),
        "{e}"
    );
    // A link trace that is a device is refused as the scenario is.
    let e = err(&link("[link.up]\ntrace = \"/dev/zero\""));
    assert_eq!(e, "s.toml line 5: `trace`: link trace /dev/zero is not a regular file (it is a device, pipe or socket); give the path of a link trace file");
    // A trace whose timestamp overflows nanoseconds, or whose line is long.
    std::fs::write(dir.join("of.trace"), "1\n18446744073709551\n").unwrap();
    std::fs::write(dir.join("long.trace"), "x".repeat(100_000)).unwrap();
    for (trace, want) in [
        ("of.trace", "of.trace line 2: 18446744073709551 ms is beyond what 64 bits of nanoseconds hold (584 years)"),
        ("long.trace", "long.trace line 1: `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...` is not a millisecond timestamp"),
    ] {
        let text = link(&format!("[link.up]\ntrace = \"{trace}\""));
        let e = clean(scenario::parse(&text, "s.toml", Some(&dir)).unwrap_err().0);
        assert!(e.starts_with("s.toml line 5: `trace`: ") && e.contains(want), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
