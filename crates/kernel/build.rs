//! Compiles the BPF programs in src/bpf (every `*.bpf.c`) into objects, when
//! the `bpf` feature is on and clang is installed, and lists them in
//! `$OUT_DIR/objects.rs` for load.rs to embed. A port is found by its
//! algorithm's name, so adding one is adding its file. Without clang the
//! crate still builds (cfg `kleinrock_no_clang`) and `load` says how to get
//! it, unless `KLEINROCK_REQUIRE` requires `bpf` (as scripts/test.sh does,
//! docs/TESTING.md): then the build fails, since every kernel test would
//! otherwise pass by skipping.
//!
//! Cargo re-runs this script when clang appears or changes: it watches the
//! clang it found, or, when it found none, the directories of the PATH
//! (installing clang adds an entry to one of them), so that a target/
//! first built without clang does not keep its no-BPF build once clang is
//! installed.

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
        let clang = match find_clang() {
            Ok(clang) => clang,
            Err(why) => return without_clang(&why),
        };
        println!("cargo::rerun-if-changed={}", clang.display());
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

    /// The clang to use: $CLANG, else `clang` on the PATH; or why there is
    /// none. Without one, watches the PATH's directories for it to appear.
    fn find_clang() -> Result<PathBuf, String> {
        if let Some(c) = env::var_os("CLANG") {
            let c = PathBuf::from(c);
            if c.is_file() {
                return Ok(c);
            }
            return Err(format!("$CLANG ({}) is not a file", c.display()));
        }
        let dirs: Vec<PathBuf> = env::var_os("PATH")
            .map(|paths| env::split_paths(&paths).collect())
            .unwrap_or_default();
        if let Some(found) = dirs.iter().map(|d| d.join("clang")).find(|p| p.is_file()) {
            return Ok(found);
        }
        println!("cargo::rerun-if-env-changed=PATH");
        // A directory's modification time changes when an entry is added;
        // only existing ones, since cargo re-runs for a missing path on
        // every build.
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
        Err("clang is not on the PATH".into())
    }

    /// Builds the crate without BPF programs, or fails the build when
    /// `KLEINROCK_REQUIRE` requires them.
    fn without_clang(why: &str) {
        println!("cargo::rerun-if-env-changed=KLEINROCK_REQUIRE");
        // kleinrock-testkit's rule, which a build script cannot depend on
        // (it is a development crate): `all`, or `bpf` in a comma list.
        let required = env::var("KLEINROCK_REQUIRE").is_ok_and(|l| {
            l.split(',')
                .map(str::trim)
                .any(|c| c == "all" || c == "bpf")
        });
        if required {
            panic!(
                "{why}, so kleinrock-kernel cannot build its BPF programs, and KLEINROCK_REQUIRE \
                 requires them (bpf); install clang (apt-get install clang) or point $CLANG at it"
            );
        }
        println!("cargo::rustc-cfg=kleinrock_no_clang");
        println!(
            "cargo::warning={why}: kleinrock-kernel is built without its BPF programs \
             (install clang and rebuild to load algorithms into the kernel)"
        );
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
