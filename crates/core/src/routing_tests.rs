use super::*;

fn row(json: &str) -> Row {
    Row::parse(json.as_bytes()).unwrap()
}

fn route(columns: &[&str], pk: Option<&[&str]>, placement: Placement) -> Route {
    let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let pk: Option<Vec<String>> = pk.map(|p| p.iter().map(|c| c.to_string()).collect());
    Route::new(Side::Left, &cols, pk.as_deref(), placement)
}

fn routed(r: &Route, e: Event) -> Vec<Routed> {
    let mut out = Vec::new();
    r.route(e, &mut out).unwrap();
    out
}

fn decoded(r: &Routed) -> Event {
    crate::format::changes::decode(Some(&r.value))
        .unwrap()
        .unwrap()
}

#[test]
fn an_update_that_moves_its_row_is_split_between_the_two_keys_partitions() {
    let r = route(&["k"], Some(&["id"]), Placement::own(8));
    let (before, after) = (row(r#"{"id":1,"k":1}"#), row(r#"{"id":1,"k":2}"#));
    let out = routed(
        &r,
        Event::Update {
            before: Some(before.clone()),
            after: after.clone(),
        },
    );
    assert_eq!(out.len(), 2);
    assert_eq!(
        decoded(&out[0]),
        Event::Change(Kind::UpdateBefore, before.clone())
    );
    assert_eq!(
        decoded(&out[1]),
        Event::Change(Kind::UpdateAfter, after.clone())
    );
    // Each half goes where the other changes of its key go.
    let insert_old = routed(&r, Event::Change(Kind::Insert, before));
    let insert_new = routed(&r, Event::Change(Kind::Insert, after));
    assert_eq!(out[0].partition, insert_old[0].partition);
    assert_eq!(out[1].partition, insert_new[0].partition);
    assert_eq!(out[0].key, insert_old[0].key);
}

#[test]
fn an_update_that_stays_is_one_record() {
    let r = route(&["k"], Some(&["id"]), Placement::own(8));
    let e = Event::Update {
        before: Some(row(r#"{"id":1,"k":1,"v":1}"#)),
        after: row(r#"{"id":1,"k":1,"v":2}"#),
    };
    let out = routed(&r, e.clone());
    assert_eq!(out.len(), 1);
    assert_eq!(decoded(&out[0]), e);
}

#[test]
fn values_spec_calls_equal_get_one_canonical_key() {
    let r = route(&["k"], None, Placement::own(16));
    let a = routed(&r, Event::Change(Kind::Insert, row(r#"{"k":1}"#)));
    let b = routed(&r, Event::Change(Kind::Insert, row(r#"{"k":1.0}"#)));
    assert_eq!(a[0].key, b[0].key);
    assert_eq!(a[0].partition, b[0].partition);
}

#[test]
fn a_row_without_a_hashed_column_and_an_update_without_its_old_row_are_errors() {
    let r = route(&["k"], Some(&["id"]), Placement::own(4));
    let mut out = Vec::new();
    let e = r
        .route(Event::Change(Kind::Insert, row(r#"{"id":1}"#)), &mut out)
        .unwrap_err();
    assert!(
        e.to_string().contains("no `k` column") && e.to_string().contains("SIDEJOIN_LEFT_HASH_BY"),
        "{e}"
    );
    let e = r
        .route(
            Event::Update {
                before: None,
                after: row(r#"{"id":1,"k":1}"#),
            },
            &mut out,
        )
        .unwrap_err();
    assert!(e.to_string().contains("REPLICA IDENTITY FULL"), "{e}");
    assert!(out.is_empty());
    // By primary-key columns the row cannot have moved: routed by its new row.
    let by_pk = route(&["id"], Some(&["id"]), Placement::own(4));
    let e = Event::Update {
        before: None,
        after: row(r#"{"id":1,"k":1}"#),
    };
    assert_eq!(decoded(&routed(&by_pk, e.clone())[0]), e);
}

fn samples<'a>(keys: &'a [(i32, &'a [u8])]) -> Vec<Sample<'a>> {
    keys.iter()
        .enumerate()
        .map(|(i, (p, k))| Sample {
            partition: *p,
            offset: i as i64,
            key: k,
        })
        .collect()
}

/// Keys placed by `hash` among `n` partitions, as a producer would.
fn placed(keys: &[&'static [u8]], hash: Hash, n: i32) -> Vec<(i32, &'static [u8])> {
    keys.iter().map(|k| (hash.partition(k, n), *k)).collect()
}

/// What `learn` makes of `keys` placed by `hash` among `n` partitions: it must be a placement.
fn learnt(cols: &[String], keys: &[&'static [u8]], hash: Hash, n: i32) -> Placement {
    let Learnt::Placement(p) = learn("t", n, cols, &samples(&placed(keys, hash, n))).unwrap()
    else {
        panic!("not learnt")
    };
    p
}

#[test]
fn the_other_sides_key_form_and_partitioner_are_learnt_and_mirrored() {
    let cols = ["user_id".to_owned()];
    let keys: Vec<&'static [u8]> = vec![
        br#"{"user_id":1}"#,
        br#"{"user_id":2}"#,
        br#"{"user_id":3}"#,
        br#"{"user_id":40}"#,
        br#"{"user_id":5}"#,
        br#"{"user_id":6}"#,
        br#"{"user_id":7}"#,
        br#"{"user_id":8}"#,
        br#"{"user_id":9}"#,
        br#"{"user_id":10}"#,
        br#"{"user_id":11}"#,
        br#"{"user_id":12}"#,
    ];
    let p = learnt(&cols, &keys, Hash::Murmur2, 6);
    assert_eq!(p.hash, Hash::Murmur2);
    assert_eq!(p.form, KeyForm::Object(vec![("user_id".to_owned(), 0)]));
    // This side's column is named differently: its values, the other side's key bytes.
    let r = Route::new(Side::Left, &["uid".to_owned()], None, p);
    let out = routed(&r, Event::Change(Kind::Insert, row(r#"{"uid":40,"x":1}"#)));
    assert_eq!(out[0].key, br#"{"user_id":40}"#);
    assert_eq!(
        out[0].partition,
        Hash::Murmur2.partition(br#"{"user_id":40}"#, 6)
    );
}

#[test]
fn scalar_and_text_key_forms_are_learnt_and_mirrored() {
    let cols = ["user_id".to_owned()];
    let scalars: Vec<&'static [u8]> = vec![
        b"1", b"2", b"17", b"33", b"4", b"5", b"6", b"7", b"8", b"9", b"10", b"11",
    ];
    let p = learnt(&cols, &scalars, Hash::Crc32, 3);
    assert_eq!((p.form.clone(), p.hash), (KeyForm::Json, Hash::Crc32));
    let text: Vec<&'static [u8]> = vec![
        b"user-1", b"user-2", b"user-3", b"user-4", b"user-5", b"user-6", b"user-7", b"user-8",
        b"user-9", b"user-10", b"user-11",
    ];
    let p = learnt(&cols, &text, Hash::Murmur2, 3);
    assert_eq!(p.form, KeyForm::Text);
    let r = Route::new(Side::Left, &["uid".to_owned()], None, p);
    let out = routed(&r, Event::Change(Kind::Insert, row(r#"{"uid":"user-2"}"#)));
    assert_eq!(out[0].key, b"user-2");
}

#[test]
fn no_keys_or_keys_both_partitioners_fit_are_not_enough_to_learn() {
    let cols = ["user_id".to_owned()];
    assert!(matches!(learn("t", 3, &cols, &[]), Ok(Learnt::NotYet(_))));
    // One key fits both partitioners in some partition count: not enough to tell.
    let both = (2..64)
        .find_map(|n| {
            let k: &'static [u8] = b"42";
            (Hash::Murmur2.partition(k, n) == Hash::Crc32.partition(k, n)).then_some((n, k))
        })
        .expect("some count where the two agree");
    let why = learn(
        "t",
        both.0,
        &cols,
        &samples(&[(Hash::Crc32.partition(both.1, both.0), both.1)]),
    );
    assert!(
        matches!(&why, Ok(Learnt::NotYet(w)) if w.contains("fit both")),
        "{why:?}"
    );
}

#[test]
fn keys_that_cannot_be_mirrored_are_named() {
    let cols = ["user_id".to_owned()];
    let e = learn("t", 3, &cols, &samples(&[(0, br#"{"id":1}"#)])).unwrap_err();
    assert!(
        e.contains(r#"the key {"id":1} of `t` partition 0 offset 0"#),
        "{e}"
    );
    let e = learn(
        "t",
        3,
        &cols,
        &samples(&[(0, b"1"), (1, br#"{"user_id":2}"#)]),
    )
    .unwrap_err();
    assert!(e.contains("do not share one form"), "{e}");
    // Placed by neither partitioner: every key in a partition neither hash gives.
    let keys: Vec<(i32, &[u8])> = [&b"1"[..], b"2", b"3", b"4", b"5", b"6"]
        .iter()
        .map(|k| {
            let (m, c) = (Hash::Murmur2.partition(k, 4), Hash::Crc32.partition(k, 4));
            ((0..4).find(|p| *p != m && *p != c).unwrap(), *k)
        })
        .collect();
    let e = learn("t", 4, &cols, &samples(&keys)).unwrap_err();
    assert!(e.contains("placed by neither"), "{e}");
}
