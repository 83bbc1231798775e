//! Avro datums as JSON and back (SPEC §2, §5), given the writer schema: `json` maps a datum to
//! the JSON text the JSON decoders read, `encode` maps output JSON to a datum of the output
//! schema, `schema` holds a parsed writer schema with its named types. Fetching schemas from a
//! registry and the Confluent framing are the runtime's (`sidejoin`'s `avro` module).

pub mod encode;
mod encode_values;
pub mod json;
mod json_values;
pub mod schema;
