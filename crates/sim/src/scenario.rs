//! Scenario files (TOML, docs/SCENARIOS.md) into a [`Config`].
//!
//! Every value a person writes is checked, and a bad one is reported in one
//! sentence naming the file, the line, the key and what would be valid.

use std::path::{Path, PathBuf};

use kleinrock_cc::Algorithm;
use serde::Deserialize;
use toml::Spanned;

use crate::time::{serialization, Time, MS, SEC, US};
use crate::world::{
    bdp_packets, data_packet_bytes, Config, FlowConfig, LinkConfig, PingConfig, QueueConfig,
    RequestResponse, UdpConfig,
};
use kleinrock_link::codel::CodelParams;
use kleinrock_link::loss::LossModel;
use kleinrock_link::mahimahi::Trace;
use kleinrock_link::queue::Limit;
use kleinrock_link::red::RedParams;

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
    name: Option<String>,
    duration: S<String>,
    seed: Option<S<i64>>,
    sample_interval: Option<S<String>>,
    #[serde(default)]
    tcp: Tcp,
    link: LinkSection,
    #[serde(default)]
    flow: Vec<FlowSection>,
    #[serde(default)]
    ping: Vec<PingSection>,
    #[serde(default)]
    udp: Vec<UdpSection>,
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

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PingSection {
    rtt: S<String>,
    interval: Option<S<String>>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct UdpSection {
    rate: S<String>,
    rtt: S<String>,
    size: Option<S<String>>,
    direction: Option<S<String>>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
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

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
struct LinkDir {
    rate: Option<S<String>>,
    trace: Option<S<String>>,
    delay: Option<S<String>>,
    queue: Option<S<toml::Value>>,
    loss: Option<S<toml::Value>>,
    ecn_mark_at: Option<S<i64>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct LinkSection {
    rate: Option<S<String>>,
    trace: Option<S<String>>,
    delay: Option<S<String>>,
    queue: Option<S<toml::Value>>,
    loss: Option<S<toml::Value>>,
    ecn_mark_at: Option<S<i64>>,
    jitter: Option<S<String>>,
    up: Option<LinkDir>,
    down: Option<LinkDir>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FlowSection {
    cc: S<String>,
    rtt: S<String>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
    direction: Option<S<String>>,
    size: Option<S<String>>,
    count: Option<S<i64>>,
    stagger: Option<S<String>>,
    trace: Option<String>,
    request: Option<S<String>>,
    response: Option<S<String>>,
    think: Option<S<String>>,
}

/// Parses durations: `40ms`, `1.5s`, `200us`, `2min`.
pub fn parse_duration(s: &str) -> Option<Time> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "ns" => 1.0,
        "us" => US as f64,
        "ms" => MS as f64,
        "s" => SEC as f64,
        "min" => 60.0 * SEC as f64,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then(|| (v * mult).round() as Time)
}

/// Parses rates: `100Mbit`, `1.5Gbit`, `64kbit`, `128kbit/s`, `10Mbps`.
pub fn parse_rate(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches("/s");
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "bit" | "bps" => 1.0,
        "kbit" | "Kbit" | "kbps" => 1e3,
        "Mbit" | "mbit" | "Mbps" => 1e6,
        "Gbit" | "gbit" | "Gbps" => 1e9,
        _ => return None,
    };
    let r = v * mult;
    (r.is_finite() && r >= 1.0).then_some(r.round() as u64)
}

/// Parses sizes in bytes: `1500B`, `64KB`, `30MB`, `1GB` (powers of 1000)
/// and `KiB`/`MiB`/`GiB`.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let b = v * mult;
    (b.is_finite() && b >= 1.0).then_some(b.round() as u64)
}

/// Parses a probability written as a percentage: `1%`, `0.01%`.
pub fn parse_percent_ppm(s: &str) -> Option<u32> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (0.0..=100.0)
        .contains(&v)
        .then(|| (v * 10_000.0).round() as u32)
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
    /// Are line numbers meaningful? Not for a scenario re-serialized with
    /// a comparison's overrides, whose errors can only come from those.
    lines: bool,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    fn err<T>(&self, span: std::ops::Range<usize>, msg: String) -> Result<T, ScenarioError> {
        Err(ScenarioError(self.place(span.start, &msg)))
    }

    fn place(&self, offset: usize, msg: &str) -> String {
        if self.lines {
            format!("{} line {}: {msg}", self.file, self.line(offset))
        } else {
            format!("{}: {msg}", self.file)
        }
    }

    fn duration(&self, v: &S<String>, key: &str) -> Result<Time, ScenarioError> {
        match parse_duration(v.get_ref()) {
            Some(t) => Ok(t),
            None => self.err(
                v.span(),
                format!("`{key}` = \"{}\" is not a duration; write e.g. \"40ms\", \"1.5s\" or \"200us\"", v.get_ref()),
            ),
        }
    }

    fn positive_duration(&self, v: &S<String>, key: &str) -> Result<Time, ScenarioError> {
        let t = self.duration(v, key)?;
        if t == 0 {
            return self.err(v.span(), format!("`{key}` must be longer than zero"));
        }
        Ok(t)
    }

    fn start_stop(
        &self,
        start: &Option<S<String>>,
        stop: &Option<S<String>>,
    ) -> Result<(Time, Option<Time>), ScenarioError> {
        let start = match start {
            Some(s) => self.duration(s, "start")?,
            None => 0,
        };
        let stop = match stop {
            Some(s) => {
                let t = self.duration(s, "stop")?;
                if t <= start {
                    return self.err(s.span(), "`stop` must come after `start`".into());
                }
                Some(t)
            }
            None => None,
        };
        Ok((start, stop))
    }

    fn direction(&self, d: &Option<S<String>>) -> Result<bool, ScenarioError> {
        match d.as_ref().map(|d| (d, d.get_ref().as_str())) {
            None | Some((_, "upload")) => Ok(true),
            Some((_, "download")) => Ok(false),
            Some((d, other)) => self.err(
                d.span(),
                format!("`direction` = \"{other}\" is not a direction; write \"upload\" or \"download\""),
            ),
        }
    }

    fn int(&self, v: &S<i64>, key: &str, lo: i64, hi: i64) -> Result<i64, ScenarioError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return self.err(
                v.span(),
                format!("`{key}` = {x} is out of range; it must be from {lo} to {hi}"),
            );
        }
        Ok(x)
    }
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
        let cx = Ctx {
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
        let cx = Ctx {
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

fn compare_section(cx: &Ctx, c: &CompareSection) -> Result<Compare, ScenarioError> {
    let mut cc = Vec::new();
    for spec in c.cc.iter().flatten() {
        if let Err(e) = spec.get_ref().parse::<Algorithm>() {
            return cx.err(spec.span(), format!("`cc` in [compare]: {e}"));
        }
        cc.push(spec.get_ref().clone());
    }
    let mut seeds = Vec::new();
    for s in c.seeds.iter().flatten() {
        seeds.push(cx.int(s, "seeds", 0, i64::MAX)? as u64);
    }
    let mut sweeps = Vec::new();
    for sw in &c.sweep {
        if sw.values.get_ref().is_empty() {
            return cx.err(
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
        &Ctx {
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
        &Ctx {
            file: label,
            text,
            lines: false,
        },
        dir,
    )
    .map(|(c, _)| c)
}

fn parse_file(cx: &Ctx, dir: Option<&Path>) -> Result<(Config, File), ScenarioError> {
    let (file, text) = (cx.file, cx.text);
    let f: File = toml::from_str(text).map_err(|e| {
        let msg = e
            .message()
            .replace("unknown field", "unknown key")
            .replace("missing field", "missing key");
        ScenarioError(cx.place(e.span().map_or(0, |s| s.start), &msg))
    })?;
    let _ = (&f.name, file);

    let duration = cx.positive_duration(&f.duration, "duration")?;
    let seed = match &f.seed {
        Some(s) => cx.int(s, "seed", 0, i64::MAX)? as u64,
        None => 1,
    };
    let sample_interval = match &f.sample_interval {
        Some(s) => cx.positive_duration(s, "sample_interval")?,
        None => 100 * MS,
    };

    let t = &f.tcp;
    let mss = match &t.mss {
        Some(v) => cx.int(v, "mss", 64, 65_483)? as u32,
        None => 1448,
    };
    let init_cwnd = match &t.init_cwnd {
        Some(v) => cx.int(v, "init_cwnd", 1, 1_000_000)? as u32,
        None => 10,
    };
    let hz = match &t.hz {
        Some(v) => cx.int(v, "hz", 1, 1_000_000)? as u32,
        None => 250,
    };
    let rwnd_segments = match &t.rwnd {
        None => 1 << 24,
        Some(v) => match parse_bytes(v.get_ref()) {
            Some(b) if b >= mss as u64 => (b / mss as u64).min(u32::MAX as u64) as u32,
            _ => {
                return cx.err(
                    v.span(),
                    format!(
                    "`rwnd` = \"{}\" is not a window of at least one segment; write e.g. \"4MB\"",
                    v.get_ref()
                ),
                )
            }
        },
    };

    if f.flow.is_empty() && f.ping.is_empty() && f.udp.is_empty() {
        return Err(ScenarioError(format!(
            "{file}: no [[flow]], [[ping]] or [[udp]] sections; a scenario needs at least one flow, e.g. [[flow]] cc = \"cubic\" rtt = \"40ms\""
        )));
    }
    let mut flows = Vec::new();
    for fs in &f.flow {
        let cc: Algorithm = match fs.cc.get_ref().parse() {
            Ok(a) => a,
            Err(e) => return cx.err(fs.cc.span(), format!("`cc`: {e}")),
        };
        let rtt = cx.positive_duration(&fs.rtt, "rtt")?;
        let (start, stop) = cx.start_stop(&fs.start, &fs.stop)?;
        let upload = cx.direction(&fs.direction)?;
        let size_segments = match &fs.size {
            None => None,
            Some(v) => match parse_bytes(v.get_ref()) {
                Some(b) => Some(b.div_ceil(mss as u64)),
                None => {
                    return cx.err(
                        v.span(),
                        format!(
                            "`size` = \"{}\" is not a size; write e.g. \"30MB\" or \"64KiB\"",
                            v.get_ref()
                        ),
                    )
                }
            },
        };
        let request_response = match (&fs.request, &fs.response, &fs.think) {
            (None, None, None) => None,
            (req, Some(resp), think) => {
                if fs.size.is_some() {
                    return cx.err(fs.cc.span(), "a flow is either a transfer (`size`) or request/response (`response`), not both".into());
                }
                let request_bytes = match req {
                    None => 100,
                    Some(r) => match parse_bytes(r.get_ref()) {
                        Some(b) if (1..=1448).contains(&b) => b as u32 + 52,
                        _ => {
                            return cx.err(
                                r.span(),
                                format!(
                                "`request` = \"{}\" is not a size from 1B to 1448B (one segment)",
                                r.get_ref()
                            ),
                            )
                        }
                    },
                };
                let response_segments = match parse_bytes(resp.get_ref()) {
                    Some(b) => b.div_ceil(mss as u64),
                    None => {
                        return cx.err(
                            resp.span(),
                            format!(
                                "`response` = \"{}\" is not a size; write e.g. \"100KB\"",
                                resp.get_ref()
                            ),
                        )
                    }
                };
                let think = match think {
                    Some(t) => cx.duration(t, "think")?,
                    None => 0,
                };
                Some(RequestResponse {
                    request_bytes,
                    response_segments,
                    think,
                })
            }
            (Some(r), None, _) | (None, None, Some(r)) => {
                return cx.err(
                    r.span(),
                    "a request/response flow needs `response` (the size of each response)".into(),
                )
            }
        };
        let count = match &fs.count {
            Some(c) => cx.int(c, "count", 1, 100_000)? as u64,
            None => 1,
        };
        let stagger = match &fs.stagger {
            Some(s) => cx.duration(s, "stagger")?,
            None => 0,
        };
        for i in 0..count {
            let trace = fs.trace.as_ref().map(|t| {
                let name = if count > 1 {
                    t.replace("{i}", &i.to_string())
                } else {
                    t.clone()
                };
                let p = PathBuf::from(name);
                match dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p,
                }
            });
            flows.push(FlowConfig {
                cc: cc.clone(),
                rtt,
                start: start + i * stagger,
                stop,
                upload,
                size_segments,
                trace,
                request_response,
            });
        }
    }

    let mut pings = Vec::new();
    for p in &f.ping {
        let (start, stop) = cx.start_stop(&p.start, &p.stop)?;
        pings.push(PingConfig {
            rtt: cx.positive_duration(&p.rtt, "rtt")?,
            interval: match &p.interval {
                Some(i) => cx.positive_duration(i, "interval")?,
                None => 200 * MS,
            },
            start,
            stop,
        });
    }
    let mut udp = Vec::new();
    for u in &f.udp {
        let (start, stop) = cx.start_stop(&u.start, &u.stop)?;
        let rate_bps = match parse_rate(u.rate.get_ref()) {
            Some(r) => r,
            None => {
                return cx.err(
                    u.rate.span(),
                    format!(
                        "`rate` = \"{}\" is not a positive rate; write e.g. \"5Mbit\"",
                        u.rate.get_ref()
                    ),
                )
            }
        };
        let bytes = match &u.size {
            None => 1500,
            Some(v) => match parse_bytes(v.get_ref()) {
                Some(b) if (28..=65_535).contains(&b) => b as u32,
                _ => {
                    return cx.err(
                        v.span(),
                        format!(
                            "`size` = \"{}\" is not a datagram size from 28B to 65535B",
                            v.get_ref()
                        ),
                    )
                }
            },
        };
        udp.push(UdpConfig {
            rate_bps,
            bytes,
            rtt: cx.positive_duration(&u.rtt, "rtt")?,
            upload: cx.direction(&u.direction)?,
            start,
            stop,
        });
    }
    let min_rtt = flows
        .iter()
        .map(|f| f.rtt)
        .chain(pings.iter().map(|p| p.rtt))
        .chain(udp.iter().map(|u| u.rtt))
        .min()
        .unwrap_or(40 * MS);
    let both = LinkDir {
        rate: f.link.rate.clone(),
        trace: f.link.trace.clone(),
        delay: f.link.delay.clone(),
        queue: f.link.queue.clone(),
        loss: f.link.loss.clone(),
        ecn_mark_at: f.link.ecn_mark_at.clone(),
    };
    let up = merge(&both, f.link.up.as_ref());
    let down = merge(&both, f.link.down.as_ref());
    let links = [
        link(cx, &up, "link.up", mss, min_rtt, dir)?,
        link(cx, &down, "link.down", mss, min_rtt, dir)?,
    ];
    let jitter = match &f.link.jitter {
        Some(j) if j.get_ref() == "auto" => serialization(
            data_packet_bytes(mss),
            links[0].rate_bps.min(links[1].rate_bps),
        ),
        Some(j) => cx.duration(j, "jitter")?,
        None => serialization(
            data_packet_bytes(mss),
            links[0].rate_bps.min(links[1].rate_bps),
        ),
    };

    let config = Config {
        duration,
        seed,
        sample_interval,
        hz,
        mss,
        init_cwnd,
        rwnd_segments,
        pace_all: t.pace_all.unwrap_or(false),
        ecn: t.ecn.unwrap_or(false),
        peer_ecn: t.peer_ecn.unwrap_or(true),
        slow_start_after_idle: t.slow_start_after_idle.unwrap_or(true),
        delayed_acks: match &t.delayed_ack {
            None => true,
            Some(d) => match d.get_ref().as_str() {
                "linux" => true,
                "off" => false,
                other => {
                    return cx.err(d.span(), format!("`delayed_ack` = \"{other}\" is not a policy; write \"linux\" (quick ACKs, then every second segment, 40 ms timer) or \"off\" (every segment)"))
                }
            },
        },
        jitter,
        links,
        flows,
        pings,
        udp,
    };
    Ok((config, f))
}

fn merge(both: &LinkDir, dir: Option<&LinkDir>) -> LinkDir {
    let mut m = both.clone();
    if let Some(d) = dir {
        if d.rate.is_some() || d.trace.is_some() {
            m.rate = d.rate.clone();
            m.trace = d.trace.clone();
        }
        if d.queue.is_some() {
            m.queue = d.queue.clone();
        }
        if d.delay.is_some() {
            m.delay = d.delay.clone();
        }
        if d.loss.is_some() {
            m.loss = d.loss.clone();
        }
        if d.ecn_mark_at.is_some() {
            m.ecn_mark_at = d.ecn_mark_at.clone();
        }
    }
    m
}

fn link(
    cx: &Ctx,
    d: &LinkDir,
    section: &str,
    mss: u32,
    min_rtt: Time,
    dir: Option<&Path>,
) -> Result<LinkConfig, ScenarioError> {
    let trace = match &d.trace {
        None => None,
        Some(t) => {
            let p = PathBuf::from(t.get_ref());
            let p = match dir {
                Some(d) if p.is_relative() => d.join(p),
                _ => p,
            };
            match Trace::load(&p) {
                Ok(tr) => Some(tr),
                Err(e) => return cx.err(t.span(), format!("`trace`: {}", e.0)),
            }
        }
    };
    let rate_bps = match (&d.rate, &trace) {
        (_, Some(t)) => t.mean_rate_bps(),
        (None, None) => {
            return Err(ScenarioError(format!(
                "{}: [{section}] has no `rate`; give the bottleneck's rate in [link], e.g. rate = \"100Mbit\", or a mahimahi `trace`",
                cx.file
            )))
        }
        (Some(rate), None) => match parse_rate(rate.get_ref()) {
            Some(r) => r,
            None => {
                return cx.err(
                    rate.span(),
                    format!("`rate` = \"{}\" is not a positive rate; write e.g. \"100Mbit\", \"1.5Gbit\" or \"128kbit\"", rate.get_ref()),
                )
            }
        },
    };
    let delay = match &d.delay {
        Some(v) => cx.duration(v, "delay")?,
        None => 0,
    };
    let pkt = data_packet_bytes(mss);
    let bdp = bdp_packets(rate_bps, min_rtt, mss).max(1);
    let mark_at = match &d.ecn_mark_at {
        Some(k) => Some(cx.int(k, "ecn_mark_at", 1, u32::MAX as i64)? as u32),
        None => None,
    };
    let queue = match &d.queue {
        None => QueueConfig::Fifo {
            limit: Limit::Packets(bdp as u32),
            mark_at,
        },
        Some(q) => {
            let bad = |why: &str| {
                cx.err(
                    q.span(),
                    format!("`queue` {why}; write a packet count (84), a size (\"64KB\"), a multiple of the BDP (\"1.5bdp\") or a table such as {{ kind = \"codel\" }}"),
                )
            };
            let limit = match q.get_ref() {
                toml::Value::Integer(n) if *n >= 1 && *n <= u32::MAX as i64 => {
                    Limit::Packets(*n as u32)
                }
                toml::Value::Integer(n) => {
                    return bad(&format!("= {n} is smaller than one packet"))
                }
                toml::Value::String(s) if s.ends_with("bdp") => {
                    match s.trim_end_matches("bdp").trim().parse::<f64>() {
                        Ok(x) if x > 0.0 && x.is_finite() => {
                            Limit::Packets(((bdp as f64 * x).round() as u32).max(1))
                        }
                        _ => {
                            return bad(&format!("= \"{s}\" is not a positive multiple of the BDP"))
                        }
                    }
                }
                toml::Value::String(s) => match parse_bytes(s) {
                    Some(b) if b >= pkt as u64 => Limit::Bytes(b),
                    Some(_) => {
                        return bad(&format!("= \"{s}\" is smaller than one {pkt}-byte packet"))
                    }
                    None => return bad(&format!("= \"{s}\" is not a size")),
                },
                toml::Value::Table(_) if trace.is_some() => {
                    return bad("is an AQM, but a trace link supports only a FIFO for now")
                }
                toml::Value::Table(t) => {
                    return Ok(LinkConfig {
                        rate_bps,
                        trace: None,
                        delay,
                        queue: aqm(cx, q.span(), t, bdp)?,
                        loss: match &d.loss {
                            None => LossModel::None,
                            Some(l) => loss(cx, l)?,
                        },
                    })
                }
                other => return bad(&format!("= {other} is not a queue size")),
            };
            QueueConfig::Fifo { limit, mark_at }
        }
    };
    let loss = match &d.loss {
        None => LossModel::None,
        Some(l) => loss(cx, l)?,
    };
    Ok(LinkConfig {
        rate_bps,
        trace,
        delay,
        queue,
        loss,
    })
}

/// `queue = { kind = "codel" | "fq_codel" | "red", ... }`.
fn aqm(
    cx: &Ctx,
    span: std::ops::Range<usize>,
    t: &toml::Table,
    bdp: u64,
) -> Result<QueueConfig, ScenarioError> {
    let kind = t.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let allowed: &[&str] = match kind {
        "codel" | "fq_codel" => &["kind", "target", "interval", "limit", "ecn"],
        "red" => &["kind", "min", "max", "probability", "weight", "limit", "ecn"],
        _ => {
            return cx.err(
                span,
                format!("queue `kind` = \"{kind}\" is not a queue; valid kinds are codel, fq_codel, red (a FIFO is written as a size)"),
            )
        }
    };
    if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
        return cx.err(
            span,
            format!(
                "unknown key `{k}` in a {kind} queue; valid keys are {}",
                allowed.join(", ")
            ),
        );
    }
    let dur = |k: &str, default: Time| -> Result<Time, ScenarioError> {
        match t.get(k) {
            None => Ok(default),
            Some(v) => match v.as_str().and_then(parse_duration) {
                Some(d) if d > 0 => Ok(d),
                _ => cx.err(
                    span.clone(),
                    format!("`{k}` = {v} is not a positive duration; write e.g. \"5ms\""),
                ),
            },
        }
    };
    let count = |k: &str, default: u32| -> Result<u32, ScenarioError> {
        match t.get(k) {
            None => Ok(default),
            Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => Ok(*n as u32),
            Some(v) => cx.err(
                span.clone(),
                format!("`{k}` = {v} is not a packet count of at least 1"),
            ),
        }
    };
    let flag = |k: &str, default: bool| -> Result<bool, ScenarioError> {
        match t.get(k) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => cx.err(span.clone(), format!("`{k}` = {v} is not true or false")),
        }
    };
    Ok(match kind {
        "codel" | "fq_codel" => {
            let fq = kind == "fq_codel";
            let p = CodelParams {
                target: dur("target", 5 * MS)?,
                interval: dur("interval", 100 * MS)?,
                limit: count("limit", if fq { 10_240 } else { 1000 })?,
                // Linux: fq_codel marks by default, codel does not.
                ecn: flag("ecn", fq)?,
            };
            if fq {
                QueueConfig::FqCodel(p)
            } else {
                QueueConfig::Codel(p)
            }
        }
        _ => {
            let min = count("min", (bdp / 4).max(1) as u32)? as f64;
            let max = count("max", (bdp * 3 / 4).max(3) as u32)? as f64;
            if max <= min {
                return cx.err(span, format!("RED needs `max` ({max}) above `min` ({min})"));
            }
            let max_p = match t.get("probability") {
                None => 0.1,
                Some(v) => match v.as_str().and_then(parse_percent_ppm) {
                    Some(p) if p > 0 => p as f64 / 1e6,
                    _ => {
                        return cx.err(
                            span,
                            format!(
                                "`probability` = {v} is not a percentage above 0, e.g. \"10%\""
                            ),
                        )
                    }
                },
            };
            let wq = match t.get("weight") {
                None => 0.002,
                Some(toml::Value::Float(w)) if *w > 0.0 && *w <= 1.0 => *w,
                Some(v) => {
                    return cx.err(span, format!("`weight` = {v} is not a weight in (0, 1]"))
                }
            };
            QueueConfig::Red(RedParams {
                limit: count("limit", (bdp * 2).max(max as u64 + 1) as u32)?,
                min,
                max,
                max_p,
                wq,
                ecn: flag("ecn", false)?,
            })
        }
    })
}

fn loss(cx: &Ctx, l: &S<toml::Value>) -> Result<LossModel, ScenarioError> {
    let pct = |v: &toml::Value, key: &str| -> Result<u32, ScenarioError> {
        match v.as_str().and_then(parse_percent_ppm) {
            Some(p) => Ok(p),
            None => cx.err(
                l.span(),
                format!("`{key}` = {v} is not a probability; write a percentage such as \"1%\""),
            ),
        }
    };
    match l.get_ref() {
        toml::Value::String(_) => {
            let ppm = pct(l.get_ref(), "loss")?;
            Ok(if ppm == 0 { LossModel::None } else { LossModel::Bernoulli { ppm } })
        }
        toml::Value::Table(t) => {
            let keys = ["p", "r", "loss_bad", "loss_good"];
            if let Some(k) = t.keys().find(|k| !keys.contains(&k.as_str())) {
                return cx.err(l.span(), format!("unknown key `{k}` in a Gilbert-Elliott loss; valid keys are p, r, loss_bad, loss_good"));
            }
            let get = |k: &str, default: &str| -> Result<u32, ScenarioError> {
                match t.get(k) {
                    Some(v) => pct(v, k),
                    None if default.is_empty() => cx.err(l.span(), format!("a Gilbert-Elliott loss needs `{k}`")),
                    None => Ok(parse_percent_ppm(default).unwrap()),
                }
            };
            Ok(LossModel::GilbertElliott {
                p_ppm: get("p", "")?,
                r_ppm: get("r", "")?,
                loss_bad_ppm: get("loss_bad", "100%")?,
                loss_good_ppm: get("loss_good", "0%")?,
                bad: false,
            })
        }
        other => cx.err(
            l.span(),
            format!("`loss` = {other} is not a loss; write \"1%\" or {{ p = \"0.1%\", r = \"10%\" }} for Gilbert-Elliott bursts"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn units() {
        assert_eq!(parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration("200us"), Some(200_000));
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_rate("128kbit"), Some(128_000));
        assert_eq!(parse_rate("1Gbit/s"), Some(1_000_000_000));
        assert_eq!(parse_rate("0Mbit"), None);
        assert_eq!(parse_bytes("30MB"), Some(30_000_000));
        assert_eq!(parse_bytes("64KiB"), Some(65_536));
        assert_eq!(parse_percent_ppm("0.001%"), Some(10));
        assert_eq!(parse_percent_ppm("1"), None);
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
