//! Compiles the BPF programs in src/bpf into skeletons, when the `bpf`
//! feature is on and clang is installed. Without clang the crate still
//! builds (cfg `kleinrock_no_clang`) and `load` says how to get it.

use std::env;
use std::path::{Path, PathBuf};

/// The ported algorithms: src/bpf/<name>.bpf.c becomes $OUT_DIR/<name>.skel.rs.
#[allow(dead_code)]
const PROGRAMS: &[&str] = &["reno", "cubic"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kleinrock_no_clang)");
    println!("cargo::rerun-if-changed=src/bpf");
    println!("cargo::rerun-if-env-changed=CLANG");
    #[cfg(feature = "bpf")]
    build_bpf();
}

/// The clang to use: $CLANG, else `clang` on the PATH.
#[allow(dead_code)]
fn find_clang() -> Option<PathBuf> {
    if let Some(c) = env::var_os("CLANG") {
        return Some(PathBuf::from(c));
    }
    env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|dir| dir.join("clang"))
            .find(|p| p.is_file())
    })
}

#[cfg(feature = "bpf")]
fn build_bpf() {
    let Some(clang) = find_clang() else {
        println!("cargo::rustc-cfg=kleinrock_no_clang");
        println!(
            "cargo::warning=clang not found: kleinrock-kernel is built without its BPF programs \
             (install clang and rebuild to load algorithms into the kernel)"
        );
        return;
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let bpf_dir = manifest.join("src/bpf");
    for name in PROGRAMS {
        let src = bpf_dir.join(format!("{name}.bpf.c"));
        let skel = out.join(format!("{name}.skel.rs"));
        build_one(&clang, &bpf_dir, &src, &skel);
    }
}

#[cfg(feature = "bpf")]
fn build_one(clang: &Path, include: &Path, src: &Path, skel: &Path) {
    let result = libbpf_cargo::SkeletonBuilder::new()
        .source(src)
        .clang(clang)
        .clang_args([
            std::ffi::OsString::from("-I"),
            include.as_os_str().to_owned(),
            "-Wall".into(),
            "-Werror".into(),
        ])
        .build_and_generate(skel);
    if let Err(e) = result {
        panic!("building {}: {e:#}", src.display());
    }
}
