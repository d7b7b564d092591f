//! A Linux-like TCP, one mechanism per module.

pub mod prr;
pub mod rack;
// The delivery-rate sampler lives in kleinrock-cc, beside the hooks that read
// its samples, so that every core (this sender, the quinn adapter) shares it.
pub use kleinrock_cc::rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod undo;
