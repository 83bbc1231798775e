//! Avro writer schemas generated from fuzz bytes: every primitive, records (with recursion
//! through a named reference), enums, arrays, maps, unions, fixed, and the logical types
//! (decimals with any precision and scale, big-decimal, uuid, dates, times, timestamps,
//! duration), including the zero-width types (`null`, empty records).

/// The bytes a schema is drawn from; past their end every choice is 0.
pub struct Draw<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
    names: usize,
}

/// A writer schema's text drawn from the head of `data`, and the rest of `data` as a datum body.
pub fn schema_and_body(data: &[u8]) -> (String, &[u8]) {
    let mut draw = Draw::new(data);
    let text = draw.schema(0, None);
    (text, data.get(draw.pos..).unwrap_or_default())
}

impl<'a> Draw<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Draw {
            bytes,
            pos: 0,
            names: 0,
        }
    }

    fn next(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn name(&mut self) -> String {
        self.names += 1;
        format!("N{}", self.names)
    }

    /// A schema's JSON; `record` is the innermost enclosing record's name (for recursion).
    pub fn schema(&mut self, depth: usize, record: Option<&str>) -> String {
        let choice = if depth >= 5 {
            self.next() % 8
        } else {
            self.next() % 22
        };
        match choice {
            0 => r#""null""#.into(),
            1 => r#""boolean""#.into(),
            2 => r#""int""#.into(),
            3 => r#""long""#.into(),
            4 => r#""float""#.into(),
            5 => r#""double""#.into(),
            6 => r#""bytes""#.into(),
            7 => r#""string""#.into(),
            8 => {
                let name = self.name();
                let fields: Vec<String> = (0..self.next() % 4)
                    .map(|i| {
                        format!(
                            r#"{{"name":"f{i}","type":{}}}"#,
                            self.schema(depth + 1, Some(&name))
                        )
                    })
                    .collect();
                format!(
                    r#"{{"type":"record","name":"{name}","fields":[{}]}}"#,
                    fields.join(",")
                )
            }
            9 => {
                let symbols: Vec<String> = (0..1 + self.next() % 4)
                    .map(|i| format!(r#""S{i}""#))
                    .collect();
                format!(
                    r#"{{"type":"enum","name":"{}","symbols":[{}]}}"#,
                    self.name(),
                    symbols.join(",")
                )
            }
            10 => format!(
                r#"{{"type":"array","items":{}}}"#,
                self.schema(depth + 1, record)
            ),
            11 => format!(
                r#"{{"type":"map","values":{}}}"#,
                self.schema(depth + 1, record)
            ),
            12 => format!(r#"["null",{}]"#, self.non_null(depth, record)),
            13 => format!(
                r#"{{"type":"fixed","name":"{}","size":{}}}"#,
                self.name(),
                self.next() % 20
            ),
            14 => {
                let precision = u32::from(self.next())
                    .pow(u32::from(self.next() % 5))
                    .max(1);
                let scale = u32::from(self.next())
                    .pow(u32::from(self.next() % 5))
                    .min(precision);
                if self.next() & 1 == 0 {
                    format!(
                        r#"{{"type":"bytes","logicalType":"decimal","precision":{precision},"scale":{scale}}}"#
                    )
                } else {
                    format!(
                        r#"{{"type":"fixed","name":"{}","size":{},"logicalType":"decimal","precision":{precision},"scale":{scale}}}"#,
                        self.name(),
                        1 + self.next() % 40
                    )
                }
            }
            15 => r#"{"type":"bytes","logicalType":"big-decimal"}"#.into(),
            16 => r#"{"type":"string","logicalType":"uuid"}"#.into(),
            17 => format!(
                r#"{{"type":"fixed","name":"{}","size":16,"logicalType":"uuid"}}"#,
                self.name()
            ),
            18 => {
                let (ty, logical) = [
                    ("int", "date"),
                    ("int", "time-millis"),
                    ("long", "time-micros"),
                    ("long", "timestamp-millis"),
                    ("long", "timestamp-micros"),
                    ("long", "timestamp-nanos"),
                    ("long", "local-timestamp-millis"),
                    ("long", "local-timestamp-micros"),
                    ("long", "local-timestamp-nanos"),
                ][usize::from(self.next()) % 9];
                format!(r#"{{"type":"{ty}","logicalType":"{logical}"}}"#)
            }
            19 => format!(
                r#"{{"type":"fixed","name":"{}","size":12,"logicalType":"duration"}}"#,
                self.name()
            ),
            20 => format!(
                r#"{{"type":"record","name":"{}","fields":[]}}"#,
                self.name()
            ),
            _ => match record {
                // A recursive field must be optional, or no finite datum has the type.
                Some(r) => format!(r#"["null","{r}"]"#),
                None => r#""null""#.into(),
            },
        }
    }

    /// A schema that is neither null nor a union (a union's other branch).
    fn non_null(&mut self, depth: usize, record: Option<&str>) -> String {
        let s = self.schema(depth + 1, record);
        if s == r#""null""# || s.starts_with('[') {
            r#""string""#.into()
        } else {
            s
        }
    }
}
