//! A progress line on stderr for each phase of a command (reading,
//! simulating, playing a policy, saving, writing): nothing for a phase
//! that ends within a second, then the phase's name, the fraction done
//! where the phase knows it, and the time spent, redrawn four times a
//! second until the phase ends. `--quiet` shows none. As the simulation's
//! progress bar always has, it is drawn whether or not stderr is a
//! terminal.
//!
//! A thread draws, so a phase that cannot report its progress (a table
//! loading, a report being written) still shows that it is alive.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// When a phase's line first appears.
const AFTER: Duration = Duration::from_secs(1);
/// How often it is redrawn.
const EVERY: Duration = Duration::from_millis(250);

/// The line for a phase `label` at `frac` done (`None`: not known), with
/// `detail`, after `elapsed`.
fn render(label: &str, frac: Option<f64>, detail: &str, elapsed: Duration) -> String {
    let mut s = label.to_string();
    if let Some(f) = frac {
        let width = 30;
        let filled = ((f.clamp(0.0, 1.0) * width as f64) as usize).min(width);
        s.push_str(&format!(
            " [{}{}] {:>3.0}%",
            "=".repeat(filled),
            " ".repeat(width - filled),
            f.clamp(0.0, 1.0) * 100.0
        ));
    }
    if !detail.is_empty() {
        s.push_str(&format!("  {detail},"));
    }
    s.push_str(&format!(" {:.1} s", elapsed.as_secs_f64()));
    s
}

struct State {
    done: bool,
    /// The length of the line last drawn (0: none yet).
    drawn: usize,
}

/// What follows the fraction, from the fraction ("3.0 s simulated").
type Detail = Box<dyn Fn(f64) -> String + Send + Sync>;

struct Shared {
    label: String,
    start: Instant,
    after: Duration,
    /// The fraction done as f64 bits; NaN while not known.
    frac: AtomicU64,
    detail: Option<Detail>,
    state: Mutex<State>,
    wake: Condvar,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Shared {
    fn draw(&self, st: &mut State) {
        let f = f64::from_bits(self.frac.load(Ordering::Relaxed));
        let frac = (!f.is_nan()).then_some(f);
        let detail = match (&self.detail, frac) {
            (Some(d), Some(f)) => d(f),
            _ => String::new(),
        };
        let line = render(&self.label, frac, &detail, self.start.elapsed());
        // Spaces over what a longer line left.
        let pad = st.drawn.saturating_sub(line.len());
        let mut out = self.sink.lock().unwrap();
        let _ = write!(out, "\r{line}{}", " ".repeat(pad));
        let _ = out.flush();
        st.drawn = line.len();
    }
}

/// One phase; its line ends when it is dropped.
pub struct Phase {
    shared: Option<Arc<Shared>>,
    ticker: Option<JoinHandle<()>>,
}

impl Phase {
    /// A phase named `label` ("simulating"), shown on stderr after a
    /// second unless `quiet`.
    pub fn start(label: &str, quiet: bool) -> Phase {
        Phase::counting(label, quiet, None)
    }

    /// A phase whose line says `detail` of the fraction done after it.
    pub fn counting(label: &str, quiet: bool, detail: Option<Detail>) -> Phase {
        if quiet {
            return Phase {
                shared: None,
                ticker: None,
            };
        }
        Phase::with(label, AFTER, detail, Box::new(std::io::stderr()))
    }

    fn with(
        label: &str,
        after: Duration,
        detail: Option<Detail>,
        sink: Box<dyn Write + Send>,
    ) -> Phase {
        let shared = Arc::new(Shared {
            label: label.to_string(),
            start: Instant::now(),
            after,
            frac: AtomicU64::new(f64::NAN.to_bits()),
            detail,
            state: Mutex::new(State {
                done: false,
                drawn: 0,
            }),
            wake: Condvar::new(),
            sink: Mutex::new(sink),
        });
        let s = shared.clone();
        let ticker = std::thread::spawn(move || {
            let mut st = s.state.lock().unwrap();
            let mut wait = s.after;
            // Done is checked before each wait: the phase may have ended
            // before this thread first took the lock.
            while !st.done {
                st = s.wake.wait_timeout(st, wait).unwrap().0;
                if st.done {
                    return;
                }
                if s.start.elapsed() >= s.after {
                    s.draw(&mut st);
                    wait = EVERY;
                } else {
                    wait = s.after.saturating_sub(s.start.elapsed());
                }
            }
        });
        Phase {
            shared: Some(shared),
            ticker: Some(ticker),
        }
    }

    /// The fraction done, from 0 to 1.
    pub fn set(&self, frac: f64) {
        if let Some(s) = &self.shared {
            s.frac.store(frac.to_bits(), Ordering::Relaxed);
        }
    }
}

impl Drop for Phase {
    /// Ends the line: drawn once more as the phase ended if it was shown,
    /// or if the phase outlasted its second before the ticker drew.
    fn drop(&mut self) {
        let Some(s) = self.shared.take() else {
            return;
        };
        let mut st = s.state.lock().unwrap();
        st.done = true;
        s.wake.notify_all();
        if st.drawn > 0 || s.start.elapsed() >= s.after {
            s.draw(&mut st);
            let _ = writeln!(s.sink.lock().unwrap());
        }
        drop(st);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the test reads back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_phase_shows_its_name_fraction_and_detail_once_it_has_lasted() {
        let buf = Buffer::default();
        let p = Phase::with(
            "simulating",
            Duration::ZERO,
            Some(Box::new(|f| format!("{:.1} s simulated", f * 6.0))),
            Box::new(buf.clone()),
        );
        p.set(0.5);
        drop(p);
        let out = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let last = out.rsplit('\r').next().unwrap();
        assert!(
            last.starts_with("simulating [===============               ]  50%  3.0 s simulated, ")
                && last.ends_with(" s\n"),
            "{out:?}"
        );
        // Without a fraction, the name and the time only.
        assert_eq!(
            render("saving the table", None, "", Duration::from_millis(1500)),
            "saving the table 1.5 s"
        );
    }

    #[test]
    fn a_short_or_quiet_phase_shows_nothing() {
        let buf = Buffer::default();
        let p = Phase::with(
            "writing",
            Duration::from_secs(3600),
            None,
            Box::new(buf.clone()),
        );
        p.set(1.0);
        drop(p);
        assert!(buf.0.lock().unwrap().is_empty());
        let q = Phase::start("writing", true);
        assert!(q.shared.is_none() && q.ticker.is_none());
    }
}
