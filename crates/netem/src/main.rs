//! `shortflow-netem`: the emulator as a program of its own (see the library for what it does).

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(shortflow_netem::run_cli(std::env::args_os()))
}
