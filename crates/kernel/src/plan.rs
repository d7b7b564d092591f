//! From an algorithm spec to what gets loaded: which BPF program, with
//! which parameters, under which name.
//!
//! Specs are `kleinrock-cc`'s (`cubic:hystart=off:beta=768`), parsed by
//! [`kleinrock_cc::Algorithm`], so the kernel accepts exactly what the
//! simulator and the replayer accept; the port is the program named after
//! the algorithm (`src/bpf/<algorithm>.bpf.c`), and loading one this build
//! lacks is refused in a sentence.
//!
//! Names: the kernel keys congestion controls by a name of at most 15 bytes
//! (`TCP_CA_NAME_MAX` is 16 with the NUL). A default spec loads as
//! `kr_<algorithm>` (`kr_reno`, `kr_cubic`, `kr_bbr`); each parameter that
//! differs from the default appends `_<token>`, the token its declaration
//! in `crates/cc` gives ([`kleinrock_cc::params::Token`], listed in
//! docs/KERNEL.md), in the order `kleinrock algorithms` lists the
//! parameters: `cubic:hystart=off` is `kr_cubic_nohs`, `cubic:beta=768` is
//! `kr_cubic_b768`, `reno:hystart=hspp` is `kr_reno_hspp` and
//! `dctcp:shift_g=2` is `kr_dctcp_g2`. A derived name longer than 15 bytes
//! is refused with a hint to choose one with `--name`.
//!
//! A port runs the reference algorithm as [`Algorithm::ported`] configures
//! it: a parameter the port cannot vary takes the value it always runs and
//! adds no token. So `cdg`, `cdg:cwr=kernel` and `cdg:cwr=own` all load the
//! same program as `kr_cdg`, planned, listed and replayed as `cdg:cwr=own`
//! (the port can run only a CWR of its own: no kfunc for `tcp_enter_cwr()`,
//! see docs/KERNEL.md).

use crate::Error;
use kleinrock_cc::{Algorithm, CongestionControl};

/// The kernel's `TCP_CA_NAME_MAX` less the terminating NUL.
pub const NAME_MAX: usize = 15;

/// The prefix of every derived name: ours, and apart from the kernel's.
pub const NAME_PREFIX: &str = "kr_";

/// A BPF program and its configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Port {
    /// `src/bpf/<algorithm>.bpf.c`, the port of the reference algorithm,
    /// configured as it runs ([`Algorithm::ported`]).
    Kleinrock(Algorithm),
    /// `native_<alg>.bpf.c`: the kernel's own algorithm behind a traceable
    /// wrapper (spec `native:cubic`, name `kn_cubic`).
    Native(Native),
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
    let algorithm = algorithm.ported();
    let name = match name {
        Some(n) => {
            check_name(n)?;
            n.to_string()
        }
        None => derive_name(algorithm.name(), &algorithm.tokens())?,
    };
    Ok(Plan {
        spec: algorithm.spec(),
        port: Port::Kleinrock(algorithm),
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
    /// The algorithm's name in specs.
    pub fn algorithm(&self) -> &'static str {
        match self {
            Port::Kleinrock(a) => a.name(),
            Port::Native(n) => n.kernel_name(),
        }
    }

    /// The program: `src/bpf/<program>.bpf.c`.
    pub fn program(&self) -> String {
        match self {
            Port::Kleinrock(a) => a.name().to_string(),
            Port::Native(n) => format!("native_{}", n.kernel_name()),
        }
    }

    /// The values of the program's parameters, by the names of its `const
    /// volatile __u32`s; the wrappers have none (the kernel's module
    /// parameters apply, as they do to the original).
    pub fn port_values(&self) -> Vec<(&'static str, u32)> {
        match self {
            Port::Kleinrock(a) => a.port_values(),
            Port::Native(_) => Vec::new(),
        }
    }

    /// The spec to replay this port's traces with (`kleinrock replay
    /// --cc`): the Rust reference that the port, or the kernel's own
    /// algorithm it wraps, must agree with bit for bit.
    pub fn reference_spec(&self) -> String {
        match self {
            Port::Kleinrock(a) => a.spec(),
            Port::Native(n) => n.kernel_name().to_string(),
        }
    }
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
    use kleinrock_cc::bbr::Bbr;
    use kleinrock_cc::cdg::{Cdg, CdgCwr, CdgParams};
    use kleinrock_cc::cubic::SlowStartExit;
    use kleinrock_cc::dctcp::{Dctcp, DctcpParams};
    use kleinrock_cc::htcp::{Htcp, HtcpParams};
    use kleinrock_cc::vegas::{Vegas, VegasParams};
    use kleinrock_cc::Declared;

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
        assert_eq!(p.port.reference_spec(), "cubic");
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
            Port::Kleinrock(
                Dctcp::new(DctcpParams {
                    shift_g: 10,
                    alpha_on_init: 5000
                })
                .into()
            )
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
            Port::Kleinrock(
                Htcp::new(HtcpParams {
                    use_rtt_scaling: true,
                    use_bandwidth_switch: false
                })
                .into()
            )
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
            Port::Kleinrock(
                Vegas::new(VegasParams {
                    alpha: 3,
                    beta: 5,
                    gamma: 3
                })
                .into()
            )
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
            Port::Kleinrock(
                Cdg::new(CdgParams {
                    window: 1,
                    hystart_detect: 0,
                    use_shadow: false,
                    cwr: CdgCwr::Own,
                    ..CdgParams::default()
                })
                .into()
            )
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
            // What replays it; a spec recorded by an older kleinrock (`cdg`)
            // is planned again from the recording, so it replays right too.
            assert_eq!(p.port.reference_spec(), "cdg:cwr=own");
        }
        let p = plan("cdg:cwr=kernel:window=16", None).unwrap();
        assert_eq!(
            (p.name.as_str(), p.spec.as_str()),
            ("kr_cdg_w16", "cdg:window=16:cwr=own")
        );
        assert!(name_of("cdg:cwr=prr").contains("`prr` is not a valid value for `cwr` of cdg"));
        // Other ports replay with the spec they were loaded with.
        let p = plan("vegas:alpha=1", None).unwrap();
        assert_eq!(p.port.reference_spec(), "vegas:alpha=1");
    }

    #[test]
    fn the_plan_carries_params_and_the_canonical_spec() {
        let p = plan("cubic:beta=768:hystart=off", Some("kr_c768")).unwrap();
        assert_eq!(p.spec, "cubic:hystart=off:beta=768");
        let Port::Kleinrock(Algorithm::Cubic(c)) = p.port else {
            panic!("not cubic")
        };
        assert_eq!(
            (c.params().beta, c.params().hystart),
            (768, SlowStartExit::Off)
        );
        assert_eq!(
            Port::Kleinrock(Algorithm::Cubic(c)).port_values(),
            [
                ("hystart", 0),
                ("friendly", 0),
                ("beta", 768),
                ("fast_convergence", 1),
                ("bic_scale", 41),
                ("initial_ssthresh", 0),
                ("hystart_detect", 3),
                ("hystart_low_window", 16),
                ("hystart_ack_delta_us", 2000),
            ]
        );
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
            (Port::Kleinrock(Bbr::new().into()), "bbr", "kr_bbr")
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
