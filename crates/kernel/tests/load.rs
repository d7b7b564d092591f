//! Loads the ports into the running kernel, runs loopback TCP through them,
//! and unloads them. Needs root, bpffs (mounted here if missing) and a
//! kernel with BTF and struct_ops; otherwise it says why and skips.
//!
//! Two cubic instances with different parameters run side by side.
//!
//! The instances are registered as `krt_reno` and `krt_cubic` rather than
//! the default `kr_reno` and `kr_cubic`, so the test neither trips over nor
//! unloads what an operator has loaded on the same machine.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{
    available, congestion_of, have_iperf3, iperf3_with, json_says, skip_reason, transfer,
};
use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::plan::plan;

const RENO: &str = "krt_reno";
const CUBIC: &str = "krt_cubic";
/// A second cubic, with other parameters, beside the first.
const CUBIC_VARIANT: &str = "krt_cubic_var";
const VARIANT_SPEC: &str = "cubic:hystart=hspp:friendly=newreno:beta=768";
const TRANSFER: usize = 50 << 20;

fn unload_leftovers() {
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
    }
}

#[test]
fn reno_and_cubic_carry_loopback_traffic_and_unload() {
    if let Some(why) = skip_reason() {
        eprintln!("kernel test skipped: {why}");
        return;
    }
    unload_leftovers();
    for (spec, name) in [
        ("reno", RENO),
        ("cubic", CUBIC),
        (VARIANT_SPEC, CUBIC_VARIANT),
    ] {
        let p = plan(spec, Some(name)).unwrap();
        let loaded = kleinrock_kernel::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.link.exists());
    }
    let listed = available();
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        assert!(listed.iter().any(|n| n == name), "{name} in {listed:?}");
    }
    let pinned: Vec<_> = Paths::system().list().unwrap();
    let cubic = pinned.iter().find(|p| p.name == CUBIC).unwrap();
    assert_eq!(cubic.spec.as_deref(), Some("cubic"));
    assert!(cubic.registered && cubic.linked);
    let variant = pinned.iter().find(|p| p.name == CUBIC_VARIANT).unwrap();
    assert_eq!(
        variant.spec.as_deref(),
        Some("cubic:hystart=hspp:friendly=newreno:beta=768")
    );

    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let (got, tx) = transfer(name, TRANSFER);
        assert_eq!(got, TRANSFER, "{name}");
        assert_eq!(congestion_of(&tx), name);
    }

    // Unloading while a socket still runs the algorithm: the name leaves the
    // kernel's list at once, the socket keeps its ops (and keeps sending)
    // until it closes.
    let (_, mut busy) = transfer(CUBIC, 1 << 20);
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let gone = Paths::system()
            .unload(name, Duration::from_secs(2))
            .unwrap();
        assert_eq!(gone, Unloaded::Gone, "{name}");
    }
    let listed = available();
    assert!(
        !listed
            .iter()
            .any(|n| [RENO, CUBIC, CUBIC_VARIANT].contains(&n.as_str())),
        "{listed:?}"
    );
    assert_eq!(congestion_of(&busy), CUBIC);
    busy.write_all(&[1u8; 1 << 16]).unwrap();
}

/// iperf3 -C through the port, when iperf3 is installed.
#[test]
fn iperf3_runs_over_the_cubic_port() {
    if let Some(why) = skip_reason() {
        eprintln!("iperf3 test skipped: {why}");
        return;
    }
    if !have_iperf3("iperf3 test") {
        return;
    }
    const NAME: &str = "krt_cubic_ip";
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    kleinrock_kernel::load(&plan("cubic", Some(NAME)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let json = iperf3_with(NAME);
    let unloaded = Paths::system().unload(NAME, Duration::from_secs(2));
    assert!(
        json_says(&json, "sender_tcp_congestion", NAME),
        "iperf3 did not report {NAME}: {json}"
    );
    assert_eq!(unloaded.unwrap(), Unloaded::Gone);
}
