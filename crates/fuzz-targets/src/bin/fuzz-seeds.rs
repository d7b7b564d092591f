//! Writes every fuzz target's seeds into DIR/<target>/ and prints one line
//! per target, `NAME MAX_LEN SEEDS`, for `scripts/fuzz.sh`:
//! `fuzz-seeds DIR`.

use std::path::PathBuf;

fn main() {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: fuzz-seeds DIR (writes DIR/<target>/seed-N for every fuzz target)");
        std::process::exit(2);
    };
    for t in kleinrock_fuzz_targets::TARGETS {
        let d = dir.join(t.name);
        let write = || -> std::io::Result<usize> {
            std::fs::create_dir_all(&d)?;
            let seeds = kleinrock_fuzz_targets::seeds::seeds(t.name);
            for (i, s) in seeds.iter().enumerate() {
                std::fs::write(d.join(format!("seed-{i}")), s)?;
            }
            Ok(seeds.len())
        };
        match write() {
            Ok(n) => println!("{} {} {n}", t.name, t.max_len),
            Err(e) => {
                eprintln!(
                    "fuzz-seeds: cannot write {}: {}",
                    d.display(),
                    kleinrock_files::reason(&e)
                );
                std::process::exit(1);
            }
        }
    }
}
