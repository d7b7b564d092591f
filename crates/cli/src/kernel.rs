//! `kleinrock kernel`: load the BPF ports into the running kernel as named
//! congestion controls, list them, unload them (docs/KERNEL.md).

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use kleinrock_kernel::pins::{self, Paths, Unloaded};
use kleinrock_kernel::plan::plan;

use crate::Failure;

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
