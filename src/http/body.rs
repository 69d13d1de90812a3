//! Request bodies. Every body is read under `--body-read-timeout`, counted from when its
//! request's headers were read, whichever route it goes to (`read_deadline` wraps it before any
//! handler runs); and handlers read bodies through `read_limited`, which tells a body that
//! stalled (`408`) from one too large (`413`) or broken (`400`).

use super::problem::Problem;
use super::AppState;
use crate::api::problem::ProblemType;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::{Body as _, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// A body that did not arrive within the read timeout.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive within {}", humantime::format_duration(*.0))]
pub struct BodyReadTimedOut(pub Duration);

/// A request body that fails with `BodyReadTimedOut` once its deadline has passed while it
/// waits for bytes. The timer is made only when the body first has to wait.
struct DeadlineBody {
    inner: Body,
    timeout: Duration,
    deadline: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl hyper::body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Some(Err(axum::Error::new(BodyReadTimedOut(this.timeout)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Middleware: puts every request's body (an empty one has nothing to wait for) under the
/// daemon's body read timeout, from now.
pub(super) async fn read_deadline(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let timeout = state.service.limits().body_read_timeout;
    let request = request.map(|body| {
        if body.is_end_stream() {
            return body;
        }
        Body::new(DeadlineBody {
            inner: body,
            timeout,
            deadline: Instant::now() + timeout,
            timer: None,
        })
    });
    next.run(request).await
}

/// Why a body could not be read whole.
#[derive(Debug)]
pub enum BodyError {
    /// Longer than the limit: announced so (`declared`, refused unread) or found so.
    TooLarge { limit: usize, declared: Option<u64> },
    /// It stalled past the read timeout: `408`.
    TimedOut(BodyReadTimedOut),
    /// The connection failed or the framing was broken.
    Unreadable(String),
}

impl BodyError {
    /// The problem to answer, saying of a body too large what `too_large` says.
    pub fn problem(&self, too_large: impl FnOnce(usize) -> String) -> Problem {
        match self {
            BodyError::TooLarge { limit, .. } => {
                Problem::new(ProblemType::PayloadTooLarge, too_large(*limit))
            }
            BodyError::TimedOut(timed_out) => {
                Problem::new(ProblemType::RequestTimeout, timed_out.to_string())
            }
            BodyError::Unreadable(detail) => Problem::invalid_request(detail.clone()),
        }
    }
}

/// Reads `body` whole, at most `limit` bytes; a `Content-Length` over the limit is refused
/// before a byte is read.
pub async fn read_limited(
    content_length: Option<u64>,
    body: Body,
    limit: usize,
) -> Result<Bytes, BodyError> {
    if let Some(declared) = content_length.filter(|length| *length > limit as u64) {
        return Err(BodyError::TooLarge {
            limit,
            declared: Some(declared),
        });
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|error| classify(&error, limit))
}

/// The declared `Content-Length`, if it is a number.
pub fn content_length(headers: &axum::http::HeaderMap) -> Option<u64> {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

fn classify(error: &axum::Error, limit: usize) -> BodyError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if current.is::<http_body_util::LengthLimitError>() {
            return BodyError::TooLarge {
                limit,
                declared: None,
            };
        }
        if let Some(timed_out) = current.downcast_ref::<BodyReadTimedOut>() {
            return BodyError::TimedOut(*timed_out);
        }
        cause = current.source();
    }
    if error.to_string().contains("length limit") {
        return BodyError::TooLarge {
            limit,
            declared: None,
        };
    }
    BodyError::Unreadable(format!("failed to read the request body: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{stream, StreamExt as _};

    fn stalled_after(first: &'static [u8]) -> Body {
        let chunks = stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(first))])
            .chain(stream::pending());
        Body::from_stream(chunks)
    }

    fn with_deadline(body: Body, timeout: Duration) -> Body {
        Body::new(DeadlineBody {
            inner: body,
            timeout,
            deadline: Instant::now() + timeout,
            timer: None,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_times_out_and_says_so() {
        let body = with_deadline(stalled_after(b"{\"holder\""), Duration::from_secs(10));
        let started = Instant::now();
        let error = read_limited(None, body, 1024).await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(matches!(error, BodyError::TimedOut(_)), "{error:?}");
        let problem = error.problem(|_| unreachable!());
        assert_eq!(problem.status().as_u16(), 408);
        assert_eq!(problem.kind.slug(), "request-timeout");
        assert_eq!(problem.detail, "the request body did not arrive within 10s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_whole_body_is_read_and_a_long_one_refused() {
        let body = with_deadline(Body::from("value"), Duration::from_secs(1));
        assert_eq!(read_limited(Some(5), body, 8).await.unwrap(), "value");
        let long = with_deadline(Body::from("far too long"), Duration::from_secs(1));
        assert!(matches!(
            read_limited(None, long, 8).await,
            Err(BodyError::TooLarge {
                limit: 8,
                declared: None
            })
        ));
        let announced = with_deadline(stalled_after(b""), Duration::from_secs(1));
        assert!(matches!(
            read_limited(Some(1 << 40), announced, 8).await,
            Err(BodyError::TooLarge {
                declared: Some(_),
                ..
            })
        ));
    }
}
