//! Saving and loading what [`Bpftune`] learned, for a daemon that runs
//! bpftune's policy (bpftune itself keeps its table in a BPF map and
//! loses it on restart). The format is text, one record per line, sealed
//! and saved as Kleinrock's tables are (`end LINES FNV64`, a temporary
//! file renamed into place; see [`crate::persist`]):
//!
//! ```text
//! kleinrock-select bpftune 1
//! choices CUBIC BBR HTCP DCTCP
//! host ADDR INSTANCES MIN_RTT MAX_RATE UNAVAILABLE_UNTIL,... METRIC METRIC METRIC METRIC
//! end LINES FNV64
//! ```
//!
//! `choices` counts the connections each algorithm was set on; a `host`
//! has the fields of `struct remote_host` and one METRIC per algorithm in
//! bpftune's order, `greedy:min_rtt:max_rate_delivered:count:value` (the
//! fields of `struct tcp_conn_metric`). Hosts are listed in address
//! order. A table whose counts no sequence of connections produces (more
//! learned closes than connections, more greedy closes than closes, a
//! count beyond 2^53), one with more hosts than bpftune keeps, or the same
//! host twice, is refused in one sentence and replaced at the next save.

use std::fmt::Write as _;
use std::io;
use std::net::IpAddr;
use std::path::Path;

use crate::bpftune::{Bpftune, ConnMetric, RemoteHost, CONGS, MAX_HOSTS};
use crate::evidence::MAX_COUNT;
use crate::persist::{bad, load_with, save_text, seal, sealed_body, LoadError};
use crate::{addr, peer, Peer};

/// The first line of a bpftune table.
pub const MAGIC: &str = "kleinrock-select bpftune 1";

/// The policy's table as the file's text.
pub fn to_text(b: &Bpftune) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{MAGIC}");
    let choices: Vec<String> = b.choices.iter().map(u64::to_string).collect();
    let _ = writeln!(s, "choices {}", choices.join(" "));
    let mut hosts: Vec<(Peer, &RemoteHost)> = b.hosts().collect();
    hosts.sort_by_key(|h| h.0);
    for (p, h) in hosts {
        let until: Vec<String> = h.unavailable_until.iter().map(u64::to_string).collect();
        let _ = write!(
            s,
            "host {} {} {} {} {}",
            addr(p),
            h.instances,
            h.min_rtt,
            h.max_rate_delivered,
            until.join(",")
        );
        for m in &h.metrics {
            let _ = write!(
                s,
                " {}:{}:{}:{}:{}",
                m.greedy_count, m.min_rtt, m.max_rate_delivered, m.metric_count, m.metric_value
            );
        }
        s.push('\n');
    }
    seal(&mut s);
    s
}

fn number(f: &str) -> Result<u64, LoadError> {
    f.parse().map_err(|_| bad("a number does not parse"))
}

fn parse_host(fields: &[&str]) -> Result<(Peer, RemoteHost), LoadError> {
    if fields.len() != 5 + CONGS.len() {
        return Err(bad("a host record has the wrong number of fields"));
    }
    let a: IpAddr = fields[0]
        .parse()
        .map_err(|_| bad("an address does not parse"))?;
    let mut h = RemoteHost {
        instances: number(fields[1])?,
        min_rtt: number(fields[2])?,
        max_rate_delivered: number(fields[3])?,
        ..RemoteHost::default()
    };
    let until: Vec<u64> = fields[4].split(',').map(number).collect::<Result<_, _>>()?;
    h.unavailable_until = until
        .try_into()
        .map_err(|_| bad("a record has the wrong number of algorithms"))?;
    for (m, f) in h.metrics.iter_mut().zip(&fields[5..]) {
        let v: Vec<u64> = f.split(':').map(number).collect::<Result<_, _>>()?;
        let [greedy, min_rtt, max_rate, count, value] = v[..] else {
            return Err(bad("a metric does not parse"));
        };
        *m = ConnMetric {
            greedy_count: greedy,
            min_rtt,
            max_rate_delivered: max_rate,
            metric_count: count,
            metric_value: value,
        };
    }
    Ok((peer(a), h))
}

/// Whether connections could have left a host so: counts within 2^53, no
/// more learned closes than connections, no more greedy closes than
/// learned ones.
fn possible(h: &RemoteHost) -> Result<(), &'static str> {
    let counts = [h.instances]
        .into_iter()
        .chain(h.unavailable_until)
        .chain(h.metrics.iter().map(|m| m.metric_count));
    if counts.into_iter().any(|c| c > MAX_COUNT) {
        return Err("a connection count is beyond 2^53");
    }
    if h.metrics.iter().map(|m| m.metric_count).sum::<u64>() > h.instances {
        return Err("it learned from more connections than it counted");
    }
    if h.metrics.iter().any(|m| m.greedy_count > m.metric_count) {
        return Err("it counts more greedy closes than closes");
    }
    Ok(())
}

/// Restores `b` from a file's text, or says why it cannot be trusted.
pub fn from_text(b: &mut Bpftune, text: &str) -> Result<(), LoadError> {
    let body = sealed_body(text)?;
    let mut it = body.lines();
    if it.next() != Some(MAGIC) {
        return Err(bad("it is not a table of bpftune's policy, version 1"));
    }
    let choices: Vec<u64> = it
        .next()
        .and_then(|l| l.strip_prefix("choices "))
        .ok_or_else(|| bad("it has no choices record"))?
        .split(' ')
        .map(number)
        .collect::<Result<_, _>>()?;
    let choices: [u64; 4] = choices
        .try_into()
        .map_err(|_| bad("the choices record has the wrong number of algorithms"))?;
    let mut hosts = Vec::new();
    for line in it {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields[0] != "host" {
            return Err(bad("it has a record of an unknown kind"));
        }
        let (p, h) = parse_host(&fields[1..])?;
        possible(&h).map_err(|why| {
            LoadError::Unusable(format!("the record of {} is impossible: {why}", addr(p)))
        })?;
        hosts.push((p, h));
    }
    if hosts.len() > MAX_HOSTS {
        return Err(bad("it has more hosts than bpftune keeps (1,024)"));
    }
    let mut keys: Vec<Peer> = hosts.iter().map(|(p, _)| *p).collect();
    keys.sort_unstable();
    if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(LoadError::Unusable(format!(
            "{} is listed twice",
            addr(w[0])
        )));
    }
    b.restore(hosts, choices);
    Ok(())
}

/// The longest table bpftune's policy can save: every host, each number
/// at its longest.
fn max_len() -> u64 {
    let host = 5 + 40 + 3 * 21 + 4 * 21 + 4 * (5 * 21);
    256 + MAX_HOSTS as u64 * host
}

/// Saves atomically, as [`crate::persist::save`] does.
pub fn save(b: &Bpftune, path: &Path) -> io::Result<()> {
    save_text(&to_text(b), path)
}

/// Loads into `b`, as [`crate::persist::load`] does.
pub fn load(b: &mut Bpftune, path: &Path) -> Result<bool, LoadError> {
    load_with(path, max_len(), |text| from_text(b, text))
}

/// Is the file at `path` a table of bpftune's policy (any version)?
/// `None` when nothing is there or it is not a Kleinrock table.
pub fn is_bpftune_table(path: &Path) -> io::Result<Option<bool>> {
    if kleinrock_files::kind(path)? == kleinrock_files::Kind::Absent
        || crate::persist::check_target(path).is_err()
    {
        return Ok(None);
    }
    Ok(Some(kleinrock_files::starts_with(
        path,
        b"kleinrock-select bpftune ",
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sample;

    fn learned() -> Bpftune {
        let mut b = Bpftune::new(3);
        for (i, a) in ["10.0.0.1", "2001:db8::7"].iter().enumerate() {
            let p = peer(a.parse().unwrap());
            for k in 0..9u32 {
                let alg = b.established(p);
                let s = Sample {
                    min_rtt_us: 1000 + 10 * k + i as u32,
                    rate_delivered: 10 + k,
                    rate_interval_us: 1000,
                    mss: 1448,
                    ..Sample::default()
                };
                b.close(p, alg, &s);
            }
            b.set_failed(p, 3);
        }
        b
    }

    #[test]
    fn a_table_round_trips() {
        let b = learned();
        let text = to_text(&b);
        let mut c = Bpftune::new(9);
        from_text(&mut c, &text).unwrap();
        assert_eq!(to_text(&c), text);
        assert_eq!(c.choices, b.choices);
        let p = peer("10.0.0.1".parse().unwrap());
        assert_eq!(c.host(p), b.host(p));
        assert_eq!(c.host(p).unwrap().unavailable_until[3], 9 + 50);
    }

    #[test]
    fn an_impossible_or_corrupt_table_is_refused() {
        let text = to_text(&learned());
        let mut b = Bpftune::new(1);
        let cut = &text[..text.len() - 5];
        assert!(from_text(&mut b, cut)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        // Resealed with a greedy count above its count.
        let body: Vec<String> = sealed_body(&text)
            .unwrap()
            .lines()
            .map(|l| {
                if l.starts_with("host 10.0.0.1") {
                    let mut f: Vec<String> = l.split(' ').map(str::to_string).collect();
                    f[6] = "99:1:1:1:1".into();
                    f.join(" ")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let mut edited = body.join("\n") + "\n";
        seal(&mut edited);
        let e = from_text(&mut b, &edited).unwrap_err().to_string();
        assert_eq!(
            e,
            "the record of 10.0.0.1 is impossible: it counts more greedy closes than closes"
        );
        // Kleinrock's table is not bpftune's.
        let k = crate::persist::to_text(&crate::bandit::Bandit::new(Default::default()));
        let e = from_text(&mut b, &k).unwrap_err().to_string();
        assert_eq!(e, "it is not a table of bpftune's policy, version 1");
    }

    #[test]
    fn saved_and_loaded_through_a_file() {
        let dir = std::env::temp_dir().join(format!("kr-bpftune-table-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("table");
        let b = learned();
        assert_eq!(is_bpftune_table(&path).unwrap(), None);
        save(&b, &path).unwrap();
        assert_eq!(is_bpftune_table(&path).unwrap(), Some(true));
        let mut c = Bpftune::new(2);
        assert!(load(&mut c, &path).unwrap());
        assert_eq!(to_text(&c), to_text(&b));
        crate::persist::save(&crate::bandit::Bandit::new(Default::default()), &path).unwrap();
        assert_eq!(is_bpftune_table(&path).unwrap(), Some(false));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
