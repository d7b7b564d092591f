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

use crate::echo::show;
use crate::ops::CongestionControl;
use crate::params::{ParamError, Params};
use crate::registry::AlgorithmInfo;
use crate::{Algorithm, ALGORITHMS};

/// Why a spec was refused. Its `Display` is one sentence naming the fix;
/// what it quotes of the spec is escaped and cut short ([`crate::echo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// Nothing was given.
    Empty,
    /// Parameters without an algorithm's name before them (`:beta=5`).
    NoName(String),
    /// No algorithm is registered under the name.
    UnknownAlgorithm(String),
    /// A parameter without `=value`.
    MissingEquals {
        /// The algorithm named.
        algorithm: &'static str,
        /// The part without `=`.
        part: String,
    },
    /// Nothing between two `:` or after the last (`cubic::`, `cubic:`).
    EmptyParam {
        /// The algorithm named.
        algorithm: &'static str,
        /// The whole spec.
        spec: String,
    },
    /// One parameter set twice: by one key (`beta=700:beta=800`) or by two
    /// keys for it (`friendly=off:tcp_friendliness=1`).
    Repeated {
        /// The algorithm named.
        algorithm: &'static str,
        /// The parameter set twice.
        sets: &'static str,
        /// The part that set it first.
        first: String,
        /// The part that set it again.
        second: String,
    },
    /// A parameter's key or value was refused.
    Param {
        /// The algorithm named.
        algorithm: &'static str,
        /// What was wrong with the parameter.
        err: ParamError,
    },
    /// Parameters each valid but not together ([`crate::Declared::check`]).
    Relation {
        /// The algorithm named.
        algorithm: &'static str,
        /// One sentence: why, and what to give instead.
        why: String,
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
            SpecError::NoName(spec) => write!(
                f,
                "`{}` names no algorithm; a spec starts with one of {} (e.g. `cubic:hystart=off`)",
                show(spec),
                valid_names()
            ),
            SpecError::UnknownAlgorithm(name) => write!(
                f,
                "unknown algorithm `{}`; valid algorithms are {}",
                show(name),
                valid_names()
            ),
            SpecError::MissingEquals { algorithm, part } => write!(
                f,
                "`{}` in a {algorithm} spec is not key=value; {}",
                show(part),
                valid_params(algorithm)
            ),
            SpecError::EmptyParam { algorithm, spec } => write!(
                f,
                "`{}` has an empty parameter (nothing between two `:`, or after the last); \
                 remove the extra `:` from the {algorithm} spec",
                show(spec),
            ),
            SpecError::Repeated {
                algorithm,
                sets,
                first,
                second,
            } => {
                let key = |kv: &str| kv.split_once('=').map_or("", |(k, _)| k.trim()).to_string();
                if key(first) == key(second) {
                    write!(
                        f,
                        "`{}` is given twice in a {algorithm} spec (`{}`, then `{}`); give each parameter once",
                        show(&key(first)),
                        show(first),
                        show(second)
                    )
                } else {
                    write!(
                        f,
                        "`{}` and `{}` both set `{sets}` in a {algorithm} spec; give it once",
                        show(first),
                        show(second)
                    )
                }
            }
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
            SpecError::Relation { why, .. } => f.write_str(why),
        }
    }
}

impl core::error::Error for SpecError {}

/// The parameters `parts` (`key=value` each) on top of the defaults, each
/// parameter set once.
pub(crate) fn apply<P: Params>(algorithm: &'static str, parts: &[&str]) -> Result<P, SpecError> {
    let mut p = P::default();
    // (the parameter set, the part that set it)
    let mut given: Vec<(&'static str, &str)> = Vec::new();
    for part in parts {
        let (k, v) = part.split_once('=').ok_or(SpecError::MissingEquals {
            algorithm,
            part: part.to_string(),
        })?;
        let (k, v) = (k.trim(), v.trim());
        if let Some(info) = P::INFO.iter().find(|i| i.key == k) {
            if let Some((_, first)) = given.iter().find(|(sets, _)| *sets == info.sets) {
                return Err(SpecError::Repeated {
                    algorithm,
                    sets: info.sets,
                    first: first.to_string(),
                    second: part.to_string(),
                });
            }
            given.push((info.sets, part));
        }
        p.set(k, v)
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
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(SpecError::Empty);
        }
        let mut parts = spec.split(':').map(str::trim);
        let name = parts.next().unwrap_or_default();
        if name.is_empty() {
            return Err(SpecError::NoName(spec.to_string()));
        }
        let info = info(name).ok_or_else(|| SpecError::UnknownAlgorithm(name.to_string()))?;
        let rest: Vec<&str> = parts.collect();
        if rest.iter().any(|p| p.is_empty()) {
            return Err(SpecError::EmptyParam {
                algorithm: info.name,
                spec: spec.to_string(),
            });
        }
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

    /// Issue 16: a parameter given twice, an empty one, and parameters
    /// valid alone but not together were taken silently (the last won, the
    /// empty one vanished, Vegas oscillated).
    #[test]
    fn repeated_empty_and_contradictory_parameters_are_refused() {
        assert_eq!(
            parse("cubic:beta=700:beta=800").unwrap_err(),
            "`beta` is given twice in a cubic spec (`beta=700`, then `beta=800`); give each parameter once"
        );
        // Even when both say the same.
        assert!(parse("cubic:beta=700:beta=700").is_err());
        assert_eq!(
            parse("cubic:friendly=off:tcp_friendliness=1").unwrap_err(),
            "`friendly=off` and `tcp_friendliness=1` both set `friendly` in a cubic spec; give it once"
        );
        for spec in [
            "cubic::",
            "cubic:",
            "cubic::beta=700",
            "cubic:beta=700:",
            "cubic: :hystart=off",
        ] {
            let e = parse(spec).unwrap_err();
            assert!(
                e.contains("has an empty parameter (nothing between two `:`, or after the last); remove the extra `:` from the cubic spec"),
                "{spec}: {e}"
            );
        }
        assert!(parse(":beta=700")
            .unwrap_err()
            .starts_with("`:beta=700` names no algorithm; a spec starts with one of reno, bbr"));
        assert_eq!(
            parse("vegas:alpha=10:beta=2").unwrap_err(),
            "vegas's alpha=10 is above its beta=2: Vegas grows the window below alpha packets queued and shrinks it above beta, so it would never hold still (the kernel takes this and oscillates); give alpha <= beta"
        );
        assert!(
            parse("vegas:alpha=10").is_err(),
            "above the default beta of 4"
        );
        assert_eq!(
            parse("vegas:alpha=4:beta=4").unwrap().spec(),
            "vegas:alpha=4"
        );
    }

    /// What the kernel takes but does not do as written is a warning, not
    /// a refusal.
    #[test]
    fn parameters_without_effect_are_warned_about() {
        let w = |s: &str| parse(s).unwrap().warnings();
        assert_eq!(
            w("cubic:initial_ssthresh=50"),
            ["cubic's initial_ssthresh=50 has no effect with hystart=on: the kernel sets it at init only when HyStart is off; add hystart=off to use it"]
        );
        assert!(w("cubic:hystart=off:initial_ssthresh=50").is_empty());
        assert_eq!(
            w("cubic:hystart=hspp:hystart_detect=2:hystart_low_window=8"),
            [
                "cubic's hystart_detect=2 has no effect with hystart=hspp: it tunes Linux HyStart (hystart=on) only",
                "cubic's hystart_low_window=8 has no effect with hystart=hspp: it tunes Linux HyStart (hystart=on) only",
            ]
        );
        assert!(w("cubic:hystart_detect=2:hystart_low_window=8").is_empty());
        assert_eq!(
            w("dctcp:alpha_on_init=5000"),
            ["dctcp's alpha_on_init=5000 is above 1024 (alpha = 1): it starts at 1024, as the kernel caps it"]
        );
        for spec in crate::script::SPECS {
            assert!(w(spec).is_empty(), "{spec}: {:?}", w(spec));
        }
    }

    /// A spec's errors quote it escaped and cut short, whatever it holds.
    #[test]
    fn echoed_parts_are_escaped_and_cut() {
        let long = "x".repeat(5_000_000);
        for spec in [
            long.clone(),
            format!("cubic:{long}"),
            format!("cubic:{long}=1"),
            format!("cubic:beta={long}"),
            format!(":{long}"),
        ] {
            let e = parse(&spec).unwrap_err();
            assert!(
                e.len() < 600 && e.contains("... (") && !e.contains('\n'),
                "{}",
                &e[..e.len().min(200)]
            );
        }
        let e = parse("cubic\u{1b}[2J").unwrap_err();
        assert!(e.starts_with("unknown algorithm `cubic\\u001B[2J`"), "{e}");
        let e = parse("cubic:beta=7\n00").unwrap_err();
        assert!(e.starts_with("`7\\n00` is not a valid value"), "{e}");
    }
}
