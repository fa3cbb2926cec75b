//! Compiles the BPF programs (`bpf/*.bpf.c`) with clang at build time, so that the
//! extension module carries their objects and a pip-installed shortflow needs no compiler
//! on the host. Where clang or the BPF headers are missing here, the object is left empty
//! and `tune` compiles the source at run time instead (a warning says so).

use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: &[&str] = &["tune"];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bpf_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf");
    let triple = Command::new("gcc")
        .arg("-dumpmachine")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "x86_64-linux-gnu".to_owned());
    for name in PROGRAMS {
        let src = bpf_dir.join(format!("{name}.bpf.c"));
        let obj = out.join(format!("{name}.bpf.o"));
        println!("cargo:rerun-if-changed={}", src.display());
        let built = src.is_file()
            && Command::new("clang")
                .args(["-O2", "-g", "-target", "bpf", &format!("-I/usr/include/{triple}"), "-c"])
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .status()
                .is_ok_and(|s| s.success());
        if !built {
            println!(
                "cargo:warning=BPF program {name} not embedded (no clang or no {}): tune compiles it at run time",
                src.display()
            );
            std::fs::write(&obj, b"").expect("OUT_DIR is writable");
        }
    }
}
