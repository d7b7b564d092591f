//! `kleinrock kernel`: load the BPF ports into the running kernel as named
//! congestion controls, list them, unload them (docs/KERNEL.md).

use std::process::ExitCode;
use std::time::Duration;

use std::path::Path;

use clap::Subcommand;
use kleinrock_cc::echo::name;
use kleinrock_kernel::pins::{self, Paths, Unloaded};
use kleinrock_kernel::plan::plan;
use kleinrock_kernel::trace::conn_path;

use crate::Failure;
use kleinrock_report::outputs;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load algorithms (specs such as `cubic` or `cubic:hystart=off`) and
    /// register them under `kr_` names; they stay loaded after this exits.
    Load {
        /// Algorithm specs, as `kleinrock algorithms` lists them.
        #[arg(required = true)]
        specs: Vec<String>,
        /// Register under this name instead of the derived one (one spec
        /// only; at most 15 letters, digits, `_` or `-`).
        #[arg(long)]
        name: Option<String>,
    },
    /// List the algorithms kleinrock has loaded.
    List,
    /// Record every hook call of a loaded algorithm into traces that
    /// `kleinrock replay` reads (docs/TRACE_FORMAT.md), one per connection.
    /// Name `cubic`, `reno` or `bbr` to trace the kernel's own through its
    /// wrapper (`kn_cubic`): the traffic must then use that name.
    Trace {
        /// The algorithm to trace, as `kleinrock kernel list` names it.
        #[arg(long = "cc")]
        cc: String,
        /// The trace of the first connection; later ones are written
        /// beside it (`trace.2.csv.gz`, ...). `.gz` compresses. Each must
        /// be new or a hook trace (checked before tracing starts).
        #[arg(long)]
        out: std::path::PathBuf,
        /// Run this command (with KLEINROCK_CC set to the traced name) and
        /// stop when it exits; without one, trace until Ctrl-C.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Unload algorithms by name (or all that kleinrock loaded).
    Unload {
        /// Names, as `kleinrock kernel list` prints them.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        names: Vec<String>,
        /// Unload every algorithm kleinrock has loaded.
        #[arg(long)]
        all: bool,
    },
}

/// How long unload waits for the kernel to drop the name.
const UNLOAD_WAIT: Duration = Duration::from_secs(2);

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    match args.command {
        Command::Load { specs, name } => load(&specs, name.as_deref()),
        Command::List => list(),
        Command::Trace { cc, out, command } => trace(&cc, &out, &command),
        Command::Unload { names, all } => unload(names, all),
    }
}

fn load(specs: &[String], name: Option<&str>) -> Result<ExitCode, Failure> {
    if name.is_some() && specs.len() > 1 {
        return Err(Failure(
            "--name names one algorithm, but more than one spec was given; load them one at a time"
                .into(),
        ));
    }
    // Every spec is checked before anything is loaded.
    let plans = specs
        .iter()
        .map(|s| plan(s, name))
        .collect::<Result<Vec<_>, _>>()?;
    let algorithms: Vec<kleinrock_cc::Algorithm> =
        specs.iter().filter_map(|s| s.parse().ok()).collect();
    crate::replay::warn_specs(&algorithms);
    for (i, p) in plans.iter().enumerate() {
        if plans[..i].iter().any(|q| q.name == p.name) {
            return Err(Failure(format!(
                "{} would be loaded twice; give each spec once",
                p.name
            )));
        }
    }
    for p in &plans {
        let loaded = kleinrock_kernel::load(p)?;
        println!(
            "loaded {} ({}), pinned at {}",
            loaded.name,
            p.spec,
            loaded.link.display()
        );
    }
    if let Some(p) = plans.first() {
        println!(
            "use it with `sysctl -w net.ipv4.tcp_congestion_control={}` or setsockopt(TCP_CONGESTION)",
            p.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks, before anything is loaded or traced, what the traces would be
/// written over: `out` and the files later connections write beside it
/// (`out.2.csv.gz`, ...), each absent or a hook trace, in a directory that
/// exists; never a link, a device or a pipe, nor a file of another kind.
fn check_out(out: &Path) -> Result<(), Failure> {
    let refuse = |path: &Path, why: String| {
        Failure(format!(
            "cannot write the hook trace {}: {why}; choose another --out",
            name(&path.display().to_string())
        ))
    };
    if out.file_name().is_none() {
        return Err(refuse(out, "it names no file".into()));
    }
    outputs::check_trace(out).map_err(|why| refuse(out, why))?;
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
    let entries = std::fs::read_dir(dir.unwrap_or(Path::new(".")))
        .map_err(|e| refuse(out, kleinrock_files::reason(&e)))?;
    for e in entries.flatten() {
        let path = e.path();
        if is_later_conn(out, &path) {
            outputs::check_trace(&path).map_err(|why| refuse(&path, why))?;
        }
    }
    Ok(())
}

/// Whether `path`, in `out`'s directory, is where a later connection's
/// trace goes ([`conn_path`] of some n from 2).
fn is_later_conn(out: &Path, path: &Path) -> bool {
    let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
        return false;
    };
    file.split('.')
        .filter_map(|part| part.parse::<usize>().ok())
        .any(|n| n >= 2 && conn_path(out, n).file_name() == path.file_name())
}

fn trace(cc: &str, out: &Path, command: &[String]) -> Result<ExitCode, Failure> {
    check_out(out)?;
    let req = kleinrock_kernel::trace::Request {
        cc,
        out,
        command: (!command.is_empty()).then_some(command),
    };
    let mut shown = false;
    let mut progress = |rows: u64, conns: usize| {
        eprint!("\rtracing {cc}: {rows} rows, {conns} connections");
        let _ = std::io::Write::flush(&mut std::io::stderr());
        shown = true;
    };
    let report = kleinrock_kernel::trace::run(&req, &mut progress)?;
    if shown {
        eprintln!();
    }
    if let Some(w) = &report.loaded_wrapper {
        println!("traced the kernel's {cc} through {w} (loaded for this trace, now unloaded)");
    }
    let s = &report.summary;
    for f in &s.files {
        println!("{}: {} rows ({})", f.path.display(), f.rows, f.conn);
    }
    if s.files.is_empty() {
        println!(
            "no connection used {} from its start while tracing; have the traffic use that \
             name (KLEINROCK_CC is set for the command)",
            report.name
        );
    }
    for c in &s.joined_midway {
        println!("not recorded: {c} was already running when tracing began");
    }
    if s.undecodable > 0 {
        println!(
            "{} records did not decode: {}",
            s.undecodable,
            s.first_undecodable.as_deref().unwrap_or("?")
        );
    }
    if let Some(f) = s.files.iter().max_by_key(|f| f.rows) {
        println!(
            "replay with: kleinrock replay {} --cc {} --hz {}",
            f.path.display(),
            report.replay_spec,
            report.hz
        );
    }
    if report.lost > 0 {
        eprintln!(
            "error: {} of {} hook calls were not recorded because the trace ring was full; \
             the traces have gaps and will not replay (trace fewer or slower connections)",
            report.lost,
            report.recorded + report.lost
        );
        return Ok(ExitCode::from(3));
    }
    match report.command_status {
        Some(st) if !st.success() => {
            eprintln!("the traced command failed ({st})");
            Ok(ExitCode::from(1))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

fn list() -> Result<ExitCode, Failure> {
    let loaded = Paths::system().list()?;
    if loaded.is_empty() {
        println!("nothing loaded (load with `kleinrock kernel load cubic`)");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<15}  {:<30}  {:<23}  registered",
        "name", "spec", "loaded"
    );
    for p in loaded {
        let status = match (p.registered, p.linked) {
            (true, true) => "yes",
            (false, true) => "no (link detached)",
            (_, false) => "no (link pin missing)",
        };
        println!(
            "{:<15}  {:<30}  {:<23}  {status}",
            p.name,
            p.spec.as_deref().unwrap_or("?"),
            p.loaded_unix
                .map(pins::format_utc)
                .unwrap_or_else(|| "?".into()),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn unload(names: Vec<String>, all: bool) -> Result<ExitCode, Failure> {
    pins::check_root("unloading congestion control")?;
    let paths = Paths::system();
    let names = if all {
        paths.list()?.into_iter().map(|p| p.name).collect()
    } else {
        names
    };
    if names.is_empty() {
        println!("nothing to unload");
    }
    // Refuse before unloading any, so --all does all or nothing here.
    for name in &names {
        paths.check_not_default(name)?;
    }
    for name in names {
        match paths.unload(&name, UNLOAD_WAIT)? {
            Unloaded::Gone => println!("unloaded {name}"),
            Unloaded::StillRegistered => println!(
                "unpinned {name}, but the kernel still lists it: another link (another \
                 process's) still holds it"
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}
