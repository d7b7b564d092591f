//! Sweeps: the driver's plan (kleinrock_report's request and plan, as
//! `kleinrock compare --sweep` builds it) and the task a worker runs
//! (a batch of the plan's runs, by number). A task gets everything it needs
//! in one payload (the scenario's text, the algorithms, the sweeps, the
//! seeds), builds its runs alone (`Scenario::runs_at`), and returns their
//! metrics rows, optionally their series and their whole results for the
//! driver's report. Pure: the same ids give the same bytes, on any machine
//! and in any order, which is what lets a lost task simply run again.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde::{Deserialize, Serialize};

use kleinrock_report::outputs;
use kleinrock_report::plan::{Scenario, Sweep};
use kleinrock_report::request::{self, Request};
use kleinrock_report::runner::{self, Job};
use kleinrock_report::Run;
use kleinrock_sim::Results;

use crate::{claim_report, ipc_bytes, refuse, write_report, Asked};

/// What a task needs, as TOML (exact for every value a sweep can hold).
#[derive(Serialize, Deserialize)]
struct Payload {
    text: String,
    label: String,
    dir: Option<String>,
    lines: bool,
    specs: Vec<String>,
    seeds: Vec<i64>,
    sweep: Vec<WireSweep>,
}

#[derive(Serialize, Deserialize)]
struct WireSweep {
    key: String,
    values: Vec<toml::Value>,
}

/// A sweep, planned on the driver.
#[pyclass(module = "kleinrock._native", frozen)]
struct SweepPlan {
    req: Request,
    payload: Vec<u8>,
}

#[pymethods]
impl SweepPlan {
    #[new]
    #[pyo3(signature = (asked, report=true))]
    fn new(asked: Asked<'_>, report: bool) -> PyResult<SweepPlan> {
        // The report's plots take two keys; the dataset any number.
        let req = asked.request(!report, None, None)?;
        if req.engine.lab() {
            return Err(refuse(
                "a sweep runs the simulator only; remove `engine` from [compare], or run the lab with `kleinrock compare --engine lab`",
            ));
        }
        // As compare refuses them: every run would write the same file.
        outputs::check_traces(&req.jobs(), request::TRACE_ADVICE).map_err(refuse)?;
        let seeds = req
            .seeds
            .iter()
            .map(|&s| {
                i64::try_from(s).map_err(|_| {
                    refuse(format!(
                        "seed {s} is too large; give seeds from 0 to {}",
                        i64::MAX
                    ))
                })
            })
            .collect::<PyResult<_>>()?;
        let scn = &req.scenario;
        let payload = Payload {
            text: scn.text().to_string(),
            label: scn.path.display().to_string(),
            dir: scn.dir().map(|d| d.display().to_string()),
            lines: scn.lines(),
            specs: req.specs.clone(),
            seeds,
            sweep: req
                .sweeps
                .iter()
                .map(|s| WireSweep {
                    key: s.key.clone(),
                    values: s.values.clone(),
                })
                .collect(),
        };
        let payload = toml::to_string(&payload)
            .map_err(|e| refuse(format!("cannot describe the sweep's tasks: {e}")))?
            .into_bytes();
        Ok(SweepPlan { req, payload })
    }

    fn __len__(&self) -> usize {
        self.req.plan.runs.len()
    }

    /// What every task is given.
    fn payload<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.payload)
    }

    /// The swept keys, in order (the dataset's columns after `algorithm`).
    #[getter]
    fn keys(&self) -> Vec<String> {
        self.req.sweeps.iter().map(|s| s.key.clone()).collect()
    }

    #[getter]
    fn name(&self) -> String {
        self.req.name.clone()
    }

    #[getter]
    fn algorithms(&self) -> Vec<String> {
        self.req.canonical.clone()
    }

    #[getter]
    fn seeds(&self) -> Vec<u64> {
        self.req.seeds.clone()
    }

    /// The plan's warnings (values of a sweep that give the same run).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.req.plan.warnings.clone()
    }

    /// Checks, before any run, that `out` can take the report.
    fn claim_report(&self, out: PathBuf) -> PyResult<()> {
        claim_report(&out)
    }

    /// Writes `kleinrock compare`'s report of the runs whose results
    /// `blobs` hold (in the plan's order) into `out`; returns the report's
    /// path and the CLI's table.
    fn report(
        &self,
        py: Python<'_>,
        out: PathBuf,
        blobs: Vec<Bound<'_, PyBytes>>,
    ) -> PyResult<(String, String)> {
        if blobs.len() != self.req.plan.runs.len() {
            return Err(refuse(format!(
                "the report needs every run's results: {} of {} given",
                blobs.len(),
                self.req.plan.runs.len()
            )));
        }
        let blobs: Vec<Vec<u8>> = blobs.iter().map(|b| b.as_bytes().to_vec()).collect();
        let results = py
            .detach(|| {
                blobs
                    .iter()
                    .map(|b| decode(b))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(refuse)?;
        let cmp = self.req.comparison(self.req.runs_of(results));
        let path = write_report(py, &cmp, &out)?;
        Ok((path, cmp.table()))
    }
}

fn decode(blob: &[u8]) -> Result<Results, String> {
    postcard::from_bytes(blob).map_err(|e| format!("a task's results could not be read back: {e}"))
}

/// What a task returns: its runs' metrics rows (Arrow IPC), each run's
/// results (if kept, for the report), and its series tables with a
/// `run_id` column (if asked).
type TaskOutput = (Py<PyBytes>, Vec<Py<PyBytes>>, Py<PyDict>);

/// Runs the plan's runs numbered `ids` (one after another, on this
/// thread, with the GIL released).
#[pyfunction]
#[pyo3(signature = (payload, ids, keep_results=false, series=false))]
fn run_batch(
    py: Python<'_>,
    payload: &[u8],
    ids: Vec<u64>,
    keep_results: bool,
    series: bool,
) -> PyResult<TaskOutput> {
    let p: Payload = std::str::from_utf8(payload)
        .ok()
        .and_then(|t| toml::from_str(t).ok())
        .ok_or_else(|| refuse("a sweep task's payload is not one SweepPlan.payload() wrote"))?;
    let (rows, blobs, tables) = py
        .detach(|| run_ids(&p, &ids, keep_results, series))
        .map_err(refuse)?;
    let tables_dict = PyDict::new(py);
    for (name, bytes) in tables {
        tables_dict.set_item(name, PyBytes::new(py, &bytes))?;
    }
    Ok((
        PyBytes::new(py, &rows).unbind(),
        blobs.iter().map(|b| PyBytes::new(py, b).unbind()).collect(),
        tables_dict.unbind(),
    ))
}

type Ran = (Vec<u8>, Vec<Vec<u8>>, Vec<(&'static str, Vec<u8>)>);

fn run_ids(p: &Payload, ids: &[u64], keep: bool, series: bool) -> Result<Ran, String> {
    let scn = Scenario::from_text(
        p.text.clone(),
        Path::new(&p.label),
        p.dir.as_deref().map(Path::new),
        p.lines,
    )
    .map_err(|e| e.0)?;
    let sweeps: Vec<Sweep> = p
        .sweep
        .iter()
        .map(|s| Sweep {
            key: s.key.clone(),
            values: s.values.clone(),
        })
        .collect();
    let seeds: Vec<u64> = p.seeds.iter().map(|&s| s as u64).collect();
    let idx: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
    let planned = scn
        .runs_at(&p.specs, &sweeps, &seeds, &idx)
        .map_err(|e| e.0)?;
    let mut runs = Vec::with_capacity(planned.len());
    for r in planned {
        let job = Job {
            name: r.spec.clone(),
            cfg: r.config.clone(),
        };
        let results = runner::run_one(&job, &mut |_| {})?;
        runs.push(Run::new(r, results));
    }
    let keys: Vec<String> = sweeps.iter().map(|s| s.key.clone()).collect();
    let rows: Vec<(u64, &Run)> = ids.iter().copied().zip(&runs).collect();
    let metrics = ipc_bytes(&kleinrock_columns::metrics(&keys, &rows))?;
    let blobs = if keep {
        runs.iter()
            .map(|r| postcard::to_allocvec(&r.results).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let mut tables = Vec::new();
    if series {
        for name in ["flows", "queues", "pings"] {
            let of: Vec<(u64, &Results)> = rows.iter().map(|(id, r)| (*id, &r.results)).collect();
            let t = kleinrock_columns::series(name, &of).expect("a series table");
            tables.push((name, ipc_bytes(&t)?));
        }
    }
    Ok((metrics, blobs, tables))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SweepPlan>()?;
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    Ok(())
}
