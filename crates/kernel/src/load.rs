//! Opening, parameterising, loading and pinning a BPF port.
//!
//! Each load opens a fresh copy of the port's BPF object, so every instance
//! has its own read-only parameters and its own struct_ops map: `kr_cubic`
//! and `kr_cubic_nohs` are two objects that share only source code. The
//! struct_ops map's `.name` is overwritten in the open skeleton, before
//! load, because the kernel registers the algorithm under that name when
//! the map is attached.

use crate::pins::{self, Paths};
use crate::plan::{Plan, Port};
use crate::{Error, Loaded};
use kleinrock_cc::cdg::CdgParams;
use kleinrock_cc::cubic::{CubicParams, Friendly, SlowStartExit};
use kleinrock_cc::dctcp::DctcpParams;
use kleinrock_cc::htcp::HtcpParams;
use kleinrock_cc::reno::RenoParams;
use kleinrock_cc::vegas::VegasParams;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, PrintLevel};
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
    ro.hystart_pp = p.hystart_pp as u32;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    skel.maps
        .kr_reno
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
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
    ro.hystart_detect = p.hystart_cfg.detect as u32;
    ro.hystart_low_window = p.hystart_cfg.low_window;
    ro.hystart_ack_delta_us = p.hystart_cfg.ack_delta_us;
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    skel.maps
        .kr_cubic
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
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
    skel.maps
        .kr_dctcp
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
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
    skel.maps
        .kr_htcp
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
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
    skel.maps
        .kr_vegas
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
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
    let mut skel = open.load().map_err(|e| refused(name, "load", e))?;
    skel.maps
        .kr_cdg
        .attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
}
