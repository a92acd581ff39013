//! Reads cannot block (issue 8, item 3). "read_text never blocks" was a `stat` and then an
//! `open`: swapping CLAUDE.md between a file and a FIFO blocked 2 of 400 previews in `openat`,
//! forever (a FIFO's open waits for a writer). The open is now non-blocking and the opened
//! handle's own type is checked. Here a thread swaps instruction files between a regular file
//! and a FIFO as fast as it can while previews run; every preview must end.
//!
//! The race is a matter of timing, so this test makes it likely rather than certain (17 files
//! swapped, many previews); `fs::tests::real_fs_open_never_blocks_and_judges_the_handle` is the
//! deterministic check of the open path itself.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::hostile::tree::{Tree, mkfifo, time_budget, try_run_with};

/// Replaces `target` atomically with a new link to `source` (a rename over it).
fn swap_in(source: &Path, target: &Path, tmp: &Path) {
    let _ = fs::remove_file(tmp);
    if fs::hard_link(source, tmp).is_ok() {
        let _ = fs::rename(tmp, target);
    }
}

#[test]
fn a_fifo_swapped_in_never_blocks() {
    let t = Tree::new();
    let swap = t.tmp.path().join("swap");
    fs::create_dir_all(&swap).expect("mkdir");
    let mut targets: Vec<PathBuf> = vec![t.path("CLAUDE.md")];
    for i in 0..16 {
        targets.push(t.path(format!(".claude/rules/r{i:02}.md")));
    }
    let mut pairs = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let file = swap.join(format!("{i}.file"));
        fs::write(&file, format!("SWAPPED-{i}\n")).expect("write");
        let fifo = swap.join(format!("{i}.fifo"));
        if !mkfifo(&fifo) {
            return;
        }
        t.write(
            target.strip_prefix(&t.root).expect("in the tree"),
            "START\n",
        );
        pairs.push((file, fifo, target.clone(), swap.join(format!("{i}.tmp"))));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for (file, fifo, target, tmp) in &pairs {
                    swap_in(file, target, tmp);
                    swap_in(fifo, target, tmp);
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    // A preview takes milliseconds; one that is still running after this is blocked.
    let watchdog = time_budget(Duration::from_secs(5));
    let root = t.root.to_string_lossy().into_owned();
    let mut result = Ok(());
    for i in 0..200 {
        let cmd = t.command(&["preview", "--json", "--no-git", "--cwd", &root]);
        match try_run_with(cmd, watchdog) {
            Some(r) if r.code == Some(0) => {}
            Some(r) => {
                result = Err(format!("preview {i} exited {:?}: {}", r.code, r.stderr));
                break;
            }
            None => {
                result = Err(format!("preview {i} blocked (killed after {watchdog:?})"));
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert!(
        swaps.load(Ordering::Relaxed) > 0,
        "the swapper never ran a round"
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
