//! Compiles the BPF programs in src/bpf into skeletons, when the `bpf`
//! feature is on and clang is installed. Without clang the crate still
//! builds (cfg `kleinrock_no_clang`) and `load` says how to get it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kleinrock_no_clang)");
    println!("cargo::rerun-if-changed=src/bpf");
    println!("cargo::rerun-if-env-changed=CLANG");
    #[cfg(feature = "bpf")]
    bpf::build();
}

#[cfg(feature = "bpf")]
mod bpf {
    use std::env;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    /// The ported algorithms: src/bpf/<name>.bpf.c becomes
    /// $OUT_DIR/<name>.skel.rs.
    const PROGRAMS: &[&str] = &[
        "reno",
        "cubic",
        "bbr",
        "dctcp",
        "htcp",
        "vegas",
        "cdg",
        "native_reno",
        "native_cubic",
        "native_bbr",
    ];

    pub fn build() {
        let Some(clang) = find_clang() else {
            println!("cargo::rustc-cfg=kleinrock_no_clang");
            println!(
                "cargo::warning=clang not found: kleinrock-kernel is built without its BPF \
                 programs (install clang and rebuild to load algorithms into the kernel)"
            );
            return;
        };
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
        let include = manifest.join("src/bpf");
        for name in PROGRAMS {
            let src = include.join(format!("{name}.bpf.c"));
            let skel = out.join(format!("{name}.skel.rs"));
            build_one(&clang, &include, &src, &skel);
        }
    }

    /// The clang to use: $CLANG, else `clang` on the PATH.
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

    fn build_one(clang: &Path, include: &Path, src: &Path, skel: &Path) {
        let result = libbpf_cargo::SkeletonBuilder::new()
            .source(src)
            .clang(clang)
            .clang_args([
                OsString::from("-I"),
                include.as_os_str().to_owned(),
                "-Wall".into(),
                "-Werror".into(),
                // Signed overflow wraps, as in the kernel's own build (CDG's
                // gradient sums are s32 arithmetic ported from it).
                "-fno-strict-overflow".into(),
            ])
            .build_and_generate(skel);
        if let Err(e) = result {
            panic!("building {}: {e:#}", src.display());
        }
    }
}
