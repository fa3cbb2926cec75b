//! A scenario may come from someone else and be run as root (the testbed): the file its
//! empirical sizes name is read only if it is a regular file, only so far, and no error
//! quotes what is in it.

use std::time::Instant;

use shortflow_scenario::load;

fn with_sizes_file(file: &str) -> Result<shortflow_scenario::Scenario, shortflow_scenario::ScenarioError> {
    let text = format!(
        "[path]\nrtt = \"10ms\"\n[workload]\nkind = \"poisson\"\nconnections_per_second = 5\nduration = \"1s\"\n\
         response_dist = {{ kind = \"empirical\", file = {file:?} }}\n"
    );
    load(&text, "/tmp/untrusted.toml", &[])
}

#[test]
fn a_device_is_refused_at_once_without_reading_it() {
    let t = Instant::now();
    let e = with_sizes_file("/dev/zero").unwrap_err().to_string();
    assert!(t.elapsed().as_secs_f64() < 1.0);
    assert!(e.contains("workload.response_dist.file") && e.contains("not a regular file"), "{e}");
}

#[test]
fn a_secret_file_is_refused_without_a_word_of_its_content() {
    let dir = std::env::temp_dir().join(format!("sf-untrusted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("shadow");
    std::fs::write(&secret, "root:$y$j9T$SECRETHASH:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n").unwrap();
    let e = with_sizes_file(secret.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("line 2: not a size"), "{e}");
    for word in ["root", "SECRETHASH", "daemon", "99999"] {
        assert!(!e.contains(word), "the error quotes the file: {e}");
    }
    // Binary content: refused as not text, without quoting it.
    std::fs::write(&secret, [0xff, 0xfe, b'1', b'\n']).unwrap();
    let e = with_sizes_file(secret.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("not UTF-8 text"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_past_the_limit_is_refused_by_its_size() {
    let dir = std::env::temp_dir().join(format!("sf-untrusted-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("sizes.csv");
    let line = "1500\n".repeat(1 << 20); // 5 MiB
    let mut text = String::new();
    for _ in 0..4 {
        text.push_str(&line);
    }
    std::fs::write(&big, text).unwrap();
    let e = with_sizes_file(big.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("larger than 16 MiB"), "{e}");
    std::fs::write(&big, "size\n1500\n13kB\n").unwrap();
    let s = with_sizes_file(big.to_str().unwrap()).unwrap();
    assert!(format!("{:?}", s.workload).contains("1500") && format!("{:?}", s.workload).contains("13000"));
    std::fs::remove_dir_all(&dir).unwrap();
}
