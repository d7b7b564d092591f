//! What the root-only kernel tests share: whether this machine can run
//! them, and a free TCP port.

use std::path::Path;
use std::process::Command;

use kleinrock_kernel::pins::Paths;

/// Why this machine cannot load struct_ops programs, if it cannot. Mounts
/// bpffs if it is missing.
pub fn skip_reason() -> Option<String> {
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
    }
    None
}

/// A TCP port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}
