//! Algorithm specs: one string names an algorithm and its parameters,
//! everywhere (CLI, scenario files, reports, trace replays).
//!
//! ```text
//! spec   = name *( ":" key "=" value )
//! ```
//!
//! For example `cubic`, `cubic:hystart=off`, `cubic:friendly=newreno:beta=768`,
//! `reno:hystart=hspp`. Parameters are separated by `:` so that lists of
//! specs can be separated by `,`. A spec prints back in canonical form:
//! the algorithm's name followed by the parameters that differ from the
//! defaults, in a fixed order, so equal configurations print equally.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::ops::CongestionControl;
use crate::params::{ParamError, Params};
use crate::registry::AlgorithmInfo;
use crate::{Algorithm, ALGORITHMS};

/// Why a spec was refused. Its `Display` is one sentence naming the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    Empty,
    UnknownAlgorithm(String),
    MissingEquals {
        algorithm: &'static str,
        part: String,
    },
    Param {
        algorithm: &'static str,
        err: ParamError,
    },
}

fn valid_names() -> String {
    ALGORITHMS
        .iter()
        .map(|a| a.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn info(name: &str) -> Option<&'static AlgorithmInfo> {
    ALGORITHMS
        .iter()
        .find(|a| a.name == name || a.aliases.contains(&name))
}

fn valid_params(algorithm: &str) -> String {
    let params = info(algorithm).map(|a| a.params).unwrap_or(&[]);
    if params.is_empty() {
        return "it takes none".into();
    }
    let list: Vec<String> = params
        .iter()
        .map(|p| format!("{}={}", p.key, p.values))
        .collect();
    format!("valid parameters are {}", list.join(", "))
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Empty => write!(
                f,
                "empty algorithm spec; name one of {} (e.g. `cubic:hystart=off`)",
                valid_names()
            ),
            SpecError::UnknownAlgorithm(name) => write!(
                f,
                "unknown algorithm `{name}`; valid algorithms are {}",
                valid_names()
            ),
            SpecError::MissingEquals { algorithm, part } => write!(
                f,
                "`{part}` in a {algorithm} spec is not key=value; {}",
                valid_params(algorithm)
            ),
            SpecError::Param { algorithm, err } => match err {
                ParamError::Unknown { .. } => {
                    write!(f, "{err} for {algorithm}; {}", valid_params(algorithm))
                }
                ParamError::BadValue { key, .. } => {
                    let values = info(algorithm)
                        .and_then(|a| a.params.iter().find(|p| p.key == key))
                        .map(|p| p.values)
                        .unwrap_or("?");
                    write!(f, "{err} of {algorithm}; expected {values}")
                }
            },
        }
    }
}

impl core::error::Error for SpecError {}

/// The parameters `parts` (`key=value` each) on top of the defaults.
pub(crate) fn apply<P: Params>(algorithm: &'static str, parts: &[&str]) -> Result<P, SpecError> {
    let mut p = P::default();
    for part in parts {
        let (k, v) = part.split_once('=').ok_or(SpecError::MissingEquals {
            algorithm,
            part: part.to_string(),
        })?;
        p.set(k.trim(), v.trim())
            .map_err(|err| SpecError::Param { algorithm, err })?;
    }
    Ok(p)
}

impl Algorithm {
    /// The canonical spec of this configuration: the name, then the
    /// parameters that differ from the defaults, in their declared order.
    pub fn spec(&self) -> String {
        let mut s = self.name().to_string();
        for (k, v) in self.non_default() {
            s.push(':');
            s.push_str(k);
            s.push('=');
            s.push_str(&v);
        }
        s
    }
}

impl FromStr for Algorithm {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Algorithm, SpecError> {
        let mut parts = spec.trim().split(':').map(str::trim);
        let name = parts
            .next()
            .filter(|n| !n.is_empty())
            .ok_or(SpecError::Empty)?;
        let rest: Vec<&str> = parts.filter(|p| !p.is_empty()).collect();
        let info = info(name).ok_or_else(|| SpecError::UnknownAlgorithm(name.to_string()))?;
        Algorithm::configure(info.name, &rest)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Algorithm, String> {
        s.parse::<Algorithm>().map_err(|e| e.to_string())
    }

    #[test]
    fn specs_parse_and_print_canonically() {
        assert_eq!(parse("cubic").unwrap().spec(), "cubic");
        assert_eq!(parse(" cubic:hystart=on ").unwrap().spec(), "cubic");
        assert_eq!(
            parse("cubic:beta=768:hystart=off").unwrap().spec(),
            "cubic:hystart=off:beta=768"
        );
        assert_eq!(
            parse("cubic:tcp_friendliness=0").unwrap().spec(),
            "cubic:friendly=off"
        );
        assert_eq!(parse("newreno").unwrap().spec(), "reno");
        assert_eq!(
            parse("reno:hystart=hspp").unwrap().spec(),
            "reno:hystart=hspp"
        );
        // Every spec the property tests run prints back to the same
        // configuration.
        for s in crate::script::SPECS
            .iter()
            .chain(&["cubic:hystart_detect=2:hystart_low_window=8"])
        {
            let a = parse(s).unwrap();
            assert_eq!(parse(&a.spec()).unwrap(), a, "{s} round-trips");
        }
    }

    #[test]
    fn bad_specs_say_what_is_valid() {
        let e = parse("cubicc").unwrap_err();
        assert_eq!(
            e,
            "unknown algorithm `cubicc`; valid algorithms are reno, bbr, cdg, vegas, htcp, dctcp, cubic"
        );
        let e = parse("bbr:gain=2").unwrap_err();
        assert_eq!(e, "unknown parameter `gain` for bbr; it takes none");
        let e = parse("cubic:hystar=off").unwrap_err();
        assert!(e.starts_with("unknown parameter `hystar` for cubic; valid parameters are hystart=on|off|hspp, friendly=linux|eq4|newreno|off"), "{e}");
        let e = parse("cubic:beta=1024").unwrap_err();
        assert_eq!(
            e,
            "`1024` is not a valid value for `beta` of cubic; expected 1..1023"
        );
        let e = parse("reno:hystart=on").unwrap_err();
        assert_eq!(
            e,
            "`on` is not a valid value for `hystart` of reno; expected off|hspp"
        );
        let e = parse("cubic:hystart").unwrap_err();
        assert!(
            e.starts_with("`hystart` in a cubic spec is not key=value;"),
            "{e}"
        );
        assert!(parse("").unwrap_err().starts_with("empty algorithm spec"));
    }
}
