//! The registry: what an algorithm's file declares about it, and the one
//! line per algorithm (in lib.rs) that makes it nameable everywhere.
//!
//! An algorithm's file implements [`Declared`]: its name, aliases and
//! summary, its parameter struct (from `params!`), and how to build it from
//! its parameters. `algorithms!` takes the list of `module::Type` and
//! writes what needs the whole list: the [`crate::Algorithm`] enum the
//! specs parse into (a match, not a vtable, so the simulator's per-ACK calls
//! inline) with its `CongestionControl` impl, [`crate::ALGORITHMS`] (what
//! `kleinrock algorithms` prints and error messages list), and the
//! constructor `spec` parsing calls. The BPF port is found by the
//! algorithm's name (crates/kernel), so registering one here is all the
//! rest of Kleinrock needs.
//!
//! The line is separate from the module's `pub mod` declaration, which stays
//! outside the macro: rustfmt finds modules only there.

use alloc::string::String;
use alloc::vec::Vec;

use crate::ops::CongestionControl;
use crate::params::{ParamInfo, Params};

/// An algorithm the registry knows.
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmInfo {
    /// The name it registers under.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// One line for `kleinrock algorithms`.
    pub summary: &'static str,
    /// Its parameters.
    pub params: &'static [ParamInfo],
}

impl AlgorithmInfo {
    /// The entry of a declared algorithm.
    pub const fn of<A: Declared>() -> AlgorithmInfo {
        AlgorithmInfo {
            name: A::NAME,
            aliases: A::ALIASES,
            summary: A::SUMMARY,
            params: <A::Params as Params>::INFO,
        }
    }
}

/// What an algorithm declares for the registry.
pub trait Declared: CongestionControl + Sized {
    /// The name it registers under (`"cubic"`), in specs and for its BPF
    /// port (`src/bpf/cubic.bpf.c`, loaded as `kr_cubic`).
    const NAME: &'static str;
    /// Other names a spec may use for it.
    const ALIASES: &'static [&'static str] = &[];
    /// One line for `kleinrock algorithms`.
    const SUMMARY: &'static str;
    /// Its parameters, declared with `params!`.
    type Params: Params;

    /// The algorithm with `params`.
    fn with_params(params: Self::Params) -> Self;

    /// Its parameters.
    fn params(&self) -> &Self::Params;

    /// Refuses parameters that are each valid but not together, where the
    /// kernel would take them and misbehave (Vegas with alpha above beta
    /// never holds its window still): one sentence saying why, and what to
    /// give instead. Looked up in the kernel's source of the algorithm.
    fn check(_params: &Self::Params) -> Result<(), String> {
        Ok(())
    }

    /// What the algorithm will do otherwise than its parameters read,
    /// though the kernel accepts them (a parameter that has no effect with
    /// the others given, a value the kernel caps): one sentence each, which
    /// the commands print as warnings.
    fn warnings(_params: &Self::Params) -> Vec<String> {
        Vec::new()
    }
}

/// `a` as its BPF port runs it.
pub fn ported<A: Declared>(a: &A) -> A {
    A::with_params(a.params().ported())
}

/// `a`'s [`Declared::warnings`].
pub fn warnings<A: Declared>(a: &A) -> Vec<String> {
    A::warnings(a.params())
}

/// Registers the algorithms `module::Type, ...`, in the order `kleinrock
/// algorithms` lists them (see the module's documentation).
macro_rules! algorithms {
    // `match` over every algorithm, `$e` with `$a` bound to the one configured.
    (@dispatch [$($t:ident)+] $s:ident, $a:ident => $e:expr) => {
        match $s {
            $(Algorithm::$t($a) => $e,)+
        }
    };
    ($($m:ident :: $t:ident),+ $(,)?) => {
        /// A configured algorithm: the registry's sum type. Dispatch is a
        /// match, not a vtable, so the simulator's per-ACK calls inline, and
        /// the value clones (replay tries both jiffies readings of a row on a
        /// copy).
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum Algorithm {
            $(
                #[doc = concat!("`", stringify!($m), "::", stringify!($t), "`, configured.")]
                $t($m::$t),
            )+
        }

        $(impl From<$m::$t> for Algorithm {
            fn from(a: $m::$t) -> Algorithm {
                Algorithm::$t(a)
            }
        })+

        /// Every algorithm Kleinrock implements.
        pub const ALGORITHMS: &[$crate::registry::AlgorithmInfo] =
            &[$($crate::registry::AlgorithmInfo::of::<$m::$t>()),+];

        impl Algorithm {
            /// The registered algorithm `name` with the `key=value`
            /// parameters `parts`.
            pub(crate) fn configure(
                name: &str,
                parts: &[&str],
            ) -> Result<Algorithm, $crate::spec::SpecError> {
                use $crate::registry::Declared;
                $(if name == <$m::$t as Declared>::NAME {
                    let algorithm = <$m::$t as Declared>::NAME;
                    let params = $crate::spec::apply(algorithm, parts)?;
                    <$m::$t as Declared>::check(&params)
                        .map_err(|why| $crate::spec::SpecError::Relation { algorithm, why })?;
                    return Ok(Algorithm::$t(<$m::$t as Declared>::with_params(params)));
                })+
                Err($crate::spec::SpecError::UnknownAlgorithm(name.into()))
            }

            /// The parameters that differ from the defaults, as `key=value`
            /// pairs in their declared order ([`crate::params::Params::non_default`]).
            pub fn non_default(&self) -> alloc::vec::Vec<(&'static str, alloc::string::String)> {
                use $crate::params::Params;
                use $crate::registry::Declared;
                algorithms!(@dispatch [$($t)+] self, a => a.params().non_default())
            }

            /// What this configuration will do otherwise than its
            /// parameters read ([`crate::registry::Declared::warnings`]).
            pub fn warnings(&self) -> alloc::vec::Vec<alloc::string::String> {
                algorithms!(@dispatch [$($t)+] self, a => $crate::registry::warnings(a))
            }

            /// Their name tokens ([`crate::params::Params::tokens`]).
            pub fn tokens(&self) -> alloc::vec::Vec<alloc::string::String> {
                use $crate::params::Params;
                use $crate::registry::Declared;
                algorithms!(@dispatch [$($t)+] self, a => a.params().tokens())
            }

            /// The BPF port's read-only data
            /// ([`crate::params::Params::port_values`]).
            pub fn port_values(&self) -> alloc::vec::Vec<(&'static str, u32)> {
                use $crate::params::Params;
                use $crate::registry::Declared;
                algorithms!(@dispatch [$($t)+] self, a => a.params().port_values())
            }

            /// This configuration as its BPF port runs it
            /// ([`crate::params::Params::ported`]).
            pub fn ported(&self) -> Algorithm {
                algorithms!(@dispatch [$($t)+] self, a => {
                    Algorithm::from($crate::registry::ported(a))
                })
            }
        }

        impl $crate::ops::CongestionControl for Algorithm {
            fn name(&self) -> &'static str {
                algorithms!(@dispatch [$($t)+] self, a => a.name())
            }
            fn init(&mut self, sk: &mut $crate::sock::Sock) {
                algorithms!(@dispatch [$($t)+] self, a => a.init(sk))
            }
            fn release(&mut self, sk: &mut $crate::sock::Sock) {
                algorithms!(@dispatch [$($t)+] self, a => a.release(sk))
            }
            fn ssthresh(&mut self, sk: &mut $crate::sock::Sock) -> u32 {
                algorithms!(@dispatch [$($t)+] self, a => a.ssthresh(sk))
            }
            fn cong_avoid(&mut self, sk: &mut $crate::sock::Sock, ack: u32, acked: u32) {
                algorithms!(@dispatch [$($t)+] self, a => a.cong_avoid(sk, ack, acked))
            }
            fn set_state(&mut self, sk: &mut $crate::sock::Sock, s: $crate::sock::CaState) {
                algorithms!(@dispatch [$($t)+] self, a => a.set_state(sk, s))
            }
            fn cwnd_event(&mut self, sk: &mut $crate::sock::Sock, ev: $crate::ops::CaEvent) {
                algorithms!(@dispatch [$($t)+] self, a => a.cwnd_event(sk, ev))
            }
            fn in_ack_event(&mut self, sk: &mut $crate::sock::Sock, flags: u32) {
                algorithms!(@dispatch [$($t)+] self, a => a.in_ack_event(sk, flags))
            }
            fn pkts_acked(&mut self, sk: &mut $crate::sock::Sock, sample: &$crate::ops::AckSample) {
                algorithms!(@dispatch [$($t)+] self, a => a.pkts_acked(sk, sample))
            }
            fn undo_cwnd(&mut self, sk: &mut $crate::sock::Sock) -> u32 {
                algorithms!(@dispatch [$($t)+] self, a => a.undo_cwnd(sk))
            }
            fn has_cong_control(&self) -> bool {
                algorithms!(@dispatch [$($t)+] self, a => a.has_cong_control())
            }
            fn cong_control(
                &mut self,
                sk: &mut $crate::sock::Sock,
                ack: u32,
                flag: u32,
                rs: &$crate::ops::RateSample,
            ) {
                algorithms!(@dispatch [$($t)+] self, a => a.cong_control(sk, ack, flag, rs))
            }
            fn needs_ecn(&self) -> bool {
                algorithms!(@dispatch [$($t)+] self, a => a.needs_ecn())
            }
            fn ce_echo(&self) -> $crate::ops::CeEcho {
                algorithms!(@dispatch [$($t)+] self, a => a.ce_echo())
            }
            fn visit_ca(&self, visit: $crate::ops::CaVisitor<'_>) {
                algorithms!(@dispatch [$($t)+] self, a => a.visit_ca(visit))
            }
            fn set_ca(&mut self, name: &str, value: i64) -> bool {
                algorithms!(@dispatch [$($t)+] self, a => a.set_ca(name, value))
            }
            fn reads(&self) -> &'static [$crate::sock::Field] {
                algorithms!(@dispatch [$($t)+] self, a => a.reads())
            }
            fn drawn_at_random(&self) -> &'static [&'static str] {
                algorithms!(@dispatch [$($t)+] self, a => a.drawn_at_random())
            }
            fn set_random_seed(&mut self, seed: u64) {
                algorithms!(@dispatch [$($t)+] self, a => a.set_random_seed(seed))
            }
            fn expect_random(&mut self, name: &str, value: i64) {
                algorithms!(@dispatch [$($t)+] self, a => a.expect_random(name, value))
            }
            fn expect_other_draw(&mut self) -> bool {
                algorithms!(@dispatch [$($t)+] self, a => a.expect_other_draw())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::ops::CongestionControl;
    use crate::{Algorithm, ALGORITHMS};
    use alloc::vec::Vec;

    #[test]
    fn every_registered_algorithm_is_declared_consistently() {
        for (i, info) in ALGORITHMS.iter().enumerate() {
            assert!(
                ALGORITHMS[..i].iter().all(|a| a.name != info.name),
                "{} registered twice",
                info.name
            );
            let a: Algorithm = info.name.parse().unwrap();
            assert_eq!(a.name(), info.name);
            assert_eq!(a.spec(), info.name, "defaults print as the bare name");
            assert!(!a.reads().is_empty(), "{} lists what it reads", info.name);
            for alias in info.aliases {
                assert_eq!(alias.parse::<Algorithm>().unwrap(), a);
            }
            // What a replay copies from a trace is a member it names.
            let mut names = Vec::new();
            a.visit_ca(&mut |n, _| names.push(n));
            for r in a.drawn_at_random() {
                assert!(names.contains(r), "{}: {r} is not a member", info.name);
            }
        }
    }
}
