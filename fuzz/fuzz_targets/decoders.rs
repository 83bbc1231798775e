//! Every input format's decoder with settings drawn from the input (envelope, primary key,
//! csv delimiter/quote/escape/null literal/columns): no panic, whatever the record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sidejoin_config::{
    ColumnKind, ColumnSpec, CsvSpec, Format, HashBy, Side, SideSpec, TimeSource,
};
use sidejoin_core::format::{Decoder, Reading};

const FORMATS: [Format; 4] = [
    Format::Json,
    Format::UpsertJson,
    Format::DebeziumJson,
    Format::Csv,
];
const KINDS: [ColumnKind; 4] = [
    ColumnKind::String,
    ColumnKind::Integer,
    ColumnKind::Number,
    ColumnKind::Boolean,
];

fn csv(s: &[u8]) -> CsvSpec {
    let columns = (0..usize::from(s[5] % 6))
        .map(|i| ColumnSpec {
            name: format!("c{i}"),
            ty: String::new(),
            kind: KINDS[usize::from(s[6].rotate_right(i as u32 * 2)) % 4],
        })
        .collect();
    CsvSpec {
        columns,
        delimiter: s[1],
        quote: (s[2] != 0).then_some(s[2]),
        escape: (s[3] != 0).then_some(s[3]),
        null_literal: (s[4] & 1 == 1).then(|| String::from_utf8_lossy(&s[7..8]).into_owned()),
        ignore_parse_errors: s[4] & 2 == 2,
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 10 {
        return;
    }
    let (s, rest) = data.split_at(10);
    let format = FORMATS[usize::from(s[0]) % 4];
    let side = SideSpec {
        side: Side::Left,
        key: vec!["id".into()],
        primary_key: (s[8] & 1 == 1).then(|| vec!["id".into(), "k2".into()]),
        format,
        dedup: false,
        ttl_ms: 0,
        time: TimeSource::RecordTimestamp,
        hash_by: HashBy::Auto,
        topic: None,
        csv: (format == Format::Csv).then(|| csv(s)),
    };
    let reading = if s[9] & 1 == 1 {
        Reading::Changes
    } else {
        Reading::Own
    };
    let decoder = Decoder::reading(&side, reading);
    // The record key is the first `s[9] / 2` bytes (none when 0), the value the rest.
    let split = usize::from(s[9] >> 1).min(rest.len());
    let (key, value) = rest.split_at(split);
    let key = (split > 0).then_some(key);
    let value = (s[8] & 2 == 0).then_some(value);
    if let Ok(Some(event)) = decoder.decode(key, value) {
        let _ = format!("{event:?}");
    }
});
