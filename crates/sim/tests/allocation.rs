//! The engine's promise on memory: no allocation per packet in steady
//! state, and memory in proportion to the packets in flight, not to the
//! simulated time. A run twice as long sends twice the packets; it may
//! allocate only what its longer results series need (reserved up front)
//! and whatever its rings still grow by.
//!
//! One test in this binary, so that the counting allocator sees only the
//! run being measured.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use kleinrock_sim::results::{FlowSample, QueueSample};
use kleinrock_sim::scenario;
use kleinrock_sim::time::SEC;
use kleinrock_sim::Sim;

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(live, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        grew(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // Counted as the new block beside the old, as a moving realloc is.
        grew(new_size);
        LIVE.fetch_sub(layout.size(), Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

struct Footprint {
    allocs: usize,
    peak_bytes: usize,
    packets: u64,
}

/// Runs `scenario` for `secs` simulated seconds and counts the allocations
/// and the peak of live heap bytes from building the world to its results.
fn footprint(scenario: &str, secs: u64) -> Footprint {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(scenario);
    let mut cfg = scenario::load(&path).unwrap();
    cfg.duration = secs * SEC;
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let allocs = ALLOCS.load(Relaxed);
    let results = Sim::new(cfg).unwrap().run(&mut |_| {}).unwrap();
    let f = Footprint {
        allocs: ALLOCS.load(Relaxed) - allocs,
        peak_bytes: PEAK.load(Relaxed) - base,
        packets: results.links[0].tx_packets,
    };
    drop(results);
    f
}

#[test]
fn twice_the_time_allocates_only_its_longer_series() {
    // CUBIC on a clean path, and BBR under 1% loss (SACK, RACK and
    // retransmissions on most round trips).
    for scenario in [
        "ns3-A-cubic-100M-40ms.toml",
        "ns3-C2-bbr-100M-40ms-loss1.toml",
    ] {
        let short = footprint(scenario, 10);
        let long = footprint(scenario, 20);
        assert!(
            long.packets > short.packets + 50_000,
            "{scenario}: {} then {} packets",
            short.packets,
            long.packets
        );
        // The ten extra seconds' samples (every 100 ms: a flow sample and
        // one per link), reserved when the world is built.
        let series = 100 * (size_of::<FlowSample>() + 2 * size_of::<QueueSample>());
        eprintln!(
            "{scenario}: 10 s: {} packets, {} allocations, peak {} B; 20 s: {} packets, {} allocations, peak {} B",
            short.packets, short.allocs, short.peak_bytes, long.packets, long.allocs, long.peak_bytes
        );
        // A ring may still double once or twice for a new largest flight.
        assert!(
            long.allocs <= short.allocs + 4,
            "{scenario}: {} allocations in 10 s, {} in 20 s: something allocates as the run goes on",
            short.allocs,
            long.allocs
        );
        assert!(
            long.peak_bytes <= short.peak_bytes + series + (16 << 10),
            "{scenario}: peak {} B in 10 s, {} B in 20 s: memory grows with time beyond the {series} B of series",
            short.peak_bytes,
            long.peak_bytes
        );
    }
}
