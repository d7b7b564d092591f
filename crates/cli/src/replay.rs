//! `kleinrock replay TRACE --cc SPEC --hz N`, and the parsing of specs
//! and HZ the other commands share.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kleinrock_cc::Algorithm;

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// The trace: CSV, optionally gzip-compressed (docs/TRACE_FORMAT.md).
    trace: PathBuf,
    /// The algorithm spec to replay into, e.g. `cubic` or `cubic:hystart=hspp`.
    #[arg(long = "cc", value_parser = parse_spec)]
    cc: Algorithm,
    /// HZ of the traced kernel's jiffies clock (`getconf CLK_TCK` does not
    /// tell it; see CONFIG_HZ in /boot/config-*).
    #[arg(long, value_parser = parse_hz)]
    hz: u32,
}

pub fn parse_spec(s: &str) -> Result<Algorithm, String> {
    s.parse::<Algorithm>().map_err(|e| e.to_string())
}

/// Prints, once each, the warnings of the specs given (what the kernel
/// would take from them but not do as written: `Algorithm::warnings`).
pub fn warn_specs<'a>(specs: impl IntoIterator<Item = &'a Algorithm>) {
    let mut said: Vec<String> = Vec::new();
    for w in specs.into_iter().flat_map(Algorithm::warnings) {
        if !said.contains(&w) {
            eprintln!("warning: {w}");
            said.push(w);
        }
    }
}

pub fn parse_hz(s: &str) -> Result<u32, String> {
    kleinrock_trace::parse_hz(s)
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    warn_specs([&a.cc]);
    let start = Instant::now();
    let mut shown = false;
    let mut progress = |rows: u64| {
        if start.elapsed().as_secs_f64() > 1.0 {
            eprint!("\rreplaying: {rows} rows");
            let _ = std::io::stderr().flush();
            shown = true;
        }
    };
    let report = kleinrock_trace::replay(&a.trace, a.cc, a.hz, &mut progress)?;
    if shown {
        eprintln!();
    }
    print!("{report}");
    Ok(if report.agrees() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
