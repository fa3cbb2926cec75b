//! Mechanisms from the source documents that change when a sender retransmits, each in
//! its own file, acting on a TCP endpoint only through `tcp::hooks`:
//! * `sfr`: Super Fast Retransmit (document 001), a second timer beside the RTO;
//! * `min_rto_004`: the delayed-ACK-aware minimum RTO (document 004), a retransmission-
//!   timer hook.
//!
//! (The SYN optimizer of document 000 lives in `crate::synopt`.)

pub mod min_rto_004;
pub mod sfr;
