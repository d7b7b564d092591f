//! Arbitrary sequences of what the TCP core does, played into every
//! algorithm: `kleinrock_cc::script`'s events decoded from the input's
//! bytes, as its proptest strategies decode them from random draws.

use kleinrock_cc::script::{Domain, Event, Player, Start, UntilCwndZero, SPECS};
use kleinrock_cc::Algorithm;

/// Events per input, at most.
pub const MAX_EVENTS: usize = 1_000;

/// The input's bytes as draws: little-endian u64s, zeros past the end.
struct Draws<'a>(&'a [u8]);

impl Draws<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(b)
    }

    fn array<const N: usize>(&mut self) -> [u64; N] {
        std::array::from_fn(|_| self.u64())
    }
}

/// The first byte's low bit picks the domain (`Any` or `Kernel`, see
/// `kleinrock_cc::script::Domain`), the next `Start::DRAWS` u64s the
/// connection, then each event is a kind byte and `Event::DRAWS` u64s.
/// Every spec of `SPECS` plays the script from the same start; no hook may
/// panic (overflow included). A script stops where a hook leaves cwnd 0,
/// as the kernel's next congestion avoidance would divide by it.
pub fn hooks(data: &[u8]) {
    let mut d = Draws(data);
    let domain = if d.byte() & 1 == 0 {
        Domain::Any
    } else {
        Domain::Kernel
    };
    let start = Start::decode(domain, d.array());
    let mut events = Vec::new();
    while !d.0.is_empty() && events.len() < MAX_EVENTS {
        let kind = d.byte();
        events.push(Event::decode(domain, kind, d.array()));
    }
    for spec in SPECS {
        let cc: Algorithm = spec.parse().expect("a spec of SPECS");
        let mut p = Player::new(cc, &start, UntilCwndZero::default());
        let _ = p.play_all(&events, |p, _| if p.tap.stopped { Err(()) } else { Ok(()) });
    }
}
