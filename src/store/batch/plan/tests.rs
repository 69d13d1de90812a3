use super::test_write as write;
use super::*;

#[test]
fn a_repeated_operation_starts_a_new_segment() {
    let writes = [
        write("a", Some("op-1")),
        write("b", Some("op-1")),
        write("a", None),
        write("a", Some("op-1")),
        write("a", Some("op-2")),
    ];
    let lengths: Vec<usize> = segments(&writes).iter().map(|s| s.len()).collect();
    assert_eq!(lengths, vec![3, 2]);
}

#[test]
fn a_batch_without_repeats_is_one_segment() {
    let writes = [write("a", None), write("a", None), write("b", Some("k"))];
    assert_eq!(segments(&writes).len(), 1);
}
