//! Runs the shared conformance suite (cases measured on the reference CLI) and our own fixture
//! cases (same format, under `tests/cases/`) against the binary built by this `cargo test`.
#![allow(clippy::disallowed_methods)] // reason: tests and benches drive the real binary and git, with their own environment.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_cases(cases: Option<&Path>) {
    let runner = workspace().join("../shared/conformance/run");
    assert!(
        runner.exists(),
        "the conformance runner is missing at {}: clone the project with shared/ beside it",
        runner.display()
    );
    let mut cmd = Command::new("python3");
    cmd.arg(&runner)
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_claude-context"))
        .arg("-v");
    if let Some(dir) = cases {
        cmd.arg("--cases").arg(dir);
    }
    let out = cmd.output().expect("python3 runs the conformance runner");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "conformance failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    eprintln!("{last}");
}

#[test]
fn reference_cases_pass_byte_for_byte() {
    run_cases(None);
}

#[test]
fn our_fixture_cases_pass() {
    run_cases(Some(&workspace().join("tests/cases")));
}
