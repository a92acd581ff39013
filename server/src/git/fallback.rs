//! The libgit2 engine: libgit2's diffs (HEAD against the index with git's rename detection, the index against the
//! work tree with untracked entries), for repositories the native engine does not handle.

use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, Index};

use super::bytes_to_path;
use super::config::{Renames, RepoHandle, Settings, Untracked};
use super::render::Change;
use super::status::{WorktreePart, head_tree, submodule_code, unmerged_code_from_mask};

fn unmerged_code(index: &Index, path: &[u8]) -> [u8; 2] {
    let p = bytes_to_path(path);
    let mut mask = 0;
    for (stage, bit) in [(1, 1), (2, 2), (3, 4)] {
        if index.get_path(&p, stage).is_some() {
            mask |= bit;
        }
    }
    unmerged_code_from_mask(mask)
}

/// HEAD against the index (`git diff --cached`), with git's rename detection.
pub(super) fn staged_changes(
    h: &RepoHandle,
    settings: Settings,
) -> Result<Vec<Change>, git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let tree = head_tree(&repo)?;
    let mut dopts = DiffOptions::new();
    dopts.include_typechange(true);
    let mut diff = repo.diff_tree_to_index(tree.as_ref(), Some(&index), Some(&mut dopts))?;
    if settings.renames != Renames::Off && diff.deltas().any(|d| d.status() == Delta::Added) {
        let mut find = DiffFindOptions::new();
        find.renames(true)
            .copies(settings.renames == Renames::Copies)
            .rename_threshold(50)
            .copy_threshold(50);
        if let Some(limit) = settings.rename_limit {
            find.rename_limit(limit);
        }
        diff.find_similar(Some(&mut find))?;
    }
    let mut out = Vec::new();
    for d in diff.deltas() {
        let (code, orig) = match d.status() {
            Delta::Added => (b'A', None),
            Delta::Deleted => (b'D', None),
            Delta::Modified => (b'M', None),
            Delta::Typechange => (b'T', None),
            Delta::Renamed => (b'R', d.old_file().path_bytes()),
            Delta::Copied => (b'C', d.old_file().path_bytes()),
            Delta::Conflicted => (b'U', None),
            _ => continue,
        };
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else {
            continue;
        };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        out.push(Change {
            path: path.to_vec(),
            orig: orig.map(<[u8]>::to_vec),
            code,
            unmerged,
        });
    }
    Ok(out)
}

/// The index against the work tree (`git diff` plus untracked entries).
pub(super) fn worktree_changes(
    h: &RepoHandle,
    settings: Settings,
) -> Result<WorktreePart, git2::Error> {
    let repo = h.open()?;
    let index = repo.index()?;
    let mut dopts = DiffOptions::new();
    dopts
        .include_typechange(true)
        .include_untracked(settings.untracked != Untracked::No)
        .recurse_untracked_dirs(settings.untracked == Untracked::All)
        .update_index(false);
    let diff = repo.diff_index_to_workdir(Some(&index), Some(&mut dopts))?;
    let mut part = WorktreePart::default();
    for d in diff.deltas() {
        let Some(path) = d.new_file().path_bytes().or(d.old_file().path_bytes()) else {
            continue;
        };
        let code = match d.status() {
            Delta::Untracked => {
                // git does not list the content of a directory that replaced a tracked file (libgit2 does).
                let replaced = path
                    .strip_suffix(b"/")
                    .is_some_and(|p| index.get_path(&bytes_to_path(p), 0).is_some());
                if !replaced {
                    part.untracked.push(path.to_vec());
                }
                continue;
            }
            Delta::Modified if d.old_file().mode() == FileMode::Commit => {
                submodule_code(&repo, path).unwrap_or(b'M')
            }
            Delta::Modified => b'M',
            Delta::Deleted => b'D',
            Delta::Typechange => b'T',
            Delta::Conflicted => b'U',
            _ => continue,
        };
        let unmerged = (code == b'U').then(|| unmerged_code(&index, path));
        part.changes.push(Change {
            path: path.to_vec(),
            orig: None,
            code,
            unmerged,
        });
    }
    Ok(part)
}
