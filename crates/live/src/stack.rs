//! The TCP settings a scenario names, made inside the lab's namespaces:
//! per-namespace sysctls, the default routes' metrics, and the veths'
//! offloads. Nothing here touches the host's namespace.
//!
//! | scenario | in the lab |
//! | --- | --- |
//! | `init_cwnd` | route `initcwnd` (and `initrwnd`, so that the receiver's first window does not cap it at the kernel's 10 segments) on both ends' default routes |
//! | `delayed_ack = "off"` | route `quickack 1`: every segment ACKed at once |
//! | `ecn` | `net.ipv4.tcp_ecn=1` at both ends; `peer_ecn = false`: `0` at both |
//! | `slow_start_after_idle` | `net.ipv4.tcp_slow_start_after_idle` at both ends |
//! | (buffers) | `tcp_rmem` and `tcp_wmem` large enough for the path's BDP and queue, so that neither end's autotuning limits a flow the simulator's unlimited buffers would not |
//!
//! Offloads: TSO, GSO and GRO are turned off on all four veths. With TSO
//! or GSO the sender builds up to 64 KB segments and defers sending to
//! fill them (`tcp_tso_should_defer`), which the simulator's TCP, sending
//! a segment at a time, does not; GRO at a receiver would merge segments
//! before TCP sees them and halve its ACKs. The delay line segments
//! anything larger than the MTU anyway (its TUNs have no offloads), so
//! only the timing, not the bottleneck, would differ.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use kleinrock_lab::{
    Lab, Node, RECEIVER_IF, ROUTER_RECEIVER_SIDE_ADDR, ROUTER_RECEIVER_SIDE_IF,
    ROUTER_SENDER_SIDE_ADDR, ROUTER_SENDER_SIDE_IF, SENDER_IF,
};

use crate::plan::Plan;
use crate::Error;

/// The kernel's default initial receive window, in segments
/// (`TCP_DEFAULT_INIT_RCVWND`).
const INIT_RCVWND: u32 = 10;

/// Makes `plan`'s TCP settings in `lab`.
pub fn configure(lab: &Lab, plan: &Plan) -> Result<(), Error> {
    let cfg = &plan.config;
    let ends = [lab.sender(), lab.receiver()];
    let ecn = match (cfg.peer_ecn, cfg.ecn) {
        (false, _) => Some("0"),
        (true, true) => Some("1"),
        // The kernel's default, 2: ECN when the peer asks (DCTCP does).
        (true, false) => None,
    };
    let buffer = plan.buffer_bytes.to_string();
    for n in ends {
        if let Some(v) = ecn {
            n.sysctl("net.ipv4.tcp_ecn", v)?;
        }
        let idle = if cfg.slow_start_after_idle { "1" } else { "0" };
        n.sysctl("net.ipv4.tcp_slow_start_after_idle", idle)?;
        n.sysctl("net.ipv4.tcp_rmem", &format!("4096 131072 {buffer}"))?;
        n.sysctl("net.ipv4.tcp_wmem", &format!("4096 16384 {buffer}"))?;
    }
    let metrics = format!(
        "initcwnd {} initrwnd {}{}",
        cfg.init_cwnd,
        cfg.init_cwnd.max(INIT_RCVWND),
        if cfg.delayed_acks { "" } else { " quickack 1" }
    );
    for (n, via, dev) in [
        (lab.sender(), ROUTER_SENDER_SIDE_ADDR, SENDER_IF),
        (lab.receiver(), ROUTER_RECEIVER_SIDE_ADDR, RECEIVER_IF),
    ] {
        lab.ip(
            n,
            &format!("route replace default via {via} dev {dev} {metrics}"),
        )?;
    }
    for (n, dev) in [
        (lab.sender(), SENDER_IF),
        (lab.router(), ROUTER_SENDER_SIDE_IF),
        (lab.router(), ROUTER_RECEIVER_SIDE_IF),
        (lab.receiver(), RECEIVER_IF),
    ] {
        offloads_off(n, dev)?;
    }
    Ok(())
}

/// The legacy ethtool commands that set one offload (include/uapi/linux/
/// ethtool.h), still served by the kernel's ethtool ioctl.
const OFFLOADS: [(&str, u32); 3] = [("TSO", 0x1f), ("GSO", 0x24), ("GRO", 0x2c)];

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with its union as `ifr_data`, padded to the kernel's 40
/// bytes.
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

/// Turns TSO, GSO and GRO off on `dev` inside `node` (what `ethtool -K
/// dev tso off gso off gro off` does, without needing ethtool).
fn offloads_off(node: &Node, dev: &str) -> Result<(), Error> {
    let result = node.run(|| -> io::Result<()> {
        // SAFETY: socket(2) has no memory preconditions.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor nobody else owns.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        for (what, cmd) in OFFLOADS {
            let mut value = EthtoolValue { cmd, data: 0 };
            let mut req = IfReq {
                name: [0; 16],
                data: &mut value,
                _pad: [0; 16],
            };
            req.name[..dev.len()].copy_from_slice(dev.as_bytes());
            // SAFETY: req and the value it points at live across the call.
            let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
            }
        }
        Ok(())
    })?;
    result.map_err(|e| {
        Error::failed(format!(
            "cannot turn off an offload on {dev} in {}: {e}",
            node.name()
        ))
    })
}
