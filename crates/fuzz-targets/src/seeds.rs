//! Each target's starting inputs: the project's own files and values (the
//! shipped scenarios and workloads, every spec of the property tests,
//! traces recorded from the Rust algorithms, learned tables), the shapes a
//! fuzzer would take long to find. `scripts/fuzz.sh` writes them as the
//! campaign's seed corpus (`fuzz-seeds DIR`); tests/smoke.rs mutates them.

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use kleinrock_cc::driver::{Driver, Path as NetPath};
use kleinrock_cc::rand::SplitMix64;
use kleinrock_cc::script::{Start, SPECS};
use kleinrock_cc::Algorithm;
use kleinrock_select::bandit::{Bandit, Config};
use kleinrock_select::bpftune::Bpftune;
use kleinrock_select::persist::{self, bpftune};
use kleinrock_select::{peer, Sample};
use kleinrock_trace::write::ca_names;
use kleinrock_trace::{Recorder, TraceWriter};

use crate::trace::prefix;

/// The workspace's `scenarios/` directory.
fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// The shipped files whose names end in `ext` and whose names start with
/// `select-` (workloads) or not (scenarios), per `workloads`.
fn shipped(ext: &str, workloads: bool) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios())
        .expect("the workspace's scenarios/ directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(ext) && name.starts_with("select-") == workloads
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read(p).expect("a shipped file"))
        .collect()
}

/// The seeds of the target named `name` (none for an unknown name).
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "scenario" => shipped(".toml", false),
        "workload" => shipped(".toml", true),
        "spec" => SPECS
            .iter()
            .copied()
            .chain([
                "cubic:beta=700:beta=800",
                "vegas:alpha=10:beta=2",
                "cubic::",
                "nosuch",
            ])
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        "hook_trace" => hook_traces(),
        "select_table" => vec![body(&persist::to_text(&learned_bandit()))],
        "bpftune_table" => vec![body(&bpftune::to_text(&learned_bpftune()))],
        "mahimahi" => shipped(".trace", true)
            .iter()
            .map(|t| {
                // The first 300 lines: the shape, not the length.
                let text = String::from_utf8_lossy(t);
                let lines: Vec<&str> = text.lines().take(300).collect();
                (lines.join("\n") + "\n").into_bytes()
            })
            .chain([b"1\n1\n3\n4\n".to_vec()])
            .collect(),
        "hooks" => scripts(),
        _ => Vec::new(),
    }
}

/// A table's text without its `end` line: the targets add it.
fn body(table: &str) -> Vec<u8> {
    let end = table
        .rfind("\nend ")
        .expect("a table ends with its end line");
    table.as_bytes()[..end + 1].to_vec()
}

/// Peers the seeds' tables learned about: IPv4 and IPv6, two in one /24.
const PEERS: [&str; 4] = ["10.0.0.1", "10.0.0.2", "192.0.2.7", "2001:db8::1"];

/// Connections the seeds' tables learned from, each a peer (an index into
/// [`PEERS`]) and a sample with the fields both policies read, drawn from
/// `seed`: different RTTs, rates, sizes, completions.
fn connections(seed: u64, n: usize) -> Vec<(usize, Sample)> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let r = rng.next_u64();
            let sample = Sample {
                min_rtt_us: 500 + (r % 50_000) as u32,
                max_rate_bps: 100_000 + (r >> 16) % 1_000_000_000,
                rate_delivered: 1 + (r >> 8) as u32 % 64,
                rate_interval_us: 1_000,
                mss: 1448,
                bytes_acked: (r >> 24) % 10_000_000,
                age_us: 1 + (r >> 32) % 10_000_000,
                complete: r & 1 == 0,
                ..Sample::default()
            };
            ((r >> 60) as usize % PEERS.len(), sample)
        })
        .collect()
}

/// Kleinrock's selector after connections to every peer.
fn learned_bandit() -> Bandit {
    let mut b = Bandit::new(Config::default());
    for (p, s) in connections(1, 60) {
        let (c, _) = b.choose(peer(PEERS[p].parse().unwrap()));
        b.close(c, &s);
    }
    b
}

/// bpftune after connections to every peer, one algorithm failed.
fn learned_bpftune() -> Bpftune {
    let mut b = Bpftune::new(3);
    for (p, s) in connections(2, 60) {
        let p = peer(PEERS[p].parse().unwrap());
        let alg = b.established(p);
        b.close(p, alg, &s);
    }
    b.set_failed(peer(PEERS[0].parse().unwrap()), 3);
    b
}

/// Rows kept of each recorded trace (besides the header).
const ROWS: usize = 16;

/// Short traces recorded from one spec of each algorithm over the
/// ACK-clock model, lossy, cut to their first rows; a gzip copy of some.
fn hook_traces() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for spec in [
        "reno",
        "cubic:hystart=hspp",
        "bbr",
        "vegas",
        "htcp",
        "dctcp",
        "cdg",
    ] {
        let i = SPECS
            .iter()
            .position(|s| *s == spec)
            .expect("a spec of SPECS");
        let csv = recorded(spec);
        if i % 2 == 0 {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&csv).unwrap();
            let mut seed = vec![prefix(i, 0)];
            seed.extend(gz.finish().unwrap());
            out.push(seed);
        }
        let mut seed = vec![prefix(i, 0)];
        seed.extend(csv);
        out.push(seed);
    }
    out
}

/// A sink whose bytes stay readable after the writer that owns it is
/// done.
#[derive(Clone, Default)]
struct Memory(Rc<RefCell<Vec<u8>>>);

impl Write for Memory {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first [`ROWS`] rows of `spec` driven for 300 ms over a lossy
/// 12 Mbit/s, 20 ms path at 250 Hz, recorded in memory.
fn recorded(spec: &str) -> Vec<u8> {
    let cc: Algorithm = spec.parse().unwrap();
    let memory = Memory::default();
    let writer = TraceWriter::new(Box::new(memory.clone()), &ca_names(&cc)).unwrap();
    let lossy = NetPath {
        rtt_us: 20_000,
        rate_pps: 1_000,
        buffer_pkts: 10,
        loss_ppm: 30_000,
        ack_every: 2,
        seed: 5,
    };
    let mut d = Driver::new(cc, lossy, 250, Recorder::new(writer));
    d.run_for(300_000);
    d.tap.finish().unwrap();
    let text = String::from_utf8(memory.0.take()).unwrap();
    let lines: Vec<&str> = text.lines().take(ROWS + 1).collect();
    (lines.join("\n") + "\n").into_bytes()
}

/// Random scripts of a few lengths, in both domains.
fn scripts() -> Vec<Vec<u8>> {
    let mut rng = SplitMix64::new(16);
    let mut out = Vec::new();
    for (i, events) in [0usize, 4, 20, 60].into_iter().enumerate() {
        let mut s = vec![i as u8 & 1];
        for _ in 0..Start::DRAWS * 8 + events * 33 {
            s.push(rng.next_u64() as u8);
        }
        out.push(s);
    }
    out
}
