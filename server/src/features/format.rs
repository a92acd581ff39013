//! Small text helpers shared by the terminal and the editor: paths for people, URLs, numbers.

use std::fmt::Write as _;
use std::path::Path;

/// A path for people: relative to `base` below it, `~/...` below home, absolute otherwise.
pub fn display_path(path: &Path, base: &Path, home: Option<&Path>) -> String {
    if let Ok(rel) = path.strip_prefix(base)
        && !rel.as_os_str().is_empty()
    {
        return rel.display().to_string();
    }
    if let Some(home) = home
        && let Ok(rel) = path.strip_prefix(home)
    {
        return format!("~/{}", rel.display());
    }
    path.display().to_string()
}

/// `file://` URL of an absolute path (RFC 3986: unreserved characters and `/` kept, the rest
/// percent-encoded).
pub fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `1804` → `1,804`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(167000), "167,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn display_paths() {
        let home = Path::new("/home/me");
        assert_eq!(
            display_path(
                Path::new("/home/me/w/CLAUDE.md"),
                Path::new("/home/me/w"),
                Some(home)
            ),
            "CLAUDE.md"
        );
        assert_eq!(
            display_path(
                Path::new("/home/me/.claude/CLAUDE.md"),
                Path::new("/w"),
                Some(home)
            ),
            "~/.claude/CLAUDE.md"
        );
        assert_eq!(
            display_path(Path::new("/etc/x"), Path::new("/w"), Some(home)),
            "/etc/x"
        );
    }
}
