//! Absolute paths: validated once on entry, then carried as plain strings.
//!
//! `/` is the root; `/a/b` has the segments `a`, `b`. Data segments are `[A-Za-z0-9_.~-]+` but not
//! `.` or `..` (a path is a route from the root, never relative). A meta segment (`:subscribers[]`,
//! `:acl`, `:schema`, `:children[]`) may only come last. Limits: 1024 bytes, 255 per segment, 64
//! data segments.

use crate::error::Error;

pub const MAX_PATH: usize = 1024;
pub const MAX_SEGMENT: usize = 255;
pub const MAX_DEPTH: usize = 64;

/// The prefix under which peers are mounted.
pub const NET: &str = "/net";

/// The meta children of a vertex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaSegment {
    Subscribers,
    Acl,
    Schema,
    Children,
}

impl MetaSegment {
    pub fn as_str(self) -> &'static str {
        match self {
            MetaSegment::Subscribers => ":subscribers[]",
            MetaSegment::Acl => ":acl",
            MetaSegment::Schema => ":schema",
            MetaSegment::Children => ":children[]",
        }
    }
    fn parse(s: &str) -> Option<MetaSegment> {
        match s {
            ":subscribers[]" => Some(MetaSegment::Subscribers),
            ":acl" => Some(MetaSegment::Acl),
            ":schema" => Some(MetaSegment::Schema),
            ":children[]" => Some(MetaSegment::Children),
            _ => None,
        }
    }
}

/// A validated absolute path, optionally ending in a meta segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// The data part, always starting with `/` ("/" for the root).
    base: String,
    meta: Option<MetaSegment>,
}

fn invalid(path: &str, reason: &'static str) -> Error {
    Error::InvalidPath {
        path: path.chars().take(80).collect(),
        reason,
    }
}

/// Is `s` a valid data segment (also used for peer and graph names)?
pub fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_SEGMENT
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'~' | b'-'))
}

impl Path {
    pub fn parse(s: &str) -> Result<Path, Error> {
        if s.is_empty() {
            return Err(invalid(s, "empty path"));
        }
        if s.len() > MAX_PATH {
            return Err(invalid(s, "longer than 1024 bytes"));
        }
        if !s.starts_with('/') {
            return Err(invalid(s, "not absolute (must start with '/')"));
        }
        if s == "/" {
            return Ok(Path {
                base: "/".into(),
                meta: None,
            });
        }
        if s.ends_with('/') {
            return Err(invalid(s, "trailing '/' (empty segment)"));
        }
        let segs: Vec<&str> = s[1..].split('/').collect();
        let mut meta = None;
        let mut depth = 0;
        for (i, seg) in segs.iter().enumerate() {
            if seg.is_empty() {
                return Err(invalid(s, "empty segment"));
            }
            if seg.len() > MAX_SEGMENT {
                return Err(invalid(s, "segment longer than 255 bytes"));
            }
            if seg.starts_with(':') {
                let m =
                    MetaSegment::parse(seg).ok_or_else(|| invalid(s, "unknown meta segment"))?;
                if i + 1 != segs.len() {
                    return Err(invalid(s, "meta segment must be the last"));
                }
                meta = Some(m);
                continue;
            }
            if *seg == "." || *seg == ".." {
                return Err(invalid(s, "'.' and '..' are not segments"));
            }
            if !valid_segment(seg) {
                return Err(invalid(s, "bad character (allowed: A-Z a-z 0-9 _ . ~ -)"));
            }
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(invalid(s, "deeper than 64 segments"));
            }
        }
        let base = match meta {
            Some(m) => {
                let b = &s[..s.len() - m.as_str().len() - 1];
                if b.is_empty() {
                    "/".to_string()
                } else {
                    b.to_string()
                }
            }
            None => s.to_string(),
        };
        Ok(Path { base, meta })
    }

    /// The data part ("/" for the root), without any meta segment.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn meta(&self) -> Option<MetaSegment> {
        self.meta
    }

    pub fn is_root(&self) -> bool {
        self.base == "/"
    }

    /// The data segments, root first.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.base.split('/').filter(|s| !s.is_empty())
    }

    /// For a path below a peer mount, `(peer, address on the peer)`: `/net/p/a/b` -> `("p", "/a/b")`,
    /// `/net/p` -> `("p", "/")`. The meta segment is kept on the remote address.
    pub fn net_split(&self) -> Option<(&str, String)> {
        let rest = self.base.strip_prefix("/net/")?;
        let (peer, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let mut remote = tail.to_string();
        if let Some(m) = self.meta {
            if remote != "/" {
                remote.push('/');
            }
            remote.push_str(m.as_str());
        }
        Some((peer, remote))
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.meta {
            None => f.write_str(&self.base),
            Some(m) if self.base == "/" => write!(f, "/{}", m.as_str()),
            Some(m) => write!(f, "{}/{}", self.base, m.as_str()),
        }
    }
}

/// `child` relative to its ancestor `anc` (both data paths): `/a/b/c` under `/a` is `b/c`.
pub(crate) fn relative<'a>(child: &'a str, anc: &str) -> &'a str {
    if anc == "/" {
        &child[1..]
    } else if child.len() > anc.len() {
        &child[anc.len() + 1..]
    } else {
        ""
    }
}

/// `parent` + `/` + `name`.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_split_keeps_meta_on_the_remote_address() {
        let p = Path::parse("/net/b/x/:children[]").unwrap();
        assert_eq!(p.net_split(), Some(("b", "/x/:children[]".to_string())));
        let p = Path::parse("/net/b/:children[]").unwrap();
        assert_eq!(p.net_split(), Some(("b", "/:children[]".to_string())));
        let p = Path::parse("/net/b").unwrap();
        assert_eq!(p.net_split(), Some(("b", "/".to_string())));
        assert_eq!(Path::parse("/net").unwrap().net_split(), None);
        assert_eq!(Path::parse("/network/x").unwrap().net_split(), None);
    }

    #[test]
    fn relative_and_join() {
        assert_eq!(relative("/a/b/c", "/a"), "b/c");
        assert_eq!(relative("/a", "/"), "a");
        assert_eq!(relative("/a", "/a"), "");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }

    #[test]
    fn display_round_trips() {
        for s in ["/", "/a/b", "/a/:acl", "/:children[]"] {
            assert_eq!(Path::parse(s).unwrap().to_string(), s);
        }
    }
}
