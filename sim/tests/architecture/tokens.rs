//! Just enough of a Rust lexer and `use`-tree parser for the import graph.

/// A token of Rust source, as much as this test needs: identifiers (keywords included)
/// and punctuation, with `::` as one token; literals, lifetimes and comments are dropped.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Sym(&'static str),
}

pub fn tokenize(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut nesting = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    nesting += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    nesting -= 1;
                    i += 2;
                    if nesting == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == 'r' && (at(i + 1) == '#' || at(i + 1) == '"') && raw_string_start(&c, i + 1) {
            i = skip_raw_string(&c, i + 1);
        } else if ch == 'b' && at(i + 1) == 'r' && raw_string_start(&c, i + 2) {
            i = skip_raw_string(&c, i + 2);
        } else if ch == '"' || (ch == 'b' && at(i + 1) == '"') {
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            let start = if ch == 'b' { i + 1 } else { i };
            if at(start + 1) == '\\' {
                i = start + 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(start + 2) == '\'' {
                i = start + 3;
            } else {
                // A lifetime or label.
                i = start + 1;
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::Sym("::"));
            i += 2;
        } else {
            out.push(Tok::Sym(match ch {
                '{' => "{",
                '}' => "}",
                '(' => "(",
                ')' => ")",
                ',' => ",",
                ';' => ";",
                '*' => "*",
                '$' => "$",
                '<' => "<",
                _ => "?",
            }));
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i - 1` starts a raw string (`r"`, `r#"`, `r##"`...).
fn raw_string_start(c: &[char], mut i: usize) -> bool {
    while c.get(i) == Some(&'#') {
        i += 1;
    }
    c.get(i) == Some(&'"')
}

/// Skips a raw string whose hashes start at `i`; returns the index after it.
fn skip_raw_string(c: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while c.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|h| c.get(i + h) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// `use` starts a declaration unless it is a precise-capturing bound (`+ use<'a>`).
pub fn starts_use_tree(next: Option<&Tok>) -> bool {
    matches!(next, Some(Tok::Ident(_)) | Some(Tok::Sym("::")) | Some(Tok::Sym("{")))
}

/// Whether the `use` at `i` is `pub` (any visibility).
pub fn is_public(tokens: &[Tok], i: usize) -> bool {
    match i.checked_sub(1).map(|j| &tokens[j]) {
        Some(Tok::Ident(p)) => p == "pub",
        Some(Tok::Sym(")")) => {
            // `pub(crate) use`, `pub(super) use`, `pub(in path) use`.
            let open = (0..i).rev().find(|&j| tokens[j] == Tok::Sym("("));
            open.and_then(|o| o.checked_sub(1)).is_some_and(|p| tokens[p] == Tok::Ident("pub".into()))
        }
        _ => false,
    }
}

/// One leaf of a `use` tree.
pub struct UseItem {
    /// The full path as written.
    pub path: Vec<String>,
    /// The name it brings into scope.
    pub name: String,
    /// `path::*`.
    pub glob: bool,
}

/// Parses the `use` tree at `*i` (after `use`), up to and past its `;` or the end of
/// its group.
pub fn parse_use_tree(tokens: &[Tok], i: &mut usize, mut prefix: Vec<String>) -> Vec<UseItem> {
    let mut out = Vec::new();
    loop {
        match tokens.get(*i) {
            Some(Tok::Sym("::")) => *i += 1,
            Some(Tok::Sym("*")) => {
                *i += 1;
                out.push(UseItem { name: String::new(), path: prefix.clone(), glob: true });
                break;
            }
            Some(Tok::Sym("{")) => {
                *i += 1;
                while !matches!(tokens.get(*i), Some(Tok::Sym("}")) | None) {
                    out.extend(parse_use_tree(tokens, i, prefix.clone()));
                    if tokens.get(*i) == Some(&Tok::Sym(",")) {
                        *i += 1;
                    }
                }
                *i += 1;
                break;
            }
            Some(Tok::Ident(s)) => {
                *i += 1;
                if s == "self" && !prefix.is_empty() && tokens.get(*i) != Some(&Tok::Sym("::")) {
                    // `a::{self}` names `a` itself.
                    let name = prefix.last().cloned().unwrap_or_default();
                    out.push(UseItem { path: prefix.clone(), name: alias(tokens, i).unwrap_or(name), glob: false });
                    break;
                }
                prefix.push(s.clone());
                if tokens.get(*i) != Some(&Tok::Sym("::")) {
                    let name = alias(tokens, i).unwrap_or_else(|| s.clone());
                    out.push(UseItem { path: prefix.clone(), name, glob: false });
                    break;
                }
            }
            _ => break,
        }
    }
    if tokens.get(*i) == Some(&Tok::Sym(";")) {
        *i += 1;
    }
    out
}

/// `as name` after a use leaf, consumed.
fn alias(tokens: &[Tok], i: &mut usize) -> Option<String> {
    if let (Some(Tok::Ident(a)), Some(Tok::Ident(name))) = (tokens.get(*i), tokens.get(*i + 1))
        && a == "as"
    {
        *i += 2;
        return Some(name.clone());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_trees_expand_to_one_path_per_leaf() {
        let tokens = tokenize("use super::{self, a::{B, c as d}, e::*}; // use crate::x;\nfn f() {}");
        let mut i = 1;
        let items = parse_use_tree(&tokens, &mut i, Vec::new());
        let leaves: Vec<(String, String, bool)> =
            items.iter().map(|u| (u.path.join("::"), u.name.clone(), u.glob)).collect();
        assert_eq!(
            leaves,
            vec![
                ("super".into(), "super".into(), false),
                ("super::a::B".into(), "B".into(), false),
                ("super::a::c".into(), "d".into(), false),
                ("super::e".into(), String::new(), true),
            ]
        );
        assert_eq!(tokens[i], Tok::Ident("fn".into()), "the comment's `use` is not a token");
    }

    #[test]
    fn strings_chars_and_lifetimes_hide_no_paths() {
        let tokens = tokenize(r####"let s = "crate::a"; let r = r#"use x;"#; let c = '"'; fn f<'a>(x: &'a str) {}"####);
        assert!(!tokens.contains(&Tok::Ident("crate".into())));
        assert!(!tokens.contains(&Tok::Ident("use".into())));
        assert!(tokens.contains(&Tok::Ident("str".into())));
    }
}
