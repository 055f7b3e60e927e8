//! The layering rule of `docs/architecture.md`, read from the source: every path a file of `src/`
//! names (`use` lines and paths written inline, comments left out) is resolved to the module it
//! reaches. An import that goes up the layers, or from a leaf into a layer, fails; so does a loop
//! between the files of one folder, except the pairs the document names as one concept.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, left to right: a module imports only modules to its left, and the leaves.
const LAYERS: [&str; 6] = ["datasets", "store", "benchmarks", "eval", "report", "cli"];

/// Modules every layer may use; a leaf uses only leaves.
const LEAVES: [&str; 6] = ["logic", "metrics", "rng", "model", "served", "bounds"];

/// File pairs of one folder that import each other because they are one concept (see
/// docs/architecture.md, *Layers*). Empty: no loop is accepted today.
const ONE_CONCEPT: [(&str, &str); 0] = [];

/// A source file: its module path (`src/eval/mod.rs` is `eval`, `src/eval/run.rs` is
/// `eval::run`) and its code without comments.
struct Source {
    module: Vec<String>,
    code: String,
}

/// Every `.rs` file under `dir` (which is `src/` or a copy of it), by its path under `dir`.
fn sources(dir: &Path) -> BTreeMap<String, Source> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path
            .strip_prefix(dir)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        out.insert(rel.clone(), source(&rel, &text));
    }
    out
}

fn source(rel: &str, text: &str) -> Source {
    let mut module: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        module.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        module.pop();
    }
    Source {
        module,
        code: without_comments(text),
    }
}

/// The text with `//` and `/* */` comments and the contents of string and character literals
/// blanked: what is left names only code.
fn without_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |at: usize| at > 0 && (chars[at - 1].is_alphanumeric() || chars[at - 1] == '_');
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i - 1] == '*' && chars[i] == '/') {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == 'r' && !ident(i) && matches!(next, Some('"' | '#')) {
            // A raw string: r"..." or r#"..."#, without escapes.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            let mut j = i + 1 + hashes;
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            j += 1;
            while j < chars.len() && !chars[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            // Code, or a lifetime's quote.
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Every path the code names from `crate`, `super` or `self`, with `use` groups expanded:
/// `use super::{a::B, c};` gives `super::a::B` and `super::c`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| code_at(&bytes, i, p))
            .filter(|_| i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_'));
        if starts.is_none() {
            i += 1;
            continue;
        }
        let (tree, end) = use_tree(&bytes, i);
        expand(&tree, &mut Vec::new(), &mut out);
        i = end;
    }
    out
}

fn code_at(chars: &[char], at: usize, what: &str) -> bool {
    what.chars()
        .enumerate()
        .all(|(k, c)| chars.get(at + k) == Some(&c))
}

/// A path, possibly ending in a `{...}` group of further trees.
enum Tree {
    Path(Vec<String>, Vec<Tree>),
}

/// Reads a use tree at `at`: segments joined by `::`, possibly ending in a group.
fn use_tree(chars: &[char], mut at: usize) -> (Tree, usize) {
    let mut segments = Vec::new();
    let mut group = Vec::new();
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace()) {
            at += 1;
        }
        if chars.get(at) == Some(&'{') {
            at += 1;
            loop {
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_whitespace() || *c == ',')
                {
                    at += 1;
                }
                match chars.get(at) {
                    Some('}') | None => {
                        at += 1;
                        break;
                    }
                    _ => {
                        let (tree, end) = use_tree(chars, at);
                        group.push(tree);
                        // A tree's `as alias` is not a path.
                        at = end;
                        while chars.get(at).is_some_and(|c| *c != ',' && *c != '}') {
                            at += 1;
                        }
                    }
                }
            }
            break;
        }
        let start = at;
        while chars
            .get(at)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            at += 1;
        }
        if start == at {
            break;
        }
        segments.push(chars[start..at].iter().collect());
        if code_at(chars, at, "::") {
            at += 2;
        } else {
            break;
        }
    }
    (Tree::Path(segments, group), at)
}

fn expand(tree: &Tree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Tree::Path(segments, group) = tree;
    let depth = prefix.len();
    prefix.extend(segments.iter().cloned());
    if group.is_empty() {
        out.push(prefix.clone());
    }
    for t in group {
        expand(t, prefix, out);
    }
    prefix.truncate(depth);
}

/// The module path a path of a file in `module` reaches (`crate::eval::run::Run` from anywhere,
/// `super::records::X` from `eval::served`, both reach into `eval`). `None` for a path that
/// leaves the crate (`super` above the root).
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        at.pop()?;
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// Names a folder's `mod.rs` re-exports from its files (`pub use run::{run, Run};` names `run`
/// and `Run` after the file `run`): an import of `super::Run` is an import of that file.
fn reexports(sources: &BTreeMap<String, Source>) -> BTreeMap<(Vec<String>, String), String> {
    let mut out = BTreeMap::new();
    for s in sources.values() {
        for line in s.code.split(';') {
            let Some(at) = line.find("pub use ") else {
                continue;
            };
            let used = &line[at + "pub use ".len()..];
            let chars: Vec<char> = used.chars().collect();
            let (tree, _) = use_tree(&chars, 0);
            let mut all = Vec::new();
            expand(&tree, &mut Vec::new(), &mut all);
            for p in all {
                let p: Vec<String> = match p.first().map(String::as_str) {
                    Some("self") => p[1..].to_vec(),
                    _ => p,
                };
                if p.len() >= 2 && !matches!(p[0].as_str(), "crate" | "super") {
                    out.insert((s.module.clone(), p[p.len() - 1].clone()), p[0].clone());
                }
            }
        }
    }
    out
}

/// What the rule finds wrong in `sources`: imports up the layers or out of a leaf, and loops
/// between the files of one folder.
fn violations(sources: &BTreeMap<String, Source>) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = sources.values().map(|s| s.module.clone()).collect();
    let rank = |top: &str| LAYERS.iter().position(|l| *l == top);
    let leaf = |top: &str| LEAVES.contains(&top);
    let front = reexports(sources);
    let mut found = Vec::new();
    // Per folder, the imports between its files.
    let mut siblings: BTreeMap<Vec<String>, BTreeSet<(String, String)>> = BTreeMap::new();
    for (file, s) in sources {
        let Some(top) = s.module.first() else {
            continue; // lib.rs and main.rs assemble the crate.
        };
        for path in paths(&s.code) {
            let Some(reached) = resolve(&s.module, &path) else {
                continue;
            };
            let Some(to) = reached.first() else { continue };
            if to != top && modules.contains(&vec![to.clone()]) {
                let up = match (rank(top), rank(to)) {
                    (Some(a), Some(b)) => b > a,
                    // A leaf uses only leaves.
                    (None, Some(_)) => leaf(top),
                    _ => !leaf(to),
                };
                if up {
                    found.push(format!(
                        "{file}: `{}` imports up the layers ({top} → {to})",
                        path.join("::")
                    ));
                }
            }
            // Inside the file's own folder: which sibling file the path reaches.
            let folder = if sources_is_folder(file) {
                continue; // a folder's mod.rs is its front: its files import it freely.
            } else {
                &s.module[..s.module.len() - 1]
            };
            if reached.len() <= folder.len() || reached[..folder.len()] != *folder {
                continue;
            }
            let name = &reached[folder.len()];
            let mut sibling = folder.to_vec();
            sibling.push(name.clone());
            let target = if modules.contains(&sibling) {
                Some(name.clone())
            } else {
                front.get(&(folder.to_vec(), name.clone())).cloned()
            };
            let me = s.module.last().unwrap();
            if let Some(target) = target.filter(|t| t != me) {
                siblings
                    .entry(folder.to_vec())
                    .or_default()
                    .insert((me.clone(), target));
            }
        }
    }
    for (folder, edges) in &siblings {
        for cycle in loops(edges) {
            let pair = (cycle[0].as_str(), cycle[1].as_str());
            if cycle.len() == 2
                && ONE_CONCEPT
                    .iter()
                    .any(|&(a, b)| (a, b) == pair || (b, a) == pair)
            {
                continue;
            }
            found.push(format!(
                "src/{}: its files import each other in a loop: {}",
                folder.join("/"),
                cycle.join(", ")
            ));
        }
    }
    found
}

fn sources_is_folder(file: &str) -> bool {
    file.ends_with("mod.rs") || !file.contains('/')
}

/// The loops of a directed graph: each strongly connected part of more than one file, its
/// files in name order.
fn loops(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reaches = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for (a, b) in edges {
                if *a == n && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let mut out: Vec<Vec<String>> = Vec::new();
    for n in &nodes {
        let from_n = reaches(n);
        let part: Vec<String> = nodes
            .iter()
            .filter(|m| from_n.contains(**m) && reaches(m).contains(*n))
            .map(|m| (*m).clone())
            .collect();
        if part.len() > 1 && !out.contains(&part) {
            out.push(part);
        }
    }
    out
}

fn src() -> BTreeMap<String, Source> {
    sources(&crate::common::root().join("src"))
}

#[test]
fn no_import_goes_up_the_layers_and_no_folder_has_a_loop() {
    let sources = src();
    assert!(
        sources.len() > 100,
        "src/ was read: {} files",
        sources.len()
    );
    let found = violations(&sources);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_top_level_module_is_a_layer_or_a_leaf() {
    for s in src().values() {
        if let [top] = s.module.as_slice() {
            assert!(
                LAYERS.contains(&top.as_str()) || LEAVES.contains(&top.as_str()),
                "src/{top} is neither a layer nor a leaf of docs/architecture.md"
            );
        }
    }
}

#[test]
fn the_documented_layers_are_the_tested_ones() {
    let doc = std::fs::read_to_string(crate::common::root().join("docs/architecture.md")).unwrap();
    let arrows = LAYERS.join(" ──► ");
    assert!(
        doc.contains(&arrows),
        "docs/architecture.md draws `{arrows}`"
    );
    let leaves = LEAVES.join(" · ");
    assert!(
        doc.contains(&leaves),
        "docs/architecture.md lists `{leaves}`"
    );
}

#[test]
fn an_import_up_the_layers_or_a_loop_is_found() {
    let planted = |files: &[(&str, &str)]| {
        let sources: BTreeMap<String, Source> = files
            .iter()
            .map(|(rel, text)| (rel.to_string(), source(rel, text)))
            .collect();
        violations(&sources)
    };
    let base = [
        ("store/mod.rs", "mod a;\nmod b;\n"),
        ("cli/mod.rs", "pub fn run() {}"),
        ("logic/mod.rs", "pub struct Label;"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all = base.to_vec();
        all.extend_from_slice(extra);
        planted(&all)
    };
    // Fine: a layer uses a leaf, files use each other one way, comments name anything.
    assert_eq!(
        with(&[
            ("store/a.rs", "use crate::logic::Label;\nuse super::b::B;"),
            (
                "store/b.rs",
                "// crate::cli::run\npub struct B; /* super::a */"
            ),
        ]),
        Vec::<String>::new()
    );
    // Up the layers, in a group, through `super::super`, or inline.
    for code in [
        "use crate::cli::run;",
        "use crate::{logic::Label, cli};",
        "use super::super::cli::run;",
        "fn f() { crate::cli::run() }",
    ] {
        let found = with(&[("store/a.rs", code), ("store/b.rs", "")]);
        assert!(
            found.len() == 1 && found[0].contains("store → cli"),
            "{code}: {found:?}"
        );
    }
    // A leaf into a layer.
    let found = planted(&[
        ("logic/mod.rs", "use crate::store::Store;"),
        ("store/mod.rs", ""),
    ]);
    assert!(
        found.len() == 1 && found[0].contains("logic → store"),
        "{found:?}"
    );
    // A loop between two files, also through a name the folder's mod.rs re-exports.
    for b in ["use super::a::A;", "use super::A;"] {
        let found = with(&[
            ("store/a.rs", "use super::b::B; pub struct A;"),
            ("store/b.rs", b),
            ("store/mod.rs", "mod a;\nmod b;\npub use a::A;"),
        ]);
        assert!(
            found.len() == 1 && found[0].contains("loop: a, b"),
            "{b}: {found:?}"
        );
    }
}

/// The files of `src/` whose code (comments left out) holds `needle`.
fn files_with(sources: &BTreeMap<String, Source>, needle: &str) -> Vec<String> {
    sources
        .iter()
        .filter(|(_, s)| s.code.contains(needle))
        .map(|(file, _)| file.clone())
        .collect()
}

/// The files of `eval/` with their code (comments left out).
fn eval_files(sources: &BTreeMap<String, Source>) -> impl Iterator<Item = (&String, &str)> {
    sources
        .iter()
        .filter(|(_, s)| s.module.first().map(String::as_str) == Some("eval"))
        .map(|(file, s)| (file, s.code.as_str()))
}

/// `--threads` is declared once (`cli::Compute`) and the runner is given the pool's size as a
/// value (`eval::Execution::threads`): no file of `eval/` reads a process-wide thread count back.
#[test]
fn the_thread_count_is_declared_once_and_passed_down() {
    let sources = src();
    let declared = files_with(&sources, "bounds::threads()");
    assert_eq!(
        declared,
        ["cli/mod.rs"],
        "--threads is declared in {declared:?}"
    );
    for (file, code) in eval_files(&sources) {
        assert!(
            !code.contains("current_num_threads"),
            "{file} reads the global pool's size back"
        );
    }
}

/// `--no-speculate` is declared once (`cli::Speculation`) and the runner, the lockstep and
/// `regenerate` are given it as a value (`eval::Execution::speculate`): no file of `eval/` keeps a
/// process-wide setting that a command would set and a generation read back.
#[test]
fn speculation_is_declared_once_and_passed_down() {
    let sources = src();
    let declared = files_with(&sources, "no_speculate");
    assert_eq!(
        declared,
        ["cli/mod.rs"],
        "--no-speculate is read in {declared:?}"
    );
    for (file, code) in eval_files(&sources) {
        for line in code.lines().map(str::trim_start) {
            let is_static = line.starts_with("static ") || line.starts_with("pub static ");
            assert!(
                !(is_static && line.contains("Atomic")),
                "{file} keeps a process-wide setting: {line}"
            );
        }
    }
}
