//! Which kernel algorithm each of the tuner's candidates is, and the BPF
//! ports the tuner loads for the candidates the kernel lacks.
//!
//! A candidate is an algorithm spec (`cubic`, `cubic:hystart=hspp`,
//! `cdg`). It runs as the kernel's own algorithm when the spec is the
//! algorithm with its defaults and the kernel has it registered; otherwise
//! as Kleinrock's port, named as `kleinrock kernel load` names it
//! (`kr_cubic_hspp`), which the tuner loads if nobody has. CDG is always
//! the port: the kernel refuses `bpf_setsockopt(TCP_CONGESTION, "cdg")`
//! from every BPF program (net/core/filter.c: the kernel's CDG keeps a
//! pointer in the private area, which a BPF algorithm switching to it
//! could overwrite) and answers ENOTSUPP (524), whereas `kr_cdg`, which
//! keeps its window in socket storage, can be set (docs/KERNEL.md).
//!
//! The ports are pinned where `kleinrock kernel load` pins them (so
//! `kleinrock kernel list` shows them), and the tuner marks the ones it
//! loaded under its own bpffs directory, `/sys/fs/bpf/kleinrock-tune/
//! loaded/<name>` (a symbolic link to the spec, as bpffs holds no regular
//! files), so that `kleinrock tune stop` unloads exactly those and leaves
//! what an operator loaded.

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::Duration;

use kleinrock_cc::{Algorithm, CongestionControl};

use crate::pins::{Paths, Unloaded};
use crate::plan::{plan, Plan};
use crate::Error;

/// One candidate, as the kernel will be asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The spec the policy knows it by.
    pub spec: String,
    /// The name to set (`cubic`, `kr_cdg`).
    pub name: String,
    /// Set only on connections that negotiated ECN.
    pub needs_ecn: bool,
    /// Kleinrock's port, to load if the kernel lacks it.
    pub port: Option<Plan>,
}

/// Candidates for `specs`, given the kernel's registered algorithms;
/// `ecn_only` names the algorithms (or specs) that need ECN.
pub fn resolve(
    specs: &[String],
    ecn_only: &[String],
    available: &[String],
) -> Result<Vec<Candidate>, Error> {
    specs
        .iter()
        .map(|spec| {
            let a: Algorithm = spec.parse().map_err(|e| Error(format!("{e}")))?;
            let needs_ecn = ecn_only.iter().any(|e| e == a.name() || *e == a.spec());
            let own = a.spec() == a.name() && a.name() != "cdg";
            if own && available.iter().any(|n| n == a.name()) {
                return Ok(Candidate {
                    spec: spec.clone(),
                    name: a.name().to_string(),
                    needs_ecn,
                    port: None,
                });
            }
            let p = plan(spec, None)?;
            Ok(Candidate {
                spec: spec.clone(),
                name: p.name.clone(),
                needs_ecn,
                port: Some(p),
            })
        })
        .collect()
}

/// The tuner's own bpffs directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunePins {
    pub root: PathBuf,
}

impl TunePins {
    pub fn system() -> TunePins {
        TunePins {
            root: Paths::system().bpffs.join("kleinrock-tune"),
        }
    }

    fn loaded_dir(&self) -> PathBuf {
        self.root.join("loaded")
    }

    /// The ports the tuner loaded, by name.
    pub fn loaded(&self) -> Result<Vec<String>, Error> {
        match fs::read_dir(self.loaded_dir()) {
            Ok(entries) => {
                let mut names: Vec<String> = entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                Ok(names)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error(format!(
                "cannot read {}: {e}",
                self.loaded_dir().display()
            ))),
        }
    }

    fn mark(&self, name: &str, spec: &str) -> Result<(), Error> {
        let dir = self.loaded_dir();
        fs::create_dir_all(&dir)
            .map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))?;
        match std::os::unix::fs::symlink(spec, dir.join(name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(Error(format!("cannot mark {name} as the tuner's: {e}"))),
        }
    }

    /// Loads the ports the kernel lacks, marking them as the tuner's;
    /// returns the names it loaded.
    pub fn load_ports(&self, candidates: &[Candidate]) -> Result<Vec<String>, Error> {
        let paths = Paths::system();
        let mut loaded = Vec::new();
        for c in candidates {
            let Some(p) = &c.port else { continue };
            if paths.is_registered(&p.name)? {
                continue; // loaded before: by us (marked) or an operator
            }
            crate::load(p)?;
            self.mark(&p.name, &p.spec)?;
            loaded.push(p.name.clone());
        }
        Ok(loaded)
    }

    /// Unloads every port the tuner loaded, and removes its directory.
    /// Connections running one keep it until they close.
    pub fn unload_ports(&self) -> Result<Vec<(String, Unloaded)>, Error> {
        let paths = Paths::system();
        let mut done = Vec::new();
        for name in self.loaded()? {
            let outcome = if paths.dir(&name).is_dir() {
                paths.unload(&name, Duration::from_secs(2))?
            } else {
                Unloaded::Gone // unloaded by hand meanwhile
            };
            let _ = fs::remove_file(self.loaded_dir().join(&name));
            done.push((name, outcome));
        }
        let _ = fs::remove_dir(self.loaded_dir());
        let _ = fs::remove_dir(&self.root);
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_kernels_own_where_it_has_them_ports_elsewhere_and_cdg_always_the_port() {
        let available = specs(&["reno", "bbr", "cubic", "cdg"]);
        let c = resolve(
            &specs(&["cubic", "cubic:hystart=hspp", "bbr", "htcp", "cdg", "dctcp"]),
            &specs(&["dctcp"]),
            &available,
        )
        .unwrap();
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cubic",
                "kr_cubic_hspp",
                "bbr",
                "kr_htcp",
                "kr_cdg",
                "kr_dctcp"
            ]
        );
        assert!(c[0].port.is_none() && c[1].port.is_some());
        assert_eq!(
            c.iter().map(|c| c.needs_ecn).collect::<Vec<_>>(),
            [false, false, false, false, false, true]
        );
        let e = resolve(&specs(&["nosuch"]), &[], &available).unwrap_err();
        assert!(e.0.contains("nosuch"), "{e}");
    }
}
