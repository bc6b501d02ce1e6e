//! Topic expressions: DDS Security matches topic and partition names with POSIX `fnmatch`
//! without flags, so `*` also matches `/` (`rt/*` covers `rt/a/b`), `?` one character, `[...]`
//! a set (`[!...]` its complement), and `\` quotes the next character.

/// Whether `name` matches the expression `pattern`. Iterative with one backtrack point, so
/// linear in practice and never recursive (a hostile pattern costs at most len x len steps).
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class(&p, pi, n[ni]) {
                        if matched {
                            pi = next;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        // An unclosed bracket is a literal.
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if pi + 1 < p.len() => {
                    if p[pi + 1] == n[ni] {
                        pi += 2;
                        ni += 1;
                        continue;
                    }
                }
                c => {
                    if c == n[ni] {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// A bracket expression at `p[at]`: whether `c` is in it and where the pattern goes on; `None`
/// when the bracket is not closed.
fn class(p: &[char], at: usize, c: char) -> Option<(bool, usize)> {
    let mut i = at + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        let lo = p[i];
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if lo <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if lo == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::fnmatch;

    #[test]
    fn posix_fnmatch_without_flags() {
        assert!(fnmatch("*", ""));
        assert!(fnmatch("*", "rt/a/b"));
        assert!(fnmatch("rt/*", "rt/chatter"));
        assert!(fnmatch("rt/*", "rt/ns/chatter"));
        assert!(!fnmatch("rt/*", "rq/x"));
        assert!(fnmatch("rq/*Request", "rq/add_two_intsRequest"));
        assert!(!fnmatch("rq/*Request", "rq/add_two_intsReply"));
        assert!(fnmatch("rt/chat?er", "rt/chatter"));
        assert!(fnmatch("rt/[a-c]x", "rt/bx"));
        assert!(!fnmatch("rt/[!a-c]x", "rt/bx"));
        assert!(fnmatch("a\\*", "a*"));
        assert!(!fnmatch("a\\*", "ab"));
        assert!(fnmatch("a[", "a["));
        assert!(!fnmatch("rt/chatter", "rt/chatter2"));
        assert!(fnmatch("**a**b**", "xxaxxbxx"));
        let long = "a".repeat(2000);
        assert!(!fnmatch(&format!("{}b", "*a".repeat(50)), &long));
    }
}
