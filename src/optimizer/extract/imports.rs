//! Imports in source text: the files a file names as its dependencies, so that the file an
//! error points at links to the files it builds on.
//!
//! Each import line gives the path *suffixes* the imported module may have, lowercased and
//! `/`-separated; a suffix names a file the session read when that file's path ends with it on
//! a `/` (see [`Resolver`]). Recognised, after indentation:
//!
//! - Python: `import a.b.c [as x][, d]` → `a/b/c.py`, `a/b/c/__init__.py`;
//!   `from a.b import c, d` → `a/b.py`, `a/b/__init__.py`, `a/b/c.py`, `a/b/d.py`; a relative
//!   `from .m import x` / `from .. import m` resolves against the importing file's folder;
//! - JavaScript / TypeScript: `import … from './x'`, `import './x'`, `export … from './x'`,
//!   `require('./x')`, for relative specifiers only (a package name is not a file of the
//!   session): `x`, `x.js`, `x.ts`, `x.tsx`, `x.jsx`, `x.mjs`, `x/index.js`, `x/index.ts`;
//! - Rust: `mod m;` → `m.rs`, `m/mod.rs` beside the file; `use crate::a::b::C;` → `a/b.rs`,
//!   `a/b/mod.rs`, `a.rs`, `a/mod.rs` (the last step may be an item);
//! - Java, Kotlin, Scala: `import a.b.C;` → `a/b/c.java`, `.kt`, `.scala`;
//! - Go: `import "x/y/z"` and the lines of an `import ( … )` block → the folder `x/y/z/`.
//!
//! One pass over the lines; a line that is not an import costs a prefix check.

use std::collections::HashMap;

/// The path suffixes the imports of `text` (the content of the file at `path`) may name.
pub(crate) fn imports(path: &str, text: &str) -> Vec<String> {
    let path = path.to_lowercase();
    let folder = path.rsplit_once('/').map_or("", |(folder, _)| folder);
    let mut out: Vec<String> = Vec::new();
    let mut in_go_block = false;
    for line in text.lines() {
        let line = line.trim();
        if in_go_block {
            if line.starts_with(')') {
                in_go_block = false;
            } else if let Some(spec) = quoted(line) {
                out.push(format!("{}/", spec.to_lowercase()));
            }
            continue;
        }
        if line == "import (" {
            in_go_block = true;
            continue;
        }
        python(line, folder, &mut out);
        script(line, folder, &mut out);
        rust(line, folder, &mut out);
        jvm_or_go(line, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// The files the session read (normalized lowercase paths), indexed by file name and by
/// folder name, to find the ones an import's suffix names.
pub(crate) struct Resolver<'a> {
    by_name: HashMap<&'a str, Vec<&'a str>>,
    by_folder: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> Resolver<'a> {
    /// Indexes `read`.
    pub(crate) fn new(read: &'a [String]) -> Resolver<'a> {
        let mut by_name: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut by_folder: HashMap<&str, Vec<&str>> = HashMap::new();
        for path in read {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            by_name.entry(name).or_default().push(path);
            let folder = dir.rsplit('/').next().unwrap_or(dir);
            by_folder.entry(folder).or_default().push(path);
        }
        Resolver { by_name, by_folder }
    }

    /// The files `suffix` names: a path ending in it on a `/`; for a Go package (a suffix
    /// ending in `/`), a file directly in a folder whose path ends the import path, or the
    /// other way round (the import path starts with the module's name).
    pub(crate) fn files(&self, suffix: &str) -> Vec<&'a str> {
        match suffix.strip_suffix('/') {
            Some(package) => {
                let last = package.rsplit('/').next().unwrap_or(package);
                self.by_folder
                    .get(last)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|path| {
                        path.rsplit_once('/').is_some_and(|(dir, _)| {
                            ends_on_boundary(dir, package) || ends_on_boundary(package, dir)
                        })
                    })
                    .collect()
            }
            None => {
                let name = suffix.rsplit('/').next().unwrap_or(suffix);
                self.by_name
                    .get(name)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|path| ends_on_boundary(path, suffix))
                    .collect()
            }
        }
    }
}

/// Whether `long` ends with `short` at its start or after a `/`.
fn ends_on_boundary(long: &str, short: &str) -> bool {
    long.strip_suffix(short)
        .is_some_and(|rest| rest.is_empty() || rest.ends_with('/'))
}

/// `import a.b`, `from a.b import c`, relative forms.
fn python(line: &str, folder: &str, out: &mut Vec<String>) {
    if let Some(rest) = line.strip_prefix("import ") {
        if rest.contains(['(', '{', '\'', '"']) {
            return;
        }
        for module in rest.split(',') {
            let module = module.split_whitespace().next().unwrap_or("");
            if is_dotted(module) {
                module_files(&module.replace('.', "/"), out);
            }
        }
    } else if let Some(rest) = line.strip_prefix("from ") {
        let Some((module, names)) = rest.split_once(" import ") else {
            return;
        };
        let module = module.trim();
        let dots = module.len() - module.trim_start_matches('.').len();
        let name = &module[dots..];
        if !(name.is_empty() || is_dotted(name)) || (dots == 0 && name.is_empty()) {
            return;
        }
        let base = if dots == 0 {
            name.replace('.', "/")
        } else {
            let mut dir: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
            for _ in 1..dots {
                dir.pop();
            }
            dir.extend(name.split('.').filter(|p| !p.is_empty()));
            dir.join("/")
        };
        if base.is_empty() {
            return;
        }
        if !name.is_empty() {
            module_files(&base, out);
        }
        let names = names
            .trim()
            .trim_start_matches('(')
            .trim_end_matches([')', '\\']);
        for imported in names.split(',') {
            let imported = imported.split_whitespace().next().unwrap_or("");
            if !imported.is_empty() && imported.chars().all(is_word) {
                out.push(format!("{base}/{}.py", imported.to_lowercase()));
            }
        }
    }
}

/// `a/b.py` and `a/b/__init__.py` for the module path `a/b`.
fn module_files(module: &str, out: &mut Vec<String>) {
    let module = module.to_lowercase();
    out.push(format!("{module}.py"));
    out.push(format!("{module}/__init__.py"));
}

/// Relative specifiers of `import`/`export … from`/`require(…)`.
fn script(line: &str, folder: &str, out: &mut Vec<String>) {
    let spec = if line.starts_with("import ") || line.starts_with("export ") {
        line.rsplit_once(" from ").map_or_else(
            || line.strip_prefix("import ").and_then(quoted),
            |(_, s)| quoted(s),
        )
    } else if let Some(at) = line.find("require(") {
        quoted(&line[at + "require(".len()..])
    } else {
        None
    };
    let Some(spec) = spec.filter(|s| s.starts_with("./") || s.starts_with("../")) else {
        return;
    };
    let target = relative(folder, &spec.to_lowercase());
    if target.is_empty() {
        return;
    }
    out.push(target.clone());
    for ext in ["js", "ts", "tsx", "jsx", "mjs"] {
        out.push(format!("{target}.{ext}"));
    }
    out.push(format!("{target}/index.js"));
    out.push(format!("{target}/index.ts"));
}

/// `mod m;` and `use crate::a::b…;`.
fn rust(line: &str, folder: &str, out: &mut Vec<String>) {
    let line = line.strip_prefix("pub ").unwrap_or(line);
    if let Some(name) = line.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
        if name.chars().all(is_word) {
            let dir = if folder.is_empty() {
                String::new()
            } else {
                format!("{folder}/")
            };
            out.push(format!("{dir}{}.rs", name.to_lowercase()));
            out.push(format!("{dir}{}/mod.rs", name.to_lowercase()));
        }
    } else if let Some(rest) = line.strip_prefix("use crate::") {
        let steps: Vec<String> = rest
            .split(['{', ';', ' '])
            .next()
            .unwrap_or("")
            .split("::")
            .filter(|s| !s.is_empty() && s.chars().all(is_word))
            .map(str::to_lowercase)
            .collect();
        for n in (1..=steps.len()).rev().take(2) {
            let module = steps[..n].join("/");
            out.push(format!("{module}.rs"));
            out.push(format!("{module}/mod.rs"));
        }
    }
}

/// `import a.b.C;` (Java, Kotlin, Scala) and `import "x/y"` (Go).
fn jvm_or_go(line: &str, out: &mut Vec<String>) {
    let Some(rest) = line.strip_prefix("import ") else {
        return;
    };
    // Go: `import "x/y"` or `import name "x/y"`, double quotes or backquotes.
    if let Some(at) = rest.find(['"', '`']) {
        let before = rest[..at].trim();
        let go = before.is_empty() || before == "." || before.chars().all(is_word);
        if let Some(spec) = quoted(&rest[at..]).filter(|_| go) {
            out.push(format!("{}/", spec.to_lowercase()));
        }
        return;
    }
    let rest = rest.strip_prefix("static ").unwrap_or(rest);
    let class = rest.strip_suffix(';').unwrap_or(rest).trim();
    if class.contains('.') && is_dotted(class) && !class.ends_with('*') {
        let file = class.replace('.', "/").to_lowercase();
        for ext in ["java", "kt", "scala"] {
            out.push(format!("{file}.{ext}"));
        }
    }
}

/// The text inside the first pair of quotes (`'`, `"` or `` ` ``) of `text`.
fn quoted(text: &str) -> Option<&str> {
    let start = text.find(['\'', '"', '`'])?;
    let quote = text[start..].chars().next()?;
    let rest = &text[start + 1..];
    let end = rest.find(quote)?;
    Some(&rest[..end]).filter(|s| !s.is_empty())
}

/// `folder` joined with a `./`/`../` specifier.
fn relative(folder: &str, spec: &str) -> String {
    let mut dir: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
    for part in spec.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                dir.pop();
            }
            part => dir.push(part),
        }
    }
    dir.join("/")
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `a.b.c`: words joined by dots.
fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(is_word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(path: &str, text: &str, wanted: &[&str]) {
        let got = imports(path, text);
        for w in wanted {
            assert!(got.iter().any(|g| g == w), "{w} not in {got:?}");
        }
    }

    #[test]
    fn python_imports_absolute_and_relative() {
        has(
            "django/db/migrations/writer.py",
            "import os\nfrom django.db.migrations.serializer import serializer_factory\nfrom .loader import MigrationLoader\nfrom .. import models\nimport a.b as ab, c\n",
            &[
                "django/db/migrations/serializer.py",
                "django/db/migrations/loader.py",
                "django/db/models.py",
                "a/b.py",
                "c/__init__.py",
                "os.py",
            ],
        );
    }

    #[test]
    fn scripts_rust_jvm_and_go() {
        has(
            "web/src/app.ts",
            "import { x } from './util/format';\nimport React from 'react';\nconst y = require(\"../lib/y\");\n",
            &["web/src/util/format.ts", "web/lib/y.js"],
        );
        assert!(!imports("web/src/app.ts", "import React from 'react';\n")
            .iter()
            .any(|s| s.contains("react")));
        has(
            "src/optimizer/mod.rs",
            "pub mod score;\nuse crate::tokenizer::Tokenizer;\nuse crate::optimizer::{a, b};\n",
            &[
                "src/optimizer/score.rs",
                "tokenizer.rs",
                "tokenizer/mod.rs",
                "optimizer.rs",
            ],
        );
        has(
            "src/main/java/App.java",
            "import com.acme.billing.Invoice;\n",
            &["com/acme/billing/invoice.java"],
        );
        has(
            "cmd/main.go",
            "import (\n\t\"fmt\"\n\t\"example.com/app/internal/store\"\n)\n",
            &["example.com/app/internal/store/"],
        );
    }

    #[test]
    fn suffixes_resolve_on_a_folder_boundary() {
        let read: Vec<String> = [
            "src/django/db/migrations/serializer.py",
            "app/internal/store/db.go",
            "app/internal/store/sub/x.go",
            "mytokenizer.rs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let resolver = Resolver::new(&read);
        let hits = |s: &str| resolver.files(s);
        assert_eq!(
            hits("django/db/migrations/serializer.py"),
            [read[0].as_str()]
        );
        assert_eq!(hits("example.com/app/internal/store/"), [read[1].as_str()]);
        assert_eq!(hits("internal/store/"), [read[1].as_str()]);
        assert!(hits("tokenizer.rs").is_empty(), "not on a boundary");
    }

    #[test]
    fn text_that_is_not_an_import() {
        assert!(imports(
            "a.py",
            "# import this\nprint('from x import y')\nimportance = 1\nfrom_x = 2\n"
        )
        .is_empty());
    }
}
