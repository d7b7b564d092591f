//! Which code runs an algorithm where the kernel has its own: the
//! spelling `kernel:NAME` / `port:SPEC` that the live lab and `compare`
//! take. Pure: it only parses and names; the lab decides what loads.
//!
//! A plain spec means the kernel's own algorithm when it is one every
//! distribution kernel builds (`reno`, `cubic`, `bbr`) at its default
//! parameters, since that is the code the simulator is measured against;
//! anything else means Kleinrock's BPF port of the spec.

use alloc::format;
use alloc::string::String;

use crate::spec::SpecError;
use crate::{Algorithm, CongestionControl};

/// Which implementation of an algorithm the lab runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Implementation {
    /// The kernel's own for `reno`, `cubic` and `bbr` at their defaults,
    /// our port otherwise.
    #[default]
    Auto,
    /// `kernel:NAME`: the kernel's own.
    Kernel,
    /// `port:SPEC`: Kleinrock's BPF port.
    Port,
}

impl Implementation {
    /// The spelling that asks for this implementation.
    pub fn prefix(self) -> &'static str {
        match self {
            Implementation::Auto => "",
            Implementation::Kernel => "kernel:",
            Implementation::Port => "port:",
        }
    }

    /// Splits `kernel:cubic` into (Kernel, "cubic"), `port:cdg` into
    /// (Port, "cdg"); a spec without either prefix is (Auto, spec).
    pub fn split(spec: &str) -> (Implementation, &str) {
        for i in [Implementation::Kernel, Implementation::Port] {
            if let Some(rest) = spec.strip_prefix(i.prefix()) {
                return (i, rest);
            }
        }
        (Implementation::Auto, spec)
    }
}

/// The kernel's algorithms that a plain spec means: built into every
/// distribution kernel, and the ones crates/kernel wraps for tracing.
const KERNEL_OWN: [&str; 3] = ["reno", "cubic", "bbr"];

/// Whether `alg` asked for as `how` runs the kernel's own code (else our
/// port).
pub fn runs_kernels(alg: &Algorithm, how: Implementation) -> bool {
    match how {
        Implementation::Auto => alg.spec() == alg.name() && KERNEL_OWN.contains(&alg.name()),
        Implementation::Kernel => true,
        Implementation::Port => false,
    }
}

/// `spec` with an optional `kernel:` or `port:` prefix, parsed, and
/// written as simply as it can be: the algorithm's canonical spec, with
/// the prefix only where it changes what the lab runs (`kernel:cubic` is
/// `cubic`, `port:cdg` is `cdg`, `port:cubic` stays). Two spellings of
/// one run are then one name, as `newreno` and `reno` are.
pub fn canonical(spec: &str) -> Result<(Implementation, Algorithm, String), SpecError> {
    let (how, rest) = Implementation::split(spec);
    let alg: Algorithm = rest.parse()?;
    let needed = runs_kernels(&alg, how) != runs_kernels(&alg, Implementation::Auto);
    let how = if needed { how } else { Implementation::Auto };
    let label = format!("{}{}", how.prefix(), alg.spec());
    Ok((how, alg, label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_choose_the_implementation() {
        assert_eq!(
            Implementation::split("kernel:cubic"),
            (Implementation::Kernel, "cubic")
        );
        assert_eq!(
            Implementation::split("port:cubic:hystart=off"),
            (Implementation::Port, "cubic:hystart=off")
        );
        assert_eq!(Implementation::split("cdg"), (Implementation::Auto, "cdg"));
    }

    #[test]
    fn a_prefix_stays_only_where_it_changes_what_runs() {
        let label = |s: &str| canonical(s).unwrap().2;
        assert_eq!(label("kernel:cubic"), "cubic");
        assert_eq!(label("port:cdg"), "cdg");
        assert_eq!(label("port:newreno"), "port:reno");
        assert_eq!(label("kernel:vegas"), "kernel:vegas");
        assert_eq!(label("cubic:hystart=hspp"), "cubic:hystart=hspp");
        assert_eq!(canonical("port:cubic").unwrap().0, Implementation::Port);
        assert!(canonical("port:nope").is_err());
    }
}
