//! git's untracked cache (the index's `UNTR` extension, `core.untrackedCache`), read as git reads it: which
//! directories git listed last time, with their stat data, the object name of their `.gitignore` and the untracked
//! names they held. A tracked directory whose stat data, and whose `.gitignore` (and every parent's), are as recorded
//! holds the same names as then: the walk skips listing it (`native.rs`).
//!
//! The format is git's `Documentation/gitformat-index.adoc` ("Untracked cache") and `dir.c`
//! (`read_untracked_extension`, `validate_untracked_cache`, `valid_cached_dir`, `prep_exclude`). Anything unexpected
//! (a truncated block, a bitmap bit past the last directory, an identity string for another work tree or system,
//! flags for another `status.showUntrackedFiles`, another per-directory exclude file name, changed global exclude
//! files) makes the whole cache unusable, and the walk lists every directory as it does without one. Where git's own
//! test is weaker than ours we are stricter (nanoseconds and ctime always compared, the racy test in whole seconds):
//! a directory we wrongly took for changed costs a listing, never a wrong answer.

use std::collections::HashMap;

use super::index::{HASH_LEN, be32};

/// `DIR_SHOW_OTHER_DIRECTORIES | DIR_HIDE_EMPTY_DIRECTORIES`: the flags of `git status` without `-uall`.
pub(super) const NORMAL_FLAGS: u32 = (1 << 1) | (1 << 2);

/// git's `struct stat_data`, as stored (36 bytes, big-endian).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct StatData {
    pub(super) ctime: (u32, u32),
    pub(super) mtime: (u32, u32),
    pub(super) dev: u32,
    pub(super) ino: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) size: u32,
}

const STAT_LEN: usize = 36;

impl StatData {
    fn read(b: &[u8]) -> StatData {
        StatData {
            ctime: (be32(b, 0), be32(b, 4)),
            mtime: (be32(b, 8), be32(b, 12)),
            dev: be32(b, 16),
            ino: be32(b, 20),
            uid: be32(b, 24),
            gid: be32(b, 28),
            size: be32(b, 32),
        }
    }

    /// The stat data of a file as git fills it (`fill_stat_data`: every field truncated to 32 bits).
    pub(super) fn of(st: &StatNow) -> StatData {
        StatData {
            ctime: (st.ctime.0 as u32, st.ctime.1),
            mtime: (st.mtime.0 as u32, st.mtime.1),
            dev: st.dev as u32,
            ino: st.ino as u32,
            uid: st.uid,
            gid: st.gid,
            size: st.size as u32,
        }
    }
}

/// What the walk knows of a directory's current stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct StatNow {
    pub(super) ctime: (i64, u32),
    pub(super) mtime: (i64, u32),
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) uid: u32,
    pub(super) gid: u32,
    pub(super) size: u64,
}

/// One directory block: a directory git read, in depth-first order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Node {
    /// The path from the work tree's root, `/`-terminated (`""` for the root).
    pub(super) path: Vec<u8>,
    /// The untracked names git found in it (files, and directories with a trailing `/`).
    pub(super) untracked: Vec<Vec<u8>>,
    /// The positions of the directories below it that git read (tracked ones, and untracked ones it looked into).
    pub(super) dirs: Vec<usize>,
    /// The block of the directory holding it (`None` for the root).
    pub(super) parent: Option<usize>,
    /// The stat data and "untracked names are complete" bit (`valid`).
    pub(super) stat: Option<StatData>,
    /// Read with `check_only` (an untracked directory git looked into only to decide whether to show it).
    pub(super) check_only: bool,
    /// The object name of its `.gitignore` when it had one.
    pub(super) exclude_oid: Option<[u8; HASH_LEN]>,
}

/// The parsed extension.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct UntrackedCache {
    /// The first identity string: `Location <work tree>, system <uname -s>`.
    pub(super) ident: Vec<u8>,
    pub(super) info_exclude_oid: [u8; HASH_LEN],
    pub(super) excludes_file_oid: [u8; HASH_LEN],
    pub(super) dir_flags: u32,
    pub(super) exclude_per_dir: Vec<u8>,
    /// Depth-first; `[0]` is the root when there is one.
    pub(super) nodes: Vec<Node>,
    /// Node position by path.
    pub(super) by_path: HashMap<Vec<u8>, usize>,
}

/// git's `decode_varint` (the same encoding as index v4's).
fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut c = *buf.get(*pos)?;
    *pos += 1;
    let mut val = u64::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1)?;
        c = *buf.get(*pos)?;
        *pos += 1;
        val = val.checked_mul(128)?.checked_add(u64::from(c & 127))?;
    }
    Some(val)
}

fn cstr<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = buf.get(*pos..)?;
    let nul = memchr::memchr(0, rest)?;
    *pos += nul + 1;
    Some(&rest[..nul])
}

/// An EWAH bitmap (`ewah/ewah_io.c`): its set bits, each below `limit`. `None` when malformed.
fn ewah_bits(buf: &[u8], pos: &mut usize, limit: usize) -> Option<Vec<usize>> {
    let be64 = |at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(buf.get(at..at + 8)?.try_into().ok()?))
    };
    let _bit_size = be32(buf.get(*pos..*pos + 4)?, 0);
    let words = be32(buf.get(*pos + 4..*pos + 8)?, 0) as usize;
    let start = *pos + 8;
    let end = start.checked_add(words.checked_mul(8)?)?;
    buf.get(end..end + 4)?; // the position of the last marker word
    let mut bits = Vec::new();
    let mut at = start;
    let mut bit: usize = 0;
    while at < end {
        let marker = be64(at)?;
        at += 8;
        let running = usize::try_from((marker >> 1) & 0xffff_ffff).ok()?;
        let literals = usize::try_from(marker >> 33).ok()?;
        let run_bits = running.checked_mul(64)?;
        if marker & 1 != 0 {
            if bit.checked_add(run_bits)? > limit {
                return None;
            }
            bits.extend(bit..bit + run_bits);
        }
        bit = bit.checked_add(run_bits)?;
        for _ in 0..literals {
            if at >= end {
                return None;
            }
            let w = be64(at)?;
            at += 8;
            for c in 0..64 {
                if w & (1 << c) != 0 {
                    if bit + c >= limit {
                        return None;
                    }
                    bits.push(bit + c);
                }
            }
            bit = bit.checked_add(64)?;
        }
    }
    *pos = end + 4;
    Some(bits)
}

/// Parses the extension's data (without its signature and size). `None` when git would drop it
/// (`read_untracked_extension` returning NULL) or it is malformed in a way git does not check.
pub(super) fn parse(data: &[u8]) -> Option<UntrackedCache> {
    // It ends with a NUL, which is not part of what follows.
    let (&last, data) = data.split_last()?;
    if last != 0 || data.is_empty() {
        return None;
    }
    let mut pos = 0;
    let ident_len = usize::try_from(varint(data, &mut pos)?).ok()?;
    let ident_all = data.get(pos..pos.checked_add(ident_len)?)?;
    pos += ident_len;
    let ident = ident_all
        .split(|&b| b == 0)
        .next()
        .unwrap_or_default()
        .to_vec();
    const HEADER: usize = 2 * STAT_LEN + 4;
    let fixed = data.get(pos..pos + HEADER + 2 * HASH_LEN)?;
    let dir_flags = be32(fixed, 2 * STAT_LEN);
    let mut info_exclude_oid = [0; HASH_LEN];
    info_exclude_oid.copy_from_slice(&fixed[HEADER..HEADER + HASH_LEN]);
    let mut excludes_file_oid = [0; HASH_LEN];
    excludes_file_oid.copy_from_slice(&fixed[HEADER + HASH_LEN..]);
    pos += HEADER + 2 * HASH_LEN;
    let exclude_per_dir = cstr(data, &mut pos)?.to_vec();
    let mut uc = UntrackedCache {
        ident,
        info_exclude_oid,
        excludes_file_oid,
        dir_flags,
        exclude_per_dir,
        nodes: Vec::new(),
        by_path: HashMap::new(),
    };
    if pos >= data.len() {
        return (pos == data.len()).then_some(uc);
    }
    let count = usize::try_from(varint(data, &mut pos)?).ok()?;
    if count == 0 {
        return (pos == data.len()).then_some(uc);
    }
    // Each block takes at least three bytes: a count cannot be larger than the data.
    if count > data.len() {
        return None;
    }
    // Depth-first: (position, subdirectories still to read).
    let mut stack: Vec<(usize, u64)> = Vec::new();
    while uc.nodes.len() < count {
        let untracked_nr = varint(data, &mut pos)?;
        let dirs_nr = varint(data, &mut pos)?;
        let name = cstr(data, &mut pos)?;
        let mut path = match stack.last() {
            Some(&(parent, _)) => uc.nodes[parent].path.clone(),
            None if uc.nodes.is_empty() => Vec::new(),
            None => return None, // a second root
        };
        if stack.is_empty() {
            if !name.is_empty() {
                return None; // the root's name is empty
            }
        } else {
            if name.is_empty() || name.contains(&b'/') {
                return None;
            }
            path.extend_from_slice(name);
            path.push(b'/');
        }
        let mut untracked = Vec::with_capacity(usize::try_from(untracked_nr).ok()?.min(1024));
        for _ in 0..untracked_nr {
            untracked.push(cstr(data, &mut pos)?.to_vec());
        }
        let id = uc.nodes.len();
        if let Some((parent, left)) = stack.last_mut() {
            uc.nodes[*parent].dirs.push(id);
            *left -= 1;
        }
        uc.by_path.insert(path.clone(), id);
        uc.nodes.push(Node {
            path,
            untracked,
            parent: stack.last().map(|&(p, _)| p).filter(|_| id > 0),
            ..Node::default()
        });
        stack.push((id, dirs_nr));
        while stack.last().is_some_and(|&(_, left)| left == 0) {
            stack.pop();
        }
    }
    if !stack.is_empty() {
        return None; // fewer blocks than the tree announces
    }
    let valid = ewah_bits(data, &mut pos, count)?;
    let check_only = ewah_bits(data, &mut pos, count)?;
    let with_oid = ewah_bits(data, &mut pos, count)?;
    for k in check_only {
        uc.nodes[k].check_only = true;
    }
    for k in valid {
        let b = data.get(pos..pos + STAT_LEN)?;
        uc.nodes[k].stat = Some(StatData::read(b));
        pos += STAT_LEN;
    }
    for k in with_oid {
        let mut oid = [0; HASH_LEN];
        oid.copy_from_slice(data.get(pos..pos + HASH_LEN)?);
        uc.nodes[k].exclude_oid = Some(oid);
        pos += HASH_LEN;
    }
    (pos == data.len()).then_some(uc)
}

/// `uname -s`, as git puts it in the cache's identity string.
pub(super) fn system_name() -> String {
    rustix::system::uname()
        .sysname()
        .to_string_lossy()
        .into_owned()
}

/// The object name git gives an exclude file's content in the untracked cache: the blob of the content with a
/// newline added (`add_patterns` appends it before hashing), the empty blob for an empty file.
pub(super) fn exclude_oid(content: &[u8]) -> [u8; HASH_LEN] {
    if content.is_empty() {
        return super::native::EMPTY_BLOB;
    }
    let mut h = sha1_smol::Sha1::new();
    h.update(format!("blob {}\0", content.len() + 1).as_bytes());
    h.update(content);
    h.update(b"\n");
    h.digest().bytes()
}

/// Whether a directory's current stat matches what the cache recorded, as strictly as git can compare and more:
/// every field but the device, nanoseconds included, and not racy (modified in or after the second the index was
/// written: `is_racy_stat` without nanoseconds).
pub(super) fn unchanged(recorded: &StatData, now: &StatNow, index_mtime: u32) -> bool {
    let now = StatData::of(now);
    let racy = index_mtime != 0 && recorded.mtime.0 >= index_mtime;
    !racy
        && recorded.mtime == now.mtime
        && recorded.ctime == now.ctime
        && recorded.ino == now.ino
        && recorded.uid == now.uid
        && recorded.gid == now.gid
        && recorded.size == now.size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ewah_runs_and_literals() {
        // One marker: 1 running word of ones, then one literal word with bits 0 and 3.
        let mut b = Vec::new();
        b.extend_from_slice(&100u32.to_be_bytes()); // bit size
        b.extend_from_slice(&2u32.to_be_bytes()); // words
        let marker: u64 = 1 | (1 << 1) | (1 << 33);
        b.extend_from_slice(&marker.to_be_bytes());
        b.extend_from_slice(&0b1001u64.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes()); // rlw
        let mut pos = 0;
        let bits = ewah_bits(&b, &mut pos, 128).expect("parses");
        assert_eq!(bits.len(), 66);
        assert_eq!(bits[63], 63);
        assert_eq!(&bits[64..], &[64, 67]);
        assert_eq!(pos, b.len());
        // A bit past the last directory is refused.
        let mut pos = 0;
        assert_eq!(ewah_bits(&b, &mut pos, 66), None);
        // Truncated.
        let mut pos = 0;
        assert_eq!(ewah_bits(&b[..b.len() - 1], &mut pos, 128), None);
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"\x05abc\0"), None);
        assert_eq!(parse(&[0xff; 200]), None);
    }
}
