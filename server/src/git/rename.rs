//! Inexact rename detection between HEAD and the index, as git's `diffcore-rename.c` does it for `git status`
//! (renames, not copies; no break detection; the default 50% threshold): first deleted and added files with the same
//! unique basename paired when at least 75% similar, then a matrix of every remaining pair where each added file keeps
//! its four best candidates, sorted by score (then same basename first) and taken greedily. Similarity is git's
//! `estimate_similarity` over `diffcore-delta.c`'s span hashes (chunks ending at a newline or after 64 bytes; a CR
//! before LF ignored in text). Pure: the callers read the blobs.

use std::cmp::Ordering;
use std::collections::HashMap;

const MAX_SCORE: u64 = 60_000;
/// `DEFAULT_RENAME_SCORE`: 50%.
const MIN_SCORE: u64 = 30_000;
/// Basename matches need `MIN + 0.5 * (MAX - MIN)`: 75%.
const MIN_BASENAME_SCORE: u64 = MIN_SCORE + (MAX_SCORE - MIN_SCORE) / 2;
const CANDIDATES_PER_DST: usize = 4;
const HASHBASE: u32 = 107_927;
/// git's `FIRST_FEW_BYTES`: a NUL in them makes a buffer binary.
const FIRST_FEW_BYTES: usize = 8000;

/// One side of a candidate pair: its path and its blob's content (empty for what is not a regular file).
pub(super) struct File<'a> {
    pub(super) path: &'a [u8],
    pub(super) data: &'a [u8],
    /// A regular file (only those are compared; the others still count for basename uniqueness).
    pub(super) regular: bool,
}

/// `hash_chars`: span hash → number of bytes in spans with that hash.
fn spans(data: &[u8]) -> HashMap<u32, u64> {
    let is_text = !data[..data.len().min(FIRST_FEW_BYTES)].contains(&0);
    let mut out: HashMap<u32, u64> = HashMap::new();
    let (mut accum1, mut accum2, mut n) = (0u32, 0u32, 0u64);
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        i += 1;
        // Ignore CR in a CRLF sequence if text.
        if is_text && c == b'\r' && i < data.len() && data[i] == b'\n' {
            continue;
        }
        let old1 = accum1;
        accum1 = (accum1 << 7) ^ (accum2 >> 25);
        accum2 = (accum2 << 7) ^ (old1 >> 25);
        accum1 = accum1.wrapping_add(u32::from(c));
        n += 1;
        if n < 64 && c != b'\n' {
            continue;
        }
        let h = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *out.entry(h).or_default() += n;
        (accum1, accum2, n) = (0, 0, 0);
    }
    if n > 0 {
        let h = accum1.wrapping_add(accum2.wrapping_mul(0x61)) % HASHBASE;
        *out.entry(h).or_default() += n;
    }
    out
}

/// Span hashes, computed once per file.
type Spans = Option<HashMap<u32, u64>>;

/// `estimate_similarity` (both regular files, checked by the caller).
fn similarity((src, src_spans): (&[u8], &mut Spans), (dst, dst_spans): (&[u8], &mut Spans)) -> u64 {
    let (ssize, dsize) = (src.len() as u64, dst.len() as u64);
    let max = ssize.max(dsize);
    let base = ssize.min(dsize);
    if max * (MAX_SCORE - MIN_SCORE) < (max - base) * MAX_SCORE || dsize == 0 {
        return 0;
    }
    let sh = src_spans.get_or_insert_with(|| spans(src));
    let dh = dst_spans.get_or_insert_with(|| spans(dst));
    let copied: u64 = sh
        .iter()
        .map(|(h, &sc)| dh.get(h).map_or(0, |&dc| sc.min(dc)))
        .sum();
    copied * MAX_SCORE / max
}

fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// git's `basename_same`.
fn basename_same(a: &[u8], b: &[u8]) -> bool {
    basename(a) == basename(b)
}

#[derive(Clone, Copy)]
struct Score {
    score: u64,
    name_score: u8,
    /// `None`: an empty slot.
    dst: Option<usize>,
    src: usize,
}

/// git's `score_compare`: empty slots last, then higher scores, then same basenames.
fn score_compare(a: &Score, b: &Score) -> Ordering {
    match (a.dst, b.dst) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        _ if a.score == b.score => b.name_score.cmp(&a.name_score),
        _ => b.score.cmp(&a.score),
    }
}

/// git's `record_if_better`.
fn record_if_better(m: &mut [Score; CANDIDATES_PER_DST], o: Score) {
    let mut worst = 0;
    for i in 1..CANDIDATES_PER_DST {
        if score_compare(&m[i], &m[worst]) == Ordering::Greater {
            worst = i;
        }
    }
    if score_compare(&m[worst], &o) == Ordering::Greater {
        m[worst] = o;
    }
}

/// The renames git finds between `srcs` (deleted, in path order) and `dsts` (added, in path order), none of them
/// paired exactly: `(src, dst)` positions. `limit`: `status.renameLimit` / `diff.renameLimit` (1000 by default;
/// above `limit²` pairs git does no inexact detection).
pub(super) fn inexact_renames(
    srcs: &[File<'_>],
    dsts: &[File<'_>],
    limit: usize,
) -> Vec<(usize, usize)> {
    let mut src_spans: Vec<Spans> = vec![None; srcs.len()];
    let mut dst_spans: Vec<Spans> = vec![None; dsts.len()];
    let mut score = |s: usize, d: usize| {
        if !srcs[s].regular || !dsts[d].regular {
            return 0;
        }
        similarity(
            (srcs[s].data, &mut src_spans[s]),
            (dsts[d].data, &mut dst_spans[d]),
        )
    };
    let mut src_used = vec![false; srcs.len()];
    let mut dst_done = vec![false; dsts.len()];
    let mut pairs = Vec::new();

    // Basenames unique among the sources and among the destinations.
    let unique = |files: &[File<'_>]| -> HashMap<Vec<u8>, Option<usize>> {
        let mut m: HashMap<Vec<u8>, Option<usize>> = HashMap::new();
        for (k, f) in files.iter().enumerate() {
            m.entry(basename(f.path).to_vec())
                .and_modify(|v| *v = None)
                .or_insert(Some(k));
        }
        m
    };
    let (by_src, by_dst) = (unique(srcs), unique(dsts));
    for (i, s) in srcs.iter().enumerate() {
        let base = basename(s.path);
        let (Some(Some(si)), Some(Some(di))) = (by_src.get(base), by_dst.get(base)) else {
            continue;
        };
        let (si, di) = (*si, *di);
        if dst_done[di] || si != i {
            continue;
        }
        if score(si, di) >= MIN_BASENAME_SCORE {
            dst_done[di] = true;
            src_used[si] = true;
            pairs.push((si, di));
        }
    }

    let left_src: Vec<usize> = (0..srcs.len()).filter(|&k| !src_used[k]).collect();
    let left_dst: Vec<usize> = (0..dsts.len()).filter(|&k| !dst_done[k]).collect();
    if left_src.is_empty() || left_dst.is_empty() {
        return pairs;
    }
    if limit > 0 && left_src.len() * left_dst.len() > limit * limit {
        return pairs; // git: too many candidates, no inexact detection
    }
    let empty = Score {
        score: 0,
        name_score: 0,
        dst: None,
        src: 0,
    };
    let mut mx: Vec<Score> = Vec::with_capacity(left_dst.len() * CANDIDATES_PER_DST);
    for &d in &left_dst {
        let mut m = [empty; CANDIDATES_PER_DST];
        for &s in &left_src {
            let value = score(s, d);
            let name_score = u8::from(basename_same(srcs[s].path, dsts[d].path));
            record_if_better(
                &mut m,
                Score {
                    score: value,
                    name_score,
                    dst: Some(d),
                    src: s,
                },
            );
        }
        mx.extend(m);
    }
    mx.sort_by(score_compare); // stable, as git's STABLE_QSORT
    for c in mx {
        let Some(d) = c.dst else { break };
        if c.score < MIN_SCORE {
            break;
        }
        if dst_done[d] || src_used[c.src] {
            continue;
        }
        dst_done[d] = true;
        src_used[c.src] = true;
        pairs.push((c.src, d));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f<'a>(path: &'a str, data: &'a str) -> File<'a> {
        File {
            path: path.as_bytes(),
            data: data.as_bytes(),
            regular: true,
        }
    }

    #[test]
    fn similar_content_pairs_and_unrelated_does_not() {
        let body: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let edited = format!("{body}one more\n");
        let srcs = [f("old.txt", &body), f("gone.txt", "nothing alike\n")];
        let dsts = [f("dir/new.txt", &edited), f("other.txt", "x\ny\nz\n")];
        assert_eq!(inexact_renames(&srcs, &dsts, 1000), vec![(0, 0)]);
        // A small file with an appended line is under 50% similar.
        let srcs = [f("d/b.txt", "b\n")];
        let dsts = [f("d/b2.txt", "b\nmore\n")];
        assert!(inexact_renames(&srcs, &dsts, 1000).is_empty());
        // Too many candidates for the limit: none.
        let srcs = [f("old.txt", &body), f("old2.txt", &body)];
        let dsts = [f("new.txt", &edited), f("new2.txt", &edited)];
        assert!(inexact_renames(&srcs, &dsts, 1).is_empty());
    }

    #[test]
    fn crlf_counts_as_lf_in_text() {
        let lf: String = (0..20).map(|i| format!("row {i}\n")).collect();
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(spans(lf.as_bytes()), spans(crlf.as_bytes()));
        // In binary data (a NUL early on) the CRs count.
        let bin = format!("\0{crlf}");
        assert_eq!(
            spans(bin.as_bytes()).values().sum::<u64>(),
            bin.len() as u64
        );
    }
}
