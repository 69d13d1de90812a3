//! Reads a PUT's headers and body into a `FencedWrite`, or says what is wrong with them while
//! keeping every part that could be read, for the audit.

use super::body::{content_length, read_limited, BodyError};
use crate::domain::authority::ExternalLock;
use crate::domain::Outcome;
use crate::domain::{
    sha256_hex, FencedWrite, FencingToken, IdempotencyKey, LeaseName, OwnerLabel, ParseError,
    RefusedAttempt, ResourceKey, Revision,
};
use axum::body::Body;
use axum::http::{header, HeaderMap};

pub const FENCING_TOKEN: &str = "fencing-token";
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const FENCING_OWNER: &str = "fencing-owner";
pub const FENCING_LEASE: &str = "fencing-lease";

/// Why a PUT was refused before the fence was consulted.
pub enum Refusal {
    Invalid(String),
    TooLarge(String),
    /// The body stalled past `--body-read-timeout`.
    TimedOut(String),
}

/// The value of a header that may appear at most once.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ParseError> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ParseError(format!("{name} must be given once")));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| ParseError(format!("{name} must be printable ASCII")))
}

fn optional<T>(
    headers: &HeaderMap,
    name: &str,
    parse: impl FnOnce(&str) -> Result<T, ParseError>,
) -> Result<Option<T>, ParseError> {
    single(headers, name)?.map(parse).transpose()
}

/// The lease a write's `Fencing-Lease` names, as the write will be checked against it; `None`
/// without the header or with one that the write's parser refuses.
pub fn named_lease(headers: &HeaderMap) -> Option<LeaseName> {
    lease_header(headers).ok().flatten()
}

fn lease_header(headers: &HeaderMap) -> Result<Option<LeaseName>, ParseError> {
    optional(headers, FENCING_LEASE, LeaseName::parse)
}

/// The write's headers, each parsed on its own so that a refusal can keep the parts that
/// were fine.
struct WriteHeaders {
    token: Result<FencingToken, ParseError>,
    idempotency_key: Result<Option<IdempotencyKey>, ParseError>,
    expected_revision: Result<Option<Revision>, ParseError>,
    owner: Result<Option<OwnerLabel>, ParseError>,
    lease: Result<Option<LeaseName>, ParseError>,
    content_type: Result<Option<String>, ParseError>,
}

impl WriteHeaders {
    fn read(headers: &HeaderMap) -> Self {
        Self {
            token: single(headers, FENCING_TOKEN).and_then(|value| {
                value
                    .ok_or_else(|| ParseError("Fencing-Token header is required".into()))
                    .and_then(FencingToken::parse)
            }),
            idempotency_key: optional(headers, IDEMPOTENCY_KEY, IdempotencyKey::parse_header),
            expected_revision: optional(
                headers,
                header::IF_MATCH.as_str(),
                Revision::parse_if_match,
            ),
            owner: optional(headers, FENCING_OWNER, OwnerLabel::parse),
            lease: lease_header(headers),
            content_type: single(headers, header::CONTENT_TYPE.as_str())
                .map(|value| value.map(str::to_owned)),
        }
    }

    /// The attempt as the audit records a refusal: the valid parts, none of the invalid ones.
    fn refused(
        &self,
        key: ResourceKey,
        outcome: Outcome,
        detail: String,
        caller: Option<String>,
    ) -> RefusedAttempt {
        fn valid<T>(
            parsed: &Result<Option<T>, ParseError>,
            text: impl Fn(&T) -> String,
        ) -> Option<String> {
            parsed.as_ref().ok().and_then(Option::as_ref).map(text)
        }
        RefusedAttempt {
            key,
            outcome,
            token: self.token.as_ref().ok().map(|t| t.get()),
            idempotency_key: valid(&self.idempotency_key, |k| k.as_str().to_owned()),
            expected_revision: self
                .expected_revision
                .as_ref()
                .ok()
                .and_then(Option::as_ref)
                .map(|r| r.get()),
            owner: valid(&self.owner, |o| o.as_str().to_owned()),
            lease: valid(&self.lease, |l| l.as_str().to_owned()),
            body_sha256: None,
            body_len: None,
            detail,
            caller,
        }
    }
}

/// Request headers beyond this many bytes in all are refused: they are read into memory whole.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Why the request's headers are refused as too large, if they are.
pub fn oversized_headers(headers: &HeaderMap) -> Option<String> {
    let size: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    (size > MAX_HEADER_BYTES)
        .then(|| format!("the request headers are {size} bytes; the limit is {MAX_HEADER_BYTES}"))
}

/// Parses the write, whose value may have at most `max_bytes`; on a refusal, returns the
/// attempt to audit along with the reason. The body is read under the daemon's body read
/// timeout (`body::read_deadline`): a stalled one is refused, audited, as `TimedOut`.
pub async fn parse(
    key: ResourceKey,
    headers: &HeaderMap,
    body: Body,
    max_bytes: usize,
    caller: Option<String>,
) -> Result<FencedWrite, (RefusedAttempt, Refusal)> {
    let parsed_headers = WriteHeaders::read(headers);
    let body = read_limited(content_length(headers), body, max_bytes).await;
    let mut refused =
        parsed_headers.refused(key.clone(), Outcome::Invalid, String::new(), caller.clone());
    refused.body_sha256 = body.as_ref().ok().map(|b| sha256_hex(b));
    refused.body_len = match &body {
        Ok(bytes) => i64::try_from(bytes.len()).ok(),
        Err(BodyError::TooLarge { declared, .. }) => declared.and_then(|d| i64::try_from(d).ok()),
        Err(BodyError::TimedOut(_) | BodyError::Unreadable(_)) => None,
    };
    let WriteHeaders {
        token,
        idempotency_key,
        expected_revision,
        owner,
        lease,
        content_type,
    } = parsed_headers;
    // Checked in the order the contract lists the headers, then the body.
    let invalid = |error: ParseError| Refusal::Invalid(error.0);
    let parsed = (|| {
        oversized_headers(headers).map_or(Ok(()), |detail| Err(Refusal::Invalid(detail)))?;
        let token = token.map_err(invalid)?;
        let idempotency_key = idempotency_key.map_err(invalid)?;
        let expected_revision = expected_revision.map_err(invalid)?;
        let owner = owner.map_err(invalid)?;
        let lease = lease.map_err(invalid)?;
        if let Some(Err(error)) = lease.as_ref().and_then(ExternalLock::from_lease) {
            return Err(invalid(error));
        }
        let content_type = content_type.map_err(invalid)?;
        let body = body.map_err(|error| match error {
            BodyError::TooLarge { limit, .. } => Refusal::TooLarge(format!(
                "the value is larger than the limit of {limit} bytes"
            )),
            BodyError::TimedOut(timed_out) => Refusal::TimedOut(timed_out.to_string()),
            BodyError::Unreadable(message) => Refusal::Invalid(message),
        })?;
        let mut write = FencedWrite::new(key, token, body);
        write.idempotency_key = idempotency_key;
        write.expected_revision = expected_revision;
        write.owner = owner;
        write.lease = lease;
        write.content_type = content_type;
        write.caller = caller;
        Ok(write)
    })();
    parsed.map_err(|refusal| {
        refused.detail = match &refusal {
            Refusal::Invalid(detail) | Refusal::TooLarge(detail) | Refusal::TimedOut(detail) => {
                detail.clone()
            }
        };
        (refused, refusal)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use proptest::prelude::*;

    fn parse_blocking(
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<FencedWrite, Box<RefusedAttempt>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime
            .block_on(parse(
                ResourceKey::parse("fuzz/target").unwrap(),
                headers,
                Body::from(body),
                64,
                None,
            ))
            .map_err(|(attempt, _)| Box::new(attempt))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        /// Any bytes in any of the contract's headers, any body: the parser answers (never
        /// panics), accepts only what each header's grammar allows, and a refusal keeps what
        /// could be read of the attempt for the audit.
        #[test]
        fn any_request_is_parsed_or_refused(
            token in proptest::option::of(prop_oneof![
                (1i64..1_000_000).prop_map(|n| n.to_string().into_bytes()),
                proptest::collection::vec(any::<u8>(), 0..24),
            ]),
            others in proptest::collection::vec(
                proptest::option::of(prop_oneof![
                    "[a-z0-9-]{1,12}".prop_map(String::into_bytes),
                    proptest::collection::vec(any::<u8>(), 0..40),
                ]),
                5,
            ),
            body in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let names = [
                FENCING_TOKEN,
                IDEMPOTENCY_KEY,
                "if-match",
                FENCING_OWNER,
                FENCING_LEASE,
                "content-type",
            ];
            let mut headers = HeaderMap::new();
            let values = std::iter::once(token).chain(others);
            for (name, value) in names.iter().zip(values) {
                if let Some(value) = value.as_ref().and_then(|v| HeaderValue::from_bytes(v).ok()) {
                    headers.insert(*name, value);
                }
            }
            let token_header = headers
                .get(FENCING_TOKEN)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match parse_blocking(&headers, body.clone()) {
                Ok(write) => {
                    prop_assert_eq!(Some(write.token.to_string()), token_header);
                    prop_assert!(body.len() <= 64);
                    prop_assert_eq!(&write.body()[..], &body[..]);
                    prop_assert_eq!(write.body_sha256(), sha256_hex(&body));
                }
                Err(attempt) => {
                    prop_assert_eq!(attempt.key.as_str(), "fuzz/target");
                    prop_assert_eq!(attempt.outcome, Outcome::Invalid);
                }
            }
        }
    }
}
