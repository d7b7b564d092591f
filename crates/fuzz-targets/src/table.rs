//! The selector's saved tables, Kleinrock's and bpftune's. The input is a
//! table's body; the target adds the `end` line (count and checksum,
//! `kleinrock_select::persist::seal`) so that the content, not the
//! checksum, is what the fuzzer explores.

use kleinrock_select::bandit::{Bandit, Config};
use kleinrock_select::bpftune::Bpftune;
use kleinrock_select::persist::{self, bpftune};

use crate::judge;

/// The input as a sealed table, and the text before sealing.
fn sealed(data: &[u8]) -> (String, String) {
    let mut body = String::from_utf8_lossy(data).into_owned();
    if !body.ends_with('\n') {
        body.push('\n');
    }
    let mut table = body.clone();
    persist::seal(&mut table);
    (table, body)
}

/// Kleinrock's table, for the default configuration: refused in one line,
/// or loaded, and then what it saves loads back and saves the same (a
/// fixed point: a table survives any number of restarts unchanged).
pub fn select_table(data: &[u8]) {
    let (table, body) = sealed(data);
    let mut b = Bandit::new(Config::default());
    match persist::from_text(&mut b, &table) {
        Ok(()) => {
            let saved = persist::to_text(&b);
            let mut again = Bandit::new(Config::default());
            if let Err(e) = persist::from_text(&mut again, &saved) {
                panic!("a loaded table saves as one that is refused ({e}):\n{saved}");
            }
            assert_eq!(persist::to_text(&again), saved, "saved twice, two tables");
            let _ = b.status();
        }
        Err(e) => judge(&e.to_string(), &body),
    }
}

/// bpftune's table: likewise.
pub fn bpftune_table(data: &[u8]) {
    let (table, body) = sealed(data);
    let mut b = Bpftune::new(1);
    match bpftune::from_text(&mut b, &table) {
        Ok(()) => {
            let saved = bpftune::to_text(&b);
            let mut again = Bpftune::new(1);
            if let Err(e) = bpftune::from_text(&mut again, &saved) {
                panic!("a loaded table saves as one that is refused ({e}):\n{saved}");
            }
            assert_eq!(bpftune::to_text(&again), saved, "saved twice, two tables");
            let _ = b.status();
        }
        Err(e) => judge(&e.to_string(), &body),
    }
}
