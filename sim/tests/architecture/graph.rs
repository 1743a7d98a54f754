//! The file-level import graph of one crate, and its circles (see the rules in
//! `architecture.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::tokens::{Tok, is_public, parse_use_tree, starts_use_tree, tokenize};
use super::{relative, rust_files};

/// One source file of a crate.
pub struct File {
    /// Path relative to the workspace root.
    pub rel: String,
    /// Its module path inside the crate (`[]` for the crate roots).
    module: Vec<String>,
    /// Paths it names, made absolute (crate-relative module paths).
    paths: Vec<Vec<String>>,
    /// Names it re-exports (`pub use`), to the absolute path they forward to (`None` when
    /// the item comes from another crate).
    reexports: BTreeMap<String, Option<Vec<String>>>,
}

/// The file-level import graph of one crate.
pub struct Graph {
    pub files: Vec<File>,
    /// Module path to file, for the library tree and the binary tree.
    lib: BTreeMap<Vec<String>, usize>,
    bin: BTreeMap<Vec<String>, usize>,
    /// Top-level modules `main.rs` declares (their files belong to the binary tree).
    bin_modules: BTreeSet<String>,
    /// `from -> to -> the first path that made the edge`.
    edges: BTreeMap<usize, BTreeMap<usize, String>>,
}

impl Graph {
    pub fn read(root: &Path, krate: &str) -> Self {
        let src = root.join(krate).join("src");
        let mut g = Graph {
            files: Vec::new(),
            lib: BTreeMap::new(),
            bin: BTreeMap::new(),
            bin_modules: BTreeSet::new(),
            edges: BTreeMap::new(),
        };
        let mut sources = Vec::new();
        for path in rust_files(&src) {
            let inner = relative(&src, &path);
            let Some(module) = module_of(&inner) else { continue };
            let text = fs::read_to_string(&path).unwrap_or_default();
            let tokens = tokenize(&text);
            if inner == "main.rs" {
                g.bin_modules = declared_modules(&tokens);
            }
            sources.push((inner, module, tokens, relative(root, &path)));
        }
        for (inner, module, _, rel) in &sources {
            let id = g.files.len();
            g.files.push(File {
                rel: rel.clone(),
                module: module.clone(),
                paths: Vec::new(),
                reexports: BTreeMap::new(),
            });
            let in_bin = inner == "main.rs" || module.first().is_some_and(|m| g.bin_modules.contains(m));
            if in_bin {
                g.bin.insert(module.clone(), id);
            }
            if inner != "main.rs" {
                g.lib.insert(module.clone(), id);
            }
        }
        for (id, (_, _, tokens, _)) in sources.iter().enumerate() {
            let (paths, reexports) = g.scan(id, tokens);
            g.files[id].paths = paths;
            g.files[id].reexports = reexports;
        }
        for id in 0..g.files.len() {
            for path in g.files[id].paths.clone() {
                let Some(to) = g.resolve(id, &path, 0) else { continue };
                let (from_module, to_module) = (&g.files[id].module, &g.files[to].module);
                let own_submodule = is_root_or_mod(&g.files[id].rel) && to_module.starts_with(from_module);
                if to != id && !own_submodule {
                    g.edges.entry(id).or_default().entry(to).or_insert_with(|| format!("crate::{}", path.join("::")));
                }
            }
        }
        g
    }

    /// The module tree a file belongs to.
    fn tree(&self, file: usize) -> &BTreeMap<Vec<String>, usize> {
        let f = &self.files[file];
        let bin = f.rel.ends_with("src/main.rs") || f.module.first().is_some_and(|m| self.bin_modules.contains(m));
        if bin { &self.bin } else { &self.lib }
    }

    /// Whether `module` is a module with its own file, seen from `file`.
    fn has_module(&self, file: usize, module: &[String]) -> bool {
        self.tree(file).contains_key(module)
    }

    /// The paths a file names and the names it re-exports, made absolute.
    #[allow(clippy::type_complexity)]
    fn scan(&self, file: usize, tokens: &[Tok]) -> (Vec<Vec<String>>, BTreeMap<String, Option<Vec<String>>>) {
        let here = self.files[file].module.clone();
        let mut paths = Vec::new();
        let mut reexports = BTreeMap::new();
        // Inline modules open at a brace depth: (name, depth inside its braces).
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < tokens.len() {
            let module: Vec<String> = here.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect();
            match &tokens[i] {
                Tok::Sym("{") => depth += 1,
                Tok::Sym("}") => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|(_, d)| *d > depth) {
                        inline.pop();
                    }
                }
                Tok::Ident(k) if k == "mod" => {
                    if let (Some(Tok::Ident(name)), Some(Tok::Sym("{"))) = (tokens.get(i + 1), tokens.get(i + 2)) {
                        depth += 1;
                        inline.push((name.clone(), depth));
                        i += 3;
                        continue;
                    }
                }
                Tok::Ident(k) if k == "use" && starts_use_tree(tokens.get(i + 1)) => {
                    let public = is_public(tokens, i);
                    let mut j = i + 1;
                    let items = parse_use_tree(tokens, &mut j, Vec::new());
                    for item in items {
                        let absolute = self.absolute(file, &module, &item.path);
                        if let Some(abs) = &absolute {
                            paths.push(abs.clone());
                        }
                        if public && !item.glob && inline.is_empty() {
                            reexports.insert(item.name, absolute);
                        }
                    }
                    i = j;
                    continue;
                }
                Tok::Ident(k)
                    if matches!(k.as_str(), "crate" | "super" | "self")
                        && tokens.get(i + 1) == Some(&Tok::Sym("::")) =>
                {
                    let mut segments = vec![k.clone()];
                    let mut j = i + 1;
                    while tokens.get(j) == Some(&Tok::Sym("::")) {
                        let Some(Tok::Ident(s)) = tokens.get(j + 1) else { break };
                        segments.push(s.clone());
                        j += 2;
                    }
                    if let Some(abs) = self.absolute(file, &module, &segments) {
                        paths.push(abs);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        (paths, reexports)
    }

    /// `path` as written in `module` of `file`, as an absolute module path; `None` for a
    /// path into another crate.
    fn absolute(&self, file: usize, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let first = path.first()?;
        let mut rest = path;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => {
                rest = &path[1..];
                Vec::new()
            }
            "self" => {
                rest = &path[1..];
                module.to_vec()
            }
            "super" => {
                let mut b = module.to_vec();
                while rest.first().is_some_and(|s| s == "super") {
                    b.pop();
                    rest = &rest[1..];
                }
                b
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if !self.has_module(file, &child) {
                    return None;
                }
                module.to_vec()
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file a path leads to: its longest module prefix, following re-exports.
    fn resolve(&self, file: usize, path: &[String], hops: usize) -> Option<usize> {
        let tree = self.tree(file);
        let k = (0..=path.len()).rev().find(|&k| tree.contains_key(&path[..k]))?;
        let target = tree[&path[..k]];
        if hops < 8
            && let Some(name) = path.get(k)
            && let Some(Some(forward)) = self.files[target].reexports.get(name)
        {
            let mut next = forward.clone();
            next.extend(path[k + 1..].iter().cloned());
            if let Some(t) = self.resolve(target, &next, hops + 1) {
                return Some(t);
            }
        }
        Some(target)
    }

    /// Strongly connected components of more than one file (Tarjan), each sorted.
    pub fn circles(&self) -> Vec<Vec<usize>> {
        struct State<'a> {
            edges: &'a BTreeMap<usize, BTreeMap<usize, String>>,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            out: Vec<Vec<usize>>,
        }
        fn visit(s: &mut State<'_>, v: usize) {
            s.index[v] = Some(s.next);
            s.low[v] = s.next;
            s.next += 1;
            s.stack.push(v);
            s.on_stack[v] = true;
            let targets: Vec<usize> = s.edges.get(&v).map(|m| m.keys().copied().collect()).unwrap_or_default();
            for w in targets {
                match s.index[w] {
                    None => {
                        visit(s, w);
                        s.low[v] = s.low[v].min(s.low[w]);
                    }
                    Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(s.low[v]) == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.out.push(component);
                }
            }
        }
        let n = self.files.len();
        let mut s = State {
            edges: &self.edges,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if s.index[v].is_none() {
                visit(&mut s, v);
            }
        }
        s.out.sort();
        s.out
    }

    /// A circle as a paragraph: its files and the imports that tie them.
    pub fn describe(&self, circle: &[usize]) -> String {
        let members: BTreeSet<usize> = circle.iter().copied().collect();
        let mut out = format!("import circle of {} files:", circle.len());
        for &from in circle {
            for (to, via) in self.edges.get(&from).into_iter().flatten() {
                if members.contains(to) {
                    out.push_str(&format!("\n  {} -> {} ({via})", self.files[from].rel, self.files[*to].rel));
                }
            }
        }
        out
    }
}

/// `lib.rs`, `main.rs` and `mod.rs` declare their module's children.
fn is_root_or_mod(rel: &str) -> bool {
    rel.ends_with("/mod.rs") || rel.ends_with("src/lib.rs") || rel.ends_with("src/main.rs")
}

/// The module path of a file inside `src/` (`a/b.rs`, `a/b/mod.rs` -> `[a, b]`); `None`
/// for files that are not modules of the crate (`src/bin/*.rs`).
fn module_of(inner: &str) -> Option<Vec<String>> {
    if inner.starts_with("bin/") {
        return None;
    }
    let mut parts: Vec<String> = inner.trim_end_matches(".rs").split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    Some(parts)
}

/// Modules a file declares as `mod name;`.
fn declared_modules(tokens: &[Tok]) -> BTreeSet<String> {
    tokens
        .windows(3)
        .filter_map(|w| match w {
            [Tok::Ident(m), Tok::Ident(name), Tok::Sym(";")] if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect()
}
