//! `--format parquet` of `kleinrock sim` and `kleinrock compare`: a run's
//! tables (kleinrock_columns: flows, queues, pings, summary, ping_summary,
//! udp, links) as Parquet files beside its results.json, and a
//! comparison's metrics as summary.parquet beside summary.csv. Built with
//! the feature `parquet` only (docs/PYTHON.md, "Parquet from the CLI",
//! says why it is off by default); without it the format is refused before
//! anything runs.

use std::path::Path;

use kleinrock_report::Comparison;
use kleinrock_sim::Results;

use crate::Failure;

/// How a command writes its tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// CSV files (and results.json), as always.
    #[default]
    Csv,
    /// Parquet files too, beside results.json and the CSV files.
    Parquet,
}

/// Refuses Parquet from a binary built without it.
pub fn check(format: Format) -> Result<(), Failure> {
    if format == Format::Parquet && !cfg!(feature = "parquet") {
        return Err(Failure(
            "this kleinrock was built without Parquet; build it with `cargo build --release --features parquet`, or write Parquet from Python (pip install ./python; docs/PYTHON.md)".into(),
        ));
    }
    Ok(())
}

fn cannot(path: &Path, e: impl std::fmt::Display) -> Failure {
    Failure(format!(
        "cannot write Parquet to {}: {e}; choose a writable --out directory",
        path.display()
    ))
}

/// Writes a run's tables as Parquet into its directory `dir`.
#[cfg(feature = "parquet")]
pub fn write_run(dir: &Path, r: &Results) -> Result<(), Failure> {
    kleinrock_columns::write_run(dir, r).map_err(|e| cannot(dir, e))
}

#[cfg(not(feature = "parquet"))]
pub fn write_run(dir: &Path, _: &Results) -> Result<(), Failure> {
    Err(cannot(dir, "this kleinrock was built without Parquet"))
}

/// Writes the report directory `out`'s Parquet files: summary.parquet
/// (one row per run) and each run's tables in `runs/RUN/`.
#[cfg(feature = "parquet")]
pub fn write_comparison(out: &Path, cmp: &Comparison) -> Result<(), Failure> {
    let keys: Vec<String> = cmp.sweeps.iter().map(|(k, _)| k.clone()).collect();
    let rows: Vec<(u64, &kleinrock_report::Run)> = cmp
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .collect();
    let path = out.join("summary.parquet");
    kleinrock_columns::write_parquet(&path, &kleinrock_columns::metrics(&keys, &rows))
        .map_err(|e| cannot(&path, e))?;
    for r in &cmp.runs {
        write_run(&out.join("runs").join(r.slug()), &r.results)?;
    }
    Ok(())
}

#[cfg(not(feature = "parquet"))]
pub fn write_comparison(out: &Path, _: &Comparison) -> Result<(), Failure> {
    Err(cannot(out, "this kleinrock was built without Parquet"))
}
