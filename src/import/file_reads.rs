//! Shell commands that read a file, recognised so that their output can become a file
//! record with its path.
//!
//! A command reads a file when, after any leading `cd DIR &&`, it is one of `cat PATH`,
//! `cat -n PATH`, `nl [-ba] PATH`, `head [-n N | -N] PATH`, `sed -n 'A,Bp' PATH` (or
//! `sed -n 'Ap'`), optionally piped into one `sed -n 'A,Bp'`, `head` or `tail` that picks
//! lines of it. Numbered output (`cat -n`, `nl`) carries its own line numbers, which are
//! stripped; otherwise the first line is known from the command (`sed -n 'A,…'` starts at
//! `A`, `cat` and `head` at 1), or the read is not placed and does not count as one.
//! Anything else — redirections, here-documents, globs, several files, `&&` chains after
//! the `cd` — is not a read.
//!
//! [`FileViews`] merges every read of a path into one picture of the lines seen so far, so
//! a later, narrower view never hides an earlier one; a command that may write the path
//! (`sed -i`, a redirection onto it, `mv`/`cp` onto it) forgets what was seen of it.

use std::collections::BTreeMap;

/// What one command read: the path and the lines, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The path as the command named it (`./` removed).
    pub path: String,
    /// (line number, text) in order.
    pub lines: Vec<(usize, String)>,
}

/// Recognises a file-reading command and takes its output apart; `None` when `command` is
/// not one, or when the output is not that of a successful read (`exit_code` non-zero).
pub fn file_read(command: &str, output: &str, exit_code: Option<i64>) -> Option<FileRead> {
    if exit_code.is_some_and(|c| c != 0) || output.trim().is_empty() {
        return None;
    }
    let (path, reader) = read_command(command)?;
    let body = output.strip_suffix('\n').unwrap_or(output);
    let lines = reader.lines(body)?;
    Some(FileRead { path, lines })
}

/// [`file_read`] of an output the agent cut short, of which it kept the first characters
/// (`head`) and the last ones (`tail`). Only whole lines count: the head's last line and
/// the tail's first one may be cut. The head is placed as a whole read would be; the tail
/// only when the output numbers its lines (`cat -n`, `nl`), since otherwise its first line
/// is not known.
pub fn file_read_elided(
    command: &str,
    head: &str,
    tail: &str,
    exit_code: Option<i64>,
) -> Option<FileRead> {
    if exit_code.is_some_and(|c| c != 0) {
        return None;
    }
    let (path, reader) = read_command(command)?;
    let head = &head[..head.rfind('\n')?];
    let mut lines = if head.trim().is_empty() {
        Vec::new()
    } else {
        reader.lines(head)?
    };
    if reader.numbered {
        let tail = tail.split_once('\n').map_or("", |(_, rest)| rest);
        let tail = tail.strip_suffix('\n').unwrap_or(tail);
        if !tail.trim().is_empty() {
            let after = lines.last().map_or(0, |&(n, _)| n);
            lines.extend(reader.lines(tail)?.into_iter().filter(|&(n, _)| n > after));
        }
    }
    (!lines.is_empty()).then_some(FileRead { path, lines })
}

/// The path a file-reading `command` reads and how its output is laid out.
fn read_command(command: &str) -> Option<(String, Reader)> {
    let mut command = command.trim();
    while let Some(rest) = command.strip_prefix("cd ") {
        let (_, after) = rest.split_once("&&")?;
        command = after.trim();
    }
    if command.contains(['>', '<', ';', '`', '$', '*', '?', '\n']) || command.contains("&&") {
        return None;
    }
    let stages: Vec<&str> = command.split('|').map(str::trim).collect();
    let (first, rest) = stages.split_first()?;
    if rest.len() > 1 || command.contains("||") {
        return None;
    }
    let (path, mut reader) = reader(first)?;
    if let Some(filter) = rest.first() {
        let words = shell_words(filter)?;
        match words.first().map(String::as_str) {
            // A filter over numbered output keeps the numbers; over plain output only a
            // `sed -n` range or a `head` keeps the place known.
            Some("sed") if reader.numbered => {}
            Some("head") | Some("tail") if reader.numbered => {}
            Some("sed") => {
                reader.start = reader
                    .start
                    .zip(sed_range(&words[1..]))
                    .map(|(s, r)| s + r - 1)
            }
            Some("head") => {}
            _ => return None,
        }
    }
    Some((path, reader))
}

/// The first stage of a read: its path, whether its output is numbered, and its first
/// line when known.
struct Reader {
    numbered: bool,
    start: Option<usize>,
}

impl Reader {
    /// The numbered lines of `body` (no trailing newline); `None` when numbered output has
    /// a line without its number, or plain output has no known first line.
    fn lines(&self, body: &str) -> Option<Vec<(usize, String)>> {
        let mut lines = Vec::new();
        if self.numbered {
            for line in body.split('\n') {
                let trimmed = line.trim_start();
                let digits = trimmed.len()
                    - trimmed
                        .trim_start_matches(|c: char| c.is_ascii_digit())
                        .len();
                if digits == 0 {
                    // `nl` leaves blank lines unnumbered: they belong to the previous line's run.
                    if line.trim().is_empty() {
                        continue;
                    }
                    return None;
                }
                let number: usize = trimmed[..digits].parse().ok()?;
                let text = &trimmed[digits..];
                let text = text.strip_prefix('\t').or_else(|| text.strip_prefix(' '))?;
                lines.push((number, text.to_string()));
            }
        } else {
            let start = self.start?;
            lines.extend(
                body.split('\n')
                    .enumerate()
                    .map(|(i, l)| (start + i, l.to_string())),
            );
        }
        Some(lines)
    }
}

fn reader(stage: &str) -> Option<(String, Reader)> {
    let words = shell_words(stage)?;
    let (program, args) = words.split_first()?;
    let mut files: Vec<&str> = Vec::new();
    let mut numbered = false;
    let mut start = Some(1);
    let mut i = 0;
    match program.as_str() {
        "cat" => {
            for a in args {
                match a.as_str() {
                    "-n" => numbered = true,
                    a if a.starts_with('-') => return None,
                    a => files.push(a),
                }
            }
        }
        "nl" => {
            numbered = true;
            while i < args.len() {
                match args[i].as_str() {
                    "-ba" | "-b" | "a" => {}
                    a if a.starts_with('-') => return None,
                    a => files.push(a),
                }
                i += 1;
            }
        }
        "head" => {
            while i < args.len() {
                let a = args[i].as_str();
                if a == "-n" {
                    i += 1;
                } else if a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) {
                } else if a.starts_with('-') {
                    return None;
                } else {
                    files.push(a);
                }
                i += 1;
            }
        }
        "sed" => {
            let (quiet, rest) = args.split_first()?;
            if quiet != "-n" {
                return None;
            }
            let (script, rest) = rest.split_first()?;
            start = sed_range(std::slice::from_ref(script));
            start?;
            files.extend(rest.iter().map(String::as_str));
        }
        _ => return None,
    }
    let [path] = files[..] else { return None };
    let path = path.strip_prefix("./").unwrap_or(path);
    if path.is_empty() || path.starts_with('-') {
        return None;
    }
    Some((path.to_string(), Reader { numbered, start }))
}

/// The first line of a `sed -n` script that prints one range (`'A,Bp'`, `'Ap'`, `'A,$p'`).
fn sed_range(words: &[String]) -> Option<usize> {
    let script = match words {
        [script] => script,
        [flag, script] if flag == "-n" => script,
        _ => return None,
    };
    let range = script.strip_suffix('p')?;
    let first = range.split(',').next()?;
    first.parse().ok().filter(|&n: &usize| n > 0)
}

/// Splits a simple command into words: whitespace separates, single and double quotes
/// group (no escapes inside); `None` on an unclosed quote.
fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    words.extend(word);
    Some(words)
}

/// Everything seen so far of each file, merged over reads.
#[derive(Debug, Default)]
pub struct FileViews {
    seen: BTreeMap<String, BTreeMap<usize, String>>,
}

impl FileViews {
    /// Adds a read and returns the file's content as seen so far: the known lines in order,
    /// a gap of unseen lines shown as `[ctxopt: lines A-B not seen]` (and, before a first
    /// known line above 1, `[ctxopt: lines 1-B not seen]`).
    pub fn add(&mut self, read: &FileRead) -> String {
        let lines = self.seen.entry(read.path.clone()).or_default();
        for (n, text) in &read.lines {
            lines.insert(*n, text.clone());
        }
        let mut content = String::new();
        let mut next = 1;
        for (&n, text) in lines.iter() {
            if n > next {
                content.push_str(&format!("[ctxopt: lines {next}-{} not seen]\n", n - 1));
            }
            content.push_str(text);
            content.push('\n');
            next = n + 1;
        }
        content
    }

    /// Forgets what was seen of every path that `command` may write: a path named after
    /// `sed -i`, after a redirection `>`/`>>`, or as the last word of `mv`/`cp`, and any
    /// known path that a command naming it together with `-i` mentions.
    pub fn forget_written(&mut self, command: &str) {
        let writes = command.contains("sed -i")
            || command.contains('>')
            || command.split_whitespace().any(|w| w == "mv" || w == "cp")
            || command.contains("open(");
        if !writes {
            return;
        }
        self.seen.retain(|path, _| !command.contains(path.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(command: &str, output: &str) -> Option<FileRead> {
        file_read(command, output, Some(0))
    }

    #[test]
    fn plain_reads_are_numbered_from_their_first_line() {
        let r = read("cd /testbed && cat ./pkg/a.py", "x = 1\ny = 2\n").unwrap();
        assert_eq!(r.path, "pkg/a.py");
        assert_eq!(r.lines, [(1, "x = 1".into()), (2, "y = 2".into())]);
        let r = read("sed -n '114,115p' pkg/a.py", "a\nb\n").unwrap();
        assert_eq!(r.lines, [(114, "a".into()), (115, "b".into())]);
        let r = read("head -50 pkg/a.py", "a\n").unwrap();
        assert_eq!(r.lines, [(1, "a".into())]);
        let r = read("cat pkg/a.py | sed -n '10,11p'", "a\nb").unwrap();
        assert_eq!(r.lines[0], (10, "a".into()));
    }

    #[test]
    fn numbered_reads_keep_their_numbers() {
        let out = "   126\tclass Grid:\n   127\t    pass\n";
        let r = read("cat -n ./pyvista/core/grid.py | sed -n '126,160p'", out).unwrap();
        assert_eq!(r.path, "pyvista/core/grid.py");
        assert_eq!(
            r.lines,
            [(126, "class Grid:".into()), (127, "    pass".into())]
        );
        let r = read("nl -ba a.py | tail -n 1", "     9\tend\n").unwrap();
        assert_eq!(r.lines, [(9, "end".into())]);
    }

    #[test]
    fn other_commands_are_not_reads() {
        for command in [
            "cat > a.py << 'EOF'",
            "cat a.py b.py",
            "cat *.py",
            "grep -n foo a.py",
            "cat a.py | grep foo",
            "tail -n 5 a.py",
            "cd /x && cat a.py && cat b.py",
            "sed -i 's/a/b/' a.py",
        ] {
            assert_eq!(read(command, "x\n"), None, "{command}");
        }
        assert_eq!(file_read("cat a.py", "No such file", Some(1)), None);
        assert_eq!(read("cat a.py", ""), None);
    }

    #[test]
    fn reads_cut_short_keep_their_whole_lines() {
        let r = file_read_elided(
            "cat -n a.py",
            "     1\tx\n     2\ty",
            "z\n     9\tw\n",
            Some(0),
        );
        assert_eq!(r.unwrap().lines, [(1, "x".into()), (9, "w".into())]);
        // Plain output: the tail cannot be placed.
        let r = file_read_elided("cat a.py", "x\ny\nz", "q\nw\n", Some(0)).unwrap();
        assert_eq!(r.lines, [(1, "x".into()), (2, "y".into())]);
        // A tail overlapping the head (a short elision) adds no line twice.
        let r = file_read_elided(
            "nl -ba a.py",
            "     1\tx\n     2\ty\n",
            "\ty\n     2\ty\n     3\tz",
            None,
        );
        assert_eq!(
            r.unwrap().lines,
            [(1, "x".into()), (2, "y".into()), (3, "z".into())]
        );
        assert_eq!(
            file_read_elided("cat a.py", "no newline", "x", Some(0)),
            None
        );
        assert_eq!(file_read_elided("cat a.py", "x\ny", "z", Some(2)), None);
        assert_eq!(file_read_elided("grep x a.py", "x\ny", "z", Some(0)), None);
    }

    #[test]
    fn views_merge_and_writes_forget() {
        let mut views = FileViews::default();
        let first = read("sed -n '3,4p' a.py", "c\nd\n").unwrap();
        assert_eq!(views.add(&first), "[ctxopt: lines 1-2 not seen]\nc\nd\n");
        let second = read("sed -n '7,7p' a.py", "g\n").unwrap();
        assert_eq!(
            views.add(&second),
            "[ctxopt: lines 1-2 not seen]\nc\nd\n[ctxopt: lines 5-6 not seen]\ng\n"
        );
        views.forget_written("grep -n x a.py");
        views.forget_written("sed -i 's/g/G/' a.py");
        assert_eq!(views.add(&second), "[ctxopt: lines 1-6 not seen]\ng\n");
    }
}
