//! Congestion control: the window's growth on new ACKs and its reduction on loss.
//! Loss recovery (what to retransmit, when to leave recovery) is in `tcp::recovery`.

pub mod reno;
