//! The SYN optimizer of document 000, done properly on today's Linux: a daemon that sees
//! copies of each SYN (client side), SYN/ACK (server side) or both (router) through NFLOG —
//! the packet itself never waits for it — keeps the copy, and resends it when no answer came
//! after the delay —
//! at most RETRIES times, within a couple of milliseconds of the deadline.

pub mod cli;
pub mod daemon;
pub mod error;
pub mod nftlib;
pub mod observe;
pub mod resend;
pub mod rules;
pub mod stats;
pub mod sys;
pub mod table;
