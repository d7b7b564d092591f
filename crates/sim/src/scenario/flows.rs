//! The traffic: `[[flow]]` (bulk, transfers, request/response; replicated
//! with `count` and `stagger`), `[[ping]]` and `[[udp]]`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned as S;

use super::limits::{self, MAX_FLOWS, MAX_UDP_PPS};
use super::units::{fmt_duration, parse_bytes, Source};
use super::wording::quoted;
use super::ScenarioError;
use crate::packet::HEADER_BYTES;
use crate::time::{Time, MS};
use crate::world::{FlowConfig, PingConfig, RequestResponse, UdpConfig};

/// What every flow is checked against: the run's end, and the segment
/// size transfers are counted in.
pub(super) struct Run {
    pub duration: Time,
    pub mss: u32,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct FlowSection {
    cc: S<String>,
    rtt: S<String>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
    direction: Option<S<String>>,
    size: Option<S<String>>,
    count: Option<S<i64>>,
    stagger: Option<S<String>>,
    trace: Option<S<String>>,
    request: Option<S<String>>,
    response: Option<S<String>>,
    think: Option<S<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct PingSection {
    rtt: S<String>,
    interval: Option<S<String>>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct UdpSection {
    rate: S<String>,
    rtt: S<String>,
    size: Option<S<String>>,
    direction: Option<S<String>>,
    start: Option<S<String>>,
    stop: Option<S<String>>,
}

/// Every `[[flow]]`, each replicated `count` times; `dir` resolves
/// relative trace paths.
pub(super) fn flows(
    src: &Source,
    sections: &[FlowSection],
    run: &Run,
    dir: Option<&Path>,
) -> Result<Vec<FlowConfig>, ScenarioError> {
    let mss = run.mss;
    let mut flows = Vec::new();
    // Every trace path so far: each is one flow's.
    let mut traced = HashSet::new();
    for fs in sections {
        let cc = src.algorithm(&fs.cc, "cc")?;
        let rtt = src.duration(&fs.rtt, "rtt", &limits::RTT)?;
        let (start, stop) = start_stop(src, &fs.start, &fs.stop, run)?;
        let upload = direction(src, &fs.direction)?;
        let size_segments = match &fs.size {
            None => None,
            Some(v) => Some(segments(src, v, "size", mss, "\"30MB\" or \"64KiB\"")?),
        };
        let request_response = request_response(src, fs, mss)?;
        let count = match &fs.count {
            Some(c) => {
                let n = src.int_within(c, "count", &limits::COUNT)? as u64;
                within_total(src, c.span(), flows.len() as u64 + n)?;
                n
            }
            None => {
                within_total(src, fs.cc.span(), flows.len() as u64 + 1)?;
                1
            }
        };
        let stagger = match &fs.stagger {
            Some(s) => src.duration(s, "stagger", &limits::TIME_IN_RUN)?,
            None => 0,
        };
        // Bounded times: no overflow (count * stagger < 2^64).
        let last = start + (count - 1) * stagger;
        if let (Some(s), true) = (&fs.stagger, last >= run.duration && src.by_a_person()) {
            let late = (last - run.duration) / stagger.max(1) + 1;
            return src.err(
                s.span(),
                format!(
                    "{count} flows started `stagger` = {} apart from {} start until {}, after the run ends at {}: the last {late} would never send; make `count` or `stagger` smaller, or `duration` longer",
                    quoted(s.get_ref()),
                    fmt_duration(start),
                    fmt_duration(last),
                    fmt_duration(run.duration),
                ),
            );
        }
        if let Some(t) = &fs.trace {
            if count > 1 && !t.get_ref().contains("{i}") {
                return src.err(
                    t.span(),
                    format!(
                        "`trace` = \"{}\" would be written by all {count} flows of `count` at once; put {{i}} in the name for each flow's own, e.g. \"{}\"",
                        t.get_ref(),
                        example_with_index(t.get_ref())
                    ),
                );
            }
        }
        for i in 0..count {
            let trace = fs.trace.as_ref().map(|t| {
                let name = if count > 1 {
                    t.get_ref().replace("{i}", &i.to_string())
                } else {
                    t.get_ref().clone()
                };
                let p = PathBuf::from(name);
                match dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p,
                }
            });
            if let (Some(p), Some(t)) = (&trace, &fs.trace) {
                if !traced.insert(p.clone()) {
                    return src.err(
                        t.span(),
                        format!(
                            "`trace` = \"{}\" is also another flow's trace, and two flows writing one file leave it corrupt; give each flow its own",
                            t.get_ref()
                        ),
                    );
                }
            }
            flows.push(FlowConfig {
                cc: cc.clone(),
                rtt,
                start: start + i * stagger,
                stop,
                upload,
                size_segments,
                trace,
                request_response,
            });
        }
    }
    Ok(flows)
}

/// Refuses a scenario whose flows, pings and UDP flows would number
/// `total`, if that is above [`MAX_FLOWS`] (checked before any is made).
fn within_total(
    src: &Source,
    span: std::ops::Range<usize>,
    total: u64,
) -> Result<(), ScenarioError> {
    if total > MAX_FLOWS {
        return src.err(
            span,
            format!("this makes {total} flows, pings and UDP flows in all, more than {MAX_FLOWS}, the limit"),
        );
    }
    Ok(())
}

/// A size (`size`, `response`) in segments of `mss`: at least one byte,
/// and fewer segments than a flow can number.
fn segments(
    src: &Source,
    v: &S<String>,
    key: &str,
    mss: u32,
    example: &str,
) -> Result<u64, ScenarioError> {
    let w = limits::flow_bytes(mss);
    Ok(src.bytes(v, key, &w, example)?.div_ceil(mss as u64))
}

/// `name` with `-{i}` before its extensions: what a replicated flow's
/// trace should be called.
fn example_with_index(name: &str) -> String {
    let (dir, file) = match name.rfind('/') {
        Some(at) => name.split_at(at + 1),
        None => ("", name),
    };
    match file.find('.') {
        Some(at) if at > 0 => format!("{dir}{}-{{i}}{}", &file[..at], &file[at..]),
        _ => format!("{name}-{{i}}"),
    }
}

/// `response` (and optionally `request` and `think`) make a flow
/// request/response: a one-segment request, answered with `response`.
fn request_response(
    src: &Source,
    fs: &FlowSection,
    mss: u32,
) -> Result<Option<RequestResponse>, ScenarioError> {
    let (req, resp, think) = match (&fs.request, &fs.response, &fs.think) {
        (None, None, None) => return Ok(None),
        (req, Some(resp), think) => (req, resp, think),
        (Some(r), None, _) | (None, None, Some(r)) => {
            let key = if fs.request.is_some() {
                "request"
            } else {
                "think"
            };
            return src.err(
                r.span(),
                format!("`{key}` makes this a request/response flow, which needs `response` (the size of each response)"),
            );
        }
    };
    if fs.size.is_some() {
        return src.err(
            fs.cc.span(),
            "a flow is either a transfer (`size`) or request/response (`response`), not both"
                .into(),
        );
    }
    // One segment of the scenario's `mss`, with its headers on the wire.
    let request_bytes = match req {
        None => 100,
        Some(r) => match parse_bytes(r.get_ref()) {
            Some(b) if (1..=mss as u64).contains(&b) => b as u32 + HEADER_BYTES,
            _ => {
                return src.err(
                    r.span(),
                    format!(
                        "`request` = {} is not a size from 1B to {mss}B (one segment)",
                        quoted(r.get_ref())
                    ),
                )
            }
        },
    };
    let response_segments = segments(src, resp, "response", mss, "\"100KB\"")?;
    let think = match think {
        Some(t) => src.duration(t, "think", &limits::TIME_IN_RUN)?,
        None => 0,
    };
    Ok(Some(RequestResponse {
        request_bytes,
        response_segments,
        think,
    }))
}

pub(super) fn pings(
    src: &Source,
    sections: &[PingSection],
    run: &Run,
    before: usize,
) -> Result<Vec<PingConfig>, ScenarioError> {
    let mut pings = Vec::new();
    for p in sections {
        within_total(src, p.rtt.span(), (before + pings.len()) as u64 + 1)?;
        let (start, stop) = start_stop(src, &p.start, &p.stop, run)?;
        pings.push(PingConfig {
            rtt: src.duration(&p.rtt, "rtt", &limits::RTT)?,
            interval: match &p.interval {
                Some(i) => src.duration(i, "interval", &limits::PING_INTERVAL)?,
                None => 200 * MS,
            },
            start,
            stop,
        });
    }
    Ok(pings)
}

pub(super) fn udp(
    src: &Source,
    sections: &[UdpSection],
    run: &Run,
    before: usize,
) -> Result<Vec<UdpConfig>, ScenarioError> {
    let mut udp = Vec::new();
    for u in sections {
        within_total(src, u.rate.span(), (before + udp.len()) as u64 + 1)?;
        let (start, stop) = start_stop(src, &u.start, &u.stop, run)?;
        let rate_bps = src.rate(&u.rate, "rate", &limits::RATE)?;
        let bytes = match &u.size {
            None => 1500,
            Some(v) => match parse_bytes(v.get_ref()) {
                Some(b) if (28..=65_535).contains(&b) => b as u32,
                _ => {
                    return src.err(
                        v.span(),
                        format!(
                            "`size` = {} is not a datagram size from 28B to 65535B",
                            quoted(v.get_ref())
                        ),
                    )
                }
            },
        };
        let pps = rate_bps / (8 * bytes as u64);
        if pps > MAX_UDP_PPS {
            return src.err(
                u.rate.span(),
                format!(
                    "`rate` = {} in datagrams of {bytes} bytes is {pps} datagrams a second, more than {MAX_UDP_PPS}, the limit (as many as the fastest link carries full-sized packets); send larger datagrams or a lower rate",
                    quoted(u.rate.get_ref())
                ),
            );
        }
        udp.push(UdpConfig {
            rate_bps,
            bytes,
            rtt: src.duration(&u.rtt, "rtt", &limits::RTT)?,
            upload: direction(src, &u.direction)?,
            start,
            stop,
        });
    }
    Ok(udp)
}

/// `start` (before the run ends: a flow starting later would never send)
/// and `stop` (after `start`). Starting after the end is a contradiction in
/// a file; when a program's override (a comparison's `--sweep
/// duration=2s`) moves the end before a flow, the flow is kept and does
/// not send, as a shortened run of that file would.
fn start_stop(
    src: &Source,
    start: &Option<S<String>>,
    stop: &Option<S<String>>,
    run: &Run,
) -> Result<(Time, Option<Time>), ScenarioError> {
    let start = match start {
        Some(s) => {
            let t = src.duration(s, "start", &limits::TIME_IN_RUN)?;
            if t >= run.duration && src.by_a_person() {
                return src.err(
                    s.span(),
                    format!(
                        "`start` = {} is at or after the end of the run (`duration` = {}): it would never send; start it earlier or make the run longer",
                        quoted(s.get_ref()),
                        fmt_duration(run.duration),
                    ),
                );
            }
            t
        }
        None => 0,
    };
    let stop = match stop {
        Some(s) => {
            let t = src.duration(s, "stop", &limits::TIME_IN_RUN)?;
            if t <= start {
                return src.err(s.span(), "`stop` must come after `start`".into());
            }
            Some(t)
        }
        None => None,
    };
    Ok((start, stop))
}

/// `direction`: upload (data left to right, the default) is true.
fn direction(src: &Source, d: &Option<S<String>>) -> Result<bool, ScenarioError> {
    match d.as_ref().map(|d| (d, d.get_ref().as_str())) {
        None | Some((_, "upload")) => Ok(true),
        Some((_, "download")) => Ok(false),
        Some((d, other)) => src.err(
            d.span(),
            format!(
                "`direction` = {} is not a direction; write \"upload\" or \"download\"",
                quoted(other)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::parse;

    /// A request/response flow's request bytes on the wire, or the error.
    fn request(mss: u32, request: &str) -> Result<u32, String> {
        let text = format!(
            "duration = \"1s\"\n[tcp]\nmss = {mss}\n[link]\nrate = \"10Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\nresponse = \"100KB\"\nrequest = \"{request}\"\n"
        );
        match parse(&text, "r.toml", None) {
            Ok(c) => Ok(c.flows[0].request_response.unwrap().request_bytes),
            Err(e) => Err(e.0),
        }
    }

    #[test]
    fn a_request_is_one_segment_of_the_scenarios_mss() {
        // Jumbo frames: a 9000-byte request is one segment, plus 52 bytes
        // of headers (the 1448-byte limit of the default mss no longer holds).
        assert_eq!(request(9000, "9000B"), Ok(9052));
        assert_eq!(
            request(9000, "9001B"),
            Err("r.toml line 10: `request` = \"9001B\" is not a size from 1B to 9000B (one segment)".into())
        );
        // The IPv4 minimum: 536 bytes.
        assert_eq!(request(536, "536B"), Ok(588));
        assert_eq!(
            request(536, "1000B"),
            Err(
                "r.toml line 10: `request` = \"1000B\" is not a size from 1B to 536B (one segment)"
                    .into()
            )
        );
        assert_eq!(request(1448, "1448B"), Ok(1500));
    }

    #[test]
    fn a_trace_is_one_flows() {
        let flow = |extra: &str| format!("[[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\n{extra}");
        let parsed = |flows: &str| {
            parse(
                &format!("duration = \"1s\"\n[link]\nrate = \"10Mbit\"\n{flows}"),
                "t.toml",
                None,
            )
        };
        // `count = 3` without {i}: three flows would write one gzip.
        let e = parsed(&flow("count = 3\ntrace = \"out/cubic.csv.gz\"\n"))
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "t.toml line 8: `trace` = \"out/cubic.csv.gz\" would be written by all 3 flows of `count` at once; put {i} in the name for each flow's own, e.g. \"out/cubic-{i}.csv.gz\""
        );
        let c = parsed(&flow("count = 3\ntrace = \"cubic-{i}.csv.gz\"\n")).unwrap();
        let names: Vec<_> = c.flows.iter().map(|f| f.trace.clone().unwrap()).collect();
        assert_eq!(
            names,
            ["cubic-0.csv.gz", "cubic-1.csv.gz", "cubic-2.csv.gz"].map(std::path::PathBuf::from)
        );
        // Two sections naming one file, or a section's {i} another's name.
        let e = parsed(&format!(
            "{}{}",
            flow("trace = \"t.csv\"\n"),
            flow("trace = \"t.csv\"\n")
        ))
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("t.toml line 11: `trace` = \"t.csv\" is also another flow's trace"),
            "{e}"
        );
        let e = parsed(&format!(
            "{}{}",
            flow("trace = \"t-1.csv\"\n"),
            flow("count = 2\ntrace = \"t-{i}.csv\"\n")
        ))
        .unwrap_err()
        .0;
        assert!(e.contains("is also another flow's trace"), "{e}");
    }
}
