//! What `kleinrock compare` runs: a scenario kept as text so that its keys
//! can vary, the scenario's `[compare]` table (docs/COMPARE.md), sweeps,
//! and the grid of runs they span: every algorithm at every point, with
//! every seed, each configuration checked before anything runs.
//!
//! This lives with the report rather than in the simulator: the table and
//! the sweeps describe a comparison (which runs, how the report labels and
//! groups them), not a network, and both the CLI and the seed experiments'
//! tests (tests/experiments.rs) build their runs here, so the grid is
//! written once. The simulator reads the scenario itself
//! (`kleinrock_sim::scenario`) and leaves `[compare]` to this module.

use std::path::{Path, PathBuf};

use kleinrock_cc::implementation::{self, Implementation};
use kleinrock_sim::scenario::units::Source;
use kleinrock_sim::scenario::wording;
use kleinrock_sim::scenario::{self, ScenarioError};
use kleinrock_sim::Config;
use serde::Deserialize;

use crate::run::slug;
use toml::Spanned as S;

/// The scenario's `[compare]` table, if any; every other key is the
/// simulator's.
#[derive(Deserialize, Debug)]
struct File {
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
    engine: Option<S<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct SweepSection {
    key: S<String>,
    values: S<Vec<toml::Value>>,
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
    /// Which engine runs the comparison (`--engine` overrides it).
    pub engine: Option<Engine>,
}

/// Which engine runs a comparison's runs: the simulator, real Linux TCP
/// in the live lab (crates/live), or both, each algorithm and seed in
/// each, for the report's "simulator against the real kernel".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    #[default]
    Sim,
    Lab,
    Both,
}

impl Engine {
    pub const NAMES: [&'static str; 3] = ["sim", "lab", "both"];

    pub fn parse(s: &str) -> Option<Engine> {
        match s {
            "sim" => Some(Engine::Sim),
            "lab" => Some(Engine::Lab),
            "both" => Some(Engine::Both),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Engine::NAMES[self as usize]
    }

    /// Does this engine run the lab?
    pub fn lab(self) -> bool {
        self != Engine::Sim
    }

    /// Refuses algorithms spelt for the lab (`port:cubic`,
    /// `kernel:vegas`) when only the simulator runs, which has one
    /// implementation of each algorithm: the runs would be the same.
    pub fn check_specs(self, specs: &[String]) -> Result<(), String> {
        if self.lab() {
            return Ok(());
        }
        let lab_only = specs
            .iter()
            .find(|s| Implementation::split(s).0 != Implementation::Auto);
        match lab_only {
            Some(s) => Err(format!(
                "`{s}` chooses which code runs the algorithm in the lab, and the simulator runs crates/cc's own; compare it with --engine lab or both (or `engine` in [compare]), or drop the prefix"
            )),
            None => Ok(()),
        }
    }
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
fn override_paths(key: &str) -> Vec<String> {
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
    /// The file, or for text given directly the label its messages use.
    pub path: PathBuf,
    /// Where relative paths in the scenario (traces) resolve.
    dir: Option<PathBuf>,
    /// Whether messages name lines of `text` (not for generated text).
    lines: bool,
    text: String,
    table: toml::Table,
    pub config: Config,
    pub compare: Compare,
}

/// One run of a comparison: an algorithm at one point of the sweep grid,
/// with one seed.
#[derive(Clone, Debug)]
pub struct PlannedRun {
    /// The algorithm as `kleinrock algorithms` prints it.
    pub spec: String,
    /// Each swept key and its value at this point, as written.
    pub point: Vec<(String, String)>,
    pub seed: u64,
    pub config: Config,
}

impl Scenario {
    /// Reads and checks a scenario file, including its `[compare]` table.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = scenario::read(path)?;
        Scenario::from_text(text, path, path.parent(), true)
    }

    /// Checks scenario text given directly (the Python package's TOML
    /// text or dict): `label` names it in messages as a file's path
    /// would, and relative paths in it resolve in `dir`. Messages name a
    /// line only if `lines` (not for text a program wrote, whose lines the
    /// person never saw).
    pub fn from_text(
        text: String,
        label: &Path,
        dir: Option<&Path>,
        lines: bool,
    ) -> Result<Scenario, ScenarioError> {
        let (config, compare) = read_text(&text, label, dir, lines)?;
        let file = label.display().to_string();
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ScenarioError(format!("{file}: {}", e.message())))?;
        Ok(Scenario {
            path: label.to_path_buf(),
            dir: dir.map(Path::to_path_buf),
            lines,
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

    /// Where the scenario's relative paths resolve.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether its messages name lines ([`Scenario::from_text`]).
    pub fn lines(&self) -> bool {
        self.lines
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
        scenario::parse_generated(&text, &file, self.dir.as_deref())
    }

    /// Every run of the comparison: each point of the grid the `sweeps`
    /// span (the first sweep varying slowest), each algorithm of `specs`
    /// (as written: flows are given them so), each of `seeds`, in that
    /// order. Every point's configuration is checked before any run, and
    /// so is the grid: an algorithm or seed listed twice, a sweep that
    /// sets the algorithm (which `specs` sets), two sweeps of one key, a
    /// value swept twice, a sweep that changes nothing, or two runs that
    /// would be written under one name are refused; values of a sweep that
    /// give the same run as another are a warning.
    pub fn plan(
        &self,
        specs: &[String],
        sweeps: &[Sweep],
        seeds: &[u64],
    ) -> Result<Plan, ScenarioError> {
        let canonical = check_runs(&self.path, specs, sweeps, seeds)?;
        let mut runs = Vec::new();
        // The first algorithm's configuration at each point, to tell what
        // each sweep changes.
        let mut first = Vec::new();
        for point in grid(sweeps) {
            let labels: Vec<(String, String)> = point
                .iter()
                .map(|(k, v)| (k.clone(), value_label(v)))
                .collect();
            for (i, (spec, canon)) in specs.iter().zip(&canonical).enumerate() {
                let config = self.at(&point, spec)?;
                if i == 0 {
                    first.push(config.clone());
                }
                for &seed in seeds {
                    let mut c = config.clone();
                    c.seed = seed;
                    runs.push(PlannedRun {
                        spec: canon.clone(),
                        point: labels.clone(),
                        seed,
                        config: c,
                    });
                }
            }
        }
        let mut warnings = Vec::new();
        if let Some(spec) = specs.first() {
            for k in 0..sweeps.len() {
                if let Some(w) = self.effect(sweeps, k, &first, spec)? {
                    warnings.push(w);
                }
            }
        }
        let mut names: Vec<(String, usize)> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (slug(&r.spec, &r.point, r.seed), i))
            .collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0].0 == w[1].0) {
            let label = |i: usize| {
                let r = &runs[i];
                let point: Vec<String> = r.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{} {} seed {}", r.spec, point.join(" "), r.seed)
            };
            return self.refuse(format!(
                "the runs `{}` and `{}` would both be written as runs/{}; make their values differ in letters or digits",
                label(w[0].1),
                label(w[1].1),
                w[0].0
            ));
        }
        Ok(Plan { runs, warnings })
    }

    /// The runs of [`Scenario::plan`] numbered `ids` (their places in
    /// its order), built alone: what a sweep's task runs, on a machine
    /// that did not plan the grid. The grid is not checked again (the
    /// driver's plan did); an id beyond it is refused.
    pub fn runs_at(
        &self,
        specs: &[String],
        sweeps: &[Sweep],
        seeds: &[u64],
        ids: &[usize],
    ) -> Result<Vec<PlannedRun>, ScenarioError> {
        let canonical = canonical(&self.path, specs)?;
        let points: usize = sweeps.iter().map(|s| s.values.len()).product();
        let total = points * specs.len() * seeds.len();
        let mut out = Vec::with_capacity(ids.len());
        // Consecutive ids share a point and an algorithm: built once.
        let mut last: Option<(usize, Config)> = None;
        for &id in ids {
            if id >= total {
                return self.refuse(format!(
                    "run {id} is beyond the grid's {total} runs; plan the sweep again"
                ));
            }
            let (cell, seed) = (id / seeds.len(), seeds[id % seeds.len()]);
            let (mut p, spec) = (cell / specs.len(), cell % specs.len());
            let mut point = Vec::with_capacity(sweeps.len());
            for sw in sweeps.iter().rev() {
                point.push((sw.key.clone(), sw.values[p % sw.values.len()].clone()));
                p /= sw.values.len();
            }
            point.reverse();
            let config = match &last {
                Some((c, config)) if *c == cell => config.clone(),
                _ => {
                    let config = self.at(&point, &specs[spec])?;
                    last = Some((cell, config.clone()));
                    config
                }
            };
            let mut config = config;
            config.seed = seed;
            out.push(PlannedRun {
                spec: canonical[spec].clone(),
                point: point
                    .iter()
                    .map(|(k, v)| (k.clone(), value_label(v)))
                    .collect(),
                seed,
                config,
            });
        }
        Ok(out)
    }

    fn refuse<T>(&self, why: String) -> Result<T, ScenarioError> {
        refuse(&self.path, why)
    }

    /// The configuration at one point of the grid, with every flow
    /// running `spec`.
    fn at(&self, point: &[(String, toml::Value)], spec: &str) -> Result<Config, ScenarioError> {
        // `port:cubic` runs cubic; the prefix is which code runs it in
        // the lab, which the run's label keeps.
        let cc = toml::Value::String(Implementation::split(spec).1.to_string());
        let mut overrides: Vec<(&str, &toml::Value)> =
            point.iter().map(|(k, v)| (k.as_str(), v)).collect();
        overrides.push(("cc", &cc));
        self.with(&overrides)
    }

    /// Whether sweep `k` changes the run: `first` holds the first
    /// algorithm's configuration at each point of the grid. A sweep whose
    /// values all give the same run is refused (with the reason, when it
    /// is a more specific key or the seed); values that give the same run
    /// as another are a warning.
    fn effect(
        &self,
        sweeps: &[Sweep],
        k: usize,
        first: &[Config],
        spec: &str,
    ) -> Result<Option<String>, ScenarioError> {
        let sw = &sweeps[k];
        // Points where only sweep k varies, the others at their first value.
        let stride: usize = sweeps[k + 1..].iter().map(|s| s.values.len()).product();
        let runs: Vec<String> = (0..sw.values.len())
            .map(|j| run_of(&first[j * stride]))
            .collect();
        let without = if sw.values.len() == 1 {
            let others: Vec<(String, toml::Value)> = sweeps
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != k)
                .map(|(_, s)| (s.key.clone(), s.values[0].clone()))
                .collect();
            Some(run_of(&self.at(&others, spec)?))
        } else {
            None
        };
        let unchanged = match &without {
            Some(w) => runs[0] == *w,
            None => runs.iter().all(|r| *r == runs[0]),
        };
        let label = |j: usize| value_label(&sw.values[j]);
        let shadow = self.shadowed(&sw.key);
        if unchanged {
            return match (shadow, &without) {
                (Some((_, why)), _) => self.refuse(format!(
                    "the sweep of `{}` changes nothing: {why}",
                    sw.key
                )),
                (None, None) => self.refuse(format!(
                    "the sweep of `{}` changes nothing: every value gives the same run; sweep a key the scenario uses",
                    sw.key
                )),
                (None, Some(_)) => Ok(Some(format!(
                    "the sweep of `{}` = {} changes nothing: the scenario already has it",
                    sw.key,
                    label(0)
                ))),
            };
        }
        if let Some((false, why)) = shadow {
            return Ok(Some(format!(
                "the sweep of `{}` changes one direction only: {why}",
                sw.key
            )));
        }
        for j in 1..runs.len() {
            if let Some(i) = (0..j).find(|&i| runs[i] == runs[j]) {
                return Ok(Some(format!(
                    "the sweep of `{}`: {} and {} give the same run",
                    sw.key,
                    label(i),
                    label(j)
                )));
            }
        }
        Ok(None)
    }

    /// Why a sweep of `key` cannot take effect, or takes less than it
    /// says, if the scenario shows it: the seed, which `--seeds` sets, or a
    /// key of `[link]` that `[link.up]` or `[link.down]` sets itself (the
    /// more specific key wins). True when nothing is left to vary.
    fn shadowed(&self, key: &str) -> Option<(bool, String)> {
        if key == "seed" {
            return Some((
                true,
                "each run's seed is one of --seeds (or `seeds` in [compare]), which replaces it; give the seeds there".into(),
            ));
        }
        let link = self.table.get("link").and_then(|l| l.as_table());
        for path in override_paths(key) {
            let Some(rest) = path.strip_prefix("link.") else {
                continue;
            };
            let sets = |dir: &str| {
                link.and_then(|l| l.get(dir))
                    .and_then(|d| d.as_table())
                    .is_some_and(|d| d.contains_key(rest))
            };
            match (sets("up"), sets("down")) {
                (true, true) => {
                    return Some((
                        true,
                        format!("[link.up] and [link.down] set `{rest}` themselves, which wins over [link]; sweep link.up.{rest} or link.down.{rest}"),
                    ))
                }
                (true, false) | (false, true) => {
                    let (set, free) = if sets("up") { ("up", "down") } else { ("down", "up") };
                    return Some((
                        false,
                        format!("[link.{set}] sets `{rest}` itself, which wins over [link], so only [link.{free}] varies; sweep link.{set}.{rest} to vary the {set} direction"),
                    ));
                }
                (false, false) => {}
            }
        }
        None
    }
}

/// A comparison's refusal, naming its scenario file.
fn refuse<T>(path: &Path, why: String) -> Result<T, ScenarioError> {
    Err(ScenarioError(format!("{}: {why}", path.display())))
}

/// What can be told of a comparison's runs before building them: each
/// algorithm and seed listed once, sweeps that can be ([`check_sweeps`]).
/// The specs as `kleinrock algorithms` prints them. `kleinrock sim` holds a
/// scenario's `[compare]` table to it too.
fn check_runs(
    path: &Path,
    specs: &[String],
    sweeps: &[Sweep],
    seeds: &[u64],
) -> Result<Vec<String>, ScenarioError> {
    let canonical = canonical(path, specs)?;
    if let Some(s) = twice(seeds) {
        return refuse(
            path,
            format!("seed {s} is listed twice; give each seed once (the runs would be the same)"),
        );
    }
    check_sweeps(path, sweeps)?;
    Ok(canonical)
}

/// The specs as `kleinrock algorithms` prints them, each once.
fn canonical(path: &Path, specs: &[String]) -> Result<Vec<String>, ScenarioError> {
    let mut canonical: Vec<String> = Vec::new();
    for spec in specs {
        match implementation::canonical(spec) {
            Ok((_, _, c)) => {
                if let Some(i) = canonical.iter().position(|x| *x == c) {
                    let same = if specs[i] == *spec {
                        String::new()
                    } else {
                        format!(" (`{}` and `{spec}` are the same algorithm)", specs[i])
                    };
                    return refuse(
                        path,
                        format!("`{c}` is compared twice{same}; give each algorithm once"),
                    );
                }
                canonical.push(c);
            }
            Err(e) => return refuse(path, format!("cannot compare `{spec}`: {e}")),
        }
    }
    Ok(canonical)
}

/// Sweeps that cannot be: of the algorithm, of one key twice, of a
/// value twice.
fn check_sweeps(path: &Path, sweeps: &[Sweep]) -> Result<(), ScenarioError> {
    let mut set: Vec<(String, &str)> = Vec::new();
    for sw in sweeps {
        let keys = override_paths(&sw.key);
        if keys.iter().any(|p| p == "flow.cc") {
            return refuse(path, format!(
                "a sweep of `{}` cannot vary the algorithm: every run takes its algorithm from --cc (or `cc` in [compare]); list the algorithms there",
                sw.key
            ));
        }
        for key in keys {
            if let Some((_, other)) = set.iter().find(|(k, _)| *k == key) {
                let what = if *other == sw.key {
                    format!("`{}` is swept twice", sw.key)
                } else {
                    format!("the sweeps of `{other}` and `{}` both set `{key}`", sw.key)
                };
                return refuse(path, format!("{what}; sweep each key once"));
            }
            set.push((key, &sw.key));
        }
        let labels: Vec<String> = sw.values.iter().map(value_label).collect();
        if let Some(v) = twice(&labels) {
            return refuse(
                path,
                format!(
                    "the sweep of `{}` lists {v} twice; give each value once",
                    sw.key
                ),
            );
        }
    }
    Ok(())
}

/// A comparison's runs, and what the user should know about them.
#[derive(Clone, Debug)]
pub struct Plan {
    pub runs: Vec<PlannedRun>,
    /// Sweeps some of whose values give the same run as another: said, not
    /// refused.
    pub warnings: Vec<String>,
}

/// A configuration as a value to compare: its Debug form, which prints
/// every field (`Config` holds algorithms and traces, and has no
/// `PartialEq`), with the seed left out: each run's is one of the seeds.
fn run_of(c: &Config) -> String {
    let mut c = c.clone();
    c.seed = 0;
    format!("{c:?}")
}

/// The first item of `v` listed twice.
pub fn twice<T: PartialEq + Clone>(v: &[T]) -> Option<T> {
    v.iter()
        .enumerate()
        .find(|(i, x)| v[..*i].contains(x))
        .map(|(_, x)| x.clone())
}

/// A scenario file's configuration, its `[compare]` table checked too: what
/// `kleinrock sim` runs. Cheaper than [`Scenario::load`], which keeps the
/// text as a table to vary.
pub fn load_config(path: &Path) -> Result<Config, ScenarioError> {
    let text = scenario::read(path)?;
    read_text(&text, path, path.parent(), true).map(|(config, _)| config)
}

/// A scenario's configuration and `[compare]` table, from its text;
/// `path` names it, relative paths resolve in `dir`.
fn read_text(
    text: &str,
    path: &Path,
    dir: Option<&Path>,
    lines: bool,
) -> Result<(Config, Compare), ScenarioError> {
    let file = path.display().to_string();
    let config = if lines {
        scenario::parse(text, &file, dir)?
    } else {
        scenario::parse_generated(text, &file, dir)?
    };
    let src = Source {
        file: &file,
        text,
        lines,
    };
    let compare = match src.decode::<File>()?.compare {
        None => Compare::default(),
        Some(c) => compare_table(&src, &c)?,
    };
    check_runs(path, &compare.cc, &compare.sweeps, &compare.seeds)?;
    Ok((config, compare))
}

/// Every point the sweeps span: one (key, value) per sweep, the first
/// sweep varying slowest; one empty point without sweeps.
fn grid(sweeps: &[Sweep]) -> Vec<Vec<(String, toml::Value)>> {
    let mut points: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
    for sw in sweeps {
        points = points
            .into_iter()
            .flat_map(|p| {
                sw.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((sw.key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    points
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

fn compare_table(src: &Source, c: &CompareSection) -> Result<Compare, ScenarioError> {
    let mut cc = Vec::new();
    for spec in c.cc.iter().flatten() {
        if let Err(e) = implementation::canonical(spec.get_ref()) {
            return src.err(spec.span(), format!("`cc` in [compare]: {e}"));
        }
        cc.push(spec.get_ref().clone());
    }
    let engine = match &c.engine {
        None => None,
        Some(e) => match Engine::parse(e.get_ref()) {
            Some(engine) => Some(engine),
            None => {
                return src.err(
                    e.span(),
                    format!(
                        "`engine` in [compare] = {} is not an engine; write \"sim\" (the simulator), \"lab\" (real Linux TCP in the live lab) or \"both\"",
                        wording::quoted(e.get_ref())
                    ),
                )
            }
        },
    };
    if let (Some(engine), Some(spec)) = (engine, c.cc.iter().flatten().next()) {
        if let Err(why) = engine.check_specs(&cc) {
            return src.err(spec.span(), format!("`cc` in [compare]: {why}"));
        }
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
        engine,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_sim::time::MS;
    use kleinrock_sim::LossModel;

    /// Writes `text` to a file of its own (tests run in parallel) and loads it.
    fn scenario(text: &str) -> Result<Scenario, ScenarioError> {
        static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kleinrock-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("s{n}.toml"));
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
        // What the table asks that cannot run is refused when the file is
        // read, by `sim` (load_config) as by `compare`.
        for (table, want) in [
            ("seeds = [1, 2, 1]\n", "seed 1 is listed twice"),
            ("cc = [\"reno\", \"newreno\"]\n", "`reno` is compared twice"),
            (
                "[[compare.sweep]]\nkey = \"cc\"\nvalues = [\"bbr\"]\n",
                "a sweep of `cc` cannot vary the algorithm",
            ),
        ] {
            let text = format!("{BASE}\n[compare]\n{table}");
            let e = scenario(&text).unwrap_err().0;
            assert!(e.contains(want), "{e}");
            let path = std::env::temp_dir()
                .join(format!("kleinrock-plan-{}-sim.toml", std::process::id()));
            std::fs::write(&path, &text).unwrap();
            assert_eq!(
                load_config(&path).unwrap_err().0,
                e.replace(&e[..e.find(": ").unwrap()], &path.display().to_string())
            );
        }
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

    #[test]
    fn the_plan_is_every_point_then_algorithm_then_seed() {
        let s = scenario(BASE).unwrap();
        let sweeps = [
            Sweep::parse("loss=0%,1%").unwrap(),
            Sweep::parse("hz=100,1000").unwrap(),
        ];
        let specs = ["newreno".to_string(), "bbr".to_string()];
        let runs = s.plan(&specs, &sweeps, &[1, 2]).unwrap().runs;
        assert_eq!(runs.len(), 2 * 2 * 2 * 2);
        let at = |i: usize| {
            let r = &runs[i];
            let point: Vec<String> = r.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            (r.spec.as_str(), point.join(" "), r.seed)
        };
        // Labelled as `kleinrock algorithms` prints the spec.
        assert_eq!(at(0), ("reno", "loss=0% hz=100".into(), 1));
        assert_eq!(at(1), ("reno", "loss=0% hz=100".into(), 2));
        assert_eq!(at(2), ("bbr", "loss=0% hz=100".into(), 1));
        assert_eq!(at(4), ("reno", "loss=0% hz=1000".into(), 1));
        assert_eq!(at(15), ("bbr", "loss=1% hz=1000".into(), 2));
        let last = &runs[15].config;
        assert_eq!((last.hz, last.seed), (1000, 2));
        assert!(last.flows.iter().all(|f| f.cc.spec() == "bbr"));
        assert_eq!(last.links[0].loss, LossModel::Bernoulli { ppm: 10_000 });
        // Any run alone is the plan's, configuration and all.
        let ids = [15, 0, 5, 6, 9];
        let alone = s.runs_at(&specs, &sweeps, &[1, 2], &ids).unwrap();
        for (r, &i) in alone.iter().zip(&ids) {
            assert_eq!(
                (&r.spec, &r.point, r.seed),
                (&runs[i].spec, &runs[i].point, runs[i].seed)
            );
            assert_eq!(run_of(&r.config), run_of(&runs[i].config));
            assert_eq!(r.config.seed, runs[i].config.seed);
        }
        let e = s.runs_at(&specs, &sweeps, &[1, 2], &[16]).unwrap_err().0;
        assert!(e.contains("run 16 is beyond the grid's 16 runs"), "{e}");
        // No sweeps: one point.
        assert_eq!(s.plan(&specs, &[], &[7]).unwrap().runs.len(), 2);
        let e = s.plan(&["cubik".into()], &[], &[1]).unwrap_err().0;
        assert!(
            e.contains("cannot compare `cubik`: unknown algorithm"),
            "{e}"
        );
    }

    /// The error of a plan, or its warnings.
    fn planned(
        s: &Scenario,
        specs: &[&str],
        sweeps: &[&str],
        seeds: &[u64],
    ) -> Result<Vec<String>, String> {
        let specs: Vec<String> = specs.iter().map(|x| x.to_string()).collect();
        let sweeps: Vec<Sweep> = sweeps.iter().map(|x| Sweep::parse(x).unwrap()).collect();
        s.plan(&specs, &sweeps, seeds)
            .map(|p| p.warnings)
            .map_err(|e| e.0)
    }

    #[test]
    fn a_sweep_that_cannot_take_effect_or_a_run_twice_is_refused() {
        let s = scenario(BASE).unwrap();
        let refused = |specs: &[&str], sweeps: &[&str], seeds: &[u64], want: &str| {
            let e = planned(&s, specs, sweeps, seeds).unwrap_err();
            assert!(e.contains(want), "want {want}\n got {e}");
            assert!(e.starts_with(&s.path.display().to_string()), "{e}");
        };
        refused(
            &["cubic"],
            &["seed=1,2"],
            &[1],
            "the sweep of `seed` changes nothing: each run's seed is one of --seeds",
        );
        refused(
            &["cubic"],
            &["seed=5"],
            &[1],
            "the sweep of `seed` changes nothing",
        );
        refused(
            &["cubic"],
            &["loss=1%", "loss=2%"],
            &[1],
            "`loss` is swept twice; sweep each key once",
        );
        refused(
            &["cubic"],
            &["queue=84", "buffer=100"],
            &[1],
            "the sweeps of `queue` and `buffer` both set `link.queue`",
        );
        refused(
            &["cubic"],
            &["loss=1%", "link.loss=2%"],
            &[1],
            "both set `link.loss`",
        );
        refused(
            &["cubic"],
            &["cc=cubic,nosuch"],
            &[1],
            "a sweep of `cc` cannot vary the algorithm: every run takes its algorithm from --cc",
        );
        refused(
            &["cubic"],
            &["flow.cc=bbr"],
            &[1],
            "cannot vary the algorithm",
        );
        refused(
            &["cubic"],
            &["loss=1%,2%,1%"],
            &[1],
            "the sweep of `loss` lists 1% twice",
        );
        refused(
            &["cubic", "bbr", "cubic"],
            &[],
            &[1],
            "`cubic` is compared twice; give each algorithm once",
        );
        refused(
            &["reno", "newreno"],
            &[],
            &[1],
            "`reno` is compared twice (`reno` and `newreno` are the same algorithm)",
        );
        refused(&["cubic"], &[], &[1, 2, 1], "seed 1 is listed twice");
        refused(
            &["cubic"],
            &["link.colour=1,2"],
            &[1],
            "unknown key `colour`",
        );
        // The more specific key wins: with both directions' own loss, a
        // loss sweep is the same run at every point.
        let both = scenario(&BASE.replace(
            "queue = 84\n",
            "queue = 84\n[link.up]\nloss = \"1%\"\n[link.down]\nloss = \"0%\"\n",
        ))
        .unwrap();
        let e = planned(&both, &["cubic"], &["loss=0.1%,2%"], &[1]).unwrap_err();
        assert!(
            e.contains("the sweep of `loss` changes nothing: [link.up] and [link.down] set `loss` themselves, which wins over [link]; sweep link.up.loss or link.down.loss"),
            "{e}"
        );
        // With the up direction's own, only the down direction varies: said.
        let up = scenario(&BASE.replace("queue = 84\n", "queue = 84\n[link.up]\nloss = \"1%\"\n"))
            .unwrap();
        let w = planned(&up, &["cubic"], &["loss=0.1%,2%"], &[1]).unwrap();
        assert_eq!(
            w,
            ["the sweep of `loss` changes one direction only: [link.up] sets `loss` itself, which wins over [link], so only [link.down] varies; sweep link.up.loss to vary the up direction"]
        );
        // Values written differently that are the same: said, not refused.
        let w = planned(&s, &["cubic"], &["loss=0%,0.0%,1%"], &[1]).unwrap();
        assert_eq!(w, ["the sweep of `loss`: 0% and 0.0% give the same run"]);
        let w = planned(&s, &["cubic"], &["duration=10s"], &[1]).unwrap();
        assert_eq!(
            w,
            ["the sweep of `duration` = 10s changes nothing: the scenario already has it"]
        );
        assert_eq!(
            planned(
                &s,
                &["cubic", "bbr"],
                &["loss=0%,1%", "hz=100,1000"],
                &[1, 2]
            )
            .unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_engine_key_and_the_labs_spellings_of_an_algorithm() {
        let with = |table: &str| scenario(&format!("{BASE}[compare]\n{table}"));
        let s =
            with("cc = [\"cubic\", \"port:cubic\", \"kernel:reno\"]\nengine = \"both\"\n").unwrap();
        assert_eq!(s.compare.engine, Some(Engine::Both));
        // The label keeps a prefix only where it changes what the lab
        // runs; the flows run the algorithm itself.
        let plan = s.plan(&s.compare.cc, &[], &[1]).unwrap();
        let specs: Vec<&str> = plan.runs.iter().map(|r| r.spec.as_str()).collect();
        assert_eq!(specs, ["cubic", "port:cubic", "reno"]);
        assert!(plan.runs[1]
            .config
            .flows
            .iter()
            .all(|f| f.cc.spec() == "cubic"));
        let e = planned(&s, &["cubic", "kernel:cubic"], &[], &[1]).unwrap_err();
        assert!(
            e.contains(
                "`cubic` is compared twice (`cubic` and `kernel:cubic` are the same algorithm)"
            ),
            "{e}"
        );
        let e = with("engine = \"kernel\"\n").unwrap_err().0;
        assert!(
            e.contains("`engine` in [compare] = \"kernel\" is not an engine; write \"sim\""),
            "{e}"
        );
        let e = with("cc = [\"port:cdg\", \"port:cubic\"]\nengine = \"sim\"\n")
            .unwrap_err()
            .0;
        assert!(
            e.contains(
                "`cc` in [compare]: `port:cdg` chooses which code runs the algorithm in the lab"
            ),
            "{e}"
        );
        assert_eq!(Engine::Sim.check_specs(&["cubic".into()]), Ok(()));
        assert_eq!(Engine::Lab.check_specs(&["port:cubic".into()]), Ok(()));
    }
}
