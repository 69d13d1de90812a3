//! Who may do what: scoped API keys, the daemon's reserved lease names, lease bodies that a
//! browser cannot send across origins, and the Origin guard with its CORS answers. Every
//! refusal is a problem, and none of them changes anything.

use crate::both_backends;
use crate::helpers::{Backend, Reply, TestApp};
use crate::test_db;
use fencewatch::http::auth::ApiKeys;
use fencewatch::http::origin::AllowedOrigins;
use fencewatch::http::Access;
use rstest_reuse::apply;
use serde_json::{json, Value};
use std::sync::Arc;

const KEYS: &str = "\
# a worker, a dashboard, an operator, and a key from before scopes
billing-worker:k-worker-5e1f0a9c3b write=billing/ lease=billing/
ops-dashboard:k-dashboard-5e1f0a9c3b read
operator:k-operator-5e1f0a9c3b admin
legacy:k-legacy-5e1f0a9c3b
";

struct Caller<'a> {
    app: &'a TestApp,
    key: Option<&'a str>,
}

impl Caller<'_> {
    fn with(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    async fn put(&self, resource: &str, token: i64) -> Reply {
        let request = self
            .app
            .http
            .put(format!("{}/v1/resources/{resource}", self.app.base))
            .header("Fencing-Token", token.to_string())
            .body("value");
        Reply::from(self.with(request).send().await.unwrap()).await
    }

    async fn get(&self, path: &str) -> Reply {
        let request = self.app.http.get(format!("{}{path}", self.app.base));
        Reply::from(self.with(request).send().await.unwrap()).await
    }

    async fn lease(&self, name: &str, action: &str, body: Value) -> Reply {
        let request = self
            .app
            .http
            .post(format!("{}/v1/leases/{name}/{action}", self.app.base))
            .json(&body);
        Reply::from(self.with(request).send().await.unwrap()).await
    }
}

async fn keyed_app(db: &crate::helpers::TestDb) -> TestApp {
    let keys = Arc::new(ApiKeys::parse(KEYS).unwrap());
    TestApp::on(db).keys(keys).spawn().await
}

/// The audit rows of a resource, newest first (read with the operator's key).
async fn audit_rows(app: &TestApp, resource: &str) -> Vec<Value> {
    let operator = Caller {
        app,
        key: Some("k-operator-5e1f0a9c3b"),
    };
    let reply = operator
        .get(&format!(
            "/v1/audit?resource={}",
            crate::helpers::encode(resource)
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.json);
    reply.json["entries"].as_array().unwrap().clone()
}

/// A write refused before the fence (v4): counted in aggregate (`tests/api/refusals.rs`), not
/// audited row by row, and answered with a plain problem, without the write members. It was
/// one audit row each up to v3, which let a caller without a key take the resource's row lock.
fn counted_not_audited(reply: &Reply) {
    assert!(
        reply.json.get("audit_id").is_none() && reply.json.get("outcome").is_none(),
        "{}",
        reply.json
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn each_key_does_what_its_scopes_allow_and_nothing_more(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = keyed_app(&db).await;
    let worker = Caller {
        app: &app,
        key: Some("k-worker-5e1f0a9c3b"),
    };
    let dashboard = Caller {
        app: &app,
        key: Some("k-dashboard-5e1f0a9c3b"),
    };
    let legacy = Caller {
        app: &app,
        key: Some("k-legacy-5e1f0a9c3b"),
    };

    // The worker: its own leases and resources.
    let lease = worker
        .lease(
            "billing/leader",
            "acquire",
            json!({"holder": "w1", "ttl_ms": 60000}),
        )
        .await;
    assert_eq!(lease.status, 200, "{}", lease.json);
    assert_eq!(worker.put("billing/totals", 1).await.status, 201);
    assert_eq!(worker.get("/v1/resources/billing/totals").await.status, 200);
    assert_eq!(
        worker.put("billing%2Fencoded", 1).await.status,
        201,
        "the prefix is matched on the decoded key"
    );
    // … and nobody else's.
    let foreign = worker.put("payroll/run", 1).await;
    foreign.assert_problem(403, "forbidden");
    counted_not_audited(&foreign);
    assert!(audit_rows(&app, "payroll/run").await.is_empty());
    worker
        .lease(
            "payroll",
            "acquire",
            json!({"holder": "w1", "ttl_ms": 60000}),
        )
        .await
        .assert_problem(403, "forbidden");
    worker
        .get("/v1/audit")
        .await
        .assert_problem(403, "forbidden");
    worker
        .get("/v1/events")
        .await
        .assert_problem(403, "forbidden");

    // The dashboard reads everything and changes nothing.
    for path in [
        "/v1/audit",
        "/v1/overlaps",
        "/v1/stats",
        "/v1/alerts",
        "/v1/resources/billing/totals",
        "/v1/leases/billing%2Fleader",
    ] {
        assert_eq!(dashboard.get(path).await.status, 200, "{path}");
    }
    let takeover = dashboard
        .lease(
            "billing%2Fleader",
            "acquire",
            json!({"holder": "dash", "ttl_ms": 1}),
        )
        .await;
    takeover.assert_problem(403, "forbidden");
    dashboard
        .lease(
            "billing%2Fleader",
            "release",
            json!({"holder": "w1", "token": 1}),
        )
        .await
        .assert_problem(403, "forbidden");
    let write = dashboard.put("billing/totals", 99).await;
    write.assert_problem(403, "forbidden");
    counted_not_audited(&write);
    let rows = audit_rows(&app, "billing/totals").await;
    assert!(
        rows.iter().all(|row| row["outcome"] == "accepted"),
        "{rows:?}"
    );

    // Nothing the refusals touched changed: the worker still holds generation 1, and the
    // resource still has its first value under generation 1.
    let held = dashboard.get("/v1/leases/billing%2Fleader").await;
    assert_eq!(held.json["holder"], "w1");
    assert_eq!(held.json["token"], 1);
    assert_eq!(held.json["state"], "held");
    let value = dashboard.get("/v1/resources/billing/totals").await;
    assert_eq!(value.header("fencing-token"), Some("1"));
    assert_eq!(value.header("etag"), Some("\"1\""));
    dashboard
        .get("/v1/leases/payroll")
        .await
        .assert_problem(404, "not-found");

    // A key line without scopes may do everything, as before scopes existed.
    assert_eq!(legacy.put("payroll/run", 2).await.status, 201);
    assert_eq!(legacy.get("/v1/audit").await.status, 200);
    let taken = legacy
        .lease("payroll", "acquire", json!({"holder": "l", "ttl_ms": 1000}))
        .await;
    assert_eq!(taken.status, 200, "{}", taken.json);

    // Without a key: 401, counted.
    let anonymous = Caller {
        app: &app,
        key: None,
    };
    let refused = anonymous.put("billing/totals", 5).await;
    refused.assert_problem(401, "unauthorized");
    counted_not_audited(&refused);
    // Health and metrics stay open.
    assert_eq!(anonymous.get("/healthz").await.status, 200);
    assert_eq!(anonymous.get("/metrics").await.status, 200);
}

#[apply(both_backends)]
#[tokio::test]
async fn the_daemons_own_leases_are_out_of_every_clients_reach(#[case] backend: Backend) {
    let db = test_db!(backend);
    for keys in [None, Some(Arc::new(ApiKeys::parse(KEYS).unwrap()))] {
        let app = TestApp::on(&db).keys(keys.clone()).spawn().await;
        // The operator's key may do everything else, but not this.
        let operator = Caller {
            app: &app,
            key: keys.as_ref().map(|_| "k-operator-5e1f0a9c3b"),
        };
        for name in [
            "fencewatch%2Falert-evaluator",
            "fencewatch%2Fanything",
            "fencewatch/alert-evaluator",
        ] {
            for (action, body) in [
                ("acquire", json!({"holder": "mallory", "ttl_ms": 86400000})),
                ("renew", json!({"holder": "mallory", "token": 1})),
                ("release", json!({"holder": "mallory", "token": 1})),
            ] {
                let reply = operator.lease(name, action, body).await;
                reply.assert_problem(403, "reserved-name");
            }
        }
        // The evaluator's lease is the daemon's, held by the daemon.
        let evaluator = operator
            .get("/v1/leases/fencewatch%2Falert-evaluator")
            .await;
        if evaluator.status == 200 {
            assert_ne!(evaluator.json["holder"], "mallory", "{}", evaluator.json);
        }
    }
}

#[apply(both_backends)]
#[tokio::test]
async fn lease_bodies_must_be_declared_json(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    let body = r#"{"holder":"page","ttl_ms":86400000}"#;
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut request = app
            .http
            .post(format!("{}/v1/leases/jobs/acquire", app.base))
            .body(body);
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let reply = Reply::from(request.send().await.unwrap()).await;
        reply.assert_problem(415, "unsupported-media-type");
    }
    app.get("/v1/leases/jobs")
        .await
        .assert_problem(404, "not-found");
    let accepted = Reply::from(
        app.http
            .post(format!("{}/v1/leases/jobs/acquire", app.base))
            .header("content-type", "Application/JSON; charset=utf-8")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(accepted.status, 200, "{}", accepted.json);
    assert_eq!(accepted.json["token"], 1);
}

async fn origin_app(db: &crate::helpers::TestDb) -> TestApp {
    let access = Access {
        api_keys: None,
        allowed_origins: AllowedOrigins::parse(&["http://ops.example:8080"]).unwrap(),
        ..Access::default()
    };
    TestApp::on(db).access(access).spawn().await
}

#[apply(both_backends)]
#[tokio::test]
async fn foreign_origins_are_refused_and_allowed_ones_get_cors(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = origin_app(&db).await;
    let from = |origin: &str, request: reqwest::RequestBuilder| request.header("Origin", origin);
    let write_from = |origin: &'static str, body: &'static str| {
        let request = app
            .http
            .put(format!("{}/v1/resources/doc", app.base))
            .header("Fencing-Token", "7")
            .header("Origin", origin)
            .body(body);
        async move { Reply::from(request.send().await.unwrap()).await }
    };

    // A page elsewhere: refused, whatever it asks, and nothing changes.
    let evil = "http://evil.example";
    for request in [
        app.http.get(format!("{}/v1/stats", app.base)),
        app.http.get(format!("{}/v1/events", app.base)),
        app.http
            .post(format!("{}/v1/leases/jobs/acquire", app.base))
            .json(&json!({"holder": "page", "ttl_ms": 1000})),
        app.http
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/v1/leases/jobs/acquire", app.base),
            )
            .header("Access-Control-Request-Method", "POST"),
    ] {
        let reply = Reply::from(from(evil, request).send().await.unwrap()).await;
        reply.assert_problem(403, "cross-origin");
        assert!(reply.header("access-control-allow-origin").is_none());
    }
    let write = write_from(evil, "from a page").await;
    write.assert_problem(403, "cross-origin");
    counted_not_audited(&write);
    assert!(write.json["detail"]
        .as_str()
        .unwrap()
        .contains("evil.example"));
    assert!(
        app.audit_of("doc").await.is_empty(),
        "the refused write is counted, not audited (v4)"
    );
    app.get("/v1/resources/doc")
        .await
        .assert_problem(404, "not-found");
    app.get("/v1/leases/jobs")
        .await
        .assert_problem(404, "not-found");

    // The allowed origin: a preflight answered, then the request itself with CORS headers.
    let allowed = "http://ops.example:8080";
    let preflight = from(
        allowed,
        app.http
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/v1/resources/doc", app.base),
            )
            .header("Access-Control-Request-Method", "PUT")
            .header(
                "Access-Control-Request-Headers",
                "fencing-token, idempotency-key, content-type",
            ),
    )
    .send()
    .await
    .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let header = |name: &str| {
        preflight
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    assert_eq!(header("access-control-allow-origin"), allowed);
    assert!(header("access-control-allow-methods").contains("put"));
    assert!(header("access-control-allow-headers").contains("fencing-token"));
    assert!(header("access-control-allow-headers").contains("idempotency-key"));

    let written = write_from(allowed, "from the ops page").await;
    assert_eq!(written.status, 201, "{}", written.json);
    assert_eq!(written.header("access-control-allow-origin"), Some(allowed));
    assert!(written
        .header("access-control-expose-headers")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .contains("etag"));

    // Requests without an Origin (curl, workers, Prometheus) are not affected.
    assert_eq!(app.get("/v1/stats").await.status, 200);
    assert_eq!(app.get("/metrics").await.status, 200);
}

/// A write naming one of the daemon's own leases (`Fencing-Lease: fencewatch/…`) would be
/// fenced by the alert evaluator's generation: any caller could write with it (the daemon's
/// token, which it never hands out, is 1 for the first evaluator). Refused `403 reserved-name`
/// before the fence, whatever the key or token: a plain problem (no token, no `audit_id`), no
/// audit row, nothing written, the daemon's lease untouched.
#[apply(both_backends)]
#[tokio::test]
async fn a_write_naming_a_reserved_lease_is_refused_and_changes_nothing(#[case] backend: Backend) {
    let db = test_db!(backend);
    for keys in [None, Some(Arc::new(ApiKeys::parse(KEYS).unwrap()))] {
        let app = TestApp::on(&db).keys(keys.clone()).spawn().await;
        let operator = Caller {
            app: &app,
            key: keys.as_ref().map(|_| "k-operator-5e1f0a9c3b"),
        };
        // The evaluator holds its lease: its generation is one a write could name.
        let mut evaluator = operator
            .get("/v1/leases/fencewatch%2Falert-evaluator")
            .await;
        for _ in 0..100 {
            if evaluator.status == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            evaluator = operator
                .get("/v1/leases/fencewatch%2Falert-evaluator")
                .await;
        }
        assert_eq!(evaluator.status, 200, "{}", evaluator.json);
        let generation = evaluator.json["token"].as_i64().unwrap();
        for lease in ["fencewatch/alert-evaluator", "fencewatch/anything"] {
            for token in [generation, generation + 1, 1] {
                let request = app
                    .http
                    .put(format!("{}/v1/resources/reserved/doc", app.base))
                    .header("Fencing-Token", token.to_string())
                    .header("Fencing-Lease", lease)
                    .body("value");
                let reply = Reply::from(operator.with(request).send().await.unwrap()).await;
                reply.assert_problem(403, "reserved-name");
                assert!(
                    reply.json.get("token").is_none() && reply.json.get("audit_id").is_none(),
                    "{}",
                    reply.json
                );
                counted_not_audited(&reply);
            }
        }
        operator
            .get("/v1/resources/reserved/doc")
            .await
            .assert_problem(404, "not-found");
        assert!(audit_rows(&app, "reserved/doc").await.is_empty());
        let after = operator
            .get("/v1/leases/fencewatch%2Falert-evaluator")
            .await;
        assert_eq!(
            after.json["token"], evaluator.json["token"],
            "{}",
            after.json
        );
        assert_eq!(
            after.json["holder"], evaluator.json["holder"],
            "{}",
            after.json
        );
    }
}
