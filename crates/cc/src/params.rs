//! Algorithm parameters as values: parsed from `key=value` pairs of a spec,
//! printed back in canonical form (only what differs from the default).
//!
//! An algorithm declares its parameters once, with `params!`: the key
//! (which is also the field's name and the name of the BPF port's
//! `const volatile` that holds it), the type, the default, the accepted
//! values, the help line `kleinrock algorithms` prints and the token a
//! derived kernel name uses. The struct, its `Default`, [`Params::INFO`],
//! parsing, printing and the BPF read-only data all follow from that one
//! declaration:
//!
//! ```text
//! params! {
//!     /// CUBIC's parameters.
//!     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
//!     pub struct CubicParams {
//!         /// Multiplicative decrease, /1024.
//!         beta: u32 {
//!             default: 717,
//!             range: 1..=1023,
//!             help: "multiplicative decrease, /1024 (default 717)",
//!             token: Token::Prefix("b"),
//!         },
//!         /// Another key for `friendly`: sets it, is never printed.
//!         tcp_friendliness: bool => friendly {
//!             map: |on| if on { Friendly::Linux } else { Friendly::Off },
//!             help: "the kernel's switch: 0 is friendly=off, 1 is friendly=linux",
//!         },
//!     }
//! }
//! ```
//!
//! A parameter's clauses come in this order, all but `default` and `help`
//! optional: `default`, `values` (the accepted values as printed, when the
//! type's or the range's would not say it), `range` (integers), `parse` (a
//! `fn(&str) -> Option<T>` instead of the type's), `check` (a further
//! `fn(T) -> bool`), `help`, `token` (a [`Token`], none by default), and
//! `ported` (the BPF port has no variable for the parameter and always runs
//! this value, so it is not loaded either).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::echo::show;

/// How a derived name shortens a parameter that differs from its default:
/// the kernel keys congestion controls by at most 15 bytes (`kr_cubic_b768`).
#[derive(Clone, Copy, Debug)]
pub enum Token {
    /// None: the parameter does not change what the name stands for.
    None,
    /// The prefix followed by the printed value (`beta=768` is `b768`).
    Prefix(&'static str),
    /// One token per printed value (`hystart=off` is `nohs`).
    Values(&'static [(&'static str, &'static str)]),
}

/// One parameter an algorithm accepts, for error messages, docs and names.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    /// The key a spec sets it by (`beta`).
    pub key: &'static str,
    /// The parameter it sets: its own key, or for another key of a
    /// parameter (`tcp_friendliness`) that parameter's (`friendly`). A spec
    /// sets each at most once.
    pub sets: &'static str,
    /// The accepted values, e.g. `0|1` or `1..1023`.
    pub values: &'static str,
    /// One line for `kleinrock algorithms`.
    pub help: &'static str,
    /// How the parameter shows in a spec's printed name.
    pub token: Token,
}

impl ParamInfo {
    /// The name token for the printed, non-default `value`, if it has one.
    pub fn token(&self, value: &str) -> Option<String> {
        match self.token {
            Token::None => None,
            Token::Prefix(p) => Some(alloc::format!("{p}{value}")),
            Token::Values(map) => map
                .iter()
                .find(|(v, _)| *v == value)
                .map(|(_, t)| t.to_string()),
        }
    }
}

/// Why a parameter was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// The algorithm has no parameter `key`.
    Unknown {
        /// The key given.
        key: String,
    },
    /// `value` is not one the parameter `key` accepts.
    BadValue {
        /// The key given.
        key: String,
        /// The value given.
        value: String,
    },
}

impl ParamError {
    /// No parameter is called `key`.
    pub fn unknown(key: &str) -> ParamError {
        ParamError::Unknown { key: key.into() }
    }
    /// `value` is not one `key` accepts.
    pub fn value(key: &str, value: &str) -> ParamError {
        ParamError::BadValue {
            key: key.into(),
            value: value.into(),
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Unknown { key } => write!(f, "unknown parameter `{}`", show(key)),
            ParamError::BadValue { key, value } => {
                write!(
                    f,
                    "`{}` is not a valid value for `{}`",
                    show(value),
                    show(key)
                )
            }
        }
    }
}

/// A parameter set: defaults, `set` by key, `get` by key.
pub trait Params: Default + PartialEq + Clone {
    /// Every parameter, in declared order.
    const INFO: &'static [ParamInfo];

    /// Sets the parameter `key` from a spec's text.
    fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError>;

    /// The parameter `key` as a spec prints it.
    fn get(&self, key: &str) -> String;

    /// The BPF port's read-only data: each parameter the port has, by the
    /// name of its `const volatile __u32` (the key), with its value.
    fn port_values(&self) -> Vec<(&'static str, u32)>;

    /// This configuration as the BPF port runs it: the parameters the port
    /// cannot vary take the value it always runs (CDG's `cwr=own`).
    fn ported(&self) -> Self;

    /// The `key=value` pairs that differ from the defaults, in `INFO` order.
    fn non_default(&self) -> Vec<(&'static str, String)> {
        let d = Self::default();
        Self::INFO
            .iter()
            .filter(|p| self.get(p.key) != d.get(p.key))
            .map(|p| (p.key, self.get(p.key)))
            .collect()
    }

    /// The tokens of the parameters that differ from their defaults, in
    /// `INFO` order: what a derived kernel name appends (`nohs`, `b768`).
    fn tokens(&self) -> Vec<String> {
        self.non_default()
            .iter()
            .filter_map(|(key, value)| Self::INFO.iter().find(|p| p.key == *key)?.token(value))
            .collect()
    }
}

/// A type a parameter can have: how a spec writes it, and how a BPF port
/// holds it.
pub trait ParamValue: Copy + PartialEq {
    /// The accepted values as `kleinrock algorithms` lists them, where the
    /// parameter's declaration gives no range or list of its own.
    const VALUES: &'static str;
    /// The value a spec writes as `s`, if it is one.
    fn parse(s: &str) -> Option<Self>;
    /// The canonical spelling, as a spec prints it back.
    fn print(self) -> String;
    /// The value of the port's `const volatile __u32`.
    fn port(self) -> u32;
}

impl ParamValue for u32 {
    const VALUES: &'static str = "0..4294967295";
    fn parse(s: &str) -> Option<u32> {
        s.parse().ok()
    }
    fn print(self) -> String {
        self.to_string()
    }
    fn port(self) -> u32 {
        self
    }
}

impl ParamValue for bool {
    const VALUES: &'static str = "0|1";
    fn parse(s: &str) -> Option<bool> {
        flag_value(s)
    }
    fn print(self) -> String {
        (self as u8).to_string()
    }
    fn port(self) -> u32 {
        self as u32
    }
}

/// Parses an on/off value: `1|0|on|off|true|false|yes|no`.
pub fn flag_value(v: &str) -> Option<bool> {
    match v {
        "1" | "on" | "true" | "yes" => Some(true),
        "0" | "off" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// Declares an enum a parameter takes, each variant with the value its BPF
/// port's `__u32` holds and its name in specs, in the order
/// `kleinrock algorithms` lists them (the first is listed first, whichever
/// is the default).
macro_rules! param_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(#[$fm:meta])* $first:ident = $fport:literal => $fname:literal,
            $($(#[$vm:meta])* $variant:ident = $port:literal => $vname:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $vis enum $name {
            $(#[$fm])* $first = $fport,
            $($(#[$vm])* $variant = $port,)*
        }

        impl $crate::params::ParamValue for $name {
            const VALUES: &'static str = concat!($fname $(, "|", $vname)*);
            fn parse(s: &str) -> Option<Self> {
                match s {
                    $fname => Some($name::$first),
                    $($vname => Some($name::$variant),)*
                    _ => None,
                }
            }
            fn print(self) -> alloc::string::String {
                match self {
                    $name::$first => $fname,
                    $($name::$variant => $vname,)*
                }
                .into()
            }
            fn port(self) -> u32 {
                self as u32
            }
        }
    };
}

pub(crate) use param_enum;

/// Declares a parameter struct and derives [`Params`] for it (see the
/// module's documentation). Every parameter ends with a comma.
macro_rules! params {
    // A parameter, a field of the struct. Its clauses are read here, once,
    // into what the rules below need: the accepted values as printed, the
    // parser, the validity test, the help, the token, and the value the port
    // always runs (none if it has a variable for it).
    (@decl $head:tt [$($fields:tt)*] [$($defaults:tt)*] [$($params:tt)*]
        $(#[$doc:meta])* $key:ident : $t:ty {
            default: $default:expr,
            $(values: $values:literal,)?
            $(range: $lo:literal ..= $hi:literal,)?
            $(parse: $parse:expr,)?
            $(check: $check:expr,)?
            help: $help:literal,
            $(token: $token:expr,)?
            $(ported: $ported:expr,)?
        },
        $($rest:tt)*) => {
        $crate::params::params!(@decl $head
            [$($fields)* $(#[$doc])* pub $key: $t,]
            [$($defaults)* $key: $default,]
            [$($params)* (param $key [$t]
                [$crate::params::params!(@first
                    $($values,)? $(concat!($lo, "..", $hi),)?
                    <$t as $crate::params::ParamValue>::VALUES)]
                [$crate::params::params!(@first
                    $($parse,)? <$t as $crate::params::ParamValue>::parse)]
                [|_v: &$t| true $(&& ($lo..=$hi).contains(_v))? $(&& $check(*_v))?]
                $help
                [$crate::params::params!(@first $($token,)? $crate::params::Token::None)]
                [$($ported)?])]
            $($rest)*);
    };
    // Another key for a parameter: it sets `target` and is never printed.
    (@decl $head:tt $fields:tt $defaults:tt [$($params:tt)*]
        $(#[$doc:meta])* $key:ident : $t:ty => $target:ident {
            map: $map:expr,
            help: $help:literal,
        },
        $($rest:tt)*) => {
        $crate::params::params!(@decl $head $fields $defaults
            [$($params)* (alias $key $target [$t] [$map] $help)]
            $($rest)*);
    };
    (@decl [$(#[$meta:meta])* $vis:vis struct $name:ident] [$($fields:tt)*] [$($defaults:tt)*]
        [$($param:tt)*]) => {
        $(#[$meta])*
        $vis struct $name { $($fields)* }

        impl Default for $name {
            fn default() -> Self {
                $name { $($defaults)* }
            }
        }

        impl $crate::params::Params for $name {
            const INFO: &'static [$crate::params::ParamInfo] =
                &[$($crate::params::params!(@info $param)),*];

            // A set without parameters never reads them.
            #[allow(unused_variables)]
            fn set(&mut self, key: &str, value: &str) -> Result<(), $crate::params::ParamError> {
                $($crate::params::params!(@set self key value $param);)*
                Err($crate::params::ParamError::unknown(key))
            }

            #[allow(unused_variables)]
            fn get(&self, key: &str) -> alloc::string::String {
                $($crate::params::params!(@get self key $param);)*
                alloc::string::String::new()
            }

            fn port_values(&self) -> alloc::vec::Vec<(&'static str, u32)> {
                let values: [Option<(&'static str, u32)>; 0 $(+ $crate::params::params!(@one $param))*] =
                    [$($crate::params::params!(@port self $param)),*];
                values.into_iter().flatten().collect()
            }

            fn ported(&self) -> Self {
                #[allow(unused_mut)]
                let mut p = self.clone();
                $($crate::params::params!(@ported p $param);)*
                p
            }
        }
    };

    (@info (param $key:ident $t:tt [$($values:tt)*] $parse:tt $valid:tt $help:literal
        [$($token:tt)*] $ported:tt)) => {
        $crate::params::ParamInfo {
            key: stringify!($key),
            sets: stringify!($key),
            values: $($values)*,
            help: $help,
            token: $($token)*,
        }
    };
    (@info (alias $key:ident $target:ident [$t:ty] $map:tt $help:literal)) => {
        $crate::params::ParamInfo {
            key: stringify!($key),
            sets: stringify!($target),
            values: <$t as $crate::params::ParamValue>::VALUES,
            help: $help,
            token: $crate::params::Token::None,
        }
    };

    (@set $self:ident $key_in:ident $value:ident (param $key:ident [$t:ty] $values:tt
        [$($parse:tt)*] [$($valid:tt)*] $help:literal $token:tt $ported:tt)) => {
        if $key_in == stringify!($key) {
            let parse: fn(&str) -> Option<$t> = $($parse)*;
            return match parse($value).filter($($valid)*) {
                Some(v) => {
                    $self.$key = v;
                    Ok(())
                }
                None => Err($crate::params::ParamError::value($key_in, $value)),
            };
        }
    };
    (@set $self:ident $key_in:ident $value:ident
        (alias $key:ident $target:ident [$t:ty] [$map:expr] $help:literal)) => {
        if $key_in == stringify!($key) {
            let parsed = <$t as $crate::params::ParamValue>::parse($value)
                .ok_or_else(|| $crate::params::ParamError::value($key_in, $value))?;
            $self.$target = $map(parsed);
            return Ok(());
        }
    };

    (@get $self:ident $key_in:ident (param $key:ident $($rest:tt)*)) => {
        if $key_in == stringify!($key) {
            return $crate::params::ParamValue::print($self.$key);
        }
    };
    (@get $self:ident $key_in:ident (alias $($rest:tt)*)) => {};

    // What the port's read-only data holds: a parameter it has a variable
    // for (no value it always runs).
    (@port $self:ident (param $key:ident $t:tt $values:tt $parse:tt $valid:tt $help:literal
        $token:tt [])) => {
        Some((stringify!($key), $crate::params::ParamValue::port($self.$key)))
    };
    (@port $self:ident $other:tt) => {
        None
    };
    (@one $param:tt) => {
        1
    };

    (@ported $p:ident (param $key:ident $t:tt $values:tt $parse:tt $valid:tt $help:literal
        $token:tt [$ported:expr])) => {
        $p.$key = $ported;
    };
    (@ported $p:ident $other:tt) => {};

    // The first of what is given: an optional clause, else its default.
    (@first $e:expr) => { $e };
    (@first $e:expr, $($default:tt)*) => { $e };

    // The entry point, after the internal rules it expands to.
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($body:tt)* }) => {
        $crate::params::params!(@decl [$(#[$meta])* $vis struct $name] [] [] [] $($body)*);
    };
}

pub(crate) use params;

params! {
    /// The parameters of an algorithm that takes none (BBR: the kernel's
    /// are compile-time constants).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct NoParams {}
}

#[cfg(test)]
mod tests {
    use super::*;

    param_enum! {
        /// A demo choice.
        pub enum Choice {
            #[default]
            Plain = 0 => "plain",
            Fancy = 5 => "fancy",
        }
    }

    params! {
        /// A parameter of each kind.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Demo {
            /// An integer in a range.
            count: u32 {
                default: 8,
                range: 1..=256,
                check: |v: u32| v.is_power_of_two(),
                help: "a count",
                token: Token::Prefix("c"),
            },
            flag: bool {
                default: true,
                help: "a flag",
                token: Token::Values(&[("0", "nof")]),
            },
            choice: Choice {
                default: Choice::Plain,
                help: "a choice",
                ported: Choice::Fancy,
            },
            switch: bool => choice {
                map: |on| if on { Choice::Fancy } else { Choice::Plain },
                help: "another key for choice",
            },
        }
    }

    #[test]
    fn one_declaration_gives_defaults_info_parsing_and_printing() {
        let d = Demo::default();
        assert_eq!((d.count, d.flag, d.choice), (8, true, Choice::Plain));
        let keys: Vec<_> = Demo::INFO.iter().map(|p| (p.key, p.values)).collect();
        let sets: Vec<_> = Demo::INFO.iter().map(|p| p.sets).collect();
        assert_eq!(sets, ["count", "flag", "choice", "choice"]);
        assert_eq!(
            keys,
            [
                ("count", "1..256"),
                ("flag", "0|1"),
                ("choice", "plain|fancy"),
                ("switch", "0|1")
            ]
        );
        let mut p = d;
        p.set("count", "16").unwrap();
        p.set("flag", "off").unwrap();
        p.set("switch", "1").unwrap();
        assert_eq!((p.count, p.flag, p.choice), (16, false, Choice::Fancy));
        assert_eq!(
            p.non_default(),
            [
                ("count", "16".to_string()),
                ("flag", "0".to_string()),
                ("choice", "fancy".to_string())
            ]
        );
        for (k, v) in [
            ("count", "3"),
            ("count", "512"),
            ("flag", "2"),
            ("switch", "x"),
        ] {
            assert_eq!(p.set(k, v), Err(ParamError::value(k, v)), "{k}={v}");
        }
        assert_eq!(p.set("nope", "1"), Err(ParamError::unknown("nope")));
    }

    #[test]
    fn the_port_gets_what_it_has_and_runs_what_it_cannot_vary() {
        let p = Demo::default();
        assert_eq!(p.port_values(), [("count", 8), ("flag", 1)]);
        assert_eq!(p.ported().choice, Choice::Fancy);
        assert_eq!(Choice::Fancy.port(), 5);
        assert_eq!(Demo::INFO[0].token("16").as_deref(), Some("c16"));
        assert_eq!(Demo::INFO[1].token("0").as_deref(), Some("nof"));
        assert_eq!(Demo::INFO[2].token("fancy"), None);
    }
}
