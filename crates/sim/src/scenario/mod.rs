//! Scenario files (TOML, docs/SCENARIOS.md) into a [`Config`].
//!
//! Every value a person writes is checked, and a bad one is reported in one
//! sentence naming the file, the line, the key and what would be valid.
//!
//! - [`units`]: durations, rates, sizes and percentages, reading a file,
//!   and the [`Source`] that names file, line and key in errors (the
//!   selector's workload files read through it too); `wording` puts
//!   values and the TOML parser's complaints into words.
//! - [`limits`]: the largest value each key may hold, and why.
//! - `link`: the `[link]` table per direction, and the jitter; `queue`:
//!   its `queue` value, FIFO sizes and AQM tables.
//! - `flows`: `[[flow]]`, `[[ping]]` and `[[udp]]`; [`capture`]:
//!   `[capture]`, and `--pcap`.
//! - here: the file's top level and `[tcp]`, read section by section.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

pub mod capture;
mod flows;
pub mod limits;
mod link;
mod queue;
pub mod units;
pub mod wording;

use limits::{MAX_FILE_BYTES, MAX_RWND_BYTES, MAX_SERIES_RECORDS};
use units::{fmt_duration, Source};

use crate::time::{Time, MS, US};
use crate::world::{Config, PingConfig};

/// A scenario that could not be read, as one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError(pub String);

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScenarioError {}

type S<T> = Spanned<T>;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct File {
    /// For people: results are named for the file.
    #[allow(dead_code)]
    name: Option<String>,
    duration: S<String>,
    seed: Option<S<i64>>,
    sample_interval: Option<S<String>>,
    #[serde(default)]
    tcp: Tcp,
    link: link::LinkSection,
    #[serde(default)]
    flow: Vec<flows::FlowSection>,
    #[serde(default)]
    ping: Vec<flows::PingSection>,
    #[serde(default)]
    udp: Vec<flows::UdpSection>,
    capture: Option<capture::CaptureSection>,
    /// `kleinrock compare`'s table, read by kleinrock-report's `plan`
    /// module: what to compare is not the network's business.
    #[allow(dead_code)]
    compare: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct Tcp {
    mss: Option<S<i64>>,
    init_cwnd: Option<S<i64>>,
    hz: Option<S<i64>>,
    rwnd: Option<S<String>>,
    ecn: Option<bool>,
    peer_ecn: Option<bool>,
    pace_all: Option<bool>,
    slow_start_after_idle: Option<bool>,
    delayed_ack: Option<S<String>>,
}

/// Reads a scenario file.
pub fn load(path: &Path) -> Result<Config, ScenarioError> {
    let text = read(path)?;
    parse(&text, &path.display().to_string(), path.parent())
}

/// A scenario file's text: a regular UTF-8 file of at most
/// [`MAX_FILE_BYTES`].
pub fn read(path: &Path) -> Result<String, ScenarioError> {
    units::read_text(path, "scenario", MAX_FILE_BYTES)
}

/// Parses scenario text; `file` names it in errors, `dir` resolves relative
/// trace paths.
pub fn parse(text: &str, file: &str, dir: Option<&Path>) -> Result<Config, ScenarioError> {
    let src = Source {
        file,
        text,
        lines: true,
    };
    parse_file(&src, dir)
}

/// Parses scenario text that a program wrote (a workload's path, a
/// comparison's override): errors name `label` and no line, which would
/// mean nothing to the person who wrote the original.
pub fn parse_generated(
    text: &str,
    label: &str,
    dir: Option<&Path>,
) -> Result<Config, ScenarioError> {
    let src = Source {
        file: label,
        text,
        lines: false,
    };
    parse_file(&src, dir)
}

fn parse_file(src: &Source, dir: Option<&Path>) -> Result<Config, ScenarioError> {
    if src.text.trim().is_empty() {
        return Err(ScenarioError(format!(
            "{}: the scenario is empty; it needs a `duration`, a [link] with a `rate` and at least one [[flow]] (docs/SCENARIOS.md)",
            wording::name(src.file)
        )));
    }
    let f: File = src.decode()?;
    let duration = src.duration(&f.duration, "duration", &limits::DURATION)?;
    let seed = match &f.seed {
        Some(s) => src.int(s, "seed", 0, i64::MAX)? as u64,
        None => 1,
    };
    let sample_interval = match &f.sample_interval {
        Some(s) => src.duration(s, "sample_interval", &limits::SAMPLE_INTERVAL)?,
        None => 100 * MS,
    };
    let tcp = tcp(src, &f.tcp)?;
    if f.flow.is_empty() && f.ping.is_empty() && f.udp.is_empty() {
        return Err(ScenarioError(format!(
            "{}: no [[flow]], [[ping]] or [[udp]] sections; a scenario needs at least one flow, e.g. [[flow]] cc = \"cubic\" rtt = \"40ms\"",
            wording::name(src.file)
        )));
    }
    let run = flows::Run {
        duration,
        mss: tcp.mss,
    };
    let flows = flows::flows(src, &f.flow, &run, dir)?;
    let pings = flows::pings(src, &f.ping, &run, flows.len())?;
    let udp = flows::udp(src, &f.udp, &run, flows.len() + pings.len())?;
    // The shortest path's RTT sizes the BDP queues; the longest bounds
    // what the links keep in flight.
    let rtts = || {
        flows
            .iter()
            .map(|f| f.rtt)
            .chain(pings.iter().map(|p| p.rtt))
            .chain(udp.iter().map(|u| u.rtt))
    };
    let paths = link::Paths {
        min_rtt: rtts().min().unwrap_or(40 * MS),
        max_rtt: rtts().max().unwrap_or(40 * MS),
        duration,
        smallest_packet: udp.iter().map(|u| u.bytes).min(),
        tcp_data: [
            flows.iter().any(|f| f.upload),
            flows.iter().any(|f| !f.upload),
        ],
    };
    let links = link::links(src, &f.link, tcp.mss, &paths, dir)?;
    let series = SeriesSize {
        duration,
        sample_interval,
        flows: flows.len() as u64,
        pings: &pings,
    };
    series.check(src, f.sample_interval.as_ref().unwrap_or(&f.duration))?;
    let capture = match &f.capture {
        Some(c) => Some(capture::capture(src, c)?),
        None => None,
    };
    Ok(Config {
        duration,
        seed,
        sample_interval,
        hz: tcp.hz,
        mss: tcp.mss,
        init_cwnd: tcp.init_cwnd,
        rwnd_segments: tcp.rwnd_segments,
        pace_all: tcp.pace_all,
        ecn: tcp.ecn,
        peer_ecn: tcp.peer_ecn,
        slow_start_after_idle: tcp.slow_start_after_idle,
        delayed_acks: tcp.delayed_acks,
        links,
        flows,
        pings,
        udp,
        capture,
        capture_file: None,
    })
}

/// What a run's time series will hold: a sample per flow and per
/// bottleneck each sample interval, and each ping's replies.
struct SeriesSize<'a> {
    duration: Time,
    sample_interval: Time,
    flows: u64,
    pings: &'a [PingConfig],
}

impl SeriesSize<'_> {
    /// Samples of the flows and the bottlenecks.
    fn samples(&self) -> u64 {
        (self.duration / self.sample_interval + 1).saturating_mul(self.flows + 2)
    }

    /// The pings' replies.
    fn replies(&self) -> u64 {
        self.pings
            .iter()
            .map(|p| {
                let end = p.stop.unwrap_or(self.duration).min(self.duration);
                end.saturating_sub(p.start) / p.interval + 1
            })
            .sum()
    }

    /// Refuses series above [`MAX_SERIES_RECORDS`], naming `key` (the
    /// sample interval, or the duration when it is not set).
    fn check(&self, src: &Source, key: &toml::Spanned<String>) -> Result<(), ScenarioError> {
        let (samples, replies) = (self.samples(), self.replies());
        let records = samples.saturating_add(replies);
        if records <= MAX_SERIES_RECORDS {
            return Ok(());
        }
        let fix = if samples >= replies {
            // The sample interval that would keep the samples within half
            // the limit, rounded up to a whole ms (or us).
            let n = (MAX_SERIES_RECORDS / 2 / (self.flows + 2)).max(1);
            let finest = self.duration.div_ceil(n);
            let finest = finest.next_multiple_of(if finest > MS { MS } else { US });
            format!(
                "make `sample_interval` at least {} or the run shorter",
                fmt_duration(finest)
            )
        } else {
            "make the pings' `interval` longer or the run shorter".into()
        };
        src.err(
            key.span(),
            format!(
                "the time series would hold {records} records ({samples} samples of {} flows and 2 bottlenecks every {} for {}, and {replies} ping replies), more than {MAX_SERIES_RECORDS}, the limit (about 1 GB of memory); {fix}",
                self.flows,
                fmt_duration(self.sample_interval),
                fmt_duration(self.duration),
            ),
        )
    }
}

/// What `[tcp]` sets, defaults filled in.
struct TcpSettings {
    mss: u32,
    init_cwnd: u32,
    hz: u32,
    rwnd_segments: u32,
    pace_all: bool,
    ecn: bool,
    peer_ecn: bool,
    slow_start_after_idle: bool,
    delayed_acks: bool,
}

fn tcp(src: &Source, t: &Tcp) -> Result<TcpSettings, ScenarioError> {
    let mss = match &t.mss {
        Some(v) => src.int_within(v, "mss", &limits::MSS)? as u32,
        None => 1448,
    };
    let init_cwnd = match &t.init_cwnd {
        Some(v) => src.int_within(v, "init_cwnd", &limits::INIT_CWND)? as u32,
        None => 10,
    };
    let hz = match &t.hz {
        Some(v) => src.int_within(v, "hz", &limits::HZ)? as u32,
        None => 250,
    };
    let rwnd_segments = match &t.rwnd {
        None => 1 << 24,
        Some(v) => {
            let window = limits::Within {
                min: mss as u64,
                max: MAX_RWND_BYTES,
                why: "at least one segment, and at most the largest window TCP can advertise, 65535 << 14 (RFC 7323)",
            };
            (src.bytes(v, "rwnd", &window, "\"4MB\"")? / mss as u64) as u32
        }
    };
    let delayed_acks = match &t.delayed_ack {
        None => true,
        Some(d) => match d.get_ref().as_str() {
            "linux" => true,
            "off" => false,
            other => {
                return src.err(d.span(), format!("`delayed_ack` = {} is not a policy; write \"linux\" (quick ACKs, then every second segment, 40 ms timer) or \"off\" (every segment)", wording::quoted(other)))
            }
        },
    };
    Ok(TcpSettings {
        mss,
        init_cwnd,
        hz,
        rwnd_segments,
        pace_all: t.pace_all.unwrap_or(false),
        ecn: t.ecn.unwrap_or(false),
        peer_ecn: t.peer_ecn.unwrap_or(true),
        slow_start_after_idle: t.slow_start_after_idle.unwrap_or(true),
        delayed_acks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SEC;
    use kleinrock_link::config::QueueConfig;
    use kleinrock_link::loss::LossModel;
    use kleinrock_link::queue::Limit;

    const GOOD: &str = r#"
name = "A"
duration = "30s"
seed = 7
[tcp]
hz = 1000
[link]
rate = "100Mbit"
queue = "1bdp"
loss = "1%"
[link.down]
loss = "0%"
[[flow]]
cc = "cubic:hystart=off"
rtt = "40ms"
count = 3
stagger = "100ms"
[[flow]]
cc = "reno"
rtt = "80ms"
direction = "download"
size = "1MB"
"#;

    #[test]
    fn a_scenario_becomes_a_config() {
        let c = parse(GOOD, "a.toml", None).unwrap();
        assert_eq!((c.duration, c.seed, c.hz, c.mss), (30 * SEC, 7, 1000, 1448));
        assert_eq!(c.flows.len(), 4);
        assert_eq!(c.flows[2].start, 200 * MS);
        assert_eq!(c.flows[0].cc.spec(), "cubic:hystart=off");
        assert!(!c.flows[3].upload);
        assert_eq!(c.flows[3].size_segments, Some(691));
        // BDP of 100 Mbit/s x 40 ms in 1500-byte packets: 333.
        assert_eq!(
            c.links[0].queue,
            QueueConfig::Fifo {
                limit: Limit::Packets(333),
                mark_at: None
            }
        );
        assert_eq!(c.links[0].loss, LossModel::Bernoulli { ppm: 10_000 });
        assert_eq!(c.links[1].loss, LossModel::None);
        assert_eq!(c.links[1].rate_bps, 100_000_000);
    }

    fn err(text: &str) -> String {
        parse(text, "s.toml", None).unwrap_err().0
    }

    #[test]
    fn each_kind_of_mistake_names_key_and_line() {
        let base = "duration = \"10s\"\n[link]\nrate = \"10Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n";
        let rate = "rate = \"10Mbit\"";
        let with_rate = |extra: &str| base.replace(rate, &format!("{rate}\n{extra}"));
        // (scenario, the error it must start with)
        let cases: Vec<(String, &str)> = vec![
            (base.replace("rate = ", "ratee = "), "s.toml line 3: unknown key `ratee` in [link]; valid keys are rate, trace,"),
            (
                base.replace("\"10Mbit\"", "\"-5Mbit\""),
                "s.toml line 3: `rate` = \"-5Mbit\" is not a positive rate; write e.g. \"100Mbit\", \"1.5Gbit\" or \"128kbit\"",
            ),
            (base.to_string() + "[tcp]\nmss = 0\n", "s.toml line 8: `mss` = 0 is out of range; it must be from 64 to 65483"),
            (with_rate("queue = 0"), "s.toml line 4: `queue` = 0 is smaller than one packet"),
            (with_rate("queue = \"1000B\""), "s.toml line 4: `queue` = \"1000B\" is smaller than one 1500-byte packet"),
            (with_rate("queue = { kind = \"pie\" }"), "s.toml line 4: queue `kind` = \"pie\" is not a queue"),
            (with_rate("queue = { kind = \"codel\", targett = \"5ms\" }"), "s.toml line 4: unknown key `targett` in a codel queue"),
            (base.replace("\"40ms\"", "\"40 parsecs\""), "s.toml line 6: `rtt` = \"40 parsecs\" is not a duration"),
            (base.replace("\"reno\"", "\"renoo\""), "s.toml line 5: `cc`: unknown algorithm `renoo`; valid algorithms are"),
            (with_rate("loss = \"150%\""), "s.toml line 4: `loss` = \"150%\" is not a probability"),
            (base.replace("duration = \"10s\"\n", ""), "s.toml line 1: missing key `duration`"),
            (base.replace("duration = \"10s\"", "duration = \"0s\""), "s.toml line 1: `duration` must be longer than zero"),
            ("duration = \"1s\"\n[link]\nrate = \"1Mbit\"\n".into(), "s.toml: no [[flow]], [[ping]] or [[udp]] sections"),
            (base.to_string() + "direction = \"sideways\"\n", "s.toml line 7: `direction` = \"sideways\""),
            (base.to_string() + "start = \"2s\"\nstop = \"1s\"\n", "s.toml line 8: `stop` must come after `start`"),
            (base.to_string() + "response = \"lots\"\n", "s.toml line 7: `response` = \"lots\" is not a size"),
            (base.to_string() + "[tcp]\ndelayed_ack = \"sometimes\"\n", "s.toml line 8: `delayed_ack` = \"sometimes\" is not a policy"),
            ("duration = \"1s\n".into(), "s.toml line 1:"),
        ];
        for (text, want) in cases {
            let e = err(&text);
            assert!(e.starts_with(want), "got: {e}\nwant: {want}...");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn a_mahimahi_trace_sets_the_link() {
        let dir = std::env::temp_dir().join(format!("kleinrock-scn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 12 Mbit/s: one 1500-byte packet per ms.
        std::fs::write(
            dir.join("flat.trace"),
            (1..=100).map(|i| format!("{i}\n")).collect::<String>(),
        )
        .unwrap();
        let text = "duration = \"1s\"\n[link]\nrate = \"1Mbit\"\n[link.down]\ntrace = \"flat.trace\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n";
        let c = parse(text, "t.toml", Some(&dir)).unwrap();
        assert!(c.links[0].trace.is_none());
        assert_eq!(c.links[0].delay, 0);
        assert_eq!(c.links[1].rate_bps, 12_000_000);
        let e = parse(
            &text.replace("flat.trace", "missing.trace"),
            "t.toml",
            Some(&dir),
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("t.toml line 5: `trace`: cannot read link trace"),
            "{e}"
        );
    }
}
