//! The `generate` directive of a scenario file: large, deterministic text (a 50,000-line
//! log) expanded from a few templates and a seed, so the fixture stays small.
//!
//! ```json
//! "generate": [{
//!   "record": "t-log",            // id of the record whose text is generated
//!   "field": "output",            // the field to fill (default "output")
//!   "lines": 50000,
//!   "seed": 20260312,
//!   "start": "2026-03-12T00:00:00Z", "step_ms": 497,
//!   "templates": ["{time} INFO [worker-{n:1-8}] processed pay_{hex:12}"],
//!   "insert": [{"line": 41977, "text": "{time} ERROR …"}]
//! }]
//! ```
//!
//! Line `i` (1-based) is `insert[line == i].text` when there is one, else a template chosen
//! by the seeded generator. Placeholders: `{time}` is `start + (i-1) * step_ms` as
//! `YYYY-MM-DD HH:MM:SS.mmm`; `{n:A-B}` a number in A..=B; `{hex:N}` N hex digits. The
//! generator is SplitMix64, so the same directive always gives the same bytes.

use serde::Deserialize;

/// One generated text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Generate {
    /// The id of the record to fill.
    pub(crate) record: String,
    /// The field to fill (`output`, `content`, `text`, `stack`, `diff`).
    #[serde(default = "default_field")]
    pub(crate) field: String,
    /// How many lines.
    pub(crate) lines: usize,
    /// The seed.
    pub(crate) seed: u64,
    /// RFC 3339 time of line 1.
    pub(crate) start: String,
    /// Milliseconds between lines.
    pub(crate) step_ms: u64,
    /// The line templates, picked uniformly (repeat one to weight it).
    pub(crate) templates: Vec<String>,
    /// Lines placed at fixed positions.
    #[serde(default)]
    pub(crate) insert: Vec<Insert>,
}

/// A line at a fixed position.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Insert {
    /// 1-based line number.
    pub(crate) line: usize,
    /// The line's template.
    pub(crate) text: String,
}

fn default_field() -> String {
    "output".into()
}

/// SplitMix64: small, fast and fully determined by its seed.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high.saturating_sub(low) + 1)
    }

    /// An index below `len` (`len` > 0).
    pub(crate) fn index(&mut self, len: usize) -> usize {
        (self.next_u64() % len as u64) as usize
    }
}

/// What is wrong with a directive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum GenerateError {
    /// `start` is not RFC 3339.
    #[error("start: expected an RFC 3339 time, found \"{0}\"")]
    Start(String),
    /// No templates to pick from.
    #[error("templates: expected at least one template")]
    NoTemplates,
    /// An insert outside `1..=lines`.
    #[error("insert: line {0} is outside 1..={1}")]
    InsertOutOfRange(usize, usize),
    /// A placeholder that is not `{time}`, `{n:A-B}` or `{hex:N}`.
    #[error("unknown placeholder \"{{{0}}}\"")]
    Placeholder(String),
}

/// Expands the directive into its text (lines joined by `\n`, with a final `\n`).
pub(crate) fn expand(directive: &Generate) -> Result<String, GenerateError> {
    let start = chrono::DateTime::parse_from_rfc3339(&directive.start)
        .map_err(|_| GenerateError::Start(directive.start.clone()))?
        .with_timezone(&chrono::Utc);
    if directive.templates.is_empty() {
        return Err(GenerateError::NoTemplates);
    }
    let mut inserts: Vec<&Insert> = directive.insert.iter().collect();
    inserts.sort_by_key(|i| i.line);
    if let Some(bad) = inserts
        .iter()
        .find(|i| i.line == 0 || i.line > directive.lines)
    {
        return Err(GenerateError::InsertOutOfRange(bad.line, directive.lines));
    }
    let mut rng = SplitMix64::new(directive.seed);
    let mut out = String::with_capacity(directive.lines * 96);
    let mut next_insert = inserts.iter().peekable();
    for line in 1..=directive.lines {
        let time =
            start + chrono::Duration::milliseconds((directive.step_ms * (line as u64 - 1)) as i64);
        let template = match next_insert.peek() {
            Some(insert) if insert.line == line => {
                let text = &insert.text;
                next_insert.next();
                // Several inserts may share a line; the last one wins.
                while next_insert.peek().is_some_and(|i| i.line == line) {
                    next_insert.next();
                }
                text
            }
            _ => &directive.templates[rng.index(directive.templates.len())],
        };
        fill(template, &time, &mut rng, &mut out)?;
        out.push('\n');
    }
    Ok(out)
}

/// Appends `template` with its placeholders filled.
fn fill(
    template: &str,
    time: &chrono::DateTime<chrono::Utc>,
    rng: &mut SplitMix64,
    out: &mut String,
) -> Result<(), GenerateError> {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            return Ok(());
        };
        let name = &rest[open + 1..open + close];
        match name.split_once(':') {
            None if name == "time" => {
                out.push_str(&time.format("%Y-%m-%d %H:%M:%S%.3f").to_string());
            }
            Some(("n", range)) => {
                let (low, high) = range
                    .split_once('-')
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .ok_or_else(|| GenerateError::Placeholder(name.into()))?;
                out.push_str(&rng.between(low, high).to_string());
            }
            Some(("hex", digits)) => {
                let digits: usize = digits
                    .parse()
                    .map_err(|_| GenerateError::Placeholder(name.into()))?;
                for _ in 0..digits {
                    out.push(char::from_digit(rng.between(0, 15) as u32, 16).unwrap_or('0'));
                }
            }
            _ => return Err(GenerateError::Placeholder(name.into())),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directive(lines: usize) -> Generate {
        Generate {
            record: "log".into(),
            field: "output".into(),
            lines,
            seed: 7,
            start: "2026-03-12T00:00:00Z".into(),
            step_ms: 1500,
            templates: vec![
                "{time} INFO w{n:1-3} pay_{hex:4}".into(),
                "{time} DEBUG tick".into(),
            ],
            insert: vec![Insert {
                line: 3,
                text: "{time} ERROR boom".into(),
            }],
        }
    }

    #[test]
    fn expands_lines_times_and_inserts() {
        let text = expand(&directive(4)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("2026-03-12 00:00:00.000 "));
        assert!(lines[1].starts_with("2026-03-12 00:00:01.500 "));
        assert_eq!(lines[2], "2026-03-12 00:00:03.000 ERROR boom");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let a = expand(&directive(200)).unwrap();
        assert_eq!(a, expand(&directive(200)).unwrap());
        let mut other = directive(200);
        other.seed = 8;
        assert_ne!(a, expand(&other).unwrap());
    }

    #[test]
    fn placeholders_stay_in_range() {
        let text = expand(&directive(500)).unwrap();
        for line in text.lines().filter(|l| l.contains(" INFO ")) {
            let worker = line.split(" w").nth(1).unwrap().split(' ').next().unwrap();
            assert!(["1", "2", "3"].contains(&worker), "{line}");
            let hex = line.rsplit("pay_").next().unwrap();
            assert_eq!(hex.len(), 4);
            assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn rejects_bad_directives() {
        let mut d = directive(2);
        assert_eq!(
            expand(&d).unwrap_err(),
            GenerateError::InsertOutOfRange(3, 2)
        );
        d.insert.clear();
        d.templates = vec!["{when}".into()];
        assert_eq!(
            expand(&d).unwrap_err(),
            GenerateError::Placeholder("when".into())
        );
        d.templates.clear();
        assert_eq!(expand(&d).unwrap_err(), GenerateError::NoTemplates);
        d.start = "noon".into();
        assert_eq!(expand(&d).unwrap_err(), GenerateError::Start("noon".into()));
    }
}
