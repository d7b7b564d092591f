//! A Linux-like TCP, one mechanism per module.

pub mod prr;
pub mod rack;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod undo;
