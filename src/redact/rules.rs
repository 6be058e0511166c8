//! The rule table: which secrets the redactor knows, in the style of gitleaks (whose
//! MIT-licensed rules these follow, simplified): each rule names the keywords one of which
//! every match contains (the prefilter), a pattern, and optionally what a match may be
//! without being a secret. Specified, with the reasons for each shape, in `docs/security.md`.
//!
//! Patterns never match a `"` they do not also consume with its escape, and a match
//! never starts or ends inside a JSON escape (the matcher widens it if it would), so
//! redacting a JSON text leaves valid JSON.

/// One kind of secret.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rule {
    /// The name written into the placeholder (`[REDACTED:<name>:…]`).
    pub(crate) name: &'static str,
    /// Every match contains one of these (ASCII, compared case-insensitively).
    pub(crate) keywords: &'static [&'static str],
    /// The pattern. When it has capture groups, the first group that took part in a match
    /// is the secret (the rest of the match is context, such as a key name, left in place).
    pub(crate) pattern: &'static str,
    /// A match that this pattern finds in the whole match text is not a secret.
    pub(crate) allow: Option<&'static str>,
    /// Where a match can start, relative to the keyword it holds.
    pub(crate) starts: Starts,
}

/// Where a rule's matches start. A rule whose matches start at one of its keywords, or at
/// the key name that holds one, is tried only there, at each keyword hit, instead of over
/// the whole text: the keywords `token`, `auth`, `secret` and `authorization` fill tool
/// lists, and those rules' patterns over whole frames were most of redaction's cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Starts {
    /// Anywhere: the pattern runs over the whole text.
    Anywhere,
    /// At one of the rule's keywords. The pattern must not look behind its start.
    AtKeyword,
    /// At the first character of a key name made of `[A-Za-z0-9]` runs, each followed by
    /// at most one `_` or `-`, that holds the keyword (`client_secret = …`). The pattern
    /// must not look behind its start.
    KeyName,
    /// At the `"` or `\"` right before such a key name (`"client_secret": …`).
    QuotedKeyName,
}

/// Sensitive key names: the word itself or as the last part of a longer name
/// (`client_secret`, `accessToken`, `X-Api-Key`).
macro_rules! sensitive_key {
    () => {
        r"(?:[A-Za-z0-9]+[_-]?)*?(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth|authorization|credentials?|bearer)"
    };
}

/// A value made only of words that stand for a secret in examples and documentation
/// (`Bearer token`, `<your-api-key>`, `xxx`, `changeme`).
macro_rules! example_words {
    () => {
        r"(?:(?:bearer|basic|token|your|my|the|an?|api|access|auth|key|secret|password|passwd|value|example|sample|dummy|test|placeholder|changeme|here|string|redacted|x{3,}|\*{3,}|\.{3}|<[^<>]*>|\$\{?[A-Za-z_]+\}?)[ _.-]*)+"
    };
}

/// Keywords every sensitive key name contains.
const SENSITIVE_KEYWORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "privatekey",
    "private_key",
    "private-key",
    "auth",
    "credential",
    "bearer",
];

/// The rules, in the order the placeholder names and docs list them.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        name: "github-token",
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        pattern: r"gh[pousr]_[A-Za-z0-9]{36}(?-u:\b)",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "github-fine-grained-pat",
        keywords: &["github_pat_"],
        pattern: r"github_pat_[A-Za-z0-9_]{82}(?-u:\b)",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "gitlab-token",
        keywords: &[
            "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glffct-",
        ],
        pattern: r"gl(?:pat|dt|rt|ptt|cbt|soat|ffct)-[A-Za-z0-9_-]{20,}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "aws-access-key-id",
        keywords: &["akia", "asia", "abia", "acca", "a3t"],
        pattern: r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)",
        // AWS's documentation keys (AKIAIOSFODNN7EXAMPLE).
        allow: Some(r"EXAMPLE$"),
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "gcp-api-key",
        keywords: &["aiza"],
        pattern: r"AIza[A-Za-z0-9_-]{35}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "azure-ad-client-secret",
        keywords: &["q~"],
        pattern: r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "azure-storage-key",
        keywords: &["accountkey="],
        pattern: r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "slack-token",
        keywords: &["xox", "xapp-"],
        pattern: r"(?:xox[abeoprs]|xapp)-[0-9A-Za-z-]{10,}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "slack-webhook",
        keywords: &["hooks.slack.com"],
        pattern: r"(?i)https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "stripe-key",
        keywords: &[
            "sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_",
        ],
        pattern: r"[rs]k_(?:test|live|prod)_[A-Za-z0-9]{10,99}(?-u:\b)",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "openai-key",
        keywords: &["sk-proj-", "sk-svcacct-", "sk-admin-", "t3blbkfj"],
        pattern: r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "anthropic-key",
        keywords: &["sk-ant-"],
        pattern: r"sk-ant-(?:api|admin|oat|ort)[0-9]{2}-[A-Za-z0-9_-]{40,}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "npm-token",
        keywords: &["npm_"],
        pattern: r"npm_[A-Za-z0-9]{36}(?-u:\b)",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "pypi-token",
        keywords: &["pypi-ageichlwas5vcmc"],
        pattern: r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "private-key",
        keywords: &["private key"],
        // A whole block, or (cut off before its END line) the header and the body after it.
        // `\n` escapes count as line breaks, so a block inside a JSON string is found too.
        pattern: r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:(?:[A-Za-z0-9+/=\s:,.-]|\\+[nrt])*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=\s:,.]|\\+[nrt])*)",
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "jwt",
        keywords: &["eyj"],
        pattern: r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "authorization-header",
        keywords: &["authorization"],
        pattern: r#"(?i)authorization\\?"?[ \t]*:[ \t]*\\?"?[ \t]*(?:basic|bearer|token|digest|apikey|api-key|sso-key)[ \t]+([A-Za-z0-9._~+/=:-]{8,})"#,
        allow: None,
        starts: Starts::AtKeyword,
    },
    Rule {
        name: "api-key-header",
        keywords: &["-key", "-token", "-secret", "-apikey"],
        pattern: r"(?i)x-(?:[a-z0-9]+-)*?(?:apikey|key|token|secret)[ \t]*:[ \t]*([A-Za-z0-9._~+/=-]{8,})",
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "url-credentials",
        keywords: &["://"],
        pattern: r#"(?i)[a-z][a-z0-9+.-]{1,30}://[^\s:@/"'\\<>\[\]]{1,256}:([^\s:@/"'\\<>]{1,256})@"#,
        allow: None,
        starts: Starts::Anywhere,
    },
    Rule {
        name: "sensitive-key",
        keywords: SENSITIVE_KEYWORDS,
        // A JSON member, either plain (`"password": "…"`) or inside a JSON string
        // (`\"password\": \"…\"`, as a tool result quotes a file it read).
        pattern: concat!(
            r#"(?i)"(?:"#,
            sensitive_key!(),
            r#")"[ \t\r\n]*:[ \t\r\n]*"((?:[^"\\]|\\.)+)"|\\"(?:"#,
            sensitive_key!(),
            r#")\\"[ \t]*:[ \t]*\\"((?:[^"\\]|\\[^"])+)\\""#
        ),
        // Pagination and progress handles are tokens by name only; a value made of example
        // words (`"Authorization": "Bearer token"` in a tool's description) is no secret.
        allow: Some(concat!(
            r#"(?i)^\\?"(?:progress|page|next[_-]?page|next|continuation|sync|cursor)[_-]?token\\?"|:[ \t\r\n]*\\?""#,
            example_words!(),
            r#"\\?"$"#
        )),
        starts: Starts::QuotedKeyName,
    },
    Rule {
        name: "sensitive-assignment",
        keywords: SENSITIVE_KEYWORDS,
        // `KEY=value` as in .env, INI files (~/.aws/credentials) and query strings.
        pattern: concat!(
            r"(?i)(?:",
            sensitive_key!(),
            r#")[ \t]*=[ \t]*([^\s"'\\,;&<>\[\]{}`]{4,})\[?"#
        ),
        // Code, not values: `token = None`, `password=$PASS`, `key = os.environ…`,
        // `secret = read_secret()`, `token = await …`, a member access written in code
        // (`key = authState.vaultKeypair.privateKey`, `token = body?.refreshToken`: a chain
        // of identifiers with a camelCase or an optional `?.` link, which a random secret
        // or a password is not); an element of a list (`token = args[i]`,
        // `token = body?.items[0]`: the pattern takes the `[` after the value so that this
        // can see it); and example words
        // (`password=changeme`).
        allow: Some(concat!(
            r"(?i)=[ \t]*(?:none|null|nil|true|false|undefined|\$|os\.|self\.|process\.|env\.|config\.|settings\.|args\.|options\.)|\(|=[ \t]*(?:await|new|yield|typeof)$",
            r"|=[ \t]*[a-z_$][a-z0-9_$.?]*\[$",
            r"|=[ \t]*(?-i:[a-z_$][A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)*(?:[a-z][A-Z]|\?\.)[A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)*\??\.?)$",
            r"|=[ \t]*",
            example_words!(),
            "$"
        )),
        starts: Starts::KeyName,
    },
];
