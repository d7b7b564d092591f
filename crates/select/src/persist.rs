//! Saving and loading what [`Bandit`] learned, the only file I/O of this
//! crate. The format is text, one record per line:
//!
//! ```text
//! kleinrock-select 3
//! candidates cubic,bbr,...
//! peer ADDR CONNS CHANGE RESETS UNAVAILABLE_UNTIL,...
//! size BUCKET DEMAND ARM ...
//! prefix ADDR CONNS CHANGE RESETS UNAVAILABLE_UNTIL,...
//! size BUCKET DEMAND ARM ...
//! fleet COST:N ...
//! end LINES FNV64
//! ```
//!
//! A `peer` or `prefix` record is followed by one `size` record per bucket
//! it has evidence in, in index order (the fields of `evidence::Entry` and
//! `evidence::Bucket`), with one ARM field per candidate, in the
//! candidates' order:
//! `n:rtt_sum:rate_sum:loss_sum:rtt_sq:rate_sq:rtt_rate:log_rtt:log_rate:log_loss:sq_log_rtt:sq_log_rate:sq_log_loss:collapses`
//! (the fields of `evidence::Arm`); `fleet` has one field per candidate
//! (`bandit::Fleet`). Numbers are written as Rust prints them (shortest
//! round-trip), so a table loads back bit for bit. Peers and prefixes are
//! listed most recently used first; `LINES` counts the lines before `end`,
//! and `FNV64` is the FNV-1a hash (hex) of every byte before the `end`
//! line. Saving writes a temporary file beside the target, syncs it,
//! renames it over the target and syncs the directory, so a crash leaves
//! the old file or the new one, never a mix. Loading refuses, in one
//! sentence, a file that is truncated, corrupt, of another version or
//! learned over other candidates: the caller reports it and starts afresh
//! rather than trust it.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;

use crate::bandit::{Bandit, Fleet};
use crate::evidence::{Arm, Bucket, Entry, BUCKETS};
use crate::{addr, peer, Peer};

const MAGIC: &str = "kleinrock-select 3";

fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn entry_lines(kind: &str, p: Peer, e: &Entry, out: &mut String) {
    let unavailable: Vec<String> = e.unavailable_until.iter().map(u64::to_string).collect();
    let _ = writeln!(
        out,
        "{kind} {} {} {} {} {}",
        addr(p),
        e.conns,
        e.change,
        e.resets,
        unavailable.join(",")
    );
    for b in &e.buckets {
        let _ = write!(out, "size {} {}", b.size, b.demand);
        for a in &b.arms {
            let _ = write!(
                out,
                " {}:{}:{}:{}:{}:{}:{}",
                a.n, a.rtt_sum, a.rate_sum, a.loss_sum, a.rtt_sq, a.rate_sq, a.rtt_rate
            );
            for x in a.log_sum.iter().chain(&a.log_sq) {
                let _ = write!(out, ":{x}");
            }
            let _ = write!(out, ":{}", a.collapses);
        }
        out.push('\n');
    }
}

/// The policy's learned state as the file's text.
pub fn to_text(b: &Bandit) -> String {
    let (peers, prefixes, fleet) = b.tables();
    let mut s = String::new();
    let _ = writeln!(s, "{MAGIC}");
    let _ = writeln!(s, "candidates {}", b.cfg.candidates.join(","));
    for (p, e) in peers.iter() {
        entry_lines("peer", p, e, &mut s);
    }
    for (p, e) in prefixes.iter() {
        entry_lines("prefix", p, e, &mut s);
    }
    s.push_str("fleet");
    for f in fleet {
        let _ = write!(s, " {}:{}", f.cost, f.n);
    }
    s.push('\n');
    let lines = s.lines().count();
    let hash = fnv64(s.as_bytes());
    let _ = writeln!(s, "end {lines} {hash:016x}");
    s
}

/// Why a saved table was refused.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad(what: &str) -> LoadError {
    LoadError(what.to_string())
}

/// Finite reals separated by `:`, exactly `n` of them, none negative
/// unless `signed` says so for its index.
fn reals(field: &str, n: usize, signed: &dyn Fn(usize) -> bool) -> Result<Vec<f64>, LoadError> {
    let v: Vec<f64> = field
        .split(':')
        .map(|x| x.parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a statistic does not parse"))?;
    if v.len() != n {
        return Err(bad("a statistic does not parse"));
    }
    if v.iter().enumerate().any(|(i, x)| *x < 0.0 && !signed(i)) {
        return Err(bad("a statistic is negative"));
    }
    Ok(v)
}

fn parse_entry(fields: &[&str], arms: usize) -> Result<(Peer, Entry), LoadError> {
    let a: IpAddr = fields
        .first()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| bad("an address does not parse"))?;
    let count = |i: usize| -> Result<u64, LoadError> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| bad("a connection count does not parse"))
    };
    if fields.len() != 5 {
        return Err(bad("a peer record has the wrong number of fields"));
    }
    let mut e = Entry::new(arms);
    e.conns = count(1)?;
    e.change = reals(fields[2], 1, &|_| false)?[0];
    e.resets = count(3)?.min(u32::MAX as u64) as u32;
    let unavailable: Vec<u64> = fields[4]
        .split(',')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a connection count does not parse"))?;
    if unavailable.len() != arms {
        return Err(bad("a record has the wrong number of algorithms"));
    }
    e.unavailable_until = unavailable;
    Ok((peer(a), e))
}

fn parse_bucket(fields: &[&str], arms: usize) -> Result<Bucket, LoadError> {
    let size: u8 = fields
        .first()
        .and_then(|f| f.parse().ok())
        .filter(|&s| s < BUCKETS)
        .ok_or_else(|| bad("a size bucket does not parse"))?;
    if fields.len() != 2 + arms {
        return Err(bad("a record has the wrong number of algorithms"));
    }
    let demand = reals(fields[1], 1, &|_| false)?[0];
    let arms = fields[2..]
        .iter()
        .map(|f| {
            // The sums of logarithms may be negative, nothing else.
            let v = reals(f, 14, &|i| (7..10).contains(&i))?;
            Ok(Arm {
                n: v[0],
                rtt_sum: v[1],
                rate_sum: v[2],
                loss_sum: v[3],
                rtt_sq: v[4],
                rate_sq: v[5],
                rtt_rate: v[6],
                log_sum: [v[7], v[8], v[9]],
                log_sq: [v[10], v[11], v[12]],
                collapses: v[13],
            })
        })
        .collect::<Result<_, LoadError>>()?;
    Ok(Bucket { size, demand, arms })
}

/// Restores `b` from a file's text, or says why it cannot be trusted.
pub fn from_text(b: &mut Bandit, text: &str) -> Result<(), LoadError> {
    let Some(end_at) = text.rfind("\nend ") else {
        return Err(bad("it has no end line (truncated?)"));
    };
    let body = &text[..end_at + 1];
    let end: Vec<&str> = text[end_at + 1..].trim_end().split(' ').collect();
    let (lines, hash) = match end[..] {
        ["end", l, h] => (l.parse::<usize>().ok(), u64::from_str_radix(h, 16).ok()),
        _ => (None, None),
    };
    if lines != Some(body.lines().count())
        || hash != Some(fnv64(body.as_bytes()))
        || !text.ends_with('\n')
    {
        return Err(bad("its checksum does not match (truncated or corrupt)"));
    }
    let mut it = body.lines();
    if it.next() != Some(MAGIC) {
        return Err(bad("it is not a kleinrock-select version 3 table"));
    }
    let want = format!("candidates {}", b.cfg.candidates.join(","));
    if it.next() != Some(want.as_str()) {
        return Err(bad("it was learned over other candidate algorithms"));
    }
    let k = b.cfg.candidates.len();
    let (mut peers, mut prefixes, mut fleet) = (Vec::new(), Vec::new(), Vec::new());
    // Which list the last peer or prefix record went to, for its buckets.
    let mut last: Option<&mut Vec<(Peer, Entry)>> = None;
    for line in it {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "peer" => {
                peers.push(parse_entry(&fields[1..], k)?);
                last = Some(&mut peers);
            }
            "prefix" => {
                prefixes.push(parse_entry(&fields[1..], k)?);
                last = Some(&mut prefixes);
            }
            "size" => {
                let bucket = parse_bucket(&fields[1..], k)?;
                let e = last
                    .as_mut()
                    .and_then(|l| l.last_mut())
                    .map(|(_, e)| e)
                    .ok_or_else(|| bad("a size record belongs to no peer"))?;
                if e.buckets.last().is_some_and(|b| b.size >= bucket.size) {
                    return Err(bad("a peer's size records are out of order"));
                }
                e.buckets.push(bucket);
            }
            "fleet" => {
                last = None;
                for f in &fields[1..] {
                    let v = reals(f, 2, &|_| false)?;
                    fleet.push(Fleet {
                        cost: v[0],
                        n: v[1],
                    });
                }
                if fleet.len() != k {
                    return Err(bad("the fleet record has the wrong number of algorithms"));
                }
            }
            _ => return Err(bad("it has a record of an unknown kind")),
        }
    }
    b.restore(peers, prefixes, fleet);
    Ok(())
}

/// Saves atomically: temporary file, fsync, rename, fsync of the directory.
pub fn save(b: &Bandit, path: &Path) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(to_text(b).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Loads into `b`; a missing file is not an error (nothing learned yet).
pub fn load(b: &mut Bandit, path: &Path) -> Result<bool, LoadError> {
    match std::fs::read_to_string(path) {
        Ok(text) => from_text(b, &text).map(|()| true).map_err(|e| {
            LoadError(format!(
                "{} is not used: {e}; it will be replaced when the table is next saved",
                path.display()
            ))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(LoadError(format!("cannot read {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table's body lines with a fresh `end` line (count and checksum),
    /// so that a test's edit is judged on its content, not refused as
    /// corruption.
    fn resealed(lines: &[&str]) -> String {
        let body = lines.join("\n") + "\n";
        let end = format!(
            "end {} {:016x}\n",
            body.lines().count(),
            fnv64(body.as_bytes())
        );
        body + &end
    }
    use crate::bandit::Config;
    use crate::Sample;

    fn learned() -> Bandit {
        let mut b = Bandit::new(Config {
            candidates: vec!["cubic".into(), "bbr".into()],
            ..Config::default()
        });
        for (i, a) in ["10.0.0.1", "10.0.0.2", "2001:db8::1"].iter().enumerate() {
            let p = peer(a.parse().unwrap());
            for k in 0..5u32 {
                let (c, _) = b.choose(p);
                b.close(
                    c,
                    &Sample {
                        min_rtt_us: 1000 + 100 * k + i as u32,
                        max_rate_bps: 1_000_000 + 1000 * k as u64,
                        // Transfers of 1 MB and connections cut at 3 s.
                        bytes_acked: 1_000_000,
                        age_us: 3_000_000,
                        complete: k % 2 == 0,
                        ..Sample::default()
                    },
                );
            }
        }
        b
    }

    #[test]
    fn a_saved_table_loads_back_identical() {
        let b = learned();
        let dir = std::env::temp_dir().join(format!("kleinrock-select-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("table");
        save(&b, &path).unwrap();
        let mut c = Bandit::new(b.cfg.clone());
        assert!(load(&mut c, &path).unwrap());
        assert_eq!(to_text(&c), to_text(&b));
        let p = peer("10.0.0.2".parse().unwrap());
        assert_eq!(c.peer_entry(p), b.peer_entry(p));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert!(!load(&mut c, &dir.join("absent")).unwrap());
    }

    #[test]
    fn truncated_or_corrupt_tables_are_refused() {
        let b = learned();
        let text = to_text(&b);
        let mut fresh = Bandit::new(b.cfg.clone());
        for cut in [10, text.len() / 2, text.len() - 5] {
            let e = from_text(&mut fresh, &text[..cut]).unwrap_err().0;
            assert!(e.contains("truncated"), "{cut}: {e}");
        }
        // One digit of the first peer's statistics changed.
        let at = text.find("\npeer ").unwrap() + 20;
        let digit = text[at..]
            .find(|c: char| c.is_ascii_digit() && c != '9')
            .unwrap()
            + at;
        let mut flipped = text.clone().into_bytes();
        flipped[digit] += 1;
        let flipped = String::from_utf8(flipped).unwrap();
        assert_ne!(flipped, text);
        assert!(from_text(&mut fresh, &flipped)
            .unwrap_err()
            .0
            .contains("checksum"));
        assert_eq!(fresh.peers_len(), 0, "nothing half-loaded");
        // Size records out of order, or belonging to no peer.
        let reordered = {
            let body = text[..text.rfind("end ").unwrap()].to_string();
            let mut lines: Vec<&str> = body.lines().collect();
            let at = lines.iter().position(|l| l.starts_with("size ")).unwrap();
            let moved = lines.remove(at);
            lines.insert(2, moved);
            resealed(&lines)
        };
        assert!(from_text(&mut fresh, &reordered)
            .unwrap_err()
            .0
            .contains("belongs to no peer"));
        let swapped = {
            let body = text[..text.rfind("end ").unwrap()].to_string();
            let mut lines: Vec<&str> = body.lines().collect();
            let at = lines.iter().position(|l| l.starts_with("size ")).unwrap();
            assert!(lines[at + 1].starts_with("size "), "two buckets per peer");
            lines.swap(at, at + 1);
            resealed(&lines)
        };
        assert!(from_text(&mut fresh, &swapped)
            .unwrap_err()
            .0
            .contains("out of order"));
        let other = Bandit::new(Config::default());
        let mut o = other.clone();
        assert!(from_text(&mut o, &text)
            .unwrap_err()
            .0
            .contains("other candidate"));
    }
}
