//! `kleinrock sim SCENARIO.toml...`: run scenarios (and seeds) on N cores,
//! print each run's summary, write results with `--out`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kleinrock_capture::spec::FILE_NAMES;
use kleinrock_report::{layout, plan};
use kleinrock_sim::scenario::capture::parse_option;
use kleinrock_sim::Results;

use crate::parquet::{self, Format};
use crate::progress::Phase;
use crate::runner::run_all;
use crate::Failure;
use kleinrock_report::outputs;
use kleinrock_report::runner::Job;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files (TOML, see docs/SCENARIOS.md).
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Write each run's results.json, flows.csv, queues.csv, pings.csv and
    /// summary.csv in a directory of its own under this one, which must be
    /// new, empty or hold only such run directories.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run each scenario with each of these seeds (comma-separated),
    /// instead of the seed in the file.
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Runs in parallel (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Also write each run's tables as Parquet in its --out directory (a
    /// binary built with `--features parquet`; docs/PYTHON.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Capture the packets at one end of the bottleneck, in each run's
    /// results directory (capture.pcap, or capture.pcapng): `left` or
    /// `right`, then any of `,direction=up|down|both`, `,snaplen=BYTES`,
    /// `,format=pcap|pcapng`, as a scenario's [capture] table says them
    /// (docs/SCENARIOS.md, "Packet captures"), which this replaces. Needs
    /// --out.
    #[arg(long, value_name = "END[,KEY=VALUE...]")]
    pcap: Option<String>,
}

fn jobs(a: &Args) -> Result<Vec<Job>, Failure> {
    let mut jobs = runs(&a.scenarios, &a.seeds, a.out.as_deref())?.0;
    captures(&mut jobs, a.pcap.as_deref(), a.out.as_deref())?;
    Ok(jobs)
}

/// Where each run's capture goes: `--pcap` (the capture of every run) or
/// the scenario's `[capture]`, into the run's results directory under
/// `out`, which a capture needs. Shared with `kleinrock lab`.
pub(crate) fn captures(
    jobs: &mut [Job],
    pcap: Option<&str>,
    out: Option<&Path>,
) -> Result<(), Failure> {
    if let Some(text) = pcap {
        let spec = parse_option(text).map_err(|e| Failure(e.0))?;
        for j in jobs.iter_mut() {
            j.cfg.capture = Some(spec);
        }
    }
    for j in jobs.iter_mut() {
        let Some(spec) = j.cfg.capture else {
            continue;
        };
        let Some(out) = out else {
            let asked = if pcap.is_some() {
                "--pcap"
            } else {
                "its [capture] table"
            };
            return Err(Failure(format!(
                "{}: {asked} asks for a packet capture, which is written into the run's results directory; give --out DIR",
                j.name
            )));
        };
        j.cfg.capture_file = Some(out.join(&j.name).join(spec.file_name()));
    }
    Ok(())
}

/// Before the runs, once `out` is claimed: each capturing run's directory
/// made (the capture is written while it runs), and in every run's
/// directory the capture of an earlier run that this one does not
/// replace removed, so that no directory holds a capture of other
/// results.
pub(crate) fn prepare_captures(jobs: &[Job], out: &Path) -> Result<(), Failure> {
    for j in jobs {
        let dir = out.join(&j.name);
        let fail = |e: std::io::Error| {
            Failure(format!(
                "cannot prepare {} for the run's capture: {}; choose a writable --out directory",
                dir.display(),
                kleinrock_files::reason(&e)
            ))
        };
        let keep = j.cfg.capture.map(|c| c.file_name());
        if keep.is_some() {
            std::fs::create_dir_all(&dir).map_err(fail)?;
        }
        for name in FILE_NAMES.iter().filter(|&&n| Some(n) != keep) {
            let stale = dir.join(name);
            if kleinrock_files::kind(&stale).map_err(fail)? == kleinrock_files::Kind::File {
                std::fs::remove_file(&stale).map_err(fail)?;
            }
        }
    }
    Ok(())
}

/// The runs of `scenarios` (each with each of `seeds`, or its own seed),
/// named for their results' directories, and the file each comes from;
/// names that would clash under `out` are refused. Shared with `kleinrock
/// lab`, which runs the same files and writes the same layout.
pub(crate) fn runs<'a>(
    scenarios: &'a [PathBuf],
    seeds: &[u64],
    out: Option<&Path>,
) -> Result<(Vec<Job>, Vec<&'a Path>), Failure> {
    if let Some(s) = plan::twice(seeds) {
        return Err(Failure(format!(
            "--seeds lists {s} twice; give each seed once (the runs would be the same, written to one place)"
        )));
    }
    let mut out_jobs = Vec::new();
    // Which scenario file each run comes from, for a clash of names.
    let mut from: Vec<&Path> = Vec::new();
    for path in scenarios {
        // The whole file is checked, its `[compare]` table too (only
        // `kleinrock compare` reads it): a mistake there is one still.
        let cfg = plan::load_config(path)?;
        let stem = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        if seeds.is_empty() {
            out_jobs.push(Job { name: stem, cfg });
            from.push(path);
        } else {
            for &seed in seeds {
                let mut c = cfg.clone();
                c.seed = seed;
                out_jobs.push(Job {
                    name: format!("{stem}-seed{seed}"),
                    cfg: c,
                });
                from.push(path);
            }
        }
    }
    if let Some(dir) = out {
        for (i, j) in out_jobs.iter().enumerate() {
            if let Some(k) = out_jobs[..i].iter().position(|o| o.name == j.name) {
                return Err(Failure(format!(
                    "{} and {} would both write {}; give the scenario files different names, or run them with different --out directories",
                    from[k].display(),
                    from[i].display(),
                    dir.join(&j.name).display()
                )));
            }
        }
    }
    Ok((out_jobs, from))
}

/// What the runs write, checked before they start: hook traces, and
/// `--out`.
fn check_outputs(a: &Args, jobs: &[Job]) -> Result<(), Failure> {
    parquet::check(a.format)?;
    outputs::check_traces(
        jobs,
        "trace one run at a time (one scenario file, one seed)",
    )?;
    if let Some(out) = &a.out {
        claim_out(out)?;
        prepare_captures(jobs, out)?;
    }
    Ok(())
}

/// Checks that `out` can take run directories: new, empty, or holding only
/// run directories (each only the files of a run's results).
pub(crate) fn claim_out(out: &Path) -> Result<(), Failure> {
    kleinrock_files::claim_dir(out, &layout::is_run_dir).map_err(|e| {
        Failure(format!(
            "cannot write results to {}: {}; choose a new or empty --out directory",
            out.display(),
            kleinrock_files::reason(&e)
        ))
    })
}

pub(crate) fn write(out: &Path, name: &str, r: &Results) -> Result<PathBuf, Failure> {
    let dir = out.join(name);
    r.write(&dir).map_err(|e| {
        Failure(format!(
            "cannot write results to {}: {}; choose a writable --out directory",
            dir.display(),
            kleinrock_files::reason(&e)
        ))
    })?;
    Ok(dir)
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let jobs = {
        let _reading = Phase::start("reading scenarios", a.quiet);
        jobs(&a)?
    };
    check_outputs(&a, &jobs)?;
    let results = run_all(&jobs, a.jobs, a.quiet)?;
    // Written before any is printed, so the progress line does not cut
    // through the summaries.
    let mut dirs = Vec::new();
    if let Some(out) = &a.out {
        let writing = Phase::start("writing results", a.quiet);
        for (i, (job, r)) in jobs.iter().zip(&results).enumerate() {
            let dir = write(out, &job.name, r)?;
            if a.format == Format::Parquet {
                parquet::write_run(&dir, r)?;
            }
            dirs.push(dir);
            writing.set((i + 1) as f64 / jobs.len() as f64);
        }
    }
    for (i, (job, r)) in jobs.iter().zip(results).enumerate() {
        println!(
            "== {} (seed {}, {:.1} s simulated)",
            job.name, r.seed, r.duration_s
        );
        print!("{}", r.summary());
        if let Some(dir) = dirs.get(i) {
            println!("results: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
