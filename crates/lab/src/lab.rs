//! The lab: three namespaces, the veths between them, the router's link
//! emulation, and their removal.
//!
//! ```text
//!  sender (krlab-…-snd)       router (krlab-…-rtr)                        receiver (krlab-…-rcv)
//!  snd0 192.0.2.2 ── veth ── rtr-snd 192.0.2.1     198.51.100.1 rtr-rcv ── veth ── rcv0 198.51.100.2
//!
//!  forward: snd0 → rtr-snd → krlab-fwd (loss, blackhole) → dly-fwd ⇄ delay line → tbf on rtr-rcv → rcv0
//!  reverse: rcv0 → rtr-rcv → krlab-rev (loss, blackhole) → dly-rev ⇄ delay line → tbf on rtr-snd → snd0
//! ```
//!
//! The veths are created inside the namespaces (`ip link add … netns X
//! type veth peer … netns Y`), so no interface of the lab ever exists in
//! the host's namespace; their names are therefore the same in every lab.
//! Namespace names are unique per lab (see `sweep.rs`).

use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::Duration;

use kleinrock_capture::background::Outcome as CaptureOutcome;

use crate::awake::Awake;
use crate::config::{check_loss, Direction, LabConfig, MAX_DELAY, MTU};
use crate::delay::{DelayLine, DelayStats, QueueSample};
use crate::filter::{self, Drops};
use crate::lateness::Lateness;
use crate::netns::Node;
use crate::tools::{self, Tools};
use crate::tun::{self, TUNS};
use crate::{shaper, sweep, Error};

pub const SENDER_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
pub const ROUTER_SENDER_SIDE_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const ROUTER_RECEIVER_SIDE_ADDR: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
pub const RECEIVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);

/// The sender's veth.
pub const SENDER_IF: &str = "snd0";
/// The router's veth toward the sender (tbf for the reverse rate).
pub const ROUTER_SENDER_SIDE_IF: &str = "rtr-snd";
/// The router's veth toward the receiver (tbf for the forward rate).
pub const ROUTER_RECEIVER_SIDE_IF: &str = "rtr-rcv";
/// The receiver's veth.
pub const RECEIVER_IF: &str = "rcv0";

/// The policy-routing tables that send a direction into its TUN.
const TABLES: [&str; 2] = ["100", "101"];

/// The router's egress veth per direction (where that direction's tbf is).
const EGRESS: [&str; 2] = [ROUTER_RECEIVER_SIDE_IF, ROUTER_SENDER_SIDE_IF];

/// A running lab. Dropping it stops the delay line, kills what still runs
/// in its namespaces and removes them, which removes every veth, qdisc,
/// route and rule inside.
pub struct Lab {
    // Fields drop in order: the delay line stops before its namespace goes.
    delay: DelayLine,
    _awake: Option<Awake>,
    sender: Node,
    router: Node,
    receiver: Node,
    tools: Tools,
    drops: Mutex<[Drops; 2]>,
}

impl Lab {
    /// Checks privileges, tools and the configuration, sweeps away the labs
    /// of dead processes, and builds a new lab. On failure everything built
    /// so far is removed again.
    pub fn new(config: &LabConfig) -> Result<Lab, Error> {
        let tools = tools::preflight()?;
        config.validate()?;
        // Best effort: a stale lab that cannot be removed is no reason to
        // refuse a new one, whose names differ.
        let _ = sweep::sweep();
        let id = sweep::next_id();
        let awake = config.keep_cpus_awake.then(Awake::hold);
        let node = |role: &str, addr| Node::create(format!("{id}-{role}"), addr, &tools);
        // From here on, a failure drops what exists so far, in reverse
        // order: the delay line stops, then each namespace goes.
        let sender = node(sweep::ROLES[0], SENDER_ADDR)?;
        let router = node(sweep::ROLES[1], ROUTER_SENDER_SIDE_ADDR)?;
        let receiver = node(sweep::ROLES[2], RECEIVER_ADDR)?;
        set_sysctls(&sender, &router, &receiver)?;
        wire(&tools, &sender, &router, &receiver)?;
        let delay = start_delay_line(&tools, &router, config)?;
        let links = [&config.forward, &config.reverse];
        for (lane, link) in links.into_iter().enumerate() {
            for args in shaper::tc_commands(EGRESS[lane], link) {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                router.exec(&tools.tc, &args, None)?;
            }
        }
        let drops = links.map(|l| Drops {
            loss: l.loss,
            blackhole: false,
        });
        let rules = filter::initial(&drops);
        router.exec(&tools.iptables_restore, &["-w"], Some(&rules))?;
        Ok(Lab {
            delay,
            _awake: awake,
            sender,
            router,
            receiver,
            tools,
            drops: Mutex::new(drops),
        })
    }

    /// The sender's namespace (192.0.2.2).
    pub fn sender(&self) -> &Node {
        &self.sender
    }

    /// The router's namespace, where the link is.
    pub fn router(&self) -> &Node {
        &self.router
    }

    /// The receiver's namespace (198.51.100.2).
    pub fn receiver(&self) -> &Node {
        &self.receiver
    }

    /// The three namespace names: sender, router, receiver.
    pub fn namespaces(&self) -> [&str; 3] {
        [self.sender.name(), self.router.name(), self.receiver.name()]
    }

    /// Runs `ip ARGS` (arguments separated by spaces) inside `node`, one
    /// of this lab's, its failure one sentence: how a user of the lab
    /// changes what the lab leaves at the kernel's defaults, such as a
    /// route's `initcwnd`.
    pub fn ip(&self, node: &Node, args: &str) -> Result<(), Error> {
        ip(&self.tools, node, args)
    }

    /// Sets the random loss probability of `direction` (0 turns it off).
    pub fn set_loss(&self, direction: Direction, loss: f64) -> Result<(), Error> {
        check_loss(
            match direction {
                Direction::Forward => "forward",
                Direction::Reverse => "reverse",
                Direction::Both => "requested",
            },
            loss,
        )?;
        self.change_drops(direction, |d| d.loss = loss)
    }

    /// Turns the blackhole of `direction` on (every packet entering the
    /// router that way is dropped) or off. Packets already in the delay
    /// line are still delivered, as packets already on a wire would be.
    pub fn set_blackhole(&self, direction: Direction, on: bool) -> Result<(), Error> {
        self.change_drops(direction, |d| d.blackhole = on)
    }

    /// Sets the one-way delay of `direction` (the link's `delay` and its
    /// bottleneck's own, which this replaces together) for packets leaving
    /// the bottleneck from now on. A flow's packets never overtake each
    /// other: after a cut, new packets wait behind those already in the
    /// delay line.
    pub fn set_delay(&self, direction: Direction, delay: Duration) -> Result<(), Error> {
        if delay > MAX_DELAY {
            return Err(Error::invalid(format!(
                "a delay of {delay:?} is longer than the lab's limit of {MAX_DELAY:?}; \
                 give a shorter one-way delay"
            )));
        }
        for &lane in direction.lanes() {
            self.delay.set_delay(lane, delay);
        }
        Ok(())
    }

    /// The delay line's counters for `direction` (summed for `Both`).
    pub fn delay_stats(&self, direction: Direction) -> DelayStats {
        direction
            .lanes()
            .iter()
            .map(|&lane| self.delay.stats(lane))
            .fold(DelayStats::default(), DelayStats::merge)
    }

    /// Stops the packet capture (`LabConfig::capture`) and completes its
    /// file: what it wrote, and what it could not keep because its writer
    /// fell behind the delay line. `None` without a capture, or after the
    /// first call. A lab dropped without this call completes the file
    /// too, but cannot say how it went.
    pub fn finish_capture(&self) -> Result<Option<CaptureOutcome>, Error> {
        self.delay.finish_capture()
    }

    /// Both bottlenecks' queues and counters, taken by the delay line at
    /// one moment (forward, reverse): what the simulator's queues.csv and
    /// link counters hold (see [`QueueSample`]). A direction without a
    /// bottleneck has an empty queue and counts only what it carried.
    pub fn queue_samples(&self) -> Result<[QueueSample; 2], Error> {
        self.delay.sample()
    }

    /// How late the delay line wrote `direction`'s packets back, since the
    /// lab started: quantiles of it, or [`Lateness::since`] an earlier
    /// reading for a measurement's own.
    pub fn lateness(&self, direction: Direction) -> Lateness {
        let mut lanes = direction.lanes().iter().map(|&l| self.delay.lateness(l));
        let first = lanes.next().expect("a direction has a lane");
        lanes.fold(first, |a, b| a.merge(&b))
    }

    /// Fails if the delay line has stopped (it stops only on an error it
    /// cannot forward past), saying why; a test can end with this to be
    /// sure the link it measured was the one configured.
    pub fn check(&self) -> Result<(), Error> {
        match self.delay.failure() {
            Some(why) => Err(Error::failed(why)),
            None => Ok(()),
        }
    }

    fn change_drops(&self, direction: Direction, change: impl Fn(&mut Drops)) -> Result<(), Error> {
        let mut drops = self.drops.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = *drops;
        for &lane in direction.lanes() {
            change(&mut next[lane]);
        }
        let script = filter::update(direction.lanes(), &next);
        self.router.exec(
            &self.tools.iptables_restore,
            &["-w", "--noflush"],
            Some(&script),
        )?;
        *drops = next;
        Ok(())
    }
}

impl std::fmt::Debug for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lab")
            .field("namespaces", &self.namespaces())
            .finish_non_exhaustive()
    }
}

/// Before any device exists, so that every device inherits them.
fn set_sysctls(sender: &Node, router: &Node, receiver: &Node) -> Result<(), Error> {
    // The router forwards, and does not drop what it reads back from a
    // TUN for arriving on an interface it would not route the source to.
    for (key, value) in [
        ("net.ipv4.ip_forward", "1"),
        ("net.ipv4.conf.all.rp_filter", "0"),
        ("net.ipv4.conf.default.rp_filter", "0"),
    ] {
        router.sysctl(key, value)?;
    }
    // Each connection starts from the defaults, not from what the last one
    // to the same address left in the TCP metrics cache.
    for end in [sender, receiver] {
        end.sysctl("net.ipv4.tcp_no_metrics_save", "1")?;
    }
    // The lab is IPv4; without IPv6 its links carry no router
    // solicitations or MLD reports, only what a test sends. Best effort:
    // a kernel without IPv6 has nothing to turn off.
    for n in [sender, router, receiver] {
        for key in [
            "net.ipv6.conf.all.disable_ipv6",
            "net.ipv6.conf.default.disable_ipv6",
        ] {
            let _ = n.sysctl(key, "1");
        }
    }
    Ok(())
}

/// `ip` in `n`, its arguments given as one string.
fn ip(tools: &Tools, n: &Node, args: &str) -> Result<(), Error> {
    let words: Vec<&str> = args.split_whitespace().collect();
    n.exec(&tools.ip, &words, None)
}

/// The veths, made inside the namespaces, their addresses and routes.
fn wire(tools: &Tools, sender: &Node, router: &Node, receiver: &Node) -> Result<(), Error> {
    for (end, end_if, router_if) in [
        (sender, SENDER_IF, ROUTER_SENDER_SIDE_IF),
        (receiver, RECEIVER_IF, ROUTER_RECEIVER_SIDE_IF),
    ] {
        let peer = format!("peer name {router_if} netns {}", router.name());
        ip(tools, end, &format!("link add {end_if} type veth {peer}"))?;
    }
    for (n, dev, addr) in [
        (sender, SENDER_IF, SENDER_ADDR),
        (router, ROUTER_SENDER_SIDE_IF, ROUTER_SENDER_SIDE_ADDR),
        (router, ROUTER_RECEIVER_SIDE_IF, ROUTER_RECEIVER_SIDE_ADDR),
        (receiver, RECEIVER_IF, RECEIVER_ADDR),
    ] {
        ip(tools, n, &format!("addr add {addr}/24 dev {dev}"))?;
        ip(tools, n, &format!("link set {dev} up"))?;
    }
    for n in [sender, router, receiver] {
        ip(tools, n, "link set lo up")?;
    }
    ip(
        tools,
        sender,
        &format!("route add default via {ROUTER_SENDER_SIDE_ADDR}"),
    )?;
    ip(
        tools,
        receiver,
        &format!("route add default via {ROUTER_RECEIVER_SIDE_ADDR}"),
    )
}

/// Creates the TUNs inside the router, starts the delay line on them, and
/// routes what arrives on each veth into its direction's TUN.
fn start_delay_line(tools: &Tools, router: &Node, config: &LabConfig) -> Result<DelayLine, Error> {
    let [fwd, rev] = router.run(|| TUNS.map(tun::open))?;
    let tun_error = |lane: usize, e: std::io::Error| {
        Error::failed(format!(
            "cannot create TUN device {} in {}: {e}",
            TUNS[lane],
            router.name()
        ))
    };
    let tuns = [
        fwd.map_err(|e| tun_error(0, e))?,
        rev.map_err(|e| tun_error(1, e))?,
    ];
    let delay = DelayLine::start(tuns, config)?;
    let ingress = [ROUTER_SENDER_SIDE_IF, ROUTER_RECEIVER_SIDE_IF];
    for (lane, (tun, from)) in TUNS.iter().zip(ingress).enumerate() {
        let table = TABLES[lane];
        // A deep queue in front of the delay line's reader, so that a
        // moment off the CPU does not drop packets the emulated link would
        // have carried.
        ip(
            tools,
            router,
            &format!("link set {tun} mtu {MTU} txqueuelen 4096 up"),
        )?;
        ip(
            tools,
            router,
            &format!("route add default dev {tun} table {table}"),
        )?;
        ip(
            tools,
            router,
            &format!("rule add iif {from} lookup {table} pref {table}"),
        )?;
    }
    tun::tune(tools, router, config.gro)?;
    Ok(delay)
}
