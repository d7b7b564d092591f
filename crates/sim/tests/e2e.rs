//! End-to-end behaviour of the simulated TCP.

use kleinrock_cc::Algorithm;
use kleinrock_sim::loss::LossModel;
use kleinrock_sim::queue::Limit;
use kleinrock_sim::time::{MS, SEC};
use kleinrock_sim::{Config, FlowConfig, LinkConfig, Results, Sim};

fn link(rate_bps: u64, packets: u32, loss_ppm: u32) -> LinkConfig {
    LinkConfig {
        rate_bps,
        limit: Limit::Packets(packets),
        mark_at: None,
        loss: if loss_ppm == 0 { LossModel::None } else { LossModel::Bernoulli { ppm: loss_ppm } },
    }
}

fn flow(cc: &str, rtt_ms: u64) -> FlowConfig {
    FlowConfig {
        cc: cc.parse::<Algorithm>().unwrap(),
        rtt: rtt_ms * MS,
        start: 0,
        stop: None,
        upload: true,
        size_segments: None,
        trace: None,
    }
}

pub fn dumbbell(rate_bps: u64, queue: u32, loss_ppm: u32, secs: u64, flows: Vec<FlowConfig>) -> Config {
    Config {
        duration: secs * SEC,
        seed: 1,
        sample_interval: 100 * MS,
        hz: 250,
        mss: 1448,
        init_cwnd: 10,
        rwnd_segments: 1 << 20,
        pace_all: false,
        ecn: false,
        slow_start_after_idle: true,
        links: [link(rate_bps, queue, loss_ppm), link(rate_bps, 1000, 0)],
        flows,
    }
}

pub fn run(cfg: Config) -> Results {
    Sim::new(cfg).unwrap().run(&mut |_| {}).unwrap()
}

#[test]
fn debug_reno() {
    let r = run(dumbbell(10_000_000, 84, 0, 30, vec![flow("reno", 40)]));
    println!("{}", r.summary());
    let r = run(dumbbell(100_000_000, 345, 0, 30, vec![flow("cubic", 40)]));
    println!("{} events {}", r.summary(), r.events);
    let r = run(dumbbell(100_000_000, 345, 10_000, 30, vec![flow("cubic", 40)]));
    println!("{} events {}", r.summary(), r.events);
    panic!();
}
