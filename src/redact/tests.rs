//! The rule table against one real-shaped sample per rule, look-alikes that must stay, and
//! the repository's real-world data (the false-positive rate).
//!
//! Samples are assembled from pieces at run time, so the repository holds no string that a
//! secret scanner would take for a live credential.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

fn redactor() -> Redactor {
    Redactor::with_key(Key::from_bytes([7; key::KEY_LEN]))
}

/// `n` characters of `alphabet`, deterministic for `seed` (a simple LCG: the same sample
/// every run).
fn chars(n: usize, alphabet: &str, seed: u64) -> String {
    let alphabet = alphabet.as_bytes();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            alphabet[(state >> 33) as usize % alphabet.len()] as char
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64url(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}

/// (rule, the text around it, the secret inside that text).
pub(crate) fn samples() -> Vec<(&'static str, String, String)> {
    let s = |rule, context: &str, secret: String| (rule, context.replace("{}", &secret), secret);
    vec![
        s(
            "github-token",
            "remote: token {} ok",
            format!("gh{}_{}", "p", chars(36, ALNUM, 1)),
        ),
        s(
            "github-fine-grained-pat",
            "GH_TOKEN={}",
            format!("github_{}_{}", "pat", chars(82, &format!("{ALNUM}_"), 2)),
        ),
        s(
            "gitlab-token",
            "PRIVATE-TOKEN {}",
            format!("gl{}-{}", "pat", chars(20, ALNUM, 3)),
        ),
        s(
            "aws-access-key-id",
            "[default]\naws_access_key_id={}\n",
            format!("AK{}{}", "IA", chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 4)),
        ),
        s(
            "gcp-api-key",
            "https://maps.googleapis.com/maps/api?key={}",
            format!("AI{}{}", "za", chars(35, B64URL, 5)),
        ),
        s(
            "azure-ad-client-secret",
            "client secret: {}",
            format!("{}8Q~{}", chars(3, ALNUM, 6), chars(34, ALNUM, 7)),
        ),
        s(
            "azure-storage-key",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
            format!("{}==", chars(86, B64, 8)),
        ),
        s(
            "slack-token",
            "SLACK {} ",
            format!("xo{}-{}-{}-{}", "xb", "1234567890", "9876543210", chars(24, ALNUM, 9)),
        ),
        s(
            "slack-webhook",
            "curl -X POST {}",
            format!(
                "https://hooks.slack.com/ser{}/T0{}/B0{}/{}",
                "vices",
                chars(8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
                chars(8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 11),
                chars(24, ALNUM, 12)
            ),
        ),
        s(
            "stripe-key",
            "Stripe.api_key = '{}'",
            format!("sk_{}_{}", "live", chars(24, ALNUM, 13)),
        ),
        s(
            "openai-key",
            "OPENAI_API_KEY: {}\n",
            format!(
                "sk-{}-{}T3Blbk{}{}",
                "proj",
                chars(58, B64URL, 14),
                "FJ",
                chars(58, B64URL, 15)
            ),
        ),
        s(
            "anthropic-key",
            "x-api-key header holds {}",
            format!("sk-{}-api03-{}AA", "ant", chars(93, B64URL, 16)),
        ),
        s(
            "npm-token",
            "//registry.npmjs.org/:_authToken {}",
            format!("np{}_{}", "m", chars(36, ALNUM, 17)),
        ),
        s(
            "pypi-token",
            "password: {}",
            format!("py{}-AgEIcHlwaS5vcmc{}", "pi", chars(70, B64URL, 18)),
        ),
        s(
            "private-key",
            "key file:\n{}\n",
            format!(
                "-----BEGIN RSA {} KEY-----\n{}\n{}\n-----END RSA {} KEY-----",
                "PRIVATE",
                chars(64, B64, 19),
                chars(40, B64, 20),
                "PRIVATE"
            ),
        ),
        s(
            "jwt",
            "cookie: session={}; Path=/",
            format!(
                "{}.{}.{}",
                b64url(r#"{"alg":"HS256","typ":"JWT"}"#),
                b64url(r#"{"sub":"1234567890","name":"A User","iat":1516239022}"#),
                chars(43, B64URL, 21)
            ),
        ),
        s(
            "authorization-header",
            "GET / HTTP/1.1\r\nAuthorization: Bearer {}\r\n",
            chars(40, ALNUM, 22),
        ),
        s("api-key-header", "X-Api-Key: {}\n", chars(32, ALNUM, 23)),
        s(
            "url-credentials",
            "DATABASE_URL=postgres://admin:{}@db.internal:5432/app",
            chars(18, ALNUM, 24),
        ),
        s(
            "sensitive-key",
            r#"{"user": "bob", "password": "{}"}"#,
            "correct horse battery staple".to_string(),
        ),
        s(
            "sensitive-assignment",
            "[default]\naws_secret_access_key = {}\n",
            chars(40, B64, 25),
        ),
    ]
}

#[test]
fn every_rule_has_a_sample() {
    let sampled: Vec<&str> = samples().iter().map(|(rule, _, _)| *rule).collect();
    for rule in rules::RULES {
        assert!(sampled.contains(&rule.name), "no sample for {}", rule.name);
    }
}

#[test]
fn each_rule_redacts_its_sample_and_names_itself() {
    let r = redactor();
    for (rule, text, secret) in samples() {
        let (out, count) = r.redact_str(&text);
        assert!(count >= 1, "{rule}: nothing redacted in {text:?}");
        assert!(!out.contains(&secret), "{rule}: the secret survived: {out}");
        let name = format!("[REDACTED:{rule}:");
        assert!(out.contains(&name), "{rule}: wrong rule or none: {out}");
    }
}

#[test]
fn samples_inside_a_json_string_are_redacted_and_the_json_stays_valid() {
    let r = redactor();
    for (rule, text, secret) in samples() {
        // As a server sends a file it read: the text once escaped inside a frame.
        let frame = serde_json::json!({
            "jsonrpc": "2.0", "id": 1,
            "result": {"content": [{"type": "text", "text": text}]}
        })
        .to_string();
        let (out, count) = r.redact_str(&frame);
        assert!(count >= 1, "{rule}: nothing redacted in {frame}");
        let parsed: serde_json::Value = serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{rule}: no longer JSON ({e}): {out}"));
        let inner = parsed["result"]["content"][0]["text"].as_str().unwrap();
        assert!(!inner.contains(&secret), "{rule}: survived: {inner}");
    }
}

#[test]
fn a_sensitive_key_inside_a_quoted_file_is_found_with_its_escapes() {
    let r = redactor();
    let file = r#"{"client_id": "abc", "client_secret": "s3cr3t-value-123"}"#;
    let frame = serde_json::json!({"text": file}).to_string();
    let (out, count) = r.redact_str(&frame);
    assert_eq!(count, 1, "{out}");
    assert!(!out.contains("s3cr3t-value-123"), "{out}");
    assert!(
        out.contains(r#"\"client_id\": \"abc\""#),
        "context kept: {out}"
    );
}

#[test]
fn placeholders_carry_the_length_and_a_keyed_hmac() {
    let (out, _) = redactor().redact_str(r#"{"token": "abcdef"}"#);
    let again = redactor().redact_str(r#"{"api_key": "abcdef"}"#).0;
    let tag = |s: &str| {
        s.rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("]\"}")
            .to_string()
    };
    assert!(out.contains("[REDACTED:sensitive-key:6:"), "{out}");
    assert_eq!(tag(&out), tag(&again), "equal secrets, equal tags");
    let other_key = Redactor::with_key(Key::from_bytes([8; key::KEY_LEN]));
    let (other, _) = other_key.redact_str(r#"{"token": "abcdef"}"#);
    assert_ne!(tag(&out), tag(&other), "the tag depends on the key");
}

#[test]
fn redaction_is_idempotent_and_leaves_nothing_a_rule_finds() {
    let r = redactor();
    let all: String = samples()
        .into_iter()
        .map(|(_, text, _)| text)
        .collect::<Vec<_>>()
        .join("\n");
    let (once, count) = r.redact_str(&all);
    assert!(count >= samples().len(), "{count}");
    assert!(matcher().find(once.as_bytes()).is_empty());
    let (twice, again) = r.redact_str(&once);
    assert_eq!((twice.as_ref(), again), (once.as_ref(), 0));
}

#[test]
fn aws_documentation_keys_and_pagination_tokens_are_not_secrets() {
    let r = redactor();
    let text = format!(
        r#"key AK{}IOSFODNN7EXAMPLE {{"progressToken": "p-1", "nextPageToken": "abc"}}"#,
        "IA"
    );
    assert_eq!(r.redact_str(&text), (Cow::Borrowed(text.as_str()), 0));
}

/// Look-alikes: long hex and base64 strings that are not credentials.
fn look_alikes() -> Vec<String> {
    use sha2::Digest;
    let sha256 = hex::encode(sha2::Sha256::digest(b"ctxopt"));
    let png: Vec<u8> = (0..3000u32).map(|i| (i * 7919 % 251) as u8).collect();
    let png = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(png)
    };
    vec![
        "commit 90a8b74c3f0e5d1a2b3c4d5e6f708192a3b4c5d6 (HEAD -> main)".into(),
        "request id 123e4567-e89b-12d3-a456-426614174000".into(),
        format!("{sha256}  target/release/ctxopt"),
        format!(r#"{{"type":"image","mimeType":"image/png","data":"{png}"}}"#),
        format!("data:image/png;base64,{png}"),
        r#"{"name":"token_count","inputSchema":{"properties":{"token":{"type":"string","description":"an auth token"}}}}"#.into(),
        "use `password = getpass()` to ask; set token=None; the secret is in $SECRET".into(),
        "const token = await getToken();\nconst privateKey = authState.vaultKeypair.privateKey;\nconst refresh_token = body?.refreshToken;".into(),
        "const token = args[i]\nconst nextToken = argv[i + 1]\nconst token = body?.items[0]".into(),
        "https://github.com/modelcontextprotocol/servers@main".into(),
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----".into(),
    ]
}

#[test]
fn values_that_only_look_like_code_are_still_secrets() {
    let r = redactor();
    for text in [
        "password = correct.horse.battery",
        "secret=Summer.2024",
        "api_key = sk.Abc123xyz.987654",
        "token=Abc123xyz987654&page=2",
    ] {
        let (out, count) = r.redact_str(text);
        assert_eq!(count, 1, "{text}: {out}");
    }
}

#[test]
fn look_alikes_stay_intact() {
    let r = redactor();
    for text in look_alikes() {
        let (out, count) = r.redact_str(&text);
        assert_eq!((out.as_ref(), count), (text.as_str(), 0), "changed");
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn real_world() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world")
}

#[test]
fn the_real_tool_lists_stay_intact() {
    let r = redactor();
    let files = files_under(&real_world().join("tier1-tools-list"));
    let lists: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(lists.len() >= 10, "{lists:?}");
    for path in lists {
        let text = std::fs::read(path).unwrap();
        let findings = matcher().find(&text);
        let shown: Vec<String> = findings
            .iter()
            .map(|f| {
                format!(
                    "{}: {}",
                    f.rule,
                    String::from_utf8_lossy(&text[f.span.clone()])
                )
            })
            .collect();
        assert!(shown.is_empty(), "{}: {shown:?}", path.display());
        assert_eq!(r.redact(&text).1, 0);
    }
}

/// The keyword rules run only at their keyword hits; over all the real-world data they find
/// exactly what their patterns find over whole texts (the canary: the data holds findings
/// of both rules, so the comparison is not of two empty lists).
#[test]
fn the_search_at_keyword_hits_finds_what_the_whole_text_search_finds_in_real_data() {
    let mut by_rule: std::collections::BTreeMap<&str, usize> = Default::default();
    for path in files_under(&real_world()) {
        let text = std::fs::read(&path).unwrap();
        let found = matcher().find(&text);
        assert_eq!(
            found,
            matcher().find_by_whole_text_search(&text),
            "{}",
            path.display()
        );
        for f in found {
            *by_rule.entry(f.rule).or_default() += 1;
        }
    }
    for rule in ["sensitive-key", "sensitive-assignment"] {
        assert!(by_rule.get(rule).is_some_and(|n| *n > 0), "{by_rule:?}");
    }
}

/// Texts made of key names and values (quoted as JSON, quoted inside a JSON string, or
/// assigned), between pieces of anything else: names with runs of separators and keywords
/// anywhere, values with quotes, escapes and keywords inside, headers and keys that start
/// with their keyword.
fn key_value_texts() -> impl Strategy<Value = String> {
    let piece = || {
        prop::sample::select(vec![
            "token",
            "auth",
            "Secret",
            "password",
            "api_key",
            "api-key",
            "_",
            "-",
            "__",
            "\"",
            "\\\"",
            "\\",
            "=",
            ":",
            " ",
            "\t",
            "\n",
            "abc",
            "X9",
            "[",
            "]",
            ",",
            "value1234",
            "{",
            "}",
            "(",
            "$",
            ".",
            "?.",
            "None",
            "Proxy-",
            "Authorization",
            ": Bearer ",
            "AKIA",
            "AKIAQRSTUVWXYZ234567",
        ])
    };
    let name = prop::collection::vec(piece(), 1..5).prop_map(|p| p.concat());
    let value = prop::collection::vec(piece(), 1..5).prop_map(|p| p.concat());
    let shape = prop::sample::select(vec![
        ("\"", "\": \"", "\""),
        ("\\\"", "\\\": \\\"", "\\\""),
        ("", " = ", ""),
        ("", "=", ";"),
    ]);
    let pair = (shape, name, value).prop_map(|((open, middle, close), name, value)| {
        format!("{open}{name}{middle}{value}{close}")
    });
    let part = prop_oneof![piece().prop_map(str::to_string), pair];
    prop::collection::vec(part, 0..24).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn the_search_at_keyword_hits_finds_what_the_whole_text_search_finds(
        text in key_value_texts()
    ) {
        prop_assert_eq!(
            matcher().find(text.as_bytes()),
            matcher().find_by_whole_text_search(text.as_bytes())
        );
    }
}

/// Key names of a megabyte made of keywords, and a megabyte of hits with no value (how the
/// time grows with such input: `cargo bench --bench redaction`; a search that scanned back
/// over the name from every hit would take minutes here).
#[test]
fn long_key_names_full_of_keywords_find_what_the_whole_text_search_finds() {
    for text in [
        format!("{}=value1234", "token".repeat(200_000)),
        format!("\"{}\": \"value1234\"", "auth_".repeat(200_000)),
        "\"token\": ".repeat(100_000),
        "token_".repeat(200_000),
    ] {
        assert_eq!(
            matcher().find(text.as_bytes()),
            matcher().find_by_whole_text_search(text.as_bytes())
        );
    }
}

/// Findings per MiB over every file of `fixtures/real-world` (transcripts, trajectories,
/// tool lists: public data that holds no live secret, so every finding is a false
/// positive), printed per rule and bounded.
#[test]
fn false_positive_rate_on_the_real_world_data() {
    let mut bytes = 0usize;
    let mut per_rule: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for path in files_under(&real_world()) {
        let text = std::fs::read(&path).unwrap();
        bytes += text.len();
        for f in matcher().find(&text) {
            let shown = String::from_utf8_lossy(&text[f.span.clone()]);
            let shown: String = shown.chars().take(40).collect();
            per_rule.entry(f.rule).or_default().push(format!(
                "{}: {shown}",
                path.strip_prefix(real_world()).unwrap().display()
            ));
        }
    }
    // The canary: the same scan over the samples finds each of them.
    let canary: String = samples()
        .into_iter()
        .map(|(_, text, _)| text + "\n")
        .collect();
    assert_eq!(matcher().find(canary.as_bytes()).len(), samples().len());
    let total: usize = per_rule.values().map(Vec::len).sum();
    let mib = bytes as f64 / (1 << 20) as f64;
    println!(
        "false positives: {total} in {mib:.1} MiB ({:.2} per MiB)",
        total as f64 / mib
    );
    for (rule, hits) in &per_rule {
        println!("  {rule}: {}", hits.len());
        for hit in hits.iter().take(5) {
            println!("    {hit}");
        }
    }
    assert!(mib > 10.0, "the real-world data is missing: {mib:.1} MiB");
    assert!(
        (total as f64 / mib) <= FALSE_POSITIVES_PER_MIB,
        "{total} findings in {mib:.1} MiB: {per_rule:#?}"
    );
}

/// The bound of [`false_positive_rate_on_the_real_world_data`] (the figure measured, with
/// room to spare, is in `docs/security.md`).
const FALSE_POSITIVES_PER_MIB: f64 = 1.0;
