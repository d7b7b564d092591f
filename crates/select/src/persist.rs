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
//! the old file or the new one, never a mix.
//!
//! The path is the user's: a table is only ever replaced where nothing is
//! or where a Kleinrock table is, a regular file whose first line is
//! `kleinrock-select N` (any version). Anything else, a device, a named
//! pipe, a symbolic link (which the rename would replace), a directory or
//! another file, is refused before it is read or written ([`check_target`],
//! which `save` and `load` apply themselves), without blocking on a pipe.
//!
//! Loading refuses, in one sentence, a table that is truncated, corrupt,
//! of another version, learned over other candidates, larger than any
//! table of this configuration, or whose contents are impossible (sums
//! without connections, counts beyond 2^53, more demand than connections:
//! [`Entry::possible`]): the caller reports it and starts afresh rather
//! than trust it ([`LoadError::Unusable`]), and the next save replaces it.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::path::Path;

use crate::bandit::{Bandit, Config, Fleet};
use crate::evidence::{Arm, Bucket, Entry, BUCKETS, MAX_COUNT};
use crate::{addr, peer, Peer};

pub mod bpftune;

const MAGIC: &str = "kleinrock-select 3";
/// What the first line of a table of any version begins with.
const MARK: &str = "kleinrock-select ";

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
    seal(&mut s);
    s
}

/// Why a saved table was not loaded.
#[derive(Debug)]
pub enum LoadError {
    /// A Kleinrock table that cannot be trusted: start afresh; the next
    /// save replaces it.
    Unusable(String),
    /// Not a Kleinrock table (another file, a device, a pipe, a link, a
    /// directory), or unreadable: it must not be replaced either.
    Refused(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Unusable(s) | LoadError::Refused(s) => f.write_str(s),
        }
    }
}

pub(crate) fn bad(what: &str) -> LoadError {
    LoadError::Unusable(what.to_string())
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
    e.resets =
        u32::try_from(count(3)?).map_err(|_| bad("a count of path changes is beyond 2^32"))?;
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
    let body = sealed_body(text)?;
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
    let mut seen_fleet = false;
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
                let (p, e) = parse_entry(&fields[1..], k)?;
                if b.prefix(p) != p {
                    return Err(bad("a prefix record's address is not a prefix"));
                }
                prefixes.push((p, e));
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
                seen_fleet = true;
                for f in &fields[1..] {
                    let v = reals(f, 2, &|_| false)?;
                    if v[1] > MAX_COUNT as f64 || (v[1] == 0.0 && v[0] != 0.0) {
                        return Err(bad("the fleet record's counts are impossible"));
                    }
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
    if !seen_fleet {
        return Err(bad("it has no fleet record"));
    }
    for list in [&peers, &prefixes] {
        let mut keys: Vec<Peer> = list.iter().map(|(p, _)| *p).collect();
        keys.sort_unstable();
        if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
            return Err(LoadError::Unusable(format!(
                "{} is listed twice",
                addr(w[0])
            )));
        }
        for (p, e) in list.iter() {
            e.possible().map_err(|why| {
                LoadError::Unusable(format!("the record of {} is impossible: {why}", addr(*p)))
            })?;
        }
    }
    b.restore(peers, prefixes, fleet);
    Ok(())
}

/// The longest table a selector of `cfg` can save: every peer and prefix
/// it keeps, with evidence in every bucket, each number at its longest
/// (25 characters). A longer file is not one of its tables, and is not
/// read whole.
fn max_len(cfg: &Config) -> u64 {
    let k = cfg.candidates.len() as u64;
    let names: u64 = cfg.candidates.iter().map(|c| c.len() as u64 + 1).sum();
    let entries = cfg.capacity as u64 + (cfg.capacity as u64 / 4).max(1);
    let entry = 128 + 21 * k + BUCKETS as u64 * (64 + 14 * 26 * k);
    (256 + names + 52 * k).saturating_add(entries.saturating_mul(entry))
}

/// Whether `path` may be replaced by a table: nothing is there, or a
/// Kleinrock table of any version (a regular file whose first line begins
/// `kleinrock-select `). The error is a clause naming the path and what it
/// is, to follow "cannot save the learned table to ...: ".
pub fn check_target(path: &Path) -> io::Result<()> {
    if kleinrock_files::kind(path)? == kleinrock_files::Kind::Absent {
        return Ok(());
    }
    if kleinrock_files::starts_with(path, MARK.as_bytes())? {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is not a Kleinrock table (its first line is not `kleinrock-select N`), and a table is only saved over a table",
            path.display()
        ),
    ))
}

/// Creates the temporary file of a save: a new regular file, never
/// through a link planted at its name; one left by a crashed save of the
/// same process id is removed first.
fn create_temporary(tmp: &Path) -> io::Result<std::fs::File> {
    match kleinrock_files::create_new(tmp) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if kleinrock_files::kind(tmp)? != kleinrock_files::Kind::File {
                return Err(e);
            }
            std::fs::remove_file(tmp)?;
            kleinrock_files::create_new(tmp)
        }
        r => r,
    }
}

/// Saves atomically: temporary file, fsync, rename, fsync of the
/// directory; only over nothing or a table ([`check_target`]), checked
/// again just before the rename.
pub fn save(b: &Bandit, path: &Path) -> io::Result<()> {
    save_text(&to_text(b), path)
}

/// Writes a table's `text` at `path` as [`save`] does: every kind of
/// table (Kleinrock's, bpftune's) is saved through here.
pub(crate) fn save_text(text: &str, path: &Path) -> io::Result<()> {
    check_target(path)?;
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
    let mut created = false;
    let result = (|| {
        let mut f = create_temporary(&tmp)?;
        created = true;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        check_target(path)?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() && created {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Loads into `b`; a missing file is not an error (nothing learned yet).
/// Something that is not a table is [`LoadError::Refused`] without being
/// read past its first line (and a pipe or device not opened at all); a
/// table that cannot be trusted is [`LoadError::Unusable`].
pub fn load(b: &mut Bandit, path: &Path) -> Result<bool, LoadError> {
    load_with(path, max_len(&b.cfg), |text| from_text(b, text))
}

/// Reads the table at `path` (at most `limit` bytes) and hands its text to
/// `restore`, as [`load`] does for every kind of table.
pub(crate) fn load_with(
    path: &Path,
    limit: u64,
    restore: impl FnOnce(&str) -> Result<(), LoadError>,
) -> Result<bool, LoadError> {
    let refused = |e: io::Error| {
        LoadError::Refused(format!(
            "cannot read {}: {}",
            path.display(),
            kleinrock_files::reason(&e)
        ))
    };
    match kleinrock_files::kind(path) {
        Ok(kleinrock_files::Kind::Absent) => return Ok(false),
        Ok(_) => {}
        Err(e) => return Err(refused(e)),
    }
    check_target(path).map_err(|e| LoadError::Refused(e.to_string()))?;
    let mut bytes = Vec::new();
    kleinrock_files::open_file(path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(refused)?;
    let unusable = |why: String| {
        LoadError::Unusable(format!(
            "{} is not used: {why}; it will be replaced when the table is next saved",
            path.display()
        ))
    };
    if bytes.len() as u64 > limit {
        return Err(unusable(format!(
            "it is longer than any table of these candidates and capacity ({limit} bytes)"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| unusable("it is not text".into()))?;
    restore(&text)
        .map(|()| true)
        .map_err(|e| unusable(e.to_string()))
}

/// A table's body (every line before `end`), once its `end` line's count
/// and checksum are found to match.
pub(crate) fn sealed_body(text: &str) -> Result<&str, LoadError> {
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
    Ok(body)
}

/// Appends the `end` line (the count of lines and their checksum) to a
/// table's body: how [`to_text`] ends a table, and how a tool that edits
/// or generates a table's text (the fuzz targets, crates/fuzz-targets)
/// makes one whose content, not its checksum, is judged.
pub fn seal(s: &mut String) {
    let lines = s.lines().count();
    let hash = fnv64(s.as_bytes());
    let _ = writeln!(s, "end {lines} {hash:016x}");
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
            let e = from_text(&mut fresh, &text[..cut]).unwrap_err().to_string();
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
            .to_string()
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
            .to_string()
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
            .to_string()
            .contains("out of order"));
        let other = Bandit::new(Config::default());
        let mut o = other.clone();
        assert!(from_text(&mut o, &text)
            .unwrap_err()
            .to_string()
            .contains("other candidate"));
    }

    /// The body of `text` (without its `end` line), as lines.
    fn body(text: &str) -> Vec<String> {
        text[..text.rfind("end ").unwrap()]
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `text` with the first line beginning `prefix` edited by `edit`,
    /// resealed.
    fn edited(text: &str, prefix: &str, edit: &dyn Fn(&str) -> String) -> String {
        let mut lines = body(text);
        let at = lines.iter().position(|l| l.starts_with(prefix)).unwrap();
        lines[at] = edit(&lines[at]);
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        resealed(&refs)
    }

    /// A `size` line whose first arm's field `i` is `v`.
    fn set_arm_field(line: &str, i: usize, v: &str) -> String {
        let mut f: Vec<String> = line.split(' ').map(str::to_string).collect();
        let mut arm: Vec<String> = f[3].split(':').map(str::to_string).collect();
        arm[i] = v.to_string();
        f[3] = arm.join(":");
        f.join(" ")
    }

    #[test]
    fn a_sealed_table_with_impossible_contents_is_refused() {
        let b = learned();
        let text = to_text(&b);
        let refuse = |t: &str, want: &str| {
            let mut fresh = Bandit::new(b.cfg.clone());
            let e = from_text(&mut fresh, t).unwrap_err();
            assert!(matches!(e, LoadError::Unusable(_)));
            assert!(e.to_string().contains(want), "want {want}, got {e}");
            assert_eq!(fresh.peers_len(), 0, "nothing half-loaded");
        };
        // No connections of an algorithm, but sums (the issue's n = 0).
        let zero_n = edited(&text, "size ", &|l| {
            set_arm_field(&set_arm_field(l, 0, "0"), 13, "0")
        });
        refuse(&zero_n, "an algorithm has statistics but no connections");
        // A rate sum no connection count explains.
        let huge = edited(&text, "size ", &|l| set_arm_field(l, 2, "1e300"));
        refuse(&huge, "beyond what its connections could add");
        // Counts past 2^53, which would wrap a u64 when counted on.
        let wraps = edited(&text, "peer ", &|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[2] = "18446744073709551615";
            f.join(" ")
        });
        refuse(&wraps, "a connection count is beyond 2^53");
        // Demand of 1e308, which printed as "inf%".
        let demand = edited(&text, "size ", &|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[2] = "1e308";
            f.join(" ")
        });
        refuse(&demand, "more demand than connections");
        let resets = edited(&text, "peer ", &|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[4] = "99999999999";
            f.join(" ")
        });
        refuse(&resets, "a count of path changes is beyond 2^32");
        let change = edited(&text, "peer ", &|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[3] = "7";
            f.join(" ")
        });
        refuse(&change, "at or beyond the detector's threshold");
        // The same peer twice; a prefix that is not one; no fleet record.
        let mut lines = body(&text);
        let first: Vec<String> = {
            let at = lines.iter().position(|l| l.starts_with("peer ")).unwrap();
            let end = lines[at + 1..]
                .iter()
                .position(|l| !l.starts_with("size "))
                .unwrap()
                + at
                + 1;
            lines[at..end].to_vec()
        };
        lines.splice(2..2, first);
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        refuse(&resealed(&refs), "is listed twice");
        let prefix = edited(&text, "prefix 10.0.0.0 ", &|l| {
            l.replacen("10.0.0.0", "10.0.0.7", 1)
        });
        refuse(&prefix, "a prefix record's address is not a prefix");
        let lines: Vec<String> = body(&text)
            .into_iter()
            .filter(|l| !l.starts_with("fleet"))
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        refuse(&resealed(&refs), "it has no fleet record");
        let fleet = edited(&text, "fleet", &|l| {
            let mut f: Vec<&str> = l.split(' ').collect();
            f[1] = "0.5:0";
            f.join(" ")
        });
        refuse(&fleet, "the fleet record's counts are impossible");
        // The table itself is possible, and every entry it saves is.
        let mut fresh = Bandit::new(b.cfg.clone());
        from_text(&mut fresh, &text).unwrap();
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("kleinrock-persist-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn only_a_table_is_read_or_replaced() {
        let b = learned();
        let d = scratch("targets");
        let notes = d.join("notes");
        std::fs::write(&notes, "my notes\n").unwrap();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let table = d.join("table");
        save(&b, &table).unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&table, &link).unwrap();
        let empty = d.join("empty");
        std::fs::write(&empty, "").unwrap();
        for (p, want) in [
            (notes.as_path(), "is not a Kleinrock table"),
            (empty.as_path(), "is not a Kleinrock table"),
            (fifo.as_path(), "is a named pipe (FIFO), not a regular file"),
            (link.as_path(), "is a symbolic link, not a regular file"),
            (
                Path::new("/dev/null"),
                "is a character device, not a regular file",
            ),
            (d.as_path(), "is a directory, not a regular file"),
        ] {
            let e = save(&b, p).unwrap_err().to_string();
            assert!(e.contains(want), "{}: {e}", p.display());
            // Loading neither blocks on the pipe nor trusts any of them.
            let mut c = Bandit::new(b.cfg.clone());
            match load(&mut c, p) {
                Err(LoadError::Refused(e)) => assert!(e.contains(want), "{e}"),
                other => panic!("{}: {other:?}", p.display()),
            }
        }
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes\n");
        assert_eq!(
            kleinrock_files::kind(&fifo).unwrap(),
            kleinrock_files::Kind::Fifo
        );
        assert_eq!(
            kleinrock_files::kind(&link).unwrap(),
            kleinrock_files::Kind::Symlink
        );
        // A table of another version is ours: not used, but replaced.
        std::fs::write(&table, "kleinrock-select 2\nold\n").unwrap();
        let mut c = Bandit::new(b.cfg.clone());
        assert!(matches!(load(&mut c, &table), Err(LoadError::Unusable(_))));
        save(&b, &table).unwrap();
        assert!(load(&mut c, &table).unwrap());
        // A file longer than any table of the configuration is not read.
        let small = Bandit::new(Config {
            capacity: 1,
            candidates: b.cfg.candidates.clone(),
            ..Config::default()
        });
        let long = format!("{MAGIC}\n{}", "x".repeat(max_len(&small.cfg) as usize));
        std::fs::write(&table, long).unwrap();
        let mut c = small.clone();
        let e = load(&mut c, &table).unwrap_err().to_string();
        assert!(e.contains("is longer than any table"), "{e}");
    }
}
