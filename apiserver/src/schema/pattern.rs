//! `pattern` regexes with Go RE2 semantics on top of the `regex` crate.
//!
//! Both engines take the same syntax for everything CRDs use. The one difference that matters is
//! that RE2's Perl classes are ASCII-only while `regex` makes them Unicode-aware, so `\d`, `\w`,
//! `\s`, `\b` and their negations are rewritten to their ASCII forms before compiling.

use regex::Regex;

/// A compiled `pattern`, keeping the source text for error messages.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    /// The pattern exactly as written in the schema (shown in `should match '<source>'`).
    pub(crate) source: String,
    regex: Regex,
}

impl Pattern {
    /// Compiles a schema `pattern`; the error text is what the CRD is rejected with.
    pub(crate) fn compile(source: &str) -> Result<Self, String> {
        let translated = ascii_perl_classes(source);
        let regex = Regex::new(&translated).map_err(|e| e.to_string())?;
        Ok(Self { source: source.to_string(), regex })
    }

    /// Unanchored match, like Go's `regexp.MatchString` used by kube-openapi.
    pub(crate) fn is_match(&self, s: &str) -> bool {
        self.regex.is_match(s)
    }
}

/// Rewrites Perl classes to RE2's ASCII meaning; escaped backslashes are left alone.
fn ascii_perl_classes(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 16);
    let mut chars = src.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            match c {
                '[' => in_class = true,
                ']' => in_class = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str("[\\t\\n\\f\\r ]"),
            Some('S') => out.push_str("[^\\t\\n\\f\\r ]"),
            Some('b') if in_class => out.push_str("\\x08"),
            Some('b') => out.push_str("(?-u:\\b)"),
            Some('B') => out.push_str("(?-u:\\B)"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_class_is_ascii_only_like_re2() {
        let p = Pattern::compile(r"^\d+$").unwrap();
        assert!(p.is_match("123"));
        assert!(!p.is_match("١٢٣"), "Arabic-Indic digits are not \\d in RE2");
    }

    #[test]
    fn empty_alternatives_and_escaped_backslashes_compile() {
        let p = Pattern::compile(r"^([1-9]||[1-5][0-7]|58)Ti$").unwrap();
        assert!(p.is_match("Ti"));
        assert!(p.is_match("58Ti"));
        let lit = Pattern::compile(r"^a\\d$").unwrap();
        assert!(lit.is_match(r"a\d"));
    }
}
