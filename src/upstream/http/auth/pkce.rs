//! Proof Key for Code Exchange (RFC 7636, method `S256`) and the random `state`: values made
//! from the operating system's random source, base64url without padding.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};

/// `bytes` random bytes from the operating system, base64url without padding.
pub(crate) fn random_text(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::getrandom(&mut buf).expect("the operating system's random source is readable");
    URL_SAFE_NO_PAD.encode(buf)
}

/// A code verifier and its `S256` challenge.
pub(crate) struct Pkce {
    /// The verifier, sent with the token request (43 characters).
    pub(crate) verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent with the authorization request.
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh verifier (32 random bytes) and its challenge.
    pub(crate) fn new() -> Pkce {
        let verifier = random_text(32);
        Pkce {
            challenge: challenge_of(&verifier),
            verifier,
        }
    }
}

/// The `S256` challenge of `verifier`.
fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636s_example() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let a = Pkce::new();
        let b = Pkce::new();
        assert_eq!(a.verifier.len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, challenge_of(&a.verifier));
    }
}
