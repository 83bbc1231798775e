//! Helpers for Avro tests against the real schema registry that `scripts/test.sh` starts
//! (`scripts/registry.sh`, `TEST_REGISTRY_URL`): registering schemas over plain HTTP and writing
//! Confluent-framed records with the `apache-avro` crate's own encoder — never sidejoin's code,
//! so the tests check sidejoin's decoder against an independent writer.

use apache_avro::types::Value as AvroValue;
use apache_avro::Schema;
use serde_json::Value;

/// The registry of this test run (a Confluent-compatible base URL).
pub(crate) fn registry_url() -> String {
    std::env::var("TEST_REGISTRY_URL").expect(
        "TEST_REGISTRY_URL is not set: run the Avro tests through scripts/test.sh, which starts a local schema registry",
    )
}

/// Registers `schema` (JSON) under `subject` at `url`; returns its id.
pub(crate) fn register_at(url: &str, subject: &str, schema: &Value) -> u32 {
    let body = serde_json::json!({ "schema": schema.to_string() }).to_string();
    let mut resp = ureq::post(format!("{url}/subjects/{subject}/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send(body.as_str())
        .unwrap_or_else(|e| panic!("register {subject}: {e}"));
    let text = resp.body_mut().read_to_string().unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("register {subject}: {text}")) as u32
}

pub(crate) fn register(subject: &str, schema: &Value) -> u32 {
    register_at(&registry_url(), subject, schema)
}

/// The schema text registered under `id`.
pub(crate) fn schema_by_id(id: u32) -> String {
    let mut resp = ureq::get(format!("{}/schemas/ids/{id}", registry_url()))
        .call()
        .unwrap();
    let v: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    v["schema"].as_str().unwrap().to_owned()
}

/// A writer schema and its registry id.
pub(crate) struct Writer {
    pub id: u32,
    pub schema: Schema,
}

impl Writer {
    pub(crate) fn new(subject: &str, schema: &Value) -> Writer {
        Writer {
            id: register(subject, schema),
            schema: Schema::parse(schema).expect("a valid test schema"),
        }
    }

    /// `value` (JSON, unions as plain values) as a framed Avro datum, encoded by apache-avro.
    pub(crate) fn frame(&self, value: &Value) -> Vec<u8> {
        let v = AvroValue::try_from(value.clone())
            .expect("JSON converts")
            .resolve(&self.schema)
            .unwrap_or_else(|e| panic!("{value} does not fit the test schema: {e}"));
        self.frame_value(v)
    }

    /// An Avro value (for logical types JSON cannot express) as a framed datum.
    pub(crate) fn frame_value(&self, v: AvroValue) -> Vec<u8> {
        let mut out = vec![0];
        out.extend_from_slice(&self.id.to_be_bytes());
        // The crate's plain datum writer (deprecated for GenericDatumWriter, same bytes).
        #[allow(deprecated)]
        out.extend(apache_avro::to_avro_datum(&self.schema, v).expect("encodes"));
        out
    }
}

/// A record to produce: `(topic, key, value, timestamp)`.
pub(crate) type RawRecord = (String, Option<Vec<u8>>, Option<Vec<u8>>, i64);

/// Produces records of raw bytes at once, then waits for all (`kafka::produce_many` with the
/// key and value types fixed, so `None` needs no annotation).
pub(crate) fn produce_bytes(p: &rdkafka::producer::FutureProducer, records: &[RawRecord]) {
    super::kafka::produce_many(p, records);
}
