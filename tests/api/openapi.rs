//! `docs/openapi.yaml` against the daemon: served as JSON, in step with the router (every
//! documented operation is routed, every route is documented), naming every problem type and
//! outcome, and held to by schemathesis, a property-based client, against the real binary.

use crate::helpers::{Backend, Daemon, Reply, TestApp};
use crate::test_db;
use fencewatch::api::events::EventKind;
use fencewatch::api::problem::ProblemType;
use fencewatch::domain::Outcome;
use fencewatch::http::auth::ApiKeys;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

const YAML: &str = include_str!("../../docs/openapi.yaml");

/// The routes the router serves, as the description names them: (method, path template).
/// A route added to the router must be added here and to docs/openapi.yaml.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/v1/resources/{key}"),
    ("put", "/v1/resources/{key}"),
    ("post", "/v1/resources/{key}/reset"),
    ("get", "/v1/audit"),
    ("get", "/v1/events"),
    ("get", "/v1/overlaps"),
    ("get", "/v1/overlaps/{id}/report"),
    ("get", "/v1/stats"),
    ("get", "/v1/alerts"),
    ("post", "/v1/leases/{name}/acquire"),
    ("post", "/v1/leases/{name}/renew"),
    ("post", "/v1/leases/{name}/release"),
    ("get", "/v1/leases/{name}"),
    ("get", "/v1/lease-history/{name}"),
    ("get", "/v1/openapi.json"),
    ("get", "/metrics"),
    ("get", "/healthz"),
    ("get", "/readyz"),
];

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "patch", "head", "options", "trace",
];

fn spec() -> Value {
    serde_yaml_ng::from_str(YAML).expect("docs/openapi.yaml parses")
}

/// Every (method, path template) the description documents.
fn documented(spec: &Value) -> BTreeSet<(String, String)> {
    let paths = spec["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            METHODS
                .iter()
                .filter(|method| item.get(**method).is_some())
                .map(move |method| (method.to_string(), path.clone()))
        })
        .collect()
}

/// A concrete path for a template, with example values (a key with a slash in it).
fn example_path(template: &str) -> String {
    template
        .replace("{key}", "openapi/probe")
        .replace("{name}", "openapi-probe")
        .replace("{id}", "1")
}

/// Sends `method` to `path` and returns the status and, for a problem, its detail. The body of
/// a stream is not read.
async fn probe(app: &TestApp, method: &str, path: &str) -> (u16, String) {
    let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
    let mut request = app
        .http
        .request(method.clone(), format!("{}{path}", app.base));
    if method == reqwest::Method::POST {
        request = request
            .header("content-type", "application/json")
            .body("{}");
    }
    if method == reqwest::Method::PUT {
        request = request.header("fencing-token", "1").body("probe");
    }
    let response = tokio::time::timeout(Duration::from_secs(10), request.send())
        .await
        .expect("an answer within 10 s")
        .expect("send");
    let status = response.status().as_u16();
    if response
        .headers()
        .get("content-type")
        .is_some_and(|ct| ct.as_bytes().starts_with(b"text/event-stream"))
    {
        return (status, String::new());
    }
    let reply = Reply::from(response).await;
    (
        status,
        reply.json["detail"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test]
async fn every_documented_operation_is_routed_and_every_route_documented() {
    let spec = spec();
    let documented = documented(&spec);
    let known: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(
        documented, known,
        "docs/openapi.yaml and the routes this test knows differ"
    );

    let db = test_db!(Backend::Sqlite);
    let app = TestApp::spawn(&db).await;
    for (method, template) in &documented {
        let path = example_path(template);
        let (status, detail) = probe(&app, method, &path).await;
        let unrouted = status == 405
            || detail.starts_with("no such endpoint")
            || detail.starts_with("unknown lease action");
        assert!(
            !unrouted,
            "{method} {template} is documented but the router answers {status} {detail:?}"
        );
        assert!(status < 500, "{method} {path}: {status} {detail}");
    }
    // And something undocumented is not routed, so the probe can tell.
    let (status, detail) = probe(&app, "get", "/v1/nothing-here").await;
    assert_eq!(
        (status, detail.starts_with("no such endpoint")),
        (404, true)
    );
    let (status, _) = probe(&app, "delete", "/v1/stats").await;
    assert_eq!(status, 405);
}

/// The `.route("PATH", get(…).put(…))` calls of src/http/*.rs, as (path, methods).
fn routes_in_source() -> Vec<(String, Vec<String>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut routes = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/http") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a source file");
        // The daemon's routes, not those a unit test builds for itself.
        let mut rest = text.split("#[cfg(test)]").next().unwrap_or_default();
        while let Some(at) = rest.find(".route(") {
            rest = &rest[at + ".route(".len()..];
            let call = &rest[..rest.find('\n').unwrap_or(rest.len())];
            let route = if let Some(literal) = call.trim_start().strip_prefix('"') {
                literal[..literal.find('"').expect("a closing quote")].to_owned()
            } else if call.trim_start().starts_with("PATH,") {
                // `openapi.rs` names its path in a constant.
                fencewatch::http::openapi::PATH.to_owned()
            } else {
                panic!(
                    "{}: a route whose path this test cannot read: {call}",
                    path.display()
                );
            };
            let methods = METHODS
                .iter()
                .filter(|m| call.contains(&format!(" {m}(")) || call.contains(&format!(".{m}(")))
                .map(|m| m.to_string())
                .collect();
            routes.push((route, methods));
        }
    }
    routes
}

#[test]
fn every_route_in_the_source_is_documented() {
    let documented = documented(&spec());
    let routes = routes_in_source();
    assert!(routes.len() >= 12, "found only {routes:?}");
    for (route, methods) in routes {
        assert!(!methods.is_empty(), "{route}: no methods found");
        // A catch-all (`{*key}`) or its empty form (`/v1/resources/`) is documented by the
        // templates under its prefix; any other route by its own template.
        let prefix = route.split("{*").next().unwrap_or_default();
        let catch_all = route.contains("{*") || route.ends_with('/');
        for method in methods {
            let covered = documented.iter().any(|(m, p)| {
                *m == method
                    && if catch_all {
                        p.starts_with(prefix) && p.len() > prefix.len()
                    } else {
                        *p == route
                    }
            });
            assert!(
                covered,
                "{} {route} is routed but not documented in docs/openapi.yaml",
                method.to_uppercase()
            );
        }
    }
}

/// The `type` names of every problem the daemon sends: its `ProblemType`s.
fn problem_types_in_source() -> BTreeSet<String> {
    ProblemType::ALL
        .iter()
        .map(|kind| kind.slug().to_owned())
        .collect()
}

fn string_enum(schema: &Value) -> BTreeSet<String> {
    schema["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

#[test]
fn the_description_names_every_problem_type_and_outcome() {
    let spec = spec();
    let in_source = problem_types_in_source();
    assert!(
        in_source.len() >= 19 && in_source.contains("internal"),
        "{in_source:?}"
    );
    let documented = string_enum(&spec["components"]["schemas"]["Problem"]["properties"]["type"]);
    assert_eq!(documented, in_source, "Problem.type in docs/openapi.yaml");

    let outcomes: BTreeSet<String> = Outcome::ALL.iter().map(|o| o.as_str().into()).collect();
    assert_eq!(
        string_enum(&spec["components"]["schemas"]["Outcome"]),
        outcomes,
        "Outcome in docs/openapi.yaml"
    );
}

/// Resolves a local `$ref` (`#/components/...`) against the description.
fn resolve<'a>(spec: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(pointer) => spec
            .pointer(pointer.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{pointer} is not in docs/openapi.yaml")),
        None => schema,
    }
}

#[test]
fn every_event_kind_has_its_data_described() {
    let spec = spec();
    let stream = &spec["paths"]["/v1/events"]["get"]["responses"]["200"]["content"]
        ["text/event-stream"]["schema"];
    let one_of = resolve(&spec, stream)["oneOf"]
        .as_array()
        .expect("the event schema is a oneOf, one per kind");
    let mut documented = BTreeSet::new();
    for kind_schema in one_of {
        let kind_schema = resolve(&spec, kind_schema);
        let name = kind_schema["properties"]["event"]["const"]
            .as_str()
            .expect("each kind's schema names its `event`")
            .to_owned();
        let data = &kind_schema["properties"]["data"];
        assert_eq!(data["contentMediaType"], "application/json", "{name}");
        assert!(
            data["contentSchema"].is_object(),
            "{name}: no contentSchema"
        );
        assert!(documented.insert(name.clone()), "{name} is described twice");
    }
    let kinds: BTreeSet<String> = EventKind::ALL
        .iter()
        .map(|kind| kind.name().to_owned())
        .collect();
    assert_eq!(documented, kinds, "the event kinds of docs/openapi.yaml");
}

#[tokio::test]
async fn the_description_is_served_as_json_with_the_read_scope() {
    let db = test_db!(Backend::Sqlite);
    let app = TestApp::spawn(&db).await;
    let reply = app.get("/v1/openapi.json").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type(), "application/json");
    assert_eq!(reply.json, spec(), "the served JSON is the YAML");
    assert_eq!(
        fencewatch::http::openapi::document().ok(),
        Some(&spec()),
        "the embedded description"
    );

    let keys =
        ApiKeys::parse("dash:k-read-5e1f0a9c3b read\nworker:k-write-5e1f0a9c3b write\n").unwrap();
    let db = test_db!(Backend::Sqlite);
    let app = TestApp::on(&db).keys(Arc::new(keys)).spawn().await;
    let get = |key: Option<&'static str>| {
        let mut request = app.http.get(format!("{}/v1/openapi.json", app.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        async move { Reply::from(request.send().await.unwrap()).await }
    };
    get(None).await.assert_problem(401, "unauthorized");
    get(Some("k-write-5e1f0a9c3b"))
        .await
        .assert_problem(403, "forbidden");
    let reply = get(Some("k-read-5e1f0a9c3b")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json, spec());
}

/// Schemathesis generates requests from the served description for about a minute, valid and
/// invalid, and fails on any 5xx, any status, content type or header the description does not
/// give for the operation, and any body that does not match its schema: for `/v1/events`, each
/// event of the stream (its SSE fields, and its data against the kind's `contentSchema`).
#[cfg_attr(
    not(fencewatch_schemathesis),
    ignore = "needs schemathesis on the PATH (pip install schemathesis)"
)]
#[tokio::test]
async fn schemathesis_finds_nothing_the_description_does_not_allow() {
    let db = test_db!(Backend::Sqlite);
    // Watching a database of the user's with an overlap in it, so that the answers carry the
    // members only watched rows have (`source`, `sources`).
    let (user, _fence) = crate::helpers::UserDb::with_protected_orders(Backend::Sqlite).await;
    user.run(
        "INSERT INTO orders (id, tok, region, val, op, who) VALUES (1, 8, 'eu', 'a', 'o8', 'new'); \
         UPDATE orders SET tok = 7, val = 'b', op = 'o7', who = 'old' WHERE id = 1",
    )
    .await;
    let watch = format!("shop={}", user.url);
    let daemon = Daemon::spawn(&db, &["--watch", &watch]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !crate::helpers::http_client()
        .get(format!("{}/v1/overlaps", daemon.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains("\"source\":\"shop\"")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the watched overlap never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let work = tempfile::tempdir().unwrap();
    // The stream does not end: schemathesis reads an event stream until it has read
    // `max-stream-events` events (or the request timeout passes) and validates each of them.
    // Three keep a call to about a second: `stats` comes at once and then each second, the
    // `write`s a `Last-Event-ID` missed at once, `overlap`s twice a second while the stale
    // writes below go on.
    std::fs::write(
        work.path().join("schemathesis.toml"),
        "[[operations]]\ninclude-path = \"/v1/events\"\nmax-stream-events = 3\n",
    )
    .unwrap();
    // Stale writes all along, so that a stream carries `overlap` events (the overlap grows)
    // and the stale-owner alert fires.
    let stale_writes = tokio::spawn(stale_writes_to(daemon.base.clone()));
    let started = std::time::Instant::now();
    let run = tokio::process::Command::new("schemathesis")
        .current_dir(work.path())
        .args([
            "run",
            &format!("{}/v1/openapi.json", daemon.base),
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance",
            "--max-time",
            "50",
            // One worker: CPython 3.11 fails parsing source in two threads at once ("AST
            // constructor recursion depth mismatch"), which schemathesis reports as an error.
            "--workers",
            "1",
            "--request-timeout",
            "10",
            "--generation-database",
            "none",
            "--no-color",
        ])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("schemathesis ends within 240 s")
        .expect("run schemathesis");
    stale_writes.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "schemathesis failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout.contains("Configuration:") && stdout.contains("schemathesis.toml"),
        "schemathesis did not read its configuration (the stream's event count):\n{stdout}"
    );
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(" generated, ") || line.starts_with("Seed:"))
        .collect();
    assert!(!summary.is_empty(), "no summary:\n{stdout}");
    println!(
        "schemathesis in {:.0?}: {}",
        started.elapsed(),
        summary.join("; ")
    );
    assert!(daemon.terminate().await, "the daemon stops cleanly");
}

/// A newer generation's write to `openapi/stream`, then an older one's every 200 ms.
async fn stale_writes_to(base: String) {
    let http = crate::helpers::http_client();
    let url = format!("{base}/v1/resources/openapi/stream");
    let put = |token: &'static str| {
        http.put(&url)
            .header("fencing-token", token)
            .body("v")
            .send()
    };
    let _ = put("9").await;
    loop {
        let _ = put("8").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
