//! Opening, parameterising, loading and pinning a BPF port.
//!
//! Each load opens a fresh copy of the port's BPF object, so every instance
//! has its own read-only parameters and its own struct_ops map: `kr_cubic`
//! and `kr_cubic_nohs` are two objects that share only source code. The
//! struct_ops map's `.name` is overwritten in the open skeleton, before
//! load, because the kernel registers the algorithm under that name when
//! the map is attached.

use crate::ca::{self, Layout};
use crate::pins::{self, Paths};
use crate::plan::{Native, Plan, Port};
use crate::{Error, Loaded};
use kleinrock_cc::cdg::CdgParams;
use kleinrock_cc::cubic::{CubicParams, Friendly, SlowStartExit};
use kleinrock_cc::dctcp::DctcpParams;
use kleinrock_cc::htcp::HtcpParams;
use kleinrock_cc::reno::RenoParams;
use kleinrock_cc::vegas::VegasParams;
use libbpf_rs::btf::Btf;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapMut, PrintLevel};
use std::fs;
use std::mem::MaybeUninit;
use std::sync::Mutex;

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod reno_skel {
    include!(concat!(env!("OUT_DIR"), "/reno.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod cubic_skel {
    include!(concat!(env!("OUT_DIR"), "/cubic.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod native_reno_skel {
    include!(concat!(env!("OUT_DIR"), "/native_reno.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod native_cubic_skel {
    include!(concat!(env!("OUT_DIR"), "/native_cubic.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod native_bbr_skel {
    include!(concat!(env!("OUT_DIR"), "/native_bbr.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod bbr_skel {
    include!(concat!(env!("OUT_DIR"), "/bbr.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod dctcp_skel {
    include!(concat!(env!("OUT_DIR"), "/dctcp.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod htcp_skel {
    include!(concat!(env!("OUT_DIR"), "/htcp.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod vegas_skel {
    include!(concat!(env!("OUT_DIR"), "/vegas.skel.rs"));
}

#[allow(clippy::all, unsafe_op_in_unsafe_fn)]
mod cdg_skel {
    include!(concat!(env!("OUT_DIR"), "/cdg.skel.rs"));
}

/// cubic.bpf.c's `friendly` values.
fn friendly_value(f: Friendly) -> u32 {
    match f {
        Friendly::Linux => 0,
        Friendly::Eq4 => 1,
        Friendly::NewReno => 2,
        Friendly::Off => 3,
    }
}

/// cubic.bpf.c's `slow_start_exit` values.
fn slow_start_exit_value(s: SlowStartExit) -> u32 {
    match s {
        SlowStartExit::Off => 0,
        SlowStartExit::Linux => 1,
        SlowStartExit::HystartPP => 2,
    }
}

/// libbpf's warnings (the verifier's log among them), kept for the error
/// message instead of scrolled over the terminal.
static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn keep_libbpf_message(_level: PrintLevel, msg: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        log.push_str(&msg);
    }
}

/// Where the running kernel publishes its BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Refuses, in one sentence, a kernel that cannot take a BPF congestion
/// control: without BTF libbpf cannot relocate the programs, and without
/// the kernel's `bpf_struct_ops_tcp_congestion_ops` there is nothing to
/// register them with (Linux before 5.6, or built without BPF JIT).
pub fn check_struct_ops(vmlinux_btf: &std::path::Path) -> Result<(), Error> {
    let btf = Btf::from_path(vmlinux_btf).map_err(|e| {
        Error(format!(
            "this kernel has no readable BTF at {} ({e}), which BPF congestion control \
             needs: use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Linux 5.6 or later)",
            vmlinux_btf.display()
        ))
    })?;
    let found: Option<libbpf_rs::btf::types::Struct<'_>> =
        btf.type_by_name("bpf_struct_ops_tcp_congestion_ops");
    if found.is_none() {
        return Err(Error(
            "this kernel cannot take a BPF congestion control (its BTF has no \
             bpf_struct_ops_tcp_congestion_ops): use Linux 5.6 or later built with \
             CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL"
                .into(),
        ));
    }
    Ok(())
}

pub fn load(plan: &Plan) -> Result<Loaded, Error> {
    let paths = Paths::system();
    let dir = paths.dir(&plan.name);
    if dir.exists() {
        // check_can_load found the name unregistered: these pins are stale
        // (a link someone detached by hand); clear them.
        let _ = paths.unload(&plan.name, std::time::Duration::ZERO);
    }
    fs::create_dir_all(&dir).map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))?;
    let link = paths.link(&plan.name);
    LIBBPF_LOG.lock().map(|mut l| l.clear()).ok();
    let previous = libbpf_rs::set_print(Some((PrintLevel::Warn, keep_libbpf_message)));
    let result = match &plan.port {
        Port::Reno(p) => load_reno(&plan.name, p),
        Port::Cubic(p) => load_cubic(&plan.name, p),
        Port::Native(n) => load_native(&plan.name, *n),
        Port::Bbr => load_bbr(&plan.name),
        Port::Dctcp(p) => load_dctcp(&plan.name, p),
        Port::Htcp(p) => load_htcp(&plan.name, p),
        Port::Vegas(p) => load_vegas(&plan.name, p),
        Port::Cdg(p) => load_cdg(&plan.name, p),
    }
    .and_then(|mut l| {
        l.pin(&link)
            .map_err(|e| Error(format!("cannot pin the link at {}: {e}", link.display())))
    })
    .and_then(|()| paths.write_metadata(&plan.name, &plan.spec, pins::now_unix()));
    libbpf_rs::set_print(previous);
    if let Err(e) = result {
        // Leave nothing half-made behind; the unpinned link died with us.
        let _ = paths.unload(&plan.name, std::time::Duration::ZERO);
        let _ = fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(Loaded {
        name: plan.name.clone(),
        link,
    })
}

/// The kernel's `char name[TCP_CA_NAME_MAX]`, NUL-padded.
fn ca_name(name: &str) -> [std::ffi::c_char; 16] {
    let mut out = [0; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b as std::ffi::c_char;
    }
    out
}

/// One sentence for a libbpf failure at `stage` ("open", "load" (CO-RE
/// and the verifier), "register"), with the first line of libbpf's log;
/// the whole log (the verifier's, when it refused) goes to a file.
fn refused(name: &str, stage: &str, e: libbpf_rs::Error) -> Error {
    let log = LIBBPF_LOG.lock().map(|l| l.clone()).unwrap_or_default();
    let first = log
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let saved = std::env::temp_dir().join(format!("kleinrock-{name}-libbpf.log"));
    let where_log = if !log.is_empty() && fs::write(&saved, &log).is_ok() {
        format!("; libbpf's full log is in {}", saved.display())
    } else {
        String::new()
    };
    let hint = if e.kind() == libbpf_rs::ErrorKind::AlreadyExists {
        "; the name was taken meanwhile, choose another with --name".to_string()
    } else if first.is_empty() {
        String::new()
    } else {
        format!(" ({first})")
    };
    Error(format!("could not {stage} {name}: {e}{hint}{where_log}"))
}

fn no_rodata(name: &str) -> Error {
    Error(format!(
        "cannot set {name}'s parameters: libbpf did not map the program's read-only data"
    ))
}

fn load_reno(name: &str, p: &RenoParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = reno_skel::RenoSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_reno_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    ro.hystart_pp = (p.hystart == SlowStartExit::HystartPP) as u32;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_reno,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

fn load_cubic(name: &str, p: &CubicParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = cubic_skel::CubicSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_cubic_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    ro.fast_convergence = p.fast_convergence as u32;
    ro.beta = p.beta;
    ro.initial_ssthresh = p.initial_ssthresh;
    ro.bic_scale = p.bic_scale;
    ro.friendly = friendly_value(p.friendly);
    ro.slow_start_exit = slow_start_exit_value(p.hystart);
    ro.hystart_detect = p.hystart_detect;
    ro.hystart_low_window = p.hystart_low_window;
    ro.hystart_ack_delta_us = p.hystart_ack_delta_us;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_cubic,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

/// Loads a wrapper of the kernel's own algorithm. It has no parameters:
/// the kernel's module parameters apply, as they do to the original.
fn load_native(name: &str, native: Native) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    macro_rules! load {
        ($skel:ident :: $builder:ident, $ops:ident, $ops_mut:ident) => {{
            let mut open = $skel::$builder::default()
                .open(&mut obj)
                .map_err(|e| refused(name, "open", e))?;
            open.struct_ops.$ops_mut().name = ca_name(name);
            let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
            let m = &mut skel.maps;
            register(
                name,
                &mut m.$ops,
                &mut m.kr_trace_on,
                &mut m.kr_trace_stats,
                &mut m.kr_trace_ring,
            )
        }};
    }
    match native {
        Native::Reno => load!(
            native_reno_skel::NativeRenoSkelBuilder,
            kn_reno,
            kn_reno_mut
        ),
        Native::Cubic => load!(
            native_cubic_skel::NativeCubicSkelBuilder,
            kn_cubic,
            kn_cubic_mut
        ),
        Native::Bbr => load!(native_bbr_skel::NativeBbrSkelBuilder, kn_bbr, kn_bbr_mut),
    }
}

/// Pins the trace switch, counters and ring in the algorithm's directory, so
/// that `kleinrock kernel trace` finds them, then registers the algorithm.
fn register(
    name: &str,
    ops: &mut MapMut,
    on: &mut MapMut,
    stats: &mut MapMut,
    ring: &mut MapMut,
) -> Result<Link, Error> {
    let paths = Paths::system();
    let pin = |map: &mut MapMut, path: std::path::PathBuf| {
        map.pin(&path)
            .map_err(|e| Error(format!("cannot pin {}: {e}", path.display())))
    };
    pin(on, paths.trace_on(name))?;
    pin(stats, paths.trace_stats(name))?;
    pin(ring, paths.trace_ring(name))?;
    ops.attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
}

/// The names and places of the members of `port`'s private state, read
/// from BTF: the port's own object (opened, not loaded), or the running
/// kernel's for a wrapper of the kernel's algorithm.
pub fn ca_layout(port: &Port) -> Result<Layout, Error> {
    let mut obj = MaybeUninit::uninit();
    macro_rules! from_object {
        ($skel:ident :: $builder:ident) => {{
            let open = $skel::$builder::default()
                .open(&mut obj)
                .map_err(|e| Error(format!("cannot open the BPF object: {e}")))?;
            // SAFETY: the pointer is the open object's, alive while `open` is.
            let raw = unsafe { open.open_object().as_libbpf_object().as_ref() };
            let btf = Btf::from_bpf_object(raw)
                .map_err(|e| Error(format!("cannot read the BPF object's BTF: {e}")))?
                .ok_or_else(|| Error("the BPF object carries no BTF".into()))?;
            ca::layout_of_var(&btf, "kr_ca_type")
        }};
    }
    match port {
        Port::Reno(_) => from_object!(reno_skel::RenoSkelBuilder),
        Port::Cubic(_) => from_object!(cubic_skel::CubicSkelBuilder),
        Port::Bbr => from_object!(bbr_skel::BbrSkelBuilder),
        Port::Dctcp(_) => from_object!(dctcp_skel::DctcpSkelBuilder),
        Port::Htcp(_) => from_object!(htcp_skel::HtcpSkelBuilder),
        Port::Vegas(_) => from_object!(vegas_skel::VegasSkelBuilder),
        Port::Cdg(_) => from_object!(cdg_skel::CdgSkelBuilder),
        Port::Native(n) => match n.ca_struct() {
            None => Ok(Layout::default()),
            Some(s) => {
                let btf = Btf::from_vmlinux().map_err(|e| {
                    Error(format!(
                        "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): {e}"
                    ))
                })?;
                ca::layout_of_struct(&btf, s)
            }
        },
    }
}

/// BBR has no parameters, hence no read-only data to set.
fn load_bbr(name: &str) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = bbr_skel::BbrSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_bbr_mut().name = ca_name(name);
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_bbr,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

fn load_dctcp(name: &str, p: &DctcpParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = dctcp_skel::DctcpSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_dctcp_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    ro.shift_g = p.shift_g;
    ro.alpha_on_init = p.alpha_on_init;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_dctcp,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

fn load_htcp(name: &str, p: &HtcpParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = htcp_skel::HtcpSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_htcp_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    ro.use_rtt_scaling = p.use_rtt_scaling as u32;
    ro.use_bandwidth_switch = p.use_bandwidth_switch as u32;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_htcp,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

fn load_vegas(name: &str, p: &VegasParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = vegas_skel::VegasSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_vegas_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    ro.alpha = p.alpha;
    ro.beta = p.beta;
    ro.gamma = p.gamma;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_vegas,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

fn load_cdg(name: &str, p: &CdgParams) -> Result<Link, Error> {
    let mut obj = MaybeUninit::uninit();
    let mut open = cdg_skel::CdgSkelBuilder::default()
        .open(&mut obj)
        .map_err(|e| refused(name, "open", e))?;
    open.struct_ops.kr_cdg_mut().name = ca_name(name);
    let Some(ro) = open.maps.rodata_data.as_deref_mut() else {
        return Err(no_rodata(name));
    };
    // A power of two in 1..=256 (the spec checks it): fits the int.
    ro.window = p.window as i32;
    ro.backoff_beta = p.backoff_beta;
    ro.backoff_factor = p.backoff_factor;
    ro.hystart_detect = p.hystart_detect;
    ro.use_ineff = p.use_ineff;
    ro.use_shadow = p.use_shadow as u32;
    ro.use_tolerance = p.use_tolerance as u32;
    // p.cwr has no counterpart: the program always runs its own CWR.
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    let m = &mut skel.maps;
    register(
        name,
        &mut m.kr_cdg,
        &mut m.kr_trace_on,
        &mut m.kr_trace_stats,
        &mut m.kr_trace_ring,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_btf_or_struct_ops_is_refused_in_one_sentence() {
        let e = check_struct_ops(std::path::Path::new("/nonexistent/vmlinux")).unwrap_err();
        assert!(
            e.0.starts_with("this kernel has no readable BTF at /nonexistent/vmlinux"),
            "{e}"
        );
        assert!(e.0.contains("CONFIG_DEBUG_INFO_BTF=y"), "{e}");
        // A BTF that is not a kernel's: a file of zeros does not parse.
        let junk = std::env::temp_dir().join(format!("kr-not-btf-{}", std::process::id()));
        fs::write(&junk, [0u8; 64]).unwrap();
        let e = check_struct_ops(&junk).unwrap_err();
        assert!(e.0.starts_with("this kernel has no readable BTF"), "{e}");
        fs::remove_file(&junk).unwrap();
        if std::path::Path::new(VMLINUX_BTF).exists() {
            check_struct_ops(std::path::Path::new(VMLINUX_BTF)).unwrap();
        }
    }
}
