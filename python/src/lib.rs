//! `kleinrock._native`: the Rust behind the `kleinrock` Python package.
//! Every call reads, checks, plans and runs through the same library code
//! as the `kleinrock` binary (kleinrock_report's plan, request and runner,
//! kleinrock_sim, kleinrock_trace), so a scenario means the same and a
//! mistake reads the same sentence; tables cross to Python as Arrow IPC
//! streams (kleinrock_columns' schemas), which pyarrow reads without a
//! copy of any logic. Simulations run with the GIL released.
//!
//! The typed, documented surface is the Python package (kleinrock/); this
//! module is its engine and says only what it takes and returns.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use kleinrock_report::plan::{Scenario, Sweep};
use kleinrock_report::request::{self, Options, Request};
use kleinrock_report::runner::{self, Job};
use kleinrock_report::{layout, outputs, Run};
use kleinrock_sim::Results;

mod sweep;

create_exception!(
    _native,
    KleinrockError,
    PyException,
    "A refusal of Kleinrock's: bad input, in the one sentence the CLI prints."
);

/// A refusal as the Python exception.
fn refuse(msg: impl Into<String>) -> PyErr {
    KleinrockError::new_err(msg.into())
}

/// A Python value as the TOML value a scenario would hold.
fn toml_value(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("scenario keys are strings"))?;
            t.insert(key, toml_value(&x)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = v.extract()?;
        return Ok(toml::Value::Array(
            items.iter().map(toml_value).collect::<PyResult<_>>()?,
        ));
    }
    Err(PyTypeError::new_err(format!(
        "a scenario value is a str, int, float, bool, list or dict, not {}",
        v.get_type().name()?
    )))
}

/// The scenario `kind` names: a file's path, TOML text, or a dict; text
/// and dicts are named `label` in messages, and their relative paths
/// resolve in `dir`.
fn scenario(
    kind: &str,
    value: &Bound<'_, PyAny>,
    label: Option<String>,
    dir: Option<PathBuf>,
) -> PyResult<Scenario> {
    let loaded = match kind {
        "path" => {
            let path: PathBuf = value.extract()?;
            Scenario::load(&path)
        }
        "text" => {
            let text: String = value.extract()?;
            let label = label.unwrap_or_else(|| "<scenario text>".into());
            Scenario::from_text(text, Path::new(&label), dir.as_deref(), true)
        }
        "dict" => {
            let table = match toml_value(value)? {
                toml::Value::Table(t) => t,
                _ => return Err(PyTypeError::new_err("a scenario dict is a dict")),
            };
            let label = label.unwrap_or_else(|| "<scenario dict>".into());
            let text = toml::to_string(&table).map_err(|e| refuse(format!("{label}: {e}")))?;
            Scenario::from_text(text, Path::new(&label), dir.as_deref(), false)
        }
        other => return Err(PyTypeError::new_err(format!("no scenario kind {other}"))),
    };
    loaded.map_err(|e| refuse(e.0))
}

/// A table as an Arrow IPC stream.
fn ipc(py: Python<'_>, batch: &RecordBatch) -> PyResult<Py<PyBytes>> {
    let bytes = ipc_bytes(batch).map_err(refuse)?;
    Ok(PyBytes::new(py, &bytes).unbind())
}

fn ipc_bytes(batch: &RecordBatch) -> Result<Vec<u8>, String> {
    let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &batch.schema())
        .map_err(|e| e.to_string())?;
    w.write(batch).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

/// What the algorithms of `cfgs` will not do as written, each once.
fn spec_warnings<'a>(cfgs: impl IntoIterator<Item = &'a kleinrock_sim::Config>) -> Vec<String> {
    let mut said = Vec::new();
    for cfg in cfgs {
        for w in cfg.flows.iter().flat_map(|f| f.cc.warnings()) {
            if !said.contains(&w) {
                said.push(w);
            }
        }
    }
    said
}

/// One run's results.
#[pyclass(module = "kleinrock._native", frozen)]
struct RunResults {
    results: Results,
    warnings: Vec<String>,
}

#[pymethods]
impl RunResults {
    /// The table `name` (kleinrock_columns::RUN_TABLES) as Arrow IPC.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyBytes>> {
        let b = kleinrock_columns::run_table(&self.results, name).ok_or_else(|| {
            refuse(format!(
                "no table `{name}`; a run has {}",
                kleinrock_columns::RUN_TABLES.join(", ")
            ))
        })?;
        ipc(py, &b)
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.results.seed
    }
    #[getter]
    fn duration_s(&self) -> f64 {
        self.results.duration_s
    }
    #[getter]
    fn events(&self) -> u64 {
        self.results.events
    }
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }
    /// `kleinrock sim`'s table for the terminal.
    fn summary_text(&self) -> String {
        self.results.summary()
    }
    /// results.json's text.
    fn json(&self) -> String {
        self.results.to_json()
    }
    /// Writes the files of `kleinrock sim --out` into `dir`.
    fn write(&self, dir: PathBuf) -> PyResult<()> {
        self.results.write(&dir).map_err(|e| {
            refuse(format!(
                "cannot write results to {}: {e}; choose a writable directory",
                dir.display()
            ))
        })
    }
}

#[pyfunction]
#[pyo3(signature = (kind, value, label=None, dir=None, seed=None, overrides=Vec::new()))]
fn sim(
    py: Python<'_>,
    kind: &str,
    value: &Bound<'_, PyAny>,
    label: Option<String>,
    dir: Option<PathBuf>,
    seed: Option<u64>,
    overrides: Vec<(String, Bound<'_, PyAny>)>,
) -> PyResult<RunResults> {
    let scn = scenario(kind, value, label, dir)?;
    let values: Vec<(String, toml::Value)> = overrides
        .iter()
        .map(|(k, v)| Ok((k.clone(), toml_value(v)?)))
        .collect::<PyResult<_>>()?;
    let pairs: Vec<(&str, &toml::Value)> = values.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut cfg = scn.with(&pairs).map_err(|e| refuse(e.0))?;
    if let Some(s) = seed {
        cfg.seed = s;
    }
    let name = scn.path.display().to_string();
    let jobs = [Job { name, cfg }];
    outputs::check_traces(&jobs, "trace one run at a time").map_err(refuse)?;
    if jobs[0].cfg.capture.is_some() {
        return Err(refuse(format!(
            "{}: its [capture] table asks for a packet capture, which the Python package does not write; capture the run with `kleinrock sim {} --out DIR`, or remove [capture]",
            jobs[0].name, jobs[0].name
        )));
    }
    let warnings = spec_warnings([&jobs[0].cfg]);
    let results = py
        .detach(|| runner::run_one(&jobs[0], &mut |_| {}))
        .map_err(refuse)?;
    Ok(RunResults { results, warnings })
}

/// A comparison's outcome: its metrics (Arrow IPC), the CLI's table, the
/// plan's warnings and the specs', and the report's path if one was
/// written.
type Compared = (Py<PyBytes>, String, Vec<String>, Option<String>);

/// What a comparison or a sweep is asked (the Python package's one dict
/// for both): the scenario, its label and directory, the name, and
/// compare's options.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Asked<'py> {
    kind: String,
    value: Bound<'py, PyAny>,
    label: Option<String>,
    dir: Option<PathBuf>,
    name: Option<String>,
    cc: Vec<String>,
    seeds: Vec<u64>,
    sweep: Option<Vec<String>>,
    grid: Option<Vec<(String, Vec<Bound<'py, PyAny>>)>>,
}

impl Asked<'_> {
    /// The request: checked and planned; `any_number_of_sweeps` past
    /// the report's two keys, `flent_test` and `engine` as compare's.
    fn request(
        self,
        any_number_of_sweeps: bool,
        flent_test: Option<String>,
        engine: Option<String>,
    ) -> PyResult<Request> {
        let scn = scenario(&self.kind, &self.value, self.label, self.dir)?;
        let options = Options {
            cc: self.cc,
            seeds: self.seeds,
            sweeps: sweeps(self.sweep, self.grid)?,
            flent_test,
            engine,
            any_number_of_sweeps,
        };
        request(scn, self.name, &options)
    }
}

#[pyfunction]
#[pyo3(signature = (asked, flent_test=None, engine=None, jobs=None, out=None))]
fn compare(
    py: Python<'_>,
    asked: Asked<'_>,
    flent_test: Option<String>,
    engine: Option<String>,
    jobs: Option<usize>,
    out: Option<PathBuf>,
) -> PyResult<Compared> {
    let req = asked.request(false, flent_test, engine)?;
    if req.engine.lab() {
        return Err(refuse(
            "the Python package runs the simulator only; compare in the lab with `kleinrock compare --engine lab` (as root)",
        ));
    }
    let planned = req.jobs();
    outputs::check_traces(&planned, request::TRACE_ADVICE).map_err(refuse)?;
    if let Some(out) = &out {
        claim_report(out)?;
    }
    let mut warnings = req.plan.warnings.clone();
    warnings.extend(spec_warnings(planned.iter().map(|j| &j.cfg)));
    let cmp = py.detach(|| req.run_sim(jobs, &|_| {})).map_err(refuse)?;
    let report = match &out {
        Some(out) => Some(write_report(py, &cmp, out)?),
        None => None,
    };
    let keys: Vec<String> = req.sweeps.iter().map(|s| s.key.clone()).collect();
    let rows: Vec<(u64, &Run)> = cmp
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .collect();
    let table = ipc(py, &kleinrock_columns::metrics(&keys, &rows))?;
    Ok((table, cmp.table(), warnings, report))
}

/// The sweeps given as `--sweep` strings or as a grid of Python values
/// (at most one of the two); `None` leaves the scenario's own.
fn sweeps(
    sweep: Option<Vec<String>>,
    grid: Option<Vec<(String, Vec<Bound<'_, PyAny>>)>>,
) -> PyResult<Option<Vec<Sweep>>> {
    match (sweep, grid) {
        (Some(_), Some(_)) => Err(refuse(
            "give the sweeps once: as `sweep` strings (KEY=V1,V2) or as a `grid` dict, not both",
        )),
        (Some(s), None) => Ok(Some(
            s.iter()
                .map(|x| Sweep::parse(x).map_err(|e| refuse(e.0)))
                .collect::<PyResult<_>>()?,
        )),
        (None, Some(g)) => {
            let mut out = Vec::new();
            for (key, values) in g {
                if values.is_empty() {
                    return Err(refuse(format!(
                        "the grid's `{key}` lists no values; give it a list of values"
                    )));
                }
                out.push(Sweep {
                    key,
                    values: values.iter().map(toml_value).collect::<PyResult<_>>()?,
                });
            }
            Ok(Some(out))
        }
        (None, None) => Ok(None),
    }
}

/// The request of `options` over `scn`, named `name` or for its file.
fn request(scn: Scenario, name: Option<String>, options: &Options) -> PyResult<Request> {
    let name = name.unwrap_or_else(|| {
        scn.path
            .file_stem()
            .filter(|_| scn.path.extension().is_some())
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned())
    });
    Request::new(scn, name, options).map_err(refuse)
}

/// Checks, before any run, that `out` can take a report.
fn claim_report(out: &Path) -> PyResult<()> {
    layout::claim_report_dir(out).map_err(|e| {
        refuse(format!(
            "cannot write the report to {}: {e}; choose a new or empty directory with --out",
            out.display()
        ))
    })
}

fn write_report(
    py: Python<'_>,
    cmp: &kleinrock_report::Comparison,
    out: &Path,
) -> PyResult<String> {
    py.detach(|| kleinrock_report::write_report(cmp, out, &mut |_| {}))
        .map(|p| p.display().to_string())
        .map_err(|e| {
            refuse(format!(
                "cannot write the report to {}: {e}; choose another directory with --out",
                out.display()
            ))
        })
}

/// `kleinrock algorithms`: (name, aliases, summary, [(key, values, help)]).
type Described = (String, Vec<String>, String, Vec<(String, String, String)>);

#[pyfunction]
fn algorithms() -> Vec<Described> {
    kleinrock_cc::ALGORITHMS
        .iter()
        .map(|a| {
            (
                a.name.to_string(),
                a.aliases.iter().map(|s| s.to_string()).collect(),
                a.summary.to_string(),
                a.params
                    .iter()
                    .map(|p| (p.key.to_string(), p.values.to_string(), p.help.to_string()))
                    .collect(),
            )
        })
        .collect()
}

/// `kleinrock replay`: (agrees, rows, the report's text).
#[pyfunction]
fn replay(py: Python<'_>, trace: PathBuf, cc: &str, hz: i64) -> PyResult<(bool, u64, String)> {
    let algorithm: kleinrock_cc::Algorithm = cc
        .parse()
        .map_err(|e: kleinrock_cc::SpecError| refuse(e.to_string()))?;
    let hz = kleinrock_trace::parse_hz(&hz.to_string()).map_err(refuse)?;
    let report = py
        .detach(|| kleinrock_trace::replay(&trace, algorithm, hz, &mut |_| {}))
        .map_err(|e| refuse(e.to_string()))?;
    Ok((report.agrees(), report.rows, report.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KleinrockError", m.py().get_type::<KleinrockError>())?;
    m.add_class::<RunResults>()?;
    m.add_function(wrap_pyfunction!(sim, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    sweep::register(m)?;
    Ok(())
}
