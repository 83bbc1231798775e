//! Decoder hardening, in process (the `cargo fuzz` targets the issue asks for are not in this
//! tree; these property tests run in CI instead): arbitrary bytes and mutated valid records into
//! every input decoder — JSON, upsert-JSON, Debezium-JSON, and the Avro datum decoder over
//! schemas with every type, recursion and a Debezium envelope — never panic, and every refusal
//! has a message.

use apache_avro::types::Value as A;
use apache_avro::Schema;
use proptest::prelude::*;
use sidejoin::config::{self, Mode};
use sidejoin::format::Decoder;
use sidejoin_core::avro::json::datum_to_json;
use sidejoin_core::avro::schema::WriterSchema;

fn decoder(format: &str) -> Decoder {
    let env = [
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_LEFT_FORMAT", format),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()));
    let cfg = config::load(env.to_vec(), Mode::Replay).expect("config");
    Decoder::new(&cfg.join.left)
}

fn schemas() -> Vec<WriterSchema> {
    [
        r#"{"type":"record","name":"T","fields":[
            {"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"s","type":"string"},
            {"name":"b","type":"bytes"},{"name":"f","type":{"type":"fixed","name":"F","size":3}},
            {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
            {"name":"m","type":{"type":"map","values":["null","double"]}},
            {"name":"a","type":{"type":"array","items":"float"}},
            {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
            {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
            {"name":"dt","type":{"type":"int","logicalType":"date"}},
            {"name":"t","type":{"type":"int","logicalType":"time-millis"}},
            {"name":"u","type":{"type":"string","logicalType":"uuid"}}]}"#,
        r#"{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}"#,
        r#"{"type":"record","name":"Envelope","fields":[
            {"name":"before","type":["null",{"type":"record","name":"V","fields":[{"name":"id","type":"int"}]}]},
            {"name":"after","type":["null","V"]},{"name":"op","type":"string"}]}"#,
    ]
    .iter()
    .map(|s| WriterSchema::parse(s).expect("a valid schema"))
    .collect()
}

/// A valid datum of the first schema, encoded by apache-avro.
fn valid_datum() -> Vec<u8> {
    let schema = Schema::parse_str(
        r#"{"type":"record","name":"V","fields":[{"name":"id","type":"int"},{"name":"s","type":"string"}]}"#,
    )
    .unwrap();
    let v = A::Record(vec![
        ("id".into(), A::Int(42)),
        ("s".into(), A::String("hello".into())),
    ]);
    #[allow(deprecated)]
    apache_avro::to_avro_datum(&schema, v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn json_decoders_never_panic(
        key in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        value in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..128)),
    ) {
        for format in ["json", "upsert-json", "debezium-json"] {
            if let Err(e) = decoder(format).decode(key.as_deref(), value.as_deref()) {
                prop_assert!(!e.0.is_empty());
            }
        }
    }

    #[test]
    fn json_shaped_garbage_never_panics(text in r#"[\{\}\[\]":,0-9a-z\\ .eE+-]{0,80}"#) {
        for format in ["json", "upsert-json", "debezium-json"] {
            let _ = decoder(format).decode(Some(text.as_bytes()), Some(text.as_bytes()));
        }
    }

    #[test]
    fn avro_decoder_never_panics(body in proptest::collection::vec(any::<u8>(), 0..256)) {
        for s in &schemas() {
            let mut out = Vec::new();
            if let Err(e) = datum_to_json(&s.root, &s.names, &body, &mut out) {
                prop_assert!(!e.is_empty());
            } else {
                // What it accepts is valid JSON.
                prop_assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
            }
        }
    }

    #[test]
    fn mutated_avro_never_panics(flips in proptest::collection::vec((0usize..16, any::<u8>()), 1..6), cut in 0usize..16) {
        let mut body = valid_datum();
        for (i, b) in flips {
            let n = body.len();
            body[i % n] ^= b;
        }
        body.truncate(body.len().saturating_sub(cut % 4));
        for s in &schemas() {
            let mut out = Vec::new();
            let _ = datum_to_json(&s.root, &s.names, &body, &mut out);
        }
    }
}
