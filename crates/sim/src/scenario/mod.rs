//! Scenario files (TOML, docs/SCENARIOS.md) into a [`Config`].
//!
//! Every value a person writes is checked, and a bad one is reported in one
//! sentence naming the file, the line, the key and what would be valid.
//!
//! - [`units`]: durations, rates, sizes and percentages, and the
//!   [`Source`] that names file, line and key in errors (the selector's
//!   workload files read through it too).
//! - `link`: the `[link]` table per direction, and the jitter; `queue`:
//!   its `queue` value, FIFO sizes and AQM tables.
//! - `flows`: `[[flow]]`, `[[ping]]` and `[[udp]]`.
//! - here: the file's top level and `[tcp]`, read section by section.

use std::path::{Path, PathBuf};

use kleinrock_cc::Algorithm;
use serde::Deserialize;
use toml::Spanned;

mod flows;
mod link;
mod queue;
pub mod units;

use units::parse_bytes;
pub use units::Source;

use crate::time::MS;
use crate::world::Config;

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
    compare: Option<CompareSection>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct CompareSection {
    cc: Option<Vec<S<String>>>,
    seeds: Option<Vec<S<i64>>>,
    #[serde(default)]
    sweep: Vec<SweepSection>,
    flent_test: Option<S<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct SweepSection {
    key: S<String>,
    values: S<Vec<toml::Value>>,
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

/// What a scenario's `[compare]` table asks of `kleinrock compare`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compare {
    /// Algorithm specs, each run with every flow using it.
    pub cc: Vec<String>,
    pub seeds: Vec<u64>,
    pub sweeps: Vec<Sweep>,
    /// The flent test whose name and series the `.flent.gz` files carry.
    pub flent_test: Option<String>,
}

/// One swept scenario key and its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub key: String,
    pub values: Vec<toml::Value>,
}

impl Sweep {
    /// A sweep from `key=v1,v2,...` (`--sweep loss=0.1%,1%`): integers stay
    /// integers, booleans booleans, anything else is a string.
    pub fn parse(arg: &str) -> Result<Sweep, ScenarioError> {
        let (key, values) = arg.split_once('=').ok_or_else(|| {
            ScenarioError(format!(
                "`--sweep {arg}` is not KEY=VALUES; write e.g. `--sweep loss=0.1%,1%,10%` (keys: {})",
                SWEEP_ALIASES.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(", ")
            ))
        })?;
        let values: Vec<toml::Value> = values
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| {
                if let Ok(i) = v.parse::<i64>() {
                    toml::Value::Integer(i)
                } else if let Ok(b) = v.parse::<bool>() {
                    toml::Value::Boolean(b)
                } else {
                    toml::Value::String(v.to_string())
                }
            })
            .collect();
        if values.is_empty() {
            return Err(ScenarioError(format!(
                "`--sweep {arg}` lists no values; write e.g. `--sweep {key}=a,b,c`"
            )));
        }
        Ok(Sweep {
            key: key.trim().to_string(),
            values,
        })
    }
}

/// Short names for the keys people sweep, and the scenario keys they set.
pub const SWEEP_ALIASES: &[(&str, &[&str])] = &[
    ("loss", &["link.loss"]),
    ("rate", &["link.rate"]),
    ("queue", &["link.queue"]),
    ("buffer", &["link.queue"]),
    ("delay", &["link.delay"]),
    ("rtt", &["flow.rtt", "ping.rtt", "udp.rtt"]),
    ("hz", &["tcp.hz"]),
    ("mss", &["tcp.mss"]),
    ("cc", &["flow.cc"]),
];

/// The scenario keys an override name sets.
pub fn override_paths(key: &str) -> Vec<String> {
    match SWEEP_ALIASES.iter().find(|(a, _)| *a == key) {
        Some((_, paths)) => paths.iter().map(|p| p.to_string()).collect(),
        None => vec![key.to_string()],
    }
}

/// A value as a person would write it in the scenario (`1%`, `100`).
pub fn value_label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A scenario file kept as text, so that a comparison can vary its keys.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    text: String,
    table: toml::Table,
    pub config: Config,
    pub compare: Compare,
}

impl Scenario {
    /// Reads and checks a scenario file, including its `[compare]` table.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("cannot read scenario {}: {e}", path.display())))?;
        let file = path.display().to_string();
        let cx = Source {
            file: &file,
            text: &text,
            lines: true,
        };
        let (config, f) = parse_file(&cx, path.parent())?;
        let compare = match &f.compare {
            None => Compare::default(),
            Some(c) => compare_section(&cx, c)?,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ScenarioError(format!("{file}: {}", e.message())))?;
        Ok(Scenario {
            path: path.to_path_buf(),
            text,
            table,
            config,
            compare,
        })
    }

    /// The scenario text as read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The configuration with `overrides` (key, value) applied, as if the
    /// file said so: `flow.cc` sets every flow's algorithm, `link.loss`
    /// the link's loss, and the short names of [`SWEEP_ALIASES`] stand for
    /// their keys. A value the scenario would refuse is refused here, in
    /// one sentence naming the override.
    pub fn with(&self, overrides: &[(&str, &toml::Value)]) -> Result<Config, ScenarioError> {
        if overrides.is_empty() {
            return Ok(self.config.clone());
        }
        let mut table = self.table.clone();
        let mut label = Vec::new();
        for &(key, value) in overrides {
            label.push(format!("{key} = {}", value_label(value)));
            for path in override_paths(key) {
                set_path(&mut table, &path, value).map_err(|why| {
                    ScenarioError(format!(
                        "{}: cannot set `{key}` ({why}); sweepable keys are {} or a scenario key such as `link.up.loss`",
                        self.path.display(),
                        SWEEP_ALIASES.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(", ")
                    ))
                })?;
            }
        }
        let text = toml::to_string(&table)
            .map_err(|e| ScenarioError(format!("{}: {e}", self.path.display())))?;
        let file = format!("{} with {}", self.path.display(), label.join(", "));
        let cx = Source {
            file: &file,
            text: &text,
            lines: false,
        };
        parse_file(&cx, self.path.parent()).map(|(c, _)| c)
    }
}

/// Sets `a.b` in `table`: in every element when `a` is an array of tables
/// (`flow`, `ping`, `udp`), creating the table `a` when it is missing. A
/// path into an array that is absent (no `[[ping]]`) sets nothing.
fn set_path(table: &mut toml::Table, path: &str, value: &toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = path.split('.').collect();
    fn set(t: &mut toml::Table, parts: &[&str], value: &toml::Value) -> Result<(), String> {
        let (first, rest) = parts.split_first().ok_or("an empty key")?;
        if rest.is_empty() {
            t.insert(first.to_string(), value.clone());
            return Ok(());
        }
        if ["flow", "ping", "udp"].contains(first) && !t.contains_key(*first) {
            return Ok(());
        }
        match t
            .entry(first.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(inner) => set(inner, rest, value),
            toml::Value::Array(items) => {
                for item in items {
                    match item {
                        toml::Value::Table(inner) => set(inner, rest, value)?,
                        _ => return Err(format!("`{first}` is not a list of tables")),
                    }
                }
                Ok(())
            }
            _ => Err(format!("`{first}` is a value, not a table")),
        }
    }
    set(table, &parts, value)
}

fn compare_section(src: &Source, c: &CompareSection) -> Result<Compare, ScenarioError> {
    let mut cc = Vec::new();
    for spec in c.cc.iter().flatten() {
        if let Err(e) = spec.get_ref().parse::<Algorithm>() {
            return src.err(spec.span(), format!("`cc` in [compare]: {e}"));
        }
        cc.push(spec.get_ref().clone());
    }
    let mut seeds = Vec::new();
    for s in c.seeds.iter().flatten() {
        seeds.push(src.int(s, "seeds", 0, i64::MAX)? as u64);
    }
    let mut sweeps = Vec::new();
    for sw in &c.sweep {
        if sw.values.get_ref().is_empty() {
            return src.err(
                sw.values.span(),
                format!("the sweep of `{}` lists no values", sw.key.get_ref()),
            );
        }
        sweeps.push(Sweep {
            key: sw.key.get_ref().clone(),
            values: sw.values.get_ref().clone(),
        });
    }
    Ok(Compare {
        cc,
        seeds,
        sweeps,
        flent_test: c.flent_test.as_ref().map(|t| t.get_ref().clone()),
    })
}

/// Reads a scenario file.
pub fn load(path: &Path) -> Result<Config, ScenarioError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScenarioError(format!("cannot read scenario {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string(), path.parent())
}

/// Parses scenario text; `file` names it in errors, `dir` resolves relative
/// trace paths.
pub fn parse(text: &str, file: &str, dir: Option<&Path>) -> Result<Config, ScenarioError> {
    parse_file(
        &Source {
            file,
            text,
            lines: true,
        },
        dir,
    )
    .map(|(c, _)| c)
}

/// Parses scenario text that a program wrote (a workload's path, a
/// comparison's override): errors name `label` and no line, which would
/// mean nothing to the person who wrote the original.
pub fn parse_generated(
    text: &str,
    label: &str,
    dir: Option<&Path>,
) -> Result<Config, ScenarioError> {
    parse_file(
        &Source {
            file: label,
            text,
            lines: false,
        },
        dir,
    )
    .map(|(c, _)| c)
}

fn parse_file(src: &Source, dir: Option<&Path>) -> Result<(Config, File), ScenarioError> {
    let f: File = src.decode()?;
    let duration = src.positive_duration(&f.duration, "duration")?;
    let seed = match &f.seed {
        Some(s) => src.int(s, "seed", 0, i64::MAX)? as u64,
        None => 1,
    };
    let sample_interval = match &f.sample_interval {
        Some(s) => src.positive_duration(s, "sample_interval")?,
        None => 100 * MS,
    };
    let tcp = tcp(src, &f.tcp)?;
    if f.flow.is_empty() && f.ping.is_empty() && f.udp.is_empty() {
        return Err(ScenarioError(format!(
            "{}: no [[flow]], [[ping]] or [[udp]] sections; a scenario needs at least one flow, e.g. [[flow]] cc = \"cubic\" rtt = \"40ms\"",
            src.file
        )));
    }
    let flows = flows::flows(src, &f.flow, tcp.mss, dir)?;
    let pings = flows::pings(src, &f.ping)?;
    let udp = flows::udp(src, &f.udp)?;
    // The shortest path's RTT sizes the BDP queues.
    let min_rtt = flows
        .iter()
        .map(|f| f.rtt)
        .chain(pings.iter().map(|p| p.rtt))
        .chain(udp.iter().map(|u| u.rtt))
        .min()
        .unwrap_or(40 * MS);
    let (links, jitter) = link::links(src, &f.link, tcp.mss, min_rtt, dir)?;
    let config = Config {
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
        jitter,
        links,
        flows,
        pings,
        udp,
    };
    Ok((config, f))
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
        Some(v) => src.int(v, "mss", 64, 65_483)? as u32,
        None => 1448,
    };
    let init_cwnd = match &t.init_cwnd {
        Some(v) => src.int(v, "init_cwnd", 1, 1_000_000)? as u32,
        None => 10,
    };
    let hz = match &t.hz {
        Some(v) => src.int(v, "hz", 1, 1_000_000)? as u32,
        None => 250,
    };
    let rwnd_segments = match &t.rwnd {
        None => 1 << 24,
        Some(v) => match parse_bytes(v.get_ref()) {
            Some(b) if b >= mss as u64 => (b / mss as u64).min(u32::MAX as u64) as u32,
            _ => {
                return src.err(
                    v.span(),
                    format!(
                    "`rwnd` = \"{}\" is not a window of at least one segment; write e.g. \"4MB\"",
                    v.get_ref()
                ),
                )
            }
        },
    };
    let delayed_acks = match &t.delayed_ack {
        None => true,
        Some(d) => match d.get_ref().as_str() {
            "linux" => true,
            "off" => false,
            other => {
                return src.err(d.span(), format!("`delayed_ack` = \"{other}\" is not a policy; write \"linux\" (quick ACKs, then every second segment, 40 ms timer) or \"off\" (every segment)"))
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
    use crate::loss::LossModel;
    use crate::queue::Limit;
    use crate::time::SEC;
    use crate::world::QueueConfig;

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
            (base.replace("rate = ", "ratee = "), "s.toml line 3: unknown key `ratee`, expected one of"),
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

    fn scenario(text: &str) -> Result<Scenario, ScenarioError> {
        let dir = std::env::temp_dir().join(format!("kleinrock-scn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("s{}.toml", text.len()));
        std::fs::write(&path, text).unwrap();
        Scenario::load(&path)
    }

    const BASE: &str = r#"
duration = "10s"
[link]
rate = "10Mbit"
queue = 84
[[flow]]
cc = "cubic"
rtt = "40ms"
[[flow]]
cc = "reno"
rtt = "80ms"
[[ping]]
rtt = "40ms"
"#;

    #[test]
    fn overrides_set_every_flow_and_the_link() {
        let s = scenario(BASE).unwrap();
        assert_eq!(s.compare, Compare::default());
        let bbr = toml::Value::String("bbr".into());
        let loss = toml::Value::String("1%".into());
        let rtt = toml::Value::String("100ms".into());
        let c = s
            .with(&[("cc", &bbr), ("loss", &loss), ("rtt", &rtt)])
            .unwrap();
        assert!(c.flows.iter().all(|f| f.cc.spec() == "bbr"));
        assert!(c.flows.iter().all(|f| f.rtt == 100 * MS));
        assert_eq!(c.pings[0].rtt, 100 * MS);
        assert_eq!(c.links[0].loss, LossModel::Bernoulli { ppm: 10_000 });
        let hz = toml::Value::Integer(1000);
        assert_eq!(s.with(&[("hz", &hz)]).unwrap().hz, 1000);
        let up = toml::Value::String("2%".into());
        let c = s.with(&[("link.up.loss", &up)]).unwrap();
        assert_eq!(c.links[0].loss, LossModel::Bernoulli { ppm: 20_000 });
        assert_eq!(c.links[1].loss, LossModel::None);
    }

    #[test]
    fn a_bad_override_names_itself() {
        let s = scenario(BASE).unwrap();
        let bad = toml::Value::String("lots".into());
        let e = s.with(&[("loss", &bad)]).unwrap_err().0;
        assert!(e.contains("with loss = lots: `loss` = \"lots\""), "{e}");
        assert!(!e.contains(" line "), "{e}");
        let e = s.with(&[("cc", &bad)]).unwrap_err().0;
        assert!(e.contains("unknown algorithm `lots`"), "{e}");
        let e = s.with(&[("link.colour", &bad)]).unwrap_err().0;
        assert!(e.contains("unknown key `colour`"), "{e}");
        let e = s.with(&[("duration.x", &bad)]).unwrap_err().0;
        assert!(e.contains("`duration` is a value, not a table"), "{e}");
    }

    #[test]
    fn the_compare_table_and_sweep_arguments() {
        let s = scenario(&format!(
            "{BASE}\n[compare]\ncc = [\"cubic\", \"bbr\"]\nseeds = [1, 2]\n[[compare.sweep]]\nkey = \"loss\"\nvalues = [\"0.1%\", \"1%\"]\n"
        ))
        .unwrap();
        assert_eq!(s.compare.cc, ["cubic", "bbr"]);
        assert_eq!(s.compare.seeds, [1, 2]);
        assert_eq!(s.compare.sweeps[0].key, "loss");
        assert_eq!(s.compare.sweeps[0].values.len(), 2);
        let e = scenario(&format!("{BASE}\n[compare]\ncc = [\"cubik\"]\n"))
            .unwrap_err()
            .0;
        assert!(
            e.contains("line 16: `cc` in [compare]: unknown algorithm `cubik`"),
            "{e}"
        );
        let w = Sweep::parse("hz=100,1000").unwrap();
        assert_eq!(
            w.values,
            [toml::Value::Integer(100), toml::Value::Integer(1000)]
        );
        let w = Sweep::parse("loss=0.1%, 1%").unwrap();
        assert_eq!(value_label(&w.values[1]), "1%");
        assert!(Sweep::parse("loss")
            .unwrap_err()
            .0
            .contains("is not KEY=VALUES"));
        assert!(Sweep::parse("loss=")
            .unwrap_err()
            .0
            .contains("lists no values"));
    }
}
