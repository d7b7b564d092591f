//! The programs and privileges the lab needs, found once before anything is
//! created, and how a command's failure becomes one sentence.
//!
//! The lab shells out to iproute2's `ip` and `tc` and to iptables rather
//! than speaking rtnetlink and nftables itself: those tools are what a
//! reader would type to reproduce or inspect a lab, and their error
//! messages are the ones such a reader knows.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Error, ErrorKind};

/// Where the lab's tools were found.
#[derive(Clone, Debug)]
pub(crate) struct Tools {
    pub ip: PathBuf,
    pub tc: PathBuf,
    /// `iptables-restore`, or its `-nft` / `-legacy` variant.
    pub iptables_restore: PathBuf,
}

/// The TUN device the delay line opens.
pub(crate) const TUN: &str = "/dev/net/tun";

/// Checks, in order, that this process is root, that `ip`, `tc` and
/// iptables are installed, and that the kernel offers TUN; the first
/// problem found is the error.
pub(crate) fn preflight() -> Result<Tools, Error> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let found = |names: &[&str]| names.iter().find_map(|n| find(n));
    check(
        euid,
        found(&["ip"]),
        found(&["tc"]),
        found(&[
            "iptables-restore",
            "iptables-nft-restore",
            "iptables-legacy-restore",
        ]),
        Path::new(TUN).exists(),
    )
}

/// [`preflight`]'s decision, apart from where its facts come from.
fn check(
    euid: u32,
    ip: Option<PathBuf>,
    tc: Option<PathBuf>,
    iptables_restore: Option<PathBuf>,
    tun: bool,
) -> Result<Tools, Error> {
    if euid != 0 {
        return Err(Error::new(
            ErrorKind::Unprivileged,
            "a lab needs root (network namespaces, veth pairs, tc and iptables need \
             CAP_SYS_ADMIN and CAP_NET_ADMIN); run it as root or with sudo",
        ));
    }
    let mut missing = Vec::new();
    if ip.is_none() {
        missing.push("`ip` (apt-get install iproute2)");
    }
    if tc.is_none() && ip.is_some() {
        missing.push("`tc` (apt-get install iproute2)");
    }
    if iptables_restore.is_none() {
        missing.push("`iptables-restore` (apt-get install iptables)");
    }
    if !missing.is_empty() {
        return Err(Error::new(
            ErrorKind::Missing,
            format!(
                "a lab needs {}, which this machine lacks; install {}",
                missing.join(" and "),
                if missing.len() == 1 { "it" } else { "them" }
            ),
        ));
    }
    if !tun {
        return Err(Error::new(
            ErrorKind::Missing,
            format!(
                "a lab's delay line needs {TUN}, which this machine lacks; \
                 load the tun module (modprobe tun)"
            ),
        ));
    }
    Ok(Tools {
        ip: ip.unwrap_or_default(),
        tc: tc.unwrap_or_default(),
        iptables_restore: iptables_restore.unwrap_or_default(),
    })
}

/// `name` on PATH, or in the sbin directories a non-login root shell may
/// leave out of it.
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `cmd` to completion, feeding it `stdin`; a failure is one sentence
/// naming the command (and the namespace it ran in, if any) and quoting its
/// stderr.
pub(crate) fn run(
    cmd: &mut Command,
    stdin: Option<&str>,
    netns: Option<&str>,
) -> Result<(), Error> {
    let described = describe(cmd, netns);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::failed(format!("cannot start {described}: {e}")))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error shows up as the command's own failure below.
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::failed(format!("cannot wait for {described}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stderr = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    let stderr = stderr.trim_end_matches('.');
    Err(Error::failed(if stderr.is_empty() {
        format!("{described} failed ({})", out.status)
    } else {
        format!("{described} failed: {stderr}")
    }))
}

/// `` `tc qdisc replace dev rtr-rcv ...` in krlab-...-rtr ``
fn describe(cmd: &Command, netns: Option<&str>) -> String {
    let program = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(OsStr::new("?"))
        .to_string_lossy()
        .into_owned();
    let words: Vec<String> = std::iter::once(program)
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect();
    match netns {
        Some(ns) => format!("`{}` in {ns}", words.join(" ")),
        None => format!("`{}`", words.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(p: &str) -> Option<PathBuf> {
        Some(PathBuf::from(p))
    }

    #[test]
    fn not_root_is_the_first_thing_said() {
        let e = check(1000, None, None, None, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unprivileged);
        assert_eq!(
            e.to_string(),
            "a lab needs root (network namespaces, veth pairs, tc and iptables need \
             CAP_SYS_ADMIN and CAP_NET_ADMIN); run it as root or with sudo"
        );
    }

    #[test]
    fn missing_tools_are_named_with_their_package() {
        let e = check(0, None, None, None, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Missing);
        assert_eq!(
            e.to_string(),
            "a lab needs `ip` (apt-get install iproute2) and `iptables-restore` \
             (apt-get install iptables), which this machine lacks; install them"
        );
        let e = check(0, some("/ip"), None, some("/r"), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a lab needs `tc` (apt-get install iproute2), which this machine lacks; install it"
        );
        let e = check(0, some("/ip"), some("/tc"), some("/r"), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a lab's delay line needs /dev/net/tun, which this machine lacks; \
             load the tun module (modprobe tun)"
        );
        assert!(check(0, some("/ip"), some("/tc"), some("/r"), true).is_ok());
    }

    #[test]
    fn a_failed_command_is_one_sentence_with_its_stderr() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "echo 'RTNETLINK answers: File exists' >&2; exit 2"]);
        let e = run(&mut cmd, None, Some("krlab-1-2-0-rtr")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`sh -c echo 'RTNETLINK answers: File exists' >&2; exit 2` in krlab-1-2-0-rtr \
             failed: RTNETLINK answers: File exists"
        );
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "read line; test \"$line\" = hello"]);
        run(&mut cmd, Some("hello\n"), None).unwrap();
        let e = run(&mut Command::new("/nonexistent/tool"), None, None).unwrap_err();
        assert!(e.to_string().starts_with("cannot start `tool`: "), "{e}");
    }
}
