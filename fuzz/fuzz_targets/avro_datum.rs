//! The Avro datum decoder over generated writer schemas: no panic, and the JSON it writes stays
//! within its output bound (`datum_output_limit` of the body's length).
#![no_main]

#[path = "common/schema_gen.rs"]
mod schema_gen;

use libfuzzer_sys::fuzz_target;
use sidejoin_core::avro::json::{datum_output_limit, datum_to_json};
use sidejoin_core::avro::schema::WriterSchema;

fuzz_target!(|data: &[u8]| {
    let (text, body) = schema_gen::schema_and_body(data);
    let Ok(schema) = WriterSchema::parse(&text) else {
        return;
    };
    let mut out = Vec::new();
    if datum_to_json(&schema.root, &schema.names, body, &mut out).is_ok() {
        assert!(
            out.len() <= datum_output_limit(body.len()),
            "{} bytes of JSON",
            out.len()
        );
        serde_json::from_slice::<serde_json::Value>(&out).expect("the datum's JSON is valid");
    }
});
