//! Compiles every BPF program of src/bpf into crates/kernel/bpf/ and
//! writes the MANIFEST there (what scripts/bpf-objects.sh runs; needs
//! clang). The objects are committed, so that a build needs no clang;
//! tests/objects.rs proves them current.

#[path = "../bpf/compile.rs"]
mod compile;
#[allow(dead_code)]
#[path = "../bpf/manifest.rs"]
mod manifest;

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (src, out) = (root.join("src/bpf"), root.join("bpf"));
    let Some(clang) = compile::clang() else {
        eprintln!(
            "bpf_objects: clang is not on the PATH (apt-get install clang), nor named by $CLANG"
        );
        std::process::exit(2);
    };
    let mut objects = Vec::new();
    for name in manifest::programs(&src) {
        let obj = out.join(format!("{name}.bpf.o"));
        compile::compile(&clang, &src, &name, &obj);
        let bytes = std::fs::read(&obj).expect("the object just written");
        objects.push((name, manifest::sha256_hex(&bytes)));
    }
    let m = manifest::Manifest {
        clang: compile::clang_version(&clang),
        sources: manifest::sources_hash(&src),
        objects,
    };
    std::fs::write(out.join(manifest::FILE), m.render()).expect("writing the MANIFEST");
    println!(
        "{} objects compiled by {} into {}",
        m.objects.len(),
        m.clang,
        out.display()
    );
}
