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

use crate::bbr::Bbr;
use crate::cdg::{Cdg, CdgParams};
use crate::cubic::{Cubic, CubicParams};
use crate::dctcp::{Dctcp, DctcpParams};
use crate::htcp::{Htcp, HtcpParams};
use crate::ops::{AckSample, CaEvent, CaVisitor, CeEcho, CongestionControl, RateSample};
use crate::params::{ParamError, ParamInfo, Params};
use crate::reno::{Reno, RenoParams};
use crate::sock::{CaState, Field, Sock};
use crate::vegas::{Vegas, VegasParams};

/// An algorithm the registry knows.
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmInfo {
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    pub summary: &'static str,
    pub params: &'static [ParamInfo],
}

/// Every algorithm Kleinrock implements.
pub const ALGORITHMS: &[AlgorithmInfo] = &[
    AlgorithmInfo {
        name: "reno",
        aliases: &["newreno"],
        summary: "Linux reno: slow start, +1 segment per RTT, halve on loss",
        params: RenoParams::INFO,
    },
    AlgorithmInfo {
        name: "bbr",
        aliases: &[],
        summary: "Linux 6.18 BBR v1: model-based, paces at the estimated bottleneck rate",
        params: &[],
    },
    AlgorithmInfo {
        name: "cdg",
        aliases: &[],
        summary: "Linux CDG: probabilistic backoff on the RTT gradient, shadow window, own HyStart",
        params: CdgParams::INFO,
    },
    AlgorithmInfo {
        name: "vegas",
        aliases: &[],
        summary: "Linux Vegas: keep alpha..beta packets queued, measured once per RTT",
        params: VegasParams::INFO,
    },
    AlgorithmInfo {
        name: "htcp",
        aliases: &[],
        summary: "Linux H-TCP: increase grows with time since loss, adaptive backoff",
        params: HtcpParams::INFO,
    },
    AlgorithmInfo {
        name: "dctcp",
        aliases: &[],
        summary: "Linux DCTCP (RFC 8257): reduce in proportion to the fraction of CE marks",
        params: DctcpParams::INFO,
    },
    AlgorithmInfo {
        name: "cubic",
        aliases: &[],
        summary: "Linux 6.18 CUBIC with HyStart, bit-exact; FreeBSD friendly-region variants",
        params: CubicParams::INFO,
    },
];

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

fn apply<P: Params>(algorithm: &'static str, parts: &[&str]) -> Result<P, SpecError> {
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

fn render<P: Params>(name: &str, p: &P) -> String {
    let mut s = name.to_string();
    for (k, v) in p.non_default() {
        s.push(':');
        s.push_str(k);
        s.push('=');
        s.push_str(&v);
    }
    s
}

/// A configured algorithm: the registry's sum type. Dispatch is a match, not
/// a vtable, so the simulator's per-ACK calls inline, and the value clones
/// (replay tries both jiffies readings of a row on a copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Reno(Reno),
    Cubic(Cubic),
    Bbr(Bbr),
    Cdg(Cdg),
    Vegas(Vegas),
    Htcp(Htcp),
    Dctcp(Dctcp),
}

impl Algorithm {
    /// The canonical spec of this configuration.
    pub fn spec(&self) -> String {
        match self {
            Algorithm::Reno(a) => render("reno", a.params()),
            Algorithm::Cubic(a) => render("cubic", a.params()),
            Algorithm::Bbr(_) => "bbr".to_string(),
            Algorithm::Cdg(a) => render("cdg", a.params()),
            Algorithm::Vegas(a) => render("vegas", a.params()),
            Algorithm::Htcp(a) => render("htcp", a.params()),
            Algorithm::Dctcp(a) => render("dctcp", a.params()),
        }
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
        Ok(match info.name {
            "reno" => Algorithm::Reno(Reno::new(apply("reno", &rest)?)),
            "cubic" => Algorithm::Cubic(Cubic::new(apply("cubic", &rest)?)),
            "vegas" => Algorithm::Vegas(Vegas::new(apply("vegas", &rest)?)),
            "cdg" => Algorithm::Cdg(Cdg::new(apply("cdg", &rest)?)),
            "htcp" => Algorithm::Htcp(Htcp::new(apply("htcp", &rest)?)),
            "dctcp" => Algorithm::Dctcp(Dctcp::new(apply("dctcp", &rest)?)),
            "bbr" => {
                if let Some(part) = rest.first() {
                    let err = match part.split_once('=') {
                        Some((k, _)) => ParamError::unknown(k),
                        None => {
                            return Err(SpecError::MissingEquals {
                                algorithm: "bbr",
                                part: part.to_string(),
                            })
                        }
                    };
                    return Err(SpecError::Param {
                        algorithm: "bbr",
                        err,
                    });
                }
                Algorithm::Bbr(Bbr::new())
            }
            _ => unreachable!("every registered algorithm is constructed above"),
        })
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec())
    }
}

macro_rules! dispatch {
    ($self:ident, $a:ident => $e:expr) => {
        match $self {
            Algorithm::Reno($a) => $e,
            Algorithm::Cubic($a) => $e,
            Algorithm::Bbr($a) => $e,
            Algorithm::Cdg($a) => $e,
            Algorithm::Vegas($a) => $e,
            Algorithm::Htcp($a) => $e,
            Algorithm::Dctcp($a) => $e,
        }
    };
}

impl CongestionControl for Algorithm {
    fn name(&self) -> &'static str {
        dispatch!(self, a => a.name())
    }
    fn init(&mut self, sk: &mut Sock) {
        dispatch!(self, a => a.init(sk))
    }
    fn release(&mut self, sk: &mut Sock) {
        dispatch!(self, a => a.release(sk))
    }
    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        dispatch!(self, a => a.ssthresh(sk))
    }
    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        dispatch!(self, a => a.cong_avoid(sk, ack, acked))
    }
    fn set_state(&mut self, sk: &mut Sock, s: CaState) {
        dispatch!(self, a => a.set_state(sk, s))
    }
    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        dispatch!(self, a => a.cwnd_event(sk, ev))
    }
    fn in_ack_event(&mut self, sk: &mut Sock, flags: u32) {
        dispatch!(self, a => a.in_ack_event(sk, flags))
    }
    fn pkts_acked(&mut self, sk: &mut Sock, sample: &AckSample) {
        dispatch!(self, a => a.pkts_acked(sk, sample))
    }
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        dispatch!(self, a => a.undo_cwnd(sk))
    }
    fn has_cong_control(&self) -> bool {
        dispatch!(self, a => a.has_cong_control())
    }
    fn cong_control(&mut self, sk: &mut Sock, ack: u32, flag: u32, rs: &RateSample) {
        dispatch!(self, a => a.cong_control(sk, ack, flag, rs))
    }
    fn needs_ecn(&self) -> bool {
        dispatch!(self, a => a.needs_ecn())
    }
    fn ce_echo(&self) -> CeEcho {
        dispatch!(self, a => a.ce_echo())
    }
    fn visit_ca(&self, visit: CaVisitor<'_>) {
        dispatch!(self, a => a.visit_ca(visit))
    }
    fn set_ca(&mut self, name: &str, value: i64) -> bool {
        dispatch!(self, a => a.set_ca(name, value))
    }
    fn reads(&self) -> &'static [Field] {
        dispatch!(self, a => a.reads())
    }
    fn drawn_at_random(&self) -> &'static [&'static str] {
        dispatch!(self, a => a.drawn_at_random())
    }
    fn set_random_seed(&mut self, seed: u64) {
        dispatch!(self, a => a.set_random_seed(seed))
    }
    fn expect_random(&mut self, name: &str, value: i64) {
        dispatch!(self, a => a.expect_random(name, value))
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
        for s in [
            "cubic:friendly=eq4",
            "cubic:friendly=newreno",
            "cubic:hystart=hspp",
            "cubic:hystart_detect=2:hystart_low_window=8",
        ] {
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
