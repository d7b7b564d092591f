//! The delay line's TUN devices, one per direction in the router: created
//! by a thread inside the router's namespace (a TUN belongs to the
//! namespace of whoever creates it), in `IFF_TUN | IFF_NO_PI` mode (IP
//! packets, no header), with NAPI (`IFF_NAPI`) run by a kernel thread.
//!
//! Why NAPI in a thread. A packet written into a TUN is received by the
//! kernel as if it had arrived on that device: forwarded to the other
//! veth and, since veth hands packets straight to its peer, received by
//! the endpoint's TCP. Without NAPI all of that runs inside the delay
//! line's write(2), on its thread: at 10-15 us a packet here, one thread
//! forwarding and receiving for both endpoints saturates below 1 Gbit/s
//! and releases late (p99 ~1 ms at a 1 Gbit/s bottleneck). With
//! `IFF_NAPI` a write only queues the packet and schedules the device's
//! NAPI instance; made threaded (`/sys/class/net/<dev>/threaded`), that
//! instance runs in a kernel thread (`napi/dly-fwd-0`), where the
//! forwarding and the endpoint's receive processing happen, as they would
//! in a NIC's softirq. The delay line's own cost falls to a copy and a
//! queueing per packet. The NAPI threads are put at SCHED_FIFO priority 1,
//! like the delay line's, so that ordinary work on the machine does not
//! hold the forwarding back (a softirq would preempt it too).
//!
//! GRO. A NAPI device merges consecutive segments of a flow (GRO) unless
//! told not to; the lab turns it off by default, so that the receiver sees
//! each segment as the bottleneck released it and acknowledges as the
//! simulator's receiver does (every second segment), and on with
//! [`crate::LabConfig::gro`], as a NIC with GRO would: faster, but the
//! receiver then acknowledges per merged packet.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

use crate::delay::set_fifo;
use crate::netns::Node;
use crate::tools::{self, Tools};
use crate::Error;

/// The TUN devices, forward (sender to receiver) then reverse.
pub(crate) const TUNS: [&str; 2] = ["dly-fwd", "dly-rev"];

/// `IFF_NAPI` (linux/if_tun.h): receive written packets through NAPI.
const IFF_NAPI: libc::c_int = 0x0010;

/// `SIOCETHTOOL` and the legacy `ETHTOOL_SGRO` command (linux/ethtool.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_SGRO: u32 = 0x0000_002c;

/// Creates TUN device `name` in the calling thread's network namespace and
/// returns its descriptor (non-blocking, close-on-exec).
pub(crate) fn open(name: &str) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated constant path.
    let raw = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut ifr = ifreq(name)?;
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | IFF_NAPI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we pass.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// An ifreq naming `name`, its other fields zero.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= ifr.ifr_name.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(ifr)
}

/// Turns GRO on the TUNs on or off; runs inside the router's namespace.
fn set_gro(on: bool) -> io::Result<()> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: socket has no memory preconditions.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    for name in TUNS {
        let mut value = EthtoolValue {
            cmd: ETHTOOL_SGRO,
            data: u32::from(on),
        };
        let mut ifr = ifreq(name)?;
        ifr.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
        // SAFETY: SIOCETHTOOL reads the ifreq and the command it points to,
        // both live across the call.
        if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut ifr) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sets GRO as asked, runs the TUNs' NAPI in kernel threads and raises
/// them to SCHED_FIFO. Only GRO is required: without threaded NAPI (a
/// kernel before 5.12) the forwarding runs in the delay line's thread, as
/// it did before, and the lab works, slower.
pub(crate) fn tune(tools: &Tools, router: &Node, gro: bool) -> Result<(), Error> {
    router.run(|| set_gro(gro))?.map_err(|e| {
        Error::failed(format!(
            "cannot set GRO on the TUNs in {}: {e}",
            router.name()
        ))
    })?;
    // sysfs shows the namespace of whoever mounted it, so the write needs
    // a mount namespace with the router's: `ip netns exec` makes one.
    let mut tee = Command::new(&tools.ip);
    tee.args(["netns", "exec", router.name(), "tee"])
        .args(TUNS.map(|t| format!("/sys/class/net/{t}/threaded")));
    if tools::run(&mut tee, Some("1\n"), None).is_err() {
        return Ok(());
    }
    raise_napi_threads();
    Ok(())
}

/// Every lab's TUN NAPI threads (`napi/dly-fwd-<id>`, `napi/dly-rev-<id>`:
/// the names exist only in labs' namespaces) at SCHED_FIFO 1. Which of
/// them are this lab's cannot be told from outside (a TUN's NAPI id is
/// not shown), and every lab wants the same.
fn raise_napi_threads() {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if TUNS.iter().any(|t| comm.starts_with(&format!("napi/{t}-"))) {
            set_fifo(pid);
        }
    }
}
