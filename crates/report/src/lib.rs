//! Comparison reports for Kleinrock: the runs of one scenario under several
//! algorithms (and seeds, and swept parameters) turned into numbers people
//! compare, SVG plots, one self-contained `report.html`, CSV and JSON of
//! everything, and flent data files that flent's own plotter opens.
//!
//! - [`plan`]: the scenario, its `[compare]` table and sweeps, and the runs
//!   they span.
//! - [`run`]: a comparison's runs and each run's headline metrics.
//! - [`palette`]: one colour per algorithm, the same in every plot.
//! - [`plots`]: the plots, drawn with plotters' SVG backend.
//! - [`html`]: the page, and the files written beside it.
//! - [`engines`]: the simulator against the real kernel, when the lab ran
//!   the comparison too.
//! - [`flent`]: flent's data format (version 4).
//! - [`layout`]: what a report directory and a run's directory hold, and
//!   whether an existing one is Kleinrock's to write in.

pub mod engines;
pub mod flent;
pub mod html;
pub mod layout;
pub mod outputs;
pub mod palette;
pub mod plan;
pub mod plots;
pub mod request;
pub mod run;
pub mod runner;

pub use engines::Engines;
pub use html::{write_report, write_report_of};
pub use run::{Comparison, Metrics, Run};
