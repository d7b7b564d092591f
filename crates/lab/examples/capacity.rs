//! The delay line's capacity and accuracy against a raw veth path, in one
//! run on one lab (docs/PERFORMANCE.md, "The lab's delay line"):
//!
//! ```sh
//! sudo cargo run --release -p kleinrock-lab --example capacity -- [SECONDS] [REPETITIONS]
//! ```
//!
//! Each repetition measures, in turn, one cubic TCP flow (Rust sockets,
//! 64 KB writes) from the sender to the receiver for SECONDS (default 5):
//!
//! - `raw veth`: the router forwards veth to veth directly (the lab's two
//!   policy-routing rules into the delay line removed for the measurement:
//!   the same namespaces, veths and TCP, no TUN);
//! - `delay line`: through the delay line, no bottleneck, no delay;
//! - `delay line, GRO`: the same with `LabConfig::gro`;
//! - `1 Gbit/s bottleneck`: the simulator's FIFO at 1 Gbit/s (a BDP of 834
//!   packets) and 5 ms each way;
//! - `720 Mbit/s trace`: a mahimahi trace of 60 delivery opportunities
//!   every millisecond (mahimahi's own link carries about 300 Mbit/s of a
//!   720 Mbit/s trace, issue 18 says), the same queue and delays.
//!
//! The endpoints' TCP buffers are raised to 32 MB (`tcp_wmem`,
//! `tcp_rmem`; Linux's 4 MB send buffer holds less than a bottleneck's
//! BDP and its queue at 1 Gbit/s and 10 ms, and would limit the flow, not
//! the link). The run prints goodput, the delay line's release lateness (p50, p99, p99.9,
//! worst: how long after its release time each packet was written back)
//! and the share of the CPU the hypervisor took meanwhile. Figures vary
//! with what else the machine runs; the raw path, measured between the
//! others, says how busy it was. Needs root.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use kleinrock_lab::{
    Direction, Lab, LabConfig, Limit, Link, LinkConfig, QueueConfig, StealMeter, TcpInfo, Trace,
    RECEIVER_ADDR,
};

/// The lab's policy-routing rules that send each veth's arrivals into its
/// direction's TUN (docs/LAB.md, "Topology").
const RULES: [(&str, &str); 2] = [("rtr-snd", "100"), ("rtr-rcv", "101")];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(Ok(5.0), |s| s.parse())?;
    let repetitions: u32 = args.next().map_or(Ok(1), |s| s.parse())?;
    let plain = Lab::new(&LabConfig::default())?;
    let gro = Lab::new(&LabConfig {
        gro: true,
        ..LabConfig::default()
    })?;
    let fifo = LinkConfig::new(
        1_000_000_000,
        QueueConfig::Fifo {
            limit: Limit::Packets(834),
            mark_at: None,
        },
    );
    let bottleneck = |link: &LinkConfig| {
        Lab::new(&LabConfig::symmetric(Link {
            delay: Duration::from_millis(5),
            bottleneck: Some(link.clone()),
            ..Link::default()
        }))
    };
    let gigabit = bottleneck(&fifo)?;
    let mut traced = fifo.clone();
    traced.trace = Some(Trace::parse(&"1\n".repeat(60), "720 Mbit/s")?);
    let trace = bottleneck(&traced)?;
    println!(
        "| run | path | goodput Mbit/s | lateness p50 | p99 | p99.9 | worst | packets | stolen |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for lab in [&plain, &gro, &gigabit, &trace] {
        for (node, key) in [
            (lab.sender(), "net.ipv4.tcp_wmem"),
            (lab.receiver(), "net.ipv4.tcp_rmem"),
        ] {
            node.sysctl(key, "4096 131072 33554432")?;
        }
    }
    for run in 1..=repetitions {
        let raw = measure(&plain, seconds, true)?;
        print_row(run, "raw veth", &raw);
        print_row(run, "delay line", &measure(&plain, seconds, false)?);
        print_row(run, "delay line, GRO", &measure(&gro, seconds, false)?);
        print_row(
            run,
            "1 Gbit/s bottleneck",
            &measure(&gigabit, seconds, false)?,
        );
        print_row(run, "720 Mbit/s trace", &measure(&trace, seconds, false)?);
    }
    for lab in [&plain, &gro, &gigabit, &trace] {
        lab.check()?;
    }
    Ok(())
}

struct Measured {
    goodput_bps: f64,
    late: [Duration; 4],
    packets: u64,
    stolen: f64,
}

fn print_row(run: u32, path: &str, m: &Measured) {
    let us = |d: Duration| format!("{:.0} us", d.as_secs_f64() * 1e6);
    println!(
        "| {run} | {path} | {:.0} | {} | {} | {} | {} | {} | {:.1}% |",
        m.goodput_bps / 1e6,
        us(m.late[0]),
        us(m.late[1]),
        us(m.late[2]),
        us(m.late[3]),
        m.packets,
        m.stolen * 100.0
    );
}

/// One bulk flow through `lab`, around the delay line if `raw`.
fn measure(lab: &Lab, seconds: f64, raw: bool) -> Result<Measured, Box<dyn std::error::Error>> {
    if raw {
        rules(lab, "del")?;
    }
    let before = lab.lateness(Direction::Both);
    let worst_before = lab.delay_stats(Direction::Both).late_max;
    let meter = StealMeter::start()?;
    let goodput_bps = bulk(lab, seconds);
    let stolen = meter.share()?;
    if raw {
        rules(lab, "add")?;
    }
    let late = lab.lateness(Direction::Both).since(&before);
    let worst = lab.delay_stats(Direction::Both).late_max;
    Ok(Measured {
        goodput_bps: goodput_bps?,
        late: [
            late.quantile(0.5),
            late.quantile(0.99),
            late.quantile(0.999),
            // The lab keeps the worst since it started: this run's only if
            // it rose.
            if worst > worst_before {
                worst
            } else {
                late.quantile(1.0)
            },
        ],
        packets: late.count(),
        stolen,
    })
}

fn rules(lab: &Lab, verb: &str) -> Result<(), Box<dyn std::error::Error>> {
    for (iif, table) in RULES {
        let status = lab
            .router()
            .command("ip")
            .args(["rule", verb, "iif", iif, "lookup", table, "pref", table])
            .status()?;
        if !status.success() {
            return Err(format!("ip rule {verb} iif {iif} failed").into());
        }
    }
    Ok(())
}

/// Goodput of one flow sending for `seconds`, over the last 80% of it, as
/// its sender saw it acknowledged (the reading program's scheduling would
/// blur a rate read from what it received).
fn bulk(lab: &Lab, seconds: f64) -> Result<f64, Box<dyn std::error::Error>> {
    let listener = lab
        .receiver()
        .run(|| TcpListener::bind((RECEIVER_ADDR, 0)))??;
    let port = listener.local_addr()?.port();
    let mut tx = lab
        .sender()
        .run(move || TcpStream::connect((RECEIVER_ADDR, port)))??;
    let (mut rx, _) = listener.accept()?;
    let reader = std::thread::spawn(move || -> std::io::Result<()> {
        let mut buf = vec![0u8; 1 << 16];
        while rx.read(&mut buf)? > 0 {}
        Ok(())
    });
    let probe = tx.try_clone()?;
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let chunk = vec![0x5au8; 1 << 16];
        loop {
            if let Err(e) = tx.write_all(&chunk) {
                // Shut down by the measurement's end.
                return if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(e)
                };
            }
        }
    });
    std::thread::sleep(Duration::from_secs_f64(seconds / 5.0));
    let (t0, a0) = (Instant::now(), TcpInfo::of(&probe)?.bytes_acked);
    std::thread::sleep(Duration::from_secs_f64(seconds * 4.0 / 5.0));
    let (t1, a1) = (Instant::now(), TcpInfo::of(&probe)?.bytes_acked);
    probe.shutdown(Shutdown::Both)?;
    let _ = writer.join();
    let _ = reader.join();
    Ok((a1 - a0) as f64 * 8.0 / (t1 - t0).as_secs_f64())
}
