//! From an algorithm spec to what gets loaded: which BPF program, with
//! which parameters, under which name.
//!
//! Specs are `kleinrock-cc`'s (`cubic:hystart=off:beta=768`), parsed by
//! [`kleinrock_cc::spec::Algorithm`], so the kernel accepts exactly what the
//! simulator and the replayer accept, and refuses in a sentence what has no
//! BPF port yet.
//!
//! Names: the kernel keys congestion controls by a name of at most 15 bytes
//! (`TCP_CA_NAME_MAX` is 16 with the NUL). A default spec loads as
//! `kr_<algorithm>` (`kr_reno`, `kr_cubic`, `kr_bbr`); each parameter that differs
//! from the default appends `_<token>` in the order `kleinrock algorithms`
//! lists the parameters:
//!
//! | parameter | token |
//! | --- | --- |
//! | `hystart=off` | `nohs` |
//! | `hystart=hspp` (HyStart++) | `hspp` |
//! | `friendly=off` (`tcp_friendliness=0`) | `nofr` |
//! | `friendly=eq4` | `eq4` |
//! | `friendly=newreno` | `nr` |
//! | `beta=N` | `bN` |
//! | `fast_convergence=0` | `nofc` |
//! | `bic_scale=N` | `cN` |
//! | `initial_ssthresh=N` | `isN` |
//! | `hystart_detect=N` | `hdN` |
//! | `hystart_low_window=N` | `lwN` |
//! | `hystart_ack_delta_us=N` | `adN` |
//! | dctcp `shift_g=N` | `gN` |
//! | dctcp `alpha_on_init=N` | `aN` |
//! | htcp `use_rtt_scaling=0` | `nrs` |
//! | htcp `use_bandwidth_switch=0` | `nbs` |
//! | vegas `alpha=N` | `aN` |
//! | vegas `beta=N` | `bN` |
//! | vegas `gamma=N` | `gN` |
//! | cdg `window=N` | `wN` |
//! | cdg `backoff_beta=N` | `bN` |
//! | cdg `backoff_factor=N` | `fN` |
//! | cdg `hystart_detect=N` | `hdN` |
//! | cdg `use_ineff=N` | `iN` |
//! | cdg `use_shadow=0` | `nosh` |
//! | cdg `use_tolerance=1` | `tol` |
//!
//! so `cubic:hystart=off` is `kr_cubic_nohs`, `cubic:beta=768` is
//! `kr_cubic_b768`, `reno:hystart=hspp` is `kr_reno_hspp` and
//! `dctcp:shift_g=2` is `kr_dctcp_g2`. A derived name longer than 15 bytes
//! is refused with a hint to choose one with `--name`.
//!
//! CDG's `cwr` parameter adds no token: the port can run only a CWR of its
//! own (no kfunc for `tcp_enter_cwr()`, see docs/KERNEL.md), so `cdg`,
//! `cdg:cwr=kernel` and `cdg:cwr=own` all load the same program as
//! `kr_cdg`, planned, listed and replayed as `cdg:cwr=own`, what it runs.

use crate::Error;
use kleinrock_cc::cdg::{Cdg, CdgCwr, CdgParams};
use kleinrock_cc::cubic::{CubicParams, Friendly, SlowStartExit};
use kleinrock_cc::dctcp::DctcpParams;
use kleinrock_cc::htcp::HtcpParams;
use kleinrock_cc::reno::RenoParams;
use kleinrock_cc::spec::Algorithm;
use kleinrock_cc::vegas::VegasParams;

/// The kernel's `TCP_CA_NAME_MAX` less the terminating NUL.
pub const NAME_MAX: usize = 15;

/// The prefix of every derived name: ours, and apart from the kernel's.
pub const NAME_PREFIX: &str = "kr_";

/// A BPF port and its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Port {
    /// `reno.bpf.c`, optionally with HyStart++.
    Reno(RenoParams),
    /// `cubic.bpf.c`, with the kernel module's parameters.
    Cubic(CubicParams),
    /// `native_<alg>.bpf.c`: the kernel's own algorithm behind a traceable
    /// wrapper (spec `native:cubic`, name `kn_cubic`).
    Native(Native),
    /// `bbr.bpf.c`: BBR v1, which has no parameters.
    Bbr,
    /// `dctcp.bpf.c`, with the kernel module's parameters.
    Dctcp(DctcpParams),
    /// `htcp.bpf.c`, with the kernel module's parameters.
    Htcp(HtcpParams),
    /// `vegas.bpf.c`, with the kernel module's parameters.
    Vegas(VegasParams),
    /// `cdg.bpf.c`, with the kernel module's parameters.
    Cdg(CdgParams),
}

/// The kernel's built-in algorithms that have a tracing wrapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Native {
    Reno,
    Cubic,
    Bbr,
}

impl Native {
    pub const ALL: [Native; 3] = [Native::Reno, Native::Cubic, Native::Bbr];

    /// The kernel's name of the algorithm (`cubic`).
    pub fn kernel_name(self) -> &'static str {
        match self {
            Native::Reno => "reno",
            Native::Cubic => "cubic",
            Native::Bbr => "bbr",
        }
    }

    pub fn from_kernel_name(name: &str) -> Option<Native> {
        Native::ALL.into_iter().find(|n| n.kernel_name() == name)
    }

    /// The kernel's struct in the private area, by its BTF name; reno
    /// keeps none.
    pub fn ca_struct(self) -> Option<&'static str> {
        match self {
            Native::Reno => None,
            Native::Cubic => Some("bictcp"),
            Native::Bbr => Some("bbr"),
        }
    }
}

/// The prefix of a spec naming a wrapper of the kernel's own algorithm.
pub const NATIVE_SPEC_PREFIX: &str = "native:";

/// The prefix of a wrapper's name: `kn_cubic` wraps the kernel's `cubic`.
pub const NATIVE_NAME_PREFIX: &str = "kn_";

/// What to load: the port, its canonical spec and the name to register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub port: Port,
    /// The canonical spec (`cubic:hystart=off`), as `kleinrock algorithms`
    /// prints it.
    pub spec: String,
    /// The name to register (`kr_cubic_nohs`).
    pub name: String,
}

/// Parses `spec` and chooses the name (`name`, or the derived one).
pub fn plan(spec: &str, name: Option<&str>) -> Result<Plan, Error> {
    if let Some(kernel) = spec.strip_prefix(NATIVE_SPEC_PREFIX) {
        return plan_native(kernel, name);
    }
    let algorithm: Algorithm = spec.parse().map_err(|e| Error(format!("{e}")))?;
    let canonical = algorithm.spec();
    let (port, tokens) = match &algorithm {
        Algorithm::Reno(r) => {
            let p = *r.params();
            let tokens = if p.hystart == SlowStartExit::HystartPP {
                vec!["hspp".to_string()]
            } else {
                Vec::new()
            };
            (Port::Reno(p), tokens)
        }
        Algorithm::Cubic(c) => {
            let p = *c.params();
            (Port::Cubic(p), cubic_tokens(&p))
        }
        Algorithm::Bbr(_) => (Port::Bbr, Vec::new()),
        Algorithm::Dctcp(d) => {
            let p = *d.params();
            (Port::Dctcp(p), dctcp_tokens(&p))
        }
        Algorithm::Htcp(h) => {
            let p = *h.params();
            (Port::Htcp(p), htcp_tokens(&p))
        }
        Algorithm::Vegas(v) => {
            let p = *v.params();
            (Port::Vegas(p), vegas_tokens(&p))
        }
        Algorithm::Cdg(c) => {
            let p = CdgParams {
                cwr: CdgCwr::Own,
                ..*c.params()
            };
            (Port::Cdg(p), cdg_tokens(&p))
        }
    };
    let canonical = match &port {
        Port::Cdg(_) => port.reference_spec(&canonical),
        _ => canonical,
    };
    let name = match name {
        Some(n) => {
            check_name(n)?;
            n.to_string()
        }
        None => derive_name(port.algorithm(), &tokens)?,
    };
    Ok(Plan {
        port,
        spec: canonical,
        name,
    })
}

/// `native:cubic`: the kernel's cubic behind its tracing wrapper.
fn plan_native(kernel: &str, name: Option<&str>) -> Result<Plan, Error> {
    let Some(native) = Native::from_kernel_name(kernel) else {
        return Err(Error(format!(
            "`{NATIVE_SPEC_PREFIX}{kernel}` names no wrapped kernel algorithm; \
             the wrapped ones are native:reno, native:cubic and native:bbr"
        )));
    };
    let name = match name {
        Some(n) => {
            check_name(n)?;
            n.to_string()
        }
        None => format!("{NATIVE_NAME_PREFIX}{kernel}"),
    };
    Ok(Plan {
        port: Port::Native(native),
        spec: format!("{NATIVE_SPEC_PREFIX}{kernel}"),
        name,
    })
}

impl Port {
    /// The algorithm's name in specs and in the BPF file's name.
    pub fn algorithm(&self) -> &'static str {
        match self {
            Port::Reno(_) => "reno",
            Port::Cubic(_) => "cubic",
            Port::Native(n) => n.kernel_name(),
            Port::Bbr => "bbr",
            Port::Dctcp(_) => "dctcp",
            Port::Htcp(_) => "htcp",
            Port::Vegas(_) => "vegas",
            Port::Cdg(_) => "cdg",
        }
    }

    /// The spec to replay this port's traces with (`kleinrock replay
    /// --cc`): the Rust reference that the port, or the kernel's own
    /// algorithm it wraps, must agree with bit for bit.
    pub fn reference_spec(&self, spec: &str) -> String {
        match self {
            Port::Native(n) => n.kernel_name().to_string(),
            // Whatever the spec says, the port runs its own CWR.
            Port::Cdg(p) => Algorithm::Cdg(Cdg::new(CdgParams {
                cwr: CdgCwr::Own,
                ..*p
            }))
            .spec(),
            _ => spec.to_string(),
        }
    }
}

/// The name tokens of CUBIC's non-default parameters.
fn cubic_tokens(p: &CubicParams) -> Vec<String> {
    let d = CubicParams::default();
    let mut t = Vec::new();
    match p.hystart {
        SlowStartExit::Linux => {}
        SlowStartExit::Off => t.push("nohs".to_string()),
        SlowStartExit::HystartPP => t.push("hspp".to_string()),
    }
    match p.friendly {
        Friendly::Linux => {}
        Friendly::Off => t.push("nofr".to_string()),
        Friendly::Eq4 => t.push("eq4".to_string()),
        Friendly::NewReno => t.push("nr".to_string()),
    }
    if p.beta != d.beta {
        t.push(format!("b{}", p.beta));
    }
    if p.fast_convergence != d.fast_convergence {
        t.push("nofc".to_string());
    }
    if p.bic_scale != d.bic_scale {
        t.push(format!("c{}", p.bic_scale));
    }
    if p.initial_ssthresh != d.initial_ssthresh {
        t.push(format!("is{}", p.initial_ssthresh));
    }
    let (h, hd) = (p.hystart_cfg(), d.hystart_cfg());
    if h.detect != hd.detect {
        t.push(format!("hd{}", h.detect));
    }
    if h.low_window != hd.low_window {
        t.push(format!("lw{}", h.low_window));
    }
    if h.ack_delta_us != hd.ack_delta_us {
        t.push(format!("ad{}", h.ack_delta_us));
    }
    t
}

/// The name tokens of DCTCP's non-default parameters.
fn dctcp_tokens(p: &DctcpParams) -> Vec<String> {
    let d = DctcpParams::default();
    let mut t = Vec::new();
    if p.shift_g != d.shift_g {
        t.push(format!("g{}", p.shift_g));
    }
    if p.alpha_on_init != d.alpha_on_init {
        t.push(format!("a{}", p.alpha_on_init));
    }
    t
}

/// The name tokens of H-TCP's non-default parameters (both default on).
fn htcp_tokens(p: &HtcpParams) -> Vec<String> {
    let mut t = Vec::new();
    if !p.use_rtt_scaling {
        t.push("nrs".to_string());
    }
    if !p.use_bandwidth_switch {
        t.push("nbs".to_string());
    }
    t
}

/// The name tokens of Vegas' non-default parameters.
fn vegas_tokens(p: &VegasParams) -> Vec<String> {
    let d = VegasParams::default();
    let mut t = Vec::new();
    if p.alpha != d.alpha {
        t.push(format!("a{}", p.alpha));
    }
    if p.beta != d.beta {
        t.push(format!("b{}", p.beta));
    }
    if p.gamma != d.gamma {
        t.push(format!("g{}", p.gamma));
    }
    t
}

/// The name tokens of CDG's non-default parameters.
fn cdg_tokens(p: &CdgParams) -> Vec<String> {
    let d = CdgParams::default();
    let mut t = Vec::new();
    if p.window != d.window {
        t.push(format!("w{}", p.window));
    }
    if p.backoff_beta != d.backoff_beta {
        t.push(format!("b{}", p.backoff_beta));
    }
    if p.backoff_factor != d.backoff_factor {
        t.push(format!("f{}", p.backoff_factor));
    }
    if p.hystart_detect != d.hystart_detect {
        t.push(format!("hd{}", p.hystart_detect));
    }
    if p.use_ineff != d.use_ineff {
        t.push(format!("i{}", p.use_ineff));
    }
    if p.use_shadow != d.use_shadow {
        t.push("nosh".to_string());
    }
    if p.use_tolerance != d.use_tolerance {
        t.push("tol".to_string());
    }
    t
}

/// `kr_<algorithm>[_<token>...]`, if it fits in [`NAME_MAX`].
pub fn derive_name(algorithm: &str, tokens: &[String]) -> Result<String, Error> {
    let mut name = format!("{NAME_PREFIX}{algorithm}");
    for t in tokens {
        name.push('_');
        name.push_str(t);
    }
    if name.len() > NAME_MAX {
        return Err(Error(format!(
            "the derived name `{name}` is {} bytes and the kernel allows {NAME_MAX}; \
             choose a shorter one with --name (e.g. --name {NAME_PREFIX}{algorithm}_1)",
            name.len()
        )));
    }
    Ok(name)
}

/// A name the kernel accepts and that is safe as a bpffs directory:
/// 1 to 15 bytes of ASCII letters, digits, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error(
            "the name is empty; give --name 1 to 15 letters, digits, `_` or `-`".into(),
        ));
    }
    if name.len() > NAME_MAX {
        return Err(Error(format!(
            "the name `{name}` is {} bytes and the kernel allows {NAME_MAX} \
             (TCP_CA_NAME_MAX is 16 with the NUL); choose a shorter one",
            name.len()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(Error(format!(
            "the name `{name}` contains `{c}`; use only letters, digits, `_` and `-`"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(spec: &str) -> String {
        plan(spec, None).map(|p| p.name).unwrap_or_else(|e| e.0)
    }

    #[test]
    fn native_wrappers_are_named_after_the_kernel_algorithm() {
        let p = plan("native:cubic", None).unwrap();
        assert_eq!(p.port, Port::Native(Native::Cubic));
        assert_eq!(
            (p.name.as_str(), p.spec.as_str()),
            ("kn_cubic", "native:cubic")
        );
        assert_eq!(p.port.reference_spec(&p.spec), "cubic");
        assert_eq!(plan("native:bbr", None).unwrap().name, "kn_bbr");
        assert_eq!(
            plan("native:reno", Some("my_reno")).unwrap().name,
            "my_reno"
        );
        let e = plan("native:vegas", None).unwrap_err().0;
        assert!(
            e.contains("native:reno, native:cubic and native:bbr"),
            "{e}"
        );
        assert_eq!(Native::Cubic.ca_struct(), Some("bictcp"));
        assert_eq!(Native::Reno.ca_struct(), None);
    }

    #[test]
    fn default_specs_get_the_plain_names() {
        assert_eq!(name_of("reno"), "kr_reno");
        assert_eq!(name_of("newreno"), "kr_reno");
        assert_eq!(name_of("cubic"), "kr_cubic");
        assert_eq!(name_of("cubic:hystart=on:beta=717"), "kr_cubic");
    }

    #[test]
    fn each_parameter_adds_its_token() {
        assert_eq!(name_of("cubic:hystart=off"), "kr_cubic_nohs");
        assert_eq!(name_of("cubic:hystart=hspp"), "kr_cubic_hspp");
        assert_eq!(name_of("reno:hystart=hspp"), "kr_reno_hspp");
        assert_eq!(name_of("cubic:tcp_friendliness=0"), "kr_cubic_nofr");
        assert_eq!(name_of("cubic:friendly=off"), "kr_cubic_nofr");
        assert_eq!(name_of("cubic:friendly=eq4"), "kr_cubic_eq4");
        assert_eq!(name_of("cubic:friendly=newreno"), "kr_cubic_nr");
        assert_eq!(name_of("cubic:beta=768"), "kr_cubic_b768");
        assert_eq!(name_of("cubic:fast_convergence=0"), "kr_cubic_nofc");
        assert_eq!(name_of("cubic:bic_scale=82"), "kr_cubic_c82");
        assert_eq!(name_of("cubic:initial_ssthresh=50"), "kr_cubic_is50");
        assert_eq!(name_of("cubic:hystart_detect=2"), "kr_cubic_hd2");
        assert_eq!(name_of("cubic:hystart_low_window=8"), "kr_cubic_lw8");
        assert_eq!(name_of("cubic:hystart_ack_delta_us=500"), "kr_cubic_ad500");
    }

    #[test]
    fn dctcp_names_and_params() {
        assert_eq!(name_of("dctcp"), "kr_dctcp");
        assert_eq!(name_of("dctcp:shift_g=4:alpha_on_init=1024"), "kr_dctcp");
        assert_eq!(name_of("dctcp:shift_g=2"), "kr_dctcp_g2");
        assert_eq!(name_of("dctcp:alpha_on_init=0"), "kr_dctcp_a0");
        assert_eq!(
            name_of("dctcp:alpha_on_init=64:shift_g=0"),
            "kr_dctcp_g0_a64"
        );
        assert!(name_of("dctcp:alpha_on_init=512:shift_g=0")
            .starts_with("the derived name `kr_dctcp_g0_a512` is 16 bytes"));
        let p = plan("dctcp:shift_g=10:alpha_on_init=5000", Some("kr_d")).unwrap();
        assert_eq!(p.spec, "dctcp:shift_g=10:alpha_on_init=5000");
        assert_eq!(
            p.port,
            Port::Dctcp(DctcpParams {
                shift_g: 10,
                alpha_on_init: 5000
            })
        );
        assert!(name_of("dctcp:shift_g=11").contains("`11` is not a valid value for `shift_g`"));
    }

    #[test]
    fn htcp_names_and_params() {
        assert_eq!(name_of("htcp"), "kr_htcp");
        assert_eq!(name_of("htcp:use_rtt_scaling=1"), "kr_htcp");
        assert_eq!(name_of("htcp:use_rtt_scaling=0"), "kr_htcp_nrs");
        assert_eq!(name_of("htcp:use_bandwidth_switch=off"), "kr_htcp_nbs");
        // Both off still fits in 15 bytes.
        assert_eq!(
            name_of("htcp:use_bandwidth_switch=0:use_rtt_scaling=0"),
            "kr_htcp_nrs_nbs"
        );
        let p = plan("htcp:use_bandwidth_switch=0", None).unwrap();
        assert_eq!(p.spec, "htcp:use_bandwidth_switch=0");
        assert_eq!(
            p.port,
            Port::Htcp(HtcpParams {
                use_rtt_scaling: true,
                use_bandwidth_switch: false
            })
        );
    }

    #[test]
    fn vegas_names_and_params() {
        assert_eq!(name_of("vegas"), "kr_vegas");
        assert_eq!(name_of("vegas:alpha=2:beta=4:gamma=1"), "kr_vegas");
        assert_eq!(name_of("vegas:alpha=1"), "kr_vegas_a1");
        assert_eq!(name_of("vegas:beta=6"), "kr_vegas_b6");
        assert_eq!(name_of("vegas:gamma=0"), "kr_vegas_g0");
        assert_eq!(name_of("vegas:beta=8:alpha=4"), "kr_vegas_a4_b8");
        assert!(name_of("vegas:alpha=1:beta=3:gamma=2")
            .starts_with("the derived name `kr_vegas_a1_b3_g2` is 17 bytes"));
        let p = plan("vegas:gamma=3:alpha=3:beta=5", Some("kr_v335")).unwrap();
        assert_eq!(p.spec, "vegas:alpha=3:beta=5:gamma=3");
        assert_eq!(
            p.port,
            Port::Vegas(VegasParams {
                alpha: 3,
                beta: 5,
                gamma: 3
            })
        );
    }

    #[test]
    fn cdg_names_and_params() {
        assert_eq!(name_of("cdg"), "kr_cdg");
        assert_eq!(name_of("cdg:window=8:backoff_beta=724"), "kr_cdg");
        assert_eq!(name_of("cdg:window=16"), "kr_cdg_w16");
        assert_eq!(name_of("cdg:backoff_beta=512"), "kr_cdg_b512");
        assert_eq!(name_of("cdg:backoff_factor=125"), "kr_cdg_f125");
        assert_eq!(name_of("cdg:hystart_detect=2"), "kr_cdg_hd2");
        assert_eq!(name_of("cdg:use_ineff=0"), "kr_cdg_i0");
        assert_eq!(name_of("cdg:use_shadow=0"), "kr_cdg_nosh");
        assert_eq!(name_of("cdg:use_tolerance=1"), "kr_cdg_tol");
        assert_eq!(name_of("cdg:use_tolerance=1:window=4"), "kr_cdg_w4_tol");
        assert!(name_of("cdg:window=3").contains("`3` is not a valid value for `window`"));
        let p = plan("cdg:use_shadow=0:window=1:hystart_detect=0", Some("kr_c1")).unwrap();
        assert_eq!(p.spec, "cdg:window=1:hystart_detect=0:use_shadow=0:cwr=own");
        assert_eq!(
            p.port,
            Port::Cdg(CdgParams {
                window: 1,
                hystart_detect: 0,
                use_shadow: false,
                cwr: CdgCwr::Own,
                ..CdgParams::default()
            })
        );
    }

    #[test]
    fn cdg_loads_its_own_cwr_whatever_the_spec_says() {
        // The port cannot enter the kernel's CWR: every cwr loads the same
        // program under the same name, planned and replayed as cwr=own.
        for spec in ["cdg", "cdg:cwr=kernel", "cdg:cwr=own"] {
            let p = plan(spec, None).unwrap();
            assert_eq!(
                (p.name.as_str(), p.spec.as_str()),
                ("kr_cdg", "cdg:cwr=own"),
                "{spec}"
            );
            assert_eq!(p.port.reference_spec(&p.spec), "cdg:cwr=own");
            // A spec recorded by an older kleinrock (`cdg`) replays right too.
            assert_eq!(p.port.reference_spec("cdg"), "cdg:cwr=own");
        }
        let p = plan("cdg:cwr=kernel:window=16", None).unwrap();
        assert_eq!(
            (p.name.as_str(), p.spec.as_str()),
            ("kr_cdg_w16", "cdg:window=16:cwr=own")
        );
        assert!(name_of("cdg:cwr=prr").contains("`prr` is not a valid value for `cwr` of cdg"));
        // Other ports replay with the spec they were loaded with.
        let p = plan("vegas:alpha=1", None).unwrap();
        assert_eq!(p.port.reference_spec(&p.spec), "vegas:alpha=1");
    }

    #[test]
    fn the_plan_carries_params_and_the_canonical_spec() {
        let p = plan("cubic:beta=768:hystart=off", Some("kr_c768")).unwrap();
        assert_eq!(p.spec, "cubic:hystart=off:beta=768");
        let Port::Cubic(c) = p.port else {
            panic!("not cubic")
        };
        assert_eq!((c.beta, c.hystart), (768, SlowStartExit::Off));
        assert_eq!(plan("reno", Some("my-reno")).unwrap().name, "my-reno");
    }

    #[test]
    fn a_derived_name_too_long_asks_for_name() {
        assert_eq!(
            name_of("cubic:hystart=off:beta=768"),
            "the derived name `kr_cubic_nohs_b768` is 18 bytes and the kernel allows 15; \
             choose a shorter one with --name (e.g. --name kr_cubic_1)"
        );
        let p = plan("cubic:hystart=off:beta=768", Some("kr_cubic_x")).unwrap();
        assert_eq!(p.name, "kr_cubic_x");
    }

    #[test]
    fn bad_names_say_what_is_allowed() {
        assert_eq!(
            plan("reno", Some("kr_reno_sixteen1")).unwrap_err().0,
            "the name `kr_reno_sixteen1` is 16 bytes and the kernel allows 15 \
             (TCP_CA_NAME_MAX is 16 with the NUL); choose a shorter one"
        );
        assert_eq!(
            plan("reno", Some("a/b")).unwrap_err().0,
            "the name `a/b` contains `/`; use only letters, digits, `_` and `-`"
        );
        assert!(plan("reno", Some(""))
            .unwrap_err()
            .0
            .starts_with("the name is empty"));
    }

    #[test]
    fn bbr_is_kr_bbr_and_takes_no_parameters() {
        let p = plan("bbr", None).unwrap();
        assert_eq!(
            (p.port, p.spec.as_str(), p.name.as_str()),
            (Port::Bbr, "bbr", "kr_bbr")
        );
        assert_eq!(plan("bbr", Some("krt_bbr")).unwrap().name, "krt_bbr");
        assert_eq!(
            name_of("bbr:gain=2"),
            "unknown parameter `gain` for bbr; it takes none"
        );
    }

    #[test]
    fn every_algorithm_of_the_reference_has_a_port() {
        for info in kleinrock_cc::ALGORITHMS {
            let p = plan(info.name, None).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            assert_eq!(p.name, format!("kr_{}", info.name));
            assert_eq!(p.port.algorithm(), info.name);
        }
    }

    #[test]
    fn unknown_specs_keep_the_reference_sentence() {
        assert!(name_of("cubicc").starts_with("unknown algorithm `cubicc`; valid algorithms are"));
        assert!(name_of("cubic:beta=1024").contains("expected 1..1023"));
    }
}
