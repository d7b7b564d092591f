//! `[capture]`: a packet capture of the run (docs/SCENARIOS.md, "Packet
//! captures"), and `--pcap`, which says the same on a command line
//! (`left`, `right,direction=up,snaplen=96,format=pcapng`). One set of
//! value checks serves both, so a value is refused in the same words.

use serde::Deserialize;

use kleinrock_capture::spec::{DEFAULT_SNAPLEN, MAX_SNAPLEN};
use kleinrock_capture::{CaptureSpec, Direction, End, Format};

use super::units::Source;
use super::wording::quoted;
use super::{ScenarioError, S};

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct CaptureSection {
    at: Option<S<String>>,
    direction: Option<S<String>>,
    snaplen: Option<S<i64>>,
    format: Option<S<String>>,
}

/// The table's capture, defaults filled in: the left end, both
/// directions, [`DEFAULT_SNAPLEN`], pcap.
pub(super) fn capture(src: &Source, c: &CaptureSection) -> Result<CaptureSpec, ScenarioError> {
    let mut spec = CaptureSpec::at(End::Left);
    for (key, v) in [
        ("at", &c.at),
        ("direction", &c.direction),
        ("format", &c.format),
    ] {
        if let Some(v) = v {
            set(&mut spec, key, v.get_ref()).or_else(|why| src.err(v.span(), why))?;
        }
    }
    if let Some(n) = &c.snaplen {
        spec.snaplen = snaplen(*n.get_ref()).or_else(|why| src.err(n.span(), why))?;
    }
    Ok(spec)
}

/// `--pcap`'s value: where (`left` or `right`), then `key=value`s of the
/// table's other keys, comma-separated.
pub fn parse_option(text: &str) -> Result<CaptureSpec, ScenarioError> {
    let refuse = |why: String| Err(ScenarioError(format!("--pcap {}: {why}", quoted(text))));
    let mut parts = text.split(',').map(str::trim);
    let mut spec = CaptureSpec::at(End::Left);
    if let Err(why) = set(&mut spec, "at", parts.next().unwrap_or_default()) {
        return refuse(why);
    }
    for part in parts {
        let Some((key, value)) = part.split_once('=') else {
            return refuse(format!(
                "{} is not key=value; after the end give direction=, snaplen= or format=, e.g. \"left,direction=up,snaplen=96\"",
                quoted(part)
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        let result = match key {
            "snaplen" => match value.parse::<i64>() {
                Ok(n) => snaplen(n).map(|n| spec.snaplen = n),
                Err(_) => Err(format!(
                    "`snaplen` = {} is not a whole number of bytes; write e.g. snaplen=96",
                    quoted(value)
                )),
            },
            "direction" | "format" => set(&mut spec, key, value),
            _ => Err(format!(
                "{} is not a key of a capture; give direction=, snaplen= or format= (the end comes first, alone)",
                quoted(key)
            )),
        };
        if let Err(why) = result {
            return refuse(why);
        }
    }
    Ok(spec)
}

/// Sets the string key `key` of `spec` to `value`, or says why not.
fn set(spec: &mut CaptureSpec, key: &str, value: &str) -> Result<(), String> {
    let wrong = |valid: &str| Err(format!("`{key}` = {} is not {valid}", quoted(value)));
    match key {
        "at" => {
            spec.at = match value {
                "left" => End::Left,
                "right" => End::Right,
                _ => return wrong("an end of the bottleneck; write \"left\" (the upload senders' side, where pings start) or \"right\""),
            }
        }
        "direction" => {
            spec.direction = match value {
                "both" => Direction::Both,
                "up" => Direction::Up,
                "down" => Direction::Down,
                _ => return wrong("a direction; write \"both\", \"up\" (left to right) or \"down\""),
            }
        }
        "format" => {
            spec.format = match value {
                "pcap" => Format::Pcap,
                "pcapng" => Format::PcapNg,
                _ => return wrong("a capture format; write \"pcap\" or \"pcapng\""),
            }
        }
        _ => unreachable!("the table's keys"),
    }
    Ok(())
}

fn snaplen(n: i64) -> Result<u32, String> {
    if (1..=MAX_SNAPLEN as i64).contains(&n) {
        return Ok(n as u32);
    }
    Err(format!(
        "`snaplen` = {n} is out of range; it must be from 1 to {MAX_SNAPLEN} bytes (tcpdump's largest; {DEFAULT_SNAPLEN}, the default, keeps every header)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    const BASE: &str =
        "duration = \"1s\"\n[link]\nrate = \"10Mbit\"\n[[flow]]\ncc = \"reno\"\nrtt = \"10ms\"\n";

    fn with(table: &str) -> Result<Option<CaptureSpec>, ScenarioError> {
        parse(&format!("{BASE}[capture]\n{table}"), "t.toml", None).map(|c| c.capture)
    }

    #[test]
    fn the_table_and_the_option_give_the_same_capture() {
        let t = with("at = \"right\"\ndirection = \"up\"\nsnaplen = 96\nformat = \"pcapng\"\n")
            .unwrap()
            .unwrap();
        let o = parse_option("right, direction=up ,snaplen=96,format=pcapng").unwrap();
        assert_eq!(t, o);
        assert_eq!(
            (t.at, t.direction, t.snaplen, t.format),
            (End::Right, Direction::Up, 96, Format::PcapNg)
        );
        assert_eq!(with("").unwrap(), Some(CaptureSpec::at(End::Left)));
        assert_eq!(parse(BASE, "t.toml", None).unwrap().capture, None);
    }

    #[test]
    fn bad_values_are_refused_in_one_sentence() {
        assert_eq!(
            with("at = \"middle\"\n").unwrap_err().0,
            "t.toml line 8: `at` = \"middle\" is not an end of the bottleneck; write \"left\" (the upload senders' side, where pings start) or \"right\""
        );
        assert_eq!(
            with("snaplen = 0\n").unwrap_err().0,
            "t.toml line 8: `snaplen` = 0 is out of range; it must be from 1 to 262144 bytes (tcpdump's largest; 128, the default, keeps every header)"
        );
        assert!(with("file = \"x.pcap\"\n")
            .unwrap_err()
            .0
            .contains("`file`"));
        assert_eq!(
            parse_option("left,snaplen=big").unwrap_err().0,
            "--pcap \"left,snaplen=big\": `snaplen` = \"big\" is not a whole number of bytes; write e.g. snaplen=96"
        );
        assert_eq!(
            parse_option("up").unwrap_err().0,
            "--pcap \"up\": `at` = \"up\" is not an end of the bottleneck; write \"left\" (the upload senders' side, where pings start) or \"right\""
        );
        assert!(parse_option("left,up")
            .unwrap_err()
            .0
            .contains("is not key=value"));
        assert!(parse_option("left,end=right")
            .unwrap_err()
            .0
            .contains("is not a key of a capture"));
    }
}
