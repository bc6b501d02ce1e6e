//! SQL `LIKE` patterns: `%` matches any run of characters (none included), `_` exactly one
//! character, anything else itself. Matched over Unicode characters with the classic greedy
//! algorithm that backtracks only to the last `%`, so the time is O(len(text) × len(pattern))
//! at worst, whatever the pattern.

#[derive(Clone, Debug, PartialEq, Eq)]
enum P {
    AnyRun,
    One,
    Char(char),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern(Vec<P>);

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        Pattern(
            text.chars()
                .map(|c| match c {
                    '%' => P::AnyRun,
                    '_' => P::One,
                    c => P::Char(c),
                })
                .collect(),
        )
    }

    pub fn matches(&self, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        let p = &self.0;
        let (mut ti, mut pi) = (0, 0);
        // Where the last `%` was, and the text position it has taken up to.
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            match p.get(pi) {
                Some(P::AnyRun) => {
                    star = Some((pi, ti));
                    pi += 1;
                }
                Some(P::One) => {
                    ti += 1;
                    pi += 1;
                }
                Some(P::Char(c)) if *c == t[ti] => {
                    ti += 1;
                    pi += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        pi = sp + 1;
                        ti = st + 1;
                        star = Some((sp, st + 1));
                    }
                    None => return false,
                },
            }
        }
        p[pi..].iter().all(|x| *x == P::AnyRun)
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn wildcards() {
        let m = |p: &str, t: &str| Pattern::new(p).matches(t);
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(m("a%", "a"));
        assert!(m("a%", "abcd"));
        assert!(m("%cd", "abcd"));
        assert!(m("%b%d", "abcd"));
        assert!(!m("%b%e", "abcd"));
        assert!(m("a_c", "abc"));
        assert!(!m("a_c", "ac"));
        assert!(m("%", ""));
        assert!(!m("_", ""));
        assert!(m("h_llo w%", "héllo world"));
        assert!(m("%a%a%a%a%b", &format!("{}b", "a".repeat(200))));
        assert!(!m("%a%a%a%a%b", &"a".repeat(200)));
    }
}
