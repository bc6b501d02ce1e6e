//! Topic selection: `RMW_TRACER_RECORD_TOPICS` and `tracer record`'s topic arguments.
//!
//! A comma-separated list of ROS topic names or globs; empty = every topic. In a glob `*`
//! matches any run of characters within one name segment, `**` any run including `/`, `?` one
//! character that is not `/`. A pattern without a leading `/` gets one (`chatter` = `/chatter`).

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    patterns: Vec<String>,
}

impl Selection {
    /// Everything.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// From a comma-separated list (blank entries are ignored).
    pub fn parse(list: &str) -> Selection {
        Selection::from_patterns(list.split(','))
    }

    pub fn from_patterns<'a>(items: impl IntoIterator<Item = &'a str>) -> Selection {
        let patterns = items
            .into_iter()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                if p.starts_with('/') {
                    p.to_owned()
                } else {
                    format!("/{p}")
                }
            })
            .collect();
        Selection { patterns }
    }

    pub fn is_all(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns without glob characters (topics that can be subscribed by name).
    pub fn literal_topics(&self) -> impl Iterator<Item = &str> {
        self.patterns
            .iter()
            .filter(|p| !p.contains(['*', '?']))
            .map(String::as_str)
    }

    pub fn matches(&self, topic: &str) -> bool {
        self.is_all()
            || self
                .patterns
                .iter()
                .any(|p| glob(p.as_bytes(), topic.as_bytes()))
    }
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match p {
        [] => s.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        [b'*', rest @ ..] => {
            let seg = s.iter().position(|&c| c == b'/').unwrap_or(s.len());
            (0..=seg).any(|i| glob(rest, &s[i..]))
        }
        [b'?', rest @ ..] => matches!(s, [c, tail @ ..] if *c != b'/' && glob(rest, tail)),
        [c, rest @ ..] => matches!(s, [d, tail @ ..] if d == c && glob(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_globs() {
        let s = Selection::parse("chatter, /camera/*/image ,/diag/**,/a?c,");
        assert!(s.matches("/chatter"));
        assert!(!s.matches("/chatter2"));
        assert!(s.matches("/camera/left/image"));
        assert!(!s.matches("/camera/left/x/image"));
        assert!(s.matches("/diag/x/y"));
        assert!(s.matches("/abc"));
        assert!(!s.matches("/a/c"));
        assert_eq!(s.literal_topics().collect::<Vec<_>>(), vec!["/chatter"]);
        assert!(Selection::parse(" , ").is_all());
        assert!(Selection::all().matches("/anything/at/all"));
    }
}
