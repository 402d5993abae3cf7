use super::*;
use crate::ordering::{CustomKey, Direction, KeyType, PrimaryOrder};
use crate::queue::intake::tests::started;
use crate::queue::to_millis;
use chrono::TimeZone;
use proptest::prelude::*;
use serde_json::Map;

/// A whole CSV file as one batch's items, started at [`started`], or the first error.
fn read_batch(
    reader: impl Read,
    task_type: &str,
    max_assignments: i32,
    batch: Option<&str>,
    config: &QueueConfig,
) -> Result<Vec<NewItem>> {
    CsvItems::new(reader, task_type, max_assignments, batch, started(), config)?.collect()
}

fn read(text: &str) -> Result<Vec<NewItem>> {
    read_batch(text.as_bytes(), "label", 2, None, &QueueConfig::default())
}

fn at(s: &str) -> DateTime<Utc> {
    super::super::parse_record_date(s).unwrap()
}

fn attrs(item: &NewItem) -> Map<String, Json> {
    item.custom_attributes
        .as_deref()
        .map(|t| serde_json::from_str(t).unwrap())
        .unwrap_or_default()
}

/// The stored custom attributes (JSON text) of each item read.
fn stored(items: Result<Vec<NewItem>>) -> Vec<Option<String>> {
    items
        .unwrap()
        .into_iter()
        .map(|i| i.custom_attributes)
        .collect()
}

/// `Some(json)` as [`stored`] returns it.
fn json(text: &str) -> Option<String> {
    Some(text.to_owned())
}

/// The (line, column) of a CSV error, or a panic naming what came instead.
fn csv_err(r: Result<Vec<NewItem>>) -> (u64, String, String) {
    match r {
        Err(DocketError::Csv {
            line,
            column,
            reason,
        }) => (line, column, reason),
        other => panic!("expected a CSV error, got {other:?}"),
    }
}

#[test]
fn dates_present_and_missing() {
    let items = read(
        "record_date,text\n\
         2020-03-11T10:15:55.935,a\n\
         ,b\n\
         2020-03-11T10:15:55,c\n\
         2020-03-11T10:15:55Z,d\n\
         \x20 ,e\n",
    )
    .unwrap();
    let millis = to_millis(started());
    let got: Vec<_> = items
        .iter()
        .map(|i| (i.key.task_instance.as_str(), i.record.order, i.record.date))
        .collect();
    assert_eq!(
        got,
        vec![
            ("20261130T131727.123Z/1", 1, at("2020-03-11T10:15:55.935")),
            ("20261130T131727.123Z/2", 2, millis),
            ("20261130T131727.123Z/3", 3, at("2020-03-11T10:15:55")),
            ("20261130T131727.123Z/4", 4, at("2020-03-11T10:15:55")),
            ("20261130T131727.123Z/5", 5, millis),
        ]
    );
    for item in &items {
        assert_eq!(item.key.task_name, "label");
        assert_eq!(item.available_at, millis);
        assert_eq!(item.max_assignments, 2);
        assert_eq!(item.priority, None);
        assert_eq!(item.data, None);
        assert_eq!(attrs(item).len(), 1, "record_date is not an attribute");
    }
}

#[test]
fn malformed_dates_name_line_and_column() {
    for bad in [
        "2020-13-01T00:00:00",
        "2020-03-11",
        "yesterday",
        "11/03/2020",
    ] {
        let (line, column, reason) = csv_err(read(&format!("text,record_date\na,\nb,{bad}\n")));
        assert_eq!((line, column.as_str()), (3, "record_date"), "{bad}");
        assert!(reason.contains("YYYY-MM-DDThh:mm:ss"), "{reason}");
    }
    let err = read("text,record_date\na,nope\n").unwrap_err().to_string();
    assert!(
        err.starts_with("CSV line 2, column \"record_date\": "),
        "{err}"
    );
}

#[test]
fn empty_cells_are_omitted() {
    assert_eq!(
        stored(read("a,b,c\n1,,3\n,,\n\"\",x,\n")),
        [json(r#"{"a":"1","c":"3"}"#), None, json(r#"{"b":"x"}"#)]
    );
    // Values are kept verbatim: spaces included, numbers as strings (FIFO order).
    assert_eq!(
        stored(read("a,b\n 1 ,2.50\n")),
        [json(r#"{"a":" 1 ","b":"2.50"}"#)]
    );
}

#[test]
fn quoted_fields_keep_commas_newlines_and_line_numbers() {
    let text = "text,record_date\n\
                \"a, with comma\",\n\
                \"two\nlines\",2020-01-01T00:00:00\n\
                \"say \"\"hi\"\"\",\n\
                \"three\nlines\r\nhere\",\n\
                last,bad-date\n";
    let (line, column, _) = csv_err(read(text));
    assert_eq!((line, column.as_str()), (9, "record_date"));
    let good = text.replace("bad-date", "");
    let items = read(&good).unwrap();
    let texts: Vec<_> = items
        .iter()
        .map(|i| attrs(i)["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts,
        [
            "a, with comma",
            "two\nlines",
            "say \"hi\"",
            "three\nlines\r\nhere",
            "last"
        ]
    );
    let orders: Vec<_> = items.iter().map(|i| i.record.order).collect();
    assert_eq!(orders, [1, 2, 3, 4, 5]);
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let text = "text\n\na\n\nb\n\n";
    let items = read(text).unwrap();
    let ids: Vec<_> = items.iter().map(|i| i.record.order).collect();
    assert_eq!(ids, [1, 2]);
    let (line, column, _) = csv_err(read("text,record_date\n\na,\n\nb,x\n"));
    assert_eq!((line, column.as_str()), (5, "record_date"));
}

#[test]
fn line_numbers_hold_in_large_files() {
    // Past the reader's buffer and the tap's 64 KiB window, blank lines and CRLF included.
    let mut text = String::from("\r\n\ntext,record_date\r\n");
    let mut line = 4;
    for i in 0..20_000 {
        if i % 7 == 0 {
            text.push_str("\r\n\n");
            line += 2;
        }
        text.push_str(&format!("\"row\n{i}\",\r\n"));
        line += 2;
    }
    text.push_str("\n\nlast,2020-02-30T00:00:00\n");
    line += 2;
    let (got, column, _) = csv_err(read(&text));
    assert_eq!((got, column.as_str()), (line, "record_date"));
    let (got, column, _) = csv_err(read(&text.replace("\"row\n19999\",", "x")));
    assert_eq!(column, "record_date", "one field short: the missing column");
    assert_eq!(got, line - 4);
    let items = read(&text.replace("2020-02-30", "2020-02-29")).unwrap();
    assert_eq!(items.len(), 20_001);
    assert_eq!(items[20_000].record.order, 20_001);
}

#[test]
fn bad_header_names_are_named() {
    for (header, column) in [
        ("a,\"b'c\"", "b'c"),
        ("a,\"b\"\"c\"", "b\"c"),
        ("a,b;drop table x", "b;drop table x"),
        ("a--b,c", "a--b"),
        ("a,1b", "1b"),
        ("a, b", " b"),
        ("a,b.c", "b.c"),
    ] {
        let (line, got, reason) = csv_err(read(&format!("{header}\n1,2\n")));
        assert_eq!((line, got.as_str()), (1, column), "{header}");
        assert!(reason.contains("invalid attribute name"), "{reason}");
    }
    let (line, column, reason) = csv_err(read("a,,b\n1,2,3\n"));
    assert_eq!((line, column.as_str()), (1, "2"));
    assert!(reason.contains("empty"), "{reason}");
    let (line, column, reason) = csv_err(read("a,b,a\n1,2,3\n"));
    assert_eq!((line, column.as_str()), (1, "a"));
    assert!(
        reason.contains("duplicate column (also column 1)"),
        "{reason}"
    );
    let (line, _, reason) = csv_err(read(""));
    assert_eq!(line, 1);
    assert!(reason.contains("no header"), "{reason}");
    // A UTF-8 byte-order mark is not part of the first name.
    assert_eq!(
        stored(read("\u{feff}a,b\n1,2\n")),
        [json(r#"{"a":"1","b":"2"}"#)]
    );
}

#[test]
fn wrong_field_counts_name_the_column() {
    let (line, column, reason) = csv_err(read("a,b,c\n1,2,3\n1,2\n"));
    assert_eq!((line, column.as_str()), (3, "c"));
    assert!(reason.contains("expected 3 fields"), "{reason}");
    assert!(reason.contains("found 2"), "{reason}");
    let (line, column, reason) = csv_err(read("a,b\n1,2\n\"x\ny\",2\n1,2,3\n"));
    assert_eq!((line, column.as_str()), (5, "3"));
    assert!(reason.contains("found 3"), "{reason}");
}

#[test]
fn invalid_utf8_names_line_and_column() {
    let mut bytes = b"a,b\n1,2\n3,x".to_vec();
    bytes.extend([0xff, 0xfe, b'\n']);
    let r = read_batch(&bytes[..], "label", 1, None, &QueueConfig::default());
    let (line, column, reason) = csv_err(r);
    assert_eq!((line, column.as_str()), (3, "b"));
    assert!(reason.contains("UTF-8"), "{reason}");
}

#[test]
fn id_column_overrides_the_item_id() {
    let items = read_batch(
        "id,text\nfirst,a\n,b\nthird,c\n".as_bytes(),
        "label",
        1,
        Some("monday"),
        &QueueConfig::default(),
    )
    .unwrap();
    let ids: Vec<_> = items.iter().map(|i| i.key.task_instance.as_str()).collect();
    assert_eq!(ids, ["first", "monday/2", "third"]);
    assert!(items.iter().all(|i| !attrs(i).contains_key("id")));

    let (line, column, reason) = csv_err(read("id,text\nx,a\ny,b\nx,c\n"));
    assert_eq!((line, column.as_str()), (4, "id"));
    assert!(reason.contains("first on line 2"), "{reason}");
    let long = "x".repeat(MAX_INSTANCE_ID_LEN + 1);
    let (line, column, reason) = csv_err(read(&format!("text,id\na,ok\nb,{long}\n")));
    assert_eq!((line, column.as_str()), (3, "id"));
    assert!(reason.contains("too long"), "{reason}");
}

#[test]
fn arguments_are_checked_before_reading() {
    let config = QueueConfig::default();
    let r = read_batch("a\n1\n".as_bytes(), "t", 0, None, &config);
    assert!(
        matches!(&r, Err(DocketError::InvalidConfig(m)) if m.contains("at least 1")),
        "{r:?}"
    );
    let r = read_batch("a\n1\n".as_bytes(), "", 1, None, &config);
    assert!(matches!(r, Err(DocketError::InvalidName { .. })), "{r:?}");
    let long = "b".repeat(MAX_BATCH_NAME_LEN + 1);
    let r = read_batch("a\n1\n".as_bytes(), "t", 1, Some(&long), &config);
    assert!(matches!(r, Err(DocketError::InvalidName { .. })), "{r:?}");
}

#[test]
fn custom_keys_are_normalized_or_rejected() {
    let mut config = QueueConfig::default();
    config.orders.insert(
        "label".to_owned(),
        PrimaryOrder::Custom(vec![
            CustomKey::new("score", KeyType::Number, Direction::Desc).unwrap(),
            CustomKey::new("due", KeyType::Timestamp, Direction::Asc).unwrap(),
        ]),
    );
    let read = |text: &str| read_batch(text.as_bytes(), "label", 1, None, &config);
    assert_eq!(
        stored(read("score,due,note\n12,2020-01-01T00:00:00,x\n1.5,,\n")),
        [
            json(r#"{"due":"2020-01-01T00:00:00.000000Z","note":"x","score":12}"#),
            json(r#"{"score":1.5}"#)
        ]
    );
    let (line, column, reason) = csv_err(read("note,score\nx,1\ny,many\n"));
    assert_eq!((line, column.as_str()), (3, "score"));
    assert!(reason.contains("not a number"), "{reason}");
    let (line, column, _) = csv_err(read("due\n\n\nsoon\n"));
    assert_eq!((line, column.as_str()), (4, "due"));
}

#[test]
fn streaming_reports_progress_and_stops_after_an_error() {
    let text = "a\n1\n2\n\"\n\"\n";
    let mut items = CsvItems::new(
        text.as_bytes(),
        "label",
        1,
        Some("b"),
        started(),
        &QueueConfig::default(),
    )
    .unwrap();
    assert_eq!(items.columns(), ["a"]);
    assert_eq!(items.batch_id(), "b");
    assert_eq!(items.started(), to_millis(started()));
    assert_eq!(items.next().unwrap().unwrap().key.task_instance, "b/1");
    assert_eq!(items.bytes_read(), 4);
    assert_eq!(items.by_ref().count(), 2);
    assert_eq!(items.rows_read(), 3);
    assert_eq!(items.bytes_read(), text.len() as u64);

    let mut bad = CsvItems::new(
        "a,b\n1\n1,2\n".as_bytes(),
        "label",
        1,
        None,
        started(),
        &QueueConfig::default(),
    )
    .unwrap();
    assert!(bad.next().unwrap().is_err());
    assert!(bad.next().is_none(), "fused after the first error");
}

#[test]
fn duplicate_ids_are_found_within_the_window_and_located_beyond_it() {
    let rows = RECENT_IDS + 10;
    let mut text = String::from("id,a\n");
    for i in 1..=rows {
        text.push_str(&format!("r{i},x\n"));
    }
    // Far apart: the reader has forgotten the first one (the database finds it).
    let far = format!("{text}r1,x\n");
    let items = read(&far).unwrap();
    assert_eq!(items.len(), rows + 1);
    // Near: both lines named.
    let near = format!("{text}r{rows},x\n");
    let (line, column, reason) = csv_err(read(&near));
    assert_eq!((line, column.as_str()), (rows as u64 + 2, "id"));
    assert!(
        reason.contains(&format!("first on line {}", rows + 1)),
        "{reason}"
    );

    // A duplicate the database reports is placed on its line, if recent.
    let mut items = CsvItems::new(
        text.as_bytes(),
        "label",
        1,
        None,
        started(),
        &QueueConfig::default(),
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    items.on_progress(5000, move |rows, bytes| {
        log.lock().unwrap().push((rows, bytes));
    });
    assert_eq!(items.by_ref().count(), rows);
    let reports = seen.lock().unwrap().clone();
    assert_eq!(reports.len(), rows / 5000 + 1, "{reports:?}");
    assert_eq!(reports[0].0, 5000);
    assert_eq!(reports.last(), Some(&(rows as u64, text.len() as u64)));
    // An error placed on the file's last line, in the id column, saying `needle`.
    let on_last_line = |e: DocketError, needle: &str| match e {
        DocketError::Csv {
            line,
            column,
            reason,
        } => {
            assert_eq!((line, column.as_str()), (rows as u64 + 1, "id"));
            assert!(reason.contains(needle), "{reason}");
        }
        other => panic!("{other:?}"),
    };
    let duplicate = |item: &str, task: &str| {
        DocketError::Store(StoreError::DuplicateItem {
            task: task.to_owned(),
            item: item.to_owned(),
        })
    };
    on_last_line(
        items.locate(duplicate(&format!("r{rows}"), "label")),
        "already exists",
    );
    // Forgotten, or of another task type: unchanged.
    for (item, task) in [("r1", "label"), ("r20", "other")] {
        assert!(matches!(
            items.locate(duplicate(item, task)),
            DocketError::Store(StoreError::DuplicateItem { .. })
        ));
    }
    assert_eq!(items.line_of_item("r20"), Some(21));
    // A row the database's JSON check refused: placed on its line, if recent.
    let rejected = |item: &str| {
        DocketError::Store(StoreError::RejectedItem {
            task: "label".to_owned(),
            item: item.to_owned(),
            reason: "check constraint violated".to_owned(),
        })
    };
    on_last_line(
        items.locate(rejected(&format!("r{rows}"))),
        "refused the row",
    );
    assert!(matches!(
        items.locate(rejected("r1")),
        DocketError::Store(StoreError::RejectedItem { .. })
    ));
    // A repeat the database could not name: the range of rows, as lines.
    let repeated = DocketError::Store(StoreError::RepeatedItem {
        task: "label".to_owned(),
        from: rows as u64 - 9,
        to: rows as u64,
    });
    match items.locate(repeated) {
        DocketError::Csv {
            line,
            column,
            reason,
        } => {
            assert_eq!((line, column.as_str()), (rows as u64 - 8, "id"));
            let range = format!("lines {} to {}", rows - 8, rows + 1);
            assert!(reason.contains(&range), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let forgotten = DocketError::Store(StoreError::RepeatedItem {
        task: "label".to_owned(),
        from: 1,
        to: 10,
    });
    assert!(matches!(
        items.locate(forgotten),
        DocketError::Store(StoreError::RepeatedItem { .. })
    ));
}

/// A valid attribute name other than the reserved columns.
fn attribute_name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_]{0,12}"
        .prop_filter("reserved", |n| n != ID_COLUMN && n != RECORD_DATE_COLUMN)
}

/// A cell: anything, including the characters CSV quotes.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ,\"\n\r;']{0,8}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
    ]
}

/// Millisecond instants between 1970 and 2100.
fn date() -> impl Strategy<Value = Option<DateTime<Utc>>> {
    proptest::option::of(
        (0i64..4_102_444_800_000).prop_map(|ms| Utc.timestamp_millis_opt(ms).unwrap()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn well_formed_files_round_trip(
        (names, rows) in proptest::collection::hash_set(attribute_name(), 1..5)
            .prop_flat_map(|names| {
                let names: Vec<String> = names.into_iter().collect();
                let width = names.len();
                (
                    Just(names),
                    proptest::collection::vec(
                        (proptest::collection::vec(cell(), width), date(), 0..3usize),
                        0..20,
                    ),
                )
            }),
        dates_first in any::<bool>(),
        crlf in any::<bool>(),
        bad_row in any::<proptest::sample::Index>(),
    ) {
        let mut header: Vec<&str> = names.iter().map(String::as_str).collect();
        let date_at = if dates_first { 0 } else { header.len() };
        header.insert(date_at, RECORD_DATE_COLUMN);
        let rendered: Vec<Vec<String>> = rows
            .iter()
            .map(|(cells, date, _)| {
                let mut record = cells.clone();
                let date = date.map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3f").to_string());
                record.insert(date_at, date.unwrap_or_default());
                record
            })
            .collect();
        // Header, then each row after 0-2 blank lines; `lines` is each row's first line.
        let file = |bad: Option<usize>| {
            let terminator = if crlf {
                ::csv::Terminator::CRLF
            } else {
                ::csv::Terminator::Any(b'\n')
            };
            let blank: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let render = |record: &[String]| {
                let mut out = ::csv::WriterBuilder::new()
                    .terminator(terminator)
                    .from_writer(Vec::new());
                out.write_record(record).unwrap();
                out.into_inner().unwrap()
            };
            let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
            let mut bytes = render(&header);
            let mut lines = Vec::new();
            for (j, (record, (_, _, blanks))) in rendered.iter().zip(&rows).enumerate() {
                bytes.extend(blank.repeat(*blanks));
                lines.push(1 + bytes.iter().filter(|&&b| b == b'\n').count() as u64);
                let mut record = record.clone();
                if bad == Some(j) {
                    record[date_at] = "not a date".to_owned();
                }
                bytes.extend(render(&record));
            }
            (bytes, lines)
        };
        let (bytes, lines) = file(None);
        let items = read_batch(&bytes[..], "t", 1, None, &QueueConfig::default())
            .unwrap();
        prop_assert_eq!(items.len(), rows.len());
        for (i, (item, (cells, date, _))) in items.iter().zip(&rows).enumerate() {
            prop_assert_eq!(item.record.order, i as i64 + 1);
            prop_assert_eq!(item.record.date, date.unwrap_or(to_millis(started())));
            let expected: Map<String, Json> = names
                .iter()
                .zip(cells)
                .filter(|(_, c)| !c.is_empty())
                .map(|(n, c)| (n.clone(), Json::String(c.clone())))
                .collect();
            prop_assert_eq!(attrs(item), expected);
        }
        // The same file with one bad date: the error names that row's physical line.
        if !rows.is_empty() {
            let k = bad_row.index(rows.len());
            let (bytes, _) = file(Some(k));
            let r = read_batch(&bytes[..], "t", 1, None, &QueueConfig::default());
            match r {
                Err(DocketError::Csv { line, column, .. }) => {
                    prop_assert_eq!(line, lines[k]);
                    prop_assert_eq!(column, RECORD_DATE_COLUMN);
                }
                other => prop_assert!(false, "expected a CSV error, got {:?}", other),
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check_typed(read_batch(&bytes[..], "t", 1, None, &custom_config()));
    }

    #[test]
    fn arbitrary_csvish_text_never_panics(
        text in "(id|record_date|score|a|b|[,\"\n\r;' -]|[0-9T:.Z]|x){0,80}"
    ) {
        check_typed(read_batch(text.as_bytes(), "t", 1, None, &custom_config()));
        check_typed(read_batch(text.as_bytes(), "t", 1, None, &QueueConfig::default()));
    }

    #[test]
    fn attribute_names_never_panic_and_match_the_grammar(name in any::<String>()) {
        let expected = is_attribute_name(&name);
        prop_assert_eq!(AttributeName::parse(&name).is_ok(), expected, "{:?}", name);
    }

    #[test]
    fn attribute_names_of_the_grammar_are_accepted(
        name in "[A-Za-z_][A-Za-z0-9_]{0,63}",
        tail in "[A-Za-z0-9_]{1,8}",
    ) {
        let parsed = AttributeName::parse(&name).unwrap();
        prop_assert_eq!(parsed.as_str(), name.as_str());
        // One character past 64 is too long.
        let long = format!("{name}{}", tail.repeat(64));
        prop_assert!(AttributeName::parse(&long[..65]).is_err());
    }

    #[test]
    fn attribute_names_near_the_grammar(name in "[A-Za-z0-9_;'\". \\-/*$é]{0,70}") {
        let expected = is_attribute_name(&name);
        prop_assert_eq!(AttributeName::parse(&name).is_ok(), expected, "{:?}", name);
    }
}

/// `[A-Za-z_][A-Za-z0-9_]{0,63}`, by hand.
fn is_attribute_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

fn custom_config() -> QueueConfig {
    let mut config = QueueConfig::default();
    config.orders.insert(
        "t".to_owned(),
        PrimaryOrder::Custom(vec![
            CustomKey::new("score", KeyType::Number, Direction::Asc).unwrap(),
            CustomKey::new("a", KeyType::Timestamp, Direction::Asc).unwrap(),
            CustomKey::new("b", KeyType::Text, Direction::Asc).unwrap(),
        ]),
    );
    config
}

/// Ok, or a CSV error with a line (the arguments themselves are valid).
fn check_typed(r: Result<Vec<NewItem>>) {
    match r {
        Ok(items) => {
            for (i, item) in items.iter().enumerate() {
                assert_eq!(item.record.order, i as i64 + 1);
            }
        }
        Err(DocketError::Csv { line, .. }) => assert!(line >= 1),
        Err(other) => panic!("untyped error {other:?}"),
    }
}
