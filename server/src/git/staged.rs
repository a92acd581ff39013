//! HEAD against the index, natively: the parsed index compared with HEAD's trees (read through libgit2's object
//! database), skipping every subtree whose cache-tree entry still matches HEAD. Exact renames are paired by object
//! name as git's `find_identical_files` does. Anything that could pair as an *inexact* rename (an added and a
//! deleted file left after the exact pairing), copies, and several files with the same content decline: the git
//! CLI answers (git's similarity scoring is not reproduced here; see docs/design.md, "The engine choice, measured").

use std::cmp::Ordering;
use std::collections::BTreeMap;

use git2::{Oid, Repository};

use super::config::{Renames, Settings};
use super::index::{HASH_LEN, ParsedIndex};
use super::native::{Flags, Halt};
use super::render::Change;
use super::status::{head_tree, unmerged_code_from_mask};

fn declined(why: impl Into<String>) -> Halt {
    Halt::Declined(why.into())
}

fn object_error(e: &git2::Error) -> Halt {
    Halt::Declined(format!("cannot read HEAD's trees: {}", e.message()))
}

/// git's canonical mode of a tree or index entry.
fn canon_mode(m: u32) -> u32 {
    match m & 0o170000 {
        0o100000 => {
            if m & 0o100 != 0 {
                0o100755
            } else {
                0o100644
            }
        }
        t @ (0o120000 | 0o160000 | 0o040000) => t,
        _ => m,
    }
}

/// One side of a HEAD-against-index comparison that may pair into a rename.
struct Side {
    path: Vec<u8>,
    oid: [u8; HASH_LEN],
    mode: u32,
}

/// HEAD against the index, from the parsed index: subtrees whose cache-tree entry still matches HEAD are skipped
/// without reading them.
pub(super) fn native_staged(
    idx: &ParsedIndex,
    settings: Settings,
    repo: &Repository,
    flags: &Flags<'_>,
) -> Result<Vec<Change>, Halt> {
    let mut out = Vec::new();
    // Unmerged paths: one line each, from the stages present.
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && idx.name(j) == idx.name(i) {
            j += 1;
        }
        let mask = (i..j).fold(0u8, |m, k| match idx.entry(k).stage() {
            1 => m | 1,
            2 => m | 2,
            3 => m | 4,
            _ => m,
        });
        if mask != 0 {
            let code = unmerged_code_from_mask(mask);
            out.push(Change {
                path: idx.name(i).to_vec(),
                orig: None,
                code: b'U',
                unmerged: Some(code),
            });
        }
        i = j;
    }
    let tree = head_tree(repo).map_err(|e| object_error(&e))?;
    let root = idx
        .cache_tree
        .first()
        .filter(|n| n.name.is_empty())
        .map(|_| 0);
    let mut added = Vec::new();
    let mut deleted = Vec::new();
    let mut walk = StagedWalk {
        repo,
        flags,
        idx,
        out: &mut out,
        added: &mut added,
        deleted: &mut deleted,
    };
    walk.level(tree.as_ref(), b"", root, 0..idx.len())?;

    if settings.renames == Renames::Copies && !added.is_empty() {
        return Err(declined("staged copies need similarity scoring"));
    }
    if settings.renames != Renames::Off && !added.is_empty() && !deleted.is_empty() {
        // Exact renames (same object) pair one to one; anything else needs git's similarity scoring.
        let mut by_oid: BTreeMap<[u8; HASH_LEN], (Vec<usize>, Vec<usize>)> = BTreeMap::new();
        for (k, a) in added.iter().enumerate() {
            by_oid.entry(a.oid).or_default().0.push(k);
        }
        for (k, d) in deleted.iter().enumerate() {
            by_oid.entry(d.oid).or_default().1.push(k);
        }
        let mut paired_a = vec![false; added.len()];
        let mut paired_d = vec![false; deleted.len()];
        for (a_ids, d_ids) in by_oid.values() {
            match (a_ids.as_slice(), d_ids.as_slice()) {
                ([], _) | (_, []) => {}
                ([a], [d]) => {
                    let (am, dm) = (added[*a].mode, deleted[*d].mode);
                    if am == 0o160000 || dm == 0o160000 || (am & 0o170000) != (dm & 0o170000) {
                        return Err(declined(
                            "an exact rename of a submodule or of a changed type",
                        ));
                    }
                    paired_a[*a] = true;
                    paired_d[*d] = true;
                    out.push(Change {
                        path: added[*a].path.clone(),
                        orig: Some(deleted[*d].path.clone()),
                        code: b'R',
                        unmerged: None,
                    });
                }
                _ => return Err(declined("several staged files with the same content")),
            }
        }
        if paired_a.iter().any(|p| !p) && paired_d.iter().any(|p| !p) {
            // They may pair as an inexact rename: git's similarity scoring decides, so git answers.
            return Err(declined(
                "staged added and deleted files that may pair as an inexact rename",
            ));
        }
        added = added
            .into_iter()
            .zip(paired_a)
            .filter(|(_, p)| !p)
            .map(|(a, _)| a)
            .collect();
        deleted = deleted
            .into_iter()
            .zip(paired_d)
            .filter(|(_, p)| !p)
            .map(|(d, _)| d)
            .collect();
    }
    out.extend(added.into_iter().map(|a| Change {
        path: a.path,
        orig: None,
        code: b'A',
        unmerged: None,
    }));
    out.extend(deleted.into_iter().map(|d| Change {
        path: d.path,
        orig: None,
        code: b'D',
        unmerged: None,
    }));
    Ok(out)
}

struct StagedWalk<'r, 'o> {
    repo: &'r Repository,
    flags: &'o Flags<'o>,
    idx: &'o ParsedIndex,
    out: &'o mut Vec<Change>,
    added: &'o mut Vec<Side>,
    deleted: &'o mut Vec<Side>,
}

impl StagedWalk<'_, '_> {
    /// Compares the tree `tree` (HEAD's at `prefix`) with the index entries in `range` (those under `prefix`).
    fn level(
        &mut self,
        tree: Option<&git2::Tree<'_>>,
        prefix: &[u8],
        node: Option<usize>,
        range: std::ops::Range<usize>,
    ) -> Result<(), Halt> {
        self.flags.check()?;
        let idx = self.idx;
        if let (Some(t), Some(n)) = (tree, node)
            && idx.cache_tree[n]
                .oid
                .is_some_and(|o| o.as_slice() == t.id().as_bytes())
        {
            return Ok(()); // unchanged since HEAD
        }
        let tree_items: Vec<(Vec<u8>, u32, Oid)> = tree
            .map(|t| {
                t.iter()
                    .map(|e| (e.name_bytes().to_vec(), e.filemode() as u32, e.id()))
                    .collect()
            })
            .unwrap_or_default();
        let mut ti = 0;
        let mut i = range.start;
        loop {
            // The next index item at this level: a file (all its stages) or a directory (all entries under it).
            let index_item = (i < range.end).then(|| {
                let rel = &idx.name(i)[prefix.len()..];
                match rel.iter().position(|&b| b == b'/') {
                    Some(p) => {
                        let mut key = idx.name(i)[..prefix.len() + p].to_vec();
                        key.push(b'0'); // '/' + 1: the end of the block under this directory
                        let j = idx.lower_bound(&key).min(range.end);
                        key.pop();
                        (rel[..p].to_vec(), true, i..j)
                    }
                    None => {
                        let mut j = i + 1;
                        while j < range.end && idx.name(j) == idx.name(i) {
                            j += 1;
                        }
                        (rel.to_vec(), false, i..j)
                    }
                }
            });
            let tree_item = tree_items.get(ti);
            let order = match (&index_item, tree_item) {
                (None, None) => break,
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (Some((iname, idir, _)), Some((tname, tmode, _))) => {
                    tree_key(tname, *tmode == 0o040000).cmp(&tree_key(iname, *idir))
                }
            };
            let mut path = prefix.to_vec();
            match order {
                Ordering::Less => {
                    let (tname, tmode, toid) = &tree_items[ti];
                    path.extend_from_slice(tname);
                    self.removed(&path, *tmode, *toid)?;
                    ti += 1;
                }
                Ordering::Greater => {
                    let Some((iname, _, block)) = index_item else {
                        break;
                    };
                    path.extend_from_slice(&iname);
                    let _ = path;
                    self.added_block(block.clone());
                    i = block.end;
                }
                Ordering::Equal => {
                    let Some((iname, idir, block)) = index_item else {
                        break;
                    };
                    let (_, tmode, toid) = &tree_items[ti];
                    path.extend_from_slice(&iname);
                    if idir && *tmode == 0o040000 {
                        let sub = self.repo.find_tree(*toid).map_err(|e| object_error(&e))?;
                        path.push(b'/');
                        let child = node.and_then(|n| {
                            idx.cache_tree[n]
                                .children
                                .iter()
                                .copied()
                                .find(|&c| idx.cache_tree[c].name == iname)
                        });
                        self.level(Some(&sub), &path, child, block.clone())?;
                    } else if let Some(e) = block
                        .clone()
                        .map(|k| idx.entry(k))
                        .find(|e| e.stage() == 0 && !e.intent_to_add())
                    {
                        let (tm, im) = (canon_mode(*tmode), canon_mode(e.mode));
                        if tm != im || toid.as_bytes() != e.oid.as_slice() {
                            let code = if tm & 0o170000 != im & 0o170000 {
                                b'T'
                            } else {
                                b'M'
                            };
                            self.out.push(Change {
                                path,
                                orig: None,
                                code,
                                unmerged: None,
                            });
                        }
                    } else if block.clone().all(|k| idx.entry(k).stage() == 0) {
                        // Only an intent-to-add entry: invisible to HEAD-against-index, so HEAD's file is deleted.
                        self.removed(&path, *tmode, *toid)?;
                    }
                    ti += 1;
                    i = block.end;
                }
            }
        }
        Ok(())
    }

    /// Everything HEAD has at `path` (a file, or a whole directory) that the index lacks.
    fn removed(&mut self, path: &[u8], mode: u32, oid: Oid) -> Result<(), Halt> {
        if mode != 0o040000 {
            let mut o = [0u8; HASH_LEN];
            o.copy_from_slice(oid.as_bytes());
            self.deleted.push(Side {
                path: path.to_vec(),
                oid: o,
                mode: canon_mode(mode),
            });
            return Ok(());
        }
        self.flags.check()?;
        let sub = self.repo.find_tree(oid).map_err(|e| object_error(&e))?;
        for e in sub.iter() {
            let mut p = path.to_vec();
            p.push(b'/');
            p.extend_from_slice(e.name_bytes());
            self.removed(&p, e.filemode() as u32, e.id())?;
        }
        Ok(())
    }

    /// Index entries HEAD lacks (unmerged ones are reported apart).
    fn added_block(&mut self, block: std::ops::Range<usize>) {
        for k in block {
            let e = self.idx.entry(k);
            if e.stage() == 0 && !e.intent_to_add() {
                self.added.push(Side {
                    path: self.idx.name(k).to_vec(),
                    oid: e.oid,
                    mode: canon_mode(e.mode),
                });
            }
        }
    }
}

/// A name as git orders tree entries: directories as if followed by `/`.
fn tree_key(name: &[u8], dir: bool) -> Vec<u8> {
    let mut k = name.to_vec();
    if dir {
        k.push(b'/');
    }
    k
}

#[cfg(test)]
mod tests {
    use crate::git::test_support::{Fixture, lines};
    use std::fs;

    #[test]
    fn staged_renames_and_modifications() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "alpha\nbeta\ngamma\ndelta\n");
        f.write("b.txt", "one\ntwo\nthree\nfour\n");
        f.write("dir/c.txt", "c content that is long enough\n");
        f.write("dir/keep.txt", "keep\n");
        f.write("gone/x.txt", "x\n");
        f.write("gone/y.txt", "y\n");
        f.commit("init");
        f.git(&f.root, &["mv", "a.txt", "renamed.txt"]);
        f.git(&f.root, &["mv", "b.txt", "b2.txt"]);
        f.write("b2.txt", "one\ntwo\nthree\nfour\nfive\n");
        fs::create_dir_all(f.root.join("moved")).expect("mkdir");
        f.git(&f.root, &["mv", "dir/c.txt", "moved/c.txt"]);
        f.git(&f.root, &["rm", "-q", "-r", "gone"]);
        f.write("dir/keep.txt", "keep\nstaged\n");
        f.git(&f.root, &["add", "dir/keep.txt"]);
        f.write("dir/keep.txt", "keep\nstaged\nand not\n");
        f.write("new/deep/file.txt", "n\n");
        f.git(&f.root, &["add", "new"]);
        // gone/ was deleted and new/ added: they may pair as an inexact rename, which git scores.
        let status = f.assert_git_answers(&f.root, "inexact rename");
        assert!(
            status.contains(&"R  a.txt -> renamed.txt".to_owned()),
            "{status:?}"
        );
        assert!(
            status.contains(&"RM b.txt -> b2.txt".to_owned()),
            "{status:?}"
        );
        assert!(status.contains(&"MM dir/keep.txt".to_owned()), "{status:?}");
    }

    #[test]
    fn an_inexact_rename_is_scored_by_git() {
        let f = Fixture::repo("main", Some("U"));
        let body: String = (0..40).map(|i| format!("line {i}\n")).collect();
        f.write("old.txt", &body);
        f.commit("init");
        fs::remove_file(f.root.join("old.txt")).expect("rm");
        f.write("new.txt", &format!("{body}one more\n"));
        f.git(&f.root, &["add", "-A"]);
        let status = f.assert_git_answers(&f.root, "inexact rename");
        assert_eq!(status, lines(&["R  old.txt -> new.txt"]));
    }

    #[test]
    fn renames_off_by_config() {
        let f = Fixture::repo("main", Some("U"));
        f.write("a.txt", "same\n");
        f.commit("init");
        f.git(&f.root, &["config", "status.renames", "false"]);
        f.git(&f.root, &["mv", "a.txt", "b.txt"]);
        assert_eq!(f.assert_status(&f.root), lines(&["D  a.txt", "A  b.txt"]));
    }

    #[test]
    #[cfg(unix)]
    fn staged_type_and_mode_changes() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let f = Fixture::repo("main", Some("U"));
        f.write("exec", "x\n");
        f.write("to-link", "t\n");
        f.write("d/deep/file", "f\n");
        f.write("d/other", "o\n");
        f.commit("init");
        fs::set_permissions(f.root.join("exec"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::remove_file(f.root.join("to-link")).expect("rm");
        symlink("exec", f.root.join("to-link")).expect("symlink");
        fs::remove_dir_all(f.root.join("d/deep")).expect("rm");
        f.write("d/deep", "now a file\n");
        f.git(&f.root, &["add", "-A"]);
        assert_eq!(
            f.assert_git_answers(&f.root, "inexact rename"),
            lines(&["A  d/deep", "D  d/deep/file", "M  exec", "T  to-link"])
        );
    }

    #[test]
    fn merge_conflicts_show_unmerged_codes() {
        let f = Fixture::repo("main", Some("U"));
        f.write("both.txt", "base\n");
        f.write("theirs-deletes.txt", "base\n");
        f.write("ours-deletes.txt", "base\n");
        f.write("clean.txt", "c\n");
        f.commit("base");
        f.git(&f.root, &["checkout", "-q", "-b", "other"]);
        f.write("both.txt", "other\n");
        f.write("added.txt", "other\n");
        f.write("ours-deletes.txt", "other\n");
        fs::remove_file(f.root.join("theirs-deletes.txt")).expect("rm");
        f.commit("other");
        f.git(&f.root, &["checkout", "-q", "main"]);
        f.write("both.txt", "main\n");
        f.write("added.txt", "main\n");
        f.write("theirs-deletes.txt", "main\n");
        fs::remove_file(f.root.join("ours-deletes.txt")).expect("rm");
        f.commit("main");
        let out = f
            .cmd(&f.root)
            .args(["merge", "-q", "other"])
            .output()
            .expect("merge");
        assert!(!out.status.success(), "the merge should conflict");
        f.write("clean.txt", "c2\n");
        let status = f.assert_status(&f.root);
        for want in [
            "AA added.txt",
            "UU both.txt",
            "DU ours-deletes.txt",
            "UD theirs-deletes.txt",
            " M clean.txt",
        ] {
            assert!(status.contains(&want.to_owned()), "{want} in {status:?}");
        }
    }
}
