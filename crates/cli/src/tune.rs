//! `kleinrock tune run|advise|status|stop`: the selector on this host's
//! real connections (docs/TUNE.md). The daemon's loop is
//! `kleinrock_kernel::tune::daemon`; this file reads the configuration,
//! handles signals and prints.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Subcommand;
use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::tune::cgroup;
use kleinrock_kernel::tune::daemon::{self, Daemon, Options};
use kleinrock_kernel::tune::names::{resolve, TunePins};
use kleinrock_select::bandit::Config as BanditConfig;
use kleinrock_select::live::{self, PolicyKind};

use crate::tune_config::Config;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

/// What `run` and `advise` share.
#[derive(clap::Args)]
struct Common {
    /// The configuration file (TOML, docs/TUNE.md); the options below
    /// override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The policy: kleinrock (default) or bpftune.
    #[arg(long)]
    policy: Option<String>,
    /// The cgroup v2 whose connections are tuned (default: the root of the
    /// cgroup v2 hierarchy, from the mount table).
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// The learned table (default /var/lib/kleinrock-tune/table).
    #[arg(long)]
    table: Option<PathBuf>,
    /// Where the pid and status files go (default /run/kleinrock-tune).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct Where {
    /// The configuration file, for its state_dir and pins.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The daemon's state directory (default /run/kleinrock-tune).
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Tune the connections of a cgroup until SIGTERM or Ctrl-C: set each
    /// new connection's congestion control from what the policy learned
    /// about its peer (needs root).
    Run(Common),
    /// Learn as `run` does and report what would be chosen, without setting
    /// anything.
    Advise {
        #[command(flatten)]
        common: Common,
        /// Stop after this long (`30s`, `10min`) and print the status.
        #[arg(long = "for")]
        duration: Option<String>,
    },
    /// Print the running daemon's table: bpftune's columns and Kleinrock's.
    Status {
        #[command(flatten)]
        at: Where,
        /// JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Stop the daemon (it saves its table and detaches) and unload the
    /// algorithms it loaded.
    Stop {
        #[command(flatten)]
        at: Where,
    },
}

pub fn run(args: Args) -> Result<ExitCode, Failure> {
    match args.command {
        Command::Run(c) => tune(&c, false, None),
        Command::Advise { common, duration } => {
            let limit = duration
                .map(|d| {
                    kleinrock_sim::scenario::units::parse_duration(&d)
                        .filter(|&ns| ns > 0)
                        .map(Duration::from_nanos)
                        .ok_or_else(|| {
                            Failure(format!(
                                "--for {d} is not a duration; write e.g. 30s or 10min"
                            ))
                        })
                })
                .transpose()?;
            tune(&common, true, limit)
        }
        Command::Status { at, json } => status(&at, json),
        Command::Stop { at } => stop(&at),
    }
}

fn config(file: Option<&PathBuf>) -> Result<Config, Failure> {
    match file {
        Some(f) => Ok(Config::load(f)?),
        None => Ok(Config::default()),
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGTERM (systemd's stop, `kleinrock tune stop`) and SIGINT end the loop
/// cleanly: the table is saved and the program detached.
fn catch_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

fn tune(c: &Common, advise: bool, limit: Option<Duration>) -> Result<ExitCode, Failure> {
    let mut cfg = config(c.config.as_ref())?;
    if let Some(p) = &c.policy {
        cfg.policy = match p.as_str() {
            "kleinrock" => PolicyKind::Kleinrock,
            "bpftune" => PolicyKind::Bpftune,
            _ => {
                return Err(Failure(format!(
                    "--policy {p} is not a policy; give kleinrock or bpftune"
                )))
            }
        };
    }
    if c.cgroup.is_some() {
        cfg.cgroup = c.cgroup.clone();
    }
    if c.table.is_some() {
        cfg.table = c.table.clone();
    }
    if let Some(d) = &c.state_dir {
        cfg.state_dir = d.clone();
    }
    let cgroup = match cfg.cgroup.clone() {
        Some(p) => p,
        None => cgroup::hierarchy()?,
    };
    let specs = match cfg.policy {
        PolicyKind::Kleinrock => cfg.candidates.clone(),
        PolicyKind::Bpftune => kleinrock_select::bpftune::CONGS
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let candidates = resolve(&specs, &cfg.ecn_only, &Paths::system().available()?)?;
    let opts = Options {
        tuner: live::Config {
            policy: cfg.policy,
            kleinrock: BanditConfig {
                candidates: specs,
                capacity: cfg.capacity,
                seed: cfg.seed,
                ..BanditConfig::default()
            },
            needs_ecn: candidates.iter().map(|c| c.needs_ecn).collect(),
            ecn_allow: cfg.ecn_allow.clone(),
        },
        candidates,
        cgroup: cgroup.clone(),
        advise,
        report_every: cfg.report_interval,
        table: cfg.table.clone(),
        save_every: cfg.save_interval,
        state_dir: Some(cfg.state_dir.clone()),
        pins: TunePins { root: cfg.pins },
        status_peers: cfg.status_peers,
    };
    let log = Box::new(|line: &str| eprintln!("{line}"));
    catch_signals();
    STOP.store(false, Ordering::SeqCst);
    let mut d = Daemon::start(opts, log)?;
    let status_command = match (&c.config, &c.state_dir) {
        (_, Some(d)) => format!(" --state-dir {}", d.display()),
        (Some(f), None) => format!(" --config {}", f.display()),
        (None, None) => String::new(),
    };
    eprintln!(
        "{} the connections of cgroup {} with the {} policy; status: kleinrock tune status{status_command}",
        if advise { "advising on" } else { "tuning" },
        cgroup.display(),
        cfg.policy.name(),
    );
    let start = Instant::now();
    let mut result = Ok(());
    while !STOP.load(Ordering::SeqCst) && limit.is_none_or(|l| start.elapsed() < l) {
        if let Err(e) = d.step(Duration::from_millis(200)) {
            result = Err(e);
            break;
        }
    }
    let (h, peers) = d.status(true);
    let finished = d.finish();
    result?;
    finished?;
    if limit.is_some() {
        print!("{}", kleinrock_kernel::tune::status::text(&h, &peers));
    }
    Ok(ExitCode::SUCCESS)
}

fn state_dir(at: &Where) -> Result<(PathBuf, PathBuf), Failure> {
    let cfg = config(at.config.as_ref())?;
    Ok((at.state_dir.clone().unwrap_or(cfg.state_dir), cfg.pins))
}

fn status(at: &Where, json: bool) -> Result<ExitCode, Failure> {
    let (dir, _) = state_dir(at)?;
    let file = dir.join(if json { "status.json" } else { "status.txt" });
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure(format!(
                "no tuner has written a status in {}; start one with `kleinrock tune run`",
                dir.display()
            )))
        }
        Err(e) => {
            return Err(Failure(format!(
                "cannot read {}: {}",
                file.display(),
                kleinrock_files::reason(&e)
            )))
        }
    };
    let text = match daemon::running(&dir) {
        Some(_) => text,
        // A daemon that was killed could not say so itself.
        None if json => text.replacen("{\"running\":true", "{\"running\":false", 1),
        None => format!("not running: the last status its daemon wrote follows\n{text}"),
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn stop(at: &Where) -> Result<ExitCode, Failure> {
    let (dir, pins) = state_dir(at)?;
    let s = daemon::stop(&dir, &TunePins { root: pins }, Duration::from_secs(10))?;
    match s.daemon {
        Some((pid, false)) => println!("stopped the tuner (pid {pid}): table saved, detached"),
        Some((pid, true)) => println!(
            "killed the tuner (pid {pid}) after it ignored SIGTERM for 10 s: detached, its \
             table as last saved"
        ),
        None => println!("no tuner was running"),
    }
    for (name, outcome) in s.unloaded {
        match outcome {
            kleinrock_kernel::pins::Unloaded::Gone => println!("unloaded {name}"),
            kleinrock_kernel::pins::Unloaded::StillRegistered => {
                println!("unpinned {name}, but the kernel still lists it: another link holds it")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
