//! `kleinrock`: congestion control you can measure and deploy.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod algorithms;
mod compare;
mod kernel;
mod lab;
mod model;
mod parquet;
mod progress;
mod replay;
mod runner;
mod select;
mod sim;
mod tune;
mod tune_config;

/// See crates/cli/Cargo.toml: musl's allocator returns memory to the
/// kernel as eagerly as a run asks for more.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// Congestion control you can measure and deploy.
#[derive(Parser)]
#[command(name = "kleinrock", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive algorithms over a modelled bottleneck (a round-trip-at-a-time
    /// ACK clock) and compare what they deliver.
    Model(model::Args),
    /// Compare algorithms on a scenario: run it once per algorithm (and seed,
    /// and swept value), print a table, write a report with plots.
    Compare(compare::Args),
    /// Run scenario files in the packet-level simulator.
    Sim(sim::Args),
    /// Run scenario files on real Linux TCP in the live lab: network
    /// namespaces and an emulated link (needs root; docs/LAB.md).
    Lab(lab::Args),
    /// Play a fleet of destinations against per-destination selectors of
    /// congestion control (bpftune's and Kleinrock's) and score them.
    Select(select::Args),
    /// Replay a hook trace into an algorithm and report the first row whose
    /// outputs differ. Exit status 0 only when no row diverges.
    Replay(replay::Args),
    /// List the algorithms and their parameters.
    Algorithms,
    /// Load the BPF ports into the running kernel, list and unload them
    /// (needs root; docs/KERNEL.md).
    Kernel(kernel::Args),
    /// Choose each connection's congestion control per peer on this host,
    /// learning from the connections (a daemon; needs root; docs/TUNE.md).
    Tune(tune::Args),
}

/// A user-facing failure: one sentence, printed as `error: ...`.
pub struct Failure(pub String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure(e.to_string())
    }
}

/// clap's error, but what it quotes of the command line escaped and cut
/// short, as every message of Kleinrock's quotes input
/// (`kleinrock_cc::echo`): clap would quote a value whole and raw, a 5 MB
/// `--cc` or a terminal escape included.
fn escaped(mut e: clap::Error) -> clap::Error {
    use clap::error::ContextValue;
    use kleinrock_cc::echo::show;
    let quoted: Vec<_> = e
        .context()
        .filter_map(|(k, v)| match v {
            ContextValue::String(s) => Some((k, ContextValue::String(show(s)))),
            ContextValue::Strings(v) => Some((
                k,
                ContextValue::Strings(v.iter().map(|s| show(s)).collect()),
            )),
            _ => None,
        })
        .collect();
    for (k, v) in quoted {
        e.insert(k, v);
    }
    e
}

fn main() -> ExitCode {
    // A closed pipe (`kleinrock compare ... | head`) ends the process
    // quietly, as for any Unix filter, instead of a panic on the next print.
    // SAFETY: restoring a signal's default disposition before any thread
    // starts has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::try_parse().unwrap_or_else(|e| escaped(e).exit());
    let result = match cli.command {
        Command::Model(a) => model::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Sim(a) => sim::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Select(a) => select::run(a),
        Command::Kernel(a) => kernel::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Algorithms => {
            algorithms::print();
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(Failure(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
