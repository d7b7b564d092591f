//! The tuner's reports and map entries, byte for byte: `struct
//! kr_tune_rec`, `kr_tune_key` and `kr_tune_choice` of `src/bpf/tune.bpf.c`,
//! and what the policy makes of a report ([`kleinrock_select::live`]).
//! No libbpf here, so the layout is tested without root.

use kleinrock_select::live::{Closed, Opened, Outcome, Prefix};
use kleinrock_select::{Peer, Sample};

/// `sizeof(struct kr_tune_rec)`.
pub const RECORD_SIZE: usize = 112;
/// `sizeof(struct kr_tune_key)`, `sizeof(struct kr_tune_choice)`.
pub const KEY_SIZE: usize = 20;
pub const CHOICE_SIZE: usize = 24;
/// `TCP_CA_NAME_MAX`.
pub const NAME_BYTES: usize = 16;

/// `KR_TUNE_NONE`: no candidate.
const NONE: u32 = u32::MAX;
/// `KR_TUNE_NEEDS_ECN`.
const NEEDS_ECN: u32 = 1;

/// What a report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Opened,
    Sample,
    Closed,
}

/// `KR_TUNE_F_*`.
pub mod flag {
    pub const ACTIVE: u16 = 1 << 0;
    pub const ECN: u16 = 1 << 1;
    pub const CHOSEN: u16 = 1 << 2;
    pub const SET: u16 = 1 << 3;
    pub const NO_ECN: u16 = 1 << 4;
    pub const ADVISE: u16 = 1 << 5;
    pub const SWITCHED: u16 = 1 << 6;
    pub const COMPLETE: u16 = 1 << 7;
}

/// One `struct kr_tune_rec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub kind: Kind,
    pub flags: u16,
    pub cookie: u64,
    pub peer: Peer,
    /// The algorithm the connection runs, as the kernel names it.
    pub cc: String,
    /// The candidate the map held for it.
    pub alg: Option<u32>,
    pub set_err: i32,
    pub age_us: u64,
    pub bytes_acked: u64,
    pub max_rate: u64,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub rate_delivered: u32,
    pub rate_interval_us: u32,
    pub mss: u32,
    pub segs_out: u32,
    pub total_retrans: u32,
    pub delivered_ce: u32,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A name as the kernel writes it: up to the first NUL.
fn name_of(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Report {
    /// Decodes one record from the ring, or says why it cannot.
    pub fn decode(b: &[u8]) -> Result<Report, String> {
        if b.len() < RECORD_SIZE || u32_at(b, 0) as usize != RECORD_SIZE {
            return Err(format!(
                "a report of {} bytes (it says {}) where {RECORD_SIZE} were expected: \
                 the program and this kleinrock were built from different sources",
                b.len(),
                if b.len() >= 4 { u32_at(b, 0) } else { 0 }
            ));
        }
        let kind = match b[4] {
            1 => Kind::Opened,
            2 => Kind::Sample,
            3 => Kind::Closed,
            k => return Err(format!("a report of unknown kind {k}")),
        };
        let alg = u32_at(b, 48);
        Ok(Report {
            kind,
            flags: u16_at(b, 6),
            cookie: u64_at(b, 8),
            peer: u128::from_be_bytes(b[16..32].try_into().expect("16 bytes")),
            cc: name_of(&b[32..48]),
            alg: (alg != NONE).then_some(alg),
            set_err: u32_at(b, 52) as i32,
            age_us: u64_at(b, 56),
            bytes_acked: u64_at(b, 64),
            max_rate: u64_at(b, 72),
            srtt_us: u32_at(b, 80),
            min_rtt_us: u32_at(b, 84),
            rate_delivered: u32_at(b, 88),
            rate_interval_us: u32_at(b, 92),
            mss: u32_at(b, 96),
            segs_out: u32_at(b, 100),
            total_retrans: u32_at(b, 104),
            delivered_ce: u32_at(b, 108),
        })
    }

    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    /// What became of the map's entry for this connection.
    pub fn outcome(&self) -> Outcome {
        if !self.has(flag::CHOSEN) {
            Outcome::Unchosen
        } else if self.has(flag::ADVISE) {
            Outcome::Advised
        } else if self.has(flag::NO_ECN) {
            Outcome::NoEcn
        } else if self.has(flag::SET) {
            Outcome::Set
        } else {
            Outcome::Failed(self.set_err)
        }
    }

    /// What the connection has shown, as the policies read it.
    pub fn sample(&self) -> Sample {
        let mean_rate_bps = if self.age_us > 0 {
            (self.bytes_acked as u128 * 1_000_000 / self.age_us as u128) as u64
        } else {
            0
        };
        Sample {
            min_rtt_us: self.min_rtt_us,
            rate_delivered: self.rate_delivered,
            rate_interval_us: self.rate_interval_us,
            mss: self.mss,
            max_rate_bps: self.max_rate,
            mean_rate_bps,
            srtt_us: self.srtt_us,
            segs_out: self.segs_out,
            total_retrans: self.total_retrans,
            age_us: self.age_us,
            bytes_acked: self.bytes_acked,
            complete: self.has(flag::COMPLETE),
        }
    }

    /// The report of an establishment, for the policy; `index` maps a
    /// kernel name to a candidate.
    pub fn opened(&self, index: impl Fn(&str) -> Option<usize>) -> Opened {
        Opened {
            cookie: self.cookie,
            peer: self.peer,
            chosen: self.alg.map(|a| a as usize),
            outcome: self.outcome(),
            running: index(&self.cc),
            ecn: self.has(flag::ECN),
        }
    }

    /// The report of an end, for the policy.
    pub fn closed(&self, index: impl Fn(&str) -> Option<usize>) -> Closed {
        Closed {
            cookie: self.cookie,
            peer: self.peer,
            running: index(&self.cc),
            switched: self.has(flag::SWITCHED),
            sample: self.sample(),
            ce: self.delivered_ce,
        }
    }
}

/// `struct kr_tune_key` of a peer or prefix.
pub fn key_bytes(key: Prefix) -> [u8; KEY_SIZE] {
    let mut b = [0u8; KEY_SIZE];
    b[..16].copy_from_slice(&key.addr.to_be_bytes());
    b[16..].copy_from_slice(&u32::from(key.len).to_ne_bytes());
    b
}

/// `struct kr_tune_choice`: the algorithm's kernel name (at most 15
/// bytes), the daemon's index for it, and whether it needs ECN.
pub fn choice_bytes(name: &str, alg: usize, needs_ecn: bool) -> [u8; CHOICE_SIZE] {
    let mut b = [0u8; CHOICE_SIZE];
    let n = name.len().min(NAME_BYTES - 1);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    b[16..20].copy_from_slice(&(alg as u32).to_ne_bytes());
    let flags = if needs_ecn { NEEDS_ECN } else { 0 };
    b[20..24].copy_from_slice(&flags.to_ne_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record laid out as the C struct: each member at its offset.
    fn record() -> Vec<u8> {
        let mut b = vec![0u8; RECORD_SIZE];
        b[0..4].copy_from_slice(&(RECORD_SIZE as u32).to_ne_bytes());
        b[4] = 3;
        b[6..8].copy_from_slice(&(flag::CHOSEN | flag::SET | flag::COMPLETE).to_ne_bytes());
        b[8..16].copy_from_slice(&0x1234_5678_9abc_u64.to_ne_bytes());
        b[26..28].copy_from_slice(&[0xff, 0xff]);
        b[28..32].copy_from_slice(&[192, 0, 2, 9]);
        b[32..38].copy_from_slice(b"kr_cdg");
        b[48..52].copy_from_slice(&7u32.to_ne_bytes());
        b[52..56].copy_from_slice(&0i32.to_ne_bytes());
        b[56..64].copy_from_slice(&2_000_000u64.to_ne_bytes());
        b[64..72].copy_from_slice(&5_000_000u64.to_ne_bytes());
        b[72..80].copy_from_slice(&9_000_000u64.to_ne_bytes());
        for (i, v) in [1500u32, 1000, 20, 400, 1448, 3600, 12, 5]
            .iter()
            .enumerate()
        {
            b[80 + 4 * i..84 + 4 * i].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn a_record_decodes_member_by_member() {
        let r = Report::decode(&record()).unwrap();
        assert_eq!(r.kind, Kind::Closed);
        assert_eq!(r.cookie, 0x1234_5678_9abc);
        assert_eq!(kleinrock_select::addr(r.peer).to_string(), "192.0.2.9");
        assert_eq!((r.cc.as_str(), r.alg, r.set_err), ("kr_cdg", Some(7), 0));
        assert_eq!(r.outcome(), Outcome::Set);
        let s = r.sample();
        assert_eq!(
            (
                s.srtt_us,
                s.min_rtt_us,
                s.rate_delivered,
                s.rate_interval_us
            ),
            (1500, 1000, 20, 400)
        );
        assert_eq!((s.mss, s.segs_out, s.total_retrans), (1448, 3600, 12));
        assert_eq!(r.delivered_ce, 5);
        assert_eq!(s.mean_rate_bps, 2_500_000, "5 MB over 2 s");
        assert!(s.complete);
        assert_eq!(s.rate_bytes_per_us(), 20 * 1448 / 400);
    }

    #[test]
    fn outcomes_follow_the_flags() {
        let mut b = record();
        let with = |b: &mut Vec<u8>, f: u16, err: i32| {
            b[6..8].copy_from_slice(&f.to_ne_bytes());
            b[52..56].copy_from_slice(&err.to_ne_bytes());
            Report::decode(b).unwrap().outcome()
        };
        assert_eq!(with(&mut b, 0, 0), Outcome::Unchosen);
        assert_eq!(with(&mut b, flag::CHOSEN, -524), Outcome::Failed(-524));
        assert_eq!(with(&mut b, flag::CHOSEN | flag::NO_ECN, 0), Outcome::NoEcn);
        assert_eq!(
            with(&mut b, flag::CHOSEN | flag::ADVISE, 0),
            Outcome::Advised
        );
    }

    #[test]
    fn a_record_of_another_layout_is_refused() {
        let mut b = record();
        b[0..4].copy_from_slice(&100u32.to_ne_bytes());
        assert!(Report::decode(&b)
            .unwrap_err()
            .contains("different sources"));
        assert!(Report::decode(&[0u8; 3]).is_err());
        let mut b = record();
        b[4] = 9;
        assert_eq!(
            Report::decode(&b).unwrap_err(),
            "a report of unknown kind 9"
        );
    }

    #[test]
    fn keys_and_choices_are_laid_out_as_the_c_structs() {
        let p = Prefix::parse("198.51.100.0/24").unwrap();
        let k = key_bytes(p);
        assert_eq!(
            &k[..16],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 0]
        );
        assert_eq!(u32::from_ne_bytes(k[16..].try_into().unwrap()), 120);
        let c = choice_bytes("kr_dctcp", 6, true);
        assert_eq!(&c[..9], b"kr_dctcp\0");
        assert_eq!(u32_at(&c, 16), 6);
        assert_eq!(u32_at(&c, 20), NEEDS_ECN);
        let long = choice_bytes("a_name_longer_than_fifteen", 0, false);
        assert_eq!(long[15], 0, "NUL-terminated");
    }
}
