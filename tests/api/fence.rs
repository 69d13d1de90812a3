//! The fence itself: the article's register over HTTP, token rules, revisions and reading back.

use crate::both_backends;
use crate::helpers::{Backend, Reply, TestApp};
use crate::test_db;
use rstest_reuse::apply;

/// The article's program: 7, then 8, then 7 refused as stale with the value kept, 8 again.
#[apply(both_backends)]
#[tokio::test]
async fn the_articles_register(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;

    let first = app
        .put("register")
        .token(7)
        .body("old worker started")
        .send()
        .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.content_type(), "application/json");
    assert_eq!(first.header("etag"), Some("\"1\""));
    assert_eq!(first.json["outcome"], "accepted");
    assert_eq!(first.json["token"], 7);
    assert_eq!(first.json["highest_token"], 7);
    assert_eq!(first.json["revision"], 1);
    assert_eq!(first.json["resource"], "register");

    let second = app
        .put("register")
        .token(8)
        .body("replacement completed")
        .send()
        .await;
    assert_eq!(second.status, 200);
    assert_eq!(
        (
            second.json["highest_token"].as_i64(),
            second.json["revision"].as_i64()
        ),
        (Some(8), Some(2))
    );

    let stale = app
        .put("register")
        .token(7)
        .body("old worker resumed")
        .send()
        .await;
    stale.assert_problem(409, "stale-token");
    assert_eq!(stale.json["outcome"], "stale");
    assert_eq!(stale.json["token"], 7);
    assert_eq!(stale.json["highest_token"], 8);
    assert_eq!(stale.json["revision"], 2);
    assert!(stale.header("etag").is_none());

    let value = app.get("/v1/resources/register").await;
    assert_eq!(value.status, 200);
    assert_eq!(value.body, b"replacement completed");

    let same_owner = app
        .put("register")
        .token(8)
        .body("same owner updated")
        .send()
        .await;
    assert_eq!(same_owner.status, 200);
    assert_eq!(same_owner.json["revision"], 3);

    let value = app.get("/v1/resources/register").await;
    assert_eq!(value.body, b"same owner updated");
    assert_eq!(value.header("fencing-token"), Some("8"));
    assert_eq!(value.header("etag"), Some("\"3\""));

    // Every attempt is one audit row, and each response names its row.
    let audit = app.audit_of("register").await;
    let outcomes: Vec<_> = audit
        .iter()
        .map(|row| row["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["accepted", "accepted", "stale", "accepted"]);
    let ids: Vec<_> = audit
        .iter()
        .map(|row| row["id"].as_i64().unwrap())
        .collect();
    let reply_ids: Vec<_> = [&first, &second, &stale, &same_owner]
        .iter()
        .map(|reply| reply.json["audit_id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, reply_ids);
    assert_eq!(audit[2]["token"], 7);
    assert_eq!(audit[2]["highest_token"], 8);
    assert_eq!(audit[2]["revision"], 2);
}

/// The stated limit of a fence without the lease authority: a resource that has never seen
/// generation 8 accepts 7.
#[apply(both_backends)]
#[tokio::test]
async fn a_fresh_resource_accepts_seven_until_it_has_seen_eight(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    // Generation 8 exists elsewhere, but this resource has not seen it.
    assert_eq!(
        app.put("elsewhere")
            .token(8)
            .body("new owner")
            .send()
            .await
            .status,
        201
    );
    assert_eq!(
        app.put("fresh")
            .token(7)
            .body("old owner")
            .send()
            .await
            .status,
        201
    );
    assert_eq!(
        app.put("fresh")
            .token(8)
            .body("new owner")
            .send()
            .await
            .status,
        200
    );
    app.put("fresh")
        .token(7)
        .body("old owner again")
        .send()
        .await
        .assert_problem(409, "stale-token");
}

#[apply(both_backends)]
#[tokio::test]
async fn malformed_tokens_are_refused_and_audited(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    assert_eq!(app.put("k").token(5).body("v").send().await.status, 201);
    let cases = [
        Some("0"),
        Some("-1"),
        Some("+5"),
        Some("05"),
        Some("5.0"),
        Some("five"),
        Some("5 6"),
        Some("9223372036854775808"),
        Some("18446744073709551616"),
        Some(""),
        None,
    ];
    for token in cases {
        let mut put = app.put("k").body("evil");
        if let Some(token) = token {
            put = put.header("Fencing-Token", token);
        }
        let reply = put.send().await;
        reply.assert_problem(400, "invalid-request");
        assert_eq!(reply.json["outcome"], "invalid", "{token:?}");
        assert!(reply.json["token"].is_null(), "{token:?}");
        assert_eq!(reply.json["highest_token"], 5, "{token:?}");
        assert!(reply.json["audit_id"].as_i64().is_some(), "{token:?}");
    }
    // Two tokens are ambiguous.
    app.put("k")
        .token(6)
        .token(7)
        .body("v")
        .send()
        .await
        .assert_problem(400, "invalid-request");
    // The largest token is fine, and nothing invalid changed the value.
    let value = app.get("/v1/resources/k").await;
    assert_eq!(
        (value.body.as_slice(), value.header("etag")),
        (&b"v"[..], Some("\"1\""))
    );
    assert_eq!(
        app.put("k").token(i64::MAX).body("max").send().await.status,
        200
    );
    let audit = app.audit_of("k").await;
    assert_eq!(audit.len(), 1 + cases.len() + 1 + 1);
    assert_eq!(
        audit.iter().filter(|r| r["outcome"] == "invalid").count(),
        cases.len() + 1
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn if_match_guards_the_revision(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    // "0" means never written.
    let created = app.put("doc").token(1).if_match(0).body("a").send().await;
    assert_eq!(
        (created.status.as_u16(), created.header("etag")),
        (201, Some("\"1\""))
    );
    // "0" again fails now: the resource exists.
    let again = app.put("doc").token(1).if_match(0).body("b").send().await;
    again.assert_problem(412, "revision-mismatch");
    assert_eq!(again.header("etag"), Some("\"1\""));
    assert_eq!(again.json["outcome"], "revision_conflict");
    assert_eq!(again.json["revision"], 1);
    // The right revision passes, the old one fails with the current ETag.
    assert_eq!(
        app.put("doc")
            .token(1)
            .if_match(1)
            .body("c")
            .send()
            .await
            .status,
        200
    );
    let old = app.put("doc").token(1).if_match(1).body("d").send().await;
    old.assert_problem(412, "revision-mismatch");
    assert_eq!(old.header("etag"), Some("\"2\""));
    // A fresh resource with a non-zero expectation fails too and is not created.
    app.put("new")
        .token(1)
        .if_match(3)
        .body("x")
        .send()
        .await
        .assert_problem(412, "revision-mismatch");
    app.get("/v1/resources/new")
        .await
        .assert_problem(404, "not-found");
    // The token is checked before the revision.
    app.put("doc").token(2).body("e").send().await;
    app.put("doc")
        .token(1)
        .if_match(3)
        .body("f")
        .send()
        .await
        .assert_problem(409, "stale-token");
    let audit = app.audit_of("doc").await;
    let expected: Vec<_> = audit
        .iter()
        .map(|r| r["expected_revision"].clone())
        .collect();
    assert_eq!(
        expected,
        [
            0.into(),
            0.into(),
            1.into(),
            1.into(),
            serde_json::Value::Null,
            3.into()
        ]
    );
    assert_eq!(app.get("/v1/resources/doc").await.body, b"e");
}

#[apply(both_backends)]
#[tokio::test]
async fn reads_return_the_value_with_its_fence(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    app.get("/v1/resources/accounts/totals")
        .await
        .assert_problem(404, "not-found");
    let binary: Vec<u8> = (0..=255u8).collect();
    let reply = app
        .put("accounts/totals")
        .token(3)
        .owner("worker-a")
        .header("Content-Type", "application/x-totals")
        .body(binary.clone())
        .send()
        .await;
    assert_eq!(reply.status, 201);
    let value = app.get("/v1/resources/accounts%2Ftotals").await;
    assert_eq!(value.status, 200);
    assert_eq!(value.body, binary);
    assert_eq!(value.content_type(), "application/x-totals");
    assert_eq!(value.header("fencing-token"), Some("3"));
    // The largest value the default limit allows comes back byte for byte.
    let largest: Vec<u8> = (0..1024 * 1024).map(|i: u32| (i * 7 % 251) as u8).collect();
    assert_eq!(
        app.put("largest")
            .token(1)
            .body(largest.clone())
            .send()
            .await
            .status,
        201
    );
    assert_eq!(app.get("/v1/resources/largest").await.body, largest);
    // An empty value is a value, not a missing one.
    assert_eq!(app.put("empty").token(1).body("").send().await.status, 201);
    let empty = app.get("/v1/resources/empty").await;
    assert_eq!(empty.status, 200);
    assert!(empty.body.is_empty());
    // Without a Content-Type the value is served as bytes.
    app.put("plain").token(1).body("x").send().await;
    assert_eq!(
        app.get("/v1/resources/plain").await.content_type(),
        "application/octet-stream"
    );
    // The audit keeps the owner, the body's length and hash.
    let row = &app.audit_of("accounts/totals").await[0];
    assert_eq!(row["owner"], "worker-a");
    assert_eq!(row["body_len"], 256);
    assert_eq!(
        row["body_sha256"],
        "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880"
    );
    let at = row["at"].as_str().unwrap();
    assert!(
        at.ends_with('Z') && at.len() == "2026-11-30T03:40:06.123456Z".len(),
        "{at}"
    );
}

#[apply(both_backends)]
#[tokio::test]
async fn the_audit_pages_newest_first(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    for token in 1..=5 {
        app.put("a").token(token).body("v").send().await;
        app.put("b").token(token).body("v").send().await;
    }
    let all = app.get("/v1/audit").await;
    let ids: Vec<i64> = all.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 10);
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    let page = app
        .get(&format!("/v1/audit?resource=b&limit=2&before={}", ids[2]))
        .await;
    let rows = page.json["entries"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["resource"] == "b" && r["id"].as_i64().unwrap() < ids[2]));
    for bad in [
        "limit=0",
        "limit=1001",
        "before=abc",
        "resource=%00",
        "colour=red",
    ] {
        app.get(&format!("/v1/audit?{bad}"))
            .await
            .assert_problem(400, "invalid-request");
    }
}

/// `after=ID` at the SQL level, on both dialects: the page is the oldest `limit` rows above the
/// id (a reader paging forward must not skip any), still returned newest first, and it narrows
/// together with `resource` and `before`.
#[apply(both_backends)]
#[tokio::test]
async fn the_audit_pages_forward_after_an_id(#[case] backend: Backend) {
    let db = test_db!(backend);
    let app = TestApp::spawn(&db).await;
    for token in 1..=6 {
        app.put("a").token(token).body("v").send().await;
        app.put("b").token(token).body("v").send().await;
    }
    let ids = |reply: &Reply| -> Vec<i64> {
        reply.json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect()
    };
    let mut all = ids(&app.get("/v1/audit").await);
    all.reverse();
    assert_eq!(all.len(), 12);

    // The oldest three above the third row, newest first.
    let page = ids(&app
        .get(&format!("/v1/audit?after={}&limit=3", all[2]))
        .await);
    assert_eq!(page, vec![all[5], all[4], all[3]]);
    // From the start.
    let page = ids(&app.get("/v1/audit?after=0&limit=2").await);
    assert_eq!(page, vec![all[1], all[0]]);
    // Past the end: nothing.
    let page = ids(&app.get(&format!("/v1/audit?after={}", all[11])).await);
    assert!(page.is_empty(), "{page:?}");

    // With `resource`: b's rows are the odd ones; the oldest two of them above all[2].
    let reply = app
        .get(&format!("/v1/audit?resource=b&after={}&limit=2", all[2]))
        .await;
    assert!(reply.json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["resource"] == "b"));
    assert_eq!(ids(&reply), vec![all[5], all[3]]);

    // With `before`: a window strictly between the two ids, the oldest `limit` of it.
    let page = ids(&app
        .get(&format!(
            "/v1/audit?after={}&before={}&limit=3",
            all[1], all[8]
        ))
        .await);
    assert_eq!(page, vec![all[4], all[3], all[2]]);
    let page = ids(&app
        .get(&format!(
            "/v1/audit?resource=a&after={}&before={}",
            all[1], all[8]
        ))
        .await);
    assert_eq!(page, vec![all[6], all[4], all[2]]);
    // An empty window.
    let page = ids(&app
        .get(&format!("/v1/audit?after={}&before={}", all[4], all[5]))
        .await);
    assert!(page.is_empty(), "{page:?}");

    for bad in ["after=-1", "after=x", "after=1&after=2"] {
        app.get(&format!("/v1/audit?{bad}"))
            .await
            .assert_problem(400, "invalid-request");
    }
}
