//! Opening, parameterising, loading and pinning a BPF port.
//!
//! One loader for every port: a port is the object build.rs compiled from
//! `src/bpf/<algorithm>.bpf.c`, its parameters are the `const volatile
//! __u32`s named as the spec's keys, which the reference algorithm's
//! declaration lists with their values ([`kleinrock_cc::params::Params::
//! port_values`]), and their places come from the object's BTF. Nothing
//! here names an algorithm.
//!
//! Each load opens a fresh copy of the port's BPF object, so every instance
//! has its own read-only parameters and its own struct_ops map: `kr_cubic`
//! and `kr_cubic_nohs` are two objects that share only source code. The
//! struct_ops map's `.name` is overwritten in the open object, before load,
//! because the kernel registers the algorithm under that name when the map
//! is attached.

use crate::ca::{self, Layout};
use crate::pins::{self, Paths};
use crate::plan::{Plan, Port};
use crate::{Error, Loaded};
use libbpf_rs::btf::types::{Composite, DataSec, MemberAttr, Struct, Var};
use libbpf_rs::btf::{Btf, BtfKind, ReferencesType};
use libbpf_rs::{
    AsRawLibbpf, Link, MapCore, MapType, Object, ObjectBuilder, OpenObject, PrintLevel,
};
use std::fs;
use std::sync::Mutex;

// `OBJECTS`: every program of src/bpf, compiled by build.rs.
include!(concat!(env!("OUT_DIR"), "/objects.rs"));

/// The compiled object of `program` (`cubic`, `native_cubic`).
fn object(program: &str) -> Result<&'static [u8], Error> {
    OBJECTS
        .iter()
        .find(|(name, _)| *name == program)
        .map(|(_, obj)| *obj)
        .ok_or_else(|| {
            Error(format!(
                "{program} has no BPF port in this build (crates/kernel/src/bpf/{program}.bpf.c)"
            ))
        })
}

/// Opens a fresh copy of `program`'s object, named as libbpf-cargo's
/// skeletons name theirs (`cubic_bpf`, so its maps are `cubic_bp.rodata`...);
/// `refuse` words a libbpf failure.
pub(crate) fn open(
    program: &str,
    refuse: impl Fn(libbpf_rs::Error) -> Error,
) -> Result<OpenObject, Error> {
    let obj = object(program)?;
    let mut builder = ObjectBuilder::default();
    builder.name(format!("{program}_bpf")).map_err(&refuse)?;
    builder.open_memory(obj).map_err(refuse)
}

/// The object's BTF, while `open` lives.
pub(crate) fn btf_of(open: &OpenObject) -> Result<Btf<'_>, Error> {
    // SAFETY: the pointer is the open object's, alive while `open` is.
    let raw = unsafe { open.as_libbpf_object().as_ref() };
    Btf::from_bpf_object(raw)
        .map_err(|e| Error(format!("cannot read the BPF object's BTF: {e}")))?
        .ok_or_else(|| Error("the BPF object carries no BTF".into()))
}

/// libbpf's warnings (the verifier's log among them), kept for the error
/// message instead of scrolled over the terminal.
pub(crate) static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

pub(crate) fn keep_libbpf_message(_level: PrintLevel, msg: String) {
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
    fs::create_dir_all(&dir).map_err(|e| {
        Error(format!(
            "cannot create {}: {}",
            dir.display(),
            kleinrock_files::reason(&e)
        ))
    })?;
    let link = paths.link(&plan.name);
    LIBBPF_LOG.lock().map(|mut l| l.clear()).ok();
    let previous = libbpf_rs::set_print(Some((PrintLevel::Warn, keep_libbpf_message)));
    let result = load_port(&plan.name, &plan.port)
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

/// One sentence for a libbpf failure at `stage` ("open", "load" (CO-RE
/// and the verifier), "register"), with the first line of libbpf's log;
/// the whole log (the verifier's, when it refused) goes to a file.
pub(crate) fn refused(name: &str, stage: &str, e: libbpf_rs::Error) -> Error {
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

/// Opens the port's object, names the algorithm, sets its parameters, loads
/// it (CO-RE and the verifier), pins its trace maps and registers it.
fn load_port(name: &str, port: &Port) -> Result<Link, Error> {
    let program = port.program();
    let mut open = open(&program, |e| refused(name, "open", e))?;
    let places = Places::find(&open, name, &port.port_values())?;
    places.write(&mut open, name)?;
    let mut obj = open.load().map_err(|e| refused(name, "load", e))?;
    register(name, &mut obj)
}

/// Where, in the open object's initial data, the loader writes: the
/// struct_ops map's `.name`, and each parameter's `const volatile` in
/// `.rodata`, found by name in the object's BTF.
struct Places {
    /// Byte offset of `name` in `struct tcp_congestion_ops`.
    name_at: usize,
    /// (offset in `.rodata`, value) of each parameter.
    params: Vec<(usize, u32)>,
}

/// The kernel's `TCP_CA_NAME_MAX`: `char name[16]`, NUL-padded.
const CA_NAME_BYTES: usize = 16;

impl Places {
    fn find(
        open: &OpenObject,
        name: &str,
        params: &[(&'static str, u32)],
    ) -> Result<Places, Error> {
        let btf = btf_of(open)?;
        let ops: Struct<'_> = btf.type_by_name("tcp_congestion_ops").ok_or_else(|| {
            Error(format!(
                "cannot name {name}: its object's BTF has no tcp_congestion_ops"
            ))
        })?;
        let name_at = Composite::from(ops)
            .iter()
            .find(|m| m.name.is_some_and(|n| n == "name"))
            .and_then(|m| match m.attr {
                MemberAttr::Normal { offset } => Some(offset as usize / 8),
                MemberAttr::BitField { .. } => None,
            })
            .ok_or_else(|| {
                Error(format!(
                    "cannot name {name}: tcp_congestion_ops has no name member"
                ))
            })?;
        let vars = parameters(&btf);
        let params = params
            .iter()
            .map(|&(key, value)| {
                let var = vars.iter().find(|(n, _, size)| n == key && *size == 4);
                var.map(|&(_, at, _)| (at, value))
                    .ok_or_else(|| no_param(name, key))
            })
            .collect::<Result<_, _>>()?;
        Ok(Places { name_at, params })
    }

    fn write(&self, open: &mut OpenObject, name: &str) -> Result<(), Error> {
        for mut map in open.maps_mut() {
            if map.map_type() == MapType::StructOps {
                let ops = map.initial_value_mut().ok_or_else(|| no_ops(name))?;
                let field = ops
                    .get_mut(self.name_at..self.name_at + CA_NAME_BYTES)
                    .ok_or_else(|| no_ops(name))?;
                field.fill(0);
                let n = name.len().min(CA_NAME_BYTES - 1);
                field[..n].copy_from_slice(&name.as_bytes()[..n]);
            } else if map.name().to_string_lossy().ends_with(".rodata") {
                let data = map.initial_value_mut().ok_or_else(|| no_rodata(name))?;
                for &(at, value) in &self.params {
                    data.get_mut(at..at + 4)
                        .ok_or_else(|| no_rodata(name))?
                        .copy_from_slice(&value.to_ne_bytes());
                }
            }
        }
        Ok(())
    }
}

/// A port's parameters: the `const volatile` integers of its `.rodata`, as
/// (name, offset, size). Its other read-only data (BBR's gain table, the
/// tracer's `kr_ca_type`) is not `volatile` or not an integer.
pub(crate) fn parameters(btf: &Btf<'_>) -> Vec<(String, usize, usize)> {
    let Some(rodata) = btf.type_by_name::<DataSec<'_>>(".rodata") else {
        return Vec::new();
    };
    rodata
        .iter()
        .filter_map(|v| {
            let var: Var<'_> = btf.type_by_id(v.ty)?;
            let mut ty = var.referenced_type();
            let mut volatile = false;
            while ty.is_mod() || ty.kind() == BtfKind::Typedef {
                volatile |= ty.kind() == BtfKind::Volatile;
                ty = ty.next_type()?;
            }
            if !volatile || ty.kind() != BtfKind::Int {
                return None;
            }
            let name = var.name()?.to_string_lossy().into_owned();
            Some((name, v.offset as usize, v.size))
        })
        .collect()
}

fn no_param(name: &str, key: &str) -> Error {
    Error(format!(
        "cannot set {name}'s parameter {key}: its BPF port has no `const volatile __u32 {key}`"
    ))
}

fn no_rodata(name: &str) -> Error {
    Error(format!(
        "cannot set {name}'s parameters: libbpf did not map the program's read-only data"
    ))
}

fn no_ops(name: &str) -> Error {
    Error(format!(
        "cannot name {name}: libbpf did not map the program's struct_ops data"
    ))
}

/// Pins the trace switch, counters and ring in the algorithm's directory, so
/// that `kleinrock kernel trace` finds them, then registers the algorithm.
fn register(name: &str, obj: &mut Object) -> Result<Link, Error> {
    let paths = Paths::system();
    for mut map in obj.maps_mut() {
        let path = match map.name().to_string_lossy().as_ref() {
            "kr_trace_on" => paths.trace_on(name),
            "kr_trace_stats" => paths.trace_stats(name),
            "kr_trace_ring" => paths.trace_ring(name),
            _ => continue,
        };
        map.pin(&path)
            .map_err(|e| Error(format!("cannot pin {}: {e}", path.display())))?;
    }
    let mut ops = obj
        .maps_mut()
        .filter(|m| m.map_type() == MapType::StructOps);
    let Some(mut ops) = ops.next() else {
        return Err(Error(format!("{name}'s BPF object has no struct_ops map")));
    };
    ops.attach_struct_ops()
        .map_err(|e| refused(name, "register", e))
}

/// The names and places of the members of `port`'s private state, read
/// from BTF: the port's own object (opened, not loaded), or the running
/// kernel's for a wrapper of the kernel's algorithm.
pub fn ca_layout(port: &Port) -> Result<Layout, Error> {
    if let Port::Native(n) = port {
        return match n.ca_struct() {
            None => Ok(Layout::default()),
            Some(s) => {
                let btf = Btf::from_vmlinux().map_err(|e| {
                    Error(format!(
                        "cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): {e}"
                    ))
                })?;
                ca::layout_of_struct(&btf, s)
            }
        };
    }
    let open = open(&port.program(), |e| {
        Error(format!("cannot open the BPF object: {e}"))
    })?;
    let btf = btf_of(&open)?;
    ca::layout_of_var(&btf, "kr_ca_type")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;

    #[test]
    fn every_algorithm_has_a_port_that_takes_exactly_its_declared_parameters() {
        for info in kleinrock_cc::ALGORITHMS {
            let p = plan(info.name, None).unwrap();
            let open = open(&p.port.program(), |e| Error(e.to_string()))
                .unwrap_or_else(|e| panic!("{}: {e}", info.name));
            let values = p.port.port_values();
            // A place for every parameter the loader sets...
            Places::find(&open, "krt", &values).unwrap_or_else(|e| panic!("{e}"));
            // ...and no parameter in the port that the declaration lacks.
            let mut have: Vec<String> = parameters(&btf_of(&open).unwrap())
                .into_iter()
                .map(|(n, _, _)| n)
                .collect();
            let mut want: Vec<String> = values.iter().map(|(k, _)| k.to_string()).collect();
            have.sort();
            want.sort();
            assert_eq!(have, want, "{}", info.name);
        }
        for native in crate::plan::Native::ALL {
            let port = Port::Native(native);
            let open = open(&port.program(), |e| Error(e.to_string())).unwrap();
            assert!(parameters(&btf_of(&open).unwrap()).is_empty());
        }
    }

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
