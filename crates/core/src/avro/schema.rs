//! A writer schema, parsed, with its named types resolved (to follow references while decoding).

use apache_avro::schema::{Names, ResolvedSchema};
use apache_avro::Schema;

/// A parsed schema with its named types, to follow references.
pub struct WriterSchema {
    pub root: Schema,
    pub names: Names,
}

impl WriterSchema {
    pub fn new(root: Schema) -> Result<Self, String> {
        let names = ResolvedSchema::new(&root)
            .map_err(|e| format!("cannot be resolved: {e}"))?
            .get_names()
            .iter()
            .map(|(n, s)| (n.clone(), (*s).clone()))
            .collect();
        Ok(WriterSchema { root, names })
    }

    /// Parses an Avro schema's JSON text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let schema =
            Schema::parse_str(text).map_err(|e| format!("is not a valid Avro schema: {e}"))?;
        Self::new(schema)
    }
}
