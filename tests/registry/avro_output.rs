//! Avro types and Avro output end to end on the real broker and registry: dates, times,
//! timestamps, decimals, UUIDs, bytes and enums reach the JSON output as
//! docs/src/operations/avro.md says (expectations written by hand) and come back with their own
//! types through Avro output; a given output schema with the changelog envelope.

use serde_json::{json, Value};

use super::avro_e2e::{decode_output, env_of, latest_id, WAIT};
use crate::common::avro::{self, Writer};
use crate::common::kafka::{self, Sidejoin};

fn types_schema() -> Value {
    json!({"type": "record", "name": "T", "namespace": "types", "fields": [
        {"name": "id", "type": "int"},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "dec_fixed", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "f", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "b", "type": "bytes"},
        {"name": "m", "type": {"type": "map", "values": "int"}},
        {"name": "arr", "type": {"type": "array", "items": "long"}},
        {"name": "nested", "type": {"type": "record", "name": "N", "fields": [
            {"name": "x", "type": "int"},
            {"name": "y", "type": ["null", "string"]}
        ]}},
        {"name": "opt", "type": ["null", "long"]},
        {"name": "fl", "type": "float"},
        {"name": "dbl", "type": "double"},
        {"name": "flag", "type": "boolean"}
    ]})
}

/// One value of every logical and complex type (as apache-avro values).
fn types_value() -> Vec<(String, apache_avro::types::Value)> {
    use apache_avro::types::Value as A;
    vec![
        ("id".into(), A::Int(7)),
        ("ts_ms".into(), A::TimestampMillis(1_706_708_700_123)),
        ("ts_us".into(), A::TimestampMicros(1_706_708_700_123_456)),
        ("lts".into(), A::LocalTimestampMillis(1_706_708_700_123)),
        ("d".into(), A::Date(19_753)),
        ("t_ms".into(), A::TimeMillis(49_500_123)),
        ("t_us".into(), A::TimeMicros(49_500_123_456)),
        (
            "dec".into(),
            A::Decimal(apache_avro::Decimal::from(vec![0xcf, 0xc7])),
        ),
        (
            "dec_fixed".into(),
            A::Decimal(apache_avro::Decimal::from(1230i64.to_be_bytes().to_vec())),
        ),
        (
            "u".into(),
            A::Uuid(apache_avro::Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap()),
        ),
        ("e".into(), A::Enum(1, "GREEN".into())),
        ("f".into(), A::Fixed(4, vec![1, 2, 3, 4])),
        ("b".into(), A::Bytes(vec![0xff, 0x00])),
        (
            "m".into(),
            A::Map([("b".to_owned(), A::Int(2)), ("a".to_owned(), A::Int(1))].into()),
        ),
        (
            "arr".into(),
            A::Array(vec![A::Long(1), A::Long(2), A::Long(3)]),
        ),
        (
            "nested".into(),
            A::Record(vec![
                ("x".into(), A::Int(5)),
                ("y".into(), A::Union(0, Box::new(A::Null))),
            ]),
        ),
        ("opt".into(), A::Union(1, Box::new(A::Long(42)))),
        ("fl".into(), A::Float(1.5)),
        ("dbl".into(), A::Double(0.1)),
        ("flag".into(), A::Boolean(true)),
    ]
}

/// Joins one left row of every type (Avro, `types_value`) with the JSON row `right_row`:
/// starts sidejoin selecting `select` in the append mode, with `extra` variables, and produces
/// both rows. Returns the output topic and the running sidejoin.
fn join_one_row_of_every_type(
    name: &str,
    select: &str,
    extra: &[(&str, &str)],
    right_row: &[u8],
) -> (String, Sidejoin) {
    let (left, right, output) = kafka::join_topics(name, [1, 1, 1]);
    let app = kafka::unique(&format!("{name}-app"));
    let w = Writer::new(&format!("{left}-value"), &types_schema());
    let value = apache_avro::types::Value::Record(types_value());
    let mut env = kafka::base_env(&app, &left, &right, &output);
    env.extend(env_of(&[
        ("SIDEJOIN_LEFT_FORMAT", "avro"),
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_SELECT", select),
        ("SIDEJOIN_OUTPUT_MODE", "append"),
    ]));
    env.extend(env_of(extra));
    env.push(("SIDEJOIN_SCHEMA_REGISTRY_URL".into(), avro::registry_url()));
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let ts = kafka::now_ms();
    avro::produce_bytes(
        &kafka::producer(),
        &[
            (left.clone(), None, Some(w.frame_value(value)), ts),
            (right.clone(), None, Some(right_row.to_vec()), ts),
        ],
    );
    (output, sj)
}

/// Acceptance 3 (JSON output): every logical and complex Avro type reaches the output row as
/// the mapping in docs/src/operations/avro.md says. The expected row is written by hand.
#[test]
fn logical_types_reach_the_output_as_documented() {
    let (output, sj) = join_one_row_of_every_type(
        "avro-types",
        "l.*, r.other",
        &[],
        br#"{"id":7,"other":"x"}"#,
    );
    let got = kafka::read_all(&output, 1, WAIT);
    assert_eq!(got.len(), 1, "logs:\n{}", sj.logs());
    let text = String::from_utf8(got[0].value.clone().unwrap()).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        documented_row(),
        "{text}"
    );
    // Decimals keep their exact text, scale included.
    assert!(text.contains(r#""dec":-123.45,"#), "{text}");
    assert!(text.contains(r#""dec_fixed":1.230,"#), "{text}");
}

/// `types_value` joined with `{"other": "x"}` as docs/src/operations/avro.md maps it to JSON
/// (written by hand).
fn documented_row() -> Value {
    json!({
        "id": 7,
        "ts_ms": "2024-01-31T13:45:00.123Z",
        "ts_us": "2024-01-31T13:45:00.123456Z",
        "lts": "2024-01-31T13:45:00.123",
        "d": "2024-01-31",
        "t_ms": "13:45:00.123",
        "t_us": "13:45:00.123456",
        "dec": -123.45,
        // Its scale's three digits, as the output's decimal text has them (numbers compare by
        // their text: serde_json's `arbitrary_precision`).
        "dec_fixed": serde_json::from_str::<Value>("1.230").expect("a number"),
        "u": "123e4567-e89b-12d3-a456-426614174000",
        "e": "GREEN",
        "f": "AQIDBA==",
        "b": "/wA=",
        "m": {"a": 1, "b": 2},
        "arr": [1, 2, 3],
        "nested": {"x": 5, "y": null},
        "opt": 42,
        "fl": 1.5,
        "dbl": 0.1,
        "flag": true,
        "other": "x"
    })
}

/// Acceptance 3 and 4 (Avro output): every logical and complex type read from Avro input is
/// written back with its own type — the output record, decoded by apache-avro with the schema
/// registered under `<topic>-value`, holds the very values the input was written with.
#[test]
fn logical_types_round_trip_through_avro_output() {
    use apache_avro::types::Value as A;
    let (output, sj) = join_one_row_of_every_type(
        "avro-types-out",
        "l.*",
        &[("SIDEJOIN_OUTPUT_FORMAT", "avro")],
        br#"{"id":7}"#,
    );
    let got = kafka::read_all(&output, 1, WAIT);
    assert_eq!(got.len(), 1, "logs:\n{}", sj.logs());
    let b = got[0].value.as_deref().unwrap();
    let id = u32::from_be_bytes(b[1..5].try_into().unwrap());
    assert_eq!(id, latest_id(&format!("{output}-value")));
    let schema = apache_avro::Schema::parse_str(&avro::schema_by_id(id)).unwrap();
    let mut body = &b[5..];
    #[allow(deprecated)]
    let decoded = apache_avro::from_avro_datum(&schema, &mut body, None).unwrap();
    let A::Record(fields) = decoded else {
        panic!("a record: {decoded:?}")
    };
    // Derived output fields are nullable unions: the value is the non-null branch.
    let unwrap = |v: A| match v {
        A::Union(_, inner) => *inner,
        other => other,
    };
    let got: Vec<(String, A)> = fields.into_iter().map(|(n, v)| (n, unwrap(v))).collect();
    let expected: Vec<(String, A)> = types_value()
        .into_iter()
        // An input union (`opt`) is one too in the output; nested records keep their own.
        .map(|(n, v)| (n, unwrap(v)))
        .collect();
    assert_eq!(got, expected);
}

/// Avro output from JSON inputs with the row schema given in `SIDEJOIN_OUTPUT_AVRO_SCHEMA`, in
/// the changelog mode: the Debezium-shaped envelope, decoded by apache-avro with the schema
/// registered under `<topic>-value`, holds what the JSON changelog would (expected by hand).
#[test]
fn given_schema_and_changelog_envelope() {
    let (left, right, output) = kafka::join_topics("avro-given", [1, 1, 1]);
    let app = kafka::unique("avro-given-app");
    let row = json!({"type": "record", "name": "Joined", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": null},
        {"name": "score", "type": ["null", "double"], "default": null}
    ]});
    let mut env = kafka::base_env(&app, &left, &right, &output);
    env.extend(env_of(&[
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_JOIN_TYPE", "left"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.name AS name, r.score AS score",
        ),
        ("SIDEJOIN_OUTPUT_FORMAT", "avro"),
    ]));
    env.push(("SIDEJOIN_OUTPUT_AVRO_SCHEMA".into(), row.to_string()));
    env.push(("SIDEJOIN_SCHEMA_REGISTRY_URL".into(), avro::registry_url()));
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let p = kafka::producer();
    let ts = kafka::now_ms();
    kafka::produce(&p, &left, None, Some(r#"{"id":1,"name":"ann"}"#), ts);
    sj.wait_records_in(1, WAIT);
    kafka::produce(&p, &right, None, Some(r#"{"id":1,"score":2.5}"#), ts);
    // +I[1,ann,null]; then -D[1,ann,null], +I[1,ann,2.5] (generated retractions kept).
    let got: Vec<Value> = kafka::read_all(&output, 3, WAIT)
        .iter()
        .map(|r| decode_output(r.value.as_deref()).0)
        .collect();
    assert_eq!(
        got,
        vec![
            json!({"before": null, "after": {"id": 1, "name": "ann", "score": null}, "op": "c"}),
            json!({"before": {"id": 1, "name": "ann", "score": null}, "after": null, "op": "d"}),
            json!({"before": null, "after": {"id": 1, "name": "ann", "score": 2.5}, "op": "c"}),
        ],
        "logs:\n{}",
        sj.logs()
    );
    let schema: Value =
        serde_json::from_str(&avro::schema_by_id(latest_id(&format!("{output}-value")))).unwrap();
    assert_eq!(schema["name"], "Envelope");
}
