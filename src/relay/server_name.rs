//! A short, file-name-safe name for the wrapped server, derived from its argv when the user
//! gives none: the package a runner starts (`npx -y @scope/server-x` → `server-x`,
//! `uvx mcp-server-git` → `mcp-server-git`, `python -m pkg.server` → `pkg.server`), the
//! script an interpreter runs (`node weather.mjs` → `weather`; for a generic `index.js`
//! the package directory above its build directory), else the command's basename.

use std::ffi::OsString;
use std::path::Path;

/// Commands that start the thing named by their first non-option argument.
const RUNNERS: &[&str] = &[
    "npx", "bunx", "pnpx", "uvx", "pipx", "pnpm", "yarn", "bun", "deno", "uv", "node", "python",
    "python3", "ruby", "perl", "sh", "bash", "java", "dotnet",
];

/// Runner subcommands skipped on the way to the name (`pnpm dlx x`, `uv run x`).
const SUBCOMMANDS: &[&str] = &["dlx", "exec", "run", "x", "tool"];

/// Options of runners that take a value (`uvx --from pkg`, `npx -p pkg`).
const OPTIONS_WITH_VALUE: &[&str] = &["--from", "-p", "--package", "--with", "--python"];

/// The name to use for `argv`, made safe for a file name.
pub fn derive(argv: &[OsString]) -> String {
    let args: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let Some(command) = args.first() else {
        return "server".to_string();
    };
    let base = basename(command);
    let runner = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let named = if RUNNERS.contains(&base.as_str()) || RUNNERS.contains(&runner) {
        target_of(&args[1..])
    } else {
        None
    };
    sanitize(&named.unwrap_or(base))
}

fn basename(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

fn target_of(args: &[String]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "-m" {
            return args.get(i + 1).cloned();
        }
        if OPTIONS_WITH_VALUE.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if a.starts_with('-') || SUBCOMMANDS.contains(&a.as_str()) {
            i += 1;
            continue;
        }
        return Some(package_or_script(a));
    }
    None
}

/// File stems too generic to name a server; the directory above names it instead.
const GENERIC_STEMS: &[&str] = &["index", "main", "cli", "server", "__main__", "app"];

/// Build-output directories skipped on the way up from a generic script.
const BUILD_DIRS: &[&str] = &["dist", "build", "lib", "src", "bin", "out", "esm", "cjs"];

/// `@scope/name@1.2` → `name`; `x/server-foo/dist/index.js` → `server-foo`;
/// `tool.py` → `tool`.
fn package_or_script(arg: &str) -> String {
    let segments: Vec<&str> = arg.split('/').filter(|s| !s.is_empty()).collect();
    let Some(last) = segments.last() else {
        return arg.to_string();
    };
    let path = Path::new(last);
    let script = matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("js" | "mjs" | "cjs" | "ts" | "py" | "rb" | "pl" | "sh" | "jar" | "dll")
    );
    if !script {
        // A package spec: drop a version suffix (`name@1.2`), keep the name.
        return match last.rfind('@') {
            Some(at) if at > 0 => last[..at].to_string(),
            _ => last.to_string(),
        };
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| last.to_string());
    if !GENERIC_STEMS.contains(&stem.as_str()) {
        return stem;
    }
    segments[..segments.len() - 1]
        .iter()
        .rev()
        .find(|dir| !BUILD_DIRS.contains(dir) && **dir != "." && **dir != "..")
        .map(|dir| dir.to_string())
        .unwrap_or(stem)
}

/// Keeps `[A-Za-z0-9._-]`, replaces anything else with `-`.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('.').to_string();
    if s.is_empty() {
        "server".to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(argv: &[&str]) -> String {
        derive(&argv.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn derives_names_from_common_launchers() {
        let cases: &[(&[&str], &str)] = &[
            (
                &[
                    "npx",
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/tmp",
                ],
                "server-filesystem",
            ),
            (&["npx", "-y", "@scope/pkg@1.2.3"], "pkg"),
            (&["uvx", "--from", "x", "mcp-server-git"], "mcp-server-git"),
            (&["pnpm", "dlx", "some-server"], "some-server"),
            (&["python3", "-m", "mcp_server.main"], "mcp_server.main"),
            (&["/usr/bin/node", "dist/index.js"], "index"),
            (
                &[
                    "node",
                    "/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
                    "stdio",
                ],
                "server-everything",
            ),
            (&["node", "/srv/@me/tools/weather.mjs"], "weather"),
            (&["/opt/bin/my server"], "my-server"),
            (&["python3.12", "srv.py"], "srv"),
            (&["npx"], "npx"),
        ];
        for (argv, want) in cases {
            assert_eq!(name(argv), *want, "{argv:?}");
        }
    }
}
