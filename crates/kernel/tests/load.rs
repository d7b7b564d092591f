//! Loads the ports into the running kernel, runs loopback TCP through them,
//! and unloads them. Needs root, bpffs (mounted here if missing) and a
//! kernel with BTF and struct_ops; otherwise it says why and skips.
//!
//! Two cubic instances with different parameters run side by side.
//!
//! The instances are registered as `krt_reno` and `krt_cubic` rather than
//! the default `kr_reno` and `kr_cubic`, so the test neither trips over nor
//! unloads what an operator has loaded on the same machine.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::plan::plan;

const RENO: &str = "krt_reno";
const CUBIC: &str = "krt_cubic";
/// A second cubic, with other parameters, beside the first.
const CUBIC_VARIANT: &str = "krt_cubic_var";
const VARIANT_SPEC: &str = "cubic:hystart=hspp:friendly=newreno:beta=768";
const TRANSFER: usize = 50 << 20;

/// Why this machine cannot run the test, if it cannot.
fn skip_reason() -> Option<String> {
    if !kleinrock_kernel::CAN_LOAD {
        return Some("this build carries no BPF programs (no clang at build time)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("loading struct_ops needs root".into());
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF (/sys/kernel/btf/vmlinux), so no struct_ops".into());
    }
    let paths = Paths::system();
    if paths.check_bpffs().is_err() {
        let ok = Command::new("mount")
            .args(["-t", "bpf", "bpf"])
            .arg(&paths.bpffs)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Some("bpffs is not mounted and mounting it failed".into());
        }
        eprintln!("kernel test: mounted bpffs at {}", paths.bpffs.display());
    }
    None
}

fn available() -> Vec<String> {
    Paths::system().available().unwrap()
}

/// A loopback connection whose sender runs `ca`, set before connect so the
/// algorithm's init runs on the fresh socket.
fn connect_with(ca: &str, listener: &TcpListener) -> TcpStream {
    // SAFETY: plain socket calls on a descriptor we own; the option value
    // points into `ca` for the call's duration.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let rc = libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            ca.as_ptr().cast(),
            ca.len() as libc::socklen_t,
        );
        assert_eq!(
            rc,
            0,
            "TCP_CONGESTION {ca}: {}",
            std::io::Error::last_os_error()
        );
        let stream = TcpStream::from_raw_fd(fd);
        let port = listener.local_addr().unwrap().port();
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
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

/// The socket's congestion control, as getsockopt(TCP_CONGESTION) says.
fn congestion_of(s: &TcpStream) -> String {
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

/// Sends `bytes` through `ca` over loopback; returns what the receiver got
/// and the sender, still open.
fn transfer(ca: &str, bytes: usize) -> (usize, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut tx = connect_with(ca, &listener);
    let (mut rx, _) = listener.accept().unwrap();
    let sink = std::thread::spawn(move || {
        let mut got = 0;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match rx.read(&mut buf) {
                Ok(0) | Err(_) => return got,
                Ok(n) => got += n,
            }
            if got >= bytes {
                return got;
            }
        }
    });
    let chunk = vec![0x5au8; 1 << 20];
    let mut sent = 0;
    while sent < bytes {
        let n = chunk.len().min(bytes - sent);
        tx.write_all(&chunk[..n]).unwrap();
        sent += n;
    }
    (sink.join().unwrap(), tx)
}

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
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("iperf3 test skipped: iperf3 is not installed (apt-get install iperf3)");
        return;
    }
    const NAME: &str = "krt_cubic_ip";
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    kleinrock_kernel::load(&plan("cubic", Some(NAME)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-C", NAME, "-J"])
        .output()
        .unwrap();
    let _ = server.wait();
    let unloaded = Paths::system().unload(NAME, Duration::from_secs(2));
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "iperf3 failed: {json}");
    assert!(
        json.contains(&format!("\"sender_tcp_congestion\":\t\"{NAME}\""))
            || json.contains(&format!("\"sender_tcp_congestion\": \"{NAME}\"")),
        "iperf3 did not report {NAME}: {json}"
    );
    assert_eq!(unloaded.unwrap(), Unloaded::Gone);
}
