//! Many destinations: the workload a congestion-control selector faces, in
//! the simulator.
//!
//! A workload file (docs/SELECTOR.md) describes path types (a link as a
//! scenario describes it, a base RTT, whether the peer negotiates ECN,
//! which algorithms the host cannot set, and optionally a change after a
//! number of connections), how many destinations take each, and how
//! connections arrive. [`outcomes`] simulates every algorithm on every path
//! a few times (a connection of the workload's length, from an idle start);
//! [`replay`] then plays the connections in time order against a policy,
//! which picks an algorithm when each starts, sees samples while it runs
//! and learns when it closes, and [`score`] judges the choices against an
//! oracle that knows the best fixed algorithm of each path.
//!
//! Connections to the same destination do not share the path in the
//! simulation: each outcome is one connection alone, which is what the
//! selectors assume and makes the outcomes reusable across policies.

pub mod outcomes;
pub mod replay;
pub mod score;
pub mod workload;

pub use outcomes::Outcomes;
pub use replay::{run_policy, Policy, Report};
pub use workload::Workload;
