//! `kleinrock tune`'s configuration file (TOML, docs/TUNE.md), read with
//! the scenario parser's helpers (kleinrock_sim::scenario::units): a bad
//! value is one sentence naming the file, the line, the key and what is
//! valid.
//!
//! ```toml
//! policy = "kleinrock"                     # or "bpftune"
//! candidates = ["cubic", "bbr", "cdg"]     # kleinrock's; bpftune has its own four
//! cgroup = "/sys/fs/cgroup/unified"        # default: the cgroup v2 root
//! table = "/var/lib/kleinrock-tune/table"  # what the policy learned
//! save_interval = "60s"
//! report_interval = "1s"                   # reports of long connections; "0s": at the end only
//! capacity = 65536                         # peers remembered, in userspace and in BPF
//! ecn_only = ["dctcp"]                     # never on a peer whose connections showed no ECN...
//! ecn_allow = ["10.0.0.0/8"]               # ...unless it is in one of these
//! state_dir = "/run/kleinrock-tune"        # pid and status files
//! pins = "/sys/fs/bpf/kleinrock-tune"      # where the ports it loaded are marked
//! status_peers = 1000                      # peers the status shows
//! seed = 1                                 # the policy's draws
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use kleinrock_cc::CongestionControl;
use kleinrock_select::bandit::DEFAULT_CANDIDATES;
use kleinrock_select::live::{PolicyKind, Prefix};
use kleinrock_sim::scenario::limits::{Within, MAX_FILE_BYTES};
use kleinrock_sim::scenario::units::{read_text, Source};
use kleinrock_sim::scenario::{wording, ScenarioError};
use kleinrock_sim::time::{MS, SEC};
use serde::Deserialize;
use toml::Spanned;

type S<T> = Spanned<T>;

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct File {
    policy: Option<S<String>>,
    candidates: Option<Vec<S<String>>>,
    cgroup: Option<S<String>>,
    table: Option<S<String>>,
    save_interval: Option<S<String>>,
    report_interval: Option<S<String>>,
    capacity: Option<S<i64>>,
    ecn_only: Option<Vec<S<String>>>,
    ecn_allow: Option<Vec<S<String>>>,
    state_dir: Option<S<String>>,
    pins: Option<S<String>>,
    status_peers: Option<S<i64>>,
    seed: Option<S<i64>>,
}

/// The tuner's settings, defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub policy: PolicyKind,
    /// Kleinrock's candidates (bpftune's are its own).
    pub candidates: Vec<String>,
    /// `None`: the cgroup v2 root, found when the daemon starts.
    pub cgroup: Option<PathBuf>,
    pub table: Option<PathBuf>,
    pub save_interval: Duration,
    pub report_interval: Duration,
    pub capacity: usize,
    pub ecn_only: Vec<String>,
    pub ecn_allow: Vec<Prefix>,
    pub state_dir: PathBuf,
    pub pins: PathBuf,
    pub status_peers: usize,
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            policy: PolicyKind::Kleinrock,
            candidates: DEFAULT_CANDIDATES.iter().map(|s| s.to_string()).collect(),
            cgroup: None,
            table: Some(PathBuf::from("/var/lib/kleinrock-tune/table")),
            save_interval: Duration::from_secs(60),
            report_interval: Duration::from_secs(1),
            capacity: 65_536,
            ecn_only: vec!["dctcp".into()],
            ecn_allow: Vec::new(),
            state_dir: PathBuf::from("/run/kleinrock-tune"),
            pins: PathBuf::from("/sys/fs/bpf/kleinrock-tune"),
            status_peers: 1000,
            seed: 1,
        }
    }
}

/// How often the table is saved: what a kill -9 can lose.
const SAVE: Within<u64> = Within {
    min: 100 * MS,
    max: 86_400 * SEC,
    why: "a tenth of a second to a day",
};

/// How often a long connection reports: each report is a ring record and
/// a policy update.
const REPORT: Within<u64> = Within {
    min: 10 * MS,
    max: 3_600 * SEC,
    why: "10 ms to an hour, or \"0s\" for reports at the end only",
};

/// The most candidates: the program's choices carry an index, the
/// policy's masks a bit per candidate.
const MAX_CANDIDATES: i64 = 64;

fn path(v: &S<String>) -> PathBuf {
    PathBuf::from(v.get_ref())
}

/// A path key: absolute, since the daemon runs from `/` under systemd.
fn absolute(src: &Source, v: &S<String>, key: &str) -> Result<PathBuf, ScenarioError> {
    let p = path(v);
    if !p.is_absolute() {
        return src.err(
            v.span(),
            format!(
                "`{key}` = {} is not an absolute path; the daemon runs from /, so write the whole path",
                wording::quoted(v.get_ref())
            ),
        );
    }
    Ok(p)
}

fn duration(
    src: &Source,
    v: &S<String>,
    key: &str,
    w: &Within<u64>,
) -> Result<Duration, ScenarioError> {
    Ok(Duration::from_nanos(src.duration(v, key, w)?))
}

impl Config {
    pub fn load(file: &Path) -> Result<Config, ScenarioError> {
        let text = read_text(file, "tune configuration", MAX_FILE_BYTES)?;
        Config::parse(&text, &file.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<Config, ScenarioError> {
        let src = Source {
            file,
            text,
            lines: true,
        };
        let f: File = src.decode()?;
        let mut c = Config::default();
        if let Some(p) = &f.policy {
            c.policy = match p.get_ref().as_str() {
                "kleinrock" => PolicyKind::Kleinrock,
                "bpftune" => PolicyKind::Bpftune,
                _ => {
                    return src.err(
                        p.span(),
                        format!(
                            "`policy` = {} is not a policy; write \"kleinrock\" or \"bpftune\"",
                            wording::quoted(p.get_ref())
                        ),
                    )
                }
            };
        }
        if let Some(list) = &f.candidates {
            if c.policy == PolicyKind::Bpftune {
                let at = list.first().map_or(0, |v| v.span().start);
                return Err(ScenarioError(src.place(
                    at,
                    "`candidates` is for the kleinrock policy; bpftune's are its own four (cubic, bbr, htcp, dctcp), so remove the key or set `policy` = \"kleinrock\"",
                )));
            }
            c.candidates = specs(&src, list, "candidates")?;
            if c.candidates.is_empty() || c.candidates.len() as i64 > MAX_CANDIDATES {
                return Err(ScenarioError(src.place(
                    0,
                    &format!(
                        "`candidates` lists {} algorithms; give 1 to {MAX_CANDIDATES}",
                        c.candidates.len()
                    ),
                )));
            }
        }
        if let Some(v) = &f.cgroup {
            c.cgroup = Some(absolute(&src, v, "cgroup")?);
        }
        if let Some(v) = &f.table {
            c.table = match v.get_ref().as_str() {
                "" => None,
                _ => Some(absolute(&src, v, "table")?),
            };
        }
        if let Some(v) = &f.save_interval {
            c.save_interval = duration(&src, v, "save_interval", &SAVE)?;
        }
        if let Some(v) = &f.report_interval {
            c.report_interval =
                if kleinrock_sim::scenario::units::parse_duration(v.get_ref()) == Some(0) {
                    Duration::ZERO
                } else {
                    duration(&src, v, "report_interval", &REPORT)?
                };
        }
        if let Some(v) = &f.capacity {
            c.capacity = src.int(v, "capacity", 1, 1 << 24)? as usize;
        }
        if let Some(list) = &f.ecn_only {
            c.ecn_only = list
                .iter()
                .map(|v| {
                    let a = src.algorithm(v, "ecn_only")?;
                    Ok(a.name().to_string())
                })
                .collect::<Result<_, ScenarioError>>()?;
        }
        if let Some(list) = &f.ecn_allow {
            c.ecn_allow = list
                .iter()
                .map(|v| {
                    Prefix::parse(v.get_ref())
                        .or_else(|why| src.err(v.span(), format!("`ecn_allow`: {why}")))
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(v) = &f.state_dir {
            c.state_dir = absolute(&src, v, "state_dir")?;
        }
        if let Some(v) = &f.pins {
            c.pins = absolute(&src, v, "pins")?;
        }
        if let Some(v) = &f.status_peers {
            c.status_peers = src.int(v, "status_peers", 1, 1_000_000)? as usize;
        }
        if let Some(v) = &f.seed {
            c.seed = src.int(v, "seed", 0, u32::MAX as i64)? as u64;
        }
        Ok(c)
    }
}

/// Algorithm specs, canonical, each once.
fn specs(src: &Source, list: &[S<String>], key: &str) -> Result<Vec<String>, ScenarioError> {
    let mut out: Vec<String> = Vec::new();
    for v in list {
        let spec = src.algorithm(v, key)?.spec();
        if out.contains(&spec) {
            return src.err(
                v.span(),
                format!("`{key}` lists {spec} twice; give each algorithm once"),
            );
        }
        out.push(spec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Config::parse(text, "tune.toml").unwrap_err().0
    }

    #[test]
    fn a_full_file_parses_and_an_empty_one_is_the_defaults() {
        assert_eq!(Config::parse("", "t.toml").unwrap(), Config::default());
        let c = Config::parse(
            r#"
policy = "kleinrock"
candidates = ["cubic", "bbr", "cdg", "dctcp"]
cgroup = "/sys/fs/cgroup/unified/web"
table = "/var/lib/kr/table"
save_interval = "10s"
report_interval = "0s"
capacity = 4096
ecn_only = ["dctcp"]
ecn_allow = ["10.0.0.0/8", "2001:db8::/32"]
state_dir = "/run/kr"
pins = "/sys/fs/bpf/kr"
status_peers = 20
seed = 7
"#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(c.candidates, ["cubic", "bbr", "cdg", "dctcp"]);
        assert_eq!(c.save_interval, Duration::from_secs(10));
        assert_eq!(c.report_interval, Duration::ZERO);
        assert_eq!((c.capacity, c.status_peers, c.seed), (4096, 20, 7));
        assert_eq!(c.ecn_allow.len(), 2);
        assert_eq!(c.table, Some(PathBuf::from("/var/lib/kr/table")));
        assert_eq!(Config::parse("table = \"\"", "t").unwrap().table, None);
    }

    #[test]
    fn the_shipped_configuration_says_the_defaults() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/tune.toml");
        assert_eq!(Config::load(&shipped).unwrap(), Config::default());
    }

    #[test]
    fn a_bad_value_is_one_sentence_with_file_line_and_key() {
        assert_eq!(
            err("save_interval = \"10s\"\npolicy = \"greedy\"\n"),
            "tune.toml line 2: `policy` = \"greedy\" is not a policy; write \"kleinrock\" or \"bpftune\""
        );
        assert_eq!(
            err("\n\nsave_interval = \"10\""),
            "tune.toml line 3: `save_interval` = \"10\" is not a duration; write e.g. \"40ms\", \"1.5s\" or \"200us\""
        );
        assert!(err("report_interval = \"1ms\"").starts_with(
            "tune.toml line 1: `report_interval` = \"1ms\" is shorter than 10ms, the limit (10 ms to an hour"
        ));
        assert!(err("candidates = [\"cubic\", \"nosuch\"]")
            .starts_with("tune.toml line 1: `candidates`: "));
        assert_eq!(
            err("candidates = [\"cubic\", \"cubic\"]"),
            "tune.toml line 1: `candidates` lists cubic twice; give each algorithm once"
        );
        assert!(err("policy = \"bpftune\"\ncandidates = [\"cubic\"]")
            .starts_with("tune.toml line 2: `candidates` is for the kleinrock policy"));
        assert_eq!(
            err("ecn_allow = [\"10.0.0.1/8\"]"),
            "tune.toml line 1: `ecn_allow`: `10.0.0.1/8` has host bits set beyond its length; write the network address"
        );
        assert_eq!(
            err("table = \"table\""),
            "tune.toml line 1: `table` = \"table\" is not an absolute path; the daemon runs from /, so write the whole path"
        );
        assert!(err("capacity = 0").starts_with("tune.toml line 1: `capacity` = 0 is out of range"));
        assert!(
            err("colour = 1").starts_with("tune.toml line 1: "),
            "{}",
            err("colour = 1")
        );
        for e in [
            err("policy = \"greedy\""),
            err("colour = 1"),
            err("capacity = \"x\""),
        ] {
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
