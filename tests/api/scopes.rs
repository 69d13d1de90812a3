//! What a key's scopes cover: a write naming a lease needs that lease's scope (so no key can
//! borrow another team's generation to fence a resource it may write), and `write=` and
//! `lease=` prefixes match whole path segments, as the lease scope does.

use crate::both_backends;
use crate::helpers::{Backend, Reply, TestApp};
use crate::test_db;
use fencewatch::app::service::Limits;
use fencewatch::domain::LeasePolicy;
use fencewatch::http::auth::ApiKeys;
use rstest_reuse::apply;
use serde_json::json;
use std::sync::Arc;

struct Key<'a> {
    app: &'a TestApp,
    key: &'a str,
}

impl Key<'_> {
    async fn put(&self, resource: &str, token: i64, lease: Option<&str>) -> Reply {
        let mut request = self
            .app
            .http
            .put(format!("{}/v1/resources/{resource}", self.app.base))
            .bearer_auth(self.key)
            .header("Fencing-Token", token.to_string())
            .body("value");
        if let Some(lease) = lease {
            request = request.header("Fencing-Lease", lease);
        }
        Reply::from(request.send().await.unwrap()).await
    }

    async fn acquire(&self, lease: &str, holder: &str) -> Reply {
        let request = self
            .app
            .http
            .post(format!(
                "{}/v1/leases/{}/acquire",
                self.app.base,
                crate::helpers::encode(lease)
            ))
            .bearer_auth(self.key)
            .json(&json!({"holder": holder, "ttl_ms": 600_000}));
        Reply::from(request.send().await.unwrap()).await
    }

    async fn get(&self, path: &str) -> Reply {
        let request = self
            .app
            .http
            .get(format!("{}{path}", self.app.base))
            .bearer_auth(self.key);
        Reply::from(request.send().await.unwrap()).await
    }
}

fn keyed(keys: &str) -> Option<Arc<ApiKeys>> {
    Some(Arc::new(ApiKeys::parse(keys).unwrap()))
}

/// The attack of issue 34: a key that may write `billing/` but holds no lease scope probes
/// payroll's lease with tokens around its generation (on main: `403` above, `409` below,
/// accepted at it) and, having found it, writes `billing/x` with it, fencing billing's own
/// holder out. Now every probe gets the very same `403 forbidden` body, whatever the token, and
/// nothing moves.
#[apply(both_backends)]
#[tokio::test]
async fn a_write_cannot_borrow_another_teams_lease_generation(#[case] backend: Backend) {
    let db = test_db!(backend);
    let keys = keyed(
        "billing:k-billing-5e1f0a9c3b write=billing/ lease=billing/\n\
         intruder:k-intruder-5e1f0a9c3b write=billing/\n\
         payroll:k-payroll-5e1f0a9c3b write=payroll/ lease=payroll/\n\
         operator:k-operator-5e1f0a9c3b admin\n",
    );
    let limits = Limits {
        leases: LeasePolicy {
            require_lease: true,
            ..LeasePolicy::default()
        },
        ..Limits::default()
    };
    let app = TestApp::on(&db).limits(limits).keys(keys).spawn().await;
    let billing = Key {
        app: &app,
        key: "k-billing-5e1f0a9c3b",
    };
    let intruder = Key {
        app: &app,
        key: "k-intruder-5e1f0a9c3b",
    };
    let payroll = Key {
        app: &app,
        key: "k-payroll-5e1f0a9c3b",
    };
    let operator = Key {
        app: &app,
        key: "k-operator-5e1f0a9c3b",
    };

    let ours = billing.acquire("billing/leader", "b1").await;
    assert_eq!(ours.status, 200, "{}", ours.json);
    let ours = ours.json["token"].as_i64().unwrap();
    let first = billing.put("billing/x", ours, Some("billing/leader")).await;
    assert_eq!(first.status, 201, "{}", first.json);

    // Payroll's lease is several generations ahead, taken again by its holder through its own
    // key and an admin's.
    for key in [&payroll, &operator, &payroll] {
        let taken = key.acquire("payroll/leader", "p1").await;
        assert_eq!(taken.status, 200, "{}", taken.json);
    }
    let theirs = operator.get("/v1/leases/payroll%2Fleader").await.json["token"]
        .as_i64()
        .unwrap();
    assert!(theirs > ours + 1, "payroll {theirs}, billing {ours}");

    let mut answers = Vec::new();
    for token in [1, theirs - 1, theirs, theirs + 1, theirs + 1000, i64::MAX] {
        let probe = intruder
            .put("billing/x", token, Some("payroll/leader"))
            .await;
        probe.assert_problem(403, "forbidden");
        let detail = probe.json["detail"].as_str().unwrap();
        assert!(
            !detail.contains(&theirs.to_string()),
            "the answer names payroll's generation: {detail}"
        );
        answers.push(probe.json.clone());
    }
    assert!(
        answers.windows(2).all(|pair| pair[0] == pair[1]),
        "the answers differ with the token: {answers:#?}"
    );

    // Billing's holder was not fenced out: its next write is accepted, at its generation.
    let next = billing.put("billing/x", ours, Some("billing/leader")).await;
    assert_eq!(next.status, 200, "{}", next.json);
    assert_eq!(next.json["highest_token"], ours);
    let value = billing.get("/v1/resources/billing/x").await;
    assert_eq!(
        value.header("fencing-token"),
        Some(ours.to_string().as_str())
    );
}

/// `write=` and `lease=` prefixes match as the lease scope does: a prefix covers itself and
/// what is under it after a `/`, never a longer name (`billing` is not `billingsecrets`). A
/// write naming a lease needs both scopes; an unscoped key line still may do everything.
#[apply(both_backends)]
#[tokio::test]
async fn write_and_lease_prefixes_match_whole_segments(#[case] backend: Backend) {
    let db = test_db!(backend);
    let keys = keyed(
        "narrow:k-narrow-5e1f0a9c3b write=billing lease=jobs\n\
         slashed:k-slashed-5e1f0a9c3b write=billing/ lease=jobs/\n\
         legacy:k-legacy-5e1f0a9c3b\n",
    );
    let app = TestApp::on(&db).keys(keys).spawn().await;
    let narrow = Key {
        app: &app,
        key: "k-narrow-5e1f0a9c3b",
    };
    let slashed = Key {
        app: &app,
        key: "k-slashed-5e1f0a9c3b",
    };
    let legacy = Key {
        app: &app,
        key: "k-legacy-5e1f0a9c3b",
    };

    for (key, resource, status) in [
        (&narrow, "billing", 201),
        (&narrow, "billing/x", 201),
        (&narrow, "billingsecrets", 403),
        (&narrow, "billing2/x", 403),
        (&slashed, "billing/y", 201),
        (&slashed, "billing2/y", 403),
        (&slashed, "billingsecrets", 403),
    ] {
        let reply = key.put(resource, 1, None).await;
        assert_eq!(reply.status.as_u16(), status, "{resource}: {}", reply.json);
        if status == 403 {
            reply.assert_problem(403, "forbidden");
        }
    }
    for (key, lease, status) in [
        (&narrow, "jobs", 200),
        (&narrow, "jobs/a", 200),
        (&narrow, "jobs2", 403),
        (&slashed, "jobs/b", 200),
        (&slashed, "jobs2/b", 403),
    ] {
        let reply = key.acquire(lease, "w").await;
        assert_eq!(reply.status.as_u16(), status, "{lease}: {}", reply.json);
    }
    // Refused writes changed nothing.
    legacy
        .get("/v1/resources/billingsecrets")
        .await
        .assert_problem(404, "not-found");

    // A write naming a lease needs that lease's scope as well as the resource's.
    let jobs = legacy.get("/v1/leases/jobs").await.json["token"]
        .as_i64()
        .unwrap();
    assert_eq!(narrow.put("billing", jobs, Some("jobs")).await.status, 200);
    narrow
        .put("billing", jobs, Some("jobs2"))
        .await
        .assert_problem(403, "forbidden");
    narrow
        .put("billing", jobs, Some("jobsx"))
        .await
        .assert_problem(403, "forbidden");
    // A key line without scopes may name any lease, as before.
    assert_eq!(legacy.put("billing", jobs, Some("jobs")).await.status, 200);
}

/// An external lock (`etcd:PREFIX`) is not one of the daemon's leases: `lease=PREFIX` never
/// covers it. A key names one only with `lease`, `admin`, or a `lease=etcd:…` scope covering
/// the lock's key prefix. Without `--etcd` a write naming one is then refused as invalid
/// (`400`), as before: the scope is decided first.
#[apply(both_backends)]
#[tokio::test]
async fn an_external_lock_needs_a_lease_scope_naming_its_authority(#[case] backend: Backend) {
    let db = test_db!(backend);
    let keys = keyed(
        "daemon-leases:k-daemon-5e1f0a9c3b write=locks/ lease=locks/\n\
         etcd-jobs:k-etcd-5e1f0a9c3b write=locks/ lease=etcd:/locks/jobs\n\
         any-etcd:k-any-etcd-5e1f0a9c3b write=locks/ lease=etcd:\n\
         all-leases:k-all-5e1f0a9c3b write=locks/ lease\n",
    );
    let app = TestApp::on(&db).keys(keys).spawn().await;
    let key = |key| Key { app: &app, key };
    for (caller, lock, status) in [
        ("k-daemon-5e1f0a9c3b", "etcd:/locks/jobs", 403),
        ("k-daemon-5e1f0a9c3b", "etcd:locks/jobs", 403),
        ("k-etcd-5e1f0a9c3b", "etcd:/locks/jobs", 400),
        ("k-etcd-5e1f0a9c3b", "etcd:/locks/jobs/7", 400),
        ("k-etcd-5e1f0a9c3b", "etcd:/locks/jobs2", 403),
        ("k-etcd-5e1f0a9c3b", "etcd:/locks/other", 403),
        ("k-any-etcd-5e1f0a9c3b", "etcd:/locks/other", 400),
        ("k-any-etcd-5e1f0a9c3b", "etcd:other", 400),
        ("k-all-5e1f0a9c3b", "etcd:/locks/other", 400),
    ] {
        let reply = key(caller).put("locks/jobs", 5, Some(lock)).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{caller} naming {lock}: {}",
            reply.json
        );
        let expected = if status == 403 {
            "forbidden"
        } else {
            "invalid-request"
        };
        reply.assert_problem(status, expected);
    }
    // A `lease=etcd:…` scope is about etcd's locks, not the daemon's leases of that name.
    key("k-any-etcd-5e1f0a9c3b")
        .acquire("locks/jobs", "w")
        .await
        .assert_problem(403, "forbidden");
}
