//! The memory a tuning daemon's policy holds with a million distinct
//! peers: synthetic connections (one per peer, opened and closed as the
//! sockops program reports them) fed to a `live::Tuner` with the default
//! capacity, the heap counted by a global allocator. docs/PERFORMANCE.md
//! records the figures.
//!
//! ```sh
//! cargo run --release -p kleinrock-select --example live_memory [PEERS]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use kleinrock_select::bandit::Config as BanditConfig;
use kleinrock_select::live::{Closed, Config, Opened, Outcome, PolicyKind, Tuner};
use kleinrock_select::Sample;

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let n = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(n, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's pointer and layout, passed on.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn main() {
    let peers: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    for policy in [PolicyKind::Kleinrock, PolicyKind::Bpftune] {
        let before = NOW.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let cfg = BanditConfig::default();
        let k = cfg.candidates.len();
        let mut t = Tuner::new(Config {
            policy,
            needs_ecn: vec![false; k],
            ecn_allow: Vec::new(),
            kleinrock: cfg,
        });
        let start = Instant::now();
        let mut decisions = 0;
        for i in 0..peers {
            // Distinct peers spread over /24s, as a busy server's clients.
            let peer = u128::from(std::net::Ipv4Addr::from(0x0a00_0000 + i).to_ipv6_mapped());
            let alg = (i as usize) % t.candidates().len();
            let o = Opened {
                cookie: i as u64,
                peer,
                chosen: None,
                outcome: Outcome::Unchosen,
                running: Some(alg),
                ecn: false,
            };
            decisions += t.opened(0, &o).len();
            let s = Sample {
                min_rtt_us: 1000 + i % 5000,
                srtt_us: 1500 + i % 5000,
                max_rate_bps: 10_000_000,
                mean_rate_bps: 5_000_000 + (i as u64 % 1000) * 1000,
                rate_delivered: 10,
                rate_interval_us: 1000,
                mss: 1448,
                segs_out: 100,
                total_retrans: i % 3,
                age_us: 200_000,
                bytes_acked: 100_000,
                complete: true,
            };
            let c = Closed {
                cookie: i as u64,
                peer,
                running: Some(alg),
                switched: false,
                sample: s,
                ce: 0,
            };
            decisions += t.closed(0, &c).len();
        }
        let held = NOW.load(Ordering::Relaxed) - before;
        let peak = PEAK.load(Ordering::Relaxed) - before;
        println!(
            "{}: {peers} peers, {} remembered, {decisions} decisions in {:.1} s; heap {:.1} MiB held, {:.1} MiB at peak ({:.0} bytes per remembered peer)",
            policy.name(),
            t.peers(),
            start.elapsed().as_secs_f64(),
            mib(held),
            mib(peak),
            held as f64 / t.peers().max(1) as f64
        );
        drop(t);
    }
}
