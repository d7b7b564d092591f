//! Kathleen Nichols' windowed min/max filter, as Linux `lib/win_minmax.c`
//! implements it: the best, second-best and third-best samples of a sliding
//! window (time or round count), so the extreme over the window is known in
//! constant space and time. BBR keeps its bandwidth estimate in one.
//!
//! Also `min_not_zero()`, from the kernel's `include/linux/minmax.h`.

/// `min_not_zero()`: the smaller of two values, where zero means "not set"
/// (CDG's RTT minima, DCTCP's alpha decay).
pub fn min_not_zero<T: Copy + Ord + Default>(a: T, b: T) -> T {
    let zero = T::default();
    if a == zero {
        b
    } else if b == zero {
        a
    } else {
        a.min(b)
    }
}

/// One sample: when (in the window's unit) and what.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// When the sample was taken (the caller's clock: jiffies or rounds).
    pub t: u32,
    /// The value.
    pub v: u32,
}

/// `struct minmax`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMax {
    /// The best, second best and third best samples, newest last
    /// (`lib/win_minmax.c`).
    pub s: [Sample; 3],
}

impl MinMax {
    /// `minmax_get()`: the current best.
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// `minmax_reset()`: forget everything but this sample.
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        let val = Sample { t, v: meas };
        self.s = [val; 3];
        self.s[0].v
    }

    /// `minmax_subwin_update()`: age the choices as time passes.
    fn subwin_update(&mut self, win: u32, val: Sample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // A whole window without a new best: promote the runners-up
            // (twice, if the second choice has aged out too).
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter window passed: take a second choice from the
            // second quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half a window passed: a third choice from the second half.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max()`: feed a sample, get the windowed max.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = Sample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min()`: feed a sample, get the windowed min.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = Sample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_holds_for_a_window_then_the_runner_up_takes_over() {
        let mut m = MinMax::default();
        m.reset(0, 0);
        assert_eq!(m.running_max(10, 0, 100), 100);
        // Lower samples do not displace the max within the window.
        assert_eq!(m.running_max(10, 3, 80), 100);
        assert_eq!(m.running_max(10, 6, 60), 100);
        assert_eq!(m.running_max(10, 10, 50), 100);
        // Past the window (dt 11 > 10): the best of the later samples.
        assert_eq!(m.running_max(10, 11, 40), 80);
        // A new max resets the filter.
        assert_eq!(m.running_max(10, 12, 200), 200);
        assert_eq!(m.s, [Sample { t: 12, v: 200 }; 3]);
    }

    #[test]
    fn min_filter_mirrors_max() {
        let mut m = MinMax::default();
        m.reset(0, 50);
        assert_eq!(m.running_min(10, 1, 70), 50);
        assert_eq!(m.running_min(10, 4, 60), 50);
        assert_eq!(m.running_min(10, 12, 90), 60);
        assert_eq!(m.running_min(10, 13, 10), 10);
    }

    #[test]
    fn min_not_zero_ignores_a_zero() {
        assert_eq!(min_not_zero(0u32, 5), 5);
        assert_eq!(min_not_zero(5u32, 0), 5);
        assert_eq!(min_not_zero(3u32, 5), 3);
        assert_eq!(min_not_zero(-3i32, 0), -3);
        assert_eq!(min_not_zero(-3i32, 2), -3);
        assert_eq!(min_not_zero(0i32, 0), 0);
    }

    #[test]
    fn window_arithmetic_wraps_like_u32() {
        let mut m = MinMax::default();
        m.reset(u32::MAX - 1, 5);
        assert_eq!(m.running_max(10, 3, 4), 5);
        assert_eq!(m.running_max(10, 20, 3), 3);
    }
}
