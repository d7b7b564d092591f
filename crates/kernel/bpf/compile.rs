// Compiles src/bpf's programs as the committed objects are compiled (the
// example `bpf_objects`, which scripts/bpf-objects.sh runs, and the test
// `objects.rs`, which compiles them again and compares). Included with
// `#[path]`, beside manifest.rs (as `super::manifest`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The clang to use: $CLANG, else `clang` on the PATH.
pub fn clang() -> Option<PathBuf> {
    if let Some(c) = std::env::var_os("CLANG") {
        return Some(PathBuf::from(c));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("clang"))
        .find(|p| p.is_file())
}

/// `clang --version`'s first line.
pub fn clang_version(clang: &Path) -> String {
    let out = Command::new(clang)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("running {} --version: {e}", clang.display()));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// libbpf's headers, as libbpf-sys installed them (build.rs passes on
/// where).
pub fn libbpf_include() -> PathBuf {
    PathBuf::from(env!("KLEINROCK_LIBBPF_INCLUDE"))
}

/// Compiles `src/<name>.bpf.c` into `obj` (manifest.rs's arguments), then
/// through libbpf's BPF linker, which drops the DWARF (BTF stays): half
/// the size.
pub fn compile(clang: &Path, src: &Path, name: &str, obj: &Path) {
    let raw = obj.with_extension("raw.o");
    let args = super::manifest::clang_args(src, &libbpf_include(), name, &raw);
    // From the sources' directory, which the arguments map to `src/bpf`:
    // the working directory is in the object too.
    let out = Command::new(clang)
        .current_dir(src)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", clang.display()));
    if !out.status.success() {
        panic!(
            "clang could not compile {name}.bpf.c: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut linker = libbpf_rs::Linker::new(obj).expect("a BPF linker");
    linker.add_file(&raw).expect("the object to link");
    linker.link().expect("the object linked");
    let _ = std::fs::remove_file(&raw);
}
