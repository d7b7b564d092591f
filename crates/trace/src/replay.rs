//! Replaying a trace: drive an algorithm with each row's inputs and compare
//! its outputs with the row's, bit for bit.
//!
//! Semantics (docs/TRACE_FORMAT.md): each row's `pre_` connection state is
//! taken as given, not chained from the previous row, because the TCP core
//! changes cwnd and ssthresh between hooks; the algorithm's private state
//! does chain, starting from the all-zero state the kernel gives a new
//! socket (so a `pkts_acked` before `init` behaves as in the kernel). Where
//! `jiffies_in` and `jiffies_out` differ, an output computed with either is
//! accepted. Members the kernel draws at random are copied from the trace.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use kleinrock_cc::{Algorithm, CongestionControl, Field, Hook, Sock};

use crate::format::{self, HookError, OUTPUTS, REQUIRED_OUTPUTS};
use crate::read::{TraceError, TraceReader};

/// One output that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    pub column: String,
    pub expected: i128,
    pub actual: i128,
}

/// The first row whose outputs differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub row: u64,
    pub line: u64,
    pub hook: &'static str,
    pub diffs: Vec<Diff>,
}

/// Rows and divergent rows of one hook.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookCount {
    pub rows: u64,
    pub divergent: u64,
}

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub trace: String,
    pub spec: String,
    pub hz: u32,
    pub rows: u64,
    pub divergent: u64,
    pub per_hook: BTreeMap<&'static str, HookCount>,
    pub first: Option<Divergence>,
}

impl Report {
    /// True when every row matched.
    pub fn agrees(&self) -> bool {
        self.divergent == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "replayed {} rows of {} with {} at HZ={}: {} diverge",
            self.rows, self.trace, self.spec, self.hz, self.divergent
        )?;
        writeln!(f, "  {:<14} {:>10} {:>10}", "hook", "rows", "diverge")?;
        for (hook, c) in &self.per_hook {
            writeln!(f, "  {:<14} {:>10} {:>10}", hook, c.rows, c.divergent)?;
        }
        if let Some(d) = &self.first {
            writeln!(
                f,
                "first divergence: row {} (line {}), {}:",
                d.row, d.line, d.hook
            )?;
            for x in &d.diffs {
                writeln!(
                    f,
                    "  {:<24} trace {:>12}   {} {:>12}",
                    x.column, x.expected, self.spec, x.actual
                )?;
            }
        }
        Ok(())
    }
}

/// Column positions resolved once from the header.
struct Layout {
    hook: usize,
    jiffies_out: Option<usize>,
    pre: Vec<(Field, usize)>,
    args: Vec<(&'static str, usize)>,
    outputs: Vec<(&'static str, Field, usize)>,
    ret: Option<usize>,
    /// (member, column name, index) in the algorithm's visit order, less
    /// the members drawn at random.
    post_ca: Vec<(&'static str, String, usize)>,
    random_ca: Vec<(&'static str, usize)>,
}

fn layout(r: &TraceReader, cc: &Algorithm) -> Result<Layout, TraceError> {
    let hook = r.require(format::HOOK, "every row names its hook")?;
    for col in REQUIRED_OUTPUTS {
        r.require(col, "replay compares it")?;
    }
    let mut pre = Vec::new();
    for &f in Field::ALL {
        if let Some(i) = r.column(&format::pre_column(f)) {
            pre.push((f, i));
        }
    }
    for &f in cc.reads() {
        let why = format!("{} reads {}", cc.name(), f.name());
        r.require(&format::pre_column(f), &why)?;
    }
    let outputs = OUTPUTS
        .iter()
        .filter_map(|&(c, f)| r.column(c).map(|i| (c, f, i)))
        .collect();
    let mut post_ca = Vec::new();
    cc.visit_ca(&mut |name, _| {
        let column = format!("post_ca_{name}");
        // Members drawn at random are compared too: the draw was forced to
        // the trace's value, so a difference means the algorithm did not
        // draw where the kernel did.
        if let Some(i) = r.column(&column) {
            post_ca.push((name, column, i));
        }
    });
    let random_ca = cc
        .drawn_at_random()
        .iter()
        .filter_map(|&n| r.column(&format!("post_ca_{n}")).map(|i| (n, i)))
        .collect();
    Ok(Layout {
        hook,
        jiffies_out: r.column(format::JIFFIES_OUT),
        pre,
        args: format::ARG_COLUMNS
            .iter()
            .filter_map(|&c| r.column(c).map(|i| (c, i)))
            .collect(),
        outputs,
        ret: r.column(format::RET),
        post_ca,
        random_ca,
    })
}

fn compare(lay: &Layout, cells: &[Option<i128>], sk: &Sock, cc: &Algorithm, ret: u32) -> Vec<Diff> {
    let mut diffs = Vec::new();
    let mut check = |column: &str, expected: Option<i128>, actual: i128| {
        if let Some(e) = expected {
            if e != actual {
                diffs.push(Diff {
                    column: column.to_string(),
                    expected: e,
                    actual,
                });
            }
        }
    };
    for &(col, f, i) in &lay.outputs {
        check(col, cells[i], sk.get(f) as i128);
    }
    if let Some(i) = lay.ret {
        check(format::RET, cells[i], ret as i128);
    }
    if !lay.post_ca.is_empty() {
        // post_ca lists columns in visit order, so one pass pairs them.
        let mut next = lay.post_ca.iter().peekable();
        cc.visit_ca(&mut |name, v| {
            if let Some((n, column, i)) = next.peek() {
                if *n == name {
                    check(column, cells[*i], v as i128);
                    next.next();
                }
            }
        });
    }
    diffs
}

/// The jiffies clock rates a replay takes: Linux's `CONFIG_HZ` is 100, 250,
/// 300 or 1000; up to a million covers any clock a tracer could count in,
/// and 0 would divide every conversion between jiffies and time by zero.
pub const HZ: std::ops::RangeInclusive<u32> = 1..=1_000_000;

/// A jiffies clock rate as a person gives it (`--hz`, the Python
/// package's `hz`), or the sentence refusing it.
pub fn parse_hz(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(hz) if HZ.contains(&hz) => Ok(hz),
        _ => Err(format!(
            "`{}` is not a clock rate; give HZ as an integer from {} to {} (Linux uses 100, 250, 300 or 1000)",
            kleinrock_cc::echo::show(s),
            HZ.start(),
            HZ.end()
        )),
    }
}

/// Replays the trace at `path` into `cc` (in its initial, all-zero state)
/// with a `hz` jiffies clock. `progress` is called with the rows done every
/// 65,536 rows.
pub fn replay(
    path: &Path,
    cc: Algorithm,
    hz: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, TraceError> {
    replay_from(TraceReader::open(path)?, cc, hz, progress)
}

/// [`replay`] of a trace being read by `r` (from any source).
pub fn replay_from(
    mut r: TraceReader,
    mut cc: Algorithm,
    hz: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, TraceError> {
    if !HZ.contains(&hz) {
        return Err(TraceError::BadHz { hz });
    }
    let lay = layout(&r, &cc)?;
    let mut report = Report {
        trace: r.path().display().to_string(),
        spec: cc.spec(),
        hz,
        rows: 0,
        divergent: 0,
        per_hook: BTreeMap::new(),
        first: None,
    };
    let reads = cc.reads();
    while let Some(row) = r.next_row()? {
        let cells = r.cells();
        let name = r.text(lay.hook);
        let arg = |c: &str| {
            lay.args
                .iter()
                .find(|(n, _)| *n == c)
                .and_then(|&(_, i)| cells[i])
        };
        let hook = match format::parse_hook(name, &arg) {
            Ok(h) => h,
            Err(HookError::UnknownHook) => return Err(r.unknown_hook(row, name)),
            Err(HookError::BadArg(col, why)) => {
                return Err(match r.column(col) {
                    None => r.missing(
                        col,
                        &format!("{name} rows need it (first at row {})", row.index),
                    ),
                    Some(_) => r.bad_cell(row, col, &why),
                })
            }
        };
        let mut sk = Sock::new(hz);
        for &(f, i) in &lay.pre {
            match cells[i] {
                Some(v) => set_pre(&mut sk, f, v)
                    .map_err(|why| r.bad_cell(row, &format::pre_column(f), &why))?,
                None if reads.contains(&f) => {
                    let why = format!("empty, but {} reads {}", cc.name(), f.name());
                    return Err(r.bad_cell(row, &format::pre_column(f), &why));
                }
                None => {}
            }
        }
        if let Some(v) = lay.jiffies_out.and_then(|i| cells[i]) {
            if u32::try_from(v).is_err() {
                let why = format!("{v} is out of range for tcp_jiffies32 (a u32)");
                return Err(r.bad_cell(row, format::JIFFIES_OUT, &why));
            }
        }
        for &(name, i) in &lay.random_ca {
            if let Some(v) = cells[i] {
                let v = drawn(&cc, name, v)
                    .map_err(|why| r.bad_cell(row, &format!("post_ca_{name}"), &why))?;
                cc.expect_random(name, v);
            }
        }
        let (next, diffs) = run_row(&lay, cells, &cc, &hook, sk);
        cc = next;
        for &(name, i) in &lay.random_ca {
            if let Some(v) = cells[i] {
                cc.set_ca(name, v as i64);
            }
        }
        let count = report.per_hook.entry(hook.name()).or_default();
        count.rows += 1;
        report.rows += 1;
        if !diffs.is_empty() {
            count.divergent += 1;
            report.divergent += 1;
            if report.first.is_none() {
                report.first = Some(Divergence {
                    row: row.index,
                    line: row.line,
                    hook: hook.name(),
                    diffs,
                });
            }
        }
        if report.rows % 65_536 == 0 {
            progress(report.rows);
        }
    }
    if report.rows == 0 {
        return Err(TraceError::NoRows {
            path: r.path().to_path_buf(),
        });
    }
    Ok(report)
}

/// Sets the connection field `f` from a trace's `pre_` cell, or says why
/// the cell cannot be one. Each value must fit the field's kernel type
/// exactly (a bool is 0 or 1, `icsk_ca_state` one of the five states);
/// beyond that, every value the type holds is taken (the algorithms are
/// tested not to panic on any: crates/cc/tests/properties.rs,
/// crates/trace/tests/hostile.rs), except three no kernel can have, for
/// which no algorithm's arithmetic is defined (docs/TRACE_FORMAT.md): a
/// window or a clamp of 0, which congestion avoidance divides by, and a
/// pacing shift past a 64-bit rate's width.
fn set_pre(sk: &mut Sock, f: Field, v: i128) -> Result<(), String> {
    let out_of_range = || format!("{v} is out of range for {}", f.name());
    let v = u64::try_from(v).map_err(|_| out_of_range())?;
    if !sk.set(f, v) {
        return Err(out_of_range());
    }
    if sk.get(f) != v {
        return Err(format!("{v} is not 0 or 1 ({} is a bool)", f.name()));
    }
    match (f, v) {
        (Field::snd_cwnd, 0) => Err(
            "a congestion window of 0 is no state of the kernel's: tcp_snd_cwnd_set() warns on it \
             and congestion avoidance divides by it, so no kernel trace holds it; the window is at least 1"
                .into(),
        ),
        (Field::pacing_shift, 64..) => Err(format!(
            "a pacing shift of {v} is no state of the kernel's: it shifts a 64-bit rate, which C \
             leaves undefined from 64 bits on (the kernel's is 10, a driver's smaller); give 0 to 63"
        )),
        (Field::snd_cwnd_clamp, 0) => Err(
            "a clamp of 0 is no state of the kernel's: slow start would clamp cwnd to 0, which \
             congestion avoidance divides by, so no kernel trace holds it; the clamp is at least 1"
                .into(),
        ),
        _ => Ok(()),
    }
}

/// The value of a member drawn at random, from a trace's `post_ca_` cell,
/// or why `cc` cannot hold it (out of the member's type or bitfield).
fn drawn(cc: &Algorithm, name: &str, v: i128) -> Result<i64, String> {
    let out_of_range = || format!("{v} is not a value {} can draw for {name}", cc.name());
    let v = i64::try_from(v).map_err(|_| out_of_range())?;
    let mut probe = cc.clone();
    let mut held = None;
    if probe.set_ca(name, v) {
        probe.visit_ca(&mut |n, x| {
            if n == name {
                held = Some(x);
            }
        });
    }
    if held != Some(v) {
        return Err(out_of_range());
    }
    Ok(v)
}

/// Runs one row's hook on a copy of the algorithm, with `jiffies_in` and,
/// if that diverges and the clock ticked during the call, `jiffies_out`;
/// then, if both diverge, each again with the other outcome of a forced
/// draw the trace could not decide ([`CongestionControl::expect_other_draw`]).
/// The first attempt that agrees is taken, else the first.
fn run_row(
    lay: &Layout,
    cells: &[Option<i128>],
    cc: &Algorithm,
    hook: &Hook,
    sk: Sock,
) -> (Algorithm, Vec<Diff>) {
    let attempt = |mut a: Algorithm, jiffies: u32| {
        let mut s = sk.clone();
        s.jiffies = jiffies;
        let ret = hook.call(&mut a, &mut s);
        let diffs = compare(lay, cells, &s, &a, ret);
        (a, diffs)
    };
    let first = attempt(cc.clone(), sk.jiffies);
    if first.1.is_empty() {
        return first;
    }
    let out = lay
        .jiffies_out
        .and_then(|i| cells[i])
        .map(|v| v as u32)
        .filter(|&j| j != sk.jiffies);
    let other_draw = {
        let mut a = cc.clone();
        a.expect_other_draw().then_some(a)
    };
    let retries = [
        (Some(cc), out),
        (other_draw.as_ref(), Some(sk.jiffies)),
        (other_draw.as_ref(), out),
    ];
    for (a, jiffies) in retries {
        if let (Some(a), Some(j)) = (a, jiffies) {
            let next = attempt(a.clone(), j);
            if next.1.is_empty() {
                return next;
            }
        }
    }
    first
}
