//! Saving and loading what [`Bandit`] learned, the only file I/O of this
//! crate. The format is text, one record per line:
//!
//! ```text
//! kleinrock-select 1
//! candidates cubic,bbr,...
//! peer ADDR CONNS SURPRISES RESETS ARM ...
//! prefix ADDR CONNS SURPRISES RESETS ARM ...
//! global cost:weight ...
//! end LINES FNV64
//! ```
//!
//! with one ARM field per candidate, in the candidates' order:
//! `n:rtt_sum:rate_sum:loss_sum:log_rtt:log_rate:log_loss:sq_rtt:sq_rate:sq_loss:unavailable_until`
//! (the fields of `bandit::Arm`). Numbers
//! are written as Rust prints them (shortest round-trip), so a table loads
//! back bit for bit. Peers and prefixes are listed most recently used first; `LINES` counts
//! the lines before `end`, and `FNV64` is the FNV-1a hash (hex) of every
//! byte before the `end` line. Saving writes a temporary file beside the
//! target, syncs it, renames it over the target and syncs the directory,
//! so a crash leaves the old file or the new one, never a mix. Loading
//! refuses, in one sentence, a file that is truncated, corrupt, of another
//! version or learned over other candidates: the caller reports it and
//! starts afresh rather than trust it.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;

use crate::bandit::{Arm, Bandit, Entry};
use crate::{addr, peer, Peer};

const MAGIC: &str = "kleinrock-select 1";

fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn entry_line(kind: &str, p: Peer, e: &Entry, out: &mut String) {
    let _ = write!(
        out,
        "{kind} {} {} {} {}",
        addr(p),
        e.conns,
        e.surprises,
        e.resets
    );
    for a in &e.arms {
        let _ = write!(out, " {}:{}:{}:{}", a.n, a.rtt_sum, a.rate_sum, a.loss_sum);
        for x in a.log_sum.iter().chain(&a.log_sq) {
            let _ = write!(out, ":{x}");
        }
        let _ = write!(out, ":{}", a.unavailable_until);
    }
    out.push('\n');
}

/// The policy's learned state as the file's text.
pub fn to_text(b: &Bandit) -> String {
    let (peers, prefixes, global) = b.tables();
    let mut s = String::new();
    let _ = writeln!(s, "{MAGIC}");
    let _ = writeln!(s, "candidates {}", b.cfg.candidates.join(","));
    for (p, e) in peers.iter() {
        entry_line("peer", p, e, &mut s);
    }
    for (p, e) in prefixes.iter() {
        entry_line("prefix", p, e, &mut s);
    }
    s.push_str("global");
    for (c, w) in global {
        let _ = write!(s, " {c}:{w}");
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
    let mut e = Entry::new(arms);
    e.conns = count(1)?;
    e.surprises = count(2)?.min(u32::MAX as u64) as u32;
    e.resets = count(3)?.min(u32::MAX as u64) as u32;
    if fields.len() != 4 + arms {
        return Err(bad("a record has the wrong number of algorithms"));
    }
    for (arm, f) in e.arms.iter_mut().zip(&fields[4..]) {
        let v: Vec<&str> = f.split(':').collect();
        let real = |i: usize| -> Result<f64, LoadError> {
            v.get(i)
                .and_then(|x| x.parse::<f64>().ok())
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad("a statistic does not parse"))
        };
        let num = |i: usize| {
            real(i).and_then(|x| {
                if x >= 0.0 {
                    Ok(x)
                } else {
                    Err(bad("a statistic is negative"))
                }
            })
        };
        *arm = Arm {
            n: num(0)?,
            rtt_sum: num(1)?,
            rate_sum: num(2)?,
            loss_sum: num(3)?,
            log_sum: [real(4)?, real(5)?, real(6)?],
            log_sq: [num(7)?, num(8)?, num(9)?],
            unavailable_until: v
                .get(10)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| bad("a statistic does not parse"))?,
        };
        if v.len() != 11 {
            return Err(bad("a statistic does not parse"));
        }
    }
    Ok((peer(a), e))
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
        return Err(bad("it is not a kleinrock-select version 1 table"));
    }
    let want = format!("candidates {}", b.cfg.candidates.join(","));
    if it.next() != Some(want.as_str()) {
        return Err(bad("it was learned over other candidate algorithms"));
    }
    let k = b.cfg.candidates.len();
    let (mut peers, mut prefixes, mut global) = (Vec::new(), Vec::new(), Vec::new());
    for line in it {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "peer" => peers.push(parse_entry(&fields[1..], k)?),
            "prefix" => prefixes.push(parse_entry(&fields[1..], k)?),
            "global" => {
                for f in &fields[1..] {
                    let (c, w) = f
                        .split_once(':')
                        .ok_or_else(|| bad("a global statistic does not parse"))?;
                    let c: f64 = c
                        .parse()
                        .map_err(|_| bad("a global statistic does not parse"))?;
                    let w: f64 = w
                        .parse()
                        .map_err(|_| bad("a global statistic does not parse"))?;
                    global.push((c, w));
                }
                if global.len() != k {
                    return Err(bad("the global record has the wrong number of algorithms"));
                }
            }
            _ => return Err(bad("it has a record of an unknown kind")),
        }
    }
    b.restore(peers, prefixes, global);
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
        let other = Bandit::new(Config::default());
        let mut o = other.clone();
        assert!(from_text(&mut o, &text)
            .unwrap_err()
            .0
            .contains("other candidate"));
    }
}
