//! What a comparison is asked to run, settled: the options of `kleinrock
//! compare` (or of the Python package's `compare` and `sweep`) over the
//! scenario's `[compare]` table, checked, and planned into runs. The CLI
//! and the Python package both build their comparisons here, so an option
//! means the same and a mistake reads the same in both.

use kleinrock_sim::Results;

use crate::plan::{value_label, Engine, Plan, PlannedRun, Scenario, Sweep};
use crate::run::{Comparison, Run};
use crate::runner::{self, Job};

/// How a comparison's refusal of hook traces (every run would write the
/// same file) tells to trace instead.
pub const TRACE_ADVICE: &str = "compare runs the scenario once per algorithm, seed and swept value: trace one run with `kleinrock sim`, or remove `trace` from the scenario";

/// The options a comparison is given; what is left empty (or `None`)
/// comes from the scenario's `[compare]` table.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Algorithm specs, as written.
    pub cc: Vec<String>,
    pub seeds: Vec<u64>,
    /// `None`: the table's sweeps.
    pub sweeps: Option<Vec<Sweep>>,
    pub flent_test: Option<String>,
    /// An engine's name (`sim`, `lab`, `both`).
    pub engine: Option<String>,
    /// Sweep more than two keys: the report's plots cannot, so only a
    /// sweep that writes no report may.
    pub any_number_of_sweeps: bool,
}

/// A comparison, checked and planned.
#[derive(Clone, Debug)]
pub struct Request {
    /// The scenario's name (its file's stem), which the report carries.
    pub name: String,
    pub scenario: Scenario,
    /// The algorithms as given (the flows run them so), and as `kleinrock
    /// algorithms` prints them (the report's labels).
    pub specs: Vec<String>,
    pub canonical: Vec<String>,
    pub seeds: Vec<u64>,
    pub sweeps: Vec<Sweep>,
    pub engine: Engine,
    pub flent_test: String,
    /// Every run, in order: each point, then algorithm, then seed.
    pub plan: Plan,
}

impl Request {
    /// Settles `options` over `scenario`'s `[compare]` table and plans the
    /// runs, each checked before any runs. A refusal is one sentence.
    pub fn new(scenario: Scenario, name: String, options: &Options) -> Result<Request, String> {
        let defaults = &scenario.compare;
        let specs = if options.cc.is_empty() {
            defaults.cc.clone()
        } else {
            options.cc.clone()
        };
        if specs.is_empty() {
            return Err(format!(
                "nothing to compare: give algorithms with --cc (e.g. --cc cubic,bbr,cdg,reno) or a `cc` list in the [compare] table of {}",
                scenario.path.display()
            ));
        }
        let mut canonical = Vec::new();
        for s in &specs {
            let (_, _, label) =
                kleinrock_cc::implementation::canonical(s).map_err(|e| format!("--cc {s}: {e}"))?;
            canonical.push(label);
        }
        let engine = match &options.engine {
            Some(e) => Engine::parse(e).ok_or_else(|| {
                format!(
                    "`{}` is not an engine; give {}",
                    kleinrock_cc::echo::show(e),
                    Engine::NAMES.join(", ")
                )
            })?,
            None => defaults.engine.unwrap_or_default(),
        };
        engine.check_specs(&specs)?;
        let seeds = if !options.seeds.is_empty() {
            options.seeds.clone()
        } else if !defaults.seeds.is_empty() {
            defaults.seeds.clone()
        } else {
            vec![scenario.config.seed]
        };
        let sweeps = options
            .sweeps
            .clone()
            .unwrap_or_else(|| defaults.sweeps.clone());
        if sweeps.len() > 2 && !options.any_number_of_sweeps {
            return Err(format!(
                "{} sweeps make a grid too large to plot; sweep at most two keys at a time",
                sweeps.len()
            ));
        }
        if scenario.config.capture.is_some() {
            return Err(format!(
                "{0}: compare writes no packet captures (it runs the scenario once per algorithm, seed and swept value); capture one run with `kleinrock sim {0} --out DIR`, or remove [capture] from the scenario",
                scenario.path.display()
            ));
        }
        let plan = scenario.plan(&specs, &sweeps, &seeds).map_err(|e| e.0)?;
        let flent_test = options
            .flent_test
            .clone()
            .or_else(|| defaults.flent_test.clone())
            .unwrap_or_default();
        Ok(Request {
            name,
            scenario,
            specs,
            canonical,
            seeds,
            sweeps,
            engine,
            flent_test,
            plan,
        })
    }

    /// A run's name in messages: scenario, algorithm, point and seed.
    pub fn job_name(&self, run: &PlannedRun) -> String {
        let point: String = run.point.iter().map(|(k, v)| format!(" {k}={v}")).collect();
        format!("{} {}{point} seed {}", self.name, run.spec, run.seed)
    }

    /// Every run as a simulation to run, in order.
    pub fn jobs(&self) -> Vec<Job> {
        self.plan
            .runs
            .iter()
            .map(|r| Job {
                name: self.job_name(r),
                cfg: r.config.clone(),
            })
            .collect()
    }

    /// The comparison of `runs` (in the plan's order), for the table and
    /// the report.
    pub fn comparison(&self, runs: Vec<Run>) -> Comparison {
        Comparison {
            name: self.name.clone(),
            scenario_path: self.scenario.path.display().to_string(),
            scenario_text: self.scenario.text().to_string(),
            specs: self.canonical.clone(),
            sweeps: self
                .sweeps
                .iter()
                .map(|s| (s.key.clone(), s.values.iter().map(value_label).collect()))
                .collect(),
            seeds: self.seeds.clone(),
            runs,
            flent_test: self.flent_test.clone(),
        }
    }

    /// The plan's runs with their results (in its order).
    pub fn runs_of(&self, results: Vec<Results>) -> Vec<Run> {
        self.plan
            .runs
            .iter()
            .cloned()
            .zip(results)
            .map(|(planned, results)| Run::new(planned, results))
            .collect()
    }

    /// Runs every run in the simulator, `threads` at a time, and returns
    /// the comparison; `progress` is told the fraction of simulated time
    /// done. The first run that cannot run (its hook trace cannot be
    /// written) is the error.
    pub fn run_sim(
        &self,
        threads: Option<usize>,
        progress: &(dyn Fn(f64) + Sync),
    ) -> Result<Comparison, String> {
        let results = runner::run_all(&self.jobs(), threads, progress)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.comparison(self.runs_of(results)))
    }
}
