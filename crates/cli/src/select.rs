//! `kleinrock select WORKLOAD.toml`: play a fleet of destinations against
//! bpftune's selector and Kleinrock's, and score both against the oracle.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use kleinrock_fleet::replay::expectations;
use kleinrock_fleet::{run_policy, Outcomes, Policy, Report, Workload};
use kleinrock_select::persist;

use crate::progress::Phase;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The workload file (TOML, see docs/SELECTOR.md).
    workload: PathBuf,
    /// Policies to play, comma-separated: bpftune, kleinrock.
    #[arg(long, value_delimiter = ',', default_value = "bpftune,kleinrock")]
    policy: Vec<String>,
    /// Write connections.csv and summary.json per policy here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Simulations in parallel (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// Print each policy's own table even for many destinations.
    #[arg(long)]
    status: bool,
    /// Kleinrock's learned table: loaded before the run if the file exists
    /// (a corrupt or truncated one is reported and ignored), saved after it
    /// (atomically). Only a table is replaced: any other file, a device, a
    /// pipe or a link is refused before the run.
    #[arg(long)]
    table: Option<PathBuf>,
    /// Print what the oracle knows: every algorithm's expected goodput,
    /// RTT and cost on every network.
    #[arg(long)]
    oracle: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Replaces the workload's seed: its outcomes, arrivals and the
    /// policies' draws are redrawn.
    #[arg(long)]
    seed: Option<u32>,
}

fn oracle_table(w: &Workload, o: &Outcomes) -> String {
    let exp = expectations(w, o);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<28} {:>6} {:<24} {:>11} {:>9} {:>7}",
        "path", "phase", "algorithm", "goodput", "RTT", "cost"
    );
    for (n, &(pi, changed, class)) in o.networks.iter().enumerate() {
        let e = &exp[n];
        let size = if w.sizes.len() > 1 {
            format!(" ({})", w.sizes[class].label)
        } else {
            String::new()
        };
        let mut order: Vec<usize> = (0..o.algorithms.len()).collect();
        order.sort_by(|&a, &b| e.cost[a].total_cmp(&e.cost[b]));
        for a in order {
            let mark = if a == e.oracle {
                " oracle"
            } else if e.best[a] {
                " best"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "{:<28} {:>6} {:<24} {:>6.1} Mb/s {:>6.1} ms {:>7.3}{}",
                format!("{}{size}", w.paths[pi].name),
                if changed { "after" } else { "before" },
                o.algorithms[a],
                e.goodput_bps[a] / 1e6,
                e.rtt_ms[a],
                e.cost[a],
                mark
            );
        }
    }
    s
}

fn table(w: &Workload, o: &Outcomes, r: &Report) -> String {
    let exp = expectations(w, o);
    let cubic = o.algorithm_index("cubic").expect("cubic simulated");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<28} {:>5} {:>8} {:<22} {:>11} {:>11} {:>7} {:>11} {:>11}",
        "path",
        "dests",
        "phase",
        "oracle",
        "goodput",
        "cubic alone",
        "best",
        "converged",
        "with ties"
    );
    let dests = w.destinations();
    // Each path's phases and connections, before and after a change, in
    // one pass (a pass per path was quadratic with many path types).
    let mut phases_of = vec![[Vec::new(), Vec::new()]; w.paths.len()];
    for x in &r.phases {
        phases_of[dests[x.dest].0][x.changed as usize].push(x);
    }
    let mut conns_of = vec![[Vec::new(), Vec::new()]; w.paths.len()];
    for x in &r.played {
        conns_of[o.networks[x.network].0][x.changed as usize].push(x);
    }
    for (pi, p) in w.paths.iter().enumerate() {
        for changed in [false, true] {
            let phases = &phases_of[pi][changed as usize];
            if phases.is_empty() {
                continue;
            }
            let conns = &conns_of[pi][changed as usize];
            let n = conns.len().max(1) as f64;
            let goodput = conns.iter().map(|x| x.goodput_bps).sum::<f64>() / n;
            // What cubic would have had on the same connections.
            let alone = conns
                .iter()
                .map(|x| exp[x.network].goodput_bps[cubic])
                .sum::<f64>()
                / n;
            // The oracle of each size class met, most frequent first.
            let mut oracles: Vec<(usize, &str)> = Vec::new();
            for x in conns {
                let name = o.algorithms[exp[x.network].oracle].as_str();
                match oracles.iter_mut().find(|(_, o)| *o == name) {
                    Some(e) => e.0 += 1,
                    None => oracles.push((1, name)),
                }
            }
            oracles.sort_by_key(|o| std::cmp::Reverse(o.0));
            let oracle = oracles.iter().map(|o| o.1).collect::<Vec<_>>().join("/");
            let share = phases.iter().map(|x| x.share_best).sum::<f64>() / phases.len() as f64;
            // Median and worst, never counting as every connection.
            let spread = |of: fn(&&kleinrock_fleet::replay::Phase) -> Option<u32>| {
                let mut v: Vec<u32> = phases
                    .iter()
                    .map(|x| of(x).unwrap_or(x.connections))
                    .collect();
                v.sort();
                format!("{:>5} / {:<4}", v[v.len() / 2], v[v.len() - 1])
            };
            let _ = writeln!(
                s,
                "{:<28} {:>5} {:>8} {:<22} {:>6.1} Mb/s {:>6.1} Mb/s {:>6.0}% {} {}",
                p.name,
                phases.len(),
                if changed { "after" } else { "before" },
                oracle,
                goodput / 1e6,
                alone / 1e6,
                share * 100.0,
                spread(|x| x.convergence),
                spread(|x| x.tie_convergence)
            );
        }
    }
    let _ = writeln!(
        s,
        "regret against the oracle: {:.2} GB of goodput, {:.0} ms of RTT over {} connections, cost {:.1}",
        r.regret_bytes / 1e9,
        r.regret_rtt_ms,
        r.played.len(),
        r.regret_cost
    );
    let _ = writeln!(
        s,
        "against the algorithm that delivers most: {:.2} GB of goodput",
        r.regret_bytes_most / 1e9
    );
    let _ = writeln!(
        s,
        "against the best of its own candidates: {:.2} GB of goodput, cost {:.1}",
        r.own_regret_bytes / 1e9,
        r.own_regret_cost
    );
    if r.policy == "kleinrock" {
        let _ = writeln!(s, "path changes detected: {}", r.changes_detected);
    }
    s
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let mut w = {
        let _reading = Phase::start("reading the workload", a.quiet);
        Workload::load(&a.workload)?
    };
    if let Some(seed) = a.seed {
        w.seed = seed as u64;
    }
    for p in &a.policy {
        if p != "bpftune" && p != "kleinrock" {
            return Err(Failure(format!(
                "unknown policy `{p}`; valid policies are bpftune and kleinrock"
            )));
        }
    }
    check_outputs(&a)?;
    let algorithms = w.algorithms();
    let threads = a
        .jobs
        .map(|j| j as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let o = {
        let simulating = Phase::start("simulating outcomes", a.quiet);
        Outcomes::simulate(&w, &algorithms, threads, &|f| simulating.set(f))
    };
    let dests = w.destinations().len();
    println!(
        "{}: {} destinations over {} path types, {} connections each; {} algorithms x {} outcomes per network",
        w.name,
        dests,
        w.paths.len(),
        w.connections,
        algorithms.len(),
        w.outcome_seeds
    );
    if a.oracle {
        println!();
        print!("{}", oracle_table(&w, &o));
    }
    let mut reports = Vec::new();
    for name in &a.policy {
        let mut policy = if name == "bpftune" {
            Policy::bpftune(w.seed)
        } else {
            Policy::kleinrock(&w.candidates, w.seed)
        };
        if let (Policy::Kleinrock(b), Some(path)) = (&mut policy, &a.table) {
            let loading = Phase::start("loading the learned table", a.quiet);
            let loaded = persist::load(b, path);
            drop(loading);
            match loaded {
                Ok(true) => println!("loaded the learned table from {}", path.display()),
                Ok(false) => {}
                Err(e @ persist::LoadError::Unusable(_)) => eprintln!("warning: {e}"),
                Err(e @ persist::LoadError::Refused(_)) => {
                    return Err(Failure(format!("{e}; choose another --table path")))
                }
            }
        }
        let r = {
            let playing = Phase::start(&format!("playing {name}"), a.quiet);
            run_policy(&w, &o, &mut policy, &mut |f| playing.set(f))
        };
        if let (Policy::Kleinrock(b), Some(path)) = (&policy, &a.table) {
            let _saving = Phase::start("saving the learned table", a.quiet);
            persist::save(b, path).map_err(|e| {
                Failure(format!(
                    "cannot save the learned table to {}: {}; choose another --table path",
                    path.display(),
                    kleinrock_files::reason(&e)
                ))
            })?;
        }
        let summary = table(&w, &o, &r);
        if let Some(out) = &a.out {
            let _writing = Phase::start(&format!("writing {name}'s results"), a.quiet);
            write_report(out, &w, &o, &r, &summary).map_err(|e| {
                Failure(format!(
                    "cannot write to {}: {}; choose another --out directory",
                    out.display(),
                    kleinrock_files::reason(&e)
                ))
            })?;
        }
        println!("\n== {name}");
        if dests <= 4 || a.status {
            print!("{}", r.status);
            println!();
        }
        print!("{summary}");
        reports.push(r);
    }
    if let [b, k] = &reports[..] {
        if b.policy == "bpftune" && b.regret_cost > 0.0 {
            println!(
                "\nkleinrock's regret is {:.0}% of bpftune's (cost); goodput regret {:.2} GB against {:.2} GB",
                100.0 * k.regret_cost / b.regret_cost,
                k.regret_bytes / 1e9,
                b.regret_bytes / 1e9
            );
        }
    }
    if let Some(out) = &a.out {
        println!("results: {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The files `--out` gets, per policy.
fn out_files(policy: &str) -> [String; 2] {
    [
        format!("{policy}-connections.csv"),
        format!("{policy}-summary.txt"),
    ]
}

/// What `select` writes, checked before anything runs: the table only over
/// nothing or a table, and never over the workload or an output; `--out` a
/// directory that is new, empty or holds only what `select` writes there
/// (and tables, which `--table` is often pointed beside).
fn check_outputs(a: &Args) -> Result<(), Failure> {
    let names: Vec<String> = ["bpftune", "kleinrock"]
        .iter()
        .flat_map(|p| out_files(p))
        .collect();
    if let Some(table) = &a.table {
        let refuse = |why: String| {
            Failure(format!(
                "cannot save the learned table to {}: {why}; choose another --table path",
                table.display()
            ))
        };
        if kleinrock_files::same_file(table, &a.workload) {
            return Err(refuse("it is the workload file".into()));
        }
        let name = table.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent = table.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = parent.unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(refuse(format!("{} is not a directory", dir.display())));
        }
        if let Some(out) = &a.out {
            if names.iter().any(|n| n == name) && kleinrock_files::same_file(dir, out) {
                return Err(refuse(format!("--out writes {name} there")));
            }
        }
        persist::check_target(table).map_err(|e| refuse(e.to_string()))?;
    }
    if let Some(out) = &a.out {
        let ours = |e: &kleinrock_files::Entry| {
            Ok(e.kind == kleinrock_files::Kind::File
                && (e.name.is_some_and(|n| names.iter().any(|m| m == n))
                    || persist::check_target(e.path).is_ok()))
        };
        kleinrock_files::claim_dir(out, &ours).map_err(|e| {
            Failure(format!(
                "cannot write to {}: {}; choose a new or empty --out directory",
                out.display(),
                kleinrock_files::reason(&e)
            ))
        })?;
    }
    Ok(())
}

/// A CSV field, quoted when it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes a policy's connections and `summary` (its table) under `dir`.
fn write_report(
    dir: &std::path::Path,
    w: &Workload,
    o: &Outcomes,
    r: &Report,
    summary: &str,
) -> std::io::Result<()> {
    let dests = w.destinations();
    let [connections_csv, summary_txt] = out_files(&r.policy);
    let mut f = std::io::BufWriter::new(kleinrock_files::create(&dir.join(connections_csv))?);
    writeln!(
        f,
        "destination,address,path,connection,changed,algorithm,goodput_bps,rtt_ms"
    )?;
    for p in &r.played {
        writeln!(
            f,
            "{},{},{},{},{},{},{:.0},{:.3}",
            p.dest,
            dests[p.dest].1,
            csv_field(&w.paths[dests[p.dest].0].name),
            p.index,
            p.changed,
            o.algorithms[p.alg],
            p.goodput_bps,
            p.rtt_ms
        )?;
    }
    f.flush()?;
    let mut s = std::io::BufWriter::new(kleinrock_files::create(&dir.join(summary_txt))?);
    s.write_all(r.status.as_bytes())?;
    s.write_all(b"\n")?;
    s.write_all(summary.as_bytes())?;
    s.flush()
}
