//! Kleinrock's algorithms inside Linux: BPF struct_ops ports of the
//! algorithms in `kleinrock-cc`, loaded as named congestion controls and
//! kept registered by links pinned under bpffs.
//!
//! - [`plan`](mod@plan): which spec becomes which program, parameters and name.
//! - [`pins`]: the bpffs layout, `list` and `unload`; needs no libbpf.
//! - [`load()`]: opens, parameterises, loads and pins a port (feature `bpf`;
//!   the programs are compiled ahead, crates/kernel/bpf, so no clang is
//!   needed to build).
//! - [`tune`]: the sockops program and daemon of `kleinrock tune`.
//!
//! The BPF sources are in `src/bpf` (GPL-2.0); docs/KERNEL.md is the guide.

use std::fmt;

pub mod ca;
pub mod pins;
pub mod plan;
pub mod record;
pub mod trace;
pub mod tune;

#[cfg(feature = "bpf")]
mod load;

pub use plan::{plan, Plan, Port};

/// A failure, as one sentence that names the problem and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// What a successful load leaves behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The registered name (`kr_cubic`).
    pub name: String,
    /// The pinned link that keeps it registered.
    pub link: std::path::PathBuf,
}

/// Loads the planned port, registers it under its name and pins the link,
/// so that it stays registered after this process exits. Checks that this
/// build carries BPF, then root, bpffs and the name, before libbpf runs.
pub fn load(plan: &Plan) -> Result<Loaded, Error> {
    if let Some(why) = missing_bpf() {
        return Err(Error(format!("cannot load {}: {why}", plan.name)));
    }
    pins::check_can_load(&plan.name)?;
    load_checked(plan)
}

#[cfg(feature = "bpf")]
fn load_checked(plan: &Plan) -> Result<Loaded, Error> {
    load::check_struct_ops(std::path::Path::new(load::VMLINUX_BTF))?;
    load::load(plan)
}

#[cfg(not(feature = "bpf"))]
fn load_checked(_: &Plan) -> Result<Loaded, Error> {
    unreachable!("load() stops at missing_bpf()")
}

/// The named members of `port`'s private state, from BTF (see [`ca`]).
/// Needs a build with BPF; the kernel's algorithms also need the running
/// kernel's BTF.
pub fn ca_layout(port: &Port) -> Result<ca::Layout, Error> {
    if let Some(why) = missing_bpf() {
        return Err(Error(format!(
            "cannot read the private state's layout: {why}"
        )));
    }
    ca_layout_checked(port)
}

#[cfg(feature = "bpf")]
use load::ca_layout as ca_layout_checked;

#[cfg(not(feature = "bpf"))]
fn ca_layout_checked(_: &Port) -> Result<ca::Layout, Error> {
    unreachable!("ca_layout() stops at missing_bpf()")
}

/// Why this build cannot load anything, if it cannot.
pub(crate) fn missing_bpf() -> Option<&'static str> {
    cfg!(not(feature = "bpf")).then_some(
        "this kleinrock was built without BPF support; rebuild it with \
         `cargo build --release --features kernel` (needs a C compiler, make, libelf-dev, \
         zlib1g-dev and pkg-config, which ./scripts/test.sh installs; docs/KERNEL.md, \"Building\")",
    )
}

/// Can this build load algorithms at all (BPF compiled in)?
pub const CAN_LOAD: bool = cfg!(feature = "bpf");
