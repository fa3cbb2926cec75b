//! Every file under `src/mechanisms/` other than `mod.rs` is a mechanism: this script
//! declares each as a module and lists it for `mechanisms::for_side`, so adding one is
//! adding its file. Each file exposes `pub const ORDER: u8` (where its timer is queued
//! among the others', which decides ties) and
//! `pub fn plug(&Mechanisms, client: bool, port: u16) -> Option<Box<dyn Mechanism>>`.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

fn main() {
    let dir = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("src/mechanisms");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && p.file_stem().is_some_and(|s| s != "mod"))
        .collect();
    files.sort();

    let mut out = String::new();
    let mut entries = String::new();
    for path in &files {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a mechanism's file name is UTF-8");
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{}: a mechanism's file name must be a Rust module name (lowercase, digits, _)",
            path.display()
        );
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(out, "#[path = {:?}]\npub mod {name};", path.display().to_string()).unwrap();
        writeln!(entries, "    ({name}::ORDER, {name}::plug),").unwrap();
    }
    writeln!(out, "\n/// Every mechanism's place in the timer order and its plug, as its file declares them.").unwrap();
    writeln!(out, "const DECLARED: [(u8, Plug); {}] = [\n{entries}];", files.len()).unwrap();
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("mechanisms.rs");
    fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
