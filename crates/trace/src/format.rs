//! Column names of the hook-trace format (`design/TRACE_FORMAT.md`, copied
//! into docs/TRACE_FORMAT.md), and the mapping between a row and a [`Hook`].

use kleinrock_cc::{CaEvent, CaState, Field, Hook};

pub const SEQ: &str = "seq";
pub const TS_NS: &str = "ts_ns";
pub const HOOK: &str = "hook";
pub const FUNC: &str = "func";
pub const JIFFIES_IN: &str = "jiffies_in";
pub const JIFFIES_OUT: &str = "jiffies_out";
pub const ARG_ACK: &str = "arg_ack";
pub const ARG_ACKED: &str = "arg_acked";
pub const ARG_U: &str = "arg_u";
pub const ARG_FLAG: &str = "arg_flag";
pub const AS_PKTS_ACKED: &str = "as_pkts_acked";
pub const AS_RTT_US: &str = "as_rtt_us";
pub const AS_IN_FLIGHT: &str = "as_in_flight";
pub const RET: &str = "ret";

/// `struct rate_sample` columns, in the order the format lists them.
pub const RS_COLUMNS: [&str; 14] = [
    "rs_prior_mstamp",
    "rs_prior_delivered",
    "rs_delivered",
    "rs_interval_us",
    "rs_snd_interval_us",
    "rs_rcv_interval_us",
    "rs_rtt_us",
    "rs_losses",
    "rs_acked_sacked",
    "rs_prior_in_flight",
    "rs_last_end_seq",
    "rs_is_app_limited",
    "rs_is_retrans",
    "rs_is_ack_delayed",
];

/// Outputs a replay compares, as (column, field) pairs.
pub const OUTPUTS: [(&str, Field); 9] = [
    ("post_snd_cwnd", Field::snd_cwnd),
    ("post_snd_ssthresh", Field::snd_ssthresh),
    ("post_snd_cwnd_cnt", Field::snd_cwnd_cnt),
    ("post_pacing_rate", Field::pacing_rate),
    ("post_pacing_status", Field::pacing_status),
    ("post_app_limited", Field::app_limited),
    ("post_prior_cwnd", Field::prior_cwnd),
    ("post_ecn_flags", Field::ecn_flags),
    ("post_icsk_ack_pending", Field::icsk_ack_pending),
];

/// Outputs every trace must carry.
pub const REQUIRED_OUTPUTS: [&str; 2] = ["post_snd_cwnd", "post_snd_ssthresh"];

/// The `pre_` column of a connection field; `jiffies` is carried by
/// `jiffies_in` instead.
pub fn pre_column(f: Field) -> String {
    match f {
        Field::jiffies => JIFFIES_IN.to_string(),
        _ => format!("pre_{}", f.name()),
    }
}

/// The argument columns a hook needs.
pub fn arg_columns(hook: &str) -> &'static [&'static str] {
    match hook {
        "cong_avoid" => &[ARG_ACK, ARG_ACKED],
        "cong_control" => &[ARG_ACK, ARG_FLAG],
        "pkts_acked" => &[AS_PKTS_ACKED, AS_RTT_US, AS_IN_FLIGHT],
        "set_state" | "cwnd_event" | "in_ack_event" => &[ARG_U],
        _ => &[],
    }
}

/// The argument columns, in the order [`arg_cells`] fills them.
pub const ARG_COLUMNS: [&str; 21] = [
    ARG_ACK,
    ARG_ACKED,
    ARG_U,
    ARG_FLAG,
    AS_PKTS_ACKED,
    AS_RTT_US,
    AS_IN_FLIGHT,
    RS_COLUMNS[0],
    RS_COLUMNS[1],
    RS_COLUMNS[2],
    RS_COLUMNS[3],
    RS_COLUMNS[4],
    RS_COLUMNS[5],
    RS_COLUMNS[6],
    RS_COLUMNS[7],
    RS_COLUMNS[8],
    RS_COLUMNS[9],
    RS_COLUMNS[10],
    RS_COLUMNS[11],
    RS_COLUMNS[12],
    RS_COLUMNS[13],
];

/// The argument cells of a hook call, in [`ARG_COLUMNS`] order.
pub fn arg_cells(hook: &Hook) -> [Option<i128>; 21] {
    let mut c = [None; 21];
    match *hook {
        Hook::CongAvoid { ack, acked } => {
            c[0] = Some(ack as i128);
            c[1] = Some(acked as i128);
        }
        Hook::PktsAcked(s) => {
            c[4] = Some(s.pkts_acked as i128);
            c[5] = Some(s.rtt_us as i128);
            c[6] = Some(s.in_flight as i128);
        }
        Hook::SetState(s) => c[2] = Some(s as u8 as i128),
        Hook::CwndEvent(e) => c[2] = Some(e as u8 as i128),
        Hook::InAckEvent(f) => c[2] = Some(f as i128),
        Hook::CongControl { ack, flag, rs } => {
            c[0] = Some(ack as i128);
            c[3] = Some(flag as i128);
            let rs_cells: [i128; 14] = [
                rs.prior_mstamp as i128,
                rs.prior_delivered as i128,
                rs.delivered as i128,
                rs.interval_us as i128,
                rs.snd_interval_us as i128,
                rs.rcv_interval_us as i128,
                rs.rtt_us as i128,
                rs.losses as i128,
                rs.acked_sacked as i128,
                rs.prior_in_flight as i128,
                rs.last_end_seq as i128,
                rs.is_app_limited as i128,
                rs.is_retrans as i128,
                rs.is_ack_delayed as i128,
            ];
            for (i, v) in rs_cells.into_iter().enumerate() {
                c[7 + i] = Some(v);
            }
        }
        _ => {}
    }
    c
}

/// Why a row's cells could not make a hook call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookError {
    UnknownHook,
    /// (column, reason)
    BadArg(&'static str, String),
}

/// A (column, cell) as the integer type `ty` names, or why it does not fit.
fn fit<T: TryFrom<i128>>(
    (col, v): (&'static str, i128),
    ty: &str,
) -> Result<T, (&'static str, String)> {
    T::try_from(v).map_err(|_| (col, format!("{v} is out of range for {ty}")))
}

/// A (column, cell) holding a C `bool`: 0 or 1.
fn flag((col, v): (&'static str, i128)) -> Result<bool, (&'static str, String)> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err((col, format!("{v} is not 0 or 1 (the member is a bool)"))),
    }
}

/// Builds the hook call of a row from its name and a cell lookup (`None`
/// for an empty or absent cell).
pub fn parse_hook(name: &str, cell: &dyn Fn(&str) -> Option<i128>) -> Result<Hook, HookError> {
    let need = |col: &'static str| cell(col).ok_or((col, format!("empty, but {name} needs it")));
    let u32_of = |col: &'static str| -> Result<u32, (&'static str, String)> {
        let v = need(col)?;
        u32::try_from(v).map_err(|_| (col, format!("{v} is out of range for a u32")))
    };
    let r = (|| -> Result<Hook, (&'static str, String)> {
        Ok(match name {
            "init" => Hook::Init,
            "release" => Hook::Release,
            "ssthresh" => Hook::Ssthresh,
            "undo_cwnd" => Hook::UndoCwnd,
            "cong_avoid" => Hook::CongAvoid {
                ack: u32_of(ARG_ACK)?,
                acked: u32_of(ARG_ACKED)?,
            },
            "pkts_acked" => {
                let rtt = need(AS_RTT_US)?;
                Hook::PktsAcked(kleinrock_cc::AckSample {
                    pkts_acked: u32_of(AS_PKTS_ACKED)?,
                    rtt_us: i32::try_from(rtt)
                        .map_err(|_| (AS_RTT_US, format!("{rtt} is out of range for an s32")))?,
                    in_flight: u32_of(AS_IN_FLIGHT)?,
                })
            }
            "set_state" => {
                let v = u32_of(ARG_U)?;
                Hook::SetState(
                    u8::try_from(v)
                        .ok()
                        .and_then(CaState::from_u8)
                        .ok_or((ARG_U, format!("{v} is not a ca_state (0-4)")))?,
                )
            }
            "cwnd_event" => {
                let v = u32_of(ARG_U)?;
                Hook::CwndEvent(
                    u8::try_from(v)
                        .ok()
                        .and_then(CaEvent::from_u8)
                        .ok_or((ARG_U, format!("{v} is not a tcp_ca_event (0-5)")))?,
                )
            }
            "in_ack_event" => Hook::InAckEvent(u32_of(ARG_U)?),
            "cong_control" => {
                // Each member in its kernel type (`struct rate_sample`);
                // an empty or absent cell is 0.
                let c = |i: usize| (RS_COLUMNS[i], cell(RS_COLUMNS[i]).unwrap_or(0));
                let rs = kleinrock_cc::RateSample {
                    prior_mstamp: fit(c(0), "a u64")?,
                    prior_delivered: fit(c(1), "a u32")?,
                    prior_delivered_ce: 0,
                    delivered: fit(c(2), "an s32")?,
                    delivered_ce: 0,
                    interval_us: fit(c(3), "a long (s64)")?,
                    snd_interval_us: fit(c(4), "a u32")?,
                    rcv_interval_us: fit(c(5), "a u32")?,
                    rtt_us: fit(c(6), "a long (s64)")?,
                    losses: fit(c(7), "an int (s32)")?,
                    acked_sacked: fit(c(8), "a u32")?,
                    prior_in_flight: fit(c(9), "a u32")?,
                    last_end_seq: fit(c(10), "a u32")?,
                    is_app_limited: flag(c(11))?,
                    is_retrans: flag(c(12))?,
                    is_ack_delayed: flag(c(13))?,
                };
                Hook::CongControl {
                    ack: u32_of(ARG_ACK)?,
                    flag: u32_of(ARG_FLAG)?,
                    rs,
                }
            }
            _ => return Err(("", String::new())),
        })
    })();
    r.map_err(|(col, why)| {
        if col.is_empty() {
            HookError::UnknownHook
        } else {
            HookError::BadArg(col, why)
        }
    })
}
