//! How much of the machine's CPU time the hypervisor took: the `steal`
//! column of /proc/stat, time a vCPU was ready to run but the host ran
//! something else. A lab on a virtual machine measures timing only as
//! well as the host lets it run, so a measurement can say how disturbed
//! it was, and a test can tell a slow delay line from a busy host.

use std::io;

/// The most of the machine's CPU time the host may take during a
/// measurement for its timing to count as undisturbed. On a quiet host
/// the share is 0-3%; on a busy one 10-57%, and timers fire milliseconds
/// late whatever the lab does (docs/LAB.md).
pub const QUIET_STEAL: f64 = 0.05;

/// Cumulative CPU times of all CPUs, in USER_HZ ticks.
#[derive(Clone, Copy, Debug)]
struct Ticks {
    steal: u64,
    total: u64,
}

/// Started at some moment; says what share of all CPU time since then
/// was stolen.
#[derive(Clone, Copy, Debug)]
pub struct StealMeter {
    start: Ticks,
}

impl StealMeter {
    pub fn start() -> io::Result<StealMeter> {
        Ok(StealMeter { start: read()? })
    }

    /// Stolen ticks over all ticks (busy, idle and stolen) since
    /// [`StealMeter::start`], in [0, 1]; 0 when no tick has passed. With
    /// the lab's CPUs kept awake, no CPU is idle and this is the share of
    /// the machine the host withheld.
    pub fn share(&self) -> io::Result<f64> {
        Ok(share_between(self.start, read()?))
    }
}

fn share_between(start: Ticks, now: Ticks) -> f64 {
    let total = now.total.saturating_sub(start.total);
    let steal = now.steal.saturating_sub(start.steal);
    if total == 0 {
        0.0
    } else {
        steal as f64 / total as f64
    }
}

fn read() -> io::Result<Ticks> {
    parse(&std::fs::read_to_string("/proc/stat")?).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "/proc/stat has no aggregate cpu line with a steal column (kernel older than 2.6.11?)",
        )
    })
}

/// The aggregate `cpu` line: user nice system idle iowait irq softirq
/// steal, then guest times, which user and nice already include.
fn parse(stat: &str) -> Option<Ticks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    (fields.len() == 8).then(|| Ticks {
        steal: fields[7],
        total: fields.iter().sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_column_and_guest_time_is_not_counted_twice() {
        let stat = "cpu  100 10 50 800 5 0 15 20 30 0\ncpu0 50 5 25 400 2 0 7 10 15 0\n";
        let t = parse(stat).unwrap();
        assert_eq!((t.steal, t.total), (20, 1000));
    }

    #[test]
    fn a_line_without_steal_is_refused() {
        assert!(parse("cpu  100 10 50 800 5 0 15\n").is_none());
        assert!(parse("intr 5\n").is_none());
    }

    #[test]
    fn the_share_is_of_the_ticks_since_start() {
        let start = parse("cpu  100 10 50 800 5 0 15 20 0 0\n").unwrap();
        let now = parse("cpu  200 10 80 930 5 0 25 50 0 0\n").unwrap();
        assert_eq!(share_between(start, now), 30.0 / 300.0);
        assert_eq!(share_between(now, now), 0.0);
        let live = StealMeter::start().unwrap().share().unwrap();
        assert!((0.0..=1.0).contains(&live), "{live}");
    }
}
