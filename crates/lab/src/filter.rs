//! Random loss and the blackhole: iptables rules in the router's FORWARD
//! chain, one user chain per direction.
//!
//! FORWARD jumps to `krlab-fwd` for packets that arrive on the veth from
//! the sender and to `krlab-rev` for those from the receiver, so each
//! packet is judged once, as it enters the router and before the delay
//! line (packets the delay line writes back arrive on a TUN and match
//! neither jump). A direction's chain holds at most two rules: `-j DROP`
//! while the blackhole is on, and `-m statistic --mode random --probability
//! P -j DROP` for loss. Every change rewrites the chain in one
//! iptables-restore transaction, so there is never a moment with half the
//! rules.

use crate::lab::{ROUTER_RECEIVER_SIDE_IF, ROUTER_SENDER_SIDE_IF};

/// The chains, forward then reverse.
pub(crate) const CHAINS: [&str; 2] = ["krlab-fwd", "krlab-rev"];

/// What one direction drops.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Drops {
    pub loss: f64,
    pub blackhole: bool,
}

/// iptables-restore input creating both chains and their jumps, with
/// `drops` in them (for a fresh router).
pub(crate) fn initial(drops: &[Drops; 2]) -> String {
    let mut s = String::from("*filter\n");
    for chain in CHAINS {
        s += &format!(":{chain} - [0:0]\n");
    }
    for (dev, chain) in [ROUTER_SENDER_SIDE_IF, ROUTER_RECEIVER_SIDE_IF]
        .iter()
        .zip(CHAINS)
    {
        s += &format!("-A FORWARD -i {dev} -j {chain}\n");
    }
    for (lane, d) in drops.iter().enumerate() {
        s += &rules(lane, d);
    }
    s + "COMMIT\n"
}

/// iptables-restore input (for `--noflush`) replacing the rules of the
/// given lanes.
pub(crate) fn update(lanes: &[usize], drops: &[Drops; 2]) -> String {
    let mut s = String::from("*filter\n");
    for &lane in lanes {
        s += &format!("-F {}\n", CHAINS[lane]);
        s += &rules(lane, &drops[lane]);
    }
    s + "COMMIT\n"
}

fn rules(lane: usize, d: &Drops) -> String {
    let chain = CHAINS[lane];
    let mut s = String::new();
    if d.blackhole {
        s += &format!("-A {chain} -j DROP\n");
    }
    if d.loss > 0.0 {
        s += &format!(
            "-A {chain} -m statistic --mode random --probability {} -j DROP\n",
            d.loss
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_router_gets_both_chains_and_their_jumps() {
        let drops = [
            Drops {
                loss: 0.05,
                blackhole: false,
            },
            Drops::default(),
        ];
        assert_eq!(
            initial(&drops),
            "*filter\n\
             :krlab-fwd - [0:0]\n\
             :krlab-rev - [0:0]\n\
             -A FORWARD -i rtr-snd -j krlab-fwd\n\
             -A FORWARD -i rtr-rcv -j krlab-rev\n\
             -A krlab-fwd -m statistic --mode random --probability 0.05 -j DROP\n\
             COMMIT\n"
        );
    }

    #[test]
    fn an_update_rewrites_only_the_named_chains() {
        let drops = [
            Drops {
                loss: 0.25,
                blackhole: true,
            },
            Drops {
                loss: 0.0,
                blackhole: true,
            },
        ];
        assert_eq!(
            update(&[1], &drops),
            "*filter\n-F krlab-rev\n-A krlab-rev -j DROP\nCOMMIT\n"
        );
        assert_eq!(
            update(&[0, 1], &drops),
            "*filter\n\
             -F krlab-fwd\n\
             -A krlab-fwd -j DROP\n\
             -A krlab-fwd -m statistic --mode random --probability 0.25 -j DROP\n\
             -F krlab-rev\n\
             -A krlab-rev -j DROP\n\
             COMMIT\n"
        );
    }
}
