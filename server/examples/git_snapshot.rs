//! Prints the git snapshot block for a directory (default: the current one), for timing against the git CLI.
//!
//! `cargo run --release --example git_snapshot -- [DIR] [--times N] [--quiet | --status-lines] [--engine auto|native|cli]`
//!
//! With `--status-lines`, also says on stderr which engine answered (and why the native one declined).
#![allow(clippy::print_stdout)] // reason: an example whose output is the block.
#![allow(clippy::disallowed_methods)] // reason: a command-line tool reading its own environment.

use std::path::PathBuf;
use std::time::Instant;

use claude_context::git::{Engine, GitEnv, GitOptions, render_block, snapshot};

fn main() {
    let mut dir = None;
    let mut times = 1usize;
    let mut quiet = false;
    let mut lines_only = false;
    let mut engine = Engine::Auto;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--times" => times = args.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "--quiet" => quiet = true,
            "--status-lines" => lines_only = true,
            "--engine" => {
                engine = match args.next().as_deref() {
                    Some("native") => Engine::Native,
                    Some("cli") => Engine::Cli,
                    _ => Engine::Auto,
                }
            }
            _ => dir = Some(PathBuf::from(a)),
        }
    }
    let dir = dir.unwrap_or_else(|| std::env::current_dir().expect("current dir"));
    let opts = GitOptions {
        engine,
        ..GitOptions::new(GitEnv::from_vars(std::env::vars_os()))
    };
    let mut micros = Vec::with_capacity(times);
    let mut block = None;
    for _ in 0..times {
        let t = Instant::now();
        let s = snapshot(&dir, &opts);
        micros.push(t.elapsed().as_micros());
        block = Some(s);
    }
    match block {
        Some(Ok(Some(s))) => {
            if lines_only {
                for line in &s.status_lines {
                    println!("{line}");
                }
                eprintln!(
                    "engine {:?}{}{}",
                    s.status_engine,
                    s.status_declined
                        .as_deref()
                        .map(|d| format!(", the native engine declined: {d}"))
                        .unwrap_or_default(),
                    s.status_problem
                        .as_ref()
                        .map(|p| format!(", no status: {}", p.message))
                        .unwrap_or_default()
                );
            } else if !quiet {
                println!("{}", render_block(&s));
            }
        }
        Some(Ok(None)) => eprintln!("not a git work tree"),
        Some(Err(e)) => eprintln!("{e}"),
        None => {}
    }
    if times > 1 {
        micros.sort_unstable();
        eprintln!(
            "snapshot x{times}: median {} us, min {} us, max {} us",
            micros[times / 2],
            micros[0],
            micros[times - 1]
        );
    }
}
