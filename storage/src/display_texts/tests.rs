use super::*;
use crate::records::VarRecord;
use proptest::prelude::*;

fn texts() -> impl Strategy<Value = Vec<[Option<String>; 3]>> {
    let one = proptest::option::of("\\PC{0,6}");
    proptest::collection::vec([one.clone(), one.clone(), one], 0..30)
}

fn table(rows: &[[Option<String>; 3]]) -> TextTable<3> {
    let mut t = TextTable::<3>::default();
    for r in rows {
        assert!(t.push([r[0].as_deref(), r[1].as_deref(), r[2].as_deref()]));
    }
    t
}

proptest! {
    #[test]
    fn a_table_gives_back_what_was_pushed_and_round_trips(rows in texts()) {
        let t = table(&rows);
        prop_assert_eq!(t.len(), rows.len());
        for (i, r) in rows.iter().enumerate() {
            let got = t.get(i as u32).unwrap();
            for k in 0..3 {
                prop_assert_eq!(got[k], r[k].as_deref());
            }
        }
        prop_assert!(t.get(rows.len() as u32).is_none());
        let labels = TraceTexts { vars: TextTable::default(), ops: t, classes: None };
        prop_assert_eq!(TraceTexts::decode(&labels.encode()).unwrap(), labels);
    }

    #[test]
    fn ranges_slice_each_kinds_text_to_the_records_text_and_runs_are_one_slice(
        rows in texts(), from: usize, to: usize,
    ) {
        let t = table(&rows);
        for (i, r) in rows.iter().enumerate() {
            for (k, text) in r.iter().enumerate() {
                let range = t.range(i as u32, k).unwrap();
                let got = range.map(|[a, b]| &t.text(k)[a as usize..b as usize]);
                prop_assert_eq!(got, text.as_deref());
                let kind = t.kind(k).unwrap();
                prop_assert_eq!(kind.get(i as u32), Some(text.as_deref()));
                prop_assert_eq!(kind.len(), rows.len());
                prop_assert_eq!(kind.text(), t.text(k));
            }
        }
        for k in 0..4 {
            prop_assert_eq!(t.range(rows.len() as u32, k), None);
        }
        prop_assert_eq!(t.text(3), "");
        let (lo, hi) = (from % (rows.len() + 1), to % (rows.len() + 1));
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        for k in 0..3 {
            // The present texts of ids `lo..hi`, in order, are the text
            // from the first's start to the last's end.
            let present: Vec<[u32; 2]> =
                (lo..hi).filter_map(|i| t.range(i as u32, k).unwrap()).collect();
            let joined: String = rows[lo..hi].iter().filter_map(|r| r[k].clone()).collect();
            if let (Some(first), Some(last)) = (present.first(), present.last()) {
                prop_assert_eq!(&t.text(k)[first[0] as usize..last[1] as usize], joined);
            }
            // A run whose records all have the kind's text is one
            // slice, split where each starts.
            let all = rows[lo..hi].iter().all(|r| r[k].is_some());
            // Of the first kind (the ids), a run whose records all
            // have text is one slice, split where each ends; the other
            // kinds give none.
            let all = all && k == 0;
            match t.run(k, lo as u32, hi as u32) {
                Some(run) => {
                    prop_assert!(all);
                    let ends: Vec<usize> = run.ends().collect();
                    prop_assert_eq!(ends.len(), run.len());
                    prop_assert_eq!(run.is_empty(), lo == hi);
                    prop_assert_eq!(ends.last().copied().unwrap_or(0), run.text().len());
                    let starts = std::iter::once(0).chain(ends.iter().copied());
                    let split: Vec<&str> =
                        starts.zip(&ends).map(|(a, &b)| &run.text()[a..b]).collect();
                    let expected: Vec<&str> =
                        rows[lo..hi].iter().map(|r| r[k].as_deref().unwrap()).collect();
                    let one_by_one: Vec<&str> =
                        (0..run.len()).filter_map(|i| run.get(i)).collect();
                    prop_assert_eq!(&split, &expected);
                    prop_assert_eq!(one_by_one, expected);
                    prop_assert_eq!(run.get(run.len()), None);
                }
                None => prop_assert!(!all),
            }
        }
        prop_assert!(t.run(0, 0, rows.len() as u32 + 1).is_none());
        prop_assert!(t.kind(3).is_none());
        prop_assert_eq!(t.kind(0).unwrap().get(rows.len() as u32), None);
        prop_assert!(t.run(3, 0, 0).is_none());
    }

    #[test]
    fn consecutive_records_read_together_are_each_records_texts(
        rows in texts(), from: usize, to: usize,
    ) {
        let t = table(&rows);
        let n = rows.len() + 3;
        let (lo, hi) = ((from % n) as u32, (to % n) as u32);
        let together: Vec<[Option<&str>; 3]> = t.records(lo, hi).collect();
        // Records past the last are left out; lo past hi is none.
        let one_by_one: Vec<[Option<&str>; 3]> =
            (lo..hi).map_while(|i| t.get(i)).collect();
        prop_assert_eq!(t.records(lo, hi).len(), one_by_one.len());
        prop_assert_eq!(&together, &one_by_one);
        // Without absent texts, the same records with nothing to look
        // at for presence; with one, none.
        let complete = rows.iter().all(|r| r.iter().all(Option::is_some));
        match t.complete_records(lo, hi) {
            Some(records) => {
                prop_assert!(complete);
                prop_assert_eq!(records.len(), one_by_one.len());
                let present: Vec<[Option<&str>; 3]> = records.map(|r| r.map(Some)).collect();
                prop_assert_eq!(present, one_by_one);
            }
            None => prop_assert!(!complete),
        }
    }

    #[test]
    fn a_table_without_absent_texts_reads_its_records_whole(
        rows in proptest::collection::vec(["\\PC{0,6}", "\\PC{0,6}", "\\PC{0,6}"], 0..30),
        from: usize, to: usize,
    ) {
        let rows: Vec<[Option<String>; 3]> = rows.into_iter().map(|r| r.map(Some)).collect();
        let t = table(&rows);
        let n = rows.len() + 2;
        let (lo, hi) = ((from % n) as u32, (to % n) as u32);
        let whole: Vec<[&str; 3]> = t.complete_records(lo, hi).unwrap().collect();
        let expected: Vec<[&str; 3]> = rows
            .iter()
            .skip(lo as usize)
            .take((hi as usize).saturating_sub(lo as usize))
            .map(|r| [0, 1, 2].map(|k| r[k].as_deref().unwrap()))
            .collect();
        prop_assert_eq!(whole, expected);
    }

    #[test]
    fn damaged_values_are_errors_not_panics(rows in texts(), cut: usize, at: usize, byte: u8) {
        let labels = TraceTexts { vars: TextTable::default(), ops: table(&rows), classes: None };
        let bytes = labels.encode();
        let _ = TraceTexts::decode(&bytes[..cut % (bytes.len() + 1)]);
        let mut changed = bytes.clone();
        let i = at % changed.len();
        changed[i] = byte;
        // A change that still decodes gives a table whose every text
        // can be read.
        if let Ok(l) = TraceTexts::decode(&changed) {
            for i in 0..l.ops.len() as u32 {
                let _ = l.ops.get(i);
            }
        }
    }
}

#[test]
fn ends_out_of_order_or_inside_a_character_are_refused() {
    let mut t = TextTable::<1>::default();
    assert!(t.push([Some("é")]));
    assert!(t.push([Some("ab")]));
    let mut bytes = Vec::new();
    t.encode(&mut bytes);
    // count, text length, text (2 + 2 bytes), ends 2 and 4.
    assert_eq!(&bytes[..8], &[2, 0, 0, 0, 4, 0, 0, 0]);
    let mut inside = bytes.clone();
    inside[12] = 1; // the first end inside "é"
    assert!(TextTable::<1>::decode(&inside).is_err());
    let mut back = bytes.clone();
    back[16] = 1; // the second end before the first
    assert!(TextTable::<1>::decode(&back).is_err());
    let (ok, rest) = TextTable::<1>::decode(&bytes).unwrap();
    assert!(rest.is_empty());
    assert_eq!(ok.get(0), Some([Some("é")]));
    assert_eq!(ok.get(1), Some([Some("ab")]));
}

#[test]
fn absent_and_empty_texts_differ() {
    let mut t = TextTable::<2>::default();
    assert!(t.push([Some(""), None]));
    assert_eq!(t.get(0), Some([Some(""), None]));
}

#[test]
fn the_stored_form_keeps_presence_apart_from_the_ends() {
    // Presence is a bit of each end in memory; stored, the ends are
    // plain and presence follows them a byte per record, as values
    // stored before were.
    let mut t = TextTable::<2>::default();
    assert!(t.push([Some("ab"), None]));
    assert!(t.push([None, Some("")]));
    assert!(t.push([Some("c"), Some("d")]));
    let mut bytes = Vec::new();
    t.encode(&mut bytes);
    let le = |n: u32| n.to_le_bytes();
    let mut want = Vec::new();
    want.extend(le(3));
    want.extend(le(3));
    want.extend(b"abc");
    want.extend(le(1));
    want.extend(b"d");
    for end in [[2, 0], [2, 0], [3, 1]] {
        want.extend(le(end[0]));
        want.extend(le(end[1]));
    }
    want.extend([0b01, 0b10, 0b11]);
    assert_eq!(bytes, want);
    let (back, rest) = TextTable::<2>::decode(&bytes).unwrap();
    assert!(rest.is_empty());
    assert_eq!(back, t);
    assert_eq!(back.get(1), Some([None, Some("")]));
}

fn var(name: &str, class: Option<&str>, version: u32, category: Option<&str>) -> VarRecord {
    VarRecord {
        name: name.into(),
        class_name: class.map(str::to_string),
        version,
        value: None,
        comment: None,
        category: category.map(str::to_string),
        session_id: None,
        session: None,
        node_id: None,
        common: crate::records::Common::default(),
    }
}

proptest! {
    #[test]
    fn a_variables_fields_read_from_its_label_are_its_records(
        vars in proptest::collection::vec(
            ("[a-z:@]{0,5}", proptest::option::of("[a-z:@]{0,4}"), any::<u32>(),
             proptest::option::of("[a-z]{0,3}")),
            0..12,
        ),
    ) {
        let records: Vec<VarRecord> = vars
            .iter()
            .map(|(n, c, v, k)| var(n, c.as_deref(), *v, k.as_deref()))
            .collect();
        let mut labels = TraceTexts::default();
        let mut scratch = String::new();
        for r in &records {
            prop_assert!(labels.push_variable(r, &mut scratch));
        }
        let back = TraceTexts::decode(&labels.encode()).unwrap();
        prop_assert_eq!(&back, &labels);
        for (i, r) in records.iter().enumerate() {
            let t = back.var(i as u32).unwrap();
            prop_assert_eq!(t.node_id, r.full_node_id());
            prop_assert_eq!(t.full_name, r.full_name());
            prop_assert_eq!(t.name, r.name.as_str());
            prop_assert_eq!(t.class, r.class_name.as_deref());
            prop_assert_eq!(t.version, r.version);
            prop_assert_eq!(t.category, r.category.as_deref());
        }
        prop_assert!(back.var(records.len() as u32).is_none());
    }
}

#[test]
fn labels_stored_before_classes_read_without_them() {
    let mut old = TraceTexts {
        classes: None,
        ..TraceTexts::default()
    };
    assert!(old.push_variable(&var("D1", Some("message"), 1, None), &mut String::new()));
    let bytes = old.encode();
    assert_eq!(&bytes[..4], b"MTL1");
    let back = TraceTexts::decode(&bytes).unwrap();
    assert_eq!(back.classes, None);
    assert_eq!(back.vars.get(0), Some([Some("message:D1@1"), None]));
    // Without its class, `message:D1@1` does not say its name.
    assert_eq!(back.var(0), None);
}

#[test]
fn classes_that_do_not_fit_the_ids_are_refused_or_not_read() {
    let mut labels = TraceTexts::default();
    assert!(labels.push_variable(&var("a", Some("c"), 1, None), &mut String::new()));
    labels.classes = Some(TextTable::default());
    let err = TraceTexts::decode(&labels.encode()).unwrap_err();
    assert!(
        err.to_string().contains("0 classes for 1 variables"),
        "{err}"
    );
    // A class the id does not start with, or a version not as written,
    // splits nothing.
    assert_eq!(VarText::split("c:a@1", Some("d"), None), None);
    assert_eq!(VarText::split("c:a@01", Some("c"), None), None);
    assert_eq!(VarText::split("c:a@+1", Some("c"), None), None);
    assert_eq!(VarText::split("c:a", Some("c"), None), None);
    assert_eq!(
        VarText::split("c:a@1", Some("c"), None).map(|t| t.name),
        Some("a")
    );
    assert_eq!(
        VarText::split("c:a@0", Some(""), None).map(|t| t.name),
        Some("c:a")
    );
}

#[test]
fn a_text_as_long_as_the_presence_bit_is_refused() {
    let mut bytes = Vec::new();
    bytes.extend(1u32.to_le_bytes());
    bytes.extend((1u32 << 31).to_le_bytes());
    let err = TextTable::<1>::decode(&bytes).unwrap_err();
    assert!(err.to_string().contains("2147483648 bytes"), "{err}");
}
