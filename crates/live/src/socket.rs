//! The socket options the lab's traffic is made with, and `TCP_INFO`.
//!
//! std's sockets connect or listen the moment they are made, and the
//! options that shape a connection (its congestion control, its MSS, its
//! receive window clamp) must be set before the handshake, so TCP sockets
//! are made here with libc and handed to std afterwards. `TCP_INFO` is the
//! lab's reader (`kleinrock_lab::TcpInfo`).

use std::io;
use std::mem::{size_of, size_of_val};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, SystemTime};

/// `SO_MAX_PACING_RATE`'s value that asks the kernel to pace the socket at
/// its own `sk_pacing_rate`: any value but `~0` moves `sk_pacing_status`
/// from `SK_PACING_NONE` to `SK_PACING_NEEDED` (net/core/sock.c), and a
/// cap of 2^64 - 2 bytes/s caps nothing.
const PACE_AT_OWN_RATE: u64 = u64::MAX - 1;

/// The options of one end of a connection, set before its handshake.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// `TCP_CONGESTION`: the algorithm's name in the kernel.
    pub congestion: String,
    /// `TCP_MAXSEG`: the MSS option this end sends (payload plus the
    /// timestamp option's 12 bytes).
    pub maxseg: Option<u32>,
    /// The largest receive window advertised, bytes: `TCP_WINDOW_CLAMP`,
    /// and a fixed receive buffer four times as large (`SO_RCVBUFFORCE`),
    /// since receive-buffer autotuning raises the clamp as it grows the
    /// buffer of a socket whose buffer is not fixed.
    pub window_clamp: Option<u32>,
    /// `TCP_NOTSENT_LOWAT`: unsent bytes a writer may queue.
    pub notsent_lowat: Option<u32>,
    /// Pace at the kernel's own pacing rate (`SO_MAX_PACING_RATE`).
    pub pace: bool,
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live T and the kernel reads size_of::<T>() bytes.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

fn set_name(fd: RawFd, what: &str) -> io::Result<()> {
    // SAFETY: the kernel reads at most the given length of the name.
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            what.as_ptr().cast(),
            what.len() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// The congestion control a TCP socket runs (`getsockopt(TCP_CONGESTION)`).
pub fn congestion(socket: &impl AsFd) -> io::Result<String> {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: name and len are valid; the kernel writes at most len bytes.
    check(unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    let name = &name[..(len as usize).min(name.len())];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// Sets `opts` on a TCP socket; an error names the option.
pub fn apply(fd: RawFd, opts: &TcpOptions) -> io::Result<()> {
    let named = |what: &str, r: io::Result<()>| {
        r.map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))
    };
    if !opts.congestion.is_empty() {
        named(
            &format!("TCP_CONGESTION {}", opts.congestion),
            set_name(fd, &opts.congestion),
        )?;
    }
    let tcp = libc::IPPROTO_TCP;
    if let Some(m) = opts.maxseg {
        named(
            "TCP_MAXSEG",
            setsockopt(fd, tcp, libc::TCP_MAXSEG, &(m as libc::c_int)),
        )?;
    }
    if let Some(w) = opts.window_clamp {
        // The kernel doubles the buffer asked for and counts about half of
        // a buffer as window: four times the window leaves room.
        let buffer = (w as u64 * 4).min(i32::MAX as u64 / 2) as libc::c_int;
        named(
            "SO_RCVBUFFORCE",
            setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &buffer),
        )?;
        let w = w.min(i32::MAX as u32) as libc::c_int;
        named(
            "TCP_WINDOW_CLAMP",
            setsockopt(fd, tcp, libc::TCP_WINDOW_CLAMP, &w),
        )?;
    }
    if let Some(l) = opts.notsent_lowat {
        named(
            "TCP_NOTSENT_LOWAT",
            setsockopt(fd, tcp, libc::TCP_NOTSENT_LOWAT, &(l as libc::c_int)),
        )?;
    }
    apply_pacing(&fd, opts)
}

/// Sets `TCP_WINDOW_CLAMP` to `window` again. Since Linux 6.10 the
/// kernel recomputes a connection's clamp from its receive buffer whenever
/// it re-estimates the buffer's overhead (`scaling_ratio`, in
/// `tcp_measure_rcv_mss()`), which it does on the first segments of data:
/// the reader sets it back after each read (a call that changes nothing
/// when the clamp holds).
pub fn clamp_window(socket: &impl AsFd, window: u32) -> io::Result<()> {
    let w = window.min(i32::MAX as u32) as libc::c_int;
    setsockopt(
        socket.as_fd().as_raw_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_WINDOW_CLAMP,
        &w,
    )
}

/// Asks the kernel to pace the socket, if `opts` say so: a socket's own
/// state, which an accepted socket does not take from its listener.
pub fn apply_pacing(socket: &impl AsRawFd, opts: &TcpOptions) -> io::Result<()> {
    if !opts.pace {
        return Ok(());
    }
    let fd = socket.as_raw_fd();
    setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_MAX_PACING_RATE,
        &PACE_AT_OWN_RATE,
    )
    .map_err(|e| io::Error::new(e.kind(), format!("SO_MAX_PACING_RATE: {e}")))
}

/// A new IPv4 socket of `kind` (`SOCK_STREAM`, ...) and `protocol`.
fn socket(kind: libc::c_int, protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) has no memory preconditions; a valid descriptor is
    // owned by the OwnedFd from here on.
    let fd = check(unsafe { libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, protocol) })?;
    // SAFETY: fd was just returned by socket(2) and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn bind(fd: RawFd, addr: SocketAddrV4) -> io::Result<()> {
    let sa = sockaddr(addr);
    // SAFETY: sa is a valid sockaddr_in for the call.
    check(unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A listener on `addr` whose accepted connections inherit `opts` (each
/// of these options is copied from the listener to the connections it
/// accepts, and reaches the SYN-ACK).
pub fn listen(addr: SocketAddrV4, opts: &TcpOptions) -> io::Result<TcpListener> {
    let fd = socket(libc::SOCK_STREAM, 0)?;
    setsockopt(
        fd.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_REUSEADDR,
        &(1 as libc::c_int),
    )?;
    apply(fd.as_raw_fd(), opts)?;
    bind(fd.as_raw_fd(), addr)?;
    // SAFETY: listen(2) on a bound socket we own.
    check(unsafe { libc::listen(fd.as_raw_fd(), 16) })?;
    Ok(TcpListener::from(fd))
}

/// A connection to `to` made with `opts` set before its SYN.
pub fn connect(to: SocketAddrV4, opts: &TcpOptions) -> io::Result<TcpStream> {
    let fd = socket(libc::SOCK_STREAM, 0)?;
    apply(fd.as_raw_fd(), opts)?;
    let sa = sockaddr(to);
    // SAFETY: sa is a valid sockaddr_in for the call.
    check(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })?;
    Ok(TcpStream::from(fd))
}

/// A raw ICMP socket that receives only echo replies (`ICMP_FILTER`),
/// each stamped by the kernel as it arrives (`SO_TIMESTAMPNS`, as
/// iputils' ping asks): a reader woken late, as a thread may be by up to
/// a scheduler tick, still reads when its reply came.
pub fn icmp() -> io::Result<OwnedFd> {
    let fd = socket(libc::SOCK_RAW, libc::IPPROTO_ICMP)?;
    // ICMP_FILTER (linux/icmp.h): a bitmask of the types *not* wanted.
    const ICMP_FILTER: libc::c_int = 1;
    const ECHO_REPLY: u32 = 0;
    let mask: u32 = !(1 << ECHO_REPLY);
    setsockopt(fd.as_raw_fd(), libc::SOL_RAW, ICMP_FILTER, &mask)?;
    setsockopt(
        fd.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPNS,
        &(1 as libc::c_int),
    )?;
    Ok(fd)
}

/// Sends `buf` to `to` on a raw or datagram socket.
pub fn send_to(fd: &impl AsFd, buf: &[u8], to: Ipv4Addr) -> io::Result<usize> {
    let sa = sockaddr(SocketAddrV4::new(to, 0));
    // SAFETY: buf and sa are valid for the call.
    check(unsafe {
        libc::sendto(
            fd.as_fd().as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            0,
            (&sa as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) as libc::c_int
    })
    .map(|n| n as usize)
}

/// Waits up to `timeout_ms` for `fd` to be readable; true if it is.
pub fn readable(fd: &impl AsFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    match unsafe { libc::poll(&mut p, 1, timeout_ms) } {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// Reads one packet without blocking, with the time the kernel received
/// it (CLOCK_REALTIME) if the socket asked for it (`SO_TIMESTAMPNS`):
/// `None` if no packet waits.
pub fn recv_stamped(
    fd: &impl AsFd,
    buf: &mut [u8],
) -> io::Result<Option<(usize, Option<SystemTime>)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one timespec's control message, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; its pointers are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: msg points at live buffers of the lengths it gives.
    let n = unsafe { libc::recvmsg(fd.as_fd().as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within
    // the length it set; a timestamp's data is one timespec.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(
                    SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                );
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some((n as usize, stamp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_loopback_connection_made_with_options_reports_them() {
        let opts = TcpOptions {
            congestion: "reno".into(),
            maxseg: Some(1000 + 12),
            window_clamp: Some(200_000),
            notsent_lowat: Some(64 << 10),
            pace: true,
        };
        let listener = listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), &opts).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut tx = connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port), &opts).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        tx.write_all(&[1u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        rx.read_exact(&mut got).unwrap();
        let i = kleinrock_lab::TcpInfo::of(&tx).unwrap();
        // The MSS option less the timestamps' 12 bytes.
        assert_eq!(i.snd_mss, 1000);
        assert_eq!(congestion(&tx).unwrap(), "reno");
        // The acknowledged count includes the SYN's sequence number; the
        // received count only data.
        assert_eq!(i.bytes_acked, 100_001);
        assert_eq!(
            kleinrock_lab::TcpInfo::of(&rx).unwrap().bytes_received,
            100_000
        );
        assert!(i.data_segs_out >= 100);
    }
}
