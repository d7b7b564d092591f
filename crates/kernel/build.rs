//! Compiles the BPF programs in src/bpf (every `*.bpf.c`) into objects, when
//! the `bpf` feature is on and clang is installed, and lists them in
//! `$OUT_DIR/objects.rs` for load.rs to embed. A port is found by its
//! algorithm's name, so adding one is adding its file. Without clang the
//! crate still builds (cfg `kleinrock_no_clang`) and `load` says how to get
//! it.

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
    use std::fs;
    use std::path::{Path, PathBuf};

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
        let mut list = String::from(
            "/// Every BPF program of src/bpf: its name (the file's, less `.bpf.c`)\n\
             /// and its compiled object.\n\
             pub const OBJECTS: &[(&str, &[u8])] = &[\n",
        );
        for name in programs(&include) {
            let src = include.join(format!("{name}.bpf.c"));
            let obj = out.join(format!("{name}.bpf.o"));
            build_one(&clang, &include, &src, &obj);
            list.push_str(&format!("    ({name:?}, include_bytes!({obj:?})),\n"));
        }
        list.push_str("];\n");
        let objects = out.join("objects.rs");
        if let Err(e) = fs::write(&objects, list) {
            panic!("writing {}: {e}", objects.display());
        }
    }

    /// The programs: every src/bpf/<name>.bpf.c, by name, sorted.
    fn programs(dir: &Path) -> Vec<String> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => panic!("reading {}: {e}", dir.display()),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".bpf.c").map(str::to_string))
            .collect();
        names.sort();
        names
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

    fn build_one(clang: &Path, include: &Path, src: &Path, obj: &Path) {
        let result = libbpf_cargo::SkeletonBuilder::new()
            .source(src)
            .obj(obj)
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
            .build();
        if let Err(e) = result {
            panic!("building {}: {e:#}", src.display());
        }
    }
}
