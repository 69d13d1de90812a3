use super::*;

#[test]
fn schema_names_are_plain() {
    for good in ["fencewatch", "fence_2", "_x"] {
        assert!(check_schema_name(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "Fence",
        "2x",
        "pg_fence",
        "a-b",
        "a\"b",
        &"x".repeat(49),
    ] {
        assert!(check_schema_name(bad).is_err(), "{bad}");
    }
}
