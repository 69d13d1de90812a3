//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 description. The source is
//! `docs/openapi.yaml`, embedded at build time and converted to JSON once, on first use.

use super::problem::Problem;
use super::AppState;
use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::LazyLock;

/// The description as written, in YAML.
pub const YAML: &str = include_str!("../../docs/openapi.yaml");

pub const PATH: &str = "/v1/openapi.json";

/// Why the embedded description could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("docs/openapi.yaml is not a valid YAML document: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("docs/openapi.yaml cannot be written as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

struct Spec {
    document: serde_json::Value,
    json: Bytes,
}

static SPEC: LazyLock<Result<Spec, SpecError>> = LazyLock::new(|| {
    let document = parse(YAML)?;
    let json = Bytes::from(serde_json::to_vec(&document)?);
    Ok(Spec { document, json })
});

/// Parses an OpenAPI description written in YAML into its JSON value.
pub fn parse(yaml: &str) -> Result<serde_json::Value, SpecError> {
    Ok(serde_yaml_ng::from_str(yaml)?)
}

/// The embedded description, as the JSON value `GET /v1/openapi.json` serves.
pub fn document() -> Result<&'static serde_json::Value, &'static SpecError> {
    SPEC.as_ref().map(|spec| &spec.document)
}

pub fn router() -> Router<AppState> {
    Router::new().route(PATH, get(serve))
}

async fn serve() -> Response {
    match SPEC.as_ref() {
        Ok(spec) => {
            let mut response = (StatusCode::OK, spec.json.clone()).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => {
            Problem::internal_because(format!("cannot serve the OpenAPI description: {error}"))
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_description_parses() {
        let document = document().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(document["openapi"], "3.1.0");
        assert!(document["paths"][PATH]["get"].is_object());
    }

    #[test]
    fn a_broken_description_is_an_error_not_a_panic() {
        assert!(matches!(parse("paths: [unclosed"), Err(SpecError::Yaml(_))));
    }
}
