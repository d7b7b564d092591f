//! Workload files: path types, destinations, connection arrivals.
//!
//! ```toml
//! name = "a mixed fleet"
//! seed = 1
//! connections = 60          # per destination
//! duration = "3s"           # each connection: bulk data for this long
//! gap = "2s"                # mean time between connection starts (exponential)
//! sample = "500ms"          # samples during a connection
//! outcome_seeds = 4         # simulated outcomes per path and algorithm
//! candidates = ["cubic", "bbr", ...]   # the Kleinrock selector's (default: all)
//! sizes = [                 # optional; default all bulk
//!   { size = "100KB", weight = 6 },     # a transfer: the connection ends when done
//!   { size = "bulk", weight = 1 },      # bulk data for `duration`
//! ]
//!
//! [[path]]
//! name = "lossy LAN"
//! destinations = 5          # default 1
//! address = "10.1.0.1"      # the first destination; the others count up
//! rtt = "1ms"
//! peer_ecn = true           # default true
//! unavailable = ["cdg"]     # algorithms the host cannot set there
//! [path.link]               # a scenario's [link] table
//! rate = "1Gbit"
//! loss = "10%"
//! [path.change]             # optional: the path changes
//! after = 30                # connections to each destination
//! [path.change.link]        # keys replaced in [path.link]
//! loss = "0%"
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use kleinrock_sim::scenario::limits::{
    self, Within, MAX_FILE_BYTES, MAX_SERIES_RECORDS, MAX_WEIGHT, MIN_SAMPLE_INTERVAL,
};
use kleinrock_sim::scenario::units::{fmt_duration, read_text, Source};
use kleinrock_sim::scenario::{parse_generated, wording, ScenarioError};
use kleinrock_sim::time::Time;
use kleinrock_sim::Config;
use serde::Deserialize;
use toml::Spanned;

type S<T> = Spanned<T>;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    seed: Option<S<i64>>,
    connections: S<i64>,
    duration: S<String>,
    gap: S<String>,
    sample: Option<S<String>>,
    outcome_seeds: Option<S<i64>>,
    candidates: Option<Vec<S<String>>>,
    #[serde(default)]
    sizes: Vec<SizeSection>,
    #[serde(default)]
    path: Vec<PathSection>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct SizeSection {
    size: S<String>,
    weight: Option<S<f64>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct PathSection {
    name: S<String>,
    destinations: Option<S<i64>>,
    address: S<String>,
    rtt: S<String>,
    peer_ecn: Option<bool>,
    #[serde(default)]
    unavailable: Vec<S<String>>,
    link: toml::Table,
    change: Option<ChangeSection>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ChangeSection {
    after: S<i64>,
    link: toml::Table,
}

/// One network a path type can be in: the simulator's configuration for a
/// single connection on it (the flow's algorithm set per run).
#[derive(Clone, Debug)]
pub struct Network {
    pub config: Config,
}

/// A path type and the destinations that take it.
#[derive(Clone, Debug)]
pub struct PathType {
    pub name: String,
    pub destinations: u32,
    pub first_address: IpAddr,
    /// Algorithm specs the host cannot set on connections over it.
    pub unavailable: Vec<String>,
    /// The network, and after `change_after` connections the changed one.
    pub before: Network,
    pub after: Option<(u32, Network)>,
}

/// A class of connection sizes: `bytes` to transfer (`None`: bulk data for
/// the workload's `duration`), drawn with probability proportional to
/// `weight`.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeClass {
    pub label: String,
    pub bytes: Option<u64>,
    pub weight: f64,
}

/// A whole workload.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub seed: u64,
    pub connections: u32,
    pub duration: Time,
    pub gap: Time,
    pub sample: Time,
    pub outcome_seeds: u32,
    /// The Kleinrock selector's candidates (bpftune has its own four).
    pub candidates: Vec<String>,
    /// The connection size distribution (one bulk class by default).
    pub sizes: Vec<SizeClass>,
    pub paths: Vec<PathType>,
}

/// A connection's `duration`: at least one sample.
const CONNECTION: Within<Time> = Within {
    min: MIN_SAMPLE_INTERVAL,
    max: limits::MAX_DURATION,
    why: "at least one sample interval, and at most a day",
};

/// The mean `gap` between connection starts.
const GAP: Within<Time> = Within {
    min: 1,
    max: limits::MAX_DURATION,
    why: "a day",
};

/// The most connections a workload may make in all (each path's
/// destinations times `connections`, summed): the play holds each one
/// while it runs, about 200 bytes apiece (2 GB at the limit), and plays
/// about a million in 7 s per policy (docs/SELECTOR.md).
pub const MAX_CONNECTIONS: u64 = 10_000_000;

/// The mss of the scenario a workload generates (the scenario default).
const MSS: u32 = 1448;

/// A count from `lo` to `hi` (at most `u32::MAX`).
fn count(src: &Source, v: &S<i64>, key: &str, lo: i64, hi: i64) -> Result<u32, ScenarioError> {
    Ok(src.int(v, key, lo, hi)? as u32)
}

/// An algorithm spec, as `kleinrock algorithms` prints it.
fn spec(src: &Source, v: &S<String>, key: &str) -> Result<String, ScenarioError> {
    Ok(src.algorithm(v, key)?.spec())
}

/// A size class's `size`: "bulk", or bytes a flow can send.
fn size_class(src: &Source, z: &SizeSection) -> Result<SizeClass, ScenarioError> {
    let label = z.size.get_ref().clone();
    let bytes = if label == "bulk" {
        None
    } else {
        let w = limits::flow_bytes(MSS);
        Some(src.bytes(&z.size, "size", &w, "\"100KB\", \"10MB\" or \"bulk\"")?)
    };
    let weight = match &z.weight {
        None => 1.0,
        Some(w) if w.get_ref().is_finite() && (f64::MIN_POSITIVE..=MAX_WEIGHT).contains(w.get_ref()) => *w.get_ref(),
        Some(w) => {
            return src.err(
                w.span(),
                format!(
                    "`weight` = {} is not a positive number of at most {MAX_WEIGHT:e} (weights are relative: a million to one already draws a class once in a million connections)",
                    src.literal(w.span())
                ),
            )
        }
    };
    Ok(SizeClass {
        label,
        bytes,
        weight,
    })
}

/// Each connection's series must fit [`MAX_SERIES_RECORDS`] (a sample of
/// the flow and of both bottlenecks each `sample`): said here, in the
/// workload's keys, before the scenario it generates would say it in its
/// own.
fn series_fit(src: &Source, f: &File, duration: Time, sample: Time) -> Result<(), ScenarioError> {
    let records = (duration / sample + 1).saturating_mul(3);
    if records <= MAX_SERIES_RECORDS {
        return Ok(());
    }
    let key = f.sample.as_ref().unwrap_or(&f.duration);
    src.err(
        key.span(),
        format!(
            "a connection's time series would hold {records} records (a sample every {} for {}), more than {MAX_SERIES_RECORDS}, the limit (about 1 GB of memory); make `sample` longer or `duration` shorter",
            fmt_duration(sample),
            fmt_duration(duration)
        ),
    )
}

/// What every connection of a workload shares.
struct Connection<'a> {
    file: &'a str,
    dir: Option<&'a Path>,
    duration: Time,
    sample: Time,
}

/// The scenario text of one connection on a path: `link` as given, one
/// bulk flow at the path's RTT.
fn network(
    c: &Connection,
    path: &str,
    link: &toml::Table,
    rtt: &str,
    peer_ecn: bool,
) -> Result<Network, ScenarioError> {
    let (file, dir, duration, sample) = (c.file, c.dir, c.duration, c.sample);
    let mut doc = toml::Table::new();
    // In nanoseconds: the workload's values exactly, however fine.
    doc.insert(
        "duration".into(),
        toml::Value::String(format!("{duration}ns")),
    );
    doc.insert(
        "sample_interval".into(),
        toml::Value::String(format!("{sample}ns")),
    );
    let mut tcp = toml::Table::new();
    tcp.insert("peer_ecn".into(), toml::Value::Boolean(peer_ecn));
    doc.insert("tcp".into(), toml::Value::Table(tcp));
    doc.insert("link".into(), toml::Value::Table(link.clone()));
    let mut flow = toml::Table::new();
    flow.insert("cc".into(), toml::Value::String("cubic".into()));
    flow.insert("rtt".into(), toml::Value::String(rtt.into()));
    doc.insert(
        "flow".into(),
        toml::Value::Array(vec![toml::Value::Table(flow)]),
    );
    let label = format!("{file} path `{}`", wording::show(path));
    let text = toml::to_string(&doc).map_err(|e| ScenarioError(format!("{label}: {e}")))?;
    let config = parse_generated(&text, &label, dir)?;
    Ok(Network { config })
}

impl Workload {
    pub fn load(path: &Path) -> Result<Workload, ScenarioError> {
        let text = read_text(path, "workload", MAX_FILE_BYTES)?;
        Workload::parse(&text, &path.display().to_string(), path.parent())
    }

    pub fn parse(text: &str, file: &str, dir: Option<&Path>) -> Result<Workload, ScenarioError> {
        let src = Source {
            file,
            text,
            lines: true,
        };
        if text.trim().is_empty() {
            return Err(ScenarioError(format!(
                "{}: the workload is empty; it needs `connections`, `duration`, `gap` and at least one [[path]] (docs/SELECTOR.md)",
                wording::name(file)
            )));
        }
        let f: File = src.decode()?;
        let connections = count(&src, &f.connections, "connections", 1, 100_000)?;
        let duration = src.duration(&f.duration, "duration", &CONNECTION)?;
        let gap = src.duration(&f.gap, "gap", &GAP)?;
        let sample = match &f.sample {
            Some(s) => src.duration(s, "sample", &limits::SAMPLE_INTERVAL)?,
            None => (duration / 4).max(MIN_SAMPLE_INTERVAL),
        }
        .min(duration);
        series_fit(&src, &f, duration, sample)?;
        let outcome_seeds = match &f.outcome_seeds {
            Some(s) => count(&src, s, "outcome_seeds", 1, 64)?,
            None => 4,
        };
        let seed = match &f.seed {
            Some(s) => count(&src, s, "seed", 0, u32::MAX as i64)? as u64,
            None => 1,
        };
        let candidates = match &f.candidates {
            None => kleinrock_select::bandit::DEFAULT_CANDIDATES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            Some(c) => c
                .iter()
                .map(|s| spec(&src, s, "candidates"))
                .collect::<Result<Vec<_>, _>>()?,
        };
        if !candidates.iter().any(|c| c == "cubic") {
            return Err(ScenarioError(format!(
                "{}: `candidates` must include cubic, the system's default when another cannot be set",
                wording::name(file)
            )));
        }
        let mut sizes = f
            .sizes
            .iter()
            .map(|z| size_class(&src, z))
            .collect::<Result<Vec<_>, _>>()?;
        if sizes.is_empty() {
            sizes.push(SizeClass {
                label: "bulk".into(),
                bytes: None,
                weight: 1.0,
            });
        }
        if f.path.is_empty() {
            return Err(ScenarioError(format!(
                "{}: no [[path]]; describe at least one path type",
                wording::name(file)
            )));
        }
        let mut paths = Vec::new();
        for p in &f.path {
            let name = p.name.get_ref().clone();
            let destinations = match &p.destinations {
                Some(d) => count(&src, d, "destinations", 1, 1_000_000)?,
                None => 1,
            };
            let first_address: IpAddr = match p.address.get_ref().parse() {
                Ok(a) => a,
                Err(_) => return src.err(p.address.span(), format!("`address` = {} is not an IP address; write e.g. \"10.0.0.1\" or \"2001:db8::1\"", wording::quoted(p.address.get_ref()))),
            };
            src.duration(&p.rtt, "rtt", &limits::RTT)?;
            let unavailable = p
                .unavailable
                .iter()
                .map(|s| spec(&src, s, "unavailable"))
                .collect::<Result<Vec<_>, _>>()?;
            let ecn = p.peer_ecn.unwrap_or(true);
            let conn = Connection {
                file,
                dir,
                duration,
                sample,
            };
            let before = network(&conn, &name, &p.link, p.rtt.get_ref(), ecn)?;
            let after = match &p.change {
                None => None,
                Some(c) => {
                    let after = count(&src, &c.after, "after", 1, connections as i64)?;
                    let mut link = p.link.clone();
                    for (k, v) in &c.link {
                        link.insert(k.clone(), v.clone());
                    }
                    Some((
                        after,
                        network(
                            &conn,
                            &format!("{name} (changed)"),
                            &link,
                            p.rtt.get_ref(),
                            ecn,
                        )?,
                    ))
                }
            };
            paths.push(PathType {
                name,
                destinations,
                first_address,
                unavailable,
                before,
                after,
            });
        }
        check_total(file, connections, &paths)?;
        check_addresses(&src, &f.path, &paths)?;
        Ok(Workload {
            name: f.name.clone().unwrap_or_else(|| file.to_string()),
            seed,
            connections,
            duration,
            gap,
            sample,
            outcome_seeds,
            candidates,
            sizes,
            paths,
        })
    }

    /// Every algorithm either policy may run: cubic (the system default, and
    /// the baseline), bpftune's candidates, then the workload's.
    pub fn algorithms(&self) -> Vec<String> {
        let mut all: Vec<String> = vec!["cubic".into()];
        let bpftune = kleinrock_select::bpftune::CONGS
            .iter()
            .map(|s| s.to_string());
        for spec in bpftune.chain(self.candidates.iter().cloned()) {
            if !all.contains(&spec) {
                all.push(spec);
            }
        }
        all
    }

    /// Every destination: (path index, address).
    pub fn destinations(&self) -> Vec<(usize, IpAddr)> {
        let mut out = Vec::new();
        for (i, p) in self.paths.iter().enumerate() {
            for k in 0..p.destinations {
                let a = match p.first_address {
                    IpAddr::V4(a) => IpAddr::V4((u32::from(a).wrapping_add(k)).into()),
                    IpAddr::V6(a) => IpAddr::V6((u128::from(a).wrapping_add(k as u128)).into()),
                };
                out.push((i, a));
            }
        }
        out
    }

    /// The networks to simulate: each path's before and after.
    pub fn networks(&self) -> Vec<(usize, bool, &Network)> {
        let mut out = Vec::new();
        for (i, p) in self.paths.iter().enumerate() {
            out.push((i, false, &p.before));
            if let Some((_, n)) = &p.after {
                out.push((i, true, n));
            }
        }
        out
    }
}

/// A path type's destinations as the selector keys them (IPv4 mapped into
/// IPv6, as [`kleinrock_select::peer`] does): the first and the last, or
/// `None` if counting up from the first runs past the family's last
/// address.
fn peer_range(p: &PathType) -> Option<(u128, u128)> {
    let last = match p.first_address {
        IpAddr::V4(a) => IpAddr::V4(u32::from(a).checked_add(p.destinations - 1)?.into()),
        IpAddr::V6(a) => IpAddr::V6(
            u128::from(a)
                .checked_add(p.destinations as u128 - 1)?
                .into(),
        ),
    };
    Some((
        kleinrock_select::peer(p.first_address),
        kleinrock_select::peer(last),
    ))
}

/// Refuses a workload of more than [`MAX_CONNECTIONS`] connections in all,
/// which would abort on allocation or play for hours (issue 16).
fn check_total(file: &str, connections: u32, paths: &[PathType]) -> Result<(), ScenarioError> {
    let destinations: u64 = paths.iter().map(|p| p.destinations as u64).sum();
    let total = destinations * connections as u64;
    if total <= MAX_CONNECTIONS {
        return Ok(());
    }
    Err(ScenarioError(format!(
        "{}: the workload makes {total} connections in all (`connections` = {connections} to each of {destinations} destinations), more than {MAX_CONNECTIONS}, the limit (the fleet holds every connection while it plays, about 200 bytes each); lower `connections` or `destinations`",
        wording::name(file)
    )))
}

/// Each path's destinations must be addresses of their own: counting up
/// from `address` must not run past 255.255.255.255 (or the last IPv6
/// address), which wrapped to 0.0.0.0, and no two paths may share one,
/// which merged their peers in the selectors' tables.
fn check_addresses(
    src: &Source,
    sections: &[PathSection],
    paths: &[PathType],
) -> Result<(), ScenarioError> {
    let mut ranges = Vec::new();
    for (i, (p, s)) in paths.iter().zip(sections).enumerate() {
        let Some(r) = peer_range(p) else {
            let last = match p.first_address {
                IpAddr::V4(_) => "255.255.255.255",
                IpAddr::V6(_) => "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            };
            return src.err(
                s.address.span(),
                format!(
                    "`address` = \"{}\" with {} destinations runs past {last}; start path `{}` lower",
                    s.address.get_ref(),
                    p.destinations,
                    p.name
                ),
            );
        };
        ranges.push((r, i));
    }
    ranges.sort();
    for w in ranges.windows(2) {
        let ((a, i), (b, j)) = (w[0], w[1]);
        if b.0 <= a.1 {
            let (first, second) = (i.min(j), i.max(j));
            let show = |r: (u128, u128)| {
                format!(
                    "{} to {}",
                    kleinrock_select::addr(r.0),
                    kleinrock_select::addr(r.1)
                )
            };
            let (rf, rs) = if first == i { (a, b) } else { (b, a) };
            return src.err(
                sections[second].address.span(),
                format!(
                    "path `{}` ({}) shares addresses with path `{}` ({}), which would merge their peers; give each path addresses of its own",
                    paths[second].name,
                    show(rs),
                    paths[first].name,
                    show(rf)
                ),
            );
        }
    }
    Ok(())
}

/// Where the workload file lives, to resolve trace paths in links.
pub fn dir_of(path: &Path) -> Option<PathBuf> {
    path.parent().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
connections = 20
duration = "2s"
gap = "1s"
[[path]]
name = "lossy"
destinations = 3
address = "10.0.0.254"
rtt = "1ms"
unavailable = ["cdg"]
[path.link]
rate = "1Gbit"
loss = "10%"
[path.change]
after = 10
[path.change.link]
loss = "0%"
"#;

    #[test]
    fn a_workload_parses_into_networks_and_addresses() {
        let w = Workload::parse(OK, "w.toml", None).unwrap();
        assert_eq!(
            (w.connections, w.outcome_seeds, w.sample),
            (20, 4, 500_000_000)
        );
        let p = &w.paths[0];
        assert_eq!(p.unavailable, ["cdg"]);
        assert_eq!(
            p.before.config.links[0].loss,
            kleinrock_sim::LossModel::Bernoulli { ppm: 100_000 }
        );
        let (after, n) = p.after.as_ref().unwrap();
        assert_eq!(*after, 10);
        assert_eq!(n.config.links[0].loss, kleinrock_sim::LossModel::None);
        let d: Vec<String> = w
            .destinations()
            .iter()
            .map(|(_, a)| a.to_string())
            .collect();
        assert_eq!(d, ["10.0.0.254", "10.0.0.255", "10.0.1.0"]);
        assert_eq!(w.networks().len(), 2);
        assert_eq!(w.sizes.len(), 1, "all bulk by default");
        let with_sizes =
            format!("sizes = [{{ size = \"1MB\", weight = 2 }}, {{ size = \"bulk\" }}]\n{OK}");
        let w = Workload::parse(&with_sizes, "w.toml", None).unwrap();
        assert_eq!(
            w.sizes
                .iter()
                .map(|z| (z.bytes, z.weight))
                .collect::<Vec<_>>(),
            [(Some(1_000_000), 2.0), (None, 1.0)]
        );
    }

    #[test]
    fn mistakes_name_the_key_and_line() {
        for (bad, want) in [
            (
                OK.replace("gap = \"1s\"", "gap = \"soon\""),
                "w.toml line 4: `gap` = \"soon\" is not a duration; write e.g.",
            ),
            (
                OK.replace("address = \"10.0.0.254\"", "address = \"ten\""),
                "w.toml line 8: `address` = \"ten\" is not an IP address",
            ),
            (
                OK.replace("unavailable = [\"cdg\"]", "unavailable = [\"cdgx\"]"),
                "w.toml line 10: `unavailable`: unknown algorithm `cdgx`",
            ),
            (
                OK.replace("loss = \"10%\"", "loss = \"lots\""),
                "w.toml path `lossy`: `loss` = \"lots\" is not a probability",
            ),
            (
                OK.replace("after = 10", "after = 50"),
                "w.toml line 15: `after` = 50 is out of range; it must be from 1 to 20",
            ),
            (
                OK.replace("connections = 20", "connections = 20\ncolour = 1"),
                "w.toml line 3: unknown key `colour`",
            ),
            (
                format!("candidates = [\"bbr\"]\n{OK}"),
                "must include cubic",
            ),
            (
                format!("sizes = [{{ size = \"huge\" }}]\n{OK}"),
                "w.toml line 1: `size` = \"huge\" is not a size",
            ),
            (
                format!("sizes = [{{ size = \"1MB\", weight = -1 }}]\n{OK}"),
                "w.toml line 1: `weight` = -1 is not a positive number",
            ),
            (
                OK.replace("10.0.0.254", "255.255.255.254"),
                "w.toml line 8: `address` = \"255.255.255.254\" with 3 destinations runs past 255.255.255.255; start path `lossy` lower",
            ),
            (
                OK.replace("10.0.0.254", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"),
                "runs past ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            ),
            (
                format!("{OK}\n[[path]]\nname = \"clean\"\naddress = \"10.0.1.0\"\nrtt = \"1ms\"\n[path.link]\nrate = \"1Gbit\"\n"),
                "w.toml line 21: path `clean` (10.0.1.0 to 10.0.1.0) shares addresses with path `lossy` (10.0.0.254 to 10.0.1.0), which would merge their peers",
            ),
            (
                // The same peer written as IPv4 and as IPv4-mapped IPv6.
                format!("{OK}\n[[path]]\nname = \"v6\"\naddress = \"::ffff:10.0.0.255\"\nrtt = \"1ms\"\n[path.link]\nrate = \"1Gbit\"\n"),
                "path `v6` (10.0.0.255 to 10.0.0.255) shares addresses with path `lossy`",
            ),
        ] {
            let e = Workload::parse(&bad, "w.toml", None).unwrap_err().0;
            assert!(e.contains(want), "want {want}\n got {e}");
        }
    }
}
