// The BPF objects kept in the repository (crates/kernel/bpf/*.bpf.o) and
// what they were compiled from: the MANIFEST beside them lists the clang
// that compiled them, one SHA-256 over every file of src/bpf (the
// programs and their headers), and each object's SHA-256. build.rs
// embeds the objects when the sources are the ones listed, so that a
// build needs no clang; scripts/bpf-objects.sh (the example
// `bpf_objects`) compiles them again and writes the MANIFEST; the test
// `objects.rs` proves them current. Included by each with `#[path]`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The MANIFEST's name in crates/kernel/bpf.
pub const FILE: &str = "MANIFEST";

/// What the MANIFEST says.
#[derive(Debug, PartialEq, Eq)]
pub struct Manifest {
    /// `clang --version`'s first line.
    pub clang: String,
    /// [`sources_hash`] of src/bpf when the objects were compiled.
    pub sources: String,
    /// (program name, SHA-256 of its object), sorted by name.
    pub objects: Vec<(String, String)>,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file of `dir` (src/bpf), sorted by name.
pub fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// One SHA-256 over every file of `dir`, each as its name, a NUL, its
/// length and its bytes: a file added, removed, renamed or changed
/// changes it.
pub fn sources_hash(dir: &Path) -> String {
    let mut h = Sha256::new();
    for f in source_files(dir) {
        let bytes = fs::read(&f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        h.update(f.file_name().unwrap_or_default().as_encoded_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// clang's arguments for `src/<name>.bpf.c` into `obj`, with libbpf's
/// headers from `include`: libbpf-cargo's (-g for BTF, -O2, BPF, the
/// architecture's define, no stack protector), warnings as errors,
/// wrapping signed overflow as the kernel builds (CDG's gradient sums are
/// s32 arithmetic ported from it), and every path the object would name
/// mapped to one of no machine's (`src/bpf`, `libbpf`), so that the same
/// clang gives the same bytes from any checkout. Run from `src` (the
/// working directory is in the object too).
pub fn clang_args(src: &Path, include: &Path, name: &str, obj: &Path) -> Vec<OsString> {
    let map = |from: &Path, to: &str| {
        let mut a = OsString::from("-ffile-prefix-map=");
        a.push(from);
        a.push("=");
        a.push(to);
        a
    };
    let mut args: Vec<OsString> = [
        "-g",
        "-O2",
        "-target",
        "bpf",
        "-D__TARGET_ARCH_x86",
        "-fno-stack-protector",
        "-Wall",
        "-Werror",
        "-fno-strict-overflow",
    ]
    .map(OsString::from)
    .into();
    args.extend([map(src, "src/bpf"), map(include, "libbpf")]);
    args.extend([
        "-I".into(),
        src.into(),
        "-I".into(),
        include.into(),
        "-c".into(),
    ]);
    args.push(src.join(format!("{name}.bpf.c")).into());
    args.extend(["-o".into(), obj.into()]);
    args
}

/// The programs: every `<name>.bpf.c` of `dir`, by name, sorted.
pub fn programs(dir: &Path) -> Vec<String> {
    source_files(dir)
        .iter()
        .filter_map(|p| {
            p.file_name()?
                .to_str()?
                .strip_suffix(".bpf.c")
                .map(str::to_string)
        })
        .collect()
}

impl Manifest {
    pub fn render(&self) -> String {
        let mut s = String::from(
            "# The BPF objects beside this file, compiled from src/bpf by\n\
             # scripts/bpf-objects.sh; written by it, checked by build.rs and\n\
             # tests/objects.rs. Do not edit.\n",
        );
        s += &format!("clang {}\n", self.clang);
        s += &format!("sources {}\n", self.sources);
        for (name, hash) in &self.objects {
            s += &format!("object {name} {hash}\n");
        }
        s
    }

    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest {
            clang: String::new(),
            sources: String::new(),
            objects: Vec::new(),
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            match line.split_once(' ') {
                Some(("clang", v)) => m.clang = v.to_string(),
                Some(("sources", v)) => m.sources = v.to_string(),
                Some(("object", v)) => match v.split_once(' ') {
                    Some((name, hash)) => m.objects.push((name.to_string(), hash.to_string())),
                    None => return Err(format!("an object line without a hash: {line:?}")),
                },
                _ => return Err(format!("a line it does not know: {line:?}")),
            }
        }
        if m.clang.is_empty() || m.sources.is_empty() || m.objects.is_empty() {
            return Err("it lacks the clang, sources or object lines".into());
        }
        Ok(m)
    }

    pub fn read(path: &Path) -> Result<Manifest, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Manifest::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
