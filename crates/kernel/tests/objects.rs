//! The BPF objects kept in crates/kernel/bpf are the ones their sources
//! give: the MANIFEST's hash of src/bpf is the sources' (so a program
//! changed without `scripts/bpf-objects.sh` fails here), each object is
//! the one the MANIFEST lists, and, with the clang the MANIFEST names,
//! compiling the sources again from another directory gives the same
//! bytes (the objects carry no path of the machine that compiled them).
//! Needs clang for the last (scripts/test.sh installs Debian's, the one
//! the objects are compiled with).

#[allow(dead_code)]
#[path = "../bpf/compile.rs"]
mod compile;
#[allow(dead_code)]
#[path = "../bpf/manifest.rs"]
mod manifest;

use std::fs;
use std::path::{Path, PathBuf};

use kleinrock_testkit::{installed, require, Missing};
use manifest::Manifest;

fn dirs() -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    (root.join("src/bpf"), root.join("bpf"))
}

#[test]
fn the_kept_objects_are_current_with_their_sources() {
    let (src, kept) = dirs();
    let m = Manifest::read(&kept.join(manifest::FILE)).unwrap();
    assert_eq!(
        m.sources,
        manifest::sources_hash(&src),
        "crates/kernel/src/bpf has changed since the objects were compiled: run scripts/bpf-objects.sh and commit what it writes"
    );
    let names: Vec<&str> = m.objects.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, manifest::programs(&src), "one object per program");
    for (name, hash) in &m.objects {
        let bytes = fs::read(kept.join(format!("{name}.bpf.o"))).unwrap();
        assert_eq!(&manifest::sha256_hex(&bytes), hash, "{name}.bpf.o");
        // An ELF object for BPF (EM_BPF, 247).
        assert_eq!(&bytes[..4], b"\x7fELF", "{name}");
        assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 247, "{name}");
    }
}

#[test]
fn the_pinned_clang_compiles_the_same_bytes_anywhere() {
    require!(installed("clang", "clang"));
    let (src, kept) = dirs();
    let m = Manifest::read(&kept.join(manifest::FILE)).unwrap();
    let clang = compile::clang().expect("clang is installed");
    let version = compile::clang_version(&clang);
    if version != m.clang {
        // Another clang may lay out the same program otherwise: that is a
        // different build, not a stale one.
        require!(Some(Missing::new(
            "clang",
            format!(
                "the objects are compiled by {}, this machine has {version}",
                m.clang
            )
        )));
    }
    // The sources copied elsewhere: a path of the machine in an object
    // would show.
    let work = std::env::temp_dir().join(format!("kr-bpf-objects-{}", std::process::id()));
    let copy = work.join("elsewhere/src/bpf");
    fs::create_dir_all(&copy).unwrap();
    for f in manifest::source_files(&src) {
        fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
    }
    for (name, hash) in &m.objects {
        let obj = work.join(format!("{name}.bpf.o"));
        compile::compile(&clang, &copy, name, &obj);
        let bytes = fs::read(&obj).unwrap();
        assert_eq!(
            &manifest::sha256_hex(&bytes),
            hash,
            "{name}.bpf.o compiled again differs"
        );
    }
    fs::remove_dir_all(&work).unwrap();
}
