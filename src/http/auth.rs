//! API keys (`serve --api-key-file`): every `/v1` request must present one as a bearer token.
//! Keys are kept only as SHA-256 digests, compared in constant time, and never logged.

use super::problem::Problem;
use super::refusal::refuse;
use super::scopes::{Grants, Need, Scope, UnknownScope};
use super::AppState;
use crate::api::problem::ProblemType;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The identity a request was authenticated as: its key's name, if the key has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller(pub Option<String>);

struct ApiKey {
    name: Option<String>,
    digest: [u8; 32],
    grants: Grants,
    /// Its line in the key file, for naming a duplicate.
    line: usize,
}

pub struct ApiKeys {
    keys: Vec<ApiKey>,
}

/// Why a key file was refused. Messages name the line, never the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    #[error("cannot read the API key file {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {problem}")]
    Invalid {
        path: PathBuf,
        problem: KeyLineError,
    },
}

/// How to make a key, said by every refusal of one.
const GENERATE: &str = "generate one with: openssl rand -hex 32";

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyLineError {
    #[error("line {0}: expected KEY, NAME:KEY or NAME:KEY SCOPE …")]
    Shape(usize),
    #[error("line {0}: a key must be printable ASCII without spaces; {GENERATE}")]
    Unprintable(usize),
    #[error(
        "line {line}: the key is shorter than {} characters, short enough to guess; {GENERATE}",
        ApiKeys::MIN_KEY_CHARS
    )]
    TooShort { line: usize },
    #[error(
        "line {0}: the key is a placeholder, not a secret (as in the example file); {GENERATE}"
    )]
    Placeholder(usize),
    #[error(
        "line {line}: the same key as line {first}: two callers with one key cannot be told \
         apart, nor one of them revoked; {GENERATE}"
    )]
    Duplicate { line: usize, first: usize },
    #[error("line {line}: {scope}")]
    Scope { line: usize, scope: UnknownScope },
    #[error("no keys")]
    Empty,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKeys({} keys)", self.keys.len())
    }
}

/// What `authenticate` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Authenticated<'a> {
    Key { caller: Caller, grants: &'a Grants },
    Unknown,
}

/// Words that mark a key as a placeholder left in place (`change-me`, the example file's
/// `replace-with-…`), compared without case. None can occur in `openssl rand -hex` output.
const PLACEHOLDERS: [&str; 9] = [
    "change-me",
    "change_me",
    "changeme",
    "replace",
    "placeholder",
    "example",
    "your-key",
    "your_key",
    "yourkey",
];

/// Whether `key` is a placeholder rather than a secret: it holds one of `PLACEHOLDERS`, or it is
/// one character repeated.
fn is_placeholder(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    let repeated = key
        .chars()
        .next()
        .is_some_and(|first| key.chars().all(|c| c == first));
    repeated || PLACEHOLDERS.iter().any(|word| lower.contains(word))
}

impl ApiKeys {
    /// Keys shorter than this are refused: a key is the whole of a caller's credential.
    pub const MIN_KEY_CHARS: usize = 16;

    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyFileError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|problem| KeyFileError::Invalid {
            path: path.to_owned(),
            problem,
        })
    }

    /// One key per line: `KEY`, `NAME:KEY`, or `NAME:KEY` followed by spaces and scopes; blank
    /// lines and `#` comments are skipped. A line without scopes may do everything. A key
    /// shorter than `MIN_KEY_CHARS`, a placeholder, or a key given twice is refused, naming the
    /// line and never the key.
    pub fn parse(text: &str) -> Result<Self, KeyLineError> {
        let mut keys: Vec<ApiKey> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let credential = words.next().ok_or(KeyLineError::Shape(number))?;
            let (name, key) = match credential.split_once(':') {
                Some((name, key)) => (Some(name.to_owned()), key),
                None => (None, credential),
            };
            if key.is_empty() || name.as_deref() == Some("") {
                return Err(KeyLineError::Shape(number));
            }
            if !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(KeyLineError::Unprintable(number));
            }
            if is_placeholder(key) {
                return Err(KeyLineError::Placeholder(number));
            }
            if key.len() < Self::MIN_KEY_CHARS {
                return Err(KeyLineError::TooShort { line: number });
            }
            let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
            if let Some(first) = keys.iter().find(|known| known.digest == digest) {
                let first = first.line;
                return Err(KeyLineError::Duplicate {
                    line: number,
                    first,
                });
            }
            let scopes = words
                .map(Scope::parse)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|scope| KeyLineError::Scope {
                    line: number,
                    scope,
                })?;
            keys.push(ApiKey {
                name,
                digest,
                line: number,
                grants: if scopes.is_empty() {
                    Grants::Unscoped
                } else {
                    Grants::Scoped(scopes)
                },
            });
        }
        if keys.is_empty() {
            return Err(KeyLineError::Empty);
        }
        Ok(Self { keys })
    }

    /// The caller presenting `key`, if any, with what it may do. Every configured key is
    /// compared, in constant time, so the time taken says nothing about which key (or how much
    /// of one) matched.
    pub fn authenticate(&self, key: &str) -> Authenticated<'_> {
        let presented: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = Authenticated::Unknown;
        for candidate in &self.keys {
            let difference = candidate
                .digest
                .iter()
                .zip(presented.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if difference == 0 {
                found = Authenticated::Key {
                    caller: Caller(candidate.name.clone()),
                    grants: &candidate.grants,
                };
            }
        }
        found
    }
}

/// Middleware for `/v1`: lets a request through with its `Caller` when its key's scopes allow
/// what it asks for; answers `401` without a valid key and `403 forbidden` beyond its scopes,
/// auditing refused writes with the caller.
pub async fn require_key(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(keys) = state.api_keys.as_deref() else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    let found = presented.map(|key| keys.authenticate(key));
    let (problem, caller) = match found {
        Some(Authenticated::Key { caller, grants }) => {
            let needs = Need::all_of(request.method(), request.uri().path(), request.headers());
            let Some(refused) = grants.refused(&needs) else {
                request.extensions_mut().insert(caller);
                return next.run(request).await;
            };
            let who = caller.0.as_deref().unwrap_or("this key");
            // Decided before the write is, so the answer is the same whatever the token and
            // whatever the lease holds: it reveals nothing of the lease's generations.
            let detail = match refused {
                Need::FenceWithLease(lease) => format!(
                    "the scopes of {who:?} do not allow writing with Fencing-Lease {:?}",
                    String::from_utf8_lossy(lease)
                ),
                _ => format!(
                    "the scopes of {who:?} do not allow {} {}",
                    request.method(),
                    request.uri().path()
                ),
            };
            (Problem::new(ProblemType::Forbidden, detail), caller.0)
        }
        Some(Authenticated::Unknown) => (
            Problem::new(ProblemType::Unauthorized, "the API key is not valid"),
            None,
        ),
        None => (
            Problem::new(
                ProblemType::Unauthorized,
                "an API key is required: send Authorization: Bearer KEY",
            ),
            None,
        ),
    };
    refuse(&state, request, problem, caller).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_anonymous_keys() {
        let keys =
            ApiKeys::parse("# ops\nalice:k-alice-1-5b0e9d27c4\n\nk-anon-2-8a61f3c0d9e2\n").unwrap();
        assert_eq!(
            keys.authenticate("k-alice-1-5b0e9d27c4"),
            Authenticated::Key {
                caller: Caller(Some("alice".into())),
                grants: &Grants::Unscoped
            }
        );
        assert_eq!(
            keys.authenticate("k-anon-2-8a61f3c0d9e2"),
            Authenticated::Key {
                caller: Caller(None),
                grants: &Grants::Unscoped
            }
        );
        assert_eq!(
            keys.authenticate("k-alice-1-5b0e9d27c"),
            Authenticated::Unknown
        );
        assert_eq!(keys.authenticate(""), Authenticated::Unknown);
        assert!(
            !format!("{keys:?}").contains("k-alice-1-5b0e9d27c4"),
            "keys never reach logs"
        );
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(ApiKeys::parse("").is_err());
        assert!(ApiKeys::parse("# only comments\n").is_err());
        assert!(ApiKeys::parse("name:").is_err());
        assert!(ApiKeys::parse(":key").is_err());
        assert!(ApiKeys::parse("has space").is_err(), "space is not a scope");
        assert_eq!(
            ApiKeys::parse("ok:k1-0c8f2b6e1d9a73 read\nbad:k2-0c8f2b6e1d9a73 read wrte\n")
                .unwrap_err(),
            KeyLineError::Scope {
                line: 2,
                scope: UnknownScope("wrte".into())
            }
        );
        assert!(ApiKeys::parse("bad:k2-0c8f2b6e1d9a73 write=").is_err());
    }

    #[test]
    fn scopes_follow_the_key() {
        let keys = ApiKeys::parse(
            "worker:k-w-3f9a1c6e0b2d8 write=billing/ lease=billing/\ndash:k-d-3f9a1c6e0b2d8   read\nops:k-o-3f9a1c6e0b2d8 admin\n",
        )
        .unwrap();
        let grants_of = |key: &str| match keys.authenticate(key) {
            Authenticated::Key { grants, .. } => grants.clone(),
            Authenticated::Unknown => panic!("{key} is configured"),
        };
        assert_eq!(
            grants_of("k-w-3f9a1c6e0b2d8"),
            Grants::Scoped(vec![
                Scope::Write("billing/".into()),
                Scope::Lease("billing/".into())
            ])
        );
        assert_eq!(
            grants_of("k-d-3f9a1c6e0b2d8"),
            Grants::Scoped(vec![Scope::Read])
        );
        assert_eq!(
            grants_of("k-o-3f9a1c6e0b2d8"),
            Grants::Scoped(vec![Scope::Admin])
        );
    }

    #[test]
    fn weak_keys_are_refused_naming_the_line_never_the_key() {
        let strong = "0f4c9a2e7b1d6358";
        let refused = [
            (
                format!("a:{strong}\nb:{strong} read\n"),
                KeyLineError::Duplicate { line: 2, first: 1 },
            ),
            (
                format!("# comment\n\n{strong}\nb:{strong}\n"),
                KeyLineError::Duplicate { line: 4, first: 3 },
            ),
            (
                format!("a:{strong}\nb:fw-15-chars-key\n"),
                KeyLineError::TooShort { line: 2 },
            ),
            (
                "a:change-me-change-me-1234\n".to_owned(),
                KeyLineError::Placeholder(1),
            ),
            (
                "a:CHANGEME0123456789\n".to_owned(),
                KeyLineError::Placeholder(1),
            ),
            (
                "worker:replace-with-a-long-random-key write\n".to_owned(),
                KeyLineError::Placeholder(1),
            ),
            (
                "a:your-key-goes-in-here\n".to_owned(),
                KeyLineError::Placeholder(1),
            ),
            (
                "a:aaaaaaaaaaaaaaaaaaaa\n".to_owned(),
                KeyLineError::Placeholder(1),
            ),
            ("a:change-me\n".to_owned(), KeyLineError::Placeholder(1)),
        ];
        for (text, expected) in refused {
            let error = ApiKeys::parse(&text).unwrap_err();
            assert_eq!(error, expected, "{text}");
            let shown = error.to_string();
            assert!(shown.contains("openssl rand -hex 32"), "{shown}");
            for key in text
                .lines()
                .filter_map(|line| line.split_whitespace().next())
                .map(|credential| credential.rsplit(':').next().unwrap_or(credential))
                .filter(|key| !key.is_empty() && !key.starts_with('#'))
            {
                assert!(!shown.contains(key), "{shown} shows {key}");
            }
        }
        // Exactly the minimum is enough; one character less is not.
        assert!(ApiKeys::parse(&format!("a:{strong}\n")).is_ok());
        assert_eq!(
            ApiKeys::parse(&format!("a:{}\n", &strong[1..])).unwrap_err(),
            KeyLineError::TooShort { line: 1 }
        );
    }

    #[test]
    fn the_example_key_file_is_refused_as_shipped() {
        let example = include_str!("../../assets/api-keys.example");
        assert!(matches!(
            ApiKeys::parse(example),
            Err(KeyLineError::Placeholder(_))
        ));
    }
}
