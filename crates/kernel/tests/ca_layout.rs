//! The private-state columns of a kernel trace are named from BTF; replay
//! compares them by the names the Rust reference gives in `visit_ca`, in
//! whatever order the columns come. Every member the Rust visits must be
//! found in the port's struct, or a trace would silently compare nothing
//! for it. No root needed; the build must carry BPF programs, and the
//! kernel's own structs need the kernel's BTF (kleinrock_testkit: a skip,
//! or a failure where required).

use kleinrock_cc::{Algorithm, CongestionControl};
use kleinrock_kernel::plan::{plan, Native, Port};
use kleinrock_testkit::Missing;

/// `bpf`, when this build carries no BPF programs.
fn no_bpf() -> Option<Missing> {
    kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD)
}

fn rust_names(spec: &str) -> Vec<&'static str> {
    let a: Algorithm = spec.parse().unwrap();
    let mut names = Vec::new();
    a.visit_ca(&mut |n, _| names.push(n));
    names
}

/// Every name in `want` is in `have`.
fn all_named(want: &[&str], have: &[String]) -> Result<(), String> {
    match want.iter().find(|w| !have.iter().any(|h| h == *w)) {
        Some(w) => Err(format!("`{w}` is not among {have:?}")),
        None => Ok(()),
    }
}

#[test]
fn every_port_names_the_members_the_rust_reference_visits() {
    kleinrock_testkit::require!(no_bpf());
    // Every registered algorithm, and the variants under which the Rust
    // reference visits members the default does not.
    let variants = ["reno:hystart=hspp", "cubic:hystart=hspp", "cdg:cwr=own"];
    let specs = kleinrock_cc::ALGORITHMS.iter().map(|a| a.name);
    for spec in specs.chain(variants) {
        let p = plan(spec, None).unwrap();
        let layout = kleinrock_kernel::ca_layout(&p.port).unwrap_or_else(|e| panic!("{e}"));
        let want = rust_names(spec);
        // Linux reno keeps no private state.
        assert!(!want.is_empty() || spec == "reno", "{spec} visits nothing");
        if let Err(e) = all_named(&want, &layout.names()) {
            panic!("{spec}: {e}");
        }
        // Every member lies inside the 104-byte area.
        for m in &layout.members {
            assert!(m.bit_offset + m.bits <= 104 * 8, "{spec}: {m:?}");
        }
    }
}

#[test]
fn the_kernels_own_structs_name_what_the_rust_reference_visits() {
    kleinrock_testkit::require!(no_bpf().or_else(|| {
        let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
        (!btf).then(|| Missing::new("btf", "the kernel has no BTF (/sys/kernel/btf/vmlinux)"))
    }));
    for (native, spec) in [(Native::Cubic, "cubic"), (Native::Bbr, "bbr")] {
        let layout =
            kleinrock_kernel::ca_layout(&Port::Native(native)).unwrap_or_else(|e| panic!("{e}"));
        let mut want = rust_names(spec);
        // The kernel's struct bictcp has no HyStart++ members.
        want.retain(|n| !n.starts_with("hspp_"));
        if let Err(e) = all_named(&want, &layout.names()) {
            panic!("kernel {spec}: {e}");
        }
    }
    let reno = kleinrock_kernel::ca_layout(&Port::Native(Native::Reno)).unwrap();
    assert!(reno.members.is_empty());
}
