//! A scenario as the lab runs it: the lab's link ([`crate::link`]), each
//! flow's algorithm ([`crate::algorithms`]), its ports, and the refusal,
//! in one sentence naming the key, of whatever the lab cannot honour.
//! Everything is checked here, before anything is built.
//!
//! Each flow is keyed by protocol and the port (or ICMP id) at the
//! receiver's end, the same in every lab: TCP flow `i` listens on
//! [`tcp_port`], UDP flow `i` uses [`udp_port`] in the receiver's
//! namespace, ping `i` sends echo id [`ping_id`].

use kleinrock_lab::LabConfig;
use kleinrock_sim::time::{Time, MS};
use kleinrock_sim::world::{data_packet_bytes, QueueConfig};
use kleinrock_sim::{Config, Limit};

use crate::algorithms::{self, Code};
use crate::Error;
use kleinrock_cc::implementation::Implementation;

/// The lab's MTU (its veths and TUNs): the largest IP packet it carries
/// whole.
pub const MTU: u32 = 1500;

/// IPv4 and TCP headers with the timestamp option, as the simulator
/// counts them (`mss` + 52 on the wire).
const TCP_HEADERS: u32 = 52;

/// The timestamp option, which the kernel subtracts from the MSS option
/// it is given to get the payload per segment.
const TIMESTAMPS: u32 = 12;

/// The smallest MSS option `TCP_MAXSEG` takes (`TCP_MIN_MSS`).
const MIN_MSS_OPTION: u32 = 88;

/// IPv4 and UDP headers: a datagram's size on the wire is its payload
/// plus these.
pub const UDP_HEADERS: u32 = 28;

/// Flows, pings and UDP flows together: the lab runs each on threads of
/// its own (two for a TCP or UDP flow), and numbers their ports from a
/// base.
pub const MAX_FLOWS: usize = 1000;

/// The shortest sample interval: samples are `TCP_INFO` calls from user
/// space, one per flow per sample.
const MIN_SAMPLE_INTERVAL: Time = MS;

/// The port TCP flow `i` listens on in the receiver's namespace.
pub fn tcp_port(i: usize) -> u16 {
    20_000 + i as u16
}

/// The port UDP flow `i` uses in the receiver's namespace.
pub fn udp_port(i: usize) -> u16 {
    30_000 + i as u16
}

/// The ICMP echo id of ping `i`.
pub fn ping_id(i: usize) -> u16 {
    1 + i as u16
}

/// What a run in the lab does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario, as the simulator reads it.
    pub config: Config,
    pub lab: LabConfig,
    /// Per flow: what runs its algorithm at the data's sender.
    pub codes: Vec<Code>,
    /// The largest socket buffer either end may autotune to, bytes.
    pub buffer_bytes: u64,
    /// What the user should know and the lab could not check.
    pub warnings: Vec<String>,
}

impl Plan {
    /// Checks `config` against what the lab can do and plans its run; a
    /// refusal names the key.
    pub fn new(config: &Config, implementation: Implementation) -> Result<Plan, Error> {
        let mut warnings = Vec::new();
        check_counts(config)?;
        if let Some(hz) = check_hz(config.hz)? {
            warnings.push(hz);
        }
        check_tcp(config)?;
        let lab = crate::link::lab_config(config)?;
        let mut codes: Vec<Code> = Vec::new();
        // One code per distinct spec: flows that share an algorithm share
        // its port.
        let mut chosen: Vec<(String, Code)> = Vec::new();
        for f in &config.flows {
            let spec = f.cc.spec();
            let code = match chosen.iter().find(|(s, _)| *s == spec) {
                Some((_, c)) => c.clone(),
                None => {
                    let c = algorithms::choose(&f.cc, implementation)?;
                    chosen.push((spec, c.clone()));
                    c
                }
            };
            codes.push(code);
        }
        Ok(Plan {
            config: config.clone(),
            lab,
            codes,
            buffer_bytes: buffer_bytes(config),
            warnings,
        })
    }

    /// Each algorithm of the scenario once, with what runs it: (`cdg`,
    /// `Kleinrock's BPF port of cdg:cwr=own as klab2n9c_0`).
    pub fn algorithms(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (f, code) in self.config.flows.iter().zip(&self.codes) {
            let spec = f.cc.spec();
            if !out.iter().any(|(s, _)| *s == spec) {
                out.push((spec, code.describe()));
            }
        }
        out
    }

    /// The MSS option that makes the kernel send `mss` bytes of payload.
    pub fn maxseg(&self) -> u32 {
        self.config.mss + TIMESTAMPS
    }
}

fn check_counts(c: &Config) -> Result<(), Error> {
    if let Some(f) = c.flows.iter().position(|f| f.trace.is_some()) {
        return Err(Error::refused(format!(
            "the lab cannot honour `trace` (flow {f}'s hook trace): the kernel's hooks are traced with `kleinrock kernel trace`, not by the lab; remove `trace` from the scenario"
        )));
    }
    let n = c.flows.len() + c.pings.len() + c.udp.len();
    if n > MAX_FLOWS {
        return Err(Error::refused(format!(
            "the lab cannot honour {n} flows, pings and UDP flows, more than its {MAX_FLOWS} (each runs on threads of its own); lower `count` or run the scenario with `kleinrock sim`"
        )));
    }
    if c.sample_interval < MIN_SAMPLE_INTERVAL {
        return Err(Error::refused(
            "the lab cannot honour `sample_interval` below 1ms: it reads TCP_INFO from user space once per flow per sample; give 1ms or more",
        ));
    }
    Ok(())
}

/// The kernel's clock cannot change: a scenario's `hz` must be the running
/// kernel's. A kernel whose configuration cannot be read is a warning.
fn check_hz(hz: u32) -> Result<Option<String>, Error> {
    match kleinrock_kernel::trace::kernel_hz() {
        Some(k) if k == hz => Ok(None),
        Some(k) => Err(Error::refused(format!(
            "the lab cannot honour `hz` = {hz} ([tcp] hz, 250 when unset): the running kernel's clock is CONFIG_HZ={k}, which nothing can change at run time; set `hz = {k}` in [tcp] or run the scenario with `kleinrock sim`"
        ))),
        None => Ok(Some(format!(
            "the running kernel's CONFIG_HZ could not be read (no /proc/config.gz or /boot/config-*), so the scenario's `hz` = {hz} is not checked against it"
        ))),
    }
}

fn check_tcp(c: &Config) -> Result<(), Error> {
    let largest = MTU - TCP_HEADERS;
    let smallest = MIN_MSS_OPTION - TIMESTAMPS;
    if c.mss > largest || c.mss < smallest {
        return Err(Error::refused(format!(
            "the lab cannot honour `mss` = {}: its links carry {MTU}-byte packets, {largest} bytes of payload with TCP's headers and timestamps, and the kernel's TCP_MAXSEG takes no less than {smallest}; give `mss` from {smallest} to {largest}",
            c.mss
        )));
    }
    if let Some((i, u)) = c.udp.iter().enumerate().find(|(_, u)| u.bytes > MTU) {
        return Err(Error::refused(format!(
            "the lab cannot honour `size` = {}B of UDP flow {i}: a datagram larger than the lab's {MTU}-byte MTU would be fragmented; give at most {MTU}B",
            u.bytes
        )));
    }
    Ok(())
}

/// The socket buffers autotuning may reach: four times the largest window
/// a flow could use (the longest path's BDP at the faster link's rate plus
/// the deeper queue), since Linux counts about half of a buffer as window;
/// never less than the kernel's defaults (6 MB), at most 1 GiB.
fn buffer_bytes(c: &Config) -> u64 {
    let rate = c.links[0].rate_bps.max(c.links[1].rate_bps) as u128;
    let rtt = c
        .flows
        .iter()
        .map(|f| f.rtt)
        .chain(c.udp.iter().map(|u| u.rtt))
        .max()
        .unwrap_or(0);
    let path = (rtt + c.links[0].delay + c.links[1].delay) as u128;
    let bdp = rate * path / 8 / 1_000_000_000;
    let packet = data_packet_bytes(c.mss) as u128;
    let queue = c
        .links
        .iter()
        .map(|l| match &l.queue {
            QueueConfig::Fifo {
                limit: Limit::Packets(n),
                ..
            } => *n as u128 * packet,
            QueueConfig::Fifo {
                limit: Limit::Bytes(b),
                ..
            } => *b as u128,
            QueueConfig::Codel(p) | QueueConfig::FqCodel(p) => p.limit as u128 * packet,
            QueueConfig::Red(p) => p.limit as u128 * packet,
        })
        .max()
        .unwrap_or(0);
    (4 * (bdp + queue)).clamp(6 << 20, 1 << 30) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Plan, Error> {
        let c = kleinrock_sim::scenario::parse(text, "p.toml", None).unwrap();
        Plan::new(&c, Implementation::Auto)
    }

    /// A scenario at the running kernel's HZ (250 where it cannot be read).
    fn base() -> String {
        let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
        format!("duration = \"2s\"\n[tcp]\nhz = {hz}\n[link]\nrate = \"10Mbit\"\nqueue = 84\n[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\n")
    }

    fn refusal(extra: &str) -> String {
        plan(&format!("{}{extra}", base())).unwrap_err().to_string()
    }

    #[test]
    fn a_plain_scenario_plans() {
        let p = plan(&base()).unwrap();
        assert_eq!(p.codes, vec![Code::Kernel("cubic".into())]);
        assert_eq!(p.maxseg(), 1460);
        assert_eq!(p.buffer_bytes, 6 << 20);
    }

    #[test]
    fn what_the_lab_cannot_honour_is_named() {
        for (extra, start) in [
            (
                "[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\ntrace = \"t.csv\"\n",
                "the lab cannot honour `trace` (flow 1's hook trace)",
            ),
            (
                "[[udp]]\nrate = \"1Mbit\"\nrtt = \"40ms\"\nsize = \"9000B\"\n",
                "the lab cannot honour `size` = 9000B",
            ),
        ] {
            let e = refusal(extra);
            assert!(e.starts_with(start), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
        let with = |from: &str, to: &str| plan(&base().replace(from, to));
        let e = with("queue = 84", "queue = 20000").unwrap_err();
        assert!(
            e.to_string().starts_with(
                "the lab cannot honour `queue` (a limit of 20000 packets on the up link)"
            ),
            "{e}"
        );
        let e = with("[tcp]\n", "[tcp]\nmss = 9000\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the lab cannot honour `mss` = 9000"),
            "{e}"
        );
        if let Some(hz) = kleinrock_kernel::trace::kernel_hz() {
            let other = if hz == 1000 { 100 } else { 1000 };
            let e =
                plan(&base().replace(&format!("hz = {hz}"), &format!("hz = {other}"))).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("the lab cannot honour `hz` = {other}")),
                "{e}"
            );
        }
    }

    /// What the delay line runs now that it runs the simulator's link:
    /// every queue, loss model, jitter, a trace, and paths of their own.
    #[test]
    fn the_simulators_link_and_paths_plan() {
        let trace = std::env::temp_dir().join(format!("live-plan-{}.up", std::process::id()));
        std::fs::write(&trace, "1\n2\n").unwrap();
        for link in [
            "queue = { kind = \"codel\" }".to_string(),
            "queue = { kind = \"fq_codel\", ecn = true }".into(),
            "queue = { kind = \"red\" }".into(),
            "queue = \"64KB\"".into(),
            "queue = 84\nloss = { p = \"1%\", r = \"10%\" }".into(),
            "queue = 84\njitter = \"3ms\"".into(),
        ] {
            let text = base().replace("queue = 84", &link);
            let p = plan(&text).unwrap_or_else(|e| panic!("{link}: {e}"));
            assert_eq!(p.lab.forward.bottleneck.as_ref(), Some(&p.config.links[0]));
        }
        let traced = format!("trace = {:?}", trace.display().to_string());
        let p = plan(&base().replace("rate = \"10Mbit\"", &traced)).unwrap();
        assert!(p.lab.forward.bottleneck.unwrap().trace.is_some());
        let p = plan(&format!(
            "{}[[flow]]\ncc = \"reno\"\nrtt = \"80ms\"\n[[ping]]\nrtt = \"20ms\"\n",
            base()
        ))
        .unwrap();
        assert_eq!(p.lab.flows.len(), 3);
        let _ = std::fs::remove_file(trace);
    }
}
