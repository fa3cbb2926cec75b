//! What stops the daemon, as types: each says which option, port, group or system call was
//! at fault, in the words the daemon prints (`shortflow-synopt: <message>`).

use std::io;

/// A command line the daemon refuses before touching the host (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("-d: the delay must be at least 1 ms")]
    ZeroDelay,
    #[error("-p: port 0 is not a port")]
    PortZero,
    /// `--rcvbuf-kb`, `--max-held`: a count that must be positive.
    #[error("{option}: must be at least 1")]
    Zero { option: &'static str },
}

/// `--prefix-len V4,V6` that is not two prefix lengths (clap prints it beside the option).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixLenError {
    #[error("{0:?}: expected V4,V6 prefix lengths, e.g. 24,48")]
    NoComma(String),
    #[error("{0:?}: not a prefix length")]
    NotANumber(String),
    #[error("{0}: IPv4 prefixes are 0-32 bits, IPv6 0-128")]
    OutOfRange(String),
}

/// What stops a daemon that has started (exit status 1).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("needs root (nftables table, NFLOG, raw sockets)")]
    NotRoot,
    #[error(
        "port {port} is already protected by a running shortflow-synopt in {mode} mode in this \
         network namespace (`shortflow synopt status` shows it): stop it first; two daemons \
         would resend every SYN twice"
    )]
    PortTaken { port: u16, mode: &'static str },
    #[error("port lock: {0}")]
    PortLock(#[source] io::Error),
    #[error("run lock: {0}")]
    RunLock(#[source] io::Error),
    #[error("raw socket: {0}")]
    RawSocket(#[source] io::Error),
    #[error("NFLOG group {group}: {source}")]
    Group { group: u16, source: io::Error },
    /// Creating the table, or deleting the tables of dead runs.
    #[error(transparent)]
    Rules(#[from] crate::rules::NftError),
    /// Reading the copies failed while running.
    #[error("NFLOG: {0}")]
    Nflog(#[source] io::Error),
}
