//! Algorithm parameters as values: parsed from `key=value` pairs of a spec,
//! printed back in canonical form (only what differs from the default).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// One parameter an algorithm accepts, for error messages and docs.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub key: &'static str,
    /// The accepted values, e.g. `0|1` or `1..1023`.
    pub values: &'static str,
    pub help: &'static str,
}

/// Why a parameter was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    Unknown { key: String },
    BadValue { key: String, value: String },
}

impl ParamError {
    pub fn unknown(key: &str) -> ParamError {
        ParamError::Unknown { key: key.into() }
    }
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
            ParamError::Unknown { key } => write!(f, "unknown parameter `{key}`"),
            ParamError::BadValue { key, value } => {
                write!(f, "`{value}` is not a valid value for `{key}`")
            }
        }
    }
}

/// A parameter set: defaults, `set` by key, `get` by key.
pub trait Params: Default + PartialEq + Clone {
    const INFO: &'static [ParamInfo];

    fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError>;

    fn get(&self, key: &str) -> String;

    /// The `key=value` pairs that differ from the defaults, in `INFO` order.
    fn non_default(&self) -> Vec<(&'static str, String)> {
        let d = Self::default();
        Self::INFO
            .iter()
            .filter(|p| self.get(p.key) != d.get(p.key))
            .map(|p| (p.key, self.get(p.key)))
            .collect()
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

/// Parses an integer in `lo..=hi`.
pub fn int_value(key: &str, v: &str, lo: u32, hi: u32) -> Result<u32, ParamError> {
    match v.parse::<u32>() {
        Ok(x) if (lo..=hi).contains(&x) => Ok(x),
        _ => Err(ParamError::value(key, v)),
    }
}
