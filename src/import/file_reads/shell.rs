//! Shell commands that read a file, recognised so that their output can become a file
//! record with its path.
//!
//! A command reads a file when, after any leading `cd DIR &&`, it is one of `cat PATH`,
//! `cat -n PATH`, `nl [OPTIONS] PATH`, `head [-n N | -N] PATH`, `sed -n 'A,Bp' PATH` (or
//! `sed -n 'Ap'`, `'A,$p'`); on Windows, `Get-Content [-Raw] PATH` (or `gc`,
//! `-Path`/`-LiteralPath`, a `-TotalCount`/`-Head`/`-First` count), whose `\` separators
//! become `/`. Piped stages after it may pick lines (`sed -n` ranges, several joined by `;`,
//! `head`, `tail`) or number them (`nl`, `cat -n`), as long as each printed line's place in
//! the file stays known ([`Layout`]): numbered output carries it (the numbers are stripped;
//! `nl -b t`, its default, does not count empty lines, so its lines are placed by position),
//! plain output is placed from its first line (`sed -n 'A,…'` starts at `A`, `cat` and
//! `head` at 1; a `sed -n` of several ranges, ascending and apart, when it printed them all),
//! or the read is not placed and does not count as one. Anything else —
//! redirections, here-documents, globs, several files — is not a read; quoted text (a `sed`
//! script, `nl`'s separator) is an argument, not shell syntax.
//!
//! A chain of reads joined by `&&` or `;` ([`file_reads`]), possibly with `echo 'TEXT'`
//! separators, is taken
//! apart only when the output can be split between them exactly: every read says how many
//! lines it prints (`sed -n 'A,Bp'`, `head -n N`, or a read piped into one of them), each
//! `echo` is found where it belongs, and the counts add up to the output's lines. Since no
//! read prints more than its count, the sum is met only when each printed all of its lines;
//! a file shorter than its range makes the chain no read at all.
//!
//! [`FileViews`] merges every read of a path into one picture of the lines seen so far, so
//! a later, narrower view never hides an earlier one; a command that may write the path
//! (`sed -i`, a redirection onto it, `mv`/`cp` onto it) forgets what was seen of it.

use std::collections::BTreeMap;

use super::seek::{self, replace_at, Order, UnplacedHunk};
use crate::optimizer::extract::paths::{is_absolute, normalize_path};

/// A change's hunk that says where it is: the number of its first old line, its old lines
/// and its new lines (context included).
pub(crate) type PlacedHunk<'a> = (usize, Vec<&'a str>, Vec<&'a str>);

/// The highest line number a view keeps (about four billion: more than any file has).
pub(crate) const MAX_LINE: usize = u32::MAX as usize;

/// What one command read: the path and the lines, numbered from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRead {
    /// The path as the command named it (`./` removed).
    pub(crate) path: String,
    /// The directory the command changed to first (`cd DIR && …`), when it did.
    pub(crate) dir: Option<String>,
    /// (line number, text) in order.
    pub(crate) lines: Vec<(usize, String)>,
}

/// Recognises a file-reading command and takes its output apart; `None` when `command` is
/// not one, or when the output is not that of a successful read (`exit_code` non-zero).
pub(crate) fn file_read(command: &str, output: &str, exit_code: Option<i64>) -> Option<FileRead> {
    if exit_code.is_some_and(|c| c != 0) || output.trim().is_empty() {
        return None;
    }
    let (path, reader) = read_command(command)?;
    let body = output.strip_suffix('\n').unwrap_or(output);
    let lines = reader.lines(body)?;
    Some(FileRead {
        path,
        dir: reader.dir,
        lines,
    })
}

/// The reads of `command`: the one read [`file_read`] finds, or each read of an `&&` chain
/// whose output splits between them exactly (see the module doc); empty when it reads no
/// file.
pub(crate) fn file_reads(command: &str, output: &str, exit_code: Option<i64>) -> Vec<FileRead> {
    match file_read(command, output, exit_code) {
        Some(read) => vec![read],
        None => chained_reads(command, output, exit_code).unwrap_or_default(),
    }
}

/// The reads of an `&&` chain of counted reads and `echo`s whose output lines add up.
fn chained_reads(command: &str, output: &str, exit_code: Option<i64>) -> Option<Vec<FileRead>> {
    if exit_code.is_some_and(|c| c != 0) || output.trim().is_empty() {
        return None;
    }
    let (dir, chain) = leading_cd(command)?;
    if unquoted(chain).contains("||") {
        return None;
    }
    let body = output.strip_suffix('\n').unwrap_or(output);
    let printed: Vec<&str> = body.split('\n').collect();
    let mut at = 0;
    let mut reads = Vec::new();
    for stage in chain_stages(chain) {
        if let Some(text) = echoed(stage) {
            let lines: Vec<&str> = text.split('\n').collect();
            if printed.get(at..at + lines.len())? != lines.as_slice() {
                return None;
            }
            at += lines.len();
            continue;
        }
        let (path, reader) = read_command(stage)?;
        let shown = printed.get(at..at.checked_add(reader.count?)?)?;
        at += shown.len();
        reads.push(FileRead {
            path,
            dir: dir.clone(),
            lines: reader.lines(&shown.join("\n"))?,
        });
    }
    (at == printed.len() && !reads.is_empty()).then_some(reads)
}

/// The commands of a chain, split at each `&&` or `;` outside quotes (a `sed` script's `;`
/// is its own).
fn chain_stages(chain: &str) -> Vec<&str> {
    let bare = unquoted(chain);
    let mut stages = Vec::new();
    let mut from = 0;
    let mut i = 0;
    while i < bare.len() {
        let sep = match &bare[i..] {
            rest if rest.starts_with("&&") => 2,
            rest if rest.starts_with(';') => 1,
            _ => 0,
        };
        if sep > 0 {
            stages.push(chain[from..i].trim());
            from = i + sep;
            i += sep;
        } else {
            i += bare[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    stages.push(chain[from..].trim());
    stages.retain(|s| !s.is_empty());
    stages
}

/// The text an `echo 'TEXT'` stage prints (one argument, not an option such as `-e`).
fn echoed(stage: &str) -> Option<String> {
    let option = |text: &str| {
        text.strip_prefix('-')
            .is_some_and(|o| !o.is_empty() && o.chars().all(|c| "neE".contains(c)))
    };
    match &shell_words(stage)?[..] {
        [program, text] if program == "echo" && !option(text) => Some(text.clone()),
        _ => None,
    }
}

/// [`file_read`] of an output the agent cut short, of which it kept the first characters
/// (`head`) and the last ones (`tail`). Only whole lines count: the head's last line and
/// the tail's first one may be cut. The head is placed as a whole read would be; the tail
/// only when the output numbers its lines (`cat -n`, `nl`), since otherwise its first line
/// is not known.
pub(crate) fn file_read_elided(
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
    if reader.numbered() {
        let tail = tail.split_once('\n').map_or("", |(_, rest)| rest);
        let tail = tail.strip_suffix('\n').unwrap_or(tail);
        if !tail.trim().is_empty() {
            let after = lines.last().map_or(0, |&(n, _)| n);
            lines.extend(reader.lines(tail)?.into_iter().filter(|&(n, _)| n > after));
        }
    }
    (!lines.is_empty()).then_some(FileRead {
        path,
        dir: reader.dir,
        lines,
    })
}

/// Programs that print a file on Windows: PowerShell's `Get-Content` and its alias `gc`,
/// compared without case (cmd's `type` is left out: in a POSIX shell it names a command).
const WINDOWS_READERS: [&str; 2] = ["get-content", "gc"];

/// The path a file-reading `command` reads and how its output is laid out: a reader, then
/// any number of stages that pick lines of it (`sed -n` ranges, `head`, `tail`) or number
/// them (`nl`, `cat -n`), each keeping the place of the lines known or the command is no
/// read.
fn read_command(command: &str) -> Option<(String, Reader)> {
    let (dir, command) = leading_cd(command)?;
    // Quoted text (a `sed` script, `nl`'s separator) is an argument, not shell syntax.
    let bare = unquoted(command);
    if bare.contains(['>', '<', ';', '`', '$', '*', '?', '\n'])
        || bare.contains("&&")
        || bare.contains("||")
    {
        return None;
    }
    let mut stages = bare
        .match_indices('|')
        .map(|(at, _)| at)
        .chain([command.len()])
        .scan(0, |from, to| {
            let stage = &command[*from..to];
            *from = to + 1;
            Some(stage.trim())
        });
    let (path, mut reader) = reader(stages.next()?)?;
    reader.dir = dir;
    for stage in stages {
        reader.then(&shell_words(stage)?)?;
    }
    Some((path, reader))
}

/// How a read's output lines map to the file's lines.
#[derive(Debug, Clone, PartialEq)]
enum Layout {
    /// Each output line is a file line, the first one `start` (`None`: not known).
    Plain { start: Option<usize> },
    /// `sed -n 'A,Bp;C,Dp'`: the lines of each range in turn (ascending, apart), placed only
    /// when the output holds every line of every range.
    Ranges(Vec<(usize, usize)>),
    /// Each output line carries a number (`cat -n`, `nl -ba`): the file's line is the number
    /// plus `offset`, its text follows `sep` (`None`: a tab or a space).
    Numbered { offset: i64, sep: Option<String> },
    /// `nl` numbering only the lines with text (its default, `-b t`): a line left empty is
    /// printed blank and not counted, so the numbers are not the file's; the lines are placed
    /// by position from `start`, their text after the number and `sep`.
    Prefixed { start: Option<usize>, sep: String },
}

/// A read's output layout, its directory and how many lines it prints.
struct Reader {
    layout: Layout,
    dir: Option<String>,
    /// How many lines it prints when the file has them all (`sed -n 'A,Bp'`, `head -n N`).
    count: Option<usize>,
}

impl Reader {
    fn numbered(&self) -> bool {
        matches!(self.layout, Layout::Numbered { .. })
    }

    /// Adds a stage after the read (its words); `None` when the stage is not one that keeps
    /// the lines' place known.
    fn then(&mut self, words: &[String]) -> Option<()> {
        let (program, args) = words.split_first()?;
        let numbering = match program.as_str() {
            "nl" => Some(nl_options(args)?),
            "cat" if args.iter().all(|a| a == "-n") && !args.is_empty() => Some(Numbering::all()),
            _ => None,
        };
        if let Some(numbering) = numbering {
            // Numbers over the lines picked so far: placed when their first line is known.
            let Layout::Plain { start } = self.layout else {
                return None;
            };
            self.layout = numbering.layout(start?)?;
            return Some(());
        }
        let count = filter_count(words);
        match (program.as_str(), &mut self.layout) {
            // Numbered lines keep their numbers through any filter that picks lines.
            ("sed", Layout::Numbered { .. }) => {
                sed_ranges(args)?;
            }
            ("head" | "tail", Layout::Numbered { .. }) => {}
            // Positional lines: only one `sed -n` range or a `head` keeps the place known.
            ("sed", Layout::Plain { start } | Layout::Prefixed { start, .. }) => {
                let [(first, _)] = sed_ranges(args)?[..] else {
                    return None;
                };
                *start = start.and_then(|s| s.checked_add(first - 1));
            }
            ("head", _) => {}
            _ => return None,
        }
        // What a filter prints counts, and only when the read before it printed no less.
        self.count = match self.count {
            None => count,
            Some(_) => None,
        };
        Some(())
    }

    /// The numbered lines of `body` (no trailing newline); `None` when numbered output has
    /// a line without its number, or plain output has no known first line.
    fn lines(&self, body: &str) -> Option<Vec<(usize, String)>> {
        let mut lines = Vec::new();
        match &self.layout {
            Layout::Numbered { offset, sep } => {
                for line in body.split('\n') {
                    let Some((number, text)) = numbered_line(line, sep.as_deref()) else {
                        // `nl` leaves blank lines unnumbered: they belong to the previous
                        // line's run.
                        if line.trim().is_empty() {
                            continue;
                        }
                        return None;
                    };
                    let n = i64::try_from(number)
                        .ok()
                        .and_then(|n| n.checked_add(*offset))
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|&n| n > 0)?;
                    lines.push((n, text.to_string()));
                }
            }
            Layout::Prefixed { start, sep } => {
                let start = (*start)?;
                for (i, line) in body.split('\n').enumerate() {
                    let text = if line.trim().is_empty() {
                        ""
                    } else {
                        numbered_line(line, Some(sep))?.1
                    };
                    lines.push((start.checked_add(i)?, text.to_string()));
                }
            }
            Layout::Ranges(ranges) => {
                let printed: Vec<&str> = body.split('\n').collect();
                if spans(ranges) != Some(printed.len()) {
                    return None;
                }
                let numbers = ranges.iter().flat_map(|&(first, last)| first..=last);
                lines.extend(numbers.zip(printed).map(|(n, l)| (n, l.to_string())));
            }
            Layout::Plain { start } => {
                let start = (*start)?;
                for (i, l) in body.split('\n').enumerate() {
                    lines.push((start.checked_add(i)?, l.to_string()));
                }
            }
        }
        Some(lines)
    }
}

/// A numbered output line's number and text: digits (after spaces), then, past any spaces
/// that pad a left-justified number, the separator (`None`: a tab or a space). A line that
/// is its number and the separator's start alone (trailing spaces trimmed) has empty text.
fn numbered_line<'a>(line: &'a str, sep: Option<&str>) -> Option<(usize, &'a str)> {
    let trimmed = line.trim_start();
    let digits = trimmed.len()
        - trimmed
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .len();
    if digits == 0 {
        return None;
    }
    let number = trimmed[..digits].parse().ok()?;
    let rest = &trimmed[digits..];
    let text = match sep {
        None => rest
            .trim_start_matches(' ')
            .strip_prefix('\t')
            .or_else(|| rest.strip_prefix(' '))?,
        Some(sep) => match rest.strip_prefix(sep) {
            Some(text) => text,
            None => {
                let padded = rest.trim_start_matches(' ');
                match padded.strip_prefix(sep) {
                    Some(text) => text,
                    None if padded == sep.trim_end() => "",
                    None => return None,
                }
            }
        },
    };
    Some((number, text))
}

/// What `nl`'s options ask for: every line numbered (`-b a`) or only those with text (the
/// default, `-b t`), the separator (`-s`, a tab by default) and the first number (`-v`,
/// 1). The width (`-w`) and the format (`-n ln|rn|rz`) only pad the number.
struct Numbering {
    all: bool,
    sep: Option<String>,
    first: usize,
}

impl Numbering {
    /// `cat -n`: every line, from 1, a tab after the number.
    fn all() -> Numbering {
        Numbering {
            all: true,
            sep: None,
            first: 1,
        }
    }

    /// The layout of these numbers over lines whose first is the file's line `start`;
    /// `None` when the numbers are too far from it to place a line.
    fn layout(self, start: usize) -> Option<Layout> {
        Some(if self.all {
            Layout::Numbered {
                offset: i64::try_from(start)
                    .ok()?
                    .checked_sub(i64::try_from(self.first).ok()?)?,
                sep: self.sep,
            }
        } else {
            Layout::Prefixed {
                start: Some(start),
                sep: self.sep.unwrap_or_else(|| "\t".to_string()),
            }
        })
    }
}

/// `nl`'s options (files are not among them); `None` for an option it does not know here.
fn nl_options(args: &[String]) -> Option<Numbering> {
    nl_arguments(args).and_then(|(numbering, files)| files.is_empty().then_some(numbering))
}

/// `nl`'s options and the files it names.
fn nl_arguments(args: &[String]) -> Option<(Numbering, Vec<&str>)> {
    let mut numbering = Numbering {
        all: false,
        sep: None,
        first: 1,
    };
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let Some(option) = arg.strip_prefix('-').filter(|o| !o.is_empty()) else {
            files.push(arg);
            i += 1;
            continue;
        };
        let (letter, attached) = option.split_at(1);
        let value = if attached.is_empty() {
            i += 1;
            args.get(i)?.as_str()
        } else {
            attached
        };
        match letter {
            "b" => match value {
                "a" => numbering.all = true,
                "t" => numbering.all = false,
                _ => return None,
            },
            "s" => numbering.sep = Some(value.to_string()),
            "v" => numbering.first = value.parse().ok()?,
            "w" => {
                value.parse::<usize>().ok()?;
            }
            "n" if ["ln", "rn", "rz"].contains(&value) => {}
            _ => return None,
        }
        i += 1;
    }
    Some((numbering, files))
}

fn reader(stage: &str) -> Option<(String, Reader)> {
    let words = shell_words(stage)?;
    let (program, args) = words.split_first()?;
    let mut files: Vec<&str> = Vec::new();
    let mut layout = Layout::Plain { start: Some(1) };
    let mut count = None;
    let mut i = 0;
    let windows = WINDOWS_READERS.contains(&program.to_ascii_lowercase().as_str());
    match program.as_str() {
        _ if windows => {
            while i < args.len() {
                match args[i].to_ascii_lowercase().as_str() {
                    "-raw" => {}
                    "-path" | "-literalpath" => {
                        i += 1;
                        files.push(args.get(i)?);
                    }
                    // A value that does not move where the shown lines start.
                    "-totalcount" | "-head" | "-first" | "-encoding" => i += 1,
                    a if a.starts_with('-') => return None,
                    _ => files.push(&args[i]),
                }
                i += 1;
            }
        }
        "cat" => {
            for a in args {
                match a.as_str() {
                    "-n" => layout = Numbering::all().layout(1)?,
                    a if a.starts_with('-') => return None,
                    a => files.push(a),
                }
            }
        }
        "nl" => {
            let (numbering, named) = nl_arguments(args)?;
            layout = numbering.layout(1)?;
            files = named;
        }
        "head" => {
            while i < args.len() {
                let a = args[i].as_str();
                if a == "-n" {
                    i += 1;
                    count = args.get(i).and_then(|n| n.parse().ok());
                } else if a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) {
                    count = a[1..].parse().ok();
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
            match sed_ranges(std::slice::from_ref(script))?[..] {
                [(first, last)] => {
                    layout = Layout::Plain { start: Some(first) };
                    count = span(first, last);
                }
                ref ranges => {
                    // Ranges printed in turn: ascending and apart, each with its last line.
                    let bounded: Vec<(usize, usize)> = ranges
                        .iter()
                        .map(|&(first, last)| Some((first, last.filter(|&l| l >= first)?)))
                        .collect::<Option<_>>()?;
                    let apart = bounded.windows(2).all(|w| w[0].1 < w[1].0);
                    if !apart || bounded.iter().any(|&(_, last)| last > MAX_LINE) {
                        return None;
                    }
                    count = Some(spans(&bounded)?);
                    layout = Layout::Ranges(bounded);
                }
            }
            files.extend(rest.iter().map(String::as_str));
        }
        _ => return None,
    }
    let [path] = files[..] else { return None };
    // PowerShell and cmd separate with `\`; every other path here uses `/`.
    let path = if windows {
        path.replace('\\', "/")
    } else {
        path.to_string()
    };
    let path = path.strip_prefix("./").unwrap_or(&path);
    if path.is_empty() || path.starts_with('-') {
        return None;
    }
    Some((
        path.to_string(),
        Reader {
            layout,
            dir: None,
            count,
        },
    ))
}

impl FileRead {
    /// Resolves the read's directory against `cwd`, the directory its command ran in: a
    /// relative `cd` goes on from it, and a read with no `cd` was made in it.
    pub(crate) fn ran_in(&mut self, cwd: &str) {
        self.dir = Some(match self.dir.take() {
            Some(dir) if is_absolute(&dir) => dir,
            Some(dir) => join(cwd, &dir),
            None => cwd.to_string(),
        });
    }

    /// The read's path joined to its directory, when it has one and the path is relative.
    pub(crate) fn full_path(&self) -> String {
        match &self.dir {
            Some(dir) if !is_absolute(&self.path) => join(dir, &self.path),
            _ => self.path.clone(),
        }
    }
}

/// The directory a command's leading `cd DIR && …` steps go to (a relative step joined to
/// the one before it) and the rest of the command; `None` when a `cd` is not followed by
/// `&&`.
fn leading_cd(command: &str) -> Option<(Option<String>, &str)> {
    let mut command = command.trim();
    let mut dir: Option<String> = None;
    while command.starts_with("cd ") {
        let (step, after) = cd_step(command)?;
        dir = Some(match dir {
            Some(dir) if !step.starts_with('/') => join(&dir, step),
            _ => step.to_string(),
        });
        command = after.trim();
    }
    Some((dir, command))
}

/// The directory of the `cd DIR &&` that `command` starts with (quotes removed) and what
/// follows the `&&`.
fn cd_step(command: &str) -> Option<(&str, &str)> {
    let (step, after) = command.trim().strip_prefix("cd ")?.split_once("&&")?;
    Some((step.trim().trim_matches(['"', '\'']), after))
}

/// `path` under `dir`, with `./` steps and a trailing `/` removed and each `..` step taking
/// off the directory before it.
fn join(dir: &str, path: &str) -> String {
    let mut out = dir.trim_end_matches('/').to_string();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            if let Some(cut) = out.rfind(['/', '\\']).filter(|&cut| cut > 0) {
                out.truncate(cut);
                continue;
            }
        }
        out.push('/');
        out.push_str(part);
    }
    out
}

/// The ranges, first and last line (`None` for `$`), of a `sed -n` script that prints
/// lines (`'A,Bp'`, `'Ap'`, `'A,$p'`, several joined by `;`: `'1,80p;120,140p'`).
fn sed_ranges(words: &[String]) -> Option<Vec<(usize, Option<usize>)>> {
    let script = match words {
        [script] => script,
        [flag, script] if flag == "-n" => script,
        _ => return None,
    };
    script
        .split(';')
        .map(|range| {
            let range = range.trim().strip_suffix('p')?;
            let (first, last) = range.split_once(',').unwrap_or((range, range));
            let first = first.parse().ok().filter(|&n: &usize| n > 0)?;
            let last = match last {
                "$" => None,
                last => Some(last.parse().ok()?),
            };
            Some((first, last))
        })
        .collect()
}

/// How many lines the ranges hold together (`None` past `usize`).
fn spans(ranges: &[(usize, usize)]) -> Option<usize> {
    ranges.iter().try_fold(0usize, |sum, &(first, last)| {
        sum.checked_add(last - first + 1)
    })
}

/// How many lines the range from `first` to `last` holds.
fn span(first: usize, last: Option<usize>) -> Option<usize> {
    last.filter(|&last| last >= first)
        .map(|last| last - first + 1)
}

/// How many lines a filter stage prints at most: `sed -n 'A,Bp'`, `head`/`tail -n N` or
/// `-N`.
fn filter_count(words: &[String]) -> Option<usize> {
    match words {
        [sed, args @ ..] if sed == "sed" => sed_ranges(args)?
            .into_iter()
            .try_fold(0usize, |sum, (f, l)| sum.checked_add(span(f, l)?)),
        [program, n, count] if (program == "head" || program == "tail") && n == "-n" => {
            count.parse().ok()
        }
        [program, count] if program == "head" || program == "tail" => {
            count.strip_prefix('-')?.parse().ok()
        }
        _ => None,
    }
}

/// `command` with the text inside its quotes (not the quotes) replaced by `_`, one per
/// byte, so that what is left is its shell syntax at the same places.
fn unquoted(command: &str) -> String {
    let mut quote: Option<char> = None;
    let mut out = String::with_capacity(command.len());
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), c) => out.extend(std::iter::repeat_n('_', c.len_utf8())),
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (None, c) => out.push(c),
        }
    }
    out
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

/// Everything seen so far of each file, merged over reads, and the directory the session
/// works in.
///
/// A session names one file in several ways: `/testbed/pkg/a.py`, `pkg/a.py`, or `a.py`
/// after `cd /testbed/pkg &&`. Paths are resolved against the command's own `cd` and then
/// made relative to the session's working directory — the absolute directory the commands
/// noted with [`FileViews::note_command`] most often `cd` to (the first of them on a tie) —
/// so that every read of a file lands on one path, as the final patch names it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileViews {
    seen: BTreeMap<String, BTreeMap<usize, String>>,
    /// Absolute `cd` directories: (commands naming it, order first named).
    work_dirs: BTreeMap<String, (usize, usize)>,
    /// The directory the first command that says where it ran ran in (the session's
    /// folder): when known, the working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    folder: Option<String>,
}

impl FileViews {
    /// Notes `cwd`, the directory a command ran in; the first one noted is the session's
    /// folder, which paths are made relative to from then on.
    pub(crate) fn note_cwd(&mut self, cwd: &str) {
        let cwd = cwd.trim_end_matches(['/', '\\']);
        if self.folder.is_none() && !cwd.is_empty() {
            self.folder = Some(cwd.to_string());
        }
    }

    /// Counts the absolute directory `command` first changes to, if any.
    pub(crate) fn note_command(&mut self, command: &str) {
        let first = cd_step(command).map(|(dir, _)| dir);
        // `/` itself would make every absolute path relative: not a working directory.
        let dir = first.filter(|d| d.starts_with('/')).map(|d| join(d, ""));
        if let Some(dir) = dir.filter(|d| !d.is_empty()) {
            let order = self.work_dirs.len();
            self.work_dirs.entry(dir).or_insert((0, order)).0 += 1;
        }
    }

    /// The session's working directory so far: its folder when a command said where it ran,
    /// else the absolute directory the commands `cd` to most.
    fn work_dir(&self) -> Option<&str> {
        if let Some(folder) = &self.folder {
            return Some(folder);
        }
        self.work_dirs
            .iter()
            .max_by_key(|(_, &(count, order))| (count, std::cmp::Reverse(order)))
            .map(|(dir, _)| dir.as_str())
    }

    /// The path `read` is kept under: resolved against its `cd`, relative to the working
    /// directory when it lies under it.
    pub(crate) fn path_of(&self, read: &FileRead) -> String {
        let full = read.full_path();
        self.work_dir()
            .and_then(|root| full.strip_prefix(root))
            .and_then(|rest| rest.strip_prefix(['/', '\\']))
            .filter(|rest| !rest.is_empty())
            .map_or(full.clone(), str::to_string)
    }

    /// Adds a read and returns its path ([`FileViews::path_of`]) and the file's content as
    /// seen so far: the known lines in order, a gap of unseen lines shown as
    /// `[ctxopt: lines A-B not seen]` (and, before a first known line above 1,
    /// `[ctxopt: lines 1-B not seen]`).
    pub(crate) fn add(&mut self, read: &FileRead) -> (String, String) {
        let path = self.path_of(read);
        let lines = self.seen.entry(view_key(&path)).or_default();
        // A number no file reaches (a hostile or broken record) is no line of it; below
        // [`MAX_LINE`], moving lines by a change's length cannot overflow.
        for (n, text) in read.lines.iter().filter(|(n, _)| *n <= MAX_LINE) {
            lines.insert(*n, text.clone());
        }
        let content = rendered(lines);
        (path, content)
    }

    /// The path a change names, as [`FileViews::path_of`] keeps it.
    fn named(&self, path: &str) -> String {
        self.name_in(path, None)
    }

    /// The path a change made in `dir` names (a relative path is `dir`'s), as
    /// [`FileViews::path_of`] keeps it.
    pub(crate) fn name_in(&self, path: &str, dir: Option<&str>) -> String {
        let mut read = FileRead {
            path: path.to_string(),
            dir: None,
            lines: Vec::new(),
        };
        if let Some(dir) = dir {
            read.ran_in(dir);
        }
        self.path_of(&read)
    }

    /// Takes out the view of the path a change names (the change puts it back once it
    /// applies): that path, its key and the lines seen; `None` when nothing was seen of it.
    fn take(&mut self, path: &str) -> Option<(String, String, BTreeMap<usize, String>)> {
        let path = self.named(path);
        let key = view_key(&path);
        let seen = self.seen.remove(&key)?;
        Some((path, key, seen))
    }

    /// Puts a changed view back under `key`; returns `path` and its content as
    /// [`FileViews::add`] does.
    fn put(
        &mut self,
        key: String,
        path: String,
        seen: BTreeMap<usize, String>,
    ) -> (String, String) {
        let content = rendered(&seen);
        self.seen.insert(key, seen);
        (path, content)
    }

    /// Applies a change's hunks, which do not say where they are, to what was seen of `path`
    /// ([`FileViews::path_of`] of a read of it), one after the other in `order`, as Codex
    /// CLI's `apply_patch` places them ([`seek::apply_unplaced`]); the lines after each move
    /// by the difference. Returns the path and the file's current view as [`FileViews::add`]
    /// does; `None`, forgetting the path, when a hunk is not placed so (the view is then not
    /// the file any more).
    pub(crate) fn apply(
        &mut self,
        path: &str,
        hunks: &[UnplacedHunk],
        order: Order,
    ) -> Option<(String, String)> {
        let (path, key, mut seen) = self.take(path)?;
        if hunks.is_empty() || !seek::apply_unplaced(&mut seen, hunks, order) {
            return None;
        }
        Some(self.put(key, path, seen))
    }

    /// Applies a change whose hunks say where they are — each (the number of its first old
    /// line, its old lines, its new lines; context included), as Claude Code's structured
    /// patch gives them — to what was seen of `path`: every old line the view holds must be
    /// the one at its number (else the view is not the file any more: `None`, forgetting
    /// it), the hunk's lines take their place and the later lines move by the difference.
    /// The hunk's lines show the file, so lines the view had not seen join it. Returns the
    /// path and the content as [`FileViews::add`] does.
    pub(crate) fn apply_placed(
        &mut self,
        path: &str,
        hunks: &[PlacedHunk],
    ) -> Option<(String, String)> {
        let (path, key, mut seen) = self.take(path)?;
        if hunks.is_empty() {
            return None;
        }
        let mut order: Vec<&PlacedHunk> = hunks.iter().collect();
        // The last hunk first: the numbers of the ones before it do not move.
        order.sort_by_key(|h| std::cmp::Reverse(h.0));
        let mut below = usize::MAX;
        for (start, old, new) in order {
            // A hunk that removes nothing is placed after its old start (`@@ -4,0 +5,2 @@`).
            let first = if old.is_empty() {
                start.checked_add(1)?
            } else {
                *start
            };
            let end = first.checked_add(old.len())?;
            if first == 0 || end > MAX_LINE || end > below {
                return None;
            }
            below = first;
            let holds = old
                .iter()
                .enumerate()
                .all(|(k, text)| seen.get(&(first + k)).is_none_or(|s| s == text));
            if !holds {
                return None;
            }
            replace_at(&mut seen, first, old.len(), new);
        }
        Some(self.put(key, path, seen))
    }

    /// Takes `lines` as the whole of `path` ([`FileViews::path_of`] of a read of it), from line
    /// 1: a file the session wrote. Returns the path and the content as [`FileViews::add`]
    /// does.
    pub(crate) fn write(&mut self, path: &str, lines: &[&str]) -> (String, String) {
        let path = self.named(path);
        let view: BTreeMap<usize, String> =
            (1..).zip(lines.iter().map(|l| l.to_string())).collect();
        self.put(view_key(&path), path, view)
    }

    /// The whole content of `path` when every line of it from the first was seen (a whole
    /// read, with no gap), as [`FileViews::add`] writes it; `None` otherwise.
    pub(crate) fn whole_content(&self, path: &str) -> Option<String> {
        let lines = self.seen.get(&view_key(path))?;
        let contiguous = lines.keys().zip(1..).all(|(&n, expected)| n == expected);
        (contiguous && !lines.is_empty()).then(|| {
            let mut content = String::new();
            for text in lines.values() {
                content.push_str(text);
                content.push('\n');
            }
            content
        })
    }

    /// Forgets what was seen of `path` (a change the caller knows of, such as an edit).
    pub(crate) fn forget(&mut self, path: &str) {
        self.seen.remove(&view_key(path));
    }

    /// Forgets what was seen of every path that `command` may write: the target of a
    /// redirection (`> PATH`, `>> PATH`; not a descriptor's copy such as `2>&1`), and every
    /// known path the command names when it rewrites files in place or moves them (`sed -i`,
    /// `mv`, `cp`, a script's `open(`).
    pub(crate) fn forget_written(&mut self, command: &str) {
        let command = view_key(command);
        let rewrites = command.contains("sed -i")
            || command.split_whitespace().any(|w| w == "mv" || w == "cp")
            || command.contains("open(");
        let targets = redirect_targets(&command);
        if !rewrites && targets.is_empty() {
            return;
        }
        self.seen.retain(|key, _| {
            let named = names(&command, key);
            let redirected = targets.iter().any(|t| {
                let t = t.strip_prefix("./").unwrap_or(t);
                t == key || t.ends_with(&format!("/{key}")) || key.ends_with(&format!("/{t}"))
            });
            !(redirected || (rewrites && named))
        });
    }
}

/// Whether `command` names the path `key`: not as a part of a longer name (`a.py` is not
/// named by `test_a.py` or `a.py.bak`); a directory before it may be (`src/a.py`).
fn names(command: &str, key: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || "_-.".contains(c);
    command.match_indices(key).any(|(at, _)| {
        let before = command[..at].chars().next_back();
        let after = command[at + key.len()..].chars().next();
        !key.is_empty() && !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// The paths `command`'s output redirections write: the word after each `>` or `>>` (quotes
/// removed), leaving out a descriptor's copy (`2>&1`, `>&2`) and `/dev/…`.
fn redirect_targets(command: &str) -> Vec<String> {
    let bare = unquoted(command);
    let mut targets = Vec::new();
    let mut from = 0;
    while let Some(at) = bare[from..].find('>') {
        let mut end = from + at + 1;
        if bare[end..].starts_with('>') {
            end += 1;
        }
        from = end;
        if bare[end..].starts_with('&') {
            continue;
        }
        let rest = command[end..].trim_start();
        let Some(word) = shell_words(rest).and_then(|w| w.into_iter().next()) else {
            continue;
        };
        if !word.is_empty() && !word.starts_with("/dev/") {
            targets.push(word);
        }
    }
    targets
}

/// The key of a path's view: one file named with `\` or `/` (a Windows session's tools
/// differ) has one view, as the optimizer names files ([`normalize_path`]).
fn view_key(path: &str) -> String {
    normalize_path(path).into_owned()
}

/// The content of the lines seen of a file: in order, a gap of unseen lines shown as
/// `[ctxopt: lines A-B not seen]`.
fn rendered(lines: &BTreeMap<usize, String>) -> String {
    let mut content = String::new();
    let mut next = 1;
    for (&n, text) in lines {
        if n > next {
            content.push_str(&format!("[ctxopt: lines {next}-{} not seen]\n", n - 1));
        }
        content.push_str(text);
        content.push('\n');
        next = n + 1;
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hunk with no anchor.
    fn unplaced<'a>(old: &[&'a str], new: &[&'a str]) -> UnplacedHunk<'a> {
        UnplacedHunk {
            anchor: None,
            old: old.to_vec(),
            new: new.to_vec(),
        }
    }

    fn read(command: &str, output: &str) -> Option<FileRead> {
        file_read(command, output, Some(0))
    }

    /// The numbered lines `command` read from `output` (it must be a read).
    fn lines(command: &str, output: &str) -> Vec<(usize, String)> {
        read(command, output)
            .unwrap_or_else(|| panic!("{command} is a read"))
            .lines
    }

    fn owned(lines: &[(usize, &str)]) -> Vec<(usize, String)> {
        lines.iter().map(|&(n, t)| (n, t.to_string())).collect()
    }

    #[test]
    fn a_change_applied_to_the_lines_seen_gives_the_current_view_and_moves_the_rest() {
        let mut views = FileViews::default();
        views.add(
            &read(
                "sed -n '10,14p' src/a.py",
                "def f():\n    x = 1\n    return x\n\ny = 2\n",
            )
            .unwrap(),
        );
        let hunk = unplaced(
            &["    x = 1", "    return x"],
            &["    x = 1", "    x += 1", "    return x"],
        );
        let (path, content) = views
            .apply("src/a.py", std::slice::from_ref(&hunk), Order::Patch)
            .unwrap();
        assert_eq!(path, "src/a.py");
        assert_eq!(
            content,
            "[ctxopt: lines 1-9 not seen]\ndef f():\n    x = 1\n    x += 1\n    return x\n\ny = 2\n"
        );
        // A later region read lands on the moved lines: line 15 is now `y = 2`.
        let (_, again) = views.add(&read("sed -n '15p' src/a.py", "y = 2\n").unwrap());
        assert_eq!(again, content);
        // The canary: a hunk whose old lines the view does not hold forgets the file.
        let stale = unplaced(&["    x = 9"], &["    x = 10"]);
        assert_eq!(views.apply("src/a.py", &[stale], Order::Patch), None);
        assert_eq!(
            views.apply("src/a.py", &[hunk], Order::Patch),
            None,
            "forgotten"
        );
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
    fn nl_options_and_its_place_in_a_pipeline_keep_the_file_lines() {
        // Codex CLI's own shapes, from the corpus's rollouts.
        let command = "nl -ba -w1 -s': ' opk/ui/pdl_editor.py | sed -n '300,350p'";
        let out = "300:         rows = sorted(rows)\n301: \n302:     def f(self):\n";
        assert_eq!(read(command, out).unwrap().path, "opk/ui/pdl_editor.py");
        assert_eq!(
            lines(command, out),
            owned(&[
                (300, "        rows = sorted(rows)"),
                (301, ""),
                (302, "    def f(self):")
            ])
        );
        // Several ranges of numbered lines: the numbers place them.
        let numbered = lines(
            "nl -ba packages/core/src/a.ts | sed -n '1,1p;1560,1561p'",
            "     1\timport x\n  1560\ta\n  1561\tb\n",
        );
        let numbers: Vec<usize> = numbered.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [1, 1560, 1561]);
        // Numbers given after a range count from its first line; `-v` moves them.
        assert_eq!(
            lines(
                "sed -n '260,999p' src/i18n.py | nl -ba | sed -n '260,261p'",
                "   260\tx = 1\n   261\ty = 2\n",
            ),
            owned(&[(519, "x = 1"), (520, "y = 2")])
        );
        assert_eq!(
            lines("nl -ba -v 0 a.py", "0\tfirst\n"),
            owned(&[(1, "first")])
        );
        // A left-justified number is padded before its separator.
        assert_eq!(
            lines("nl -ba -nln a.py", "9     \tend\n"),
            owned(&[(9, "end")])
        );
        // A script's `$` and `;` are quoted: no shell syntax.
        assert_eq!(lines("sed -n '3,$p' a.py", "c\n"), owned(&[(3, "c")]));
        // Lines picked from positions by two ranges, or numbers of numbers: not placed.
        for command in [
            "cat a.py | sed -n '1,2p;5,6p'",
            "nl -ba a.py | nl -ba",
            "nl -ba -x a.py",
            "nl -ba a.py | sed -n '1,2p' | grep x",
        ] {
            assert_eq!(read(command, "     1\tx\n"), None, "{command}");
        }
    }

    #[test]
    fn numbers_too_large_to_place_a_line_make_no_read_and_no_panic() {
        let huge = "18446744073709551615";
        for command in [
            format!("nl -ba -v {huge} a.py"),
            format!("sed -n '{huge},{huge}p' a.py | nl -ba"),
            format!("cat a.py | sed -n '2,3p' | sed -n '{huge}p'"),
            "nl -ba -v 9223372036854775807 a.py".to_string(),
        ] {
            assert_eq!(read(&command, "     1\tx\n"), None, "{command}");
        }
        // A chain whose counts overflow is no read either.
        let chain = format!("sed -n '1,{huge}p' a.py && sed -n '1,{huge}p;1,2p' b.py");
        assert_eq!(file_reads(&chain, "x\ny\n", Some(0)), vec![]);
        let r = read(&format!("sed -n '{huge}p' a.py"), "x\n");
        assert_eq!(r.map(|r| r.lines), Some(vec![(usize::MAX, "x".into())]));
    }

    #[test]
    fn a_change_placed_by_its_numbers_shows_the_lines_around_it_and_moves_the_rest() {
        let mut views = FileViews::default();
        // Lines 10-11 and 20 seen; the change's hunk holds lines 9-12 (context beyond the
        // lines seen, as a structured patch's three lines of context often are).
        views.add(&read("sed -n '10,11p' a.py", "b\nc\n").unwrap());
        views.add(&read("sed -n '20p' a.py", "z\n").unwrap());
        let hunk = (9, vec!["a", "b", "c", "d"], vec!["a", "b", "B", "c", "d"]);
        let (_, content) = views
            .apply_placed("a.py", std::slice::from_ref(&hunk))
            .unwrap();
        assert_eq!(
            content,
            "[ctxopt: lines 1-8 not seen]\na\nb\nB\nc\nd\n[ctxopt: lines 14-20 not seen]\nz\n"
        );
        // The canary: a hunk whose lines the view holds otherwise forgets the file.
        views.add(&read("sed -n '10p' a.py", "b\n").unwrap());
        let stale = (10, vec!["x"], vec!["y"]);
        assert_eq!(views.apply_placed("a.py", &[stale]), None);
        assert_eq!(views.apply_placed("a.py", &[hunk]), None, "forgotten");
        // An insertion after a line, and two hunks placed from the last.
        views.add(&read("sed -n '1,3p' b.py", "1\n2\n3\n").unwrap());
        let hunks = [(1, vec!["1"], vec!["one"]), (3, vec![], vec!["3.5"])];
        let (_, content) = views.apply_placed("b.py", &hunks).unwrap();
        assert_eq!(content, "one\n2\n3\n3.5\n");
    }

    #[test]
    fn a_line_number_no_file_reaches_is_no_line_of_the_view() {
        let mut views = FileViews::default();
        let read = FileRead {
            path: "a.py".into(),
            dir: None,
            lines: vec![(1, "x = 1".into()), (usize::MAX, "y".into())],
        };
        let (_, content) = views.add(&read);
        assert_eq!(content, "x = 1\n");
        let hunk = unplaced(&["x = 1"], &["x = 2", "z = 3"]);
        let (_, changed) = views.apply("a.py", &[hunk], Order::Patch).unwrap();
        assert_eq!(changed, "x = 2\nz = 3\n");
        // The canary: the highest line a view keeps is kept, and moves with a change.
        let edge = FileRead {
            path: "b.py".into(),
            dir: None,
            lines: vec![(1, "a".into()), (MAX_LINE, "b".into())],
        };
        views.add(&edge);
        let (_, moved) = views
            .apply("b.py", &[unplaced(&["a"], &["a", "a2"])], Order::Patch)
            .unwrap();
        assert!(moved.ends_with("not seen]\nb\n"), "{moved}");
    }

    #[test]
    fn a_sed_script_of_several_ranges_places_them_when_it_printed_them_all() {
        // Codex CLI's own shape, from the corpus.
        let command = "sed -n '340,341p;1485,1486p' packages/core/src/evaluation/trace-envelope.ts";
        let r = read(command, "a\nb\nc\nd\n").unwrap();
        let numbers: Vec<usize> = r.lines.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [340, 341, 1485, 1486]);
        // A file that ended inside a range: the lines cannot be placed.
        assert_eq!(read(command, "a\nb\nc\n"), None);
        // Ranges out of order, touching or open: their lines cannot be told apart.
        for script in ["5,6p;1,2p", "1,5p;5,6p", "1,2p;8,$p"] {
            assert_eq!(
                read(&format!("sed -n '{script}' a.py"), "x\n"),
                None,
                "{script}"
            );
        }
        // Nor an overflowing count, counted without walking the lines.
        let huge = format!(
            "sed -n '1,{}p;{},{}p' a.py",
            MAX_LINE - 1,
            MAX_LINE,
            MAX_LINE
        );
        assert_eq!(read(&huge, "x\n"), None);
    }

    #[test]
    fn a_chain_split_at_semicolons_splits_as_one_split_at_ands() {
        let chain = "sed -n '60,61p' a.ts; sed -n '78,78p' b.ts";
        let reads = file_reads(chain, "x\ny\nz\n", Some(0));
        let got: Vec<(&str, Vec<usize>)> = reads
            .iter()
            .map(|r| (r.path.as_str(), r.lines.iter().map(|(n, _)| *n).collect()))
            .collect();
        assert_eq!(got, [("a.ts", vec![60, 61]), ("b.ts", vec![78])]);
        // A script's own `;` does not split the chain.
        let one = file_reads(
            "sed -n '1,1p;3,3p' a.ts && sed -n '2p' b.ts",
            "1\n3\n2\n",
            Some(0),
        );
        assert_eq!(one.len(), 2);
        assert_eq!(one[0].lines, [(1, "1".into()), (3, "3".into())]);
    }

    #[test]
    fn nl_numbers_only_lines_with_text_so_its_lines_are_placed_by_position() {
        // `nl` without `-b a` leaves an empty line unnumbered and does not count it: `b` is
        // numbered 2 but is the file's line 3.
        let out = "     1\ta\n       \n     2\tb\n     3\t  \n";
        assert_eq!(
            lines("nl a.txt", out),
            owned(&[(1, "a"), (2, ""), (3, "b"), (4, "  ")])
        );
        assert_eq!(
            lines("nl a.txt | sed -n '3,4p'", "     2\tb\n     3\t  \n"),
            owned(&[(3, "b"), (4, "  ")])
        );
    }

    #[test]
    fn powershell_reads_are_reads_with_forward_slashes() {
        let whole = read(
            "Get-Content app\\repository.py -Raw",
            "class A:\n    pass\n",
        )
        .unwrap();
        assert_eq!(whole.path, "app/repository.py");
        assert_eq!(
            whole.lines,
            [(1, "class A:".into()), (2, "    pass".into())]
        );
        let named = read(
            "gc -LiteralPath 'C:\\src\\app\\main.py' -TotalCount 1",
            "x\n",
        )
        .unwrap();
        assert_eq!(named.path, "C:/src/app/main.py");
        for command in [
            "Get-Content a.py -Tail 5",
            "Get-Content a.py b.py",
            "type a.py",
        ] {
            assert_eq!(read(command, "x\n"), None, "{command}");
        }
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
    fn a_chain_of_counted_reads_splits_where_each_read_printed_all_its_lines() {
        let chain = "cd /srv && sed -n '70,71p' src/a.ts && echo '---' && sed -n '1,3p' b.ts";
        let reads = file_reads(chain, "x\ny\n---\n1\n2\n3\n", Some(0));
        let placed: Vec<_> = reads
            .iter()
            .map(|r| (r.path.as_str(), r.dir.as_deref(), r.lines.clone()))
            .collect();
        assert_eq!(
            placed,
            [
                (
                    "src/a.ts",
                    Some("/srv"),
                    vec![(70, "x".into()), (71, "y".into())]
                ),
                (
                    "b.ts",
                    Some("/srv"),
                    vec![(1, "1".into()), (2, "2".into()), (3, "3".into())]
                ),
            ]
        );
        let numbered = "nl -ba a.py | sed -n '5,5p' && head -n 1 b.py";
        let reads = file_reads(numbered, "     5\tfive\nfirst\n", None);
        assert_eq!(reads.len(), 2);
        assert_eq!(reads[0].lines, [(5, "five".into())]);
        assert_eq!(reads[1].lines, [(1, "first".into())]);
        // One read alone is the one `file_read` finds.
        assert_eq!(
            file_reads("cat a.py", "x\n", Some(0)),
            vec![read("cat a.py", "x\n").unwrap()]
        );
        // The canaries: a file shorter than its range (the lines do not add up), a read
        // that says no count, an echo not where it belongs, a failed chain, a write.
        for (command, output, exit_code) in [
            (chain, "x\n---\n1\n2\n3\n", Some(0)),
            (chain, "x\ny\n---\n1\n2\n", Some(0)),
            ("sed -n '1,2p' a.py && cat b.py", "x\ny\nz\n", Some(0)),
            (
                "sed -n '1,2p' a.py && echo '--' && sed -n '1p' b",
                "x\ny\n==\nz\n",
                None,
            ),
            (
                "sed -n '1,1p' a.py && sed -n '1,1p' b.py",
                "x\ny\n",
                Some(1),
            ),
            ("sed -n '1,1p' a.py || sed -n '1,1p' b.py", "x\n", Some(0)),
            ("sed -n '1,1p' a.py && sed -i 's/a/b/' b.py", "x\n", Some(0)),
            (
                "sed -n '1,1p' a.py && cd sub && sed -n '1,1p' b.py",
                "x\ny\n",
                Some(0),
            ),
        ] {
            assert_eq!(file_reads(command, output, exit_code), [], "{command}");
        }
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
    fn one_file_named_three_ways_is_one_path_under_the_working_directory() {
        let mut views = FileViews::default();
        let mut add = |command: &str, output: &str| {
            views.note_command(command);
            views.add(&read(command, output).unwrap())
        };
        // No working directory seen yet: the path stays as named.
        assert_eq!(add("cat /srv/app/pkg/a.py", "1\n").0, "/srv/app/pkg/a.py");
        assert_eq!(add("cd /srv/app && cat pkg/a.py", "1\n").0, "pkg/a.py");
        // Now absolute, relative and `cd`-relative names meet, and the views merge.
        let (path, content) = add("sed -n '2,2p' /srv/app/pkg/a.py", "2\n");
        assert_eq!((path.as_str(), content.as_str()), ("pkg/a.py", "1\n2\n"));
        assert_eq!(
            add("cd /srv/app/pkg && cat -n ./a.py", "     1\t1\n").0,
            "pkg/a.py"
        );
        assert_eq!(
            add("cd /srv/app && cd pkg && head -1 a.py", "1\n").0,
            "pkg/a.py"
        );
        // A file outside the working directory keeps its absolute path.
        assert_eq!(add("cat /etc/hosts", "x\n").0, "/etc/hosts");
        // The directory named most often wins; the first one on a tie.
        let mut other = FileViews::default();
        for command in ["cd /a && ls", "cd /b && ls", "cd /b && ls"] {
            other.note_command(command);
        }
        assert_eq!(other.path_of(&read("cat /b/x.py", "x\n").unwrap()), "x.py");
        assert_eq!(
            other.path_of(&read("cat /a/x.py", "x\n").unwrap()),
            "/a/x.py"
        );
    }

    #[test]
    fn views_merge_and_writes_forget() {
        let mut views = FileViews::default();
        let first = read("sed -n '3,4p' a.py", "c\nd\n").unwrap();
        assert_eq!(views.add(&first).1, "[ctxopt: lines 1-2 not seen]\nc\nd\n");
        let second = read("sed -n '7,7p' a.py", "g\n").unwrap();
        assert_eq!(
            views.add(&second).1,
            "[ctxopt: lines 1-2 not seen]\nc\nd\n[ctxopt: lines 5-6 not seen]\ng\n"
        );
        views.forget_written("grep -n x a.py");
        // A copy of a descriptor writes no file: the view stays.
        views.forget_written("python a.py 2>&1 | tail -5 > /dev/null");
        assert_eq!(views.add(&second).1.lines().count(), 5);
        // Another file whose name holds this one's: the view stays.
        views.forget_written("sed -i 's/g/G/' test_a.py a.py.bak");
        assert_eq!(views.add(&second).1.lines().count(), 5);
        views.forget_written("sed -i 's/g/G/' a.py");
        assert_eq!(views.add(&second).1, "[ctxopt: lines 1-6 not seen]\ng\n");
        // A redirection writes its target only.
        views.add(&first);
        views.forget_written("echo done > b.txt");
        assert_eq!(views.add(&second).1.lines().count(), 5);
        views.forget_written("cd /w && cat > ./a.py << 'EOF'");
        assert_eq!(views.add(&second).1, "[ctxopt: lines 1-6 not seen]\ng\n");
    }
}
