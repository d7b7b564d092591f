//! FQ-CoDel: flow queueing with CoDel per flow (RFC 8290; Linux
//! `net/sched/sch_fq_codel.c`).
//!
//! Packets are sorted into per-flow queues (here by flow identity, as a
//! hash without collisions would), served by deficit round robin with a
//! quantum of one MTU. Flows that just became active go on a "new" list
//! served before the "old" one, so sparse flows (pings, ACKs, short
//! transfers) see almost no queue; every queue runs its own CoDel. On
//! overflow the fattest queue loses packets from its head.

use std::collections::VecDeque;

use crate::codel::{CodelParams, CodelVars, Outcome};
use crate::packet::{HeldPacket, ToFree};
use crate::time::Time;

/// `FQ_CODEL_QUANTUM`: one Ethernet MTU plus header.
pub const QUANTUM: i32 = 1514;
/// Default number of flow queues.
pub const FLOWS: usize = 1024;

#[derive(Clone, Debug)]
struct FlowQueue<P> {
    q: VecDeque<P>,
    bytes: u64,
    deficit: i32,
    vars: CodelVars,
    listed: bool,
}

impl<P> FlowQueue<P> {
    fn new() -> FlowQueue<P> {
        FlowQueue {
            q: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            vars: CodelVars::default(),
            listed: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FqCodel<P> {
    /// CoDel parameters for every flow queue; `limit` is the total.
    pub params: CodelParams,
    flows: Vec<FlowQueue<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    len: usize,
    bytes: u64,
}

impl<P: HeldPacket> FqCodel<P> {
    pub fn new(params: CodelParams) -> FqCodel<P> {
        FqCodel {
            params,
            flows: (0..FLOWS).map(|_| FlowQueue::new()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len: 0,
            bytes: 0,
        }
    }

    /// Queues a packet; returns how many packets overflow dropped (from the
    /// fattest queue, possibly this one) into `to_free`.
    pub fn enqueue(&mut self, now: Time, mut p: P, to_free: &mut impl ToFree<P>) -> u32 {
        let i = p.flow() as usize % FLOWS;
        p.set_enqueued(now);
        let bytes = p.bytes() as u64;
        let f = &mut self.flows[i];
        f.bytes += bytes;
        f.q.push_back(p);
        self.len += 1;
        self.bytes += bytes;
        if !f.listed {
            f.listed = true;
            f.deficit = QUANTUM;
            self.new_flows.push_back(i);
        }
        let mut dropped = 0;
        while self.len > self.params.limit as usize {
            let fattest = (0..FLOWS)
                .max_by_key(|&j| self.flows[j].bytes)
                .expect("flows");
            let f = &mut self.flows[fattest];
            if let Some(d) = f.q.pop_front() {
                f.bytes -= d.bytes() as u64;
                self.len -= 1;
                self.bytes -= d.bytes() as u64;
                dropped += 1;
                to_free.free(d);
            }
        }
        dropped
    }

    /// The next packet to send, CoDel having dropped (into `to_free`) or
    /// marked per flow.
    pub fn dequeue(
        &mut self,
        now: Time,
        out: &mut Outcome,
        to_free: &mut impl ToFree<P>,
    ) -> Option<P> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let list = if from_new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let i = *list.front()?;
            let f = &mut self.flows[i];
            if f.deficit <= 0 {
                f.deficit += QUANTUM;
                list.pop_front();
                self.old_flows.push_back(i);
                continue;
            }
            let before = (f.q.len(), f.bytes);
            let p = f
                .vars
                .dequeue(&mut f.q, &mut f.bytes, now, &self.params, out, to_free);
            let taken = before.0 - f.q.len();
            self.len -= taken;
            self.bytes -= before.1 - f.bytes;
            match p {
                Some(p) => {
                    f.deficit -= p.bytes() as i32;
                    return Some(p);
                }
                None => {
                    list.pop_front();
                    if from_new && !self.old_flows.is_empty() {
                        // Keep the flow on the old list once, so that it
                        // cannot starve old flows by going idle and back.
                        self.old_flows.push_back(i);
                    } else {
                        self.flows[i].listed = false;
                    }
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::test::TestPacket as Packet;
    use crate::packet::Forget;
    use crate::time::MS;

    #[test]
    fn a_sparse_flow_is_served_before_a_backlogged_one() {
        let mut fq = FqCodel::new(CodelParams {
            ecn: true,
            ..Default::default()
        });
        let mut out = Outcome::default();
        for s in 0..100 {
            fq.enqueue(0, Packet::data(1, s, 1500), &mut Forget);
        }
        // Drain a little so flow 1 is an old flow.
        for _ in 0..5 {
            fq.dequeue(MS, &mut out, &mut Forget);
        }
        fq.enqueue(MS, Packet::data(2, 0, 100), &mut Forget);
        // The newcomer goes out next.
        assert_eq!(fq.dequeue(MS, &mut out, &mut Forget).unwrap().flow, 2);
        assert_eq!(fq.dequeue(MS, &mut out, &mut Forget).unwrap().flow, 1);
    }

    #[test]
    fn two_backlogged_flows_alternate_by_bytes() {
        let mut fq = FqCodel::new(CodelParams::default());
        let mut out = Outcome::default();
        for s in 0..50 {
            fq.enqueue(0, Packet::data(1, s, 1500), &mut Forget);
            fq.enqueue(0, Packet::data(2, s, 1500), &mut Forget);
        }
        let served: Vec<u32> = (0..20)
            .map(|_| fq.dequeue(0, &mut out, &mut Forget).unwrap().flow)
            .collect();
        let ones = served.iter().filter(|&&f| f == 1).count();
        assert_eq!(ones, 10, "{served:?}");
    }

    #[test]
    fn overflow_drops_from_the_fattest_queue() {
        let mut fq = FqCodel::new(CodelParams {
            limit: 10,
            ..Default::default()
        });
        for s in 0..9 {
            fq.enqueue(0, Packet::data(1, s, 1500), &mut Forget);
        }
        let mut freed = Vec::new();
        assert_eq!(fq.enqueue(0, Packet::data(2, 0, 1500), &mut freed), 0);
        assert_eq!(fq.enqueue(0, Packet::data(2, 1, 1500), &mut freed), 1);
        // The fattest queue's head went, and was handed back.
        assert_eq!(freed, [Packet::data(1, 0, 1500)]);
        assert_eq!(fq.len(), 10);
        assert_eq!(fq.flows[1].q.len(), 8);
        assert_eq!(fq.flows[2].q.len(), 2);
    }
}
