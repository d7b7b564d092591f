//! Lists the BPF programs in `$OUT_DIR/objects.rs` for load.rs to embed,
//! when the `bpf` feature is on. A port is found by its algorithm's name,
//! so adding one is adding its file.
//!
//! The objects are compiled ahead and kept in crates/kernel/bpf/ with a
//! MANIFEST naming the sources they came from (scripts/bpf-objects.sh
//! writes both), so that a build needs no clang: when src/bpf is what the
//! MANIFEST says, the kept objects are embedded (each checked against its
//! hash). When it is not (a program was changed and the script not run
//! yet), the programs are compiled here with clang, with a warning; without
//! clang the build fails, saying so. Where `KLEINROCK_REQUIRE` requires
//! `bpf` (scripts/test.sh, CI) objects older than their sources fail the
//! build: what is tested must be what is committed (docs/TESTING.md).

#[cfg(feature = "bpf")]
#[allow(dead_code)]
#[path = "bpf/manifest.rs"]
mod manifest;

fn main() {
    println!("cargo::rerun-if-changed=src/bpf");
    println!("cargo::rerun-if-changed=bpf");
    println!("cargo::rerun-if-env-changed=CLANG");
    println!("cargo::rerun-if-env-changed=KLEINROCK_REQUIRE");
    #[cfg(feature = "bpf")]
    bpf::build();
}

#[cfg(feature = "bpf")]
mod bpf {
    use std::env;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::manifest::{self, Manifest};

    pub fn build() {
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
        let (src, kept) = (root.join("src/bpf"), root.join("bpf"));
        // libbpf's headers (bpf_helpers.h...), as libbpf-sys installed them,
        // for a program compiled here and for scripts/bpf-objects.sh.
        let include =
            PathBuf::from(env::var_os("DEP_BPF_INCLUDE").expect("libbpf-sys names its headers"));
        println!(
            "cargo::rustc-env=KLEINROCK_LIBBPF_INCLUDE={}",
            include.display()
        );
        // No MANIFEST (a checkout without the objects) is a stale one.
        let m = Manifest::read(&kept.join(manifest::FILE)).ok();
        let programs = manifest::programs(&src);
        let objects: Vec<(String, PathBuf)> = match m {
            Some(m) if m.sources == manifest::sources_hash(&src) => programs
                .iter()
                .map(|name| (name.clone(), kept_object(&kept, &m, name)))
                .collect(),
            _ => stale(&src, &include, &out, &programs),
        };
        let mut list = String::from(
            "/// Every BPF program of src/bpf: its name (the file's, less `.bpf.c`)\n\
             /// and its compiled object.\n\
             pub const OBJECTS: &[(&str, &[u8])] = &[\n",
        );
        for (name, obj) in objects {
            list.push_str(&format!("    ({name:?}, include_bytes!({obj:?})),\n"));
        }
        list.push_str("];\n");
        let objects = out.join("objects.rs");
        if let Err(e) = fs::write(&objects, list) {
            panic!("writing {}: {e}", objects.display());
        }
    }

    /// The kept object of `name`, checked against the MANIFEST's hash.
    fn kept_object(kept: &Path, m: &Manifest, name: &str) -> PathBuf {
        let obj = kept.join(format!("{name}.bpf.o"));
        let bytes = fs::read(&obj).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run scripts/bpf-objects.sh to compile the BPF objects",
                obj.display()
            )
        });
        let want = m.objects.iter().find(|(n, _)| n == name).map(|(_, h)| h);
        if want != Some(&manifest::sha256_hex(&bytes)) {
            panic!(
                "{} is not the object its MANIFEST lists; run scripts/bpf-objects.sh to compile the BPF objects again",
                obj.display()
            );
        }
        obj
    }

    /// src/bpf changed since the kept objects were compiled: compiled here,
    /// unless CI requires the kept ones to be current.
    fn stale(
        src: &Path,
        include: &Path,
        out: &Path,
        programs: &[String],
    ) -> Vec<(String, PathBuf)> {
        let required = env::var("KLEINROCK_REQUIRE").is_ok_and(|l| {
            l.split(',')
                .map(str::trim)
                .any(|c| c == "all" || c == "bpf")
        });
        if required {
            panic!(
                "the BPF objects in crates/kernel/bpf are older than crates/kernel/src/bpf (their MANIFEST lists other sources), and KLEINROCK_REQUIRE requires them current; run scripts/bpf-objects.sh and commit what it writes"
            );
        }
        let Some(clang) = find_clang() else {
            panic!(
                "crates/kernel/src/bpf has changed since the BPF objects in crates/kernel/bpf were compiled, and clang is not installed to compile them again; install clang (apt-get install clang) and run scripts/bpf-objects.sh"
            );
        };
        println!(
            "cargo::warning=crates/kernel/src/bpf has changed since the kept BPF objects were compiled: compiled them here; run scripts/bpf-objects.sh and commit them"
        );
        programs
            .iter()
            .map(|name| {
                let obj = out.join(format!("{name}.bpf.o"));
                let status = Command::new(&clang)
                    .current_dir(src)
                    .args(manifest::clang_args(src, include, name, &obj))
                    .status()
                    .unwrap_or_else(|e| panic!("running {}: {e}", clang.display()));
                if !status.success() {
                    panic!("clang could not compile {name}.bpf.c (above)");
                }
                (name.clone(), obj)
            })
            .collect()
    }

    /// $CLANG, else `clang` on the PATH.
    fn find_clang() -> Option<PathBuf> {
        if let Some(c) = env::var_os("CLANG") {
            return Some(PathBuf::from(c)).filter(|c| c.is_file());
        }
        env::split_paths(&env::var_os("PATH")?)
            .map(|d| d.join("clang"))
            .find(|p| p.is_file())
    }
}
