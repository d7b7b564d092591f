//! What the root-only kernel tests share: whether this machine can load
//! ports at all (what it lacks goes to [`kleinrock_testkit::require`]),
//! labs, loopback connections with a chosen congestion control,
//! bulk transfers through them, what the kernel reports about a socket, and
//! iperf3.
//!
//! Each test binary uses a different subset.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kleinrock_kernel::pins::Paths;
use kleinrock_lab::{ErrorKind, Lab, LabConfig};
use kleinrock_testkit::Missing;

/// `tcp_info.tcpi_options`: ECN was negotiated.
pub const TCPI_OPT_ECN: u8 = 8;
/// `tcp_info.tcpi_options`: an ECT or CE packet arrived.
pub const TCPI_OPT_ECN_SEEN: u8 = 16;
/// getsockopt(SOL_SOCKET, SO_MEMINFO): the socket's memory, `SK_MEMINFO_VARS`
/// counters (include/uapi/asm-generic/socket.h, linux/sock_diag.h).
const SO_MEMINFO: libc::c_int = 55;
const SK_MEMINFO_VARS: usize = 9;

/// What this machine lacks to run the kernel tests, if anything (see
/// [`kleinrock_testkit::require`]: a skip, or a failure where required).
/// Mounts bpffs when it is missing.
pub fn skip_reason() -> Option<Missing> {
    if let Some(m) = kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD) {
        return Some(m);
    }
    if let Some(m) = kleinrock_testkit::root() {
        return Some(Missing::new(
            "root",
            format!("loading struct_ops {}", m.reason),
        ));
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some(Missing::new(
            "btf",
            "the kernel has no BTF (/sys/kernel/btf/vmlinux), so no struct_ops",
        ));
    }
    if let Err(e) = Paths::system().ensure_bpffs() {
        return Some(Missing::new("bpffs", e.0));
    }
    None
}

/// iperf3, if it is missing.
pub fn iperf3() -> Option<Missing> {
    kleinrock_testkit::installed("iperf3", "iperf3")
}

/// A lab, or `None` when this process is not root (a skip, or a failure
/// where root is required). Any other error, the lab's tools missing
/// included, is a failure.
pub fn lab(config: &LabConfig) -> Option<Lab> {
    match Lab::new(config) {
        Ok(lab) => Some(lab),
        Err(e) if e.kind() == ErrorKind::Unprivileged => {
            kleinrock_testkit::require(Some(Missing::new("root", e.to_string())));
            None
        }
        Err(e) => panic!("lab: {e}"),
    }
}

/// A TCP port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

/// The first tool the tests that build paths in network namespaces use
/// that is missing, if one is.
pub fn missing_tools() -> Option<Missing> {
    use kleinrock_testkit::installed;
    installed("ip", "iproute2")
        .or_else(|| installed("tc", "iproute2"))
        .or_else(|| installed("iptables", "iptables"))
        .or_else(|| installed("bpftool", "bpftool"))
}

/// The kernel's tcp_available_congestion_control.
pub fn available() -> Vec<String> {
    Paths::system().available().unwrap()
}

/// setsockopt(TCP_CONGESTION).
fn set_congestion(fd: RawFd, ca: &str) {
    // SAFETY: the option value points into `ca` for the call's duration.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            ca.as_ptr().cast(),
            ca.len() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "TCP_CONGESTION {ca}: {}",
        std::io::Error::last_os_error()
    );
}

/// A loopback listener whose accepted sockets inherit `ca`.
pub fn listen_with(ca: &str) -> TcpListener {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    set_congestion(listener.as_raw_fd(), ca);
    listener
}

/// A loopback connection whose sender runs `ca`, set before connect so the
/// algorithm's init runs on the fresh socket.
pub fn connect_with(ca: &str, listener: &TcpListener) -> TcpStream {
    let port = listener.local_addr().unwrap().port();
    connect_to(ca, SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// A connection to `to` whose sender runs `ca`, set before connect.
pub fn connect_to(ca: &str, to: SocketAddrV4) -> TcpStream {
    // SAFETY: plain socket calls on a descriptor we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        set_congestion(fd, ca);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: to.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*to.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        stream
    }
}

/// Checks that a trace session ran cleanly (the command succeeded, nothing
/// lost or undecodable) and returns its busiest connection's file.
pub fn busiest_of<'a>(
    report: &'a kleinrock_kernel::trace::Report,
    what: &str,
) -> &'a kleinrock_kernel::trace::ConnFile {
    assert!(
        report.command_status.is_some_and(|s| s.success()),
        "{what}: the traced command failed"
    );
    assert_eq!(report.lost, 0, "{what}: records lost");
    assert_eq!(
        report.summary.undecodable, 0,
        "{what}: {:?}",
        report.summary
    );
    report
        .summary
        .files
        .iter()
        .max_by_key(|f| f.rows)
        .unwrap_or_else(|| panic!("{what}: no connection traced: {:?}", report.summary))
}

/// The socket's congestion control, as getsockopt(TCP_CONGESTION) says.
pub fn congestion_of(s: &TcpStream) -> String {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "getsockopt: {}", std::io::Error::last_os_error());
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// getsockopt(TCP_INFO).
pub fn tcp_info(s: &TcpStream) -> libc::tcp_info {
    // SAFETY: tcp_info is plain data; the kernel fills at most len bytes.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
        info
    }
}

/// The socket's option memory (`sk_omem_alloc`, `ss -m`'s `o`), which
/// socket-local BPF storage is charged to.
pub fn optmem(s: &TcpStream) -> u32 {
    let mut info = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: info and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "SO_MEMINFO: {}", std::io::Error::last_os_error());
    info[libc::SK_MEMINFO_OPTMEM as usize]
}

/// setsockopt(SO_SNDBUF): the kernel allows twice `bytes` of data queued
/// and in flight.
pub fn limit_send_buffer(s: &TcpStream, bytes: u32) {
    let v = bytes as libc::c_int;
    // SAFETY: the option value points at v for the call's duration.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_SNDBUF: {}", std::io::Error::last_os_error());
}

/// setsockopt(TCP_CONGESTION) on an open connection.
pub fn switch_congestion(s: &TcpStream, ca: &str) {
    set_congestion(s.as_raw_fd(), ca);
}

/// Sends `bytes` from `tx` to `rx`; returns what `rx` received, and `rx`.
pub fn send(tx: &mut TcpStream, mut rx: TcpStream, bytes: usize) -> (usize, TcpStream) {
    let sink = std::thread::spawn(move || {
        let mut got = 0;
        let mut buf = vec![0u8; 1 << 20];
        while got < bytes {
            match rx.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        (got, rx)
    });
    let chunk = vec![0x5au8; 1 << 20];
    let mut sent = 0;
    while sent < bytes {
        let n = chunk.len().min(bytes - sent);
        tx.write_all(&chunk[..n]).unwrap();
        sent += n;
    }
    sink.join().unwrap()
}

/// Sends `bytes` through `ca` over loopback (the receiver runs the
/// namespace's default); returns what the receiver got and the sender,
/// still open.
pub fn transfer(ca: &str, bytes: usize) -> (usize, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut tx = connect_with(ca, &listener);
    let (rx, _) = listener.accept().unwrap();
    let (got, _) = send(&mut tx, rx, bytes);
    (got, tx)
}

/// The ids of the kernel's struct_ops maps named `map` (`bpftool struct_ops
/// list` prints the map's name, the struct variable of the BPF source, not
/// the registered name).
pub fn struct_ops_ids(map: &str) -> Vec<u64> {
    let out = Command::new("bpftool")
        .args(["-j", "struct_ops", "list"])
        .output()
        .expect("bpftool runs");
    assert!(out.status.success(), "bpftool: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    // [{"id":336,"name":"kr_cubic","kernel_struct_ops":"tcp_congestion_ops"},...]
    text.split('{')
        .filter(|entry| entry.contains(&format!("\"name\":\"{map}\"")))
        .filter_map(|entry| {
            let id = entry.split("\"id\":").nth(1)?;
            id.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        })
        .collect()
}

/// Waits up to 2 s for the struct_ops maps `ids` to be freed (the kernel
/// frees them from a workqueue after the last link and socket let go).
pub fn wait_freed(map: &str, ids: &[u64]) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<u64> = struct_ops_ids(map)
            .into_iter()
            .filter(|id| ids.contains(id))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A one-second iperf3 run over loopback with `-C ca`; returns iperf3's
/// JSON report, or panics with it when iperf3 fails.
pub fn iperf3_with(ca: &str) -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out: Output = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-C", ca, "-J"])
        .output()
        .unwrap();
    let _ = server.wait();
    let json = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "iperf3 failed: {json}");
    json
}

/// Does iperf3's JSON report `key` (`sender_tcp_congestion`) as `value`?
pub fn json_says(json: &str, key: &str, value: &str) -> bool {
    json.contains(&format!("\"{key}\":\t\"{value}\""))
        || json.contains(&format!("\"{key}\": \"{value}\""))
}

/// Routes loopback traffic of the calling thread's namespace through `ca`
/// (`ip route ... congctl`): sockets accepted by any listener, iperf3's
/// server among them, then run `ca` too.
pub fn route_loopback_through(ca: &str) {
    let ok = Command::new("ip")
        .args(["route", "replace", "local", "127.0.0.1", "dev", "lo"])
        .args(["table", "local", "proto", "kernel", "scope", "host"])
        .args(["src", "127.0.0.1", "congctl", ca])
        .status()
        .expect("ip runs");
    assert!(ok.success(), "ip route ... congctl {ca}");
}

/// Makes loopback of the calling thread's namespace a `mbit` Mbit/s
/// bottleneck (tc tbf, 1500-byte MTU) with a queue too long to overflow in
/// a test: RTTs then grow with the queue, and nothing is lost.
pub fn bottleneck_loopback(mbit: u32) {
    let rate = format!("{mbit}mbit");
    let tbf = [
        "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", &rate, "burst", "10kb", "limit",
        "20mb",
    ];
    for (cmd, args) in [
        ("ip", &["link", "set", "lo", "mtu", "1500"][..]),
        ("tc", &tbf),
    ] {
        let ok = Command::new(cmd)
            .args(args)
            .status()
            .expect("ip and tc run");
        assert!(ok.success(), "{cmd} {args:?}");
    }
}

/// Drops, at random, `percent` of the non-SYN segments to `port` in the
/// calling thread's namespace (iptables' statistic match), so that a
/// connection there meets loss recovery and its algorithm's ssthresh.
pub fn drop_to_port(port: u16, percent: u32) {
    at_random(&["-A", "INPUT", "-i", "lo"], port, percent, &["-j", "DROP"]);
}

/// Marks CE, at random, on `percent` of the non-SYN segments to `port`
/// (the TOS target rewriting the ECN bits), as an AQM would.
pub fn mark_ce_to_port(port: u16, percent: u32) {
    at_random(
        &["-t", "mangle", "-A", "OUTPUT"],
        port,
        percent,
        &["-j", "TOS", "--set-tos", "0x03/0x03"],
    );
}

/// An iptables rule `chain` ... `target` for `percent` of the non-SYN TCP
/// segments to `port`.
fn at_random(chain: &[&str], port: u16, percent: u32, target: &[&str]) {
    let ok = Command::new("iptables")
        .args(chain)
        .args(["-p", "tcp", "!", "--syn", "--dport", &port.to_string()])
        .args(["-m", "statistic", "--mode", "random", "--probability"])
        .arg(format!("0.{percent:02}"))
        .args(target)
        .status()
        .expect("iptables runs");
    assert!(ok.success(), "iptables {chain:?} --dport {port} {target:?}");
}

/// Runs `f` on a thread of its own in a fresh network namespace with
/// loopback up and the given sysctls (`("net/ipv4/tcp_ecn", "0")`) set;
/// processes the thread starts run there too. The registered congestion
/// controls are the kernel's, shared by every namespace.
pub fn in_new_netns<T: Send + 'static>(
    sysctls: &[(&str, &str)],
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let sysctls: Vec<(String, String)> = sysctls
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    std::thread::spawn(move || {
        // SAFETY: unshare affects only this thread's namespaces.
        let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "unshare: {}", std::io::Error::last_os_error());
        let up = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("ip runs");
        assert!(up.success(), "ip link set lo up");
        for (key, value) in &sysctls {
            // /proc/sys/net follows the opening thread's namespace.
            std::fs::write(Path::new("/proc/sys").join(key), value)
                .unwrap_or_else(|e| panic!("sysctl {key}={value}: {e}"));
        }
        f()
    })
    .join()
    .unwrap()
}
