//! `shortflow-synopt`: the SYN optimizer as a program of its own (see the library's `cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(shortflow_synopt::cli::run_cli(std::env::args_os()))
}
