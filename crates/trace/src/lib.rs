//! Congestion-control hook traces (docs/TRACE_FORMAT.md): reading,
//! writing, and bit-exact replay.
//!
//! A trace records every hook call of one connection with its inputs and
//! outputs. [`Recorder`] writes one from any driver (the ACK clock, the
//! simulator); the kernel tracer writes the same format; [`replay`] drives
//! a Kleinrock algorithm with a trace's inputs and reports the first row
//! whose outputs differ.

pub mod format;
pub mod read;
pub mod replay;
pub mod write;

pub use read::{TraceError, TraceReader};
pub use replay::{parse_hz, replay, replay_from, Diff, Divergence, Report, HZ};
pub use write::{Recorder, TraceWriter};
