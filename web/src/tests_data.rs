//! An execution's task data as its page shows it: bounded in memory whatever the data holds.
//!
//! The memory is measured with a counting allocator: every allocation of the test binary goes
//! through it, and it adds the bytes allocated on the current thread to a thread-local
//! counter, so a test reads what its own call allocated whatever other tests do meanwhile.

use crate::model::{DataView, DATA_SCANNED, DATA_SHOWN};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes allocated (and grown by reallocation) on this thread.
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, counting what each thread allocates.
struct Counting;

fn count(bytes: usize) {
    // `try_with`: nothing to count once the thread's locals are gone.
    let _ = ALLOCATED.try_with(|a| a.set(a.get().saturating_add(bytes)));
}

// Safety: every call is passed on unchanged to `System`, which upholds `GlobalAlloc`'s
// contract; the counter is a `const`-initialised thread-local `Cell` (no allocation, no lock).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's `layout` is passed on as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        // SAFETY: as `dealloc`, with the caller's new size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes `f` allocated on this thread, and its result.
fn allocated_by<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATED.with(Cell::get);
    let out = f();
    (ALLOCATED.with(Cell::get) - before, out)
}

/// About `size` bytes of nested JSON, as a webhook payload could plant: objects with strings,
/// numbers and arrays, in an array under one key.
fn big_document(size: usize) -> Vec<u8> {
    let mut doc = b"{\"events\": [".to_vec();
    let mut n = 0u64;
    while doc.len() < size {
        if n > 0 {
            doc.push(b',');
        }
        doc.extend_from_slice(
            format!(
                r#"{{"id": {n}, "kind": "push", "tags": ["a", "b", {{"deep": [1, 2, {{"x": null}}]}}], "note": "caf\u00e9 {n}"}}"#
            )
            .as_bytes(),
        );
        n += 1;
    }
    doc.extend_from_slice(b"]}");
    doc
}

/// Finding 1: a 20 MB document's page took the server from 726 MiB to 3.5 GB (parsed into a
/// tree, pretty-printed whole, then cut). Now at most [`DATA_SCANNED`] bytes are read and
/// [`DATA_SHOWN`] written. Without the fix this call allocated well over 100 MB here.
#[test]
fn a_huge_document_is_shown_from_a_bounded_prefix_in_bounded_memory() {
    let doc = big_document(20 * 1024 * 1024);
    let (used, view) = allocated_by(|| DataView::of(Some(&doc)));
    assert!(
        used < 1024 * 1024,
        "{used} bytes allocated to show {} bytes of JSON",
        doc.len()
    );
    match view {
        DataView::Json {
            bytes,
            pretty,
            truncated,
        } => {
            assert_eq!(bytes, doc.len());
            assert!(truncated);
            assert!(pretty.len() <= DATA_SHOWN, "{}", pretty.len());
            assert!(
                pretty.starts_with("{\n  \"events\": [\n    {\n      \"id\": 0,\n"),
                "{}",
                pretty.chars().take(200).collect::<String>()
            );
            assert!(pretty.contains("\"note\": \"caf\u{e9} 0\""));
        }
        other => panic!("shown as {other:?}"),
    }
}

/// Past [`DATA_SCANNED`] bytes nothing is parsed: a long document whose end is broken is still
/// shown by its first bytes (the old code parsed it all, failed, and showed hex).
#[test]
fn nothing_past_the_scanned_prefix_is_parsed() {
    let mut doc = big_document(2 * DATA_SCANNED);
    doc.extend_from_slice(b"\x00 not json");
    assert!(matches!(
        DataView::of(Some(&doc)),
        DataView::Json {
            truncated: true,
            ..
        }
    ));
    // A short one is checked whole: broken at its end, it is not JSON.
    let mut short = big_document(1000);
    short.extend_from_slice(b"\x00");
    assert!(matches!(
        DataView::of(Some(&short)),
        DataView::Binary { .. }
    ));
}

/// The re-indenter writes what serde_json's pretty printer writes (keys in stored order,
/// which these documents have sorted, as serde_json's map sorts them).
#[test]
fn small_documents_look_as_serde_json_prints_them() {
    for doc in [
        r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        r#"  [ ]  "#,
        r#"{}"#,
        r#"[{}, [], {"a": []}, [[1]], -1.5, "x"]"#,
        r#""just a string""#,
        r#"42"#,
        r#"{"esc":"tab\there \"q\" back\\slash \/ \u00e9 \u202e \u0001 \ud83d\ude00"}"#,
        r#"{"nested":{"deeper":{"deepest":[1,{"k":"v"}]}}}"#,
    ] {
        let value: serde_json::Value = serde_json::from_str(doc).unwrap();
        let expected = serde_json::to_string_pretty(&value).unwrap();
        match DataView::of(Some(doc.as_bytes())) {
            DataView::Json {
                pretty, truncated, ..
            } => {
                assert!(!truncated, "{doc}");
                assert_eq!(pretty, expected, "{doc}");
            }
            other => panic!("{doc}: {other:?}"),
        }
    }
    for not_json in [
        &b"\xac\xed\x00\x05t"[..],
        b"{\"a\": 1",
        b"",
        b"   ",
        b"{\"a\": 1}}",
    ] {
        assert!(
            matches!(DataView::of(Some(not_json)), DataView::Binary { .. }),
            "{not_json:?}"
        );
    }
}
